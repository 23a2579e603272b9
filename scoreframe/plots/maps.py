"""Calibration maps, class-conditional score histograms and the multiclass Cavg sweep."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

from scoreframe.plots.style import (
    HEIGHT,
    SERIES,
    WIDTH,
    inline_data,
    long_format,
    series_encodings,
    series_labels,
    series_order,
)

__all__ = ["calibration_plot", "cavg_sweep_plot", "histogram_plot"]


def calibration_plot(maps: pl.DataFrame, *, title: str = "Calibration map") -> alt.Chart:
    """Score -> llr maps (``map``, ``score``, ``llr`` rows, e.g. PAV and a fitted model)."""
    order = maps["map"].unique(maintain_order=True).to_list()
    df = maps.rename({"map": SERIES}).with_columns(
        pl.col("llr").clip(-1e3, 1e3))
    enc = series_encodings(order, title="map")
    return alt.Chart(inline_data(df)).mark_line(strokeWidth=1.6).encode(
        x=alt.X("score:Q", title="score"), y=alt.Y("llr:Q", title="llr (nats)"), **enc,
        tooltip=[f"{SERIES}:N", alt.Tooltip("score:Q", format=".3f"),
                 alt.Tooltip("llr:Q", format=".3f")],
    ).properties(width=WIDTH, height=HEIGHT, title=title)


def histogram_plot(hist: pl.DataFrame, *, series: Sequence[str] | None = None,
                   title: str = "Score distributions") -> alt.Chart:
    """Class-conditional score histograms (a :func:`scoreframe.curves.histogram_frame`)."""
    df = series_labels(hist, series)
    chart = alt.Chart(inline_data(df)).mark_rect(opacity=0.55, stroke="black",
                                             strokeWidth=0.3).encode(
        x=alt.X("lo:Q", title="score"), x2="hi:Q", y=alt.Y("density:Q", title="density",
                                                          stack=None),
        fill=alt.Fill("class:N", scale=alt.Scale(domain=["target", "non-target"],
                                                 range=["#1f1f1f", "#bdbdbd"]),
                      legend=alt.Legend(title="class")),
    ).properties(width=WIDTH, height=160)
    if df[SERIES].n_unique() > 1:
        return chart.facet(row=alt.Row(f"{SERIES}:N", title=None)).properties(title=title)
    return chart.properties(title=title)


def cavg_sweep_plot(sweep: pl.DataFrame, *, series: Sequence[str] | None = None,
                    title: str = "Cavg across operating points") -> alt.Chart:
    """Normalized Cavg against logit(p_target): actual, oracle-recalibrated and minimum.

    Draws a :func:`scoreframe.multiclass.cavg_sweep` frame (seed 004 eq 8.28).
    """
    df = series_labels(sweep, series)
    order = series_order(df, None)
    long = long_format(df.select(SERIES, "prior_log_odds", "actual", "calibrated", "minimum"),
                 {"actual": "actual", "calibrated": "recalibrated (oracle)",
                  "minimum": "minimum (optimal threshold)"})
    enc = series_encodings(order)
    return alt.Chart(inline_data(long)).mark_line().encode(
        x=alt.X("prior_log_odds:Q", title="logit(p_target)"),
        y=alt.Y("value:Q", title="normalized Cavg"), color=enc["color"],
        strokeDash=alt.StrokeDash("measure:N", scale=alt.Scale(
            domain=["actual", "recalibrated (oracle)", "minimum (optimal threshold)"],
            range=[[1, 0], [6, 3], [2, 2]]), legend=alt.Legend(title="curve")),
        detail=f"{SERIES}:N",
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=WIDTH, height=HEIGHT, title=title)
