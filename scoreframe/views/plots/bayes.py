"""Bayes-error views: normalized Bayes error rate (NBER) and APE curves with Cllr bars.

Each series (group) keeps its colour and dash from
:func:`~scoreframe.views.plots.style.series_scale`;
the measures of a series (actual, minimum, ...) differ by stroke width, or by dash when the
chart shows a single series. Values above the top of the y axis are not clamped: the lines
are clipped at the frame and leave the plot, as in the published figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import altair as alt
import polars as pl

from scoreframe.errors import UsageError, message
from scoreframe.kernels.elementary import logit
from scoreframe.views.plots.style import (
    HEIGHT,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    inline_data,
    long_format,
    measure_encodings,
    measures_chart,
    series_encodings,
    series_labels,
    series_order,
    styles_for,
)

__all__ = ["ape_plot", "nber_plot", "prior_rules"]


def prior_rules(p_target: Sequence[float], *, y: float) -> list[alt.Chart]:
    """Vertical rules at ``logit(p_target)`` with a ``p=...`` label at height ``y``."""
    ops = pl.DataFrame({"prior_log_odds": [float(logit(p)) for p in p_target],
                        "label": [f"p={p:g}" for p in p_target], "y": [y] * len(p_target)})
    rule = alt.Chart(inline_data(ops)).mark_rule(color="#333", strokeDash=[5, 3],
                                                 strokeWidth=0.8, clip=True).encode(
        x=alt.X("prior_log_odds:Q"), tooltip=[alt.Tooltip("label:N")])
    text = alt.Chart(inline_data(ops)).mark_text(align="left", dx=3, dy=6, fontSize=10,
                                                 color="#333", clip=True).encode(
        x=alt.X("prior_log_odds:Q"), y=alt.Y("y:Q"), text=alt.Text("label:N"))
    return [rule, text]


def nber_plot(nber: Any, *, series: Sequence[str] | None = None,
              styles: Mapping[str, SeriesStyle] | None = None, components: bool = False,
              p_target: Sequence[float] = (), dr30: bool = True, y_max: float = 1.2,
              width: int = WIDTH, height: int = HEIGHT,
              title: str = "Normalized Bayes error rate") -> alt.LayerChart:
    """Normalized Bayes error-rate plot: actual and minimum DCF over the prior log-odds.

    The normalized DCF (DCF divided by that of the default system, drawn as the dotted line
    at 1) of the system's own Bayes decisions (actual) and of the best threshold at each prior
    (minimum): Brümmer and de Villiers, "The BOSARIS Toolkit: Theory, Algorithms and Code for
    Surviving the New DCF", section 2.5.4, eqs. 19-23 (BOSARIS ``Norm_DCF_Plot``;
    ``docs/math.md`` §7.1).

    Parameters
    ----------
    nber
        A :func:`scoreframe.results.curves.nber_curve` frame; several groups (or a ``set`` column
        named in ``series``, for dev/eval overlays) become several series.
    series, styles
        Group columns naming a series and the series' colours and dashes (as in
        :func:`~scoreframe.views.plots.det.det_plot`).
    components
        Also draw the miss and false-alarm parts of the actual curve (one series only).
    p_target
        Operating points marked by vertical rules.
    dr30
        Mark, on the minimum curve, where it rests on 30 false alarms / 30 misses.
    y_max
        Top of the y axis; larger values leave the plot at the frame.

    See Also
    --------
    ape_plot : Cllr decomposition.
    scoreframe.nber_curve : Its data.
    nber_interval_plot : With intervals.

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe.results.curves import nber_curve
    >>> df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0, 0.5], "label": [True, True, False,
    ...                    False, False]})
    >>> nber_plot(nber_curve(df)).to_dict()["layer"][0]["mark"]["clip"]
    True
    """
    df = series_labels(as_polars(nber), series)
    order = series_order(df, None)
    several = len(order) > 1
    if components and several:
        raise UsageError(message(
            "nber_plot: the miss and false-alarm components are drawn for one series only",
            expected="a frame with one group", got=f"{len(order)} series",
            hint="Filter the frame to one group, or pass components=False."))
    style = styles_for(order, styles)
    measures = {"act_dcf_norm": "actual", "min_dcf_norm": "minimum"}
    if components:
        measures |= {"act_miss_norm": "actual: miss part",
                     "act_fa_norm": "actual: false-alarm part"}
    enc = series_encodings(order, style, dash=several)
    x = alt.X("prior_log_odds:Q", title="prior log-odds logit(p_target)",
              scale=alt.Scale(nice=False, zero=False))
    y = alt.Y("value:Q", title="normalized DCF", scale=alt.Scale(domain=[0, y_max], nice=False))
    lines = measures_chart(df, measures).mark_line(clip=True).encode(
        x=x, y=y, **enc, **measure_encodings(list(measures.values()), several_series=several),
        detail=alt.Detail(f"{SERIES}:N"),
        tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("measure:N"),
                 alt.Tooltip("prior_log_odds:Q", format=".2f"),
                 alt.Tooltip("value:Q", format=".4f")])
    ref = pl.DataFrame({"value": [1.0]})
    layers: list[alt.Chart] = [lines, alt.Chart(inline_data(ref)).mark_rule(
        color="#555", strokeDash=[1, 2]).encode(y=alt.Y("value:Q"))]
    if dr30 and "dr30_fa" in df.columns:
        marks = df.filter(pl.col("dr30_fa") | pl.col("dr30_miss")).with_columns(
            which=pl.when(pl.col("dr30_fa")).then(pl.lit("30 false alarms")).otherwise(
                pl.lit("30 misses")))
        if marks.height:
            layers.append(alt.Chart(inline_data(marks.select(
                SERIES, "prior_log_odds", "min_dcf_norm", "which"))).mark_point(
                size=60, filled=False, strokeWidth=1.5, clip=True).encode(
                x=alt.X("prior_log_odds:Q"), y=alt.Y("min_dcf_norm:Q"),
                color=alt.Color(f"{SERIES}:N", legend=None),
                shape=alt.Shape("which:N", scale=alt.Scale(
                    domain=["30 false alarms", "30 misses"],
                    range=["triangle-left", "triangle-right"]),
                    legend=alt.Legend(title="DR30 on minimum")),
                tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("which:N")]))
    if p_target:
        layers += prior_rules(p_target, y=y_max)
    head = alt.Title(title, subtitle="dotted line at 1: the default system (no information)")
    return cast(alt.LayerChart, alt.layer(*layers).properties(width=width, height=height,
                                                              title=head))


def ape_plot(ape: Any, summary: Any = None, *, series: Sequence[str] | None = None,
             styles: Mapping[str, SeriesStyle] | None = None, width: int = WIDTH,
             height: int = HEIGHT, title: str = "Applied probability of error"
             ) -> alt.HConcatChart | alt.LayerChart:
    """APE curves (actual and PAV minimum) with the Cllr decomposition bars beside.

    The applied probability of error of van Leeuwen and Brümmer, "An Introduction to
    Application-Independent Evaluation of Speaker Recognition Systems", section 3.4, eq. 11
    (``docs/math.md`` §7.2): the Bayes error rate of the system's decisions over the prior
    log-odds; the area under it is proportional to Cllr.
    The reference (no-information) curve ``min(p, 1 - p)`` is drawn once, grey and dotted.
    ``summary`` is an :func:`scoreframe.results.evaluate.evaluate` frame (``cllr``, ``min_cllr``,
    ``cal_loss`` per group): stacked bars of minCllr (discrimination) and calibration loss on
    one shared scale for all series.

    Parameters
    ----------
    ape
        A :func:`scoreframe.ape_curve` frame.
    summary
        An :func:`scoreframe.evaluate` frame of the same groups, for the Cllr bars (optional).
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
    altair.HConcatChart or altair.LayerChart
        Curves and bars side by side, or the curves alone without ``summary``.

    See Also
    --------
    nber_plot : Bayes error rates by prior.
    scoreframe.ape_curve : Its data.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import scoreframe as sf
    >>> rng = np.random.default_rng(0)
    >>> df = pl.DataFrame({"score": np.r_[rng.normal(2, 1, 50), rng.normal(0, 1, 150)],
    ...                    "label": np.r_[np.ones(50, bool), np.zeros(150, bool)]})
    >>> type(ape_plot(sf.ape_curve(df), sf.evaluate(df))).__name__  # curves and Cllr bars
    'HConcatChart'
    >>> type(ape_plot(sf.ape_curve(df))).__name__  # the curves alone
    'LayerChart'
    """
    df = series_labels(as_polars(ape), series)
    order = series_order(df, None)
    several = len(order) > 1
    style = styles_for(order, styles)
    measures = {"act": "actual", "min": "PAV (minimum)"}
    x = alt.X("prior_log_odds:Q", title="prior log-odds logit(p_target)",
              scale=alt.Scale(nice=False, zero=False))
    y = alt.Y("value:Q", title="P(error)")
    curves = measures_chart(df, measures).mark_line(clip=True).encode(
        x=x, y=y, **series_encodings(order, style, dash=several),
        **measure_encodings(list(measures.values()), several_series=several),
        detail=alt.Detail(f"{SERIES}:N"),
        tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("measure:N"),
                 alt.Tooltip("value:Q", format=".4f")])
    first = df.filter(pl.col(SERIES) == order[0]).select("prior_log_odds", "default")
    ref = alt.Chart(inline_data(first)).mark_line(color="#777", strokeDash=[1, 2],
                                                  strokeWidth=1.0, clip=True).encode(
        x=alt.X("prior_log_odds:Q"), y=alt.Y("default:Q"))
    head = alt.Title(title, subtitle="grey dotted: the reference (no-information) system")
    chart = cast(alt.LayerChart, alt.layer(curves, ref).properties(width=width, height=height,
                                                                   title=head))
    if summary is None:
        return chart
    s = series_labels(as_polars(summary), series).filter(pl.col(SERIES).is_in(order))
    bars_df = long_format(s.select(SERIES, "min_cllr", "cal_loss", "cllr"),
                          {"min_cllr": "minCllr (discrimination)",
                           "cal_loss": "calibration loss"}
                          ).with_columns(part=(pl.col("measure") == "calibration loss").cast(
                              pl.Int8))
    bars = alt.Chart(inline_data(bars_df)).mark_bar(stroke="black", strokeWidth=0.5).encode(
        x=alt.X(f"{SERIES}:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("value:Q", stack="zero", title="Cllr (bits)"),
        order=alt.Order("part:Q"),
        fill=alt.Fill("measure:N", scale=alt.Scale(
            domain=["minCllr (discrimination)", "calibration loss"],
            range=["#4d4d4d", "#d9d9d9"]), legend=alt.Legend(title="Cllr")),
        tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("measure:N"),
                 alt.Tooltip("value:Q", format=".4f"),
                 alt.Tooltip("cllr:Q", format=".4f")],
    ).properties(width=max(120, 40 * len(order)), height=height, title="Cllr decomposition")
    both: alt.HConcatChart = alt.hconcat(chart, bars).resolve_scale(
        color="independent", strokeDash="independent", strokeWidth="independent")
    return both
