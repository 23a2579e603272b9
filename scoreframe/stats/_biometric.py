"""Mergeable statistics of the biometric verification metrics (ISO/IEC 19795-1).

numpy only, like :mod:`scoreframe.stats.summary`. A :class:`VerificationRequest` names what to
compute (FMR and FNMR targets, fixed thresholds, the accept rule); a
:class:`VerificationStats` holds, for one group in one contiguous score range:

* integer error counts at the fixed thresholds (they add);
* ``2U`` of the Mann-Whitney AUC restricted to the range's genuine scores (adds);
* *located* results: FNMR at each FMR target (and ZeroFMR) is read at the ``(k+1)``-th
  highest impostor score, FMR at each FNMR target (and ZeroFNMR) at the ``(k+1)``-th lowest
  genuine score. Only the range holding that score computes it (it needs the group's totals
  and the counts below the range, a :class:`~scoreframe.stats.summary.Context`); the
  threshold next to it may lie in the neighbouring range, so each range also keeps its
  lowest and highest score and :func:`merge_verification` fills the gap.

Statistics of adjacent ranges merge exactly, so the in-memory, out-of-core and Dask engines
give identical results (integer counts, thresholds copied from the data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import biometric as kb
from scoreframe.kernels.sorted_scores import SortedScores

__all__ = ["Located", "VerificationRequest", "VerificationStats", "merge_verification",
           "reduce_verification"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


@dataclass(frozen=True)
class VerificationRequest:
    """What the verification metrics need from the reduction (a typed, parameterized request).

    Attributes
    ----------
    fmr
        FMR targets, each in (0, 1): FNMR at FMR = a (``fnmr_at_fmr``).
    fnmr
        FNMR targets, each in (0, 1): FMR at FNMR = b (``fmr_at_fnmr``).
    thresholds
        Fixed thresholds at which to count false matches and false non-matches.
    strict
        Accept ``score > threshold`` instead of ``score >= threshold``.

    >>> VerificationRequest(fmr=(1e-3,)).fmr
    (0.001,)
    """

    fmr: tuple[float, ...] = ()
    fnmr: tuple[float, ...] = ()
    thresholds: tuple[float, ...] = ()
    strict: bool = False

    @property
    def threshold_array(self) -> F64:
        """The fixed thresholds as a float array."""
        return np.asarray(self.thresholds, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Located:
    """Located results for a list of allowed error counts ``k`` (one per target).

    ``found`` says which are held by the statistics so far; ``fnm``/``fm`` are global counts;
    ``ge``/``gt`` the thresholds under the ``>=`` and the strict rule (NaN while the
    neighbouring range that holds them is not merged yet).
    """

    k: I64
    found: NDArray[np.bool_]
    fnm: I64
    fm: I64
    ge: F64
    gt: F64

    def __add__(self, other: Located) -> Located:
        """Take each entry from the side that holds it (at most one does)."""
        pick = other.found & ~self.found
        return Located(self.k, self.found | other.found, np.where(pick, other.fnm, self.fnm),
                       np.where(pick, other.fm, self.fm), np.where(pick, other.ge, self.ge),
                       np.where(pick, other.gt, self.gt))


@dataclass(frozen=True, eq=False)
class VerificationStats:
    """Verification statistics of one group in one score range (see the module docstring).

    Attributes
    ----------
    lo, hi
        Lowest and highest score of the range (NaN when it is empty).
    at_fmr, at_fnmr
        Located results for the FMR targets then ZeroFMR (``k = 0``), and for the FNMR
        targets then ZeroFNMR.
    fnm, fm
        False non-matches and false matches of the range at the request's fixed thresholds
        (they add over ranges).
    twice_u
        ``2U`` of the Mann-Whitney statistic over the range's genuine scores (exact).
    """

    lo: float
    hi: float
    at_fmr: Located
    at_fnmr: Located
    fnm: I64
    fm: I64
    twice_u: int


def _ks(rates: tuple[float, ...], total: int) -> I64:
    return np.concatenate((kb.count_within(np.asarray(rates, dtype=np.float64), total)
                           if rates else np.zeros(0, np.int64), [0])).astype(np.int64)


def reduce_verification(s: SortedScores, request: VerificationRequest, *, total_tar: int,
                        total_non: int, offset_tar: int = 0, offset_non: int = 0
                        ) -> VerificationStats:
    """Verification statistics of one range from its sorted scores and its place in the group.

    Examples
    --------
    >>> from scoreframe.kernels import sort_scores
    >>> st = reduce_verification(sort_scores([0.5, 2.0, 3.0], [0.0, 1.0, 2.5]),
    ...                          VerificationRequest(fmr=(0.4,)), total_tar=3, total_non=3)
    >>> st.at_fmr.fnm.tolist(), st.at_fmr.ge.tolist(), st.twice_u
    ([1, 2], [2.0, 3.0], 12)
    """
    tar, non = s.tar, s.non
    k_fmr = _ks(request.fmr, total_non)
    k_fnmr = _ks(request.fnmr, total_tar)
    f1, fnm1, fm1, gt1, ge1 = kb.fnmr_at_fmr_located(
        tar, non, k_fmr, total_non=total_non, offset_tar=offset_tar, offset_non=offset_non)
    f2, fnm2, fm2, ge2, gt2 = kb.fmr_at_fnmr_located(
        tar, non, k_fnmr, total_non=total_non, offset_tar=offset_tar, offset_non=offset_non)
    if total_tar == 0:  # nothing to locate in a group without genuine scores
        f2 = np.zeros_like(f2)
    fnm, fm = kb.error_counts(tar, non, request.threshold_array, strict=request.strict)
    n = tar.shape[0] + non.shape[0]
    lo = float(min(tar[0] if tar.shape[0] else np.inf, non[0] if non.shape[0] else np.inf)) \
        if n else np.nan
    hi = float(max(tar[-1] if tar.shape[0] else -np.inf, non[-1] if non.shape[0] else -np.inf)) \
        if n else np.nan
    return VerificationStats(lo, hi, Located(k_fmr, f1, fnm1, fm1, ge1, gt1),
                             Located(k_fnmr, f2, fnm2, fm2, ge2, gt2), fnm, fm,
                             kb.auc_twice_u(tar, non, offset_non=offset_non))


def merge_verification(a: VerificationStats | None, b: VerificationStats | None
                       ) -> VerificationStats | None:
    """Statistics of two adjacent ranges, ``a`` entirely below ``b`` (exact).

    A threshold next to a located score that lies across the boundary is filled in: the
    ``>=``-rule threshold of ``a``'s results from ``b``'s lowest score, the strict-rule
    threshold of ``b``'s results from ``a``'s highest score.
    """
    if a is None:
        return b
    if b is None:
        return a
    fa = a.at_fmr
    fa = Located(fa.k, fa.found, fa.fnm, fa.fm,
                 np.where(fa.found & np.isnan(fa.ge), b.lo, fa.ge), fa.gt)
    fb = b.at_fnmr
    fb = Located(fb.k, fb.found, fb.fnm, fb.fm, fb.ge,
                 np.where(fb.found & np.isnan(fb.gt), a.hi, fb.gt))
    lo = a.lo if not np.isnan(a.lo) else b.lo
    hi = b.hi if not np.isnan(b.hi) else a.hi
    return VerificationStats(lo, hi, fa + b.at_fmr, a.at_fnmr + fb, a.fnm + b.fnm,
                             a.fm + b.fm, a.twice_u + b.twice_u)
