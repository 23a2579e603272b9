"""Forensic LR views: Tippett plot and ECE plot (the APE plot's sibling).

Both draw frames computed elsewhere (:func:`scoreframe.metrics.forensic.tippett`,
:func:`scoreframe.metrics.forensic.ece_curve`) with the series / measure machinery of
:mod:`scoreframe.views.plots.style`, so a system keeps its colour and dash in every chart of a
report.
``log10=True`` shows the x axis in log10 units (the forensic convention) instead of natural logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import altair as alt
import polars as pl

from scoreframe.views._vega import LN10, thin_rows
from scoreframe.views._vega import uniform_grid as _uniform_grid
from scoreframe.views.plots.style import (
    HEIGHT,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    inline_data,
    measure_encodings,
    measures_chart,
    series_encodings,
    series_labels,
    series_order,
    styles_for,
)

__all__ = ["ece_plot", "thin_rows", "tippett_plot"]

def _x_axis(df: pl.DataFrame, column: str, log10: bool, title: str) -> tuple[pl.DataFrame, str]:
    if log10:
        return df.with_columns(pl.col(column) / LN10), title.replace("ln", "log10")
    return df, title


def tippett_plot(tippett: Any, *, series: Sequence[str] | None = None,
                 styles: Mapping[str, SeriesStyle] | None = None, log10: bool = False,
                 thresholds_log10: bool = False, max_points: int = 2000, width: int = WIDTH,
                 height: int = HEIGHT, title: str = "Tippett plot"
                 ) -> alt.LayerChart | alt.FacetChart:
    """Tippett plot: proportions of same- and different-source llrs at or above each value.

    Parameters
    ----------
    tippett
        A :func:`scoreframe.metrics.forensic.tippett` frame (``threshold``, ``p_tar_ge``,
        ``p_non_ge``), optionally with group columns (several systems).
    series, styles
        Group columns naming a series and the series' colours and dashes.
    log10
        Show the x axis in log10 units (thresholds divided by ln 10).
    thresholds_log10
        The frame was made with ``tippett(..., log10=True)`` (thresholds already log10).
    max_points
        Display decimation per series (the curves are steps between llrs).

    See Also
    --------
    ece_plot : Another forensic chart.
    scoreframe.forensic : The metrics.

    Examples
    --------
    >>> from scoreframe.metrics.forensic import tippett
    >>> tippett_plot(tippett([1.0, 2.0], [-1.0, 0.5])).to_dict()["layer"][0]["mark"]["interpolate"]
    'step-before'
    """
    df = series_labels(as_polars(tippett), series)
    if log10 and not thresholds_log10:
        df = df.with_columns(pl.col("threshold") / LN10)
    unit = "log10(LR)" if (log10 or thresholds_log10) else "ln(LR)"
    df = thin_rows(df, max_points=max_points)
    order = series_order(df, None)
    several = len(order) > 1
    style = styles_for(order, styles)
    measures = {"p_tar_ge": "same source (H1)", "p_non_ge": "different source (H2)"}
    lines = measures_chart(df, measures, x="threshold").mark_line(
        interpolate="step-before", clip=True).encode(
        x=alt.X("threshold:Q", title=unit, scale=alt.Scale(nice=False, zero=False)),
        y=alt.Y("value:Q", title="proportion of LRs >= x", scale=alt.Scale(domain=[0, 1])),
        **series_encodings(order, style, dash=several),
        **measure_encodings(list(measures.values()), several_series=several),
        detail=f"{SERIES}:N",
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("threshold:Q", format=".3f"),
                 alt.Tooltip("value:Q", format=".4f")])
    zero = alt.Chart(inline_data(pl.DataFrame({"threshold": [0.0]}))).mark_rule(
        color="#555", strokeDash=[4, 3]).encode(x="threshold:Q")
    head = alt.Title(title, subtitle="dashed line: LR = 1")
    return alt.layer(lines, zero).properties(width=width, height=height, title=head)


def ece_plot(ece: Any, *, series: Sequence[str] | None = None,
             styles: Mapping[str, SeriesStyle] | None = None, log10: bool = False,
             width: int = WIDTH, height: int = HEIGHT,
             title: str = "Empirical cross-entropy") -> alt.LayerChart | alt.FacetChart:
    """ECE plot: the LRs' cross-entropy, its PAV minimum and the reference (LR = 1) curve.

    The sibling of :func:`scoreframe.views.plots.ape_plot`, drawn with the same series and measure
    encodings: actual (``ece``, bold) and PAV (``ece_min``) per series, and the reference
    ``ece_ref`` once, grey and dotted. At prior log odds 0 the curves read Cllr and minCllr
    (Ramos et al. 2013). The ECE is a smooth function of the prior log odds: on a uniform grid
    the curves are drawn as natural cubic splines through the exact values (Vega-Lite's
    ``interpolate="natural"``), which at the report's step of 0.5 stay within a few hundredths
    of a pixel of the exact curve, where straight segments between the same points would
    miss it by a few pixels; on any other grid, as straight segments.

    Parameters
    ----------
    ece
        A :func:`scoreframe.metrics.forensic.ece_curve` frame, optionally with group columns.
    log10
        Show the prior log odds in log10 units (lir's ECE plot axis).

    See Also
    --------
    tippett_plot : Another forensic chart.
    scoreframe.forensic : The metrics.

    Examples
    --------
    >>> from scoreframe.metrics.forensic import ece_curve
    >>> c = ece_plot(ece_curve([1.0, 2.0], [-1.0]), log10=True).to_dict()
    >>> c["layer"][0]["encoding"]["x"]["title"], c["layer"][0]["mark"]["interpolate"]
    ('prior log10 odds', 'natural')
    """
    df = series_labels(as_polars(ece), series)
    df, xtitle = _x_axis(df, "prior_log_odds", log10, "prior ln odds")
    order = series_order(df, None)
    several = len(order) > 1
    style = styles_for(order, styles)
    measures = {"ece": "LRs", "ece_min": "PAV LRs"}
    x = alt.X("prior_log_odds:Q", title=xtitle, scale=alt.Scale(nice=False, zero=False))
    shape: Literal["natural", "linear"] = (
        "natural" if _uniform_grid(df["prior_log_odds"]) else "linear")
    curves = measures_chart(df, measures).mark_line(clip=True, interpolate=shape).encode(
        x=x, y=alt.Y("value:Q", title="empirical cross-entropy (bits)"),
        **series_encodings(order, style, dash=several),
        **measure_encodings(list(measures.values()), several_series=several),
        detail=f"{SERIES}:N",
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("prior_log_odds:Q", format=".2f"),
                 alt.Tooltip("value:Q", format=".4f")])
    first = df.filter(pl.col(SERIES) == order[0]).select("prior_log_odds", "ece_ref")
    ref = alt.Chart(inline_data(first)).mark_line(color="#777", strokeDash=[1, 2], strokeWidth=1.0,
                                                  clip=True, interpolate=shape).encode(
        x="prior_log_odds:Q", y="ece_ref:Q")
    head = alt.Title(title, subtitle="grey dotted: the reference system (LR = 1)")
    return alt.layer(curves, ref).properties(width=width, height=height, title=head)
