"""Bootstrap intervals of declared metrics: the same ``compute`` on every replicate.

A metric declared with intervals (:attr:`~scoreframe.metrics.registry.Metric.has_intervals`)
gets ``_lo``/``_hi`` from its own ``compute`` applied to the statistics of each replicate
(:attr:`~scoreframe.stats.summary.ScoreStats.replicates`, built by the one reduction pass on
any engine), or from its ``compute_stack`` on stacks of replicates (the same kernels in their
``*_stack`` form, of which the one-group kernels are the stack of one: the same bits, without
Python work per replicate); there is no second implementation of any metric. Percentile
intervals, or BCa (Efron 1987) with the acceleration from the delete-a-block jackknife rows of
the same pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from scoreframe.checks import check_choice, check_positive_int, check_probability
from scoreframe.errors import ScoreframeError, message
from scoreframe.kernels import bootstrap as kb
from scoreframe.metrics.registry import GroupStack, GroupStats, Metric, OperatingPoints
from scoreframe.stats._resampling import MAX_BOOTSTRAP, TRIAL, Replicates
from scoreframe.stats.summary import ScoreStats

__all__ = ["INTERVALS", "MAX_BOOTSTRAP", "TRIAL", "IntervalBounds", "IntervalOptions",
           "Intervals", "interval_metrics", "metric_intervals", "replicate_values"]

F64 = NDArray[np.float64]
INTERVALS = ("percentile", "bca")
Interval = Literal["percentile", "bca"]
Key = tuple[str, bool]  # (metric name, per operating point)


@dataclass(frozen=True)
class Intervals:
    """Bootstrap confidence intervals: how replicates are drawn and intervals formed.

    Passed as ``intervals=`` to :func:`scoreframe.evaluate`, :func:`scoreframe.compare` and
    :func:`scoreframe.bootstrap_evaluate`; checked when created.

    Parameters
    ----------
    bootstrap
        Replicates ``B``, from 2 to :data:`MAX_BOOTSTRAP` (100,000): beyond it the Monte
        Carlo error of an interval end is far below the sampling uncertainty it measures.
    ci
        Nominal coverage, in ``(0, 1)``.
    resample
        ``"trial"`` (each trial is a unit, identified by its ``model`` and ``segment``
        values, or by its row position when the data has neither), or id columns resampled
        independently: ``("model", "segment")`` is the two-way bootstrap for evaluations
        that reuse speakers. A column that the data lacks is an error when the data is read.
    seed
        Any integer; the same seed gives identical intervals on any engine, number of
        workers, memory limit, row order and split of the data into files.
    method
        ``"percentile"`` or ``"bca"`` (bias-corrected and accelerated; acceleration from a
        delete-a-block jackknife over the resampling units, in the same pass).

    See Also
    --------
    scoreframe.evaluate : takes ``intervals=Intervals(...)``.
    scoreframe.bootstrap_evaluate : Intervals on every metric.
    scoreframe.compare : Intervals on paired differences.
    scoreframe.OperatingPoints : the other options object of an evaluation.

    Examples
    --------
    >>> Intervals(bootstrap=200, resample=["model", "segment"]).resample
    ('model', 'segment')
    >>> Intervals(bootstrap=0)
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: bad `bootstrap`: expected an integer in [2, 100000]; got 0
    """

    bootstrap: int = 1000
    ci: float = 0.95
    resample: str | Sequence[str] = (TRIAL,)
    seed: int = 0
    method: Interval = "percentile"

    def __post_init__(self) -> None:
        """Check every option; ``resample`` is stored as a tuple."""
        check_positive_int(self.bootstrap, name="bootstrap", minimum=2, maximum=MAX_BOOTSTRAP)
        check_probability(self.ci, name="ci")
        check_choice(self.method, name="method", choices=INTERVALS)
        resample = (self.resample,) if isinstance(self.resample, str) else tuple(self.resample)
        object.__setattr__(self, "resample", resample)
        self.replicates(())  # checks seed and resample

    def replicates(self, ids: Sequence[str]) -> Replicates:
        """The replicates to compute; ``ids`` identify a trial for ``resample="trial"``."""
        seed = self.seed
        if isinstance(seed, np.integer):
            seed = int(seed)
        resample = tuple(self.resample)
        return Replicates(resample, seed, int(self.bootstrap), self.method == "bca",
                          tuple(ids) if resample == (TRIAL,) else ())


#: The name of :class:`Intervals` in the code of this session's other branches (merged later).
IntervalOptions = Intervals


def interval_metrics(metrics: Sequence[Metric], *, eer_method: str = "rocch") -> list[Metric]:
    """The metrics of ``metrics`` that get intervals.

    Replicates carry the mergeable statistics (blocks, sums, threshold counts), not located
    results, so the EER has an interval only with the ROCCH convention.
    """
    return [m for m in metrics if m.has_intervals and (m.name != "eer" or eer_method == "rocch")]


def replicate_values(stats: ScoreStats, ops: OperatingPoints, metrics: Sequence[Metric]
                     ) -> dict[Key, F64]:
    """Every metric on every replicate of ``stats``: ``(R,)``, or ``(R, K)`` per operating point.

    NaN where a replicate has no target or no non-target weight. A metric with a
    ``compute_stack`` is computed for stacks of replicates at once (of at most
    :data:`STACK_BLOCKS` PAV blocks each), the others one replicate at a time.
    """
    reps = stats.replicates
    k = len(ops.p_target)
    out = {(m.name, m.per_operating_point): np.full((len(reps), k) if m.per_operating_point
                                                    else len(reps), np.nan) for m in metrics}
    defined = [r for r, st in enumerate(reps) if st.n_tar and st.n_non]
    stacked = [m for m in metrics if m.compute_stack is not None]
    single = [m for m in metrics if m.compute_stack is None]
    with np.errstate(all="ignore"):
        if stacked:
            for rows in _stacks(reps, defined):
                g = GroupStack(tuple(reps[r] for r in rows), ops)
                for m in stacked:
                    assert m.compute_stack is not None
                    key = (m.name, m.per_operating_point)
                    values = np.asarray(m.compute_stack(g), dtype=np.float64)
                    want = (len(rows), *out[key].shape[1:])
                    if values.shape != want:
                        raise ScoreframeError(message(
                            f"metric `{m.name}`: compute_stack gave the wrong shape",
                            expected=f"one value per replicate {want}",
                            got=str(values.shape),
                            hint="Return values with a leading replicate axis (and one "
                                 "column per operating point for per-point metrics)."))
                    out[key][rows] = values
        for r in defined if single else ():
            gs = GroupStats(reps[r], ops, "rocch")
            for m in single:
                out[(m.name, m.per_operating_point)][r] = m.compute(gs)
    return out


#: PAV blocks per stack of replicates (bounds the stacked kernels' temporaries).
STACK_BLOCKS = 1 << 19


def _stacks(reps: Sequence[ScoreStats], rows: Sequence[int]) -> list[list[int]]:
    """``rows`` cut into runs whose replicates hold at most :data:`STACK_BLOCKS` blocks."""
    out: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for r in rows:
        nb = reps[r].blocks.n_tar.shape[0]
        if cur and size + nb > STACK_BLOCKS:
            out.append(cur)
            cur, size = [], 0
        cur.append(r)
        size += nb
    if cur:
        out.append(cur)
    return out


@dataclass(frozen=True)
class IntervalBounds:
    """The intervals of one group: bounds per metric and the defined replicates."""

    n_replicates: int
    bounds: dict[Key, tuple[F64, F64]]


def metric_intervals(stats: ScoreStats, ops: OperatingPoints, metrics: Sequence[Metric],
                     options: Intervals) -> IntervalBounds:
    """Percentile or BCa bounds of ``metrics`` from the replicates carried by ``stats``.

    ``stats`` must carry ``options.bootstrap`` bootstrap replicates (and, for BCa, the
    jackknife rows after them). Jackknife rows that delete nothing of this group are left out.
    """
    b = options.bootstrap
    if len(stats.replicates) < b:
        raise ScoreframeError(message("the statistics carry too few replicates",
                                      expected=str(b), got=str(len(stats.replicates))))
    values = replicate_values(stats, ops, metrics)
    defined = sum(1 for st in stats.replicates[:b] if st.n_tar and st.n_non)
    bounds: dict[Key, tuple[F64, F64]] = {}
    point = GroupStats(stats, ops, "rocch")
    untouched = np.array([st.n_tar == stats.n_tar and st.n_non == stats.n_non
                          for st in stats.replicates[b:]], dtype=bool)
    for m in metrics:
        key = (m.name, m.per_operating_point)
        v = values[key]
        boot = v[:b]
        if options.method == "bca":
            jk = v[b:].copy()
            jk[untouched] = np.nan
            with np.errstate(all="ignore"):
                est = np.asarray(m.compute(point), dtype=np.float64)
            lo, hi = kb.bca_interval(boot, est, jk, options.ci)
        else:
            lo, hi = kb.percentile_interval(boot, options.ci)
        bounds[key] = (np.asarray(lo), np.asarray(hi))
    return IntervalBounds(defined, bounds)
