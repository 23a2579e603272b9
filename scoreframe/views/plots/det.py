"""DET curves on probit axes with DR30 lines and DCF operating points.

The data stay unclamped: the marks are clipped to the plot box (Vega-Lite ``clip: true``), so a
curve leaves the box where its error rates leave it, as in published DET plots, instead of
running along the frame. Infinite probits (rates of 0 or 1) are drawn far outside the box.
DCF markers outside the box are left out and named in the subtitle (and in the chart's
``usermeta``), never moved onto the border.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

import altair as alt
import polars as pl

from scoreframe.errors import ScoreframeError, message
from scoreframe.kernels.elementary import probit
from scoreframe.views._vega import POINT_SHAPES, dcf_markers, display_decimate
from scoreframe.views._vega import omitted_note as _omitted_note
from scoreframe.views.plots.style import (
    DET_BOX,
    HEIGHT,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    det_axis,
    inline_data,
    series_encodings,
    series_labels,
    series_order,
    styles_for,
)

__all__ = ["GUIDES", "POINT_SHAPES", "det_plot", "display_decimate"]

#: The reference lines of :func:`det_plot` (``guides=``), all drawn by default.
GUIDES: tuple[Literal["eer", "dr30"], ...] = ("eer", "dr30")

def det_plot(det: Any, *, curve: Literal["steppy", "rocch", "both"] = "steppy",
             points: Any = None, series: Sequence[str] | None = None,
             styles: Mapping[str, SeriesStyle] | None = None,
             box: tuple[float, float, float, float] = DET_BOX,
             guides: Collection[Literal["eer", "dr30"]] = GUIDES,
             resolution: float | Literal["auto"] | None = "auto",
             width: int = WIDTH, height: int = HEIGHT, title: str = "DET") -> alt.LayerChart:
    """DET curves on probit axes, legend ordered by EER, with DR30 lines and DCF points.

    Parameters
    ----------
    det
        A :func:`scoreframe.results.curves.det_curve` frame (several groups become several series;
        Polars, pandas or pyarrow).
    curve
        ``"steppy"``, ``"rocch"`` or ``"both"`` (the ROCCH-DET fainter, same colour and dash).
    points
        DCF operating points: a frame with the group columns, ``p_target``, ``kind``
        (``"min"`` / ``"act"``), ``pfa`` and ``pmiss`` (e.g. rows of
        :func:`scoreframe.results.curves.operating_points`). Each prior gets its own marker shape,
        filled at the minimum-DCF vertex and open at the actual-DCF decision; points outside
        the box are omitted and named in the subtitle.
    series
        Group columns naming a series (default: the leading string columns).
    styles
        Series label -> :class:`~scoreframe.views.plots.style.SeriesStyle` (see
        :func:`~scoreframe.views.plots.style.series_scale`); default: by order of appearance.
    box
        ``(pfa_min, pfa_max, pmiss_min, pmiss_max)`` probabilities of the plot box.
    guides
        Reference lines: ``"eer"`` (the diagonal where the two error rates are equal) and
        ``"dr30"`` (per series, the rates of 30 errors: Doddington's rule of 30); ``()``
        draws neither.
    resolution
        Decimation cell of the steppy curve in probit units; ``"auto"`` is one pixel at
        ``width`` x ``height``; None draws every row.

    See Also
    --------
    scoreframe.det_curve : Its data.
    det_interval_plot : With intervals.
    save_chart : Write it to a file.

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe.results.curves import det_curve
    >>> df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0, 0.5], "label": [True, True, False,
    ...                    False, False]})
    >>> spec = det_plot(det_curve(df)).to_dict()
    >>> spec["layer"][0]["mark"]["type"], spec["layer"][0]["mark"]["clip"]
    ('line', True)
    """
    drawn: set[str] = {guides} if isinstance(guides, str) else set(guides)
    if not drawn <= set(GUIDES):
        raise ScoreframeError(message("bad `guides`", expected=" and/or ".join(map(repr, GUIDES)),
                                      got=repr(sorted(drawn - set(GUIDES)))[:80]),
                              parameter="guides")
    xlo, xhi = float(probit(box[0])), float(probit(box[1]))
    ylo, yhi = float(probit(box[2])), float(probit(box[3]))
    df = series_labels(as_polars(det), series)
    base_order = series_order(df, None)
    style = styles_for(base_order, styles)
    order = series_order(df, "eer")
    if curve != "both":
        df = df.filter(pl.col("curve") == curve)
    if resolution == "auto":
        resolution = max((xhi - xlo) / width, (yhi - ylo) / height)
    if resolution is not None:
        df = display_decimate(df, cell=float(resolution), box=(xlo, xhi, ylo, yhi))
    eer_by = df.group_by(SERIES, maintain_order=True).agg(pl.col("eer").first())
    eer = dict(zip(eer_by[SERIES], eer_by["eer"], strict=True))
    names = {s: f"{s} (EER {100 * eer[s]:.2f}%)" for s in order if s in eer}
    order = [s for s in order if s in names]
    df = df.filter(pl.col(SERIES).is_in(order)).with_columns(
        pl.int_range(pl.len()).over(SERIES, "curve").alias("i"))
    enc = series_encodings(order, style, names=names)
    x = alt.X("probit_pfa:Q", scale=alt.Scale(domain=[xlo, xhi], nice=False, zero=False),
              axis=det_axis("false-alarm probability (%)", box[0], box[1], length_px=width))
    y = alt.Y("probit_pmiss:Q", scale=alt.Scale(domain=[ylo, yhi], nice=False, zero=False),
              axis=det_axis("miss probability (%)", box[2], box[3], length_px=height))
    # ``i``: path order; the rates for the tooltip come from the probits, in Vega
    lines_df = df.select(SERIES, *(["curve"] if curve == "both" else []), "i", "probit_pfa",
                         "probit_pmiss")
    base = alt.Chart(inline_data(lines_df)).mark_line(clip=True, strokeWidth=1.6).encode(
        x=x, y=y, order=alt.Order("i:Q"), **enc,
        **({"detail": "curve:N"} if curve == "both" else {}),
        tooltip=[alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("pfa:Q", format=".3%"),
                 alt.Tooltip("pmiss:Q", format=".3%")]).transform_calculate(
        pfa="cumulativeNormal(datum.probit_pfa)", pmiss="cumulativeNormal(datum.probit_pmiss)")
    if curve == "both":
        base = base.encode(opacity=alt.condition("datum.curve == 'rocch'", alt.value(0.45),
                                                 alt.value(1.0)))
    layers: list[alt.Chart] = [base]
    subtitle: list[str] = []
    if curve == "both":
        subtitle.append("faint: ROCCH (convex hull) of the same series")
    if "eer" in drawn:
        lo, hi = max(xlo, ylo), min(xhi, yhi)
        diag = pl.DataFrame({"probit_pfa": [lo, hi], "probit_pmiss": [lo, hi]})
        layers.append(alt.Chart(inline_data(diag)).mark_line(
            color="#888", strokeDash=[2, 3], strokeWidth=0.8, clip=True).encode(
            x=alt.X("probit_pfa:Q"), y=alt.Y("probit_pmiss:Q")))
    if "dr30" in drawn:
        lines = df.group_by(SERIES, maintain_order=True).agg(
            pl.col("probit_dr30_pfa").first(), pl.col("probit_dr30_pmiss").first())
        vert = lines.filter(pl.col("probit_dr30_pfa").is_between(xlo, xhi))
        horiz = lines.filter(pl.col("probit_dr30_pmiss").is_between(ylo, yhi))
        common: dict[str, Any] = {"strokeWidth": 0.8, "strokeDash": [4, 2], "opacity": 0.7,
                                  "clip": True}
        color = alt.Color(f"{SERIES}:N", legend=None)
        if vert.height:
            layers.append(alt.Chart(inline_data(vert)).mark_rule(**common).encode(
                x=alt.X("probit_dr30_pfa:Q"), color=color))
        if horiz.height:
            layers.append(alt.Chart(inline_data(horiz)).mark_rule(**common).encode(
                y=alt.Y("probit_dr30_pmiss:Q"), color=color))
        if vert.height or horiz.height:
            subtitle.append("thin dashed: rule of 30 (30 false alarms / 30 misses)")
    omitted: list[str] = []
    if points is not None:
        layers_pts, omitted = _point_layers(as_polars(points), series, names,
                                            (xlo, xhi, ylo, yhi))
        layers += layers_pts
    if omitted:
        subtitle += _omitted_note(omitted, width)
    head = alt.Title(title, subtitle=subtitle) if subtitle else alt.Title(title)
    chart: alt.LayerChart = alt.layer(*layers).properties(
        width=width, height=height, title=head,
        usermeta={"scoreframe": {"omitted_points": omitted}}).resolve_scale(color="shared")
    return chart


def _point_layers(points: pl.DataFrame, series: Sequence[str] | None, names: dict[str, str],
                  box: tuple[float, float, float, float]) -> tuple[list[alt.Chart], list[str]]:
    """Marker layers (filled: min DCF, open: act DCF; shape: prior) and the omitted points."""
    kinds, labels, omitted = dcf_markers(series_labels(points, series), names, box)
    shape = alt.Shape("prior:N", sort=labels, scale=alt.Scale(
        domain=labels, range=[POINT_SHAPES[i % len(POINT_SHAPES)] for i in range(len(labels))]),
        legend=alt.Legend(title=["DCF point, p_target", "(filled: min, open: act)"],
                          symbolFillColor="#555", symbolStrokeColor="#555"))
    tooltip = [alt.Tooltip(f"{SERIES}:N"), alt.Tooltip("marker:N"),
               alt.Tooltip("pfa:Q", format=".3%"),
               alt.Tooltip("pmiss:Q", format=".3%")]
    if any("dcf_norm" in part.columns for part in kinds.values()):
        tooltip.append(alt.Tooltip("dcf_norm:Q", format=".4f", title="normalized DCF"))
    layers = [alt.Chart(inline_data(part)).mark_point(
        size=70, filled=kind == "min", strokeWidth=1.8, opacity=1, clip=True).encode(
        x=alt.X("probit_pfa:Q"), y=alt.Y("probit_pmiss:Q"),
        color=alt.Color(f"{SERIES}:N", legend=None), shape=shape, tooltip=tooltip)
        for kind, part in kinds.items()]
    return layers, omitted
