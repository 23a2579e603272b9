"""Charts that display in Jupyter without a network: inline SVG rendered by vl-convert.

Altair's default Jupyter output is HTML that loads Vega from a CDN, so a notebook opened
offline (or on a cluster node without internet) shows blank charts. Importing
:mod:`scoreframe.views.plots` registers the ``"scoreframe"`` Altair renderer and enables it when
Altair's ``"default"`` renderer is active (a renderer the user chose is left alone): every
chart then displays as ``image/svg+xml`` rendered locally by vl-convert, with a short
``text/plain`` stand-in for terminals. :func:`enable_offline_display` and
:func:`disable_offline_display` switch it explicitly.
"""

from __future__ import annotations

from typing import Any

import altair as alt
from altair.vegalite.v6.display import VEGALITE_MIME_TYPE

__all__ = ["RENDERER", "disable_offline_display", "enable_offline_display",
           "offline_renderer"]

#: Name of the offline renderer in ``altair.renderers``.
RENDERER = "scoreframe"


def offline_renderer(spec: dict[str, Any], *, interactive: bool = False,
                     **metadata: Any) -> dict[str, Any]:
    """MIME bundle of a Vega-Lite spec: inline SVG (no script, no network) and a text stand-in.

    With ``interactive=True`` the Vega-Lite spec is added under Altair's Vega-Lite MIME type,
    for front ends that render it with a bundled Vega (tooltips); the others show the SVG.

    Examples
    --------
    >>> spec = alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q").to_dict()
    >>> bundle = offline_renderer(spec)
    >>> bundle["image/svg+xml"].startswith("<svg"), bundle["text/plain"]
    (True, '<chart: untitled>')
    """
    del metadata
    import vl_convert as vlc

    title = spec.get("title")
    if isinstance(title, dict):
        title = title.get("text")
    if title is None:  # a concatenation: the first view's title
        views = spec.get("hconcat") or spec.get("vconcat") or spec.get("concat") or [{}]
        title = views[0].get("title")
        title = title.get("text") if isinstance(title, dict) else title
    bundle: dict[str, Any] = {"image/svg+xml": vlc.vegalite_to_svg(spec),
                              "text/plain": f"<chart: {title or 'untitled'}>"}
    if interactive:
        bundle[VEGALITE_MIME_TYPE] = spec
    return bundle


def enable_offline_display(*, force: bool = False, interactive: bool = False) -> None:
    """Register the offline renderer and enable it (if Altair's default is active, or ``force``).

    ``interactive`` also attaches the Vega-Lite spec to every output (see
    :func:`offline_renderer`); outputs then grow by the size of the spec.

    Parameters
    ----------
    force
        Enable it even when another renderer than Altair's default is active.
    interactive
        Attach the Vega-Lite spec to every output.

    See Also
    --------
    disable_offline_display : The reverse.
    save_chart : Write a chart to a file.

    Examples
    --------
    >>> import altair as alt
    >>> enable_offline_display(force=True)
    >>> alt.renderers.active
    'scoreframe'
    """
    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, offline_renderer)
    if force or interactive or alt.renderers.active == "default":
        alt.renderers.enable(RENDERER, interactive=interactive)


def disable_offline_display() -> None:
    """Go back to Altair's default renderer (HTML loading Vega from a CDN).

    See Also
    --------
    enable_offline_display : The reverse.

    Examples
    --------
    >>> import altair as alt
    >>> disable_offline_display()
    >>> alt.renderers.active
    'default'
    >>> enable_offline_display(force=True)  # back to the offline renderer
    """
    if alt.renderers.active == RENDERER:
        alt.renderers.enable("default")
