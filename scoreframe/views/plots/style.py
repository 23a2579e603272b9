"""Shared look of every chart: series labels, one stable colour + dash per series, axes.

Views layer. A *series* is one group (e.g. a system / condition pair), labelled by its group
values joined with `` / ``. Its colour and dash come from its position in one ordered list of
labels (:func:`series_scale`), so the same group looks the same in the DET, NBER, APE and
calibration charts of a report, and every series differs from the others by colour *and* dash
(readable in grayscale and by colour-blind readers: the colours are the Okabe-Ito palette).
Legends draw the stroke itself (``symbolType: "stroke"`` with the dash), not a filled circle.

The probit axes of DET plots carry every standard tick (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 40 %
inside the default box) with explicit ``values``, a ``labelExpr`` in percent and
``labelOverlap=False``, so Vega never drops a label.

The constants and the helpers that need no Altair (series labels and styles, display rows,
the DET ticks) live in :mod:`scoreframe.views._vega`, shared with the report's plain
Vega-Lite dicts; this module re-exports them beside the Altair pieces.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import polars as pl
from altair.utils.schemapi import debug_mode

from scoreframe.views._vega import (
    COLORS,
    DASHES,
    DET_BOX,
    DET_TICKS,
    HEIGHT,
    MEASURE_DASHES,
    MEASURE_WIDTHS,
    NON_GROUP,
    OFF_SCALE,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    det_axis_options,
    det_ticks,
    display_rows,
    group_cols,
    legend_options,
    long_format,
    series_labels,
    series_order,
    series_scale,
    styles_for,
)

__all__ = ["COLORS", "DASHES", "DET_BOX", "DET_TICKS", "HEIGHT", "MEASURE_DASHES",
           "MEASURE_WIDTHS", "NON_GROUP", "OFF_SCALE", "SERIES", "WIDTH", "RowData", "SeriesStyle",
           "as_polars", "det_axis", "det_ticks", "display_rows", "group_cols", "inline_data",
           "legend", "long_format", "measure_encodings", "measures_chart", "series_encodings",
           "series_labels", "series_order", "series_scale", "styles_for"]


class RowData(alt.Data):
    """Inline rows that Altair neither deep-copies nor walks element by element.

    The rows are plain JSON values (numbers, strings, None) made by :func:`inline_data`; Altair
    would otherwise copy them on every chart operation and check each value in ``to_dict``
    (seconds for a report's charts).
    """

    def __deepcopy__(self, memo: object = None) -> RowData:
        return self

    def to_dict(self, validate: bool = True, *, ignore: list[str] | None = None,
                context: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{"values": rows}``, the rows as they are (no copy, no per-value checks)."""
        return {"values": self._kwds["values"]}


def inline_data(df: pl.DataFrame, *, digits: int = 5) -> alt.Data:
    """Inline data without Altair's row guard (rows are already at display resolution).

    Floats are rounded to ``digits`` significant digits (far below a pixel; it keeps notebook
    outputs and reports small), NaN becomes null and infinities become ``±OFF_SCALE``.
    """
    rows = display_rows(df, digits=digits)
    with debug_mode(False):  # the rows are plain numbers and strings: skip per-row validation
        return RowData(values=rows)  # type: ignore[no-untyped-call]  # alt.Data.__init__ has no annotations


def legend(title: str | None, **kw: Any) -> alt.Legend:
    """A legend whose symbols are short strokes (showing the dash), not filled circles."""
    return alt.Legend(**legend_options(title, **kw))


def series_encodings(order: Sequence[str], styles: Mapping[str, SeriesStyle], *,
                     names: Mapping[str, str] | None = None, title: str = "",
                     dash: bool = True) -> dict[str, Any]:
    """``color`` (and ``strokeDash``) encodings of the ``series`` field with fixed ranges.

    ``order`` are the series labels (as in the data, and the style keys) in legend order;
    ``names`` optional legend texts for them (e.g. with the EER appended), applied by a legend
    ``labelExpr`` so the data rows keep the short labels. Colour and dash share one legend
    whose symbols are dashed strokes.
    """
    order = list(order)
    kw: dict[str, Any] = {}
    if names:
        table = json.dumps({s: names[s] for s in order if s in names})
        kw["labelExpr"] = f"{table}[datum.label] || datum.label"
    lg = legend(title or None, **kw)
    enc: dict[str, Any] = {"color": alt.Color(f"{SERIES}:N", sort=order, legend=lg, scale=alt.Scale(
        domain=order, range=[styles[s].color for s in order]))}
    if dash:
        enc["strokeDash"] = alt.StrokeDash(f"{SERIES}:N", sort=order, legend=lg, scale=alt.Scale(
            domain=order, range=[list(styles[s].dash) for s in order]))
    return enc




def det_axis(title: str, lo: float, hi: float, *, length_px: float) -> alt.Axis:
    """A probit axis labelled in percent at every standard DET tick inside ``(lo, hi)``."""
    return alt.Axis(**det_axis_options(title, lo, hi, length_px=length_px))


def measure_encodings(measures: Sequence[str], *, several_series: bool,
                      title: str = "curve") -> dict[str, Any]:
    """Encodings telling the measures of a series apart (actual, minimum, ...).

    With several series the series own colour *and* dash, so measures differ by stroke width
    (the first, boldest, is the system's actual curve); with a single series the measures
    differ by dash and width as in the BOSARIS figures, and the colour stays the series' own.
    """
    widths = [MEASURE_WIDTHS[i % len(MEASURE_WIDTHS)] for i in range(len(measures))]
    lg = legend(title)
    enc: dict[str, Any] = {"strokeWidth": alt.StrokeWidth(
        "measure:N", sort=list(measures), legend=lg,
        scale=alt.Scale(domain=list(measures), range=widths))}
    if several_series and len(measures) > 2:  # a third measure also fades
        enc["opacity"] = alt.Opacity("measure:N", sort=list(measures), legend=lg, scale=alt.Scale(
            domain=list(measures), range=[1.0, 0.9, *[0.55] * (len(measures) - 2)]))
    if not several_series:
        enc["strokeDash"] = alt.StrokeDash("measure:N", sort=list(measures), legend=lg,
                                           scale=alt.Scale(domain=list(measures), range=[
                                               list(MEASURE_DASHES[i % len(MEASURE_DASHES)])
                                               for i in range(len(measures))]))
    return enc


def measures_chart(df: pl.DataFrame, measures: dict[str, str], *,
                   x: str = "prior_log_odds") -> alt.Chart:
    """A chart of the wide frame whose ``measures`` columns Vega folds into ``measure``/``value``.

    The rows stay wide (one per series and grid point, the measures renamed to their display
    names), which keeps the embedded data about half the size of a long frame.
    """
    wide = df.select(SERIES, x, *measures).rename(measures)
    return alt.Chart(inline_data(wide)).transform_fold(list(measures.values()),
                                                       as_=["measure", "value"])
