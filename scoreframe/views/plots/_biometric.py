"""Biometric views: the expected performance curve (EPC), the CMC and FNIR against FPIR.

Draw the frames of :func:`scoreframe.epc_curve` (for each weight ``alpha`` of FMR, the HTER
or weighted error on evaluation trials at the threshold chosen on development trials),
:func:`scoreframe.identification.cmc_curve` and
:func:`scoreframe.identification.fnir_fpir_curve`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from scoreframe.errors import ScoreframeError, message
from scoreframe.views.plots.style import (
    HEIGHT,
    SERIES,
    WIDTH,
    SeriesStyle,
    as_polars,
    inline_data,
    series_encodings,
    series_labels,
    series_order,
    styles_for,
)

__all__ = ["cmc_plot", "differentials_plot", "epc_plot", "fmr_fnmr_plot", "fnir_fpir_plot"]


def epc_plot(curve: Any, *, y: str = "hter", series: Sequence[str] | None = None,
             styles: Mapping[str, SeriesStyle] | None = None, width: int = WIDTH,
             height: int = HEIGHT, title: str = "Expected performance curve (EPC)"
             ) -> alt.LayerChart | alt.FacetChart:
    """The EPC: evaluation error at the development threshold, against ``alpha``.

    Parameters
    ----------
    curve
        An :func:`scoreframe.epc_curve` frame (``alpha``, ``hter``, ``weighted_error``...),
        optionally with group columns (one line per group).
    y
        ``"hter"`` (default, as bob.measure's EPC plot) or ``"weighted_error"``.
    series, styles
        Group columns naming a series and the series' colours and dashes.

    See Also
    --------
    scoreframe.epc_curve

    Examples
    --------
    >>> import polars as pl
    >>> c = pl.DataFrame({"alpha": [0.0, 0.5, 1.0], "hter": [0.5, 0.2, 0.45],
    ...                   "weighted_error": [0.0, 0.2, 0.01]})
    >>> epc_plot(c).to_dict()["layer"][0]["mark"]["type"]
    'line'
    """
    if y not in ("hter", "weighted_error"):
        raise ScoreframeError(message("bad `y`", expected="hter | weighted_error",
                                      got=repr(y)))
    df = series_labels(as_polars(curve), series)
    order = series_order(df, None)
    style = styles_for(order, styles)
    label = "HTER on eval" if y == "hter" else "alpha FMR + (1 - alpha) FNMR on eval"
    line = alt.Chart(inline_data(df.select(SERIES, "alpha", y))).mark_line(
        point=True, clip=True).encode(
        x=alt.X("alpha:Q", title="alpha (weight of FMR in the dev criterion)",
                scale=alt.Scale(domain=[0, 1], nice=False)),
        y=alt.Y(f"{y}:Q", title=label, axis=alt.Axis(format="%")),
        **series_encodings(order, style, dash=len(order) > 1),
        tooltip=[f"{SERIES}:N", alt.Tooltip("alpha:Q", format=".3f"),
                 alt.Tooltip(f"{y}:Q", format=".4%")])
    head = alt.Title(title, subtitle="threshold minimizing alpha FMR + (1 - alpha) FNMR "
                                     "on dev, applied to eval")
    return alt.layer(line).properties(width=width, height=height, title=head)


def cmc_plot(curve: Any, *, series: Sequence[str] | None = None,
             styles: Mapping[str, SeriesStyle] | None = None, width: int = WIDTH,
             height: int = HEIGHT, title: str = "Cumulative match characteristic (CMC)"
             ) -> alt.LayerChart | alt.FacetChart:
    """The CMC: closed-set identification rate against rank.

    Parameters
    ----------
    curve
        A :func:`scoreframe.identification.cmc_curve` frame (``rank``,
        ``identification_rate``), optionally with group columns.
    series, styles
        Group columns naming a series and the series' colours and dashes.

    See Also
    --------
    scoreframe.identification.cmc_curve, fnir_fpir_plot

    Examples
    --------
    >>> import polars as pl
    >>> c = pl.DataFrame({"rank": [1, 2, 3], "identification_rate": [0.6, 0.8, 0.9]})
    >>> cmc_plot(c).to_dict()["layer"][0]["encoding"]["x"]["field"]
    'rank'
    """
    df = series_labels(as_polars(curve), series)
    order = series_order(df, None)
    style = styles_for(order, styles)
    line = alt.Chart(inline_data(df.select(SERIES, "rank", "identification_rate"))).mark_line(
        point=True, interpolate="step-after").encode(
        x=alt.X("rank:Q", title="rank", scale=alt.Scale(zero=False, nice=False)),
        y=alt.Y("identification_rate:Q", title="identification rate",
                axis=alt.Axis(format="%")),
        **series_encodings(order, style, dash=len(order) > 1),
        tooltip=[f"{SERIES}:N", "rank:Q",
                 alt.Tooltip("identification_rate:Q", format=".4%")])
    return alt.layer(line).properties(width=width, height=height, title=title)


def fnir_fpir_plot(curve: Any, *, series: Sequence[str] | None = None,
                   styles: Mapping[str, SeriesStyle] | None = None, width: int = WIDTH,
                   height: int = HEIGHT, title: str = "FNIR against FPIR (open-set 1:N)"
                   ) -> alt.LayerChart | alt.FacetChart:
    """FNIR against FPIR on a log FPIR axis (NIST FRTE 1:N style); FPIR = 0 is left out.

    Parameters
    ----------
    curve
        A :func:`scoreframe.identification.fnir_fpir_curve` frame (``fpir``, ``fnir``,
        ``threshold``), optionally with group columns.
    series, styles
        Group columns naming a series and the series' colours and dashes.

    See Also
    --------
    scoreframe.identification.fnir_fpir_curve, cmc_plot

    Examples
    --------
    >>> import polars as pl
    >>> c = pl.DataFrame({"threshold": [2.0, 1.0], "fpir": [0.01, 0.1], "fnir": [0.3, 0.1]})
    >>> fnir_fpir_plot(c).to_dict()["layer"][0]["encoding"]["x"]["scale"]["type"]
    'log'
    """
    import polars as pl

    df = series_labels(as_polars(curve), series).filter(pl.col("fpir") > 0)
    order = series_order(df, None)
    style = styles_for(order, styles)
    line = alt.Chart(inline_data(df.select(SERIES, "fpir", "fnir", "threshold"))).mark_line(
        interpolate="step-after", clip=True).encode(
        x=alt.X("fpir:Q", title="FPIR (log scale)", scale=alt.Scale(type="log")),
        y=alt.Y("fnir:Q", title="FNIR", axis=alt.Axis(format="%")),
        **series_encodings(order, style, dash=len(order) > 1),
        tooltip=[f"{SERIES}:N", alt.Tooltip("fpir:Q", format=".3g"),
                 alt.Tooltip("fnir:Q", format=".4%"), alt.Tooltip("threshold:Q", format=".4g")])
    return alt.layer(line).properties(width=width, height=height, title=title)


def differentials_plot(groups: Any, *, width: int = WIDTH, height: int = HEIGHT,
                       title: str = "Error rates per demographic group at one threshold"
                       ) -> alt.LayerChart | alt.FacetChart:
    """Per-group FMR and FNMR on a log axis (a :func:`scoreframe.differentials` frame).

    Rates of 0 cannot be drawn on a log axis: they are named in the subtitle. With
    ``rate_lo``/``rate_hi`` columns (``differentials(..., bootstrap=B)``) each rate gets its
    interval as a vertical bar; a lower bound of 0 is drawn from the bottom of the axis (half
    the smallest positive value shown) and the subtitle says so.

    Parameters
    ----------
    groups
        A :func:`scoreframe.differentials` frame (or result).
    width, height
        The plot's size in pixels.
    title
        The chart's title.

    Returns
    -------
    altair.LayerChart or altair.FacetChart
        The per-group rates.

    See Also
    --------
    scoreframe.differentials

    Examples
    --------
    >>> import polars as pl
    >>> g = pl.DataFrame({"sex": ["f", "f", "m", "m"], "kind": ["genuine", "impostor"] * 2,
    ...                   "rate": [0.1, 0.001, 0.2, 0.0]})
    >>> differentials_plot(g).to_dict()["layer"][0]["encoding"]["y"]["scale"]["type"]
    'log'
    """
    import polars as pl

    df = as_polars(groups)
    keys = [c for c in df.columns if c not in ("kind", "n_trials", "errors", "rate", "reason",
                                               "rate_lo", "rate_hi")]
    df = df.with_columns(group=pl.concat_str([pl.col(c).fill_null("") for c in keys],
                                             separator=" / ") if keys else pl.lit("all"),
                         measure=pl.when(pl.col("kind") == "genuine").then(pl.lit("FNMR"))
                         .otherwise(pl.lit("FMR")))
    zero = df.filter(pl.col("rate") == 0)
    shown = df.filter(pl.col("rate") > 0)
    note = ("rate 0 (not drawn): " + ", ".join(
        f"{m} {g}" for g, m in zero.select("group", "measure").iter_rows())) if zero.height \
        else "log scale"
    with_iv = "rate_lo" in df.columns and "rate_hi" in df.columns
    cols = ["group", "measure", "rate", *(["rate_lo", "rate_hi"] if with_iv else [])]
    tooltip: list[Any] = ["group:N", "measure:N", alt.Tooltip("rate:Q", format=".4g")]
    if with_iv:
        tooltip += [alt.Tooltip("rate_lo:Q", format=".4g", title="lower"),
                    alt.Tooltip("rate_hi:Q", format=".4g", title="upper")]
    x = alt.X("group:N", title="group", sort=None)
    layers: list[Any] = []
    if with_iv:
        bars = df.filter(pl.col("rate_hi") > 0)
        positive = pl.concat([df["rate"], df["rate_lo"]]).drop_nulls()
        positive = positive.filter(positive > 0)
        floor = float(positive.min()) / 2 if positive.len() else 1e-6  # type: ignore[arg-type]  # polars stubs: Series.min() is any scalar; here a float
        if bars.filter(pl.col("rate_lo") <= 0).height:
            note += f"; a lower bound of 0 is drawn from {floor:.2g}"
        bars = bars.with_columns(pl.max_horizontal(pl.col("rate_lo"), pl.lit(floor))
                                 .alias("rate_lo_drawn"))
        layers.append(alt.Chart(inline_data(bars.select(*cols, "rate_lo_drawn"))).mark_rule(
            strokeWidth=2, opacity=0.6).encode(
            x=x, y=alt.Y("rate_lo_drawn:Q", scale=alt.Scale(type="log")),
            y2="rate_hi:Q", color=alt.Color("measure:N", title="", legend=None),
            tooltip=tooltip))
    points = alt.Chart(inline_data(shown.select(*cols))).mark_point(
        filled=True, size=70).encode(
        x=x,
        y=alt.Y("rate:Q", title="error rate (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("measure:N", title=""), shape=alt.Shape("measure:N", title=""),
        tooltip=tooltip)
    return alt.layer(points, *layers).properties(width=width, height=height,
                                                 title=alt.Title(title, subtitle=note))


def fmr_fnmr_plot(det: Any, *, points: Any = None, series: Sequence[str] | None = None,
                  styles: Mapping[str, SeriesStyle] | None = None, width: int = WIDTH,
                  height: int = HEIGHT,
                  title: str = "FNMR against FMR (log axes)"
                  ) -> alt.LayerChart | alt.FacetChart:
    """The DET as biometric evaluations draw it: FNMR against FMR, both on log axes.

    Parameters
    ----------
    det
        A DET frame (``pfa`` = FMR, ``pmiss`` = FNMR, optional group columns), e.g. the
        steppy curve of :func:`scoreframe.det_curve`. Points with a rate of 0 cannot be drawn
        on a log axis and are left out (the subtitle says so).
    points
        Optional FNMR-at-FMR rows (``reached`` = FMR, ``rate`` = FNMR, ``target``; optional
        ``rate_lo``/``rate_hi`` drawn as vertical bars), marked on the curves.
    series, styles
        Group columns naming a series and the series' colours and dashes.

    See Also
    --------
    scoreframe.metrics.fnmr_at_fmr, scoreframe.views.plots.det_plot

    Examples
    --------
    >>> import polars as pl
    >>> d = pl.DataFrame({"pfa": [0.0, 0.001, 0.01, 0.1], "pmiss": [0.5, 0.2, 0.05, 0.0]})
    >>> fmr_fnmr_plot(d).to_dict()["layer"][0]["encoding"]["x"]["scale"]["type"]
    'log'
    """
    import polars as pl

    df = series_labels(as_polars(det), series)
    order = series_order(df, None)
    style = styles_for(order, styles)
    shown = df.filter((pl.col("pfa") > 0) & (pl.col("pmiss") > 0))
    dropped = df.height - shown.height
    sub = f"{dropped} point(s) with a rate of 0 not drawn" if dropped else "log axes"
    x = alt.X("pfa:Q", title="FMR (false match rate, log scale)",
              scale=alt.Scale(type="log"), axis=alt.Axis(format="~g"))
    y = alt.Y("pmiss:Q", title="FNMR (false non-match rate, log scale)",
              scale=alt.Scale(type="log"), axis=alt.Axis(format="~g"))
    line = alt.Chart(inline_data(shown.select(SERIES, "pfa", "pmiss"))).mark_line(
        interpolate="step-after", clip=True).encode(
        x=x, y=y, order="pfa:Q", **series_encodings(order, style, dash=len(order) > 1),
        tooltip=[f"{SERIES}:N", alt.Tooltip("pfa:Q", format=".3g", title="FMR"),
                 alt.Tooltip("pmiss:Q", format=".4g", title="FNMR")])
    layers: list[Any] = [line]
    if points is not None:
        p = series_labels(as_polars(points), series)
        p = p.filter((pl.col("rate") > 0) & (pl.col("reached") > 0))
        if p.height:
            p = p.rename({"reached": "pfa", "rate": "pmiss"})
            cols = [SERIES, "pfa", "pmiss", "target"]
            layers.append(alt.Chart(inline_data(p.select(cols))).mark_point(
                filled=True, size=60, clip=True).encode(
                x=x, y=y, color=alt.Color(f"{SERIES}:N", legend=None,
                                          scale=alt.Scale(domain=order,
                                                          range=[style[s].color for s in order])),
                tooltip=[f"{SERIES}:N", alt.Tooltip("target:Q", format="g",
                                                    title="FMR target"),
                         alt.Tooltip("pmiss:Q", format=".4g", title="FNMR")]))
            if "rate_lo" in p.columns and p["rate_lo"].drop_nulls().len():
                bars = p.filter(pl.col("rate_lo") > 0)
                if bars.height:
                    layers.append(alt.Chart(inline_data(bars.select(
                        SERIES, "pfa", "rate_lo", "rate_hi"))).mark_rule(clip=True).encode(
                        x=x, y=alt.Y("rate_lo:Q", scale=alt.Scale(type="log")),
                        y2="rate_hi:Q", color=alt.Color(f"{SERIES}:N", legend=None)))
    return alt.layer(*layers).properties(width=width, height=height,
                                         title=alt.Title(title, subtitle=sub))
