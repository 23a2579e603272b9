"""Altair (Vega-Lite) charts of the tidy curve frames: DET, NBER, APE, calibration maps, histograms.

Views layer: every chart draws a frame computed elsewhere (:mod:`scoreframe.curves`,
:func:`scoreframe.evaluate.evaluate`, :func:`scoreframe.calibration.calibration_map`); the only
work done here is reshaping for display (series labels, long format, clamping infinities to the
plot box). Series differ by colour *and* dash pattern, so charts stay readable in grayscale.
Data are embedded with ``alt.Data(values=...)``: Altair's 5,000-row guard never truncates or
fails, and the engine has already decimated the curves to display resolution.

Charts save offline with :func:`save_chart` (HTML with the JavaScript bundled in, SVG, PNG).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import altair as alt
import polars as pl
from altair.utils.schemapi import debug_mode

from scoreframe.io._atomic import atomic_output
from scoreframe.kernels.elementary import logit, probit

__all__ = ["ape_plot", "calibration_plot", "cavg_sweep_plot", "det_plot", "histogram_plot",
           "nber_plot", "save_chart", "series_labels"]

DET_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
DET_BOX = (0.0005, 0.5)
DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4], [4, 4, 1, 4], [1, 3], [10, 2, 2, 2]]
WIDTH, HEIGHT = 360, 300
SERIES = "series"
_NON_GROUP = {"curve", "pfa", "pmiss", "probit_pfa", "probit_pmiss", "eer", "dr30_pfa",
              "dr30_pmiss", "probit_dr30_pfa", "probit_dr30_pmiss", "prior_log_odds",
              "p_target", "kind", "dcf_norm", "class", "lo", "hi", "density", "score", "llr",
              "map", "n_tar", "n_non"}


def _group_cols(df: pl.DataFrame, series: Sequence[str] | None) -> list[str]:
    if series is not None:
        return list(series)
    cols = []
    for c in df.columns:
        if c in _NON_GROUP or df.schema[c] not in (pl.String, pl.Categorical, pl.Enum):
            if cols or c in _NON_GROUP:
                break
            continue
        cols.append(c)
    return cols


def series_labels(df: pl.DataFrame, series: Sequence[str] | None = None) -> pl.DataFrame:
    """Add a ``series`` column: the group columns' values joined by `` / ``."""
    cols = _group_cols(df, series)
    if SERIES in df.columns:
        return df
    if not cols:
        return df.with_columns(pl.lit("scores").alias(SERIES))
    return df.with_columns(pl.concat_str([pl.col(c).cast(pl.String).fill_null("∅")
                                          for c in cols], separator=" / ").alias(SERIES))


def _values(df: pl.DataFrame) -> alt.Data:
    """Inline data without Altair's row guard (rows are already at display resolution)."""
    clean = df.with_columns([pl.col(c).fill_nan(None) for c, t in df.schema.items()
                             if t in (pl.Float32, pl.Float64)])
    with debug_mode(False):  # the rows are plain numbers and strings: skip per-row validation
        return alt.Data(values=clean.to_dicts())


def _order(df: pl.DataFrame, by: str | None) -> list[str]:
    if by is None or by not in df.columns:
        return df[SERIES].unique(maintain_order=True).to_list()
    first = df.group_by(SERIES, maintain_order=True).agg(pl.col(by).first())
    return first.sort(by, nulls_last=True)[SERIES].to_list()


def _series_encodings(order: list[str], *, title: str = "") -> dict:
    dashes = [DASHES[i % len(DASHES)] for i in range(len(order))]
    legend = alt.Legend(title=title or None, orient="right", symbolStrokeWidth=2)
    return {
        "color": alt.Color(f"{SERIES}:N", sort=order, legend=legend,
                           scale=alt.Scale(domain=order, scheme="category10")),
        "strokeDash": alt.StrokeDash(f"{SERIES}:N", sort=order, legend=legend,
                                     scale=alt.Scale(domain=order, range=dashes)),
    }


def _det_axis(title: str) -> alt.Axis:
    vals = [float(probit(t)) for t in DET_TICKS]
    expr = " : ".join(f"datum.value < {v + 1e-6:.6f} ? '{t * 100:g}'" for v, t in
                      zip(vals, DET_TICKS, strict=True)) + " : ''"
    return alt.Axis(values=vals, labelExpr=expr, title=title, grid=True)


def det_plot(det: pl.DataFrame, *, curve: str = "steppy", points: pl.DataFrame | None = None,
             series: Sequence[str] | None = None, dr30: bool = True, eer_line: bool = True,
             title: str = "DET") -> alt.LayerChart:
    """DET curves on probit axes, legend ordered by EER, with DR30 lines and DCF points.

    Parameters
    ----------
    det
        A :func:`scoreframe.curves.det_curve` frame (several groups become several series).
    curve
        ``"steppy"``, ``"rocch"`` or ``"both"`` (the ROCCH-DET dashed in the same colour).
    points
        A :func:`scoreframe.curves.operating_points` frame: filled circles at the minimum-DCF
        vertex, crosses at the actual-DCF decision, for each prior.
    series
        Group columns naming a series (default: the leading string columns).

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe.curves import det_curve
    >>> df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0, 0.5], "label": [True, True, False,
    ...                    False, False]})
    >>> det_plot(det_curve(df)).to_dict()["layer"][0]["mark"]["type"]
    'line'
    """
    lo, hi = (float(probit(DET_BOX[0])), float(probit(DET_BOX[1])))
    df = series_labels(det, series)
    order = _order(df, "eer")
    if curve != "both":
        df = df.filter(pl.col("curve") == curve)
    eer_by = df.group_by(SERIES, maintain_order=True).agg(pl.col("eer").first())
    label = dict(zip(eer_by[SERIES], eer_by["eer"], strict=True))
    names = {s: f"{s} (EER {100 * label[s]:.2f}%)" for s in order if s in label}
    order = [names[s] for s in order if s in names]
    df = df.with_columns(pl.col(SERIES).replace_strict(names),
                         pl.col("probit_pfa").clip(lo, hi), pl.col("probit_pmiss").clip(lo, hi))
    lines_df = df.select(SERIES, "curve", "pfa", "pmiss", "probit_pfa", "probit_pmiss")
    enc = _series_encodings(order)
    x = alt.X("probit_pfa:Q", scale=alt.Scale(domain=[lo, hi], nice=False),
              axis=_det_axis("false-alarm probability (%)"))
    y = alt.Y("probit_pmiss:Q", scale=alt.Scale(domain=[lo, hi], nice=False),
              axis=_det_axis("miss probability (%)"))
    base = alt.Chart(_values(lines_df)).mark_line(clip=True, strokeWidth=1.6).encode(
        x=x, y=y, order="pfa_order:Q", detail="curve:N", **enc,
        tooltip=[f"{SERIES}:N", alt.Tooltip("pfa:Q", format=".4%"), alt.Tooltip("pmiss:Q",
                                                                          format=".4%")],
    ).transform_window(pfa_order="row_number()", groupby=[SERIES, "curve"])
    if curve == "both":
        base = base.encode(opacity=alt.condition("datum.curve == 'rocch'", alt.value(0.55),
                                                 alt.value(1.0)))
    layers: list[alt.Chart] = [base]
    if eer_line:
        diag = pl.DataFrame({"probit_pfa": [lo, hi], "probit_pmiss": [lo, hi]})
        layers.append(alt.Chart(_values(diag)).mark_line(color="#888", strokeDash=[2, 3],
                                                         strokeWidth=0.8).encode(
            x="probit_pfa:Q", y="probit_pmiss:Q"))
    if dr30:
        lines = df.group_by(SERIES, maintain_order=True).agg(
            pl.col("probit_dr30_pfa").first(), pl.col("probit_dr30_pmiss").first())
        vert = lines.filter(pl.col("probit_dr30_pfa").is_between(lo, hi))
        horiz = lines.filter(pl.col("probit_dr30_pmiss").is_between(lo, hi))
        common = {"strokeWidth": 0.8, "strokeDash": [4, 2], "opacity": 0.7}
        if vert.height:
            layers.append(alt.Chart(_values(vert)).mark_rule(**common).encode(
                x="probit_dr30_pfa:Q", color=enc["color"]))
        if horiz.height:
            layers.append(alt.Chart(_values(horiz)).mark_rule(**common).encode(
                y="probit_dr30_pmiss:Q", color=enc["color"]))
    if points is not None and points.height:
        pts = series_labels(points, series).filter(pl.col(SERIES).is_in(list(names)))
        pts = pts.filter(pl.col("probit_pfa").is_between(lo, hi)
                         & pl.col("probit_pmiss").is_between(lo, hi))
        pts = pts.with_columns(pl.col(SERIES).replace_strict(names),
                               marker=pl.format("{} DCF @ {}", pl.col("kind"),
                                                pl.col("p_target")))
        layers.append(alt.Chart(_values(pts)).mark_point(size=70, filled=True, clip=True).encode(
            x="probit_pfa:Q", y="probit_pmiss:Q", color=enc["color"],
            shape=alt.Shape("kind:N", scale=alt.Scale(domain=["min", "act"],
                                                      range=["circle", "cross"]),
                            legend=alt.Legend(title="DCF point")),
            tooltip=[f"{SERIES}:N", "marker:N", alt.Tooltip("dcf_norm:Q", format=".4f")]))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title).resolve_scale(
        color="shared")


def _long(df: pl.DataFrame, measures: dict[str, str]) -> pl.DataFrame:
    keep = [c for c in df.columns if c not in measures]
    return df.unpivot(on=list(measures), index=keep, variable_name="measure",
                      value_name="value").with_columns(
        pl.col("measure").replace_strict(measures))


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
    order = _order(df, None)
    measures = {"act_dcf_norm": "actual", "min_dcf_norm": "minimum", "default": "default"}
    if components:
        measures |= {"act_miss_norm": "miss part", "act_fa_norm": "false-alarm part"}
    keep = [SERIES, "prior_log_odds", *measures]
    long = _long(df.select(keep), measures)
    enc = _series_encodings(order)
    weights = {"actual": 2.0, "minimum": 1.2, "default": 1.0, "miss part": 0.8,
               "false-alarm part": 0.8}
    dom = list(weights)[:len(measures)]
    x = alt.X("prior_log_odds:Q", title="logit(p_target)")
    y = alt.Y("value:Q", title="normalized DCF", scale=alt.Scale(domain=[0, y_max], clamp=True))
    lines = alt.Chart(_values(long.filter(pl.col("measure") != "default").select(
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
    layers: list[alt.Chart] = [lines, alt.Chart(_values(ref)).mark_rule(
        color="#555", strokeDash=[1, 2]).encode(y="value:Q")]
    if dr30:
        marks = df.filter(pl.col("dr30_fa") | pl.col("dr30_miss")).with_columns(
            which=pl.when(pl.col("dr30_fa")).then(pl.lit("30 false alarms")).otherwise(
                pl.lit("30 misses")))
        if marks.height:
            layers.append(alt.Chart(_values(marks.select(SERIES, "prior_log_odds",
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
        layers.append(alt.Chart(_values(ops)).mark_rule(color="#333", strokeDash=[5, 3],
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
    order = _order(df, None)
    enc = _series_encodings(order)
    long = _long(df.select(SERIES, "prior_log_odds", "act", "min", "default"),
                 {"act": "actual", "min": "PAV (minimum)", "default": "reference"})
    curves = alt.Chart(_values(long)).mark_line().encode(
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
    bars_df = _long(s.select(SERIES, "min_cllr", "cal_loss", "cllr"),
                    {"min_cllr": "minCllr (discrimination)", "cal_loss": "calibration loss"}
                    ).with_columns(part=(pl.col("measure") == "calibration loss").cast(pl.Int8))
    bars = alt.Chart(_values(bars_df)).mark_bar(stroke="black", strokeWidth=0.5).encode(
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


def calibration_plot(maps: pl.DataFrame, *, title: str = "Calibration map") -> alt.Chart:
    """Score -> llr maps (``map``, ``score``, ``llr`` rows, e.g. PAV and a fitted model)."""
    order = maps["map"].unique(maintain_order=True).to_list()
    df = maps.rename({"map": SERIES}).with_columns(
        pl.col("llr").clip(-1e3, 1e3))
    enc = _series_encodings(order, title="map")
    return alt.Chart(_values(df)).mark_line(strokeWidth=1.6).encode(
        x=alt.X("score:Q", title="score"), y=alt.Y("llr:Q", title="llr (nats)"), **enc,
        tooltip=[f"{SERIES}:N", alt.Tooltip("score:Q", format=".3f"),
                 alt.Tooltip("llr:Q", format=".3f")],
    ).properties(width=WIDTH, height=HEIGHT, title=title)


def histogram_plot(hist: pl.DataFrame, *, series: Sequence[str] | None = None,
                   title: str = "Score distributions") -> alt.Chart:
    """Class-conditional score histograms (a :func:`scoreframe.curves.histogram_frame`)."""
    df = series_labels(hist, series)
    chart = alt.Chart(_values(df)).mark_rect(opacity=0.55, stroke="black",
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
    order = _order(df, None)
    long = _long(df.select(SERIES, "prior_log_odds", "actual", "calibrated", "minimum"),
                 {"actual": "actual", "calibrated": "recalibrated (oracle)",
                  "minimum": "minimum (optimal threshold)"})
    enc = _series_encodings(order)
    return alt.Chart(_values(long)).mark_line().encode(
        x=alt.X("prior_log_odds:Q", title="logit(p_target)"),
        y=alt.Y("value:Q", title="normalized Cavg"), color=enc["color"],
        strokeDash=alt.StrokeDash("measure:N", scale=alt.Scale(
            domain=["actual", "recalibrated (oracle)", "minimum (optimal threshold)"],
            range=[[1, 0], [6, 3], [2, 2]]), legend=alt.Legend(title="curve")),
        detail=f"{SERIES}:N",
        tooltip=[f"{SERIES}:N", "measure:N", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=WIDTH, height=HEIGHT, title=title)


def save_chart(chart: alt.TopLevelMixin, path: str | Path, *, overwrite: bool = False,
               scale: float = 2.0) -> Path:
    """Save a chart offline by suffix: ``.html`` (JavaScript bundled in), ``.svg``, ``.png``.

    No network access is needed (vl-convert renders and bundles locally).
    """
    import vl_convert as vlc

    path = Path(path)
    spec = chart.to_dict(validate=False)
    suffix = path.suffix.lower()
    with atomic_output(path, overwrite=overwrite) as tmp:
        if suffix in (".html", ".htm"):
            tmp.write_text(vlc.vegalite_to_html(spec, bundle=True))
        elif suffix == ".svg":
            tmp.write_text(vlc.vegalite_to_svg(spec))
        elif suffix == ".png":
            tmp.write_bytes(vlc.vegalite_to_png(spec, scale=scale))
        else:
            raise ValueError(f"save_chart: unknown suffix {suffix!r}; expected .html, .svg "
                             f"or .png")
    return path

