"""Offline chart export (HTML with the JavaScript bundled in, SVG, PNG, PDF) via vl-convert."""

from __future__ import annotations

import functools
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import altair as alt

from scoreframe.errors import UsageError, message
from scoreframe.io.atomic import atomic_output

__all__ = ["CACHE_ENV", "FORMATS", "chart_bytes", "javascript_bundle", "save_chart"]

#: Environment variable naming the directory of scoreframe's on-disk cache.
CACHE_ENV = "SCOREFRAME_CACHE_DIR"

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
