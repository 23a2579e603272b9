"""Shared look of every chart: series labels, one stable colour + dash per series, axes.

Views layer. A *series* is one group (e.g. a system / condition pair), labelled by its group
values joined with `` / ``. Its colour and dash come from its position in one ordered list of
labels (:func:`series_scale`), so the same group looks the same in the DET, NBER, APE and
calibration charts of a report, and every series differs from the others by colour *and* dash
(readable in grayscale and by colour-blind readers: the colours are the Okabe-Ito palette).
Legends draw the stroke itself (``symbolType: "stroke"`` with the dash), not a filled circle.

The probit axes of DET plots carry every standard tick (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 40 %
inside the default box) with explicit ``values``, a ``labelExpr`` in percent and
``labelOverlap=False``, so Vega never drops a label.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import altair as alt
import numpy as np
import polars as pl
from altair.utils.schemapi import debug_mode

from scoreframe.kernels.elementary import probit

__all__ = ["COLORS", "DASHES", "DET_BOX", "DET_TICKS", "HEIGHT", "MEASURE_DASHES",
           "MEASURE_WIDTHS", "OFF_SCALE", "SERIES", "WIDTH", "RowData", "SeriesStyle",
           "as_polars", "det_axis", "det_ticks", "display_rows", "group_cols", "inline_data",
           "legend", "long_format", "measure_encodings", "measures_chart", "series_encodings",
           "series_labels", "series_order", "series_scale", "styles_for"]

#: Standard DET ticks (probabilities); those inside the plot box are labelled, in percent.
DET_TICKS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.6,
             0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999)
#: Default DET box ``(pfa_min, pfa_max, pmiss_min, pmiss_max)``: 0.05 % to 50 % on both axes.
DET_BOX = (0.0005, 0.5, 0.0005, 0.5)
#: Okabe-Ito colours (colour-blind safe; yellow left out for contrast on white).
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#E69F00", "#56B4E9",
          "#999999")
#: Dash patterns told apart in grayscale, solid first.
DASHES = ((1, 0), (6, 3), (2, 2), (8, 3, 2, 3), (12, 4), (4, 4, 1, 4), (1, 3), (10, 2, 2, 2))
WIDTH, HEIGHT = 360, 300
SERIES = "series"
#: Stand-in for an infinite probit or llr: far outside every plot box, so clipped lines leave
#: the box towards it (JSON has no infinity).
OFF_SCALE = 1e3
NON_GROUP = {"curve", "pfa", "pmiss", "probit_pfa", "probit_pmiss", "eer", "dr30_pfa",
             "dr30_pmiss", "probit_dr30_pfa", "probit_dr30_pmiss", "prior_log_odds",
             "p_target", "kind", "dcf_norm", "class", "lo", "hi", "density", "score", "llr",
             "map", "n_tar", "n_non"}


class SeriesStyle(NamedTuple):
    """How one series is drawn: a colour and a dash pattern (``[on, off, ...]`` in pixels).

    See Also
    --------
    series_scale : Colours and dashes from styles.
    series_labels : Series names.

    Examples
    --------
    >>> SeriesStyle("#1f77b4", (6, 3))
    SeriesStyle(color='#1f77b4', dash=(6, 3))
    >>> series_scale(["sys1", "sys2"])["sys1"] == series_scale(["sys1"])["sys1"]
    True
    """

    color: str
    dash: tuple[int, ...]


def series_scale(labels: Sequence[str]) -> dict[str, SeriesStyle]:
    """One colour and dash per label, from the label's position in ``labels``.

    Pass the same ordered labels to every chart of a report (``styles=``) and a group keeps
    its look across all of them. The first 64 labels all differ in the (colour, dash) pair:
    the dash advances with the colour and shifts by one after each full cycle of colours.

    Parameters
    ----------
    labels
        The series labels, in the order that fixes their styles.

    Returns
    -------
    dict of str to SeriesStyle
        One style per label.

    See Also
    --------
    series_labels : The series names.
    SeriesStyle : One series' style.

    Examples
    --------
    >>> s = series_scale(["A", "B"])
    >>> s["A"].color != s["B"].color and s["A"].dash != s["B"].dash
    True
    """
    out: dict[str, SeriesStyle] = {}
    for label in labels:
        if label in out:
            continue
        i = len(out)
        out[label] = SeriesStyle(COLORS[i % len(COLORS)],
                                 DASHES[(i + i // len(COLORS)) % len(DASHES)])
    return out


def styles_for(labels: Sequence[str], styles: Mapping[str, SeriesStyle] | None
               ) -> dict[str, SeriesStyle]:
    """``styles`` completed for ``labels``: unknown labels get the next free styles."""
    known = dict(styles or {})
    extra = [lb for lb in labels if lb not in known]
    if not extra:
        return known
    full = series_scale([*known, *extra])
    return {**known, **{lb: full[lb] for lb in extra}}


def as_polars(df: Any) -> pl.DataFrame:
    """A curve frame as a Polars DataFrame (pandas DataFrames and pyarrow Tables converted)."""
    if isinstance(df, pl.DataFrame):
        return df
    if isinstance(df, pl.LazyFrame):
        return df.collect()
    out = pl.from_pandas(df) if type(df).__module__.startswith("pandas") else pl.from_arrow(df)
    if not isinstance(out, pl.DataFrame):  # a pyarrow array gives a Series
        out = out.to_frame()
    return out


def group_cols(df: pl.DataFrame, series: Sequence[str] | None) -> list[str]:
    """The columns naming a series: ``series`` if given, else the leading string columns."""
    if series is not None:
        return list(series)
    cols: list[str] = []
    for c in df.columns:
        if c in NON_GROUP or df.schema[c] not in (pl.String, pl.Categorical, pl.Enum):
            if cols or c in NON_GROUP:
                break
            continue
        cols.append(c)
    return cols


def series_labels(df: pl.DataFrame, series: Sequence[str] | None = None) -> pl.DataFrame:
    """Add a ``series`` column: the group columns' values joined by ``" / "``.

    Parameters
    ----------
    df
        A curve or result frame.
    series
        Group columns naming the series (default: all group columns).

    Returns
    -------
    polars.DataFrame
        ``df`` with a ``series`` column.

    See Also
    --------
    series_scale : Their colours.
    SeriesStyle : One series' style.

    Examples
    --------
    >>> df = pl.DataFrame({"system": ["a"], "gender": ["f"], "pfa": [0.1]})
    >>> series_labels(df)["series"].to_list()
    ['a / f']
    """
    df = as_polars(df)
    cols = group_cols(df, series)
    if SERIES in df.columns:
        return df
    if not cols:
        return df.with_columns(pl.lit("scores").alias(SERIES))
    return df.with_columns(pl.concat_str([pl.col(c).cast(pl.String).fill_null("∅")
                                          for c in cols], separator=" / ").alias(SERIES))


class RowData(alt.Data):
    """Inline rows that Altair neither deep-copies nor walks element by element.

    The rows are plain JSON values (numbers, strings, None) made by :func:`inline_data`; Altair
    would otherwise copy them on every chart operation and check each value in ``to_dict``
    (seconds for a report's charts).
    """

    def __deepcopy__(self, memo: object = None) -> RowData:
        return self

    def to_dict(self, validate: bool = True, *, ignore: list[str] | None = None,
                context: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{"values": rows}``, the rows as they are (no copy, no per-value checks)."""
        return {"values": self._kwds["values"]}


def display_rows(df: pl.DataFrame, *, digits: int = 5) -> list[dict[str, Any]]:
    """The rows of ``df`` as charts embed them (see :func:`inline_data`).

    Examples
    --------
    >>> display_rows(pl.DataFrame({"s": ["a"], "x": [1 / 3], "y": [float("inf")]}))
    [{'s': 'a', 'x': 0.33333, 'y': 1000.0}]
    """
    exprs = []
    for c, t in df.schema.items():
        if t in (pl.Float32, pl.Float64):
            col = pl.col(c).fill_nan(None)
            col = pl.when(col.is_infinite()).then(col.sign() * OFF_SCALE).otherwise(col)
            exprs.append(col.round_sig_figs(digits).alias(c))
    clean = df.with_columns(exprs) if exprs else df
    return clean.to_dicts()


def inline_data(df: pl.DataFrame, *, digits: int = 5) -> alt.Data:
    """Inline data without Altair's row guard (rows are already at display resolution).

    Floats are rounded to ``digits`` significant digits (far below a pixel; it keeps notebook
    outputs and reports small), NaN becomes null and infinities become ``±OFF_SCALE``.
    """
    rows = display_rows(df, digits=digits)
    with debug_mode(False):  # the rows are plain numbers and strings: skip per-row validation
        return RowData(values=rows)  # type: ignore[no-untyped-call]  # alt.Data.__init__ has no annotations


def series_order(df: pl.DataFrame, by: str | None) -> list[str]:
    """Series labels in order of first appearance, or sorted by the first value of ``by``."""
    if by is None or by not in df.columns:
        return df[SERIES].unique(maintain_order=True).to_list()
    first = df.group_by(SERIES, maintain_order=True).agg(pl.col(by).first())
    return first.sort(by, nulls_last=True)[SERIES].to_list()


def legend(title: str | None, **kw: Any) -> alt.Legend:
    """A legend whose symbols are short strokes (showing the dash), not filled circles."""
    opts: dict[str, Any] = {"symbolType": "stroke", "symbolStrokeWidth": 2, "symbolSize": 500,
                            "labelLimit": 260, "orient": "right"}
    return alt.Legend(title=title, **(opts | kw))


def series_encodings(order: Sequence[str], styles: Mapping[str, SeriesStyle], *,
                     names: Mapping[str, str] | None = None, title: str = "",
                     dash: bool = True) -> dict[str, Any]:
    """``color`` (and ``strokeDash``) encodings of the ``series`` field with fixed ranges.

    ``order`` are the series labels (as in the data, and the style keys) in legend order;
    ``names`` optional legend texts for them (e.g. with the EER appended), applied by a legend
    ``labelExpr`` so the data rows keep the short labels. Colour and dash share one legend
    whose symbols are dashed strokes.
    """
    order = list(order)
    kw: dict[str, Any] = {}
    if names:
        table = json.dumps({s: names[s] for s in order if s in names})
        kw["labelExpr"] = f"{table}[datum.label] || datum.label"
    lg = legend(title or None, **kw)
    enc: dict[str, Any] = {"color": alt.Color(f"{SERIES}:N", sort=order, legend=lg, scale=alt.Scale(
        domain=order, range=[styles[s].color for s in order]))}
    if dash:
        enc["strokeDash"] = alt.StrokeDash(f"{SERIES}:N", sort=order, legend=lg, scale=alt.Scale(
            domain=order, range=[list(styles[s].dash) for s in order]))
    return enc


def det_ticks(lo: float, hi: float, *, length_px: float, min_px: float = 14.0) -> list[float]:
    """Standard DET ticks strictly inside ``(lo, hi)``, at least ``min_px`` pixels apart.

    At the default size and box every standard tick fits (the closest pair, 0.1 and 0.2 %, is
    19 px apart on a 300 px axis); on a crowded axis the later ticks of a close pair are left out.
    """
    plo, phi = float(probit(lo)), float(probit(hi))
    out: list[float] = []
    last = -math.inf
    for t in DET_TICKS:
        if not lo < t < hi:
            continue
        pos = (float(probit(t)) - plo) / (phi - plo) * length_px
        if pos - last >= min_px:
            out.append(t)
            last = pos
    return out


def det_axis(title: str, lo: float, hi: float, *, length_px: float) -> alt.Axis:
    """A probit axis labelled in percent at every standard DET tick inside ``(lo, hi)``."""
    ticks = det_ticks(lo, hi, length_px=length_px)
    vals = [float(probit(t)) for t in ticks]
    # thresholds halfway between ticks: the label of the nearest tick, whatever the rounding
    cuts = [*((a + b) / 2 for a, b in zip(vals, vals[1:], strict=False)), np.inf]
    expr = " : ".join(f"datum.value < {c:.6f} ? '{100 * t:g}'" for c, t in
                      zip(cuts[:-1], ticks, strict=False))
    expr = f"{expr} : '{100 * ticks[-1]:g}'" if ticks else "''"
    if len(ticks) == 1:
        expr = f"'{100 * ticks[0]:g}'"
    return alt.Axis(values=vals, labelExpr=expr, labelOverlap=False, labelFlush=False,
                    title=title, grid=True, tickCount=len(vals))


def long_format(df: pl.DataFrame, measures: dict[str, str]) -> pl.DataFrame:
    """Unpivot the ``measures`` columns into ``measure`` (display names) and ``value``."""
    keep = [c for c in df.columns if c not in measures]
    return df.unpivot(on=list(measures), index=keep, variable_name="measure",
                      value_name="value").with_columns(
        pl.col("measure").replace_strict(measures))


#: Dashes of the measures of one series when a chart has a single series.
MEASURE_DASHES = ((1, 0), (6, 3), (2, 2), (8, 3, 2, 3), (1, 3))
#: Widths of the measures (first = the system's actual curve, drawn boldest).
MEASURE_WIDTHS = (2.4, 1.3, 0.7, 1.0, 1.0)


def measure_encodings(measures: Sequence[str], *, several_series: bool,
                      title: str = "curve") -> dict[str, Any]:
    """Encodings telling the measures of a series apart (actual, minimum, ...).

    With several series the series own colour *and* dash, so measures differ by stroke width
    (the first, boldest, is the system's actual curve); with a single series the measures
    differ by dash and width as in the BOSARIS figures, and the colour stays the series' own.
    """
    widths = [MEASURE_WIDTHS[i % len(MEASURE_WIDTHS)] for i in range(len(measures))]
    lg = legend(title)
    enc: dict[str, Any] = {"strokeWidth": alt.StrokeWidth(
        "measure:N", sort=list(measures), legend=lg,
        scale=alt.Scale(domain=list(measures), range=widths))}
    if several_series and len(measures) > 2:  # a third measure also fades
        enc["opacity"] = alt.Opacity("measure:N", sort=list(measures), legend=lg, scale=alt.Scale(
            domain=list(measures), range=[1.0, 0.9, *[0.55] * (len(measures) - 2)]))
    if not several_series:
        enc["strokeDash"] = alt.StrokeDash("measure:N", sort=list(measures), legend=lg,
                                           scale=alt.Scale(domain=list(measures), range=[
                                               list(MEASURE_DASHES[i % len(MEASURE_DASHES)])
                                               for i in range(len(measures))]))
    return enc


def measures_chart(df: pl.DataFrame, measures: dict[str, str], *,
                   x: str = "prior_log_odds") -> alt.Chart:
    """A chart of the wide frame whose ``measures`` columns Vega folds into ``measure``/``value``.

    The rows stay wide (one per series and grid point, the measures renamed to their display
    names), which keeps the embedded data about half the size of a long frame.
    """
    wide = df.select(SERIES, x, *measures).rename(measures)
    return alt.Chart(inline_data(wide)).transform_fold(list(measures.values()),
                                                       as_=["measure", "value"])
