"""Offline chart export (HTML with the JavaScript bundled in, SVG, PNG, PDF) via vl-convert."""

from __future__ import annotations

from pathlib import Path

import altair as alt

from scoreframe.io._atomic import atomic_output

__all__ = ["save_chart"]


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
