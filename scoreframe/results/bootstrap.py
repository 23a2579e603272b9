"""Bootstrap confidence intervals for every metric declared with intervals.

A replicate is a re-weighting of the trials on the statistics layer (see
:mod:`scoreframe.stats._replicates`): the one reduction pass of :func:`scoreframe.evaluate`
emits, for each score range it holds, the statistics of every replicate (weighted PAV-block
inputs, exact Cllr sums, error counts at the thresholds), and every metric declared with
intervals (:attr:`scoreframe.metrics.Metric.has_intervals`) is computed on them by its own
declaration, exactly as its point value. Resampling units are trials (``resample="trial"``)
or id columns (``resample=["model", "segment"]``: the two-way "subjects" bootstrap, where a
trial counts with the product of its model's and its segment's Poisson multiplicities).
Multiplicities come from a counter-based generator keyed by the seed, the column, the
replicate and a stable hash of the unit's id, so the same seed gives the same intervals, bit
for bit, on any engine (in memory, out of core, Dask), any number of workers, any memory
limit, any row order and any split of the data into files.

:func:`bootstrap_evaluate` is :func:`scoreframe.evaluate` with intervals and the extra columns
the interval views and :func:`trials_needed` read (``n_replicates``, ``pmiss_min``,
``pfa_min`` with their intervals). :func:`trials_needed` turns intervals into trial-count
guidance ([BdV11] section 2.1, the rule of 30).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl

from scoreframe.checks import check_positive
from scoreframe.frames.lazy import Data
from scoreframe.kernels.elementary import effective_prior
from scoreframe.metrics import INTERVALS, MAX_BOOTSTRAP, Intervals, declared
from scoreframe.metrics._options import (
    DEFAULT_OPERATING_POINTS,
    OperatingPointsLike,
    as_operating_points,
)
from scoreframe.metrics.registry import GroupStats, Metric
from scoreframe.results.evaluate import group_statistics, results_frame, validation
from scoreframe.stats.engine import EngineLike
from scoreframe.stats.groups import POOLED

__all__ = ["DEFAULT_INTERVALS", "INTERVALS", "MAX_BOOTSTRAP", "POOLED", "TRIAL", "Intervals",
           "bootstrap_evaluate", "interval_long", "trials_needed"]

#: The intervals of :func:`bootstrap_evaluate` and :func:`scoreframe.compare` by default.
DEFAULT_INTERVALS = Intervals()

#: Resampling unit meaning "each trial".
TRIAL = "trial"
Interval = Literal["percentile", "bca"]


def _rate_at_min(g: GroupStats, miss: bool) -> np.ndarray:
    _, n_miss, n_fa = g.min_dcf
    return n_miss / g.n_tar if miss else n_fa / g.n_non


#: Rates at the minimum-DCF point (the DET point of the minDCF), with intervals; not declared
#: (``evaluate`` reports the counts ``n_miss_min``/``n_fa_min``), used by the interval views.
AT_MIN = (
    Metric("pmiss_min", "Pmiss at min", "", lambda g: _rate_at_min(g, True),
           per_operating_point=True, table=False, intervals=True,
           description="miss rate at the minimum-DCF point"),
    Metric("pfa_min", "Pfa at min", "", lambda g: _rate_at_min(g, False),
           per_operating_point=True, table=False, intervals=True,
           description="false-alarm rate at the minimum-DCF point"),
)


def bootstrap_evaluate(data: Data, *, by: Sequence[str] | str | None = None,
                       where: str | None = None,
                       operating_points: OperatingPointsLike = DEFAULT_OPERATING_POINTS,
                       intervals: Intervals = DEFAULT_INTERVALS, engine: EngineLike = "auto",
                       pooled: bool = True, validate: bool | Sequence[str] = True
                       ) -> pl.DataFrame:
    """Evaluate per condition with bootstrap confidence intervals (one pass over the data).

    Parameters
    ----------
    data
        Trials (``score``, ``label``, condition and id columns): anything
        :func:`scoreframe.evaluate` accepts.
    by, where, operating_points, pooled, validate
        As in :func:`scoreframe.evaluate` (a ``system`` column is always a grouping column).
    intervals
        The replicates and intervals (:class:`~scoreframe.metrics.Intervals`; default 1000
        trial-level replicates, 95 %, percentile, seed 0). The same seed gives identical
        intervals on any engine, number of workers, memory limit, row order and split of the
        data into files.
    engine
        Where the one reduction runs, as in :func:`scoreframe.evaluate`; results do not
        depend on it.

    Returns
    -------
    polars.DataFrame
        The frame of :func:`scoreframe.evaluate` with intervals (every metric declared with
        intervals gets ``_lo``/``_hi``; group-level summaries named like a per-point metric,
        ``dr30_ok``, are left out so the ``dcf`` structs unnest), ``n_replicates``
        (replicates where the metrics are defined) after ``n_non``, and in each ``dcf``
        struct ``pmiss_min`` and ``pfa_min`` (the rates at the minimum-DCF point) with their
        intervals.

    See Also
    --------
    scoreframe.evaluate : The point estimates.
    scoreframe.compare : Paired differences with intervals.
    scoreframe.trials_needed : Trials for a wanted interval width.

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe.frames.synth import synth_chunks
    >>> df = next(synth_chunks(4000, n_systems=1, seed=3))
    >>> r = bootstrap_evaluate(df, by="gender", operating_points=0.1,
    ...                        intervals=Intervals(bootstrap=100))
    >>> r.select("gender", "n_tar").rows()
    [('f', 220), ('m', 180), ('all', 400)]
    >>> bool((r["eer_lo"] <= r["eer"]).all() and (r["eer"] <= r["eer_hi"]).all())
    True
    """
    opts, ops_in = intervals, as_operating_points(operating_points)
    check, ids = validation(validate)
    stats, ops = group_statistics(
        data, by=by, where=where, p_target=ops_in.p_target, c_miss=ops_in.c_miss,
        c_fa=ops_in.c_fa, pooled=pooled, engine=engine, validate=check, trial_id=ids,
        intervals=opts)
    return results_frame(stats, ops, metrics=bootstrap_metrics(), intervals=opts,
                         n_replicates=True)


def bootstrap_metrics() -> list[Metric]:
    """The metrics of a :func:`bootstrap_evaluate` frame: the binary suite and the rates at min.

    The group-level ``dr30_ok`` summary is left out (the ``dcf`` structs unnest beside the
    group).
    """
    per_point = {m.name for m in declared(family="binary", per_operating_point=True)}
    metrics = [m for m in declared(family="binary")
               if m.per_operating_point or m.name not in per_point]
    return [*metrics, *AT_MIN]


def interval_long(results: pl.DataFrame) -> pl.DataFrame:
    """One row per group x metric (x operating point): ``metric, p_target, value, lo, hi``.

    (``effective_prior`` too: the x of the operating point on an NBER plot is its logit.)

    Takes a :func:`bootstrap_evaluate` frame (or an evaluate frame with intervals joined in).
    """
    group = results.columns[: results.columns.index("n_tar")]
    shown = [m for m in declared(family=None) if m.table]
    scalars = [m.name for m in shown if not m.per_operating_point
               and f"{m.name}_lo" in results.columns]
    flat = results.select(*group, "dcf").explode("dcf").unnest("dcf")
    per_point = [m.name for m in shown if m.per_operating_point
                 and f"{m.name}_lo" in flat.columns]
    parts = []
    for name in scalars:
        parts.append(results.select(*group, pl.lit(name).alias("metric"),
                                    pl.lit(None, dtype=pl.Float64).alias("p_target"),
                                    pl.lit(None, dtype=pl.Float64).alias("effective_prior"),
                                    pl.col(name).alias("value"), pl.col(f"{name}_lo").alias("lo"),
                                    pl.col(f"{name}_hi").alias("hi")))
    for name in per_point:
        parts.append(flat.select(*group, pl.lit(name).alias("metric"),
                                 pl.col("p_target").cast(pl.Float64),
                                 pl.col("effective_prior").cast(pl.Float64),
                                 pl.col(name).alias("value"), pl.col(f"{name}_lo").alias("lo"),
                                 pl.col(f"{name}_hi").alias("hi")))
    return pl.concat(parts)


def trials_needed(results: pl.DataFrame, *, rel_width: float = 0.2) -> pl.DataFrame:
    """How many more targets and non-targets would bring each minDCF interval under a width.

    For each group and operating point of a :func:`bootstrap_evaluate` frame: the present
    relative width ``(hi - lo) / min_dcf_norm``, and the extra targets and non-targets (fewest
    in total) that bring it under ``rel_width``, plus the rule of 30 ([BdV11] section 2.1:
    at least 30 misses and 30 false alarms at the operating point).

    Scaling argument: at the minDCF point, ``DCF = p Pmiss + q Pfa``, and with binomial errors
    ``Var = p^2 Pmiss (1 - Pmiss) / T + q^2 Pfa (1 - Pfa) / N``, so the width scales like
    ``1 / sqrt(errors)``. The measured (bootstrap) width is split into a miss share ``s_m``
    and a false-alarm share ``s_f`` in proportion to those two variance terms; multiplying the
    targets by ``a`` and the non-targets by ``b`` gives width ``w sqrt(s_m / a + s_f / b)``.
    The cheapest ``(a, b)`` with ``a, b >= 1`` meeting the target is
    ``a = sqrt(s_m / T) (sqrt(s_m T) + sqrt(s_f N)) / c`` (and symmetrically ``b``), with
    ``c = (rel_width / present relative width)^2``, clipped at 1 and re-solved for the other
    side. New trials are assumed to behave like the present ones (for a two-way bootstrap:
    new speakers in the same proportions).

    Parameters
    ----------
    results
        A :func:`bootstrap_evaluate` frame.
    rel_width
        The wanted relative width of the minDCF interval.

    See Also
    --------
    scoreframe.bootstrap_evaluate : The intervals of a dataset at hand.

    Examples
    --------
    >>> from scoreframe.frames.synth import synth_chunks
    >>> from scoreframe import OperatingPoints
    >>> r = bootstrap_evaluate(next(synth_chunks(4000, n_systems=1, seed=3)),
    ...                        operating_points=OperatingPoints(0.1),
    ...                        intervals=Intervals(bootstrap=100))
    >>> g = trials_needed(r, rel_width=0.1)
    >>> bool(g["more_tar"][0] + g["more_non"][0] > 0)
    True
    """
    check_positive(rel_width, name="rel_width")
    group = results.columns[: results.columns.index("n_tar")]
    flat = results.select(*group, "n_tar", "n_non", "dcf").explode("dcf").unnest("dcf")
    out = []
    for row in flat.iter_rows(named=True):
        t, n = row["n_tar"], row["n_non"]
        v, lo, hi = row["min_dcf_norm"], row["min_dcf_norm_lo"], row["min_dcf_norm_hi"]
        rec = {c: row[c] for c in group} | {"p_target": row["p_target"], "n_tar": t,
                                             "n_non": n}
        more_t = more_n = rel = None
        r30_t = r30_n = None
        if None not in (v, lo, hi) and v > 0:
            rel = (hi - lo) / v
            p = float(effective_prior(row["p_target"]))
            pm, pf = row["pmiss_min"], row["pfa_min"]
            vm = p * p * pm * (1 - pm) / t
            vf = (1 - p) ** 2 * pf * (1 - pf) / n
            if vm + vf > 0:
                s_m, s_f = vm / (vm + vf), vf / (vm + vf)
                a, b = _allocate(s_m, s_f, t, n, (rel_width / rel) ** 2)
                more_t = max(0, math.ceil((a - 1) * t))
                more_n = max(0, math.ceil((b - 1) * n))
        if row["n_miss_min"] is not None:
            r30_t = _rule30(row["n_miss_min"], t)
            r30_n = _rule30(row["n_fa_min"], n)
        out.append(rec | {"rel_width": rel, "more_tar": more_t, "more_non": more_n,
                          "n_miss_min": row["n_miss_min"], "n_fa_min": row["n_fa_min"],
                          "rule30_more_tar": r30_t, "rule30_more_non": r30_n})
    return pl.from_dicts(out, infer_schema_length=None)


def _rule30(errors: int, total: int) -> int | None:
    """Extra trials so that the error count reaches 30 at the same error rate."""
    if errors >= 30:
        return 0
    if errors == 0:
        return None
    return math.ceil(total * 30 / errors) - total


def _allocate(s_m: float, s_f: float, t: int, n: int, c: float) -> tuple[float, float]:
    """Cheapest factors ``a, b >= 1`` with ``s_m / a + s_f / b <= c`` (extra trials a T + b N)."""
    if s_m + s_f <= c:
        return 1.0, 1.0
    root = math.sqrt(s_m * t) + math.sqrt(s_f * n)
    a = math.sqrt(s_m / t) * root / c
    b = math.sqrt(s_f / n) * root / c
    if a < 1:
        a = 1.0
        b = s_f / (c - s_m) if c > s_m else math.inf
    elif b < 1:
        b = 1.0
        a = s_m / (c - s_f) if c > s_f else math.inf
    return a, b
