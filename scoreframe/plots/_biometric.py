"""Biometric verification views: the expected performance curve (EPC).

Draws an :func:`scoreframe.epc_curve` frame: for each weight ``alpha`` of FMR, the HTER (or
the weighted error) on evaluation trials at the threshold chosen on development trials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from scoreframe.errors import ScoreframeError, message
from scoreframe.plots.style import (
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

__all__ = ["epc_plot"]


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
