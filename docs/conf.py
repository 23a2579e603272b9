"""Sphinx configuration of scoreframe's documentation site (built offline by ``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("POLARS_FMT_MAX_COLS", "12")

project = "scoreframe"
author = "the scoreframe developers"
copyright = "2026, the scoreframe developers"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx_design",
]

# MyST-NB: every page with code cells is executed at build time; an error fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 300
nb_execution_show_tb = True
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# numpydoc renders the docstrings; autosummary makes one page per public name.
autosummary_generate = True
autosummary_imported_members = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
autodoc_typehints = "none"
autodoc_default_options = {"members": False}

intersphinx_mapping: dict[str, tuple[str, str | None]] = {}  # offline: no inventories fetched

html_theme = "pydata_sphinx_theme"
html_title = "scoreframe"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": []}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
suppress_warnings = ["myst.xref_missing"] if os.environ.get("SCOREFRAME_DOCS_LAX") else []
