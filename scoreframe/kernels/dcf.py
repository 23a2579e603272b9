"""Actual detection cost at many operating points in one pass (docs/math.md sections 2-3).

numpy only. Decision rule: accept iff ``score >= threshold`` (ties accept).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.sorted_scores import SortedScores

__all__ = ["act_dcf", "error_counts"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def error_counts(s: SortedScores, threshold: F64) -> tuple[I64, I64]:
    """Misses (targets ``< t``) and false alarms (non-targets ``>= t``) at each threshold.

    Equivalent to the stable-sort algorithm of [BdV11] eqs 31-32 (thresholds sorted before
    equal scores), by binary search in the sorted scores.
    """
    thr = np.atleast_1d(np.asarray(threshold, dtype=np.float64))
    n_miss = np.searchsorted(s.tar, thr, side="left").astype(np.int64)
    n_fa = s.n_non - np.searchsorted(s.non, thr, side="left").astype(np.int64)
    return n_miss, n_fa


def act_dcf(s: SortedScores, p: F64, q: F64, threshold: F64) -> tuple[F64, I64, I64]:
    """Unnormalized actual DCF ``p*Pmiss(t) + q*Pfa(t)`` and the error counts at ``t``."""
    n_miss, n_fa = error_counts(s, threshold)
    dcf = p * (n_miss / s.n_tar) + q * (n_fa / s.n_non)
    return dcf, n_miss, n_fa
