"""Exact, mergeable statistics of ``(score, label)``: the core of the statistics layer.

numpy only (no dataframe library): these objects travel between threads, processes and Dask
workers. A :class:`ScoreStats` summarizes the trials of one group whose scores lie in one
contiguous score range:

* PAV blocks (:class:`~scoreframe.kernels.sorted_scores.Blocks`: integer counts, score
  ranges, target position sums), from which ROCCH, ROCCH-EER, PRBEP, min DCF at any prior,
  minCllr and the PAV calibration map all follow;
* sums of per-trial terms (the two halves of Cllr);
* integer error counts at fixed thresholds (actual DCF at the Bayes thresholds of the
  requested operating points and of the curve grids);
* *located* partial results, which need the group's totals and the counts below the range
  (a :class:`Context`): the NIST steppy-ROC EER crossing, Kaldi's stopping index, the
  corners of the steppy DET curve and the equalized (partition-weighted) error rates.

Statistics of adjacent ranges merge exactly with :func:`merge` (blocks are concatenated and the
boundary blocks pooled with integer arithmetic, sums and counts add, located results are
taken from the one range that holds them). Statistics of *overlapping* ranges (two files or
two conditions of the same scores) do not merge as blocks: they merge as sorted scores
(count tables) before :func:`reduce_range`. Counts stay integers until the rates are formed.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.elementary import PARALLEL_MIN
from scoreframe.kernels.sorted_scores import (
    Blocks,
    SortedScores,
    concat_blocks,
    end_labels,
    pav_blocks,
)
from scoreframe.stats._biometric import (
    VerificationRequest,
    VerificationStats,
    merge_verification,
    reduce_verification,
)
from scoreframe.stats._families import (
    SPOOF_CLASSES,
    ADcf,
    ClassCounts,
    EceSums,
    ElubCounts,
    InterpolatedEer,
    Misleading,
    PairCount,
    ScoreHistogram,
    ece_values,
    elub_bounds,
    histogram_bins,
    interpolated_eer_value,
)
from scoreframe.stats._resampling import Replicates
from scoreframe.stats._statistics import ClassData, Context, RangeData, Statistic, first_found
from scoreframe.stats._tandem import AsvspoofEer

__all__ = ["ClassData", "Context", "DetCorners", "EqContext", "EqStats", "KaldiEer", "NistEer",
           "RangeData", "Request", "ScoreStats", "Statistic", "Verification", "empty_stats",
           "verification_of",
           "merge",
           "merge_all", "merge_equalized", "reduce_equalized",
           "reduce_range", "reduce_sorted"]
__all__ += ["VerificationRequest", "VerificationStats", "merge_verification",
            "reduce_verification"]  # re-exported from the private biometric statistics
__all__ += ["SPOOF_CLASSES", "ADcf", "ClassCounts", "EceSums", "ElubCounts", "InterpolatedEer",
            "Misleading", "PairCount", "ScoreHistogram", "ece_values", "elub_bounds",
            "histogram_bins",
            "interpolated_eer_value"]  # re-exported from the private family statistics
__all__ += ["AsvspoofEer"]  # re-exported from the private tandem statistics

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
#: Bytes per trial of a range for replicated statistics: per class, the scores, unit hashes
#: (two columns) and labels, and one replicate's repeated scores (by class and by label).
REPLICATE_COPY_BYTES = 64


@dataclass(frozen=True)
class Request:
    """What to compute besides blocks and Cllr sums (the same for every group and range).

    Attributes
    ----------
    thresholds
        Score thresholds at which to count misses (targets ``< t``) and false alarms
        (non-targets ``>= t``): the Bayes thresholds of the operating points, then of any
        curve grid.
    statistics
        Typed statistic declarations (:class:`~scoreframe.stats._statistics.Statistic`:
        :class:`NistEer`, :class:`KaldiEer`, :class:`DetCorners`, :class:`Verification`,
        the spoof and forensic statistics...), each computed per range by its kernel and
        merged exactly; duplicates are computed once.
    replicates
        Bootstrap (and jackknife) replicates to compute besides the point statistics (see
        :mod:`scoreframe.stats._replicates`); the reduction then reads each trial's unit ids.
    class_column
        A column whose values split every unit into classes for the statistics that read
        classes (``trial_type`` for the anti-spoofing metrics); ``None``: no split.
    replicated
        Statistics of :attr:`statistics` whose replicate values the replicates carry in
        their ``extra`` (the needs of the metrics with intervals, e.g. the spoof and forensic
        statistics): each replicate is the statistic's own kernel on the range with every
        trial repeated as often as its weight (:mod:`scoreframe.stats._replicate_families`).
        Ignored without :attr:`replicates`.
    """

    thresholds: F64 = field(default_factory=lambda: np.empty(0))
    statistics: tuple[Statistic, ...] = ()
    replicates: Replicates | None = None
    class_column: str | None = None
    replicated: tuple[Statistic, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "statistics", tuple(dict.fromkeys(self.statistics)))
        object.__setattr__(self, "replicated", tuple(
            st for st in dict.fromkeys(self.replicated) if st in self.statistics))

    @property
    def bytes_per_trial(self) -> int:
        """Extra bytes per trial of a range the statistics hold (the class split: 16).

        Replicated statistics add the per-class copies of the scores and unit hashes and one
        replicate's repeated range at a time (:data:`REPLICATE_COPY_BYTES` per trial).
        """
        copies = REPLICATE_COPY_BYTES if self.replicates is not None and self.replicated \
            else 0
        return sum(st.bytes_per_trial for st in self.statistics) + copies + \
            (16 if self.class_column is not None else 0)


@dataclass(frozen=True, eq=False)
class ScoreStats:
    """Mergeable statistics of one group's trials in one contiguous score range.

    Attributes
    ----------
    n_tar, n_non
        Targets and non-targets in the range.
    blocks
        PAV blocks of the range (positions relative to the range's first trial).
    cllr_tar, cllr_non
        ``sum(softplus(-tar))`` and ``sum(softplus(non))`` over the trials with a finite
        cost, exactly (integers in units of ``2**-1126``, see
        :func:`~scoreframe.kernels.elementary.exact_sum`): merges are exact and the result
        does not depend on how the data were split.
    cllr_inf
        Trials with an infinite cost (targets at ``-inf``, non-targets at ``+inf``).
    n_miss, n_fa
        Integer counts at ``Request.thresholds``: targets below, non-targets at or above.
    extra
        The value of every statistic of :attr:`Request.statistics`, keyed by its declaration
        (:meth:`get`); the properties ``nist``, ``kaldi``, ``det_miss``/``det_fa`` and
        ``verification`` read the built-in ones.
    replicates
        The statistics of every replicate of :attr:`Request.replicates` in this range (the
        same fields with weighted integer counts and exact weighted sums, no located
        results); empty when no replicates were asked for.
    """

    n_tar: int
    n_non: int
    blocks: Blocks
    cllr_tar: int
    cllr_non: int
    cllr_inf: int
    n_miss: I64
    n_fa: I64
    extra: Mapping[Statistic, Any] = field(default_factory=dict)
    replicates: tuple[ScoreStats, ...] = ()

    @property
    def n(self) -> int:
        """Trials in the range."""
        return self.n_tar + self.n_non

    def get(self, statistic: Statistic) -> Any:
        """The value of one requested statistic (``None`` when it was not requested)."""
        return self.extra.get(statistic)

    def _of_type(self, kind: type[Statistic]) -> Any:
        for k, v in self.extra.items():
            if isinstance(k, kind):
                return v
        return None

    @property
    def nist(self) -> float | None:
        """The NIST EER when the crossing lies in these statistics' range (:class:`NistEer`)."""
        return self._of_type(NistEer)  # type: ignore[no-any-return]  # extra values are typed Any

    @property
    def kaldi(self) -> int | None:
        """The first global target index where Kaldi's walk stops, if here (:class:`KaldiEer`)."""
        return self._of_type(KaldiEer)  # type: ignore[no-any-return]  # extra values are typed Any

    def _det(self) -> tuple[I64, I64] | None:
        """The kept DET corners of the whole unit, the same however it was split in ranges.

        Each range keeps the ends of its runs of corners in one probit cell, its own first
        and last corner and its own PAV block ends: a superset of the unit's (a range's run
        ends include the unit's; a vertex of the unit's hull is one of the range's). The
        unit's rule applied again to that superset, with the unit's blocks, gives exactly the
        corners one range would keep (in memory, where a unit is one range, it changes nothing).
        """
        for k, v in self.extra.items():
            if isinstance(k, DetCorners) and v is not None:
                if not (self.n_tar and self.n_non):
                    return None
                return _det_corners(v[0], v[1], Context(self.n_tar, self.n_non), k.resolution,
                                    np.cumsum(self.blocks.n_tar))
        return None

    @property
    def det_miss(self) -> I64 | None:
        """Cumulative (global) misses at the kept steppy DET corners (:class:`DetCorners`)."""
        v = self._det()
        return None if v is None else v[0]

    @property
    def det_fa(self) -> I64 | None:
        """Cumulative (global) false alarms at the kept DET corners (:class:`DetCorners`)."""
        v = self._det()
        return None if v is None else v[1]

    @property
    def verification(self) -> VerificationStats | None:
        """Biometric verification statistics when requested (:class:`Verification`)."""
        return self._of_type(Verification)  # type: ignore[no-any-return]  # extra values are typed Any


def verification_of(request: Request) -> Verification | None:
    """The :class:`Verification` declaration among ``request``'s statistics, if any."""
    for st in request.statistics:
        if isinstance(st, Verification):
            return st
    return None


def empty_stats(request: Request) -> ScoreStats:
    """Statistics of an empty range (the identity of :func:`merge`)."""
    z = np.zeros(0, dtype=np.int64)
    f = np.zeros(0)
    k = request.thresholds.shape[0]
    return ScoreStats(0, 0, Blocks(z, z, z, f, f, f, f), 0, 0, 0,
                      np.zeros(k, np.int64), np.zeros(k, np.int64),
                      {st: st.empty() for st in request.statistics})


def _nist_crossing(cum_tar: I64, cum_non: I64, ctx: Context) -> float | None:
    """The NIST EER if the steppy ROC crosses ``fnr = fpr`` at one of these corners.

    ``cum_tar``/``cum_non`` are global cumulative counts at the corners of this range,
    preceded by the point before the range. The EER is interpolated between the last point
    with ``fnr < fpr`` and the first with ``fnr >= fpr``; within a run of equal labels the
    per-trial points are collinear, so corners give the same interpolation as all points.
    """
    t, n = ctx.total_tar, ctx.total_non
    # fnr - fpr = cum_tar/T - (N - cum_non)/N  ~  cum_tar*N - (N - cum_non)*T  (exact ints)
    diff = cum_tar * n - (n - cum_non) * t
    hit = np.flatnonzero(diff >= 0)
    if hit.size == 0 or hit[0] == 0:
        return None  # not crossed here, or crossed at or before the point preceding the range
    x1 = int(hit[0])
    fnr1, fpr1 = cum_tar[x1] / t, (n - cum_non[x1]) / n
    if diff[x1] == 0:
        return float(fnr1)
    fnr2, fpr2 = cum_tar[x1 - 1] / t, (n - cum_non[x1 - 1]) / n
    a = (fnr1 - fpr1) / (fpr2 - fpr1 - (fnr2 - fnr1))
    return float(fnr1 + a * (fnr2 - fnr1))


def _kaldi_stop(s: SortedScores, ctx: Context) -> int | None:
    """First global target index ``i`` (``i <= T - 2``) where Kaldi's walk stops, if here.

    Kaldi compares target ``i`` with the non-target of rank ``j = N - 1 - floor(N i / T)``;
    ``non[j] < tar[i]`` holds exactly when more than ``j`` non-targets score below ``tar[i]``,
    which this range can count: all lower ranges' non-targets, plus its own below ``tar[i]``.
    """
    t, n = ctx.total_tar, ctx.total_non
    i = ctx.offset_tar + np.arange(s.n_tar, dtype=np.int64)
    keep = i <= t - 2
    if not keep.any():
        return None
    i = i[keep]
    below = ctx.offset_non + np.searchsorted(s.non, s.tar[keep], side="left").astype(np.int64)
    j = np.maximum(n - 1 - (n * i) // t, 0)
    stop = np.flatnonzero(below > j)
    return int(i[stop[0]]) if stop.size else None


def _det_corners(cum_tar: I64, cum_non: I64, ctx: Context, resolution: float,
                 hull_tar: I64, *, keep_tail: int = 1) -> tuple[I64, I64]:
    """Decimated corners of the steppy DET (first and last of each probit cell kept).

    Corners at the end of a PAV block (``hull_tar``: cumulative targets there) are always
    kept, so the ROCCH vertices stay on the drawn curve; so are the first and the last
    ``keep_tail`` corners.
    """
    from scipy.special import ndtri  # scipy only: this module stays numpy/scipy

    if resolution <= 0:
        return cum_tar, cum_non
    pmiss = cum_tar / ctx.total_tar
    pfa = (ctx.total_non - cum_non) / ctx.total_non
    with np.errstate(divide="ignore"):
        x = np.clip(ndtri(pfa), -1e6, 1e6)
        y = np.clip(ndtri(pmiss), -1e6, 1e6)
    fx, fy = np.floor(x / resolution), np.floor(y / resolution)
    keep = np.ones(x.shape[0], dtype=bool)
    if x.shape[0] > 2:
        same = (fx[1:] == fx[:-1]) & (fy[1:] == fy[:-1])
        keep[1:] = ~same
        keep[:-1] |= ~same
        keep[-keep_tail:] = True  # the range's last corner(s) stay: the path keeps both ends
        if hull_tar.shape[0]:  # np.isin(cum_tar, hull_tar) of two ascending arrays, unsorted
            at = np.minimum(np.searchsorted(hull_tar, cum_tar), hull_tar.shape[0] - 1)
            keep |= hull_tar[at] == cum_tar
    return cum_tar[keep], cum_non[keep]


@dataclass(frozen=True)
class NistEer(Statistic):
    """The NIST steppy-ROC EER crossing (located: the range holding it computes it)."""

    def reduce(self, r: RangeData) -> float | None:
        """The EER if the crossing lies in this range."""
        if not (r.ctx.total_tar and r.ctx.total_non):
            return None
        return _nist_crossing(*r.corners, r.ctx)

    def merge(self, a: float | None, b: float | None) -> float | None:
        """The lower range's crossing when it holds one."""
        return first_found(a, b)  # type: ignore[no-any-return]  # extra values are typed Any


@dataclass(frozen=True)
class KaldiEer(Statistic):
    """Kaldi ``compute-eer``'s stopping index (located)."""

    def reduce(self, r: RangeData) -> int | None:
        """The first global target index where the walk stops, if in this range."""
        if not (r.s.n_tar and r.ctx.total_tar and r.ctx.total_non):
            return None
        return _kaldi_stop(r.s, r.ctx)

    def merge(self, a: int | None, b: int | None) -> int | None:
        """The lower range's index when it holds one."""
        return first_found(a, b)  # type: ignore[no-any-return]  # extra values are typed Any


@dataclass(frozen=True)
class DetCorners(Statistic):
    """Corners of the steppy DET, decimated to about one per ``resolution`` probit cell.

    ``resolution`` 0 keeps every corner. The value is ``(miss, fa, first, last)``:
    cumulative global counts at the kept corners, and the labels of the range's first and
    last runs (``None`` for a group without targets or non-targets). Read the unit's corners
    with :attr:`ScoreStats.det_miss` / :attr:`ScoreStats.det_fa`, which decimate the merged
    superset once more with the unit's own blocks, so that the curve is the same however the
    unit was split into ranges.

    A range's last corner is its end, which is a corner of the unit only if the next range
    starts with the other label: :meth:`merge` drops it otherwise. Each range keeps its last
    two corners, so the unit's corner before such a seam is never lost.
    """

    #: the ROC corners' cumulative counts and the located corners' probits (measured peak of
    #: the reduce temporaries: 18-21 B per trial at 5*10^6 trials a range, benchmarks/RESULTS.md)
    bytes_per_trial = 24

    resolution: float = 0.0

    def reduce(self, r: RangeData) -> tuple[I64, I64, bool | None, bool | None] | None:
        """The kept corners of this range, with the labels of its first and last runs."""
        if not (r.ctx.total_tar and r.ctx.total_non):
            return None
        if r.n == 0:
            return self.empty()
        cum_tar, cum_non = r.corners
        hull = r.ctx.offset_tar + np.cumsum(r.blocks.n_tar)
        miss, fa = _det_corners(cum_tar[1:], cum_non[1:], r.ctx, self.resolution, hull,
                                keep_tail=2)
        return miss, fa, *end_labels(r.s)

    def merge(self, a: tuple[I64, I64, bool | None, bool | None] | None,
              b: tuple[I64, I64, bool | None, bool | None] | None
              ) -> tuple[I64, I64, bool | None, bool | None] | None:
        """The corners of both ranges, in order (a range end inside a run dropped)."""
        if a is None or b is None:
            return None
        if a[2] is None:  # an empty range: the identity
            return b
        if b[2] is None:
            return a
        cut = a[0].shape[0] - (1 if a[3] == b[2] else 0)  # a's end lies inside a run
        return (np.concatenate((a[0][:cut], b[0])), np.concatenate((a[1][:cut], b[1])),
                a[2], b[3])

    def empty(self) -> tuple[I64, I64, bool | None, bool | None]:
        """No corners."""
        z = np.zeros(0, dtype=np.int64)
        return z, z, None, None


@dataclass(frozen=True)
class Verification(Statistic):
    """The biometric verification statistics of a :class:`VerificationRequest`."""

    request: VerificationRequest

    def reduce(self, r: RangeData) -> VerificationStats:
        """Counts at fixed thresholds, located FNMR at FMR (and back), the AUC's 2U."""
        return reduce_verification(r.s, self.request, total_tar=r.ctx.total_tar,
                                   total_non=r.ctx.total_non, offset_tar=r.ctx.offset_tar,
                                   offset_non=r.ctx.offset_non)

    def merge(self, a: VerificationStats | None, b: VerificationStats | None
              ) -> VerificationStats | None:
        """Exact (:func:`merge_verification`)."""
        return merge_verification(a, b)

    def empty(self) -> VerificationStats | None:
        """Nothing yet."""
        return None


def reduce_sorted(s: SortedScores, request: Request, ctx: Context | None = None, *,
                  classes: Mapping[str | None, ClassData] | None = None,
                  parts: Sequence[ScoreStats] = ()) -> ScoreStats:
    """Statistics of one range from its sorted target and non-target scores (one group).

    Parameters
    ----------
    s
        The range's scores, targets and non-targets each sorted ascending.
    request
        What to compute (thresholds, located results).
    ctx
        The group's totals and the counts below this range; ``None`` when ``s`` holds the
        whole group (offsets 0, totals from ``s``).
    classes
        Per class of ``request.class_column``, the class's scores in the range with its
        total and offset (for the statistics that read classes).
    parts
        Statistics, reduced with ``request``, of disjoint sets of trials whose union is this
        range (a pooled unit's conditions): the Cllr sums and the :attr:`Statistic.additive`
        statistics are then their merges instead of a pass over ``s``, the same integers.

    Examples
    --------
    >>> from scoreframe.kernels import sort_scores
    >>> st = reduce_sorted(sort_scores([1.0, 2.0], [0.0, 1.5]), Request(np.array([1.0])))
    >>> st.n_tar, st.n_non, st.n_miss.tolist(), st.n_fa.tolist()
    (2, 2, [0], [1])
    """
    if ctx is None:
        ctx = Context(s.n_tar, s.n_non)
    inf_t = int(np.searchsorted(s.tar, -np.inf, side="right"))  # cost softplus(inf)
    inf_n = s.n_non - int(np.searchsorted(s.non, np.inf, side="left"))
    # the Cllr sums (softplus, exact sums) are independent of the PAV blocks: on the main
    # thread, a large range computes them in a second thread meanwhile (both cores busy;
    # the same bits either way). Inside workers the cores are busy already.
    known: dict[Statistic, Any] = {}
    if parts:  # exact integers: the parts' sums are the range's
        known = {st: functools.reduce(st.merge, [p.extra.get(st, st.empty()) for p in parts])
                 for st in request.statistics if st.additive}
        s = SortedScores.seeded(s.tar, s.non, (sum(p.cllr_tar for p in parts),
                                               sum(p.cllr_non for p in parts)))
    pool = (ThreadPoolExecutor(1) if s.n_tar + s.n_non >= PARALLEL_MIN
            and "cllr_sums" not in vars(s)  # not summed with the sort already,
            and not getattr(s, "summed_elsewhere", False)  # nor being summed beside it
            and threading.current_thread() is threading.main_thread() else None)
    cllr = (pool.submit(lambda: s.cllr_sums) if pool is not None else None)
    try:
        thr = request.thresholds
        n_miss = np.searchsorted(s.tar, thr, side="left").astype(np.int64)
        n_fa = s.n_non - np.searchsorted(s.non, thr, side="left").astype(np.int64)
        blocks = pav_blocks(s) if s.n_tar + s.n_non else empty_stats(request).blocks
        data = RangeData(s, ctx, blocks, classes or {})
        extra = {st: known[st] if st in known else st.reduce(data) if data.n else st.empty()
                 for st in request.statistics}
        cllr_tar, cllr_non = cllr.result() if cllr is not None else s.cllr_sums
    finally:
        if pool is not None:
            pool.shutdown()
    return ScoreStats(s.n_tar, s.n_non, blocks, cllr_tar, cllr_non, inf_t + inf_n, n_miss,
                      n_fa, extra)


def reduce_range(tar: F64, non: F64, request: Request, ctx: Context | None = None
                 ) -> ScoreStats:
    """Statistics of one range from unsorted scores (sorts each class once)."""
    return reduce_sorted(SortedScores(np.sort(tar), np.sort(non)), request, ctx)


def merge(a: ScoreStats, b: ScoreStats) -> ScoreStats:
    """Statistics of two adjacent ranges of one group, ``a`` entirely below ``b`` (exact).

    Associative: ``merge(merge(a, b), c)`` equals ``merge(a, merge(b, c))`` (counts and blocks
    exactly, sums up to float addition order).
    """
    keys = list(dict.fromkeys([*a.extra, *b.extra]))
    extra = {st: st.merge(a.extra[st] if st in a.extra else st.empty(),
                          b.extra[st] if st in b.extra else st.empty()) for st in keys}
    return ScoreStats(
        a.n_tar + b.n_tar, a.n_non + b.n_non, concat_blocks(a.blocks, b.blocks),
        a.cllr_tar + b.cllr_tar, a.cllr_non + b.cllr_non, a.cllr_inf + b.cllr_inf,
        a.n_miss + b.n_miss, a.n_fa + b.n_fa, extra,
        _merge_replicates(a.replicates, b.replicates))


def _merge_replicates(a: tuple[ScoreStats, ...], b: tuple[ScoreStats, ...]
                      ) -> tuple[ScoreStats, ...]:
    """Replicate by replicate (a range without replicates, e.g. an empty one, adds nothing)."""
    if not a or not b:
        return a or b
    return tuple(merge(x, y) for x, y in zip(a, b, strict=True))


def merge_all(parts: list[ScoreStats], request: Request) -> ScoreStats:
    """Merge the statistics of consecutive ranges, lowest first."""
    out = empty_stats(request)
    for p in parts:
        out = merge(out, p)
    return out


@dataclass(frozen=True)
class EqContext:
    """Totals of each partition of an equalized unit, and their counts below the range."""

    tar_totals: I64
    non_totals: I64
    tar_offsets: I64
    non_offsets: I64


@dataclass(frozen=True, eq=False)
class EqStats:
    """Partition-equalized statistics of one unit in one range (NIST SRE16 style).

    Every partition with targets weighs equally in the miss rate, every partition with
    non-targets equally in the false-alarm rate. ``min_dcf`` is the range's minimum of the
    weighted DCF over thresholds between distinct scores (per operating point); ``eer`` the
    interpolated crossing of the weighted steppy ROC when it lies in this range.
    """

    min_dcf: F64
    eer: float | None


def reduce_equalized(members: list[SortedScores], ctx: EqContext, p: F64, q: F64
                     ) -> EqStats:
    """Equalized statistics of one range of a unit from its partitions' sorted scores.

    The partitions' sorted runs are merged once (a stable merge keeps targets before
    non-targets at equal scores); rates are sums over partitions of integer cumulative counts
    divided by the partition totals, formed at the end (no ``1 - running sum``).
    """
    n_part = len(members)
    tar_scores = [m.tar for m in members]
    non_scores = [m.non for m in members]
    scores = np.concatenate(tar_scores + non_scores)
    lab = np.concatenate([np.ones(s.shape[0], bool) for s in tar_scores]
                         + [np.zeros(s.shape[0], bool) for s in non_scores])
    part = np.concatenate([np.full(s.shape[0], i, np.int64) for i, s in enumerate(tar_scores)]
                          + [np.full(s.shape[0], i, np.int64) for i, s in enumerate(non_scores)])
    order = np.argsort(scores, kind="stable")  # merges the sorted runs
    sc, lab, part = scores[order], lab[order], part[order]
    n = sc.shape[0]
    has_t = ctx.tar_totals > 0
    has_n = ctx.non_totals > 0
    fnr = np.zeros(n + 1)
    fpr = np.zeros(n + 1)
    for i in range(n_part):  # a loop over partitions (few), not trials
        if has_t[i]:
            cum = ctx.tar_offsets[i] + np.concatenate(([0], np.cumsum(lab & (part == i))))
            fnr += cum / ctx.tar_totals[i]
        if has_n[i]:
            cum = ctx.non_offsets[i] + np.concatenate(([0], np.cumsum(~lab & (part == i))))
            fpr += (ctx.non_totals[i] - cum) / ctx.non_totals[i]
    fnr /= max(int(has_t.sum()), 1)
    fpr /= max(int(has_n.sum()), 1)
    cut = np.ones(n + 1, dtype=bool)  # thresholds fall between distinct scores only
    if n > 1:
        cut[1:n] = sc[1:] != sc[:-1]
    cost = np.asarray(p)[:, None] * fnr[None, cut] + np.asarray(q)[:, None] * fpr[None, cut]
    corner = np.ones(n + 1, dtype=bool)
    if n > 1:
        corner[1:n] = lab[1:] != lab[:-1]
    fc, pc = fnr[corner], fpr[corner]
    diff = fc - pc
    hit = np.flatnonzero(diff >= 0)
    eer = None
    if hit.size and hit[0] > 0:
        x1 = int(hit[0])
        if diff[x1] == 0:
            eer = float(fc[x1])
        else:
            a = (fc[x1] - pc[x1]) / (pc[x1 - 1] - pc[x1] - (fc[x1 - 1] - fc[x1]))
            eer = float(fc[x1] + a * (fc[x1 - 1] - fc[x1]))
    return EqStats(cost.min(axis=1), eer)


def merge_equalized(a: EqStats, b: EqStats) -> EqStats:
    """Equalized statistics of two adjacent ranges (minimum, and the located crossing)."""
    return EqStats(np.minimum(a.min_dcf, b.min_dcf), a.eer if a.eer is not None else b.eer)
