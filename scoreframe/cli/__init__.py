"""The ``scoreframe`` command line: one small module per command, shared options in one place.

``main`` runs it, ``run`` runs it as its own process (the ``scoreframe`` entry point and
``python -m scoreframe``); ``build_parser`` assembles the parser from the
command modules (:mod:`~scoreframe.cli.convert`, :mod:`~scoreframe.cli.evaluate`, ...), which
build their options from the parent parsers of :mod:`~scoreframe.cli.options`.

May import: anything in the package (it is the top of the layers).
"""

from __future__ import annotations

from scoreframe.cli.main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
