"""Deprecated import path of :mod:`scoreframe.io.atomic` (kept until every importer migrates)."""

from __future__ import annotations

from scoreframe.io.atomic import atomic_output, atomic_outputs

__all__ = ["atomic_output", "atomic_outputs"]
