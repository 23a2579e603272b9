"""Shared look of every chart: series labels, the stable series -> colour + dash mapping, axes.

Views layer. A series is one group (e.g. a system / condition pair); its colour and dash come
from its position in the ordered list of group labels, so the same group looks the same in every
chart of a report and stays distinguishable in grayscale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import polars as pl
from altair.utils.schemapi import debug_mode

from scoreframe.kernels.elementary import probit

__all__ = ["DASHES", "DET_BOX", "DET_TICKS", "HEIGHT", "SERIES", "WIDTH", "det_axis",
           "group_cols", "inline_data", "long_format", "series_encodings", "series_labels",
           "series_order"]

DET_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
DET_BOX = (0.0005, 0.5)
DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4], [4, 4, 1, 4], [1, 3], [10, 2, 2, 2]]
WIDTH, HEIGHT = 360, 300
SERIES = "series"
NON_GROUP = {"curve", "pfa", "pmiss", "probit_pfa", "probit_pmiss", "eer", "dr30_pfa",
             "dr30_pmiss", "probit_dr30_pfa", "probit_dr30_pmiss", "prior_log_odds",
             "p_target", "kind", "dcf_norm", "class", "lo", "hi", "density", "score", "llr",
             "map", "n_tar", "n_non"}


def group_cols(df: pl.DataFrame, series: Sequence[str] | None) -> list[str]:
    """The columns naming a series: ``series`` if given, else the leading string columns."""
    if series is not None:
        return list(series)
    cols = []
    for c in df.columns:
        if c in NON_GROUP or df.schema[c] not in (pl.String, pl.Categorical, pl.Enum):
            if cols or c in NON_GROUP:
                break
            continue
        cols.append(c)
    return cols


def series_labels(df: pl.DataFrame, series: Sequence[str] | None = None) -> pl.DataFrame:
    """Add a ``series`` column: the group columns' values joined by `` / ``."""
    cols = group_cols(df, series)
    if SERIES in df.columns:
        return df
    if not cols:
        return df.with_columns(pl.lit("scores").alias(SERIES))
    return df.with_columns(pl.concat_str([pl.col(c).cast(pl.String).fill_null("∅")
                                          for c in cols], separator=" / ").alias(SERIES))


def inline_data(df: pl.DataFrame) -> alt.Data:
    """Inline data without Altair's row guard (rows are already at display resolution)."""
    clean = df.with_columns([pl.col(c).fill_nan(None) for c, t in df.schema.items()
                             if t in (pl.Float32, pl.Float64)])
    with debug_mode(False):  # the rows are plain numbers and strings: skip per-row validation
        return alt.Data(values=clean.to_dicts())


def series_order(df: pl.DataFrame, by: str | None) -> list[str]:
    """Series labels in order of first appearance, or sorted by the first value of ``by``."""
    if by is None or by not in df.columns:
        return df[SERIES].unique(maintain_order=True).to_list()
    first = df.group_by(SERIES, maintain_order=True).agg(pl.col(by).first())
    return first.sort(by, nulls_last=True)[SERIES].to_list()


def series_encodings(order: list[str], *, title: str = "") -> dict[str, Any]:
    """Colour and dash encodings of the ``series`` field, one pair per label in ``order``."""
    dashes = [DASHES[i % len(DASHES)] for i in range(len(order))]
    legend = alt.Legend(title=title or None, orient="right", symbolStrokeWidth=2)
    return {
        "color": alt.Color(f"{SERIES}:N", sort=order, legend=legend,
                           scale=alt.Scale(domain=order, scheme="category10")),
        "strokeDash": alt.StrokeDash(f"{SERIES}:N", sort=order, legend=legend,
                                     scale=alt.Scale(domain=order, range=dashes)),
    }


def det_axis(title: str) -> alt.Axis:
    """A probit axis labelled in percent at the standard DET ticks."""
    vals = [float(probit(t)) for t in DET_TICKS]
    expr = " : ".join(f"datum.value < {v + 1e-6:.6f} ? '{t * 100:g}'" for v, t in
                      zip(vals, DET_TICKS, strict=True)) + " : ''"
    return alt.Axis(values=vals, labelExpr=expr, title=title, grid=True)


def long_format(df: pl.DataFrame, measures: dict[str, str]) -> pl.DataFrame:
    """Unpivot the ``measures`` columns into ``measure`` (display names) and ``value``."""
    keep = [c for c in df.columns if c not in measures]
    return df.unpivot(on=list(measures), index=keep, variable_name="measure",
                      value_name="value").with_columns(
        pl.col("measure").replace_strict(measures))
