"""Vega-Lite without Altair: the charts' look, their data, and the offline JavaScript bundle.

Views layer, importing numpy, Polars and the kernels' ``probit`` only (never Altair, so a
report written from plain Vega-Lite dicts does not pay Altair's import). Here live the
constants and helpers both ways of building a chart share: the Altair charts of
:mod:`scoreframe.views.plots` (which re-export the public names) and the dicts of
:mod:`scoreframe.views._group_specs` and :mod:`scoreframe.views._summary_specs`: series
labels and their one colour + dash (:func:`series_scale`), display rows and decimation, the
probit axis of DET plots, the small dict builders of Vega-Lite channels and marks, and the
Vega/Vega-Lite/vega-embed script of offline pages (:func:`javascript_bundle`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from scoreframe.kernels.elementary import probit

__all__ = ["CACHE_ENV", "COLORS", "DASHES", "DET_BOX", "DET_TICKS", "HEIGHT", "LN10",
           "MEASURE_DASHES", "MEASURE_WIDTHS", "NON_GROUP", "OFF_SCALE", "POINT_SHAPES", "SERIES",
           "WIDTH", "SeriesStyle", "as_polars", "dcf_markers", "det_axis_options", "det_ticks",
           "display_decimate", "display_rows", "group_cols", "javascript_bundle", "long_format",
           "omitted_note", "prior_label", "series_labels", "series_order", "series_scale",
           "styles_for", "thin_rows", "uniform_grid", "DEFAULT_CONFIG", "DEFAULT_SCHEMA",
           "DEFAULTS_ALTAIR", "field", "legend_dict", "legend_options", "mark", "vega_top"]

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


def series_order(df: pl.DataFrame, by: str | None) -> list[str]:
    """Series labels in order of first appearance, or sorted by the first value of ``by``."""
    if by is None or by not in df.columns:
        return df[SERIES].unique(maintain_order=True).to_list()
    first = df.group_by(SERIES, maintain_order=True).agg(pl.col(by).first())
    return first.sort(by, nulls_last=True)[SERIES].to_list()


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


def det_axis_options(title: str, lo: float, hi: float, *, length_px: float
                     ) -> dict[str, Any]:
    """A probit axis labelled in percent at every standard DET tick inside ``(lo, hi)``.

    The options of a Vega-Lite axis, keys in alphabetical order (as Altair writes them):
    explicit tick ``values`` with a ``labelExpr`` giving each tick's percentage, and no label
    dropped for overlap.

    >>> det_axis_options("x", 0.01, 0.5, length_px=300)["tickCount"]
    5
    """
    ticks = det_ticks(lo, hi, length_px=length_px)
    vals = [float(probit(t)) for t in ticks]
    # thresholds halfway between ticks: the label of the nearest tick, whatever the rounding
    cuts = [*((a + b) / 2 for a, b in zip(vals, vals[1:], strict=False)), np.inf]
    expr = " : ".join(f"datum.value < {c:.6f} ? '{100 * t:g}'" for c, t in
                      zip(cuts[:-1], ticks, strict=False))
    expr = f"{expr} : '{100 * ticks[-1]:g}'" if ticks else "''"
    if len(ticks) == 1:
        expr = f"'{100 * ticks[0]:g}'"
    return {"grid": True, "labelExpr": expr, "labelFlush": False, "labelOverlap": False,
            "tickCount": len(vals), "title": title, "values": vals}


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

#: Marker shape of the DCF operating points of each prior, in the order the priors appear.
POINT_SHAPES = ("circle", "square", "triangle-up", "diamond", "triangle-down", "cross",
                "triangle-left", "triangle-right")


def display_decimate(df: pl.DataFrame, *, cell: float,
                     box: tuple[float, float, float, float] | None = None) -> pl.DataFrame:
    """Keep about one steppy-curve point per ``cell`` x ``cell`` probit cell, per series.

    The first and last point of every run of points inside one cell are kept, and every
    steppy point that is also a ROCCH row of its series (the hull vertices), so the drawn shape
    moves by less than a cell (under a pixel at the default cell size). With ``box``
    (``(xlo, xhi, ylo, yhi)`` in probit units) the points outside the box share one cell per
    outer region (left, right, below, above and the corners): a chord between two points of
    one region stays in that convex region, so nothing visible changes while the long tails
    outside the box shrink to their end points. ROCCH rows are kept.
    """
    if cell <= 0 or df.height < 3:
        return df
    hull = df.filter(pl.col("curve") == "rocch").select(SERIES, "pfa", "pmiss").unique()
    df = df.with_row_index("_row").join(
        hull.with_columns(_on_hull=pl.lit(True)), on=[SERIES, "pfa", "pmiss"], how="left",
        nulls_equal=True).sort("_row").with_columns(pl.col("_on_hull").fill_null(False))
    parts = []
    for (_, kind), part in df.partition_by([SERIES, "curve"], as_dict=True,
                                           maintain_order=True).items():
        if kind != "steppy" or part.height < 3:
            parts.append(part)
            continue
        keep = _runs_kept(part["probit_pfa"].to_numpy(), part["probit_pmiss"].to_numpy(),
                          part["_on_hull"].to_numpy(), cell, box)
        parts.append(part.filter(pl.Series(keep)))
    return pl.concat(parts).sort("_row").drop("_row", "_on_hull")


def _runs_kept(x: np.ndarray, y: np.ndarray, hull: np.ndarray, cell: float,
               box: tuple[float, float, float, float] | None) -> np.ndarray:
    """Mask: first and last point of each run of equal cells, hull points, both ends."""
    fx = np.floor(np.clip(x, -1e6, 1e6) / cell)
    fy = np.floor(np.clip(y, -1e6, 1e6) / cell)
    code = np.zeros(x.shape[0], dtype=np.int8)
    if box is not None:
        xlo, xhi, ylo, yhi = box
        code = ((x < xlo) * 1 + (x > xhi) * 2 + (y < ylo) * 4 + (y > yhi) * 8).astype(np.int8)
        fx = np.where(code > 0, 0.0, fx)
        fy = np.where(code > 0, 0.0, fy)
    change = np.ones(x.shape[0], dtype=bool)
    same = (code[1:] == code[:-1]) & (fx[1:] == fx[:-1]) & (fy[1:] == fy[:-1])
    change[1:] = ~same
    change[:-1] |= ~same
    change[0] = change[-1] = True  # both ends of the path, whatever their cells
    keep: np.ndarray = change | (hull & (code == 0))
    return keep


def prior_label(p: float) -> str:
    return f"{p:g}"


def omitted_note(omitted: Sequence[str], width: int) -> list[str]:
    """Subtitle lines naming the DCF points outside the box (whole items per line)."""
    note = ["DCF points outside the box, not drawn:"]
    for item in omitted:  # about one character per 6 px
        if len(note[-1]) + len(item) + 2 > max(40, width // 6):
            note.append(item)
        else:
            note[-1] += (" " if note[-1].endswith(":") else "; ") + item
    return note


def dcf_markers(pts: pl.DataFrame, names: Mapping[str, str],
                box: tuple[float, float, float, float]
                ) -> tuple[dict[str, pl.DataFrame], list[str], list[str]]:
    """The DCF markers of a DET plot: the rows drawn per kind, the priors' labels, those left out.

    ``pts`` are operating points with a ``series`` column; only the series of ``names`` are
    drawn. Returns ``{"min": rows, "act": rows}`` (the non-empty kinds, in that order, rows
    inside the ``box`` with their ``prior`` and ``marker`` labels), the labels of every prior
    (in order of appearance: the marker shapes' domain), and the points outside the box, named
    for the subtitle (``"act @0.001 of A, B"``).
    """
    xlo, xhi, ylo, yhi = box
    pts = pts.filter(pl.col(SERIES).is_in(list(names)))
    pts = pts.select(SERIES, *[c for c in ("p_target", "kind", "pfa", "pmiss", "probit_pfa",
                                           "probit_pmiss", "dcf_norm") if c in pts.columns])
    if not pts.height:
        return {}, [], []
    if "probit_pfa" not in pts.columns:
        pts = pts.with_columns(probit_pfa=pl.Series(probit(pts["pfa"].to_numpy())),
                               probit_pmiss=pl.Series(probit(pts["pmiss"].to_numpy())))
    priors = [prior_label(float(p)) for p in pts["p_target"].unique(maintain_order=True)]
    inside = (pl.col("probit_pfa").is_between(xlo, xhi)
              & pl.col("probit_pmiss").is_between(ylo, yhi))
    out = pts.filter(~inside).group_by("kind", "p_target", maintain_order=True).agg(
        pl.col(SERIES))
    several = len(names) > 1
    omitted = [f"{r['kind']} @{prior_label(r['p_target'])}"
               + ((f" of {', '.join(r[SERIES])}" if len(r[SERIES]) <= 2
                   else f" ({len(r[SERIES])} series)") if several else "")
               for r in out.iter_rows(named=True)]
    pts = pts.filter(inside).with_columns(
        prior=pl.col("p_target").map_elements(prior_label, return_dtype=pl.String),
        marker=pl.format("{} DCF @ p_target={}", pl.col("kind"), pl.col("p_target")))
    keep = [SERIES, "prior", "marker", "kind", "pfa", "pmiss", "probit_pfa", "probit_pmiss"]
    keep += ["dcf_norm"] if "dcf_norm" in pts.columns else []
    kinds = {kind: part for kind in ("min", "act")
             if (part := pts.filter(pl.col("kind") == kind).select(keep)).height}
    return kinds, priors, omitted


LN10 = math.log(10.0)


def thin_rows(df: pl.DataFrame, *, max_points: int, keep: pl.Expr | None = None) -> pl.DataFrame:
    """At most about ``max_points`` rows per series, evenly spaced in row order.

    The first and last row of each series (and rows where ``keep`` is true) are always kept;
    display only (a pixel holds many sweep points).

    Examples
    --------
    >>> df = pl.DataFrame({"series": ["a"] * 10, "x": range(10)})
    >>> thin_rows(df, max_points=4)["x"].to_list()
    [0, 3, 6, 9]
    """
    idx = pl.int_range(pl.len()).over(SERIES)
    n = pl.len().over(SERIES)
    step = ((n + max_points - 1) // max_points).clip(lower_bound=1)
    cond = (idx % step == 0) | (idx == n - 1)
    if keep is not None:
        cond = cond | keep
    return df.filter(cond)


def uniform_grid(x: pl.Series) -> bool:
    """Whether the distinct values of ``x`` are evenly spaced (to 1e-9 of the step), >= 3 of them.

    Examples
    --------
    >>> uniform_grid(pl.Series([0.0, 0.5, 1.0, 0.5])), uniform_grid(pl.Series([0.0, 0.5, 2.0]))
    (True, False)
    """
    v = np.unique(x.drop_nulls().to_numpy().astype(np.float64))
    if v.shape[0] < 3 or not np.all(np.isfinite(v)):
        return False
    step = np.diff(v)
    return bool(np.all(np.abs(step - step.mean()) <= 1e-9 * step.mean()))


#: Environment variable naming the directory of scoreframe's on-disk cache.
CACHE_ENV = "SCOREFRAME_CACHE_DIR"


def _cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "scoreframe"


@functools.cache
def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, for offline HTML (from vl-convert).

    Bundling takes seconds, so the script is kept for the process and on disk (in
    ``$SCOREFRAME_CACHE_DIR``, else ``$XDG_CACHE_HOME/scoreframe`` or ``~/.cache/scoreframe``),
    keyed by the vl-convert version; an unwritable cache directory only costs the time.
    """
    import vl_convert as vlc

    path = _cache_dir() / f"vl-convert-{version('vl-convert-python')}-bundle.js"
    try:
        text = path.read_text(encoding="utf-8")
        if "vegaEmbed" in text:
            return text
    except OSError:
        pass
    text = vlc.javascript_bundle(None)  # type: ignore[arg-type]  # None: the whole bundle
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return text


# ---------------------------------------------------------------- Vega-Lite dicts
def field(name: str, kind: str, **extra: Any) -> dict[str, Any]:
    """A channel ``{"field", ..., "type"}`` with Altair's alphabetical key order."""
    return dict(sorted({"field": name, "type": kind, **extra}.items()))


def legend_options(title: str | None, **kw: Any) -> dict[str, Any]:
    """The options of a legend whose symbols are short strokes (showing the dash)."""
    opts: dict[str, Any] = {"symbolType": "stroke", "symbolStrokeWidth": 2, "symbolSize": 500,
                            "labelLimit": 260, "orient": "right", "title": title}
    return opts | kw


def legend_dict(title: str | None, **kw: Any) -> dict[str, Any]:
    """:func:`legend_options` as Altair writes them (keys in alphabetical order)."""
    return dict(sorted(legend_options(title, **kw).items()))


def mark(kind: str, **props: Any) -> dict[str, Any]:
    """A mark ``{"type": kind, ...}``, its properties in Altair's alphabetical order."""
    return {"type": kind, **dict(sorted(props.items()))}


#: What Altair's default theme adds to every top-level chart: ``config``, and the ``$schema``
#: of the Vega-Lite version it writes, as Altair :data:`DEFAULTS_ALTAIR` writes them (a test
#: checks both against the installed Altair).
DEFAULT_CONFIG: dict[str, Any] = {"view": {"continuousWidth": 300, "continuousHeight": 300}}
DEFAULT_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
DEFAULTS_ALTAIR = "6.3.0"


def vega_top() -> tuple[dict[str, Any], str] | None:
    """The top-level ``config`` and ``$schema`` of a chart, or None (a theme adds more).

    Without Altair imported in this process no theme can have been chosen: the default
    theme's, which for the Altair version these constants come from (:data:`DEFAULTS_ALTAIR`)
    are :data:`DEFAULT_CONFIG` and :data:`DEFAULT_SCHEMA`, read without importing it. Otherwise
    (Altair already imported, or another version installed, whose schema may differ), what
    Altair writes for a one-mark chart under the active theme: None when that has keys
    beyond these two.
    """
    if "altair" not in sys.modules and _altair_version() == DEFAULTS_ALTAIR:
        return json.loads(json.dumps(DEFAULT_CONFIG)), DEFAULT_SCHEMA
    import altair as alt  # noqa: PLC0415 - the active theme and version decide

    spec = alt.LayerChart(layer=[alt.Chart(alt.Data(values=[{"x": 0}])).mark_point()]
                          ).to_dict(validate=False)
    if list(spec) != ["config", "layer", "data", "$schema"]:  # (the one layer's data moved up)
        return None
    return spec["config"], spec["$schema"]


@functools.cache
def _altair_version() -> str:
    return version("altair")
