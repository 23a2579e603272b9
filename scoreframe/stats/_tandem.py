"""Mergeable statistics of the tandem t-DCF (a CM in front of an ASV) and the ASVspoof EER.

numpy only, like :mod:`scoreframe.stats.summary`. The t-DCF needs, from the trials scored by
both systems, the ASV operating point (by default the ASVspoof EER threshold of the ASV's
targets against its non-targets), the ASV's error rates there (targets, non-targets and spoofs
below it), and the CM's miss / false-alarm counts along its per-trial sweep. Each is a typed
statistic here (:class:`~scoreframe.stats._statistics.Statistic`), reduced per score range and
merged exactly, so the tandem rides the one reduction on every engine:

* :class:`AsvspoofEer`: the first minimum of ``|Pmiss - Pfa|`` over the per-trial sweep (the
  ASVspoof ``compute_eer``), its EER and threshold, and the trials of some classes strictly
  below that threshold (located: the range holding the threshold counts them, with the
  counts below it);
* :class:`ClassesBelow`: trials of some classes strictly below a fixed threshold (a given ASV
  threshold);
* :class:`SweepCorners`: the corners of a two-class per-trial sweep (the point before the
  first trial and the point after each run of equal classes in merged score order), as global
  rejection counts with their thresholds, and the number of distinct and of non-finite scores.

Every value is an integer count, a minimum with its first argument, or a score copied from the
data, computed with the same float operations as :mod:`scoreframe.kernels.spoof`, so the
results do not depend on how the trials were split into ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import spoof as ks
from scoreframe.stats._families import _TwoSided, sweep_pieces
from scoreframe.stats._statistics import ClassData, RangeData

__all__ = ["AsvspoofEer", "ClassesBelow", "EerPoint", "SweepCorners", "SweepState"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class EerPoint:
    """The located point of :class:`AsvspoofEer`.

    ``gap`` is ``|Pmiss - Pfa|`` there (the value minimised), ``eer`` ``(Pmiss + Pfa) / 2``,
    ``threshold`` the score of the last rejected trial, ``below`` the trials of each class of
    ``AsvspoofEer.below`` strictly below ``threshold`` (in the whole unit).
    """

    gap: float
    eer: float
    threshold: float
    below: tuple[int, ...]


@dataclass(frozen=True)
class AsvspoofEer(_TwoSided):
    """The ASVspoof per-trial EER of ``pos`` against ``neg`` (located first minimum).

    Each range evaluates the sweep points after each of its trials (targets before
    non-targets at equal scores) with the global rejection counts, with the float operations
    of :func:`scoreframe.kernels.spoof.asvspoof_eer`; the all-accepted point belongs to the
    range holding the lowest trial. Ranges merge by a strict minimum of ``gap`` (ties keep the
    lower range: the first argmin). ``below`` names classes counted strictly below the
    threshold found (the ASV error rates of the t-DCF); the all-accepted point (threshold
    ``min - 0.001``) is never the minimum when both sides have trials (the next point has a
    smaller gap), so the threshold is always a score of the range that holds it.
    """

    bytes_per_trial = 40  # the sweep of a piece: labels and rejection counts

    below: tuple[str, ...] = ()

    def reduce(self, r: RangeData) -> EerPoint | None:
        """The range's first minimum (in pieces of at most ``SWEEP_PIECE`` trials)."""
        p, n = self.sides(r)
        if not (p.total and n.total) or not (p.n or n.n):
            return None
        best: tuple[float, float, float] | None = None
        for piece, before in sweep_pieces([p.scores, n.scores]):
            if not sum(x.shape[0] for x in piece):
                continue
            offsets = [p.offset + before[0], n.offset + before[1]]
            sw = ks.per_trial_sweep(*piece)
            first = offsets[0] == 0 and offsets[1] == 0
            rej = sw.rejected + np.array([[o] for o in offsets], dtype=np.int64)
            if not first:
                rej = rej[:, 1:]
            frr = rej[0] / p.total
            far = (n.total - rej[1]) / n.total
            gap = np.abs(frr - far)
            k = int(np.argmin(gap))
            cand = (float(gap[k]), float((frr[k] + far[k]) / 2),
                    sw.threshold(k if first else k + 1, offset=ks.DET_FIRST_OFFSET))
            if best is None or cand[0] < best[0]:
                best = cand
        if best is None:
            return None
        thr = best[2]
        counts = tuple(c.offset + int(np.searchsorted(c.scores, thr, side="left"))
                       for c in (r.cls(name) for name in self.below))
        return EerPoint(best[0], best[1], thr, counts)

    def merge(self, a: EerPoint | None, b: EerPoint | None) -> EerPoint | None:
        """The strict minimum (ties: the lower range)."""
        if a is None:
            return b
        if b is None:
            return a
        return b if b.gap < a.gap else a


@dataclass(frozen=True)
class ClassesBelow(_TwoSided):
    """Trials of each of ``names`` strictly below ``threshold`` (``score < threshold``)."""

    threshold: float = 0.0
    names: tuple[str, ...] = ()

    @property
    def classes(self) -> tuple[str, ...]:  # type: ignore[override]  # a property narrowing the base's attribute
        """The class values read."""
        return self.names

    def reduce(self, r: RangeData) -> tuple[int, ...]:
        """The range's counts."""
        return tuple(int(np.searchsorted(c.scores, self.threshold, side="left"))
                     for c in (r.cls(name) for name in self.names))

    def merge(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        """Counts add."""
        return tuple(x + y for x, y in zip(a, b, strict=True))

    def empty(self) -> tuple[int, ...]:
        """No trials."""
        return (0,) * len(self.names)


@dataclass(frozen=True, eq=False)
class SweepState:
    """The corners of :class:`SweepCorners` (global counts) and the score checks.

    ``threshold[i]`` is the threshold of the i-th corner as the per-trial sweep reports it
    (the score of the last rejected trial; ``min - 0.001`` at the all-accepted point),
    ``rejected_pos[i]`` / ``rejected_neg[i]`` the positives / negatives rejected there,
    ``last_neg[i]`` whether the corner ends a run of negatives. ``distinct`` counts the
    distinct scores, ``not_finite`` the infinite ones.
    """

    threshold: F64
    rejected_pos: I64
    rejected_neg: I64
    last_neg: NDArray[np.bool_]
    distinct: int
    not_finite: int


@dataclass(frozen=True)
class SweepCorners(_TwoSided):
    """Corners of the per-trial sweep of ``pos`` against ``neg`` (``pos`` first at ties).

    The corners are the all-accepted point and the point after each run of trials of one
    side in merged score order (the same whatever the score ranges of the reduction).

    Along the merged score order the sweep's rejection counts change linearly within a run of
    trials of one side, so any cost linear in the rates is monotone between corners and takes
    its minimum at a corner; the per-trial point of a first minimum inside a run of negatives
    follows from the counts alone (see :func:`scoreframe.results.tandem.tandem_curve`).
    """

    bytes_per_trial = 48  # merged scores, positions, labels and their temporaries

    def reduce(self, r: RangeData) -> SweepState:
        """The range's corners (the all-accepted point when the range holds the lowest trial)."""
        p, n = self.sides(r)
        return self._corners(p, n)

    def _corners(self, p: ClassData, n: ClassData) -> SweepState:
        b, s = p.scores, n.scores
        nb, ns = b.shape[0], s.shape[0]
        total = nb + ns
        if total == 0:
            return self.empty()
        pos_b = np.arange(nb, dtype=np.int64) + np.searchsorted(s, b, side="left")
        pos_s = np.arange(ns, dtype=np.int64) + np.searchsorted(b, s, side="right")
        merged = np.empty(total)
        merged[pos_b] = b
        merged[pos_s] = s
        is_neg = np.zeros(total, dtype=bool)
        is_neg[pos_s] = True
        del pos_s
        ends = np.flatnonzero(np.r_[is_neg[1:] != is_neg[:-1], True])
        rb = np.searchsorted(pos_b, ends, side="right").astype(np.int64)
        del pos_b
        rs = ends + 1 - rb
        thr = merged[ends]
        last = is_neg[ends]
        distinct = 1 + int(np.count_nonzero(merged[1:] != merged[:-1]))
        not_finite = total - int(np.count_nonzero(np.isfinite(merged)))
        rb += p.offset
        rs += n.offset
        if p.offset == 0 and n.offset == 0:  # the all-accepted point
            thr = np.r_[float(merged[0]) - ks.DET_FIRST_OFFSET, thr]
            rb = np.r_[np.int64(0), rb]
            rs = np.r_[np.int64(0), rs]
            last = np.r_[False, last]
        return SweepState(thr, rb, rs, last, distinct, not_finite)

    def merge(self, a: SweepState, b: SweepState) -> SweepState:
        """The corners of both ranges, in order; counts add.

        When ``a``'s last run continues into ``b`` (same side), its last point in ``a`` is
        not a corner and is dropped: the corners do not depend on the ranges.
        """
        if a.threshold.shape[0] == 0:
            return b
        if b.threshold.shape[0] == 0:
            return a
        cut = a.threshold.shape[0] - int(bool(a.last_neg[-1] == b.last_neg[0]))
        return SweepState(np.concatenate((a.threshold[:cut], b.threshold)),
                          np.concatenate((a.rejected_pos[:cut], b.rejected_pos)),
                          np.concatenate((a.rejected_neg[:cut], b.rejected_neg)),
                          np.concatenate((a.last_neg[:cut], b.last_neg)),
                          a.distinct + b.distinct, a.not_finite + b.not_finite)

    def empty(self) -> SweepState:
        """No corners."""
        z = np.zeros(0, dtype=np.int64)
        return SweepState(np.zeros(0), z, z, np.zeros(0, dtype=bool), 0, 0)
