"""Calibration maps, class-conditional score histograms and the multiclass Cavg sweep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import polars as pl

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

__all__ = ["calibration_plot", "cavg_sweep_plot", "histogram_plot"]


def calibration_plot(maps: Any, *, styles: Mapping[str, SeriesStyle] | None = None,
                     width: int = WIDTH, height: int = HEIGHT,
                     title: str = "Calibration map") -> alt.Chart:
    """Score -> llr maps (``map``, ``score``, ``llr`` rows, e.g. PAV and a fitted model).

    Each map is a series with its own colour and dash (``styles`` keyed by map name). The y
    axis spans the finite llrs; infinite llrs (the ends of a PAV map) leave the plot at the
    frame instead of stretching the axis.

    Parameters
    ----------
    maps
        Rows ``map``, ``score``, ``llr``.
    styles
        Series label -> :class:`SeriesStyle` (see :func:`series_scale`).
    width, height
        The plot's size in pixels.
    title
        The chart's title.

    Returns
    -------
    altair.Chart
        One line per map.

    See Also
    --------
    scoreframe.LinearCalibration, scoreframe.PavCalibration : The maps it draws.
    histogram_plot : The score distributions.

    Examples
    --------
    >>> import polars as pl
    >>> maps = pl.DataFrame({"map": ["pav"] * 3, "score": [0.0, 1.0, 2.0],
    ...                      "llr": [float("-inf"), 0.0, float("inf")]})
    >>> calibration_plot(maps).to_dict()["encoding"]["y"]["scale"]["domain"]
    [-1.0, 1.0]
    """
    maps = as_polars(maps)
    order = maps["map"].unique(maintain_order=True).to_list()
    style = styles_for(order, styles)
    df = maps.rename({"map": SERIES}).select(SERIES, "score", "llr")
    finite = df.filter(pl.col("llr").is_finite())["llr"]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.len() else (-1.0, 1.0)
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    domain = [lo - pad, hi + pad]
    chart: alt.Chart = alt.Chart(inline_data(df)).mark_line(strokeWidth=1.6, clip=True).encode(
        x=alt.X("score:Q", title="score", scale=alt.Scale(nice=False, zero=False)),
        y=alt.Y("llr:Q", title="llr (nats)", scale=alt.Scale(domain=domain, nice=False)),
        **series_encodings(order, style, title="map"),
        tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("score:Q", format=".3f"),
                 alt.Tooltip("llr:Q", format=".3f")],
    ).properties(width=width, height=height, title=title)
    return chart


def histogram_plot(hist: Any, *, series: Sequence[str] | None = None,
                   title: str = "Score distributions") -> alt.Chart | alt.FacetChart:
    """Class-conditional score histograms (a :func:`scoreframe.results.curves.histogram_frame`).

    Parameters
    ----------
    hist
        A histogram frame (``class``, ``lo``, ``hi``, ``density``).
    series
        Group columns naming the series (default: all group columns).
    title
        The chart's title.

    Returns
    -------
    altair.Chart or altair.FacetChart
        One panel per series when there are several.

    See Also
    --------
    calibration_plot : Score-to-llr maps.
    det_plot : Error rates by threshold.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from scoreframe.results.curves import histogram_frame
    >>> rng = np.random.default_rng(0)
    >>> df = pl.DataFrame({"score": np.r_[rng.normal(2, 1, 50), rng.normal(0, 1, 150)],
    ...                    "label": np.r_[np.ones(50, bool), np.zeros(150, bool)]})
    >>> histogram_plot(histogram_frame(df, bins=20)).to_dict()["mark"]["type"]
    'rect'
    """
    df = series_labels(as_polars(hist), series)
    chart = alt.Chart(inline_data(df)).mark_rect(opacity=0.55, stroke="black",
                                             strokeWidth=0.3).encode(
        x=alt.X("lo:Q", title="score"), x2=alt.X2("hi:Q"), y=alt.Y("density:Q", title="density",
                                                          stack=None),
        fill=alt.Fill("class:N", scale=alt.Scale(domain=["target", "non-target"],
                                                 range=["#1f1f1f", "#bdbdbd"]),
                      legend=alt.Legend(title="class")),
    ).properties(width=WIDTH, height=160)
    if df[SERIES].n_unique() > 1:
        faceted: alt.FacetChart = chart.facet(row=alt.Row(f"{SERIES}:N", title=None)
                                              ).properties(title=title)
        return faceted
    titled: alt.Chart = chart.properties(title=title)
    return titled


def cavg_sweep_plot(sweep: Any, *, series: Sequence[str] | None = None,
                    styles: Mapping[str, SeriesStyle] | None = None, width: int = WIDTH,
                    height: int = HEIGHT, title: str = "Cavg across operating points"
                    ) -> alt.Chart:
    """Normalized Cavg against logit(p_target): actual, oracle-recalibrated and minimum.

    Draws a :func:`scoreframe.multiclass.cavg_sweep` frame (the multiclass analogue of the
    normalized Bayes error-rate plot; see ``docs/math.md``, multiclass Cavg). Series keep their
    colour and dash; the three measures differ by width (several series) or dash (one series).

    Parameters
    ----------
    sweep
        A :func:`scoreframe.multiclass.cavg_sweep` frame.
    series
        Group columns naming the series (default: all group columns).
    styles
        Series label -> :class:`SeriesStyle` (see :func:`series_scale`).
    width, height
        The plot's size in pixels.
    title
        The chart's title.

    Returns
    -------
    altair.Chart
        The three measures per series.

    See Also
    --------
    scoreframe.multiclass.cavg_sweep : Its data.
    nber_plot : The binary analogue.

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe.multiclass import cavg_sweep
    >>> w = [[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
    ...      [-1, 0, 1], [1, 0, 0]]
    >>> sc = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
    ...                    "class": ["a", "b", "c"] * 9, "score": [float(v) for r in w for v in r]})
    >>> tr = pl.DataFrame({"segment": [f"t{i}" for i in range(9)], "class": list("aaabbbccc")})
    >>> sweep = cavg_sweep(sc, tr, prior_log_odds=[-2.0, 0.0, 2.0])
    >>> cavg_sweep_plot(sweep).to_dict()["encoding"]["y"]["title"]
    'normalized Cavg'
    """
    df = series_labels(as_polars(sweep), series)
    order = series_order(df, None)
    several = len(order) > 1
    measures = {"actual": "actual", "calibrated": "recalibrated (oracle)",
                "minimum": "minimum (optimal threshold)"}
    chart: alt.Chart = measures_chart(df, measures).mark_line(clip=True).encode(
        x=alt.X("prior_log_odds:Q", title="logit(p_target)",
                scale=alt.Scale(nice=False, zero=False)),
        y=alt.Y("value:Q", title="normalized Cavg"),
        **series_encodings(order, styles_for(order, styles), dash=several),
        **measure_encodings(list(measures.values()), several_series=several),
        detail=alt.Detail(f"{SERIES}:N"),
        tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("measure:N"),
                 alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=width, height=height, title=title)
    return chart
