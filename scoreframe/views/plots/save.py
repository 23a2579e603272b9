"""Offline chart export (HTML with the JavaScript bundled in, SVG, PNG, PDF) via vl-convert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt

from scoreframe.errors import UsageError, message
from scoreframe.io.atomic import atomic_output
from scoreframe.views._vega import CACHE_ENV, javascript_bundle

__all__ = ["CACHE_ENV", "FORMATS", "chart_bytes", "javascript_bundle", "save_chart"]


#: File suffixes :func:`save_chart` writes.
FORMATS = (".html", ".htm", ".svg", ".png", ".pdf")


def chart_bytes(chart: alt.TopLevelMixin | dict[str, Any], fmt: str, *,
                scale: float = 2.0) -> bytes:
    """The chart rendered offline as ``fmt`` (``html``, ``svg``, ``png`` or ``pdf``).

    Examples
    --------
    >>> import altair as alt
    >>> chart = alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q")
    >>> chart_bytes(chart, "pdf")[:5]
    b'%PDF-'
    """
    import vl_convert as vlc

    spec = chart if isinstance(chart, dict) else chart.to_dict(validate=False)
    fmt = fmt.lower().lstrip(".")
    if fmt in ("html", "htm"):
        return vlc.vegalite_to_html(spec, bundle=True).encode()
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec).encode()
    if fmt == "png":
        return vlc.vegalite_to_png(spec, scale=scale)
    if fmt == "pdf":
        return vlc.vegalite_to_pdf(spec)
    raise UsageError(message(f"unknown chart format `{fmt}`",
                             expected="html, svg, png or pdf", got=fmt or "no suffix"))


def save_chart(chart: alt.TopLevelMixin, path: str | Path, *, overwrite: bool = False,
               scale: float = 2.0) -> Path:
    """Save a chart offline by suffix: ``.html`` (scripts bundled in), ``.svg``, ``.png``, ``.pdf``.

    No network access is needed (vl-convert renders and bundles locally). The file is written
    atomically; an existing file is replaced only with ``overwrite=True``.
    ``scale`` multiplies the pixel size of PNG output.

    Parameters
    ----------
    chart
        An Altair chart.
    path
        The file; its suffix chooses the format.
    overwrite
        Replace an existing file.
    scale
        Pixel multiplier of PNG output.

    Returns
    -------
    pathlib.Path
        The file written.

    See Also
    --------
    enable_offline_display : Show charts offline in notebooks.
    det_plot : A chart to save.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import altair as alt
    >>> chart = alt.Chart(alt.Data(values=[{"x": 1, "y": 2}])).mark_point().encode(x="x:Q", y="y:Q")
    >>> path = save_chart(chart, pathlib.Path(tempfile.mkdtemp()) / "chart.svg")
    >>> path.name, path.read_text().startswith("<svg")
    ('chart.svg', True)
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(message(f"save_chart: unknown suffix `{suffix}`",
                                 expected="one of " + ", ".join(FORMATS), got=suffix or "none",
                                 where=str(path)))
    with atomic_output(path, overwrite=overwrite) as tmp:  # refuses an existing file first
        tmp.write_bytes(chart_bytes(chart, suffix, scale=scale))
    return path

