"""The report's per-group charts as plain Vega-Lite dicts, the data of all groups prepared at once.

A report draws a DET (both curves, with its operating points), an NBER (with the components of
the actual curve) and a score histogram for every group. Building each through Altair costs
Altair's object copies and a dozen small Polars queries per chart, most of a report's time
after the statistics. :func:`group_specs` prepares the data of every group in one Polars pass
per frame (series labels, decimation, rounding, operating points) and writes each chart as the
dict that ``chart.to_dict()`` of :func:`~scoreframe.views.plots.det.det_plot`,
:func:`~scoreframe.views.plots.bayes.nber_plot` and
:func:`~scoreframe.views.plots.maps.histogram_plot` would give for that group: the same keys in
the same order, the same rows (the tests compare both, byte for byte). When a frame falls
outside what these dicts reproduce (null or colliding group values, unknown styles, several
series in one group's histogram, an Altair theme adding top-level keys), it returns None and the
report builds those charts through Altair. The NBER chart's layers after its curves and the DCF
markers' shapes are those of the charts across groups
(:func:`~scoreframe.views._summary_specs.nber_chart`,
:func:`~scoreframe.views._summary_specs.marker_shape`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from scoreframe.kernels.elementary import probit
from scoreframe.views._summary_specs import marker_shape, nber_chart, prior_rules
from scoreframe.views._vega import (
    DET_BOX,
    HEIGHT,
    MEASURE_DASHES,
    MEASURE_WIDTHS,
    SERIES,
    WIDTH,
    SeriesStyle,
    det_axis_options,
    display_decimate,
    display_rows,
    omitted_note,
    prior_label,
    series_labels,
    vega_top,
)
from scoreframe.views._vega import field as _field
from scoreframe.views._vega import legend_dict as _legend
from scoreframe.views._vega import mark as _mark

__all__ = ["group_specs"]

Rows = list[dict[str, Any]]
Key = tuple[Any, ...]

_NBER_MEASURES = {"act_dcf_norm": "actual", "min_dcf_norm": "minimum",
                  "act_miss_norm": "actual: miss part",
                  "act_fa_norm": "actual: false-alarm part"}
_Y_MAX = 1.2


def _by_series(rows: Rows) -> dict[str, Rows]:
    out: dict[str, Rows] = {}
    for r in rows:
        out.setdefault(r[SERIES], []).append(r)
    return out


def _series_channel(s: str, style: SeriesStyle, channel: str, legend: dict[str, Any]
                    ) -> dict[str, Any]:
    value: Any = style.color if channel == "color" else list(style.dash)
    return _field(SERIES, "nominal", legend=legend, scale={"domain": [s], "range": [value]},
                  sort=[s])


def _det_spec(s: str, style: SeriesStyle, eer: float, lines: Rows, dr30: dict[str, Any] | None,
              points: Rows, priors: list[str], omitted: list[str], axes: tuple[Any, Any],
              diag: Rows, title: str) -> dict[str, Any]:
    """``det_plot(group, points=..., curve="both", title=title).to_dict()`` of one series."""
    xlo, xhi = float(probit(DET_BOX[0])), float(probit(DET_BOX[1]))
    ylo, yhi = float(probit(DET_BOX[2])), float(probit(DET_BOX[3]))
    names = json.dumps({s: f"{s} (EER {100 * eer:.2f}%)"})
    lg = _legend(None, labelExpr=f"{names}[datum.label] || datum.label")
    scale = {"domain": [xlo, xhi], "nice": False, "zero": False}
    yscale = {"domain": [ylo, yhi], "nice": False, "zero": False}
    tooltip = [_field(SERIES, "nominal"), _field("pfa", "quantitative", format=".3%"),
               _field("pmiss", "quantitative", format=".3%")]
    layers: list[dict[str, Any]] = [{
        "data": {"values": lines}, "mark": _mark("line", clip=True, strokeWidth=1.6),
        "encoding": {
            "color": _series_channel(s, style, "color", lg),
            "detail": _field("curve", "nominal"),
            "opacity": {"condition": {"test": "datum.curve == 'rocch'", "value": 0.45},
                        "value": 1.0},
            "order": _field("i", "quantitative"),
            "strokeDash": _series_channel(s, style, "strokeDash", lg),
            "tooltip": tooltip,
            "x": _field("probit_pfa", "quantitative", axis=axes[0], scale=scale),
            "y": _field("probit_pmiss", "quantitative", axis=axes[1], scale=yscale)},
        "transform": [{"calculate": "cumulativeNormal(datum.probit_pfa)", "as": "pfa"},
                      {"calculate": "cumulativeNormal(datum.probit_pmiss)", "as": "pmiss"}]},
        {"data": {"values": diag},
         "mark": _mark("line", clip=True, color="#888", strokeDash=[2, 3], strokeWidth=0.8),
         "encoding": {"x": _field("probit_pfa", "quantitative"),
                      "y": _field("probit_pmiss", "quantitative")}}]
    subtitle = ["faint: ROCCH (convex hull) of the same series"]
    if dr30 is not None:
        rule = _mark("rule", clip=True, opacity=0.7, strokeDash=[4, 2], strokeWidth=0.8)
        color = _field(SERIES, "nominal", legend=None)
        for channel, name, on in (("x", "probit_dr30_pfa", dr30["_vert"]),
                                  ("y", "probit_dr30_pmiss", dr30["_horiz"])):
            if on:
                layers.append({"data": {"values": dr30["rows"]}, "mark": dict(rule),
                               "encoding": {"color": dict(color),
                                            channel: _field(name, "quantitative")}})
        if dr30["_vert"] or dr30["_horiz"]:
            subtitle.append("thin dashed: rule of 30 (30 false alarms / 30 misses)")
    if points:
        shape = marker_shape(priors)
        tip = [_field(SERIES, "nominal"), _field("marker", "nominal"),
               _field("pfa", "quantitative", format=".3%"),
               _field("pmiss", "quantitative", format=".3%")]
        if "dcf_norm" in points[0]:
            tip.append(_field("dcf_norm", "quantitative", format=".4f", title="normalized DCF"))
        for kind, filled in (("min", True), ("act", False)):
            part = [r for r in points if r["kind"] == kind]
            if not part:
                continue
            layers.append({"data": {"values": part}, "mark": _mark(
                "point", clip=True, filled=filled, opacity=1, size=70, strokeWidth=1.8),
                "encoding": {"color": _field(SERIES, "nominal", legend=None), "shape": shape,
                             "tooltip": tip, "x": _field("probit_pfa", "quantitative"),
                             "y": _field("probit_pmiss", "quantitative")}})
    if omitted:
        subtitle += omitted_note(omitted, WIDTH)
    return {"layer": layers, "height": HEIGHT, "resolve": {"scale": {"color": "shared"}},
            "title": {"text": title, "subtitle": subtitle},
            "usermeta": {"scoreframe": {"omitted_points": omitted}}, "width": WIDTH}


def _det_data(det: pl.DataFrame, points: pl.DataFrame, gcols: Sequence[str],
              wanted: list[str]) -> dict[str, Any] | None:
    """The DET rows, rule-of-30 lines and operating points of the ``wanted`` series, at once."""
    xlo, xhi = float(probit(DET_BOX[0])), float(probit(DET_BOX[1]))
    ylo, yhi = float(probit(DET_BOX[2])), float(probit(DET_BOX[3]))
    df = series_labels(det, gcols).filter(pl.col(SERIES).is_in(wanted))
    cell = max((xhi - xlo) / WIDTH, (yhi - ylo) / HEIGHT)
    df = display_decimate(df, cell=cell, box=(xlo, xhi, ylo, yhi))
    firsts = df.group_by(SERIES, maintain_order=True).agg(
        pl.col("eer").first(), pl.col("probit_dr30_pfa").first(),
        pl.col("probit_dr30_pmiss").first())
    if firsts["eer"].is_null().any() or firsts.height != len(wanted):
        return None
    df = df.with_columns(pl.int_range(pl.len()).over(SERIES, "curve").alias("i"))
    lines = _by_series(display_rows(df.select(SERIES, "curve", "i", "probit_pfa",
                                              "probit_pmiss")))
    flags = firsts.select(SERIES, "eer",
                          _vert=pl.col("probit_dr30_pfa").is_between(xlo, xhi),
                          _horiz=pl.col("probit_dr30_pmiss").is_between(ylo, yhi)).rows()
    dr30_rows = _by_series(display_rows(firsts.select(SERIES, "probit_dr30_pfa",
                                                      "probit_dr30_pmiss")))
    dr30 = {s: {"rows": dr30_rows[s], "_vert": bool(v), "_horiz": bool(h)}
            for s, _, v, h in flags}
    eer = {s: float(e) for s, e, _, _ in flags}
    pts = series_labels(points, gcols).filter(pl.col(SERIES).is_in(wanted))
    pts = pts.select(SERIES, *[c for c in ("p_target", "kind", "pfa", "pmiss", "probit_pfa",
                                            "probit_pmiss", "dcf_norm") if c in pts.columns])
    if "probit_pfa" not in pts.columns or "p_target" not in pts.columns:
        return None
    inside = (pl.col("probit_pfa").is_between(xlo, xhi)
              & pl.col("probit_pmiss").is_between(ylo, yhi))
    pts = pts.with_columns(_inside=inside,
                           prior=pl.col("p_target").map_elements(prior_label,
                                                                 return_dtype=pl.String),
                           marker=pl.format("{} DCF @ p_target={}", pl.col("kind"),
                                            pl.col("p_target")))
    meta = pts.select(SERIES, "p_target", "kind", "_inside").rows()
    keep = [SERIES, "prior", "marker", "kind", "pfa", "pmiss", "probit_pfa", "probit_pmiss"]
    keep += ["dcf_norm"] if "dcf_norm" in pts.columns else []
    rows = display_rows(pts.select(keep))
    priors: dict[str, list[float]] = {}
    outside: dict[str, list[tuple[str, float]]] = {}
    inside_rows: dict[str, Rows] = {}
    for (s, p, kind, ok), row in zip(meta, rows, strict=True):
        if p not in priors.setdefault(s, []):  # p_target.unique(maintain_order=True)
            priors[s].append(p)
        if ok is None:  # a null rate: neither drawn nor named (as in det_plot)
            continue
        if ok:
            inside_rows.setdefault(s, []).append(row)
        elif (kind, p) not in outside.setdefault(s, []):
            outside[s].append((kind, p))
    return {"lines": lines, "dr30": dr30, "eer": eer,
            "priors": {s: [prior_label(p) for p in ps] for s, ps in priors.items()},
            "outside": {s: [f"{kind} @{prior_label(p)}" for kind, p in items]
                        for s, items in outside.items()},
            "points": inside_rows}


def _nber_spec(s: str, style: SeriesStyle, wide: Rows, marks: Rows, rules: Rows,
               title: str) -> dict[str, Any]:
    """``nber_plot(group, components=True, p_target=..., title=title).to_dict()``."""
    measures = list(_NBER_MEASURES.values())
    lg = _legend("curve")
    curves = {
        "data": {"values": wide}, "mark": _mark("line", clip=True),
        "encoding": {
            "color": _series_channel(s, style, "color", _legend(None)),
            "detail": _field(SERIES, "nominal"),
            "strokeDash": _field("measure", "nominal", legend=lg, scale={
                "domain": measures, "range": [
                    list(MEASURE_DASHES[i % len(MEASURE_DASHES)]) for i in range(len(measures))]},
                sort=measures),
            "strokeWidth": _field("measure", "nominal", legend=lg, scale={
                "domain": measures,
                "range": [MEASURE_WIDTHS[i % len(MEASURE_WIDTHS)] for i in range(len(measures))]},
                sort=measures),
            "tooltip": [_field(SERIES, "nominal"), _field("measure", "nominal"),
                        _field("prior_log_odds", "quantitative", format=".2f"),
                        _field("value", "quantitative", format=".4f")],
            "x": _field("prior_log_odds", "quantitative", scale={"nice": False, "zero": False},
                        title="prior log-odds logit(p_target)"),
            "y": _field("value", "quantitative", scale={"domain": [0, _Y_MAX], "nice": False},
                        title="normalized DCF")},
        "transform": [{"fold": measures, "as": ["measure", "value"]}]}
    return nber_chart(curves, marks, rules, title)


def group_specs(*, det: pl.DataFrame, points: pl.DataFrame, nber: pl.DataFrame,
                histograms: pl.DataFrame, keys: Sequence[Key], gcols: Sequence[str],
                styles: Mapping[str, SeriesStyle], p_target: Sequence[float]
                ) -> dict[Key, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] | None:
    """``{key: (det, nber, histogram)}`` Vega-Lite dicts of every group, or None (use Altair).

    ``key`` are the group values (as in the report's summary); the dicts are those of
    ``det_plot(..., curve="both", title="DET: <label>")``,
    ``nber_plot(..., components=True, title="NBER: <label>")`` and
    ``histogram_plot(..., title="Scores: <label>")`` on the group's rows, with
    ``series=gcols`` and ``styles``.
    """
    top = vega_top()
    if top is None or not gcols or any(v is None for k in keys for v in k):
        return None
    frames = (det, points, nber, histograms)
    if any(not set(gcols) <= set(f.columns) for f in frames):
        return None
    named = series_labels(det.select(gcols).unique(maintain_order=True), gcols).rows()
    label_of = {tuple(r[:-1]): r[-1] for r in named}
    if len(set(label_of.values())) != len(label_of) or any(k not in label_of for k in keys):
        return None  # two groups with one label, or a group without DET rows
    labels = {k: label_of[k] for k in keys}
    wanted = list(labels.values())
    if len(set(wanted)) != len(wanted) or any(s not in styles for s in wanted):
        return None
    data = _det_data(det, points, gcols, wanted)
    if data is None:
        return None
    hist = series_labels(histograms, None)
    hist_rows: dict[Key, Rows] = {}
    for k, row in zip(hist.select(gcols).rows(), display_rows(hist), strict=True):
        hist_rows.setdefault(k, []).append(row)
    nb = series_labels(nber, gcols).filter(pl.col(SERIES).is_in(wanted))
    wide = _by_series(display_rows(nb.select(SERIES, "prior_log_odds", *_NBER_MEASURES)
                                   .rename(_NBER_MEASURES)))
    marks: dict[str, Rows] = {}
    if "dr30_fa" in nb.columns:
        marks = _by_series(display_rows(nb.filter(pl.col("dr30_fa") | pl.col("dr30_miss"))
                                        .with_columns(which=pl.when(pl.col("dr30_fa")).then(
                                            pl.lit("30 false alarms")).otherwise(
                                            pl.lit("30 misses")))
                                        .select(SERIES, "prior_log_odds", "min_dcf_norm",
                                                "which")))
    rules = prior_rules(p_target, _Y_MAX)
    lo = max(float(probit(DET_BOX[0])), float(probit(DET_BOX[2])))
    hi = min(float(probit(DET_BOX[1])), float(probit(DET_BOX[3])))
    diag = display_rows(pl.DataFrame({"probit_pfa": [lo, hi], "probit_pmiss": [lo, hi]}))
    axes = (det_axis_options("false-alarm probability (%)", DET_BOX[0], DET_BOX[1],
                             length_px=WIDTH),
            det_axis_options("miss probability (%)", DET_BOX[2], DET_BOX[3], length_px=HEIGHT))
    config, schema = top

    def wrap(spec: dict[str, Any]) -> dict[str, Any]:
        return {"config": config, **spec, "$schema": schema}

    out: dict[Key, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
    for k in keys:
        s = labels[k]
        label = " / ".join(str(v) for v in k)
        rows = hist_rows.get(k, [])
        if s not in data["lines"] or s not in wide or len({r[SERIES] for r in rows}) != 1:
            return None  # no rows, or several series in one histogram (a facet)
        det_spec = _det_spec(s, styles[s], data["eer"][s], data["lines"][s], data["dr30"][s],
                             data["points"].get(s, []), data["priors"].get(s, []),
                             data["outside"].get(s, []), axes, diag, f"DET: {label}")
        nber_spec = _nber_spec(s, styles[s], wide[s], marks.get(s, []), rules,
                               f"NBER: {label}")
        hist_spec = {"data": {"values": rows}, "mark": _mark(
            "rect", opacity=0.55, stroke="black", strokeWidth=0.3), "encoding": {
            "fill": _field("class", "nominal", legend={"title": "class"}, scale={
                "domain": ["target", "non-target"], "range": ["#1f1f1f", "#bdbdbd"]}),
            "x": _field("lo", "quantitative", title="score"), "x2": {"field": "hi"},
            "y": _field("density", "quantitative", stack=None, title="density")},
            "height": 160, "title": f"Scores: {label}", "width": WIDTH}
        out[k] = (wrap(det_spec), wrap(nber_spec), wrap(hist_spec))
    return out
