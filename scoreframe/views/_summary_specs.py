"""The report's charts across groups as plain Vega-Lite dicts: DET, NBER, APE, Tippett, ECE.

The sibling of :mod:`scoreframe.views._group_specs` for the charts that draw every group at
once. Each function writes the dict that ``to_dict()`` of the public plotting function's chart
gives for the report's call (:func:`~scoreframe.views.plots.det_plot`,
:func:`~scoreframe.views.plots.nber_plot`, :func:`~scoreframe.views.plots.ape_plot`,
:func:`~scoreframe.views.plots.tippett_plot`, :func:`~scoreframe.views.plots.ece_plot`, with
the report's series and styles): the same keys in the same order, the same rows (the tests
compare both, byte for byte). Neither module imports Altair, so a report whose charts are all
written here never pays Altair's import (about 0.2 s); where a frame falls outside what these
dicts reproduce (a null EER, an Altair theme adding top-level keys), a function returns None
and the report builds that chart through Altair.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from scoreframe.kernels.elementary import logit, probit
from scoreframe.views._vega import (
    DET_BOX,
    HEIGHT,
    MEASURE_DASHES,
    MEASURE_WIDTHS,
    POINT_SHAPES,
    SERIES,
    WIDTH,
    SeriesStyle,
    dcf_markers,
    det_axis_options,
    display_decimate,
    display_rows,
    field,
    legend_dict,
    long_format,
    mark,
    omitted_note,
    series_labels,
    series_order,
    styles_for,
    thin_rows,
    uniform_grid,
    vega_top,
)

__all__ = ["ape_spec", "det_spec", "ece_spec", "marker_shape", "nber_chart", "nber_spec",
           "prior_rules", "tippett_spec"]

Spec = dict[str, Any]


def _top(spec: Spec) -> Spec | None:
    """``spec`` with the theme's ``config`` first and ``$schema`` last (None: use Altair)."""
    top = vega_top()
    if top is None:
        return None
    return {"config": top[0], **spec, "$schema": top[1]}


def _series_channels(order: list[str], styles: Mapping[str, SeriesStyle], *, dash: bool,
                     names: Mapping[str, str] | None = None) -> Spec:
    """:func:`~scoreframe.views.plots.style.series_encodings` as dicts."""
    kw: dict[str, Any] = {}
    if names:
        table = json.dumps({s: names[s] for s in order if s in names})
        kw["labelExpr"] = f"{table}[datum.label] || datum.label"
    lg = legend_dict(None, **kw)
    enc = {"color": field(SERIES, "nominal", legend=lg, scale={
        "domain": order, "range": [styles[s].color for s in order]}, sort=order)}
    if dash:
        enc["strokeDash"] = field(SERIES, "nominal", legend=lg, scale={
            "domain": order, "range": [list(styles[s].dash) for s in order]}, sort=order)
    return enc


def _measure_channels(measures: list[str], *, several_series: bool) -> Spec:
    """:func:`~scoreframe.views.plots.style.measure_encodings` as dicts."""
    lg = legend_dict("curve")
    widths = [MEASURE_WIDTHS[i % len(MEASURE_WIDTHS)] for i in range(len(measures))]
    enc = {"strokeWidth": field("measure", "nominal", legend=lg,
                                scale={"domain": measures, "range": widths}, sort=measures)}
    if several_series and len(measures) > 2:
        enc["opacity"] = field("measure", "nominal", legend=lg, scale={
            "domain": measures, "range": [1.0, 0.9, *[0.55] * (len(measures) - 2)]},
            sort=measures)
    if not several_series:
        enc["strokeDash"] = field("measure", "nominal", legend=lg, scale={
            "domain": measures, "range": [list(MEASURE_DASHES[i % len(MEASURE_DASHES)])
                                          for i in range(len(measures))]}, sort=measures)
    return enc


def _measures_layer(df: pl.DataFrame, measures: dict[str, str], x: str,
                    styles: Mapping[str, SeriesStyle], *, x_channel: Spec, y_channel: Spec,
                    x_format: str | None, **mark_props: Any) -> Spec:
    """One line layer of the wide rows, Vega folding the ``measures`` (``measures_chart``).

    ``df`` has its ``series`` labels; the series keep their order of appearance and get their
    ``styles``. The tooltip names the series, the measure, ``x`` (when ``x_format`` is given)
    and the value, as every curve chart of :mod:`scoreframe.views.plots` does.
    """
    order = series_order(df, None)
    style = styles_for(order, styles)
    names = list(measures.values())
    several = len(order) > 1
    tips = [(SERIES, "nominal", None), ("measure", "nominal", None),
            *([(x, "quantitative", x_format)] if x_format else []),
            ("value", "quantitative", ".4f")]
    enc = {**_series_channels(order, style, dash=several),
           **_measure_channels(names, several_series=several),
           "detail": field(SERIES, "nominal"), "tooltip": _tooltip(*tips),
           "x": x_channel, "y": y_channel}
    rows = display_rows(df.select(SERIES, x, *measures).rename(measures))
    return {"data": {"values": rows}, "mark": mark("line", clip=True, **mark_props),
            "encoding": dict(sorted(enc.items())),
            "transform": [{"fold": names, "as": ["measure", "value"]}]}


def _reference_layer(df: pl.DataFrame, y: str, **mark_props: Any) -> Spec:
    """The grey dotted reference curve ``y``, drawn once (from the first series' rows)."""
    first = df.filter(pl.col(SERIES) == df[SERIES][0]).select("prior_log_odds", y)
    return {"data": {"values": display_rows(first)},
            "mark": mark("line", clip=True, color="#777", strokeDash=[1, 2], strokeWidth=1.0,
                         **mark_props),
            "encoding": {"x": field("prior_log_odds", "quantitative"),
                         "y": field(y, "quantitative")}}


def _tooltip(*fields: tuple[str, str, str | None]) -> list[Spec]:
    return [field(name, kind) if fmt is None else field(name, kind, format=fmt)
            for name, kind, fmt in fields]


def _prior_x() -> Spec:
    """The prior log-odds axis of the NBER and APE charts (a new dict each time)."""
    return field("prior_log_odds", "quantitative", scale={"nice": False, "zero": False},
                 title="prior log-odds logit(p_target)")


def nber_spec(nber: pl.DataFrame, *, series: Sequence[str], styles: Mapping[str, SeriesStyle],
              p_target: Sequence[float], title: str, y_max: float = 1.2) -> Spec | None:
    """``nber_plot(nber, p_target=..., series=..., styles=..., title=...).to_dict()``."""
    df = series_labels(nber, series)
    curves = _measures_layer(
        df, {"act_dcf_norm": "actual", "min_dcf_norm": "minimum"}, "prior_log_odds", styles,
        x_channel=_prior_x(), x_format=".2f",
        y_channel=field("value", "quantitative", scale={"domain": [0, y_max], "nice": False},
                        title="normalized DCF"))
    marks: list[dict[str, Any]] = []
    if "dr30_fa" in df.columns:
        marks = display_rows(df.filter(pl.col("dr30_fa") | pl.col("dr30_miss")).with_columns(
            which=pl.when(pl.col("dr30_fa")).then(pl.lit("30 false alarms")).otherwise(
                pl.lit("30 misses"))).select(SERIES, "prior_log_odds", "min_dcf_norm", "which"))
    return _top(nber_chart(curves, marks, prior_rules(p_target, y_max), title))


def prior_rules(p_target: Sequence[float], y_max: float) -> list[dict[str, Any]]:
    """The rows of the NBER charts' rules at ``logit(p_target)``, labelled at ``y_max``."""
    if not p_target:
        return []
    return display_rows(pl.DataFrame({
        "prior_log_odds": [float(logit(p)) for p in p_target],
        "label": [f"p={p:g}" for p in p_target], "y": [y_max] * len(p_target)}))


def nber_chart(curves: Spec, marks: list[dict[str, Any]], rules: list[dict[str, Any]],
               title: str) -> Spec:
    """An NBER chart as ``nber_plot`` lays it out (without the top-level keys).

    The ``curves`` layer, the dotted default-system line at 1, the rule-of-30 markers on the
    minimum curve (``marks`` rows, when any) and the operating points' labelled rules (``rules``
    rows of :func:`prior_rules`, when any); shared by the chart across groups and each group's.
    """
    layers = [curves, {"data": {"values": [{"value": 1.0}]},
                       "mark": mark("rule", color="#555", strokeDash=[1, 2]),
                       "encoding": {"y": field("value", "quantitative")}}]
    if marks:
        layers.append({
            "data": {"values": marks},
            "mark": mark("point", clip=True, filled=False, size=60, strokeWidth=1.5),
            "encoding": {
                "color": field(SERIES, "nominal", legend=None),
                "shape": field("which", "nominal", legend={"title": "DR30 on minimum"},
                               scale={"domain": ["30 false alarms", "30 misses"],
                                      "range": ["triangle-left", "triangle-right"]}),
                "tooltip": _tooltip((SERIES, "nominal", None), ("which", "nominal", None)),
                "x": field("prior_log_odds", "quantitative"),
                "y": field("min_dcf_norm", "quantitative")}})
    if rules:
        layers += [
            {"data": {"values": rules}, "mark": mark(
                "rule", clip=True, color="#333", strokeDash=[5, 3], strokeWidth=0.8),
             "encoding": {"tooltip": _tooltip(("label", "nominal", None)),
                          "x": field("prior_log_odds", "quantitative")}},
            {"data": {"values": rules}, "mark": mark(
                "text", align="left", clip=True, color="#333", dx=3, dy=6, fontSize=10),
             "encoding": {"text": field("label", "nominal"),
                          "x": field("prior_log_odds", "quantitative"),
                          "y": field("y", "quantitative")}}]
    return {"layer": layers, "height": HEIGHT, "title": {
        "text": title, "subtitle": "dotted line at 1: the default system (no information)"},
        "width": WIDTH}


def ape_spec(ape: pl.DataFrame, summary: pl.DataFrame, *, series: Sequence[str],
             styles: Mapping[str, SeriesStyle], title: str) -> Spec | None:
    """``ape_plot(ape, summary, series=..., styles=..., title=...).to_dict()``."""
    df = series_labels(ape, series)
    order = series_order(df, None)
    curves = {"layer": [
        _measures_layer(df, {"act": "actual", "min": "PAV (minimum)"}, "prior_log_odds", styles,
                        x_channel=_prior_x(), x_format=None,
                        y_channel=field("value", "quantitative", title="P(error)")),
        _reference_layer(df, "default")],
        "height": HEIGHT, "title": {
            "text": title, "subtitle": "grey dotted: the reference (no-information) system"},
        "width": WIDTH}
    s = series_labels(summary, series).filter(pl.col(SERIES).is_in(order))
    parts = {"min_cllr": "minCllr (discrimination)", "cal_loss": "calibration loss"}
    bars_df = long_format(s.select(SERIES, "min_cllr", "cal_loss", "cllr"), parts).with_columns(
        part=(pl.col("measure") == "calibration loss").cast(pl.Int8))
    bars = {"data": {"values": display_rows(bars_df)},
            "mark": mark("bar", stroke="black", strokeWidth=0.5), "encoding": {
                "fill": field("measure", "nominal", legend={"title": "Cllr"}, scale={
                    "domain": list(parts.values()), "range": ["#4d4d4d", "#d9d9d9"]}),
                "order": field("part", "quantitative"),
                "tooltip": _tooltip((SERIES, "nominal", None), ("measure", "nominal", None),
                                    ("value", "quantitative", ".4f"),
                                    ("cllr", "quantitative", ".4f")),
                "x": field(SERIES, "nominal", axis={"labelAngle": -30}, sort=order,
                           title=None),
                "y": field("value", "quantitative", stack="zero", title="Cllr (bits)")},
            "height": HEIGHT, "title": "Cllr decomposition",
            "width": max(120, 40 * len(order))}
    return _top({"hconcat": [curves, bars], "resolve": {"scale": {
        "color": "independent", "strokeDash": "independent", "strokeWidth": "independent"}}})


def tippett_spec(tippett: pl.DataFrame, *, series: Sequence[str],
                 styles: Mapping[str, SeriesStyle], max_points: int = 2000,
                 title: str = "Tippett plot") -> Spec | None:
    """``tippett_plot(tippett, series=..., styles=...).to_dict()``."""
    df = thin_rows(series_labels(tippett, series), max_points=max_points)
    lines = _measures_layer(
        df, {"p_tar_ge": "same source (H1)", "p_non_ge": "different source (H2)"}, "threshold",
        styles, interpolate="step-before", x_format=".3f",
        x_channel=field("threshold", "quantitative", scale={"nice": False, "zero": False},
                        title="ln(LR)"),
        y_channel=field("value", "quantitative", scale={"domain": [0, 1]},
                        title="proportion of LRs >= x"))
    zero = {"data": {"values": display_rows(pl.DataFrame({"threshold": [0.0]}))},
            "mark": mark("rule", color="#555", strokeDash=[4, 3]),
            "encoding": {"x": field("threshold", "quantitative")}}
    return _top({"layer": [lines, zero], "height": HEIGHT,
                 "title": {"text": title, "subtitle": "dashed line: LR = 1"}, "width": WIDTH})


def ece_spec(ece: pl.DataFrame, *, series: Sequence[str], styles: Mapping[str, SeriesStyle],
             title: str = "Empirical cross-entropy") -> Spec | None:
    """``ece_plot(ece, series=..., styles=...).to_dict()``."""
    df = series_labels(ece, series)
    shape = "natural" if uniform_grid(df["prior_log_odds"]) else "linear"
    curves = _measures_layer(
        df, {"ece": "LRs", "ece_min": "PAV LRs"}, "prior_log_odds", styles, interpolate=shape,
        x_format=".2f",
        x_channel=field("prior_log_odds", "quantitative", scale={"nice": False, "zero": False},
                        title="prior ln odds"),
        y_channel=field("value", "quantitative", title="empirical cross-entropy (bits)"))
    ref = _reference_layer(df, "ece_ref", interpolate=shape)
    return _top({"layer": [curves, ref], "height": HEIGHT, "title": {
        "text": title, "subtitle": "grey dotted: the reference system (LR = 1)"},
        "width": WIDTH})


def det_spec(det: pl.DataFrame, points: pl.DataFrame, *, series: Sequence[str],
             styles: Mapping[str, SeriesStyle], title: str) -> Spec | None:
    """``det_plot(det, points=points, series=..., styles=..., title=...).to_dict()``.

    The steppy curves, the EER diagonal, the rule-of-30 lines and the DCF points, as
    :func:`~scoreframe.views.plots.det_plot` draws them by default; None when a series has no
    EER (the legend's names need one).
    """
    xlo, xhi = float(probit(DET_BOX[0])), float(probit(DET_BOX[1]))
    ylo, yhi = float(probit(DET_BOX[2])), float(probit(DET_BOX[3]))
    df = series_labels(det, series)
    style = styles_for(series_order(df, None), styles)
    order = series_order(df, "eer")
    df = df.filter(pl.col("curve") == "steppy")
    cell = max((xhi - xlo) / WIDTH, (yhi - ylo) / HEIGHT)
    df = display_decimate(df, cell=cell, box=(xlo, xhi, ylo, yhi))
    eer_by = df.group_by(SERIES, maintain_order=True).agg(pl.col("eer").first())
    if eer_by["eer"].is_null().any():
        return None
    eer = dict(zip(eer_by[SERIES], eer_by["eer"], strict=True))
    names = {s: f"{s} (EER {100 * eer[s]:.2f}%)" for s in order if s in eer}
    order = [s for s in order if s in names]
    df = df.filter(pl.col(SERIES).is_in(order)).with_columns(
        pl.int_range(pl.len()).over(SERIES, "curve").alias("i"))
    scale = {"domain": [xlo, xhi], "nice": False, "zero": False}
    yscale = {"domain": [ylo, yhi], "nice": False, "zero": False}
    enc = {**_series_channels(order, style, dash=True, names=names),
           "order": field("i", "quantitative"),
           "tooltip": _tooltip((SERIES, "nominal", None), ("pfa", "quantitative", ".3%"),
                               ("pmiss", "quantitative", ".3%")),
           "x": field("probit_pfa", "quantitative", scale=scale, axis=det_axis_options(
               "false-alarm probability (%)", DET_BOX[0], DET_BOX[1], length_px=WIDTH)),
           "y": field("probit_pmiss", "quantitative", scale=yscale, axis=det_axis_options(
               "miss probability (%)", DET_BOX[2], DET_BOX[3], length_px=HEIGHT))}
    lo, hi = max(xlo, ylo), min(xhi, yhi)
    layers: list[Spec] = [
        {"data": {"values": display_rows(df.select(SERIES, "i", "probit_pfa", "probit_pmiss"))},
         "mark": mark("line", clip=True, strokeWidth=1.6), "encoding": dict(sorted(enc.items())),
         "transform": [{"calculate": "cumulativeNormal(datum.probit_pfa)", "as": "pfa"},
                       {"calculate": "cumulativeNormal(datum.probit_pmiss)", "as": "pmiss"}]},
        {"data": {"values": display_rows(pl.DataFrame({"probit_pfa": [lo, hi],
                                                        "probit_pmiss": [lo, hi]}))},
         "mark": mark("line", clip=True, color="#888", strokeDash=[2, 3], strokeWidth=0.8),
         "encoding": {"x": field("probit_pfa", "quantitative"),
                      "y": field("probit_pmiss", "quantitative")}}]
    subtitle: list[str] = []
    lines = df.group_by(SERIES, maintain_order=True).agg(
        pl.col("probit_dr30_pfa").first(), pl.col("probit_dr30_pmiss").first())
    rule = mark("rule", clip=True, opacity=0.7, strokeDash=[4, 2], strokeWidth=0.8)
    drawn = False
    for channel, name, lo_, hi_ in (("x", "probit_dr30_pfa", xlo, xhi),
                                    ("y", "probit_dr30_pmiss", ylo, yhi)):
        part = lines.filter(pl.col(name).is_between(lo_, hi_))
        if part.height:
            drawn = True
            layers.append({"data": {"values": display_rows(part)}, "mark": dict(rule),
                           "encoding": {"color": field(SERIES, "nominal", legend=None),
                                        channel: field(name, "quantitative")}})
    if drawn:
        subtitle.append("thin dashed: rule of 30 (30 false alarms / 30 misses)")
    point_layers, omitted = _point_layers(series_labels(points, series), names,
                                          (xlo, xhi, ylo, yhi))
    layers += point_layers
    if omitted:
        subtitle += omitted_note(omitted, WIDTH)
    head = {"text": title, "subtitle": subtitle} if subtitle else {"text": title}
    return _top({"layer": layers, "height": HEIGHT, "resolve": {"scale": {"color": "shared"}},
                 "title": head, "usermeta": {"scoreframe": {"omitted_points": omitted}},
                 "width": WIDTH})


def marker_shape(priors: list[str]) -> Spec:
    """The DCF markers' shape channel: one shape per prior (labels in order of appearance)."""
    return field("prior", "nominal", legend={
        "symbolFillColor": "#555", "symbolStrokeColor": "#555",
        "title": ["DCF point, p_target", "(filled: min, open: act)"]}, scale={
        "domain": priors,
        "range": [POINT_SHAPES[i % len(POINT_SHAPES)] for i in range(len(priors))]},
        sort=priors)


def _point_layers(pts: pl.DataFrame, names: Mapping[str, str],
                  box: tuple[float, float, float, float]) -> tuple[list[Spec], list[str]]:
    """The DCF markers of :func:`det_spec` (``det_plot``'s) and the points left out."""
    kinds, labels, omitted = dcf_markers(pts, names, box)
    shape = marker_shape(labels)
    tip = _tooltip((SERIES, "nominal", None), ("marker", "nominal", None),
                   ("pfa", "quantitative", ".3%"), ("pmiss", "quantitative", ".3%"))
    if any("dcf_norm" in part.columns for part in kinds.values()):
        tip.append(field("dcf_norm", "quantitative", format=".4f", title="normalized DCF"))
    layers = [{"data": {"values": display_rows(part)}, "mark": mark(
        "point", clip=True, filled=kind == "min", opacity=1, size=70, strokeWidth=1.8),
        "encoding": {"color": field(SERIES, "nominal", legend=None), "shape": shape,
                     "tooltip": tip, "x": field("probit_pfa", "quantitative"),
                     "y": field("probit_pmiss", "quantitative")}}
        for kind, part in kinds.items()]
    return layers, omitted
