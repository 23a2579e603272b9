"""Bayes-error views: normalized Bayes error rate (NBER) and APE curves with Cllr bars."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

from scoreframe.kernels.elementary import logit
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

__all__ = ["ape_plot", "nber_plot"]


def nber_plot(nber: pl.DataFrame, *, series: Sequence[str] | None = None,
              components: bool = False, p_target: Sequence[float] = (),
              dr30: bool = True, y_max: float = 1.2,
              title: str = "Normalized Bayes error rate") -> alt.LayerChart:
    """Normalized Bayes error-rate plot (seed 000 figures 1-3): actual, minimum, default.

    Series (colour and dash) are groups or, for a dev/eval overlay, a ``set`` column included in
    ``series``; the measure is told by line weight and a dotted minimum. ``components`` adds the
    miss and false-alarm parts of the actual curve; ``p_target`` draws vertical lines at those
    operating points; DR30 markers sit on the minimum curve.
    """
    df = series_labels(nber, series)
    order = series_order(df, None)
    measures = {"act_dcf_norm": "actual", "min_dcf_norm": "minimum", "default": "default"}
    if components:
        measures |= {"act_miss_norm": "miss part", "act_fa_norm": "false-alarm part"}
    keep = [SERIES, "prior_log_odds", *measures]
    long = long_format(df.select(keep), measures)
    enc = series_encodings(order)
    weights = {"actual": 2.0, "minimum": 1.2, "default": 1.0, "miss part": 0.8,
               "false-alarm part": 0.8}
    dom = list(weights)[:len(measures)]
    x = alt.X("prior_log_odds:Q", title="logit(p_target)")
    y = alt.Y("value:Q", title="normalized DCF", scale=alt.Scale(domain=[0, y_max], clamp=True))
    lines = alt.Chart(inline_data(long.filter(pl.col("measure") != "default").select(
        SERIES, "prior_log_odds", "measure", "value"))).mark_line(
        clip=True).encode(
        x=x, y=y, color=enc["color"],
        strokeDash=alt.StrokeDash("measure:N", scale=alt.Scale(
            domain=[d for d in dom if d != "default"],
            range=[[1, 0], [3, 2], [6, 2], [1, 2]][:len(dom) - 1]),
            legend=alt.Legend(title="curve")),
        strokeWidth=alt.StrokeWidth("measure:N", scale=alt.Scale(
            domain=list(weights), range=list(weights.values())), legend=None),
        detail=f"{SERIES}:N",
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("prior_log_odds:Q", format=".2f"),
                 alt.Tooltip("value:Q", format=".4f")])
    ref = pl.DataFrame({"value": [1.0]})
    layers: list[alt.Chart] = [lines, alt.Chart(inline_data(ref)).mark_rule(
        color="#555", strokeDash=[1, 2]).encode(y="value:Q")]
    if dr30:
        marks = df.filter(pl.col("dr30_fa") | pl.col("dr30_miss")).with_columns(
            which=pl.when(pl.col("dr30_fa")).then(pl.lit("30 false alarms")).otherwise(
                pl.lit("30 misses")))
        if marks.height:
            layers.append(alt.Chart(inline_data(marks.select(SERIES, "prior_log_odds",
                                                         "min_dcf_norm", "which"))).mark_point(
                size=60, filled=False, strokeWidth=1.5).encode(
                x="prior_log_odds:Q", y="min_dcf_norm:Q", color=enc["color"],
                shape=alt.Shape("which:N", scale=alt.Scale(
                    domain=["30 false alarms", "30 misses"], range=["triangle-left",
                                                                    "triangle-right"]),
                    legend=alt.Legend(title="DR30 on minimum")),
                tooltip=[f"{SERIES}:N", "which:N"]))
    if p_target:
        ops = pl.DataFrame({"prior_log_odds": [float(logit(p)) for p in p_target],
                            "p_target": [f"p_target = {p:g}" for p in p_target]})
        layers.append(alt.Chart(inline_data(ops)).mark_rule(color="#333", strokeDash=[5, 3],
                                                        strokeWidth=0.8).encode(
            x="prior_log_odds:Q", tooltip=["p_target:N"]))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title)


def ape_plot(ape: pl.DataFrame, summary: pl.DataFrame | None = None, *,
             series: Sequence[str] | None = None,
             title: str = "Applied probability of error") -> alt.HConcatChart | alt.LayerChart:
    """APE curves (actual, PAV-minimum, reference) with the Cllr decomposition bars beside.

    ``summary`` is an :func:`scoreframe.evaluate.evaluate` frame (``cllr``, ``min_cllr``,
    ``cal_loss`` per group): stacked bars of minCllr (discrimination) and calibration loss, on
    one shared scale for all series (seed 002 figure 6).
    """
    df = series_labels(ape, series)
    order = series_order(df, None)
    enc = series_encodings(order)
    long = long_format(df.select(SERIES, "prior_log_odds", "act", "min", "default"),
                 {"act": "actual", "min": "PAV (minimum)", "default": "reference"})
    curves = alt.Chart(inline_data(long)).mark_line().encode(
        x=alt.X("prior_log_odds:Q", title="prior log-odds"),
        y=alt.Y("value:Q", title="P(error)"), color=enc["color"],
        strokeDash=alt.StrokeDash("measure:N", scale=alt.Scale(
            domain=["actual", "PAV (minimum)", "reference"], range=[[1, 0], [5, 3], [1, 2]]),
            legend=alt.Legend(title="curve")),
        detail=f"{SERIES}:N",
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=WIDTH, height=HEIGHT, title=title)
    if summary is None:
        return curves
    s = series_labels(summary, series).filter(pl.col(SERIES).is_in(order))
    bars_df = long_format(s.select(SERIES, "min_cllr", "cal_loss", "cllr"),
                    {"min_cllr": "minCllr (discrimination)", "cal_loss": "calibration loss"}
                    ).with_columns(part=(pl.col("measure") == "calibration loss").cast(pl.Int8))
    bars = alt.Chart(inline_data(bars_df)).mark_bar(stroke="black", strokeWidth=0.5).encode(
        x=alt.X(f"{SERIES}:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("value:Q", stack="zero", title="Cllr (bits)"),
        order=alt.Order("part:Q"),
        fill=alt.Fill("measure:N", scale=alt.Scale(
            domain=["minCllr (discrimination)", "calibration loss"], range=["#4d4d4d",
                                                                             "#d9d9d9"]),
            legend=alt.Legend(title="Cllr")),
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("value:Q", format=".4f"),
                 alt.Tooltip("cllr:Q", format=".4f")],
    ).properties(width=max(120, 40 * len(order)), height=HEIGHT, title="Cllr decomposition")
    return alt.hconcat(curves, bars).resolve_scale(color="independent")
