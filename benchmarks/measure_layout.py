"""Layout and API-size figures of docs/architecture.md, for one source tree.

Usage::

    PYTHONPATH=ROOT python benchmarks/measure_layout.py ROOT

prints JSON: modules per folder of ``ROOT/scoreframe``, the size of ``scoreframe.__all__``, the
total over the subpackages' ``__all__`` (and over every module's), and the keyword parameters
(every parameter after the data) of the public entry points. For an older commit, extract it
first: ``git archive 5c72fb8 scoreframe | tar -x -C /tmp/before``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

ENTRY_POINTS = ("evaluate", "compare", "bootstrap_evaluate", "build_report", "tandem_t_dcf",
                "differentials", "identify", "normalize")
#: Where an entry point lives when it is not at the package top (the layout changed).
HOMES = ("scoreframe.views.report", "scoreframe.report", "scoreframe.identification",
         "scoreframe.norm", "scoreframe.results.tandem", "scoreframe.tandem")


def _modules(package: ModuleType) -> list[pkgutil.ModuleInfo]:
    return [m for m in pkgutil.walk_packages(package.__path__, "scoreframe.")
            if not m.name.endswith("__main__")]  # importing __main__ runs the CLI


def _entry_point(package: ModuleType, name: str) -> Any:
    if hasattr(package, name):
        return getattr(package, name)
    for home in HOMES:
        try:
            module = importlib.import_module(home)
        except ImportError:
            continue
        if hasattr(module, name):
            return getattr(module, name)
    return None


def measure(root: Path) -> dict[str, Any]:
    """The figures for the tree at ``root`` (which must be first on ``sys.path``)."""
    package = importlib.import_module("scoreframe")
    assert Path(package.__file__ or "").resolve().is_relative_to(root.resolve()), package
    folders: Counter[str] = Counter()
    for f in (root / "scoreframe").rglob("*.py"):
        parent = str(f.relative_to(root / "scoreframe").parent)
        folders["(top)" if parent == "." else parent] += 1
    subpackages, every_module = {}, 0
    for info in _modules(package):
        module = importlib.import_module(info.name)
        names = len(getattr(module, "__all__", []))
        every_module += names
        if info.ispkg:
            subpackages[info.name] = names
    keywords = {}
    for name in ENTRY_POINTS:
        fn = _entry_point(package, name)
        params = list(inspect.signature(fn).parameters.values())[1:] if fn else []
        keywords[name] = sum(p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                             for p in params) if fn else None
    return {"modules": sum(folders.values()), "folders": dict(sorted(folders.items())),
            "top_all": len(package.__all__), "subpackage_all": sum(subpackages.values()),
            "subpackages": subpackages, "every_module_all": every_module, "keywords": keywords}


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1] if len(sys.argv) > 1 else ".")), indent=1))
