"""Kernels of forensic likelihood-ratio evaluation: AUC, ECE, ELUB, misleading evidence, Tippett.

numpy/scipy only. Inputs are natural-log llrs ``tar``, ``non`` SORTED ascending (one sort per
class); ``+-inf`` is allowed. See ``docs/spoof_forensic.md`` for the conventions.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from scoreframe.kernels.elementary import softplus
from scoreframe.kernels.sorted_scores import Blocks, SortedScores, pav_blocks

__all__ = ["LN10", "auc", "auc_pair_count", "auc_pair_count_below",
           "ece", "ece_min", "ece_min_blocks", "ece_ref", "elub",
           "elub_from_counts", "elub_grid", "misleading_counts", "tippett"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
LN2 = math.log(2.0)
LN10 = math.log(10.0)


def auc_pair_count(tar: F64, non_sorted: F64) -> int:
    """Twice the Mann-Whitney U: ``2 #(tar > non) + #(tar = non)`` over all pairs (an integer).

    Mergeable: for two parts A and B of a group with every score of A below every score of B,
    ``count(A u B) = count(A) + count(B) + 2 n_tar(B) n_non(A)``; AUC = count / (2 n_tar n_non).

    >>> auc_pair_count(np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0]))
    9
    """
    below = np.searchsorted(non_sorted, tar, side="left").astype(np.int64).sum()
    below_eq = np.searchsorted(non_sorted, tar, side="right").astype(np.int64).sum()
    return int(below) + int(below_eq)


def auc_pair_count_below(tar: F64, non_sorted: F64, below: I64) -> int:
    """:func:`auc_pair_count` from ``below = searchsorted(non_sorted, tar, side="left")``.

    The ``side="right"`` positions differ only at targets equal to a non-target: those are
    found by one gather and searched again (no second binary search per target).

    >>> tar, non = np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0])
    >>> auc_pair_count_below(tar, non, np.searchsorted(non, tar, side="left"))
    9
    """
    below = np.asarray(below, dtype=np.int64)
    n = non_sorted.shape[0]
    total = 2 * int(below.sum())
    if n and below.shape[0]:
        tied = np.flatnonzero(non_sorted[np.minimum(below, n - 1)] == tar)
        tied = tied[below[tied] < n]
        if tied.shape[0]:
            total += int((np.searchsorted(non_sorted, tar[tied], side="right")
                          .astype(np.int64) - below[tied]).sum())
    return total


def auc(tar: F64, non: F64, *, non_sorted: bool = False) -> float:
    """Area under the ROC: ``P(tar > non) + P(tar = non) / 2`` from integer pair counts.

    ``non`` is sorted here unless ``non_sorted=True``; ``tar`` needs no order.

    Examples
    --------
    >>> auc(np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0]))
    0.75
    """
    ns = non if non_sorted else np.sort(non)
    return float(auc_pair_count(tar, ns)) / float(2 * tar.shape[0] * ns.shape[0])


def _ece_terms(tar_w: F64, tar_llr: F64, non_w: F64, non_llr: F64, plo: F64,
               n_tar: float, n_non: float) -> F64:
    out = np.empty(plo.shape[0], dtype=np.float64)
    for i, tau in enumerate(plo):  # loop over priors, vectorised over trials (or blocks)
        p = float(expit(tau))
        t = float(np.dot(tar_w, softplus(-(tar_llr + tau)))) / n_tar
        n = float(np.dot(non_w, softplus(non_llr + tau))) / n_non
        # 0 * inf is not an issue: weights are > 0 and p in (0, 1)
        out[i] = (p * t + (1.0 - p) * n) / LN2
    return out


def ece(tar: F64, non: F64, plo: F64) -> F64:
    """Empirical cross-entropy in bits at each prior log odds ``plo`` (natural log).

    ``ECE(tau) = [P mean_T softplus(-(l + tau)) + (1 - P) mean_N softplus(l + tau)] / ln 2``
    with ``P = sigmoid(tau)`` (Ramos; Brummer 2010). A misleading infinite llr gives ``inf``.

    Examples
    --------
    >>> round(float(ece(np.array([1.0, 2.0]), np.array([-1.0]), np.array([0.0]))[0]), 6)
    0.384735
    """
    return _ece_terms(np.ones(tar.shape[0]), tar, np.ones(non.shape[0]), non, plo,
                      float(tar.shape[0]), float(non.shape[0]))


def ece_min(tar: F64, non: F64, plo: F64) -> F64:
    """ECE of the exact PAV llrs (no Laplace, no ramp), summed per PAV block."""
    return ece_min_blocks(pav_blocks(SortedScores(tar, non)), plo)


def ece_min_blocks(b: Blocks, plo: F64) -> F64:
    """:func:`ece_min` from a group's PAV blocks (e.g. merged statistics of its ranges).

    >>> b = pav_blocks(SortedScores(np.array([1.0, 2.0]), np.array([-1.0])))
    >>> float(ece_min_blocks(b, np.array([0.0]))[0])
    0.0
    """
    llr = b.llr()
    ht = b.n_tar > 0
    hn = b.n_non > 0
    return _ece_terms(b.n_tar[ht].astype(np.float64), llr[ht], b.n_non[hn].astype(np.float64),
                      llr[hn], plo, float(b.n_tar.sum()), float(b.n_non.sum()))


def ece_ref(plo: F64) -> F64:
    """ECE of the uninformative system (all llrs 0): the binary entropy of the prior, in bits."""
    plo = np.asarray(plo, dtype=np.float64)
    p = expit(plo)
    out: F64 = (p * softplus(-plo) + (1.0 - p) * softplus(plo)) / LN2
    return out


def misleading_counts(tar: F64, non: F64) -> tuple[int, int]:
    """``(#tar < 0, #non > 0)``: misleading llrs (0 is not misleading)."""
    return (int(np.searchsorted(tar, 0.0, side="left")),
            int(non.shape[0] - np.searchsorted(non, 0.0, side="right")))


def tippett(tar: F64, non: F64, thresholds: F64) -> tuple[F64, F64]:
    """Fractions of target and non-target llrs ``>= threshold`` at each threshold."""
    nt, nn = tar.shape[0], non.shape[0]
    ge_t = nt - np.searchsorted(tar, thresholds, side="left")
    ge_n = nn - np.searchsorted(non, thresholds, side="left")
    return ge_t / nt, ge_n / nn


def elub_grid(lo: float, hi: float, n_tar: int, n_non: int, step: float) -> F64:
    """The threshold grid of lir 1.3.1 ``elub`` (log10 units).

    From ``max(lo, -log10(n_tar + 1))`` down to a multiple of ``step`` and up to
    ``min(hi, log10(n_non + 1))``, always including 0, built with ``numpy.linspace`` as lir does.
    """
    llr_min = max(lo, -np.log10(n_tar + 1))
    llr_max = min(hi, np.log10(n_non + 1))
    k_min = min(0, int(np.floor_divide(llr_min, step)))
    k_max = max(0, int(np.floor_divide(llr_max, step) + 1))
    return np.linspace(k_min * step, k_max * step, k_max - k_min + 1)


def elub_from_counts(grid: F64, acc_tar: I64, acc_non: I64, n_tar: int, n_non: int, *,
                     add_misleading: int, step: float) -> tuple[float, float]:
    """ELUB bounds (log10) from the counts of llrs ABOVE each grid threshold (mergeable form).

    ``acc_tar[i]``, ``acc_non[i]``: targets and non-targets with ``LR > 10**grid[i]``. Counts
    add over disjoint parts of a group, so per-range statistics can be reduced first; the grid
    comes from :func:`elub_grid` (it needs only the group's extreme llrs and class sizes).
    """
    thr = 10 ** grid
    acc = (1 > thr).astype(np.float64)
    eu_neutral = 1 - acc + thr * acc
    eu_system = (1 - acc_tar / (n_tar + add_misleading)
                 + thr * ((acc_non + add_misleading) / (n_non + add_misleading)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = eu_neutral / eu_system
    bad = ratio < 1
    left = grid[(grid <= 0) & bad]
    right = grid[(grid >= 0) & bad]
    lower = float(np.max(left + step, initial=np.min(grid)))
    upper = float(np.min(right - step, initial=np.max(grid)))
    return min(lower, 0.0), max(upper, 0.0)


def elub(tar10: F64, non10: F64, *, add_misleading: int, step: float,
         extremes: tuple[float, float]) -> tuple[float, float]:
    """Empirical lower and upper bounds in log10 units (lir 1.3.1 ``elub`` semantics).

    ``tar10``, ``non10``: sorted log10 llrs. Values outside ``extremes`` are clipped to them; the
    bounds are the grid points next to the threshold closest to 0 (on each side) where the
    system's expected utility falls below the neutral system's, clamped to the right side of 0.

    Examples
    --------
    >>> elub(np.array([-0.5, 1.0, 1.5, 2.0, 3.0]), np.array([-2.0, -1.5, -1.0, -0.2, 0.5]),
    ...      add_misleading=0, step=0.01, extremes=(-9.0, 9.0))
    (-0.47000000000000003, 0.78)
    """
    lo_x, hi_x = extremes
    t = np.clip(tar10, lo_x, hi_x)
    n = np.clip(non10, lo_x, hi_x)
    grid = elub_grid(float(min(t[0], n[0])), float(max(t[-1], n[-1])), t.shape[0], n.shape[0],
                     step)
    thr = 10 ** grid
    acc_t = t.shape[0] - np.searchsorted(10 ** t, thr, side="right")
    acc_n = n.shape[0] - np.searchsorted(10 ** n, thr, side="right")
    return elub_from_counts(grid, acc_t, acc_n, t.shape[0], n.shape[0],
                            add_misleading=add_misleading, step=step)
