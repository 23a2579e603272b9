"""DET curves on probit axes with DR30 lines and DCF operating points."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

from scoreframe.kernels.elementary import probit
from scoreframe.plots.style import (
    DET_BOX,
    HEIGHT,
    SERIES,
    WIDTH,
    det_axis,
    inline_data,
    series_encodings,
    series_labels,
    series_order,
)

__all__ = ["det_plot"]


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
    order = series_order(df, "eer")
    if curve != "both":
        df = df.filter(pl.col("curve") == curve)
    eer_by = df.group_by(SERIES, maintain_order=True).agg(pl.col("eer").first())
    label = dict(zip(eer_by[SERIES], eer_by["eer"], strict=True))
    names = {s: f"{s} (EER {100 * label[s]:.2f}%)" for s in order if s in label}
    order = [names[s] for s in order if s in names]
    df = df.with_columns(pl.col(SERIES).replace_strict(names),
                         pl.col("probit_pfa").clip(lo, hi), pl.col("probit_pmiss").clip(lo, hi))
    lines_df = df.select(SERIES, "curve", "pfa", "pmiss", "probit_pfa", "probit_pmiss")
    enc = series_encodings(order)
    x = alt.X("probit_pfa:Q", scale=alt.Scale(domain=[lo, hi], nice=False),
              axis=det_axis("false-alarm probability (%)"))
    y = alt.Y("probit_pmiss:Q", scale=alt.Scale(domain=[lo, hi], nice=False),
              axis=det_axis("miss probability (%)"))
    base = alt.Chart(inline_data(lines_df)).mark_line(clip=True, strokeWidth=1.6).encode(
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
        layers.append(alt.Chart(inline_data(diag)).mark_line(color="#888", strokeDash=[2, 3],
                                                         strokeWidth=0.8).encode(
            x="probit_pfa:Q", y="probit_pmiss:Q"))
    if dr30:
        lines = df.group_by(SERIES, maintain_order=True).agg(
            pl.col("probit_dr30_pfa").first(), pl.col("probit_dr30_pmiss").first())
        vert = lines.filter(pl.col("probit_dr30_pfa").is_between(lo, hi))
        horiz = lines.filter(pl.col("probit_dr30_pmiss").is_between(lo, hi))
        common = {"strokeWidth": 0.8, "strokeDash": [4, 2], "opacity": 0.7}
        if vert.height:
            layers.append(alt.Chart(inline_data(vert)).mark_rule(**common).encode(
                x="probit_dr30_pfa:Q", color=enc["color"]))
        if horiz.height:
            layers.append(alt.Chart(inline_data(horiz)).mark_rule(**common).encode(
                y="probit_dr30_pmiss:Q", color=enc["color"]))
    if points is not None and points.height:
        pts = series_labels(points, series).filter(pl.col(SERIES).is_in(list(names)))
        pts = pts.filter(pl.col("probit_pfa").is_between(lo, hi)
                         & pl.col("probit_pmiss").is_between(lo, hi))
        pts = pts.with_columns(pl.col(SERIES).replace_strict(names),
                               marker=pl.format("{} DCF @ {}", pl.col("kind"),
                                                pl.col("p_target")))
        layers.append(alt.Chart(inline_data(pts)).mark_point(size=70, filled=True,
                                                             clip=True).encode(
            x="probit_pfa:Q", y="probit_pmiss:Q", color=enc["color"],
            shape=alt.Shape("kind:N", scale=alt.Scale(domain=["min", "act"],
                                                      range=["circle", "cross"]),
                            legend=alt.Legend(title="DCF point")),
            tooltip=[f"{SERIES}:N", "marker:N", alt.Tooltip("dcf_norm:Q", format=".4f")]))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title).resolve_scale(
        color="shared")
