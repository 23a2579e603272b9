"""Before/after tables for calibration and fusion: the same metrics on raw and on calibrated scores.

Results layer: runs :func:`scoreframe.results.evaluate.evaluate` on each stage (a trial table whose
``score`` is treated as an llr) and stacks the tidy rows. Computes nothing itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from scoreframe.metrics._options import OperatingPointsLike
from scoreframe.metrics.registry import table_metrics
from scoreframe.results.evaluate import evaluate, explode_dcf
from scoreframe.stats.engine import EngineLike

__all__ = ["before_after", "columns", "raw_stages"]


def columns() -> list[str]:
    """Columns of a before/after table: the keys, counts and the declared table metrics."""
    group_level, per_point = table_metrics()
    return ["set", "stage", "system", "n_tar", "n_non", *(m.name for m in group_level),
            "p_target", *(m.name for m in per_point)]


def raw_stages(out: pl.LazyFrame) -> pl.LazyFrame:
    """The input scores of a calibrated/fused table in long form (``system``, ``score``)."""
    cols = out.collect_schema().names()
    keep = [c for c in ("model", "segment", "label") if c in cols]
    if "score_raw" in cols:
        lf = out.select(*keep, pl.col("score_raw").alias("score"),
                        *(["system"] if "system" in cols else []))
        return lf if "system" in cols else lf.with_columns(system=pl.lit("raw"))
    raws = [c for c in cols if c.startswith("score_raw_")]
    return pl.concat([out.select(*keep, pl.col(c).alias("score"),
                                 system=pl.lit(c.removeprefix("score_raw_"))) for c in raws],
                     how="vertical")


def before_after(stages: Mapping[str, pl.LazyFrame | pl.DataFrame], *,
                 operating_points: OperatingPointsLike, set_name: str = "",
                 engine: EngineLike = "auto") -> pl.DataFrame:
    """Cllr, minCllr, EER and act/min DCF per stage and system (scores taken as llrs).

    Parameters
    ----------
    stages
        ``{"before": raw trials, "after": calibrated trials}`` (any labelled trial tables).
    operating_points
        Operating points of the DCF columns (an :class:`~scoreframe.metrics.OperatingPoints`,
        or target priors).
    set_name
        Value of the ``set`` column (``dev``, ``eval``, a file name).
    engine
        Where each stage's reduction runs, as in :func:`scoreframe.evaluate`.

    Returns
    -------
    polars.DataFrame
        One row per stage x system x prior: ``set, stage, system, n_tar, n_non``, the
        declared table metrics (``eer, cllr, min_cllr, ...``), ``p_target`` and the
        per-operating-point ones (``act_dcf_norm, min_dcf_norm``): see :func:`columns`.

    Examples
    --------
    >>> import polars as pl
    >>> raw = pl.DataFrame({"score": [3.0, 4, 1, 2], "label": [True, True, False, False]})
    >>> t = before_after({"before": raw, "after": raw.with_columns(pl.col("score") - 2.5)},
    ...                  operating_points=0.5)
    >>> t.select("stage", "cllr").rows()[1][1] < t.select("stage", "cllr").rows()[0][1]
    True
    """
    frames = []
    for stage, lf in stages.items():
        lf = lf.lazy()
        if "system" not in lf.collect_schema().names():
            lf = lf.with_columns(system=pl.lit("fused" if stage == "after" else "raw"))
        res = explode_dcf(evaluate(lf.select("system", "score", "label"),
                                   operating_points=operating_points, pooled=False,
                                   engine=engine))
        frames.append(res.with_columns(set=pl.lit(set_name), stage=pl.lit(stage))
                      .select(columns()))
    return pl.concat(frames, how="vertical_relaxed")
