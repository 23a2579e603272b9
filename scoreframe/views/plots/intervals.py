"""Confidence intervals in the charts: NBER error bars, DET boxes, forest plots of comparisons.

Views layer: pure functions from tidy frames to Altair charts. The intervals come from
:func:`scoreframe.results.bootstrap.bootstrap_evaluate` (or an ``evaluate`` frame with its ``_lo`` /
``_hi`` columns joined in) and :func:`scoreframe.results.compare.compare`; the curves from
:mod:`scoreframe.results.curves`. Series keep the colours and dashes of the other charts
(:mod:`scoreframe.views.plots.style`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import polars as pl

from scoreframe.kernels.elementary import logit, probit
from scoreframe.views.plots.bayes import nber_plot
from scoreframe.views.plots.det import det_plot
from scoreframe.views.plots.style import (
    DET_BOX,
    HEIGHT,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    inline_data,
    series_labels,
    series_order,
    styles_for,
)

__all__ = ["det_interval_plot", "forest_plot", "interval_points", "nber_interval_plot"]


def interval_points(intervals: Any, *, series: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per group x operating point with the DCF and minDCF-point intervals.

    Columns: ``series``, ``p_target``, ``prior_log_odds`` (logit of the effective prior: the
    x of the NBER plot), ``act_dcf_norm``/``min_dcf_norm`` and ``pmiss_min``/``pfa_min`` each
    with ``_lo``/``_hi``, and their probits for DET coordinates.

    Examples
    --------
    >>> from scoreframe import Intervals, OperatingPoints
    >>> from scoreframe.results.bootstrap import bootstrap_evaluate
    >>> from scoreframe.frames.synth import synth_chunks
    >>> r = bootstrap_evaluate(next(synth_chunks(2000, n_systems=1)),
    ...                        operating_points=OperatingPoints(0.1),
    ...                        intervals=Intervals(bootstrap=50))
    >>> interval_points(r).select("series", "p_target").rows()
    [('sys1', 0.1)]
    """
    res = as_polars(intervals)
    group = list(series) if series is not None else res.columns[: res.columns.index("n_tar")]
    flat = series_labels(res.select(*group, "dcf").explode("dcf").unnest("dcf"), group)
    eff = (pl.col("effective_prior") if "effective_prior" in flat.columns
           else pl.col("p_target"))
    flat = flat.with_columns(pl.Series("prior_log_odds", logit(flat.select(eff).to_series()
                                                               .to_numpy())))
    prob = {}
    for c in ("pmiss_min", "pfa_min"):
        for s in ("", "_lo", "_hi"):
            if c + s in flat.columns:
                v = flat[c + s].to_numpy().astype(np.float64)
                prob[f"probit_{c}{s}"] = probit(v)
    return flat.with_columns([pl.Series(k, v) for k, v in prob.items()])


def _add_layers(base: alt.LayerChart, layers: list[alt.Chart]) -> alt.LayerChart:
    """``base`` (a finished layered chart, title and size kept) with more layers on top."""
    out = base.copy(deep=False)
    out.layer = [*base.layer, *layers]
    return out


def _style(series_in_order: list[str], styles: Mapping[str, SeriesStyle] | None
           ) -> dict[str, SeriesStyle]:
    return styles_for(series_in_order, styles)


def nber_interval_plot(nber: Any, intervals: Any, *, series: Sequence[str] | None = None,
                       styles: Mapping[str, SeriesStyle] | None = None, y_max: float = 1.2,
                       width: int = WIDTH, height: int = HEIGHT,
                       title: str = "Normalized Bayes error rate with intervals"
                       ) -> alt.LayerChart:
    """The NBER plot with error bars of actual and minimum DCF at the evaluated priors.

    ``nber`` is a :func:`scoreframe.results.curves.nber_curve` frame, ``intervals`` a
    :func:`scoreframe.results.bootstrap.bootstrap_evaluate` frame of the same groups. At each prior
    the
    actual-DCF interval is a solid bar with a filled point, the minimum-DCF interval a thinner
    bar with an open point, both in the series' colour.

    Parameters
    ----------
    nber
        A :func:`scoreframe.nber_curve` frame.
    intervals
        A :func:`scoreframe.bootstrap_evaluate` frame of the same groups.
    series
        Group columns naming the series (default: all group columns).
    styles
        Series label -> :class:`SeriesStyle` (see :func:`series_scale`).
    y_max
        The top of the y axis.
    width, height
        The plot's size in pixels.
    title
        The chart's title.

    Returns
    -------
    altair.LayerChart
        The curves with error bars at the evaluated priors.

    See Also
    --------
    nber_plot : Without intervals.
    forest_plot : Intervals of scalar metrics.

    Examples
    --------
    >>> from scoreframe import Intervals, OperatingPoints
    >>> from scoreframe.results.bootstrap import bootstrap_evaluate
    >>> from scoreframe.results.curves import nber_curve
    >>> from scoreframe.frames.synth import synth_chunks
    >>> df = next(synth_chunks(2000, n_systems=1))
    >>> r = bootstrap_evaluate(df, operating_points=OperatingPoints((0.1, 0.5)),
    ...                        intervals=Intervals(bootstrap=50))
    >>> chart = nber_interval_plot(nber_curve(df), r)
    >>> sum("rule" in str(layer.get("mark")) for layer in chart.to_dict()["layer"]) >= 2
    True
    """
    pts = interval_points(intervals, series=series)
    curve = series_labels(as_polars(nber), series)
    order = series_order(curve, None)
    style = _style(order + [s for s in series_order(pts, None) if s not in order], styles)
    priors = sorted(set(pts["p_target"].to_list()))
    base = nber_plot(nber, series=series, styles=style, p_target=priors, y_max=y_max,
                     width=width, height=height, title=title)
    shown = [s for s in style if s in set(pts[SERIES])]
    color = alt.Color(f"{SERIES}:N", legend=None, scale=alt.Scale(
        domain=shown, range=[style[s].color for s in shown]))
    layers = []
    n = max(len(shown), 1)
    offset = {s: (i - (n - 1) / 2) * 0.08 for i, s in enumerate(shown)}  # dodge the series
    for kind, width_px, filled in (("act_dcf_norm", 2.2, True), ("min_dcf_norm", 1.2, False)):
        d = pts.select(SERIES, "p_target", "prior_log_odds", pl.col(kind).alias("value"),
                       pl.col(f"{kind}_lo").alias("lo"), pl.col(f"{kind}_hi").alias("hi"),
                       pl.lit("actual" if kind == "act_dcf_norm" else "minimum")
                       .alias("measure")).with_columns(
            (pl.col("prior_log_odds") + pl.col(SERIES).replace_strict(offset, default=0.0)
             + (0.03 if kind == "min_dcf_norm" else -0.03)).alias("x"))
        tooltip = [f"{SERIES}:N", "measure:N", alt.Tooltip("p_target:Q", format="g"),
                   alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("lo:Q", format=".4f"),
                   alt.Tooltip("hi:Q", format=".4f")]
        data = inline_data(d)
        layers.append(alt.Chart(data).mark_rule(strokeWidth=width_px, clip=True).encode(
            x="x:Q", y=alt.Y("lo:Q"), y2="hi:Q", color=color, tooltip=tooltip))
        layers.append(alt.Chart(data).mark_point(filled=filled, size=36, clip=True).encode(
            x="x:Q", y="value:Q", color=color, tooltip=tooltip))
    return _add_layers(base, layers)


def det_interval_plot(det: Any, intervals: Any, *, series: Sequence[str] | None = None,
                      styles: Mapping[str, SeriesStyle] | None = None,
                      box: tuple[float, float, float, float] = DET_BOX, width: int = WIDTH,
                      height: int = HEIGHT, title: str = "DET with minDCF intervals"
                      ) -> alt.LayerChart:
    """The DET plot with an interval box around the minimum-DCF point of each prior.

    The box spans the bootstrap intervals of the false-alarm and miss rates at the
    minimizing ROCCH vertex (``pfa_min``, ``pmiss_min`` of
    :func:`scoreframe.results.bootstrap.bootstrap_evaluate`), with cross-hairs through the point:
    how
    far the operating point moves when the trials are resampled.

    Parameters
    ----------
    det
        A :func:`scoreframe.det_curve` frame.
    intervals
        A :func:`scoreframe.bootstrap_evaluate` frame of the same groups.
    series
        Group columns naming the series (default: all group columns).
    styles
        Series label -> :class:`SeriesStyle` (see :func:`series_scale`).
    box
        The plotted ``(pfa_lo, pfa_hi, pmiss_lo, pmiss_hi)`` range.
    width, height
        The plot's size in pixels.
    title
        The chart's title.

    Returns
    -------
    altair.LayerChart
        The DET curves with one interval box per series and prior.

    See Also
    --------
    det_plot : Without intervals.
    forest_plot : Intervals of scalar metrics.

    Examples
    --------
    >>> from scoreframe import Intervals, OperatingPoints
    >>> from scoreframe.results.bootstrap import bootstrap_evaluate
    >>> from scoreframe.results.curves import det_curve
    >>> from scoreframe.frames.synth import synth_chunks
    >>> df = next(synth_chunks(2000, n_systems=1))
    >>> r = bootstrap_evaluate(df, operating_points=OperatingPoints(0.1),
    ...                        intervals=Intervals(bootstrap=50))
    >>> chart = det_interval_plot(det_curve(df), r)
    >>> any("rect" in str(layer.get("mark")) for layer in chart.to_dict()["layer"])
    True
    """
    pts = interval_points(intervals, series=series)
    curve = series_labels(as_polars(det), series)
    order = series_order(curve, None)
    style = _style(order + [s for s in series_order(pts, None) if s not in order], styles)
    base = det_plot(det, series=series, styles=style, box=box, width=width, height=height,
                    title=title)
    shown = [s for s in style if s in set(pts[SERIES])]
    color = alt.Color(f"{SERIES}:N", legend=None, scale=alt.Scale(
        domain=shown, range=[style[s].color for s in shown]))
    d = pts.select(SERIES, "p_target", "pfa_min", "pmiss_min", "pfa_min_lo", "pfa_min_hi",
                   "pmiss_min_lo", "pmiss_min_hi", "probit_pfa_min", "probit_pmiss_min",
                   "probit_pfa_min_lo", "probit_pfa_min_hi", "probit_pmiss_min_lo",
                   "probit_pmiss_min_hi")
    data = inline_data(d)
    tooltip = [f"{SERIES}:N", alt.Tooltip("p_target:Q", format="g"),
               alt.Tooltip("pfa_min:Q", format=".3%"), alt.Tooltip("pfa_min_lo:Q", format=".3%"),
               alt.Tooltip("pfa_min_hi:Q", format=".3%"),
               alt.Tooltip("pmiss_min:Q", format=".3%"),
               alt.Tooltip("pmiss_min_lo:Q", format=".3%"),
               alt.Tooltip("pmiss_min_hi:Q", format=".3%")]
    rect = alt.Chart(data).mark_rect(opacity=0.18, clip=True).encode(
        x="probit_pfa_min_lo:Q", x2="probit_pfa_min_hi:Q", y="probit_pmiss_min_lo:Q",
        y2="probit_pmiss_min_hi:Q", color=color, tooltip=tooltip)
    hbar = alt.Chart(data).mark_rule(strokeWidth=1.4, clip=True).encode(
        x="probit_pfa_min_lo:Q", x2="probit_pfa_min_hi:Q", y="probit_pmiss_min:Q", color=color)
    vbar = alt.Chart(data).mark_rule(strokeWidth=1.4, clip=True).encode(
        x="probit_pfa_min:Q", y="probit_pmiss_min_lo:Q", y2="probit_pmiss_min_hi:Q", color=color)
    return _add_layers(base, [rect, hbar, vbar])


def forest_plot(comparison: Any, *, width: int = WIDTH, row_height: int = 18,
                title: str | None = None) -> alt.LayerChart | alt.FacetChart:
    """Forest plot of :func:`scoreframe.results.compare.compare` differences with their intervals.

    One row per group x metric x prior (bootstrap rows only), the difference ``b - a`` as a
    point with its interval as a bar and a rule at 0; intervals that exclude 0 are drawn
    dark, the others grey. Metrics on different scales share the axis, so compare rows of
    one metric at a time (``comparison.filter(...)``) when their scales differ a lot.

    Parameters
    ----------
    comparison
        A :func:`scoreframe.compare` frame with bootstrap intervals.
    width
        The plot's width in pixels.
    row_height
        Pixels per row.
    title
        The chart's title (default: from the systems compared).

    Returns
    -------
    altair.LayerChart or altair.FacetChart
        One row per group, metric and prior.

    See Also
    --------
    scoreframe.bootstrap_evaluate, scoreframe.compare : Its data.
    det_interval_plot : Curve intervals.

    Examples
    --------
    >>> from scoreframe import Intervals, OperatingPoints
    >>> from scoreframe.results.compare import compare
    >>> from scoreframe.frames.synth import synth_chunks
    >>> cmp = compare(next(synth_chunks(2000, n_systems=2)), "sys1", "sys2",
    ...               operating_points=OperatingPoints(0.1), intervals=Intervals(bootstrap=50))
    >>> chart = forest_plot(cmp)
    >>> len(chart.to_dict()["layer"])
    3
    """
    cmp = as_polars(comparison).filter(pl.col("test") == "paired bootstrap")
    group = cmp.columns[: cmp.columns.index("metric")]
    label_parts = [pl.col(c).cast(pl.String) for c in group] + [pl.col("metric")]
    d = cmp.with_columns(
        pl.concat_str(label_parts, separator=" / ").alias("row"),
        pl.when(pl.col("p_target").is_not_null()).then(
            pl.format(" @ {}", pl.col("p_target").round_sig_figs(3).cast(pl.String)))
        .otherwise(pl.lit("")).alias("at"),
        ((pl.col("diff_lo") > 0) | (pl.col("diff_hi") < 0)).fill_null(False)
        .alias("excludes_zero")).with_columns(
        pl.concat_str([pl.col("row"), pl.col("at")]).alias("row"))
    order = d["row"].to_list()
    y = alt.Y("row:N", sort=order, title=None)
    color = alt.Color("excludes_zero:N", scale=alt.Scale(domain=[True, False],
                                                          range=["#000000", "#999999"]),
                      legend=alt.Legend(title="interval excludes 0"))
    tooltip = ["row:N", alt.Tooltip("a:Q", format=".4f"), alt.Tooltip("b:Q", format=".4f"),
               alt.Tooltip("diff:Q", format=".4f"), alt.Tooltip("diff_lo:Q", format=".4f"),
               alt.Tooltip("diff_hi:Q", format=".4f"), alt.Tooltip("p_value:Q", format=".3g")]
    data = inline_data(d.select("row", "a", "b", "diff", "diff_lo", "diff_hi", "p_value",
                                "excludes_zero"))
    bars = alt.Chart(data).mark_rule(strokeWidth=2).encode(
        x=alt.X("diff_lo:Q", title="difference b - a",
                axis=alt.Axis(tickCount=6, labelOverlap=True)), x2="diff_hi:Q", y=y, color=color,
        tooltip=tooltip)
    points = alt.Chart(data).mark_point(filled=True, size=40).encode(
        x="diff:Q", y=y, color=color, tooltip=tooltip)
    zero = alt.Chart(inline_data(pl.DataFrame({"x": [0.0]}))).mark_rule(
        color="#555", strokeDash=[4, 3]).encode(x="x:Q")
    return alt.layer(zero, bars, points).properties(
        width=width, height=max(60, row_height * len(order)),
        title=title or "Paired differences (b - a) with bootstrap intervals")
