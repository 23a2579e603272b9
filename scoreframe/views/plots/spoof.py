"""Anti-spoofing views: the normalised t-DCF over CM thresholds with its minimum marked.

Draws a :func:`scoreframe.metrics.spoof.t_dcf_curve` frame (one row per point of the per-trial CM
sweep);
the minimum row (``is_min``) is always kept when the curve is thinned for display.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import polars as pl

from scoreframe.views.plots.forensic import thin_rows
from scoreframe.views.plots.style import (
    HEIGHT,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    inline_data,
    series_encodings,
    series_labels,
    series_order,
    styles_for,
)

__all__ = ["t_dcf_plot"]


def t_dcf_plot(curve: Any, *, series: Sequence[str] | None = None,
               styles: Mapping[str, SeriesStyle] | None = None, y_max: float | None = None,
               max_points: int = 2000, width: int = WIDTH, height: int = HEIGHT,
               title: str = "Normalised t-DCF over CM thresholds"
               ) -> alt.LayerChart | alt.FacetChart:
    """The t-DCF curve of a countermeasure in tandem with a fixed ASV, minimum marked.

    Parameters
    ----------
    curve
        A :func:`scoreframe.metrics.spoof.t_dcf_curve` frame (``cm_threshold``, ``t_dcf``,
        ``is_min``), optionally with group columns (several CMs or conditions).
    series, styles
        Group columns naming a series and the series' colours and dashes.
    y_max
        Top of the y axis (default: the data's maximum); the line at 1 is the t-DCF of a CM
        that accepts or rejects everything.
    max_points
        Display decimation per series (the marked minimum is always kept).

    See Also
    --------
    scoreframe.tandem_t_dcf : Its data.
    det_plot : The ASV system's DET.

    Examples
    --------
    >>> from scoreframe.metrics.spoof import t_dcf_curve
    >>> c = t_dcf_curve([2.0, 3.0], [0.0, 1.0], [2.5, 0.5], [1.0, 2.0, 3.0], [-1.0, 0.5])
    >>> spec = t_dcf_plot(c).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'rule', 'point', 'text']
    """
    df = series_labels(as_polars(curve), series)
    df = thin_rows(df, max_points=max_points, keep=pl.col("is_min"))
    order = series_order(df, None)
    style = styles_for(order, styles)
    scale = alt.Scale(zero=True, nice=False) if y_max is None else alt.Scale(
        domain=[0, y_max], nice=False)
    line = alt.Chart(inline_data(df.select(SERIES, "cm_threshold", "t_dcf"))).mark_line(
        clip=True, interpolate="step-after").encode(
        x=alt.X("cm_threshold:Q", title="CM threshold", scale=alt.Scale(nice=False,
                                                                         zero=False)),
        y=alt.Y("t_dcf:Q", title="normalised t-DCF", scale=scale),
        **series_encodings(order, style, dash=len(order) > 1),
        tooltip=[f"{SERIES}:N", alt.Tooltip("cm_threshold:Q", format=".4f"),
                 alt.Tooltip("t_dcf:Q", format=".5f")])
    one = alt.Chart(inline_data(pl.DataFrame({"t_dcf": [1.0]}))).mark_rule(
        color="#555", strokeDash=[1, 2]).encode(y="t_dcf:Q")
    mins = df.filter(pl.col("is_min")).select(SERIES, "cm_threshold", "t_dcf").with_columns(
        label=pl.format("min {} at {}", pl.col("t_dcf").round_sig_figs(4),
                        pl.col("cm_threshold").round_sig_figs(4)))
    point = alt.Chart(inline_data(mins)).mark_point(size=70, filled=True, clip=True).encode(
        x="cm_threshold:Q", y="t_dcf:Q", color=alt.Color(f"{SERIES}:N", legend=None, scale=(
            alt.Scale(domain=order, range=[style[s].color for s in order]))),
        tooltip=[f"{SERIES}:N", "label:N"])
    text = alt.Chart(inline_data(mins)).mark_text(align="left", dx=6, dy=-8, fontSize=10,
                                                  clip=True).encode(
        x="cm_threshold:Q", y="t_dcf:Q", text="label:N")
    head = alt.Title(title, subtitle="dotted line at 1: a CM that passes or blocks everything")
    return alt.layer(line, one, point, text).properties(width=width, height=height, title=head)
