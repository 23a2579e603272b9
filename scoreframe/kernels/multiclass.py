"""Multiclass kernels: Cmxe, Bayes decisions, detection llrs, Cavg (one sort for all priors).

Multiclass logistic regression (``fit_affine``) lives in :mod:`scoreframe.kernels.logreg`.

numpy/scipy only (docs/math.md sections 11-12; [Br10] part II and [Br10t]). Inputs are an ``(N, K)``
matrix ``w`` of class log-likelihoods (any per-trial constant is irrelevant) and integer labels
``y`` in ``0..K-1``; priors are length-K vectors summing to 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

__all__ = ["CavgCurve", "bayes_decisions", "cavg", "cavg_curve", "check_multiclass", "cmxe",
           "detection_llrs",
           "expected_cost", "log_posteriors", "min_cavg", "prior_entropy"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def check_multiclass(w: F64, y: I64, prior: F64 | None) -> tuple[F64, I64, F64]:
    """Validate an ``(N, K)`` score matrix, labels in ``0..K-1`` and a prior (ValueError)."""
    w = np.asarray(w, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if w.ndim != 2 or w.shape[1] < 2:
        raise ValueError(f"scores must be an (N, K) matrix with K >= 2, got shape {w.shape}")
    k = w.shape[1]
    if y.shape != (w.shape[0],) or (y.size and (y.min() < 0 or y.max() >= k)):
        raise ValueError(f"labels must be N integers in 0..{k - 1}")
    p = np.full(k, 1.0 / k) if prior is None else np.asarray(prior, dtype=np.float64)
    if p.shape != (k,) or np.any(p < 0) or not math.isclose(p.sum(), 1.0, rel_tol=1e-9):
        raise ValueError(f"prior must be {k} non-negative numbers summing to 1, got {p}")
    counts = np.bincount(y, minlength=k)
    empty = np.flatnonzero((counts == 0) & (p > 0))
    if empty.size:
        raise ValueError(f"classes {empty.tolist()} have prior > 0 but no trials")
    return w, y, p


def prior_entropy(prior: F64) -> float:
    """``H2(prior)`` in bits: the Cmxe of the default (uninformative) system."""
    p = np.asarray(prior, dtype=np.float64)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def log_posteriors(w: F64, prior: F64) -> F64:
    """``log softmax(w + log prior)`` per trial (natural log)."""
    with np.errstate(divide="ignore"):
        z = w + np.log(prior)
    out: F64 = z - logsumexp(z, axis=1, keepdims=True)
    return out


def _trial_weights(y: I64, prior: F64) -> F64:
    counts = np.bincount(y, minlength=prior.shape[0]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_class = np.where(counts > 0, prior / counts, 0.0)
    return per_class[y]


def cmxe(w: F64, y: I64, prior: F64 | None = None) -> float:
    """Multiclass cross-entropy in bits, prior-weighted (docs/math.md §11.1).

    ``Cmxe = -sum_i prior_i/|S_i| sum_{t in S_i} log2 P(i|t)``; ``log2 K`` for the default
    system at the flat prior.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1],
    ...               [0, 0, 2], [-1, 0, 1], [1, 0, 0]], dtype=float)
    >>> round(cmxe(w, np.repeat([0, 1, 2], 3)), 6)
    1.236188
    """
    w, y, p = check_multiclass(w, y, prior)
    lp = log_posteriors(w, p)[np.arange(y.size), y]
    v = _trial_weights(y, p)
    keep = v > 0
    return float(-(v[keep] * lp[keep]).sum() / math.log(2.0))


def bayes_decisions(w: F64, prior: F64, cost: F64 | None = None) -> I64:
    """Minimum-expected-cost decisions: ``argmin_j sum_i P(i|t) cost[i, j]`` (0-1 cost: MAP)."""
    lp = log_posteriors(np.asarray(w, dtype=np.float64), np.asarray(prior, dtype=np.float64))
    if cost is None:
        map_: I64 = np.argmax(lp, axis=1).astype(np.int64)
        return map_
    expected = np.exp(lp) @ np.asarray(cost, dtype=np.float64)
    best: I64 = np.argmin(expected, axis=1).astype(np.int64)
    return best


def expected_cost(y: I64, decisions: I64, prior: F64, cost: F64 | None = None) -> float:
    """``sum_i prior_i/|S_i| sum_{t in S_i} cost[i, d_t]`` (0-1 cost: prior-weighted error)."""
    k = prior.shape[0]
    c = 1.0 - np.eye(k) if cost is None else np.asarray(cost, dtype=np.float64)
    v = _trial_weights(y, prior)
    return float((v * c[y, decisions]).sum())


def detection_llrs(w: F64) -> F64:
    """Per-class detection llrs ``w_k - log(mean_{j != k} exp(w_j))`` ([Br10t] eq 8.26).

    Vectorized over classes: ``sum_{j != k} exp(w_j - m)`` is the row's total minus its own
    term, which keeps the row maximum's term (so it is >= 1 and loses no digits), except for
    the maximum's own column, summed directly over the other columns.

    >>> import numpy as np
    >>> detection_llrs(np.array([[2.0, 0, 0]])).round(6).tolist()
    [[2.0, -1.433781, -1.433781]]
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] < 2:
        raise ValueError(f"detection llrs need an (N, K) matrix with K >= 2, got {w.shape}")
    n, k = w.shape
    rows = np.arange(n)
    top = np.argmax(w, axis=1)
    m1 = w[rows, top]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(w - m1[:, None])
        e[~np.isfinite(m1)] = 0.0  # rows whose maximum is +-inf: handled below
        others = e.sum(axis=1, keepdims=True) - e  # for columns other than the maximum
        rest = w.copy()
        rest[rows, top] = -np.inf
        m2 = rest.max(axis=1)
        lse_top = m2 + np.log(np.exp(rest - m2[:, None]).sum(axis=1))
        lse = np.log(others) + m1[:, None]
        lse[rows, top] = np.where(np.isneginf(m2), -np.inf, lse_top)
        out: F64 = w - (lse - math.log(k - 1))
    bad = ~np.isfinite(m1)
    if bad.any():  # rows holding an infinity: the plain formula, column by column
        sub = w[bad]
        for j in range(k):  # a loop over classes, not trials
            out[bad, j] = sub[:, j] - (logsumexp(np.delete(sub, j, axis=1), axis=1)
                                      - math.log(k - 1))
    return out


@dataclass(frozen=True)
class CavgCurve:
    """Actual and minimum LRE Cavg (unnormalized) at several target priors.

    ``threshold`` is where each minimum is reached (accept iff ``s >= threshold``; ``inf``:
    accept nothing); NaN when the minimum was not asked for.
    """

    p_target: F64
    actual: F64
    minimum: F64
    threshold: F64


def _class_counts(y: I64, k: int) -> I64:
    counts = np.bincount(y, minlength=k)
    if np.any(counts == 0):
        raise ValueError(f"Cavg needs trials of every class; classes "
                         f"{np.flatnonzero(counts == 0).tolist()} have none")
    return counts


def _check_cavg(s: F64, y: I64, p_targets: object) -> tuple[F64, I64, F64]:
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"scores must be an (N, K) matrix with K >= 2, got shape {s.shape}")
    k = s.shape[1]
    if y.shape != (s.shape[0],) or (y.size and (y.min() < 0 or y.max() >= k)):
        raise ValueError(f"labels must be N integers in 0..{k - 1}")
    if np.isnan(s).any():
        raise ValueError("detection scores must not be NaN")
    ps = np.atleast_1d(np.asarray(p_targets, dtype=np.float64))
    if ps.ndim != 1 or ps.size == 0 or not np.all((ps > 0) & (ps < 1)):
        raise ValueError(f"p_target must be in (0, 1), got {ps.tolist()}")
    return s, y, ps


class _ExactCavg:
    """Cavg of integer error counts as an exact rational, rounded once at the end.

    With ``L = lcm(n_j)``: ``A = sum_j miss_j / n_j = IA / L`` and ``B = sum_j fa_j / n_j =
    IB / L`` with integers ``IA``, ``IB`` (int64 when ``K (K-1) L < 2^62``, else Python
    integers); ``Cavg = p A / K + (1 - p) B / (K (K-1))`` with ``p`` the exact binary value
    of the float prior.
    """

    def __init__(self, n: I64) -> None:
        self.k = int(n.size)
        self.lcm = math.lcm(*(int(v) for v in n))
        scale = [self.lcm // int(v) for v in n]
        small = self.k * (self.k - 1) * self.lcm < 2**62
        self.scale = np.array(scale, dtype=np.int64 if small else object)

    def parts(self, miss: I64, fa: I64) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
        """``IA`` and ``IB`` (Python integers) of rows of counts (columns: classes)."""
        if self.scale.dtype == object:
            return miss.astype(object) @ self.scale, fa.astype(object) @ self.scale
        return (miss @ self.scale).astype(object), (fa @ self.scale).astype(object)

    def numerators(self, ia: NDArray[np.object_], ib: NDArray[np.object_], p: float
                   ) -> tuple[NDArray[np.object_], int]:
        """Numerators of the Cavg of each row, and their common denominator."""
        pn, pd = float(p).as_integer_ratio()
        k = self.k
        return ia * (pn * (k - 1)) + ib * (pd - pn), pd * k * (k - 1) * self.lcm

    def values(self, miss: I64, fa: I64, p: float) -> F64:
        """The correctly rounded Cavg of each row of counts."""
        nums, den = self.numerators(*self.parts(miss, fa), p)
        return np.array([float(Fraction(int(v), den)) for v in nums])


def _counts_at(pos: I64, code: I64, k: int, n: I64) -> tuple[I64, I64]:
    """Per-class misses and false alarms with the threshold at each sorted position.

    ``code`` = ``2 * class + is_target`` of each entry in sorted order; position ``i`` rejects
    the entries before it. Integer histograms between consecutive positions, summed.
    """
    total = code.size
    ind = np.zeros(total + 1, dtype=np.int64)
    ind[pos] = 1
    slot = np.cumsum(ind)[:total]  # entry e lies below the positions slot[e], slot[e] + 1, ...
    hist = np.bincount(slot * (2 * k) + code, minlength=(pos.size + 1) * 2 * k)
    below = np.cumsum(hist.reshape(pos.size + 1, 2 * k), axis=0)[: pos.size]
    miss = below[:, 1::2]
    fa = n * (k - 1) - below[:, 0::2]  # integer: exact
    return miss, fa


def cavg_curve(s: F64, y: I64, p_targets: F64 | list[float] | float, *,
               thresholds: F64 | None = None, minimum: bool = True) -> CavgCurve:
    """Actual and minimum NIST LRE Cavg at every target prior from ONE sort (docs/math.md §12.1).

    ``Cavg(p, t) = p/K sum_k Pmiss_k(t) + (1-p)/(K(K-1)) sum_k sum_{j != k} Pfa_kj(t)`` with
    detection llrs ``s`` (accept class k for trial i iff ``s[i, k] >= t``). The N*K scores are
    sorted once; per-class integer counts of target misses and non-target false alarms at the
    candidate thresholds (run starts of equal scores where a run of non-targets ends and a run
    with targets begins: the only places a minimum can be) come from integer histograms; the
    rates are formed only at the end, as exact rationals rounded once, so every value is the
    correctly rounded Cavg of its counts. Floats only pick the candidates near each prior's
    minimum; those are compared exactly.

    Parameters
    ----------
    s
        ``(N, K)`` detection llrs (:func:`detection_llrs`).
    y
        True class index of each trial; every class needs at least one trial.
    p_targets
        Target priors in ``(0, 1)``.
    thresholds
        Thresholds of the actual Cavg (default ``-logit(p_target)``, the Bayes threshold).
    minimum
        Also compute the minimum over thresholds.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1],
    ...               [0, 0, 2], [-1, 0, 1], [1, 0, 0]], dtype=float)
    >>> c = cavg_curve(detection_llrs(w), np.repeat([0, 1, 2], 3), [0.5, 0.2])
    >>> c.actual.tolist(), c.minimum.round(6).tolist()
    ([0.3333333333333333, 0.13333333333333333], [0.277778, 0.111111])
    """
    s, y, ps = _check_cavg(s, y, p_targets)
    n_trials, k = s.shape
    n = _class_counts(y, k)
    thr = (-np.log(ps / (1.0 - ps)) if thresholds is None
           else np.broadcast_to(np.asarray(thresholds, dtype=np.float64), ps.shape))
    flat = s.ravel()
    order = np.argsort(flat)  # the one sort (ties: only run starts count, any order will do)
    sv = flat[order]
    true_class = np.repeat(y, k)
    code = (true_class * 2 + (true_class == np.tile(np.arange(k), n_trials)))[order]
    total = sv.size
    act_pos = np.searchsorted(sv, thr, side="left")  # entries below the threshold: rejected
    cand = np.empty(0, dtype=np.int64)
    if minimum:
        start = np.flatnonzero(np.r_[True, sv[1:] != sv[:-1]])
        tar = (code & 1).astype(bool)
        run_tar = np.logical_or.reduceat(tar, start)
        run_non = np.logical_or.reduceat(~tar, start)
        # a minimum sits where the run below has a non-target and the run above a target
        cand = np.r_[start, total][np.r_[True, run_non] & np.r_[run_tar, True]]
    mark = np.zeros(total + 1, dtype=bool)
    mark[cand] = True
    mark[act_pos] = True
    pos = np.flatnonzero(mark)  # the positions needed, in order, without another sort
    miss, fa = _counts_at(pos, code, k, n)
    exact = _ExactCavg(n)
    ai = np.searchsorted(pos, act_pos)
    actual = np.array([exact.values(miss[i: i + 1], fa[i: i + 1], float(p))[0]
                       for i, p in zip(ai, ps, strict=True)])
    mins = np.full(ps.size, np.nan)
    where = np.full(ps.size, np.nan)
    if minimum:
        ci = np.searchsorted(pos, cand)
        inv = 1.0 / n
        a = (miss[ci] @ inv) / k  # floats, only to find the candidates near each minimum
        b = (fa[ci] @ inv) / (k * (k - 1))
        step = max(1, 2_000_000 // ci.size)
        for lo in range(0, ps.size, step):  # chunks of priors; no sort inside
            pp = ps[lo: lo + step, None]
            cost = pp * a + (1.0 - pp) * b
            near = cost <= cost.min(axis=1, keepdims=True) * (1.0 + 1e-9)
            for r in range(pp.shape[0]):
                p = float(ps[lo + r])
                idx = ci[np.flatnonzero(near[r])]
                nums, _ = exact.numerators(*exact.parts(miss[idx], fa[idx]), p)
                j = min(range(idx.size), key=nums.__getitem__)  # first exact minimum
                mins[lo + r] = exact.values(miss[idx[j]: idx[j] + 1], fa[idx[j]: idx[j] + 1],
                                            p)[0]
                at = pos[idx[j]]
                where[lo + r] = sv[at] if at < total else np.inf
    return CavgCurve(ps, actual, mins, where)


def cavg(s: F64, y: I64, p_target: float, *, threshold: float | None = None) -> float:
    """NIST LRE Cavg of detection llrs ``s`` at threshold ``-logit(p_target)`` (docs/math.md §12.1).

    Unnormalized; divide by ``min(p_target, 1 - p_target)`` for the normalized value. The
    exact value of the integer miss and false-alarm counts, correctly rounded.
    """
    s, y, ps = _check_cavg(s, y, p_target)
    k = s.shape[1]
    n = _class_counts(y, k)
    p = float(ps[0])
    thr = -math.log(p / (1.0 - p)) if threshold is None else float(threshold)
    accept = s >= thr
    own = accept[np.arange(y.size), y]
    miss = np.bincount(y[~own], minlength=k)
    fa = np.bincount(y, weights=accept.sum(axis=1) - own, minlength=k).astype(np.int64)
    return float(_ExactCavg(n).values(miss[None, :], fa[None, :], p)[0])


def min_cavg(s: F64, y: I64, p_target: float) -> tuple[float, float]:
    """Cavg at the evaluator-optimized common threshold; returns ``(min_cavg, threshold)``.

    :func:`cavg_curve` for one prior (accept iff ``s >= threshold``).
    """
    c = cavg_curve(s, y, [p_target])
    return float(c.minimum[0]), float(c.threshold[0])
