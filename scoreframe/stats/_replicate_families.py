"""Replicate values of typed statistics (the spoof and forensic families): the same kernels.

numpy only. A replicate re-weights the trials of a range (integer multiplicities from
:class:`~scoreframe.stats._resampling.Replicates`, :mod:`scoreframe.stats._replicates`). The
replicate of a :class:`~scoreframe.stats._statistics.Statistic` is the statistic of the range
with every trial repeated as often as its weight; the generic path builds exactly that range,
one replicate at a time, and calls the statistic's own :meth:`~Statistic.reduce`:

* the target and non-target scores, and each class's scores, are ``np.repeat``-ed by the
  trials' weights (the order stays sorted: equal scores of one class are equal values, so
  which trial carries which weight does not matter);
* the totals and the counts below the range are the replicate's weighted ones (a
  :class:`~scoreframe.stats._replicate_biometric.ReplicateContext`, per label and per class):
  in memory a unit is one range (offsets 0, totals the range's weighted counts); out of core
  the light first task :func:`~scoreframe.stats._replicate_biometric.weighted_counts` sums the
  weights of every range's groups and the driver forms totals and offsets.

A statistic may instead give an exact weighted kernel, ``reduce_weighted(r, weights)`` (the
range unrepeated, with the weighted totals and offsets, and each class's trial weights), equal
to its ``reduce`` on the repeated range (:class:`~scoreframe.stats._families.ADcf`: the
sweep's merged order is computed once per range and evaluated after each trial with
cumulative weights as counts).

Replicates of adjacent ranges then merge with the statistic's own :meth:`~Statistic.merge`
(:func:`scoreframe.stats.summary.merge` merges the replicates' ``extra``), so a replicate value
is exactly the point value of the resampled trials, on every engine. A repeated range holds
as many trials as the range on average (Poisson weights of mean 1): one at a time per range
and thread (:data:`~scoreframe.stats.summary.REPLICATE_COPY_BYTES` per trial in the memory
estimates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.sorted_scores import Blocks, SortedScores
from scoreframe.stats._replicate_biometric import ReplicateContext, distinct_units, trial_weights
from scoreframe.stats._resampling import Replicates, SortedUnits
from scoreframe.stats._statistics import ClassData, Context, RangeData, Statistic

__all__ = ["ClassUnits", "class_units", "prepare_extras", "replicate_extras"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]


@dataclass(frozen=True, eq=False)
class ClassUnits:
    """One class of a unit in one range: sorted scores with each trial's unit hashes and label.

    ``units`` are the distinct units of ``hashes`` (computed once for every chunk of rows).
    """

    scores: F64
    hashes: tuple[U64, ...]
    target: NDArray[np.bool_]
    units: list[tuple[U64, I64 | None]]

    def weights(self, spec: Replicates, rows: I64) -> NDArray[np.integer]:
        """The weights ``(len(rows), n)`` of the class's trials in ``rows``."""
        return trial_weights(spec, self.hashes, rows, units=self.units)


def class_units(members: Sequence[int], classes_of: Sequence[str | None],
                base: Sequence[SortedScores], base_units: Sequence[SortedUnits],
                spec: Replicates) -> dict[str | None, ClassUnits]:
    """Per class value, the sorted scores of a unit's members of that class with their units.

    The scores are those of :func:`scoreframe.stats.reduce.class_data` (a stable sort of the
    members' runs); the hashes and labels follow them.
    """
    by: dict[str | None, list[int]] = {}
    for g in members:
        by.setdefault(classes_of[g], []).append(g)
    out: dict[str | None, ClassUnits] = {}
    n_cols = len(spec.columns)
    for c, gs in by.items():
        x = np.concatenate([a for g in gs for a in (base[g].tar, base[g].non)])
        order = np.argsort(x, kind="stable")
        hashes = tuple(np.concatenate([h for g in gs for h in (base_units[g].tar[k],
                                                                base_units[g].non[k])])[order]
                       for k in range(n_cols))
        lab = np.concatenate([np.full(a.shape[0], t) for g in gs
                              for a, t in ((base[g].tar, True), (base[g].non, False))])[order] \
            if x.shape[0] else np.zeros(0, bool)
        out[c] = ClassUnits(x[order], hashes, lab.astype(bool),
                            distinct_units(spec, hashes))
    return out


def prepare_extras(statistics: Sequence[Statistic], s: SortedScores,
                   classes: Mapping[str | None, ClassUnits]) -> dict[Statistic, Any]:
    """What the weighted kernels of ``statistics`` share across replicates of one range.

    (``prepare`` of the statistics with a ``reduce_weighted``, on the unrepeated range.)
    """
    z = np.zeros(0, np.int64)
    data = RangeData(s, Context(0, 0), Blocks(z, z, z, *(np.zeros(0),) * 4),
                     {c: ClassData(cu.scores, 0, 0) for c, cu in classes.items()})
    return {st: st.prepare(data) for st in statistics  # type: ignore[attr-defined]  # checked by hasattr
            if hasattr(st, "reduce_weighted")}


def replicate_extras(statistics: Sequence[Statistic], s: SortedScores,
                     wt: NDArray[np.integer], wn: NDArray[np.integer],
                     classes: Mapping[str | None, ClassUnits],
                     cw: Mapping[str | None, NDArray[np.integer]],
                     ctx: ReplicateContext | None, blocks: Sequence[Blocks],
                     prepared: Mapping[Statistic, Any] | None = None
                     ) -> list[dict[Statistic, Any]]:
    """The values of ``statistics`` in replicates of one range (see the module docstring).

    ``wt``/``wn`` weigh the range's sorted targets and non-targets ``(R, n)``, ``cw`` each
    class's trials (``classes``); ``ctx`` holds the replicates' weighted totals and counts
    below the range (``None``: the range is the whole unit); ``blocks`` the replicates' PAV
    blocks (what :class:`~scoreframe.stats._statistics.RangeData` carries); ``prepared``
    :func:`prepare_extras` of the range (computed here when not given).

    Examples
    --------
    >>> from scoreframe.kernels import sort_scores
    >>> from scoreframe.stats._families import PairCount
    >>> s = sort_scores([1.0, 3.0], [2.0])
    >>> w = np.array([[2, 1]], np.uint16)
    >>> b = [Blocks(*(np.zeros(0, np.int64),) * 3, *(np.zeros(0),) * 4)]
    >>> replicate_extras([PairCount()], s, w, np.ones((1, 1), np.uint16), {}, {}, None, b)
    [{PairCount(pos=None, neg=None): 2}]
    """
    weighted = [st for st in statistics if hasattr(st, "reduce_weighted")]
    if prepared is None:
        prepared = prepare_extras(weighted, s, classes)
    generic = [st for st in statistics if not hasattr(st, "reduce_weighted")]
    out: list[dict[Statistic, Any]] = []
    for r in range(wt.shape[0]):
        n_t, n_n = int(wt[r].sum(dtype=np.int64)), int(wn[r].sum(dtype=np.int64))
        if ctx is None:
            context = Context(n_t, n_n)
        else:
            context = Context(int(ctx.total_tar[r]), int(ctx.total_non[r]),
                              int(ctx.offset_tar[r]), int(ctx.offset_non[r]))
        place: dict[str | None, tuple[int, int, int]] = {}  # class: total, offset, n_tar
        for c, cu in classes.items():
            w = cw[c][r]
            n_tar = int(w[cu.target].sum(dtype=np.int64))
            if ctx is not None and c in ctx.class_totals:
                place[c] = (int(ctx.class_totals[c][r]), int(ctx.class_offsets[c][r]), n_tar)
            else:
                place[c] = (int(w.sum(dtype=np.int64)), 0, n_tar)
        values: dict[Statistic, Any] = {}
        if weighted:  # exact weighted kernels: the classes unrepeated, with their weights
            data = RangeData(s, context, blocks[r], {
                c: ClassData(cu.scores, *place[c]) for c, cu in classes.items()})
            w_of = {c: cw[c][r] for c in classes}
            for st in weighted:
                kernel = getattr(st, "reduce_weighted")  # noqa: B009  # an optional method
                values[st] = kernel(data, w_of, prepared[st]) if n_t + n_n else st.empty()
        if generic:  # the range with every trial repeated by its weight
            rs = SortedScores(np.repeat(s.tar, wt[r]), np.repeat(s.non, wn[r]))
            data = RangeData(rs, context, blocks[r], {
                c: ClassData(np.repeat(cu.scores, cw[c][r]), *place[c])
                for c, cu in classes.items()})
            for st in generic:
                values[st] = st.reduce(data) if data.n else st.empty()
        out.append({st: values[st] for st in statistics})
    return out
