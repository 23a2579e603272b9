"""Multiclass kernels: Cmxe, Bayes decisions, detection llrs, Cavg.

Multiclass logistic regression (``fit_affine``) lives in :mod:`scoreframe.kernels.logreg`.

numpy/scipy only (MATH.md sections 11-12; seeds 003 part II and 004). Inputs are an ``(N, K)``
matrix ``w`` of class log-likelihoods (any per-trial constant is irrelevant) and integer labels
``y`` in ``0..K-1``; priors are length-K vectors summing to 1.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

__all__ = ["bayes_decisions", "cavg", "cmxe", "detection_llrs", "log_posteriors", "min_cavg",
           "prior_entropy"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def _check(w: F64, y: I64, prior: F64 | None) -> tuple[F64, I64, F64]:
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
    return z - logsumexp(z, axis=1, keepdims=True)


def _trial_weights(y: I64, prior: F64) -> F64:
    counts = np.bincount(y, minlength=prior.shape[0]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_class = np.where(counts > 0, prior / counts, 0.0)
    return per_class[y]


def cmxe(w: F64, y: I64, prior: F64 | None = None) -> float:
    """Multiclass cross-entropy in bits, prior-weighted (MATH.md 11.1).

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
    w, y, p = _check(w, y, prior)
    lp = log_posteriors(w, p)[np.arange(y.size), y]
    v = _trial_weights(y, p)
    keep = v > 0
    return float(-(v[keep] * lp[keep]).sum() / math.log(2.0))


def bayes_decisions(w: F64, prior: F64, cost: F64 | None = None) -> I64:
    """Minimum-expected-cost decisions: ``argmin_j sum_i P(i|t) cost[i, j]`` (0-1 cost: MAP)."""
    lp = log_posteriors(np.asarray(w, dtype=np.float64), np.asarray(prior, dtype=np.float64))
    if cost is None:
        return np.argmax(lp, axis=1).astype(np.int64)
    expected = np.exp(lp) @ np.asarray(cost, dtype=np.float64)
    return np.argmin(expected, axis=1).astype(np.int64)


def expected_cost(y: I64, decisions: I64, prior: F64, cost: F64 | None = None) -> float:
    """``sum_i prior_i/|S_i| sum_{t in S_i} cost[i, d_t]`` (0-1 cost: prior-weighted error)."""
    k = prior.shape[0]
    c = 1.0 - np.eye(k) if cost is None else np.asarray(cost, dtype=np.float64)
    v = _trial_weights(y, prior)
    return float((v * c[y, decisions]).sum())


def detection_llrs(w: F64) -> F64:
    """Per-class detection llrs ``w_k - log(mean_{j != k} exp(w_j))`` (seed 004 eq 8.26).

    >>> import numpy as np
    >>> detection_llrs(np.array([[2.0, 0, 0]])).round(6).tolist()
    [[2.0, -1.433781, -1.433781]]
    """
    w = np.asarray(w, dtype=np.float64)
    n, k = w.shape
    if k < 2:
        raise ValueError("detection llrs need at least two classes")
    out = np.empty_like(w)
    for j in range(k):  # a loop over classes, not trials
        others = np.delete(w, j, axis=1)
        out[:, j] = w[:, j] - (logsumexp(others, axis=1) - math.log(k - 1))
    return out


def _cavg_weights(y: I64, k: int, p_target: float) -> tuple[F64, F64]:
    """Per-(trial, detector) weights of misses (target pairs) and false alarms."""
    counts = np.bincount(y, minlength=k).astype(np.float64)
    if np.any(counts == 0):
        raise ValueError(f"Cavg needs trials of every class; classes "
                         f"{np.flatnonzero(counts == 0).tolist()} have none")
    onehot = np.zeros((y.size, k), dtype=bool)
    onehot[np.arange(y.size), y] = True
    per_trial = 1.0 / counts[y]
    w_miss = np.where(onehot, p_target / k * per_trial[:, None], 0.0)
    w_fa = np.where(onehot, 0.0, (1.0 - p_target) / (k * (k - 1)) * per_trial[:, None])
    return w_miss, w_fa


def cavg(s: F64, y: I64, p_target: float, *, threshold: float | None = None) -> float:
    """NIST LRE Cavg of detection llrs ``s`` at threshold ``-logit(p_target)`` (MATH.md 12.1).

    Unnormalized; divide by ``min(p_target, 1 - p_target)`` for the normalized value.
    """
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if not 0.0 < p_target < 1.0:
        raise ValueError(f"p_target must be in (0, 1), got {p_target}")
    thr = -math.log(p_target / (1.0 - p_target)) if threshold is None else threshold
    w_miss, w_fa = _cavg_weights(y, s.shape[1], p_target)
    accept = s >= thr
    return float((w_miss * ~accept).sum() + (w_fa * accept).sum())


def min_cavg(s: F64, y: I64, p_target: float) -> tuple[float, float]:
    """Cavg at the evaluator-optimized common threshold; returns ``(min_cavg, threshold)``.

    One sort of all N*K detection scores; thresholds between distinct scores (accept iff >=).
    """
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    w_miss, w_fa = _cavg_weights(y, s.shape[1], p_target)
    flat = s.ravel()
    order = np.argsort(flat, kind="stable")
    sv = flat[order]
    miss = np.concatenate([[0.0], np.cumsum(w_miss.ravel()[order])])  # misses below position
    fa_after = w_fa.sum() - np.concatenate([[0.0], np.cumsum(w_fa.ravel()[order])])
    cost = miss + fa_after  # threshold just below sv[i] for i = position
    # only positions at the start of a run of equal scores are valid thresholds
    valid = np.concatenate([[True], sv[1:] != sv[:-1], [True]])
    cost = np.where(valid, cost, np.inf)
    i = int(np.argmin(cost))
    thr = sv[i] if i < sv.size else np.inf
    return float(cost[i]), float(thr)
