"""Before/after tables for multiclass calibration and fusion.

Results layer: splits an applied model's output (``score`` plus the input ``score_raw`` or
``score_raw_<system>`` columns) into its stages and evaluates each with
:func:`scoreframe.multiclass.evaluate_multiclass`. Computes no metric itself.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

__all__ = ["MC_BEFORE_AFTER_COLUMNS", "multiclass_before_after", "multiclass_stages"]

#: Metric columns of the multiclass before/after table.
MC_BEFORE_AFTER_COLUMNS = ("cmxe", "info_bits", "error_rate", "cavg_norm", "min_cavg_norm")


def multiclass_stages(out: pl.DataFrame | pl.LazyFrame) -> dict[str, pl.LazyFrame]:
    """``{"before": input scores (long, with ``system`` for fusions), "after": output scores}``.

    Examples
    --------
    >>> out = pl.DataFrame({"segment": ["a", "a"], "class": ["x", "y"], "score": [0.5, -0.5],
    ...                     "score_raw_s1": [1.0, 0.0], "score_raw_s2": [2.0, 1.0]})
    >>> st = multiclass_stages(out)
    >>> st["before"].collect().select("system", "score").rows()
    [('s1', 1.0), ('s1', 0.0), ('s2', 2.0), ('s2', 1.0)]
    >>> st["after"].collect().columns
    ['segment', 'class', 'score']
    """
    lf = out.lazy()
    cols = lf.collect_schema().names()
    raw = [c for c in cols if c.startswith("score_raw")]
    if raw == ["score_raw"]:
        before = lf.drop("score").rename({"score_raw": "score"})
    else:
        before = pl.concat([lf.select("segment", "class", pl.col(c).alias("score"),
                                      system=pl.lit(c.removeprefix("score_raw_")))
                            for c in raw])
    return {"before": before, "after": lf.drop(raw)}


def multiclass_before_after(out: pl.DataFrame | pl.LazyFrame,
                            truth: str | Path | pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Cmxe, information, error rate and Cavg of a calibrated/fused table, before and after.

    Returns
    -------
    polars.DataFrame
        ``stage`` (``before``/``after``), ``system`` (fusions: one before row per input
        system), then :data:`MC_BEFORE_AFTER_COLUMNS`.
    """
    from scoreframe.multiclass import evaluate_multiclass

    rows = []
    for stage, scores in multiclass_stages(out).items():
        r = evaluate_multiclass(scores.collect(), truth).with_columns(stage=pl.lit(stage))
        rows.append(r.select("stage", *[c for c in r.columns if c == "system"],
                             *MC_BEFORE_AFTER_COLUMNS))
    return pl.concat(rows, how="diagonal_relaxed")
