"""Kernels of the anti-spoofing / SASV metrics: a-DCF, t-DCF, ASVspoof and SASV EERs.

numpy only. Every function takes the scores of each class ALREADY SORTED ascending (one sort per
class, e.g. by the statistics layer) and never loops over trials in Python.

Sweep convention of the ASVspoof evaluation packages (``docs/spoof_forensic.md``): the trials of
all classes are merged in ascending score order, at equal scores the class listed first comes
first (targets before non-targets before spoofs; bona fide before spoof), and the operating points
are taken *after each trial* (a per-trial sweep, so a tie group may be split), starting from the
point where every trial is accepted. The k-th point rejects the k lowest trials of the merged order;
its threshold is the score of the k-th trial, and the first point's threshold is
``min(score) - offset``. Counts stay integers until the rates are formed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "A_DCF_FIRST_OFFSET",
    "DET_FIRST_OFFSET",
    "Sweep",
    "a_dcf",
    "asv_error_rates",
    "asvspoof_eer",
    "interpolated_eer",
    "per_trial_sweep",
    "t_dcf",
    "t_dcf_coefficients",
    "t_dcf_curve",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

A_DCF_FIRST_OFFSET = 1e-8  # a-DCF package: first threshold min(score) - 1e-8
DET_FIRST_OFFSET = 0.001  # ASVspoof eval_metrics.compute_det_curve: min(score) - 0.001


@dataclass(frozen=True, eq=False)
class Sweep:
    """A per-trial sweep over k classes merged in score order (ties: class order).

    Attributes
    ----------
    classes
        The sorted score arrays, in tie-priority order.
    labels
        Class index of each trial in merged order (length N).
    rejected
        ``rejected[c, k]`` = number of trials of class ``c`` among the k lowest of the merged order
        (shape ``(n_classes, N + 1)``, int64; column 0 is the all-accepted point).
    """

    classes: tuple[F64, ...]
    labels: NDArray[np.int8]
    rejected: I64

    @property
    def sizes(self) -> I64:
        """Trials per class."""
        return self.rejected[:, -1]

    def threshold(self, k: int, *, offset: float) -> float:
        """Threshold of the k-th point: the k-th merged score, or ``min - offset`` for k = 0."""
        if k == 0:
            first = min(float(c[0]) for c in self.classes if c.shape[0])
            return first - offset
        c = int(self.labels[k - 1])
        return float(self.classes[c][self.rejected[c, k] - 1])


def per_trial_sweep(*classes: F64) -> Sweep:
    """Merge sorted class arrays (ties in argument order) and count rejections per point.

    Examples
    --------
    >>> s = per_trial_sweep(np.array([1.0, 2.0]), np.array([0.0, 1.0]))
    >>> s.labels.tolist(), s.rejected.tolist()
    ([1, 0, 1, 0], [[0, 0, 1, 1, 2], [0, 1, 1, 2, 2]])
    """
    cls = tuple(np.asarray(c, dtype=np.float64) for c in classes)
    sizes = [c.shape[0] for c in cls]
    n = sum(sizes)
    # a stable sort of the concatenation orders equal scores by class, then by position: the
    # merge asked for; on sorted runs it merges them (timsort), ~7x faster than locating every
    # trial in the other classes by binary search
    labels = np.repeat(np.arange(len(cls), dtype=np.int8), sizes)
    if len(cls) > 1 and n:
        labels = labels[np.argsort(np.concatenate(cls), kind="stable")]
    rejected = np.zeros((len(cls), n + 1), dtype=np.int64)
    for i in range(len(cls)):
        np.cumsum(labels == i, out=rejected[i, 1:])
    return Sweep(cls, labels, rejected)


def a_dcf(tar: F64, non: F64, spf: F64, *, p_target: float, p_nontarget: float, p_spoof: float,
          c_miss: float, c_fa_nontarget: float, c_fa_spoof: float) -> dict[str, float]:
    """Minimum normalised a-DCF over the per-trial sweep (Shim et al., Odyssey 2024, eq 1-2).

    Inputs sorted ascending, each class non-empty. The float operations follow the ASVspoof 5
    evaluation package term by term, so the minimum and its FIRST argmin are reproduced exactly.

    Examples
    --------
    >>> r = a_dcf(np.array([1.0, 2.0]), np.array([0.0]), np.array([-1.0, 1.5]), p_target=0.9,
    ...           p_nontarget=0.05, p_spoof=0.05, c_miss=1, c_fa_nontarget=10, c_fa_spoof=20)
    >>> r["min_a_dcf"], r["threshold"]
    (0.5, 1.5)
    """
    sw = per_trial_sweep(tar, non, spf)
    nt, nn, ns = (int(v) for v in sw.sizes)
    p_miss = sw.rejected[0] / nt
    p_fa_non = (nn - sw.rejected[1]) / nn
    p_fa_spf = (ns - sw.rejected[2]) / ns
    cost = ((c_miss * p_target) * p_miss + (c_fa_nontarget * p_nontarget) * p_fa_non
            + (c_fa_spoof * p_spoof) * p_fa_spf)
    norm = min(c_fa_nontarget * p_nontarget + c_fa_spoof * p_spoof, c_miss * p_target)
    normed = cost / norm
    k = int(np.argmin(normed))
    return {"min_a_dcf": float(normed[k]), "threshold": sw.threshold(k, offset=A_DCF_FIRST_OFFSET),
            "p_miss": float(p_miss[k]), "p_fa_nontarget": float(p_fa_non[k]),
            "p_fa_spoof": float(p_fa_spf[k])}


def asvspoof_eer(tar: F64, non: F64) -> tuple[float, float]:
    """EER and threshold as ASVspoof ``eval_metrics.compute_eer`` (per-trial, first argmin).

    ``eer = (pmiss + pfa) / 2`` at the first point minimising ``|pmiss - pfa|``.

    Examples
    --------
    >>> asvspoof_eer(np.array([1.0, 3.0]), np.array([0.0, 2.0]))
    (0.5, 1.0)
    """
    sw = per_trial_sweep(tar, non)
    nt, nn = (int(v) for v in sw.sizes)
    frr = sw.rejected[0] / nt
    far = (nn - sw.rejected[1]) / nn
    k = int(np.argmin(np.abs(frr - far)))
    return float((frr[k] + far[k]) / 2), sw.threshold(k, offset=DET_FIRST_OFFSET)


def asv_error_rates(tar: F64, non: F64, spf: F64, threshold: float
                    ) -> tuple[float, float, float, float]:
    """``(p_miss, p_fa, p_miss_spoof, p_fa_spoof)`` of an ASV system at ``threshold``.

    Accept when ``score >= threshold`` (ASVspoof ``obtain_asv_error_rates``).

    Examples
    --------
    >>> asv_error_rates(np.array([1.0, 3.0]), np.array([0.0, 2.0]), np.array([2.5]), 2.0)
    (0.5, 0.5, 0.0, 1.0)
    """
    n_miss = int(np.searchsorted(tar, threshold, side="left"))
    n_rej_non = int(np.searchsorted(non, threshold, side="left"))
    n_rej_spf = int(np.searchsorted(spf, threshold, side="left"))
    ns = spf.shape[0]
    return (n_miss / tar.shape[0], (non.shape[0] - n_rej_non) / non.shape[0],
            n_rej_spf / ns, (ns - n_rej_spf) / ns)


def t_dcf_coefficients(*, p_miss_asv: float, p_fa_asv: float, p_miss_spoof_asv: float,
                       p_fa_spoof_asv: float, variant: str, p_target: float,
                       p_nontarget: float, p_spoof: float, c_miss: float, c_fa: float,
                       c_fa_spoof: float, c_miss_cm: float) -> tuple[float, float, float]:
    """``(c0, c1, c2)`` of the t-DCF (``variant`` "2021": Kinnunen et al. 2020; "2019": legacy).

    2021: ``C0 = pt cm Pmiss_asv + pn cfa Pfa_asv``, ``C1 = pt cm - C0``,
    ``C2 = ps cfa_spoof Pfa_spoof_asv``. 2019: ``C0 = 0``,
    ``C1 = pt (cmiss_cm - cm Pmiss_asv) - pn cfa Pfa_asv``,
    ``C2 = cfa_spoof ps (1 - Pmiss_spoof_asv)``. Operation order as in the ASVspoof package.
    """
    if variant == "2021":
        c0 = p_target * c_miss * p_miss_asv + p_nontarget * c_fa * p_fa_asv
        c1 = p_target * c_miss - c0
        c2 = p_spoof * c_fa_spoof * p_fa_spoof_asv
        return c0, c1, c2
    c1 = p_target * (c_miss_cm - c_miss * p_miss_asv) - p_nontarget * c_fa * p_fa_asv
    c2 = c_fa_spoof * p_spoof * (1 - p_miss_spoof_asv)
    return 0.0, c1, c2


def t_dcf_curve(bona: F64, spoof: F64, c0: float, c1: float, c2: float
                ) -> tuple[F64, F64, F64, F64]:
    """Normalised t-DCF over the per-trial CM sweep: ``(thresholds, t_dcf, p_miss_cm, p_fa_cm)``.

    ``t_dcf = (C0 + C1 Pmiss_cm + C2 Pfa_cm) / (C0 + min(C1, C2))`` (with ``C0 = 0`` this is the
    2019 form). Bona fide before spoof at ties; first threshold ``min - 0.001``.
    """
    sw = per_trial_sweep(bona, spoof)
    nb, ns = (int(v) for v in sw.sizes)
    p_miss = sw.rejected[0] / nb
    p_fa = (ns - sw.rejected[1]) / ns
    curve = (c0 + c1 * p_miss + c2 * p_fa) / (c0 + min(c1, c2))
    n = sw.labels.shape[0]
    merged = np.empty(n + 1, dtype=np.float64)
    merged[0] = sw.threshold(0, offset=DET_FIRST_OFFSET)
    for c, x in enumerate(sw.classes):
        merged[1:][sw.labels == c] = x
    return merged, curve, p_miss, p_fa


def t_dcf(bona: F64, spoof: F64, c0: float, c1: float, c2: float) -> dict[str, float]:
    """Minimum of :func:`t_dcf_curve` (first argmin) and its CM threshold."""
    sw = per_trial_sweep(bona, spoof)
    nb, ns = (int(v) for v in sw.sizes)
    p_miss = sw.rejected[0] / nb
    p_fa = (ns - sw.rejected[1]) / ns
    curve = (c0 + c1 * p_miss + c2 * p_fa) / (c0 + min(c1, c2))
    k = int(np.argmin(curve))
    return {"min_t_dcf": float(curve[k]), "cm_threshold": sw.threshold(k, offset=DET_FIRST_OFFSET)}


def interpolated_eer(pos: F64, *negs: F64) -> float:
    """EER of the ROC with tied scores grouped, interpolated linearly between its vertices.

    ``pos`` against the union of ``negs`` (each sorted ascending). The ROC vertices are the
    points ``(pfa, 1 - pmiss)`` at every distinct score used as an accept-if-``>=`` threshold,
    plus ``(0, 0)``; the EER is the ``pfa`` where the polyline crosses ``pmiss = pfa`` (SASV 2022
    ``get_all_EERs``: scikit-learn ``roc_curve``, ``interp1d``, ``brentq`` -- solved here in
    closed form from integer counts).

    Examples
    --------
    >>> interpolated_eer(np.array([1.0, 3.0]), np.array([0.0, 2.0]))
    0.5
    """
    nt = pos.shape[0]
    nn = sum(x.shape[0] for x in negs)
    arrays = (pos, *negs)

    def counts(v: F64) -> tuple[I64, I64]:  # accepted targets / negatives at thresholds v
        b = nt - np.searchsorted(pos, v, side="left")
        a = nn - sum(np.searchsorted(x, v, side="left") for x in negs)
        return np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)

    def g(a: I64 | int, b: I64 | int) -> I64 | int:  # sign of 1 - pfa - tpr, in integers
        out: I64 | int = nn * nt - a * nt - b * nn
        return out

    # g is non-decreasing in the threshold; v_lo = largest score with g <= 0, found by
    # bisection over each sorted class (O(log^2 n) work, no pass over the trials)
    best = -np.inf
    for x in arrays:
        lo, hi = -1, x.shape[0]  # invariant: g(x[lo]) <= 0 < g(x[hi]) (virtual ends)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            a, b = counts(x[mid:mid + 1])
            if g(int(a[0]), int(b[0])) <= 0:
                lo = mid
            else:
                hi = mid
        if lo >= 0:
            best = max(best, float(x[lo]))
    a_lo, b_lo = (int(v[0]) for v in counts(np.array([best])))
    g_lo = g(a_lo, b_lo)
    if g_lo == 0:
        return float(a_lo / nn)
    above = [x[np.searchsorted(x, best, side="right")] for x in arrays
             if np.searchsorted(x, best, side="right") < x.shape[0]]
    if above:
        a_hi, b_hi = (int(v[0]) for v in counts(np.array([min(float(v) for v in above)])))
    else:
        a_hi, b_hi = 0, 0  # the (0, 0) vertex
    g_hi = g(a_hi, b_hi)
    if a_hi == a_lo:
        return float(a_lo / nn)
    t = g_hi / (g_hi - g_lo)
    return float((a_hi + t * (a_lo - a_hi)) / nn)
