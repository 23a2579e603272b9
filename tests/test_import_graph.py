"""The import graph of the package has no cycle: every module, every import statement.

The graph is built by static analysis of every ``.py`` file under ``scoreframe/`` (found by
walking the directory, not from a list): module-level imports and imports inside functions
alike (a function-level import hides a cycle from the interpreter, not from the layering);
only imports under ``if TYPE_CHECKING:`` are left out (they never run). ``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``. Importing a
submodule also runs its parent packages' ``__init__``, but a package importing its own
submodules is how re-exports work, so parent edges are not added.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import scoreframe

PACKAGE = Path(scoreframe.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST):  # noqa: ANN202 - a generator of import nodes
    """Every import node, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _edges(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """Modules imported by ``name`` (with the line of the first such import)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in _statements(ast.parse(path.read_text(), filename=str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            for a in node.names:
                sub = f"{base}.{a.name}"
                targets.append(sub if sub in modules else base)
        for t in targets:
            while t and t not in modules:  # `import scoreframe.x.y` names a module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.setdefault(t, node.lineno)
    return out


def _graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    return {m: _edges(m, p, modules) for m, p in modules.items()}


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_walk_sees_every_module_and_function_level_imports() -> None:
    graph = _graph()
    assert len(graph) > 100
    assert "scoreframe.stats.engine" in graph and "scoreframe.kernels.rocch" in graph
    # function-level imports count (engine imports the out-of-core engine inside a function)
    assert "scoreframe.stats.outofcore" in graph["scoreframe.stats.engine"]


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    g = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert _cycles(g) == [["a", "b", "c"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


def test_no_import_cycle() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    if cycles:
        lines = []
        for comp in cycles:
            inside = set(comp)
            lines.append(" <-> ".join(comp) + ": " + "; ".join(
                f"{m} -> {n} (line {ln})" for m in comp for n, ln in graph[m].items()
                if n in inside))
        pytest.fail("import cycles:\n" + "\n".join(lines))


# --- the layers: each package's docstring declares what it may import --------------------------
TOP_RULES = {"errors": set(), "checks": {"errors"}, "_cached_property": set(), "_cores": set(),
             "_sorting": set()}
#: Top-level modules that import nothing of the package: every layer may use them.
FOUNDATION = {"_cached_property", "_cores", "_sorting"}
MAX_TOP_MODULES = 6


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _declared_rules() -> dict[str, set[str] | None]:
    """``May import: a, b.`` from every subpackage's docstring (None: anything)."""
    rules: dict[str, set[str] | None] = {}
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        lines = [ln for ln in doc.splitlines() if ln.startswith("May import:")]
        assert lines, f"{init}: the docstring has no 'May import:' line"
        text = " ".join(doc[doc.index("May import:"):].split("\n\n")[0].split())
        text = text.removeprefix("May import:").strip()
        if text.startswith("anything"):
            rules[init.parent.name] = None
            continue
        names = text.split("(")[0].rstrip(". ").split(",")
        rules[init.parent.name] = {n.strip().rstrip(".") for n in names if n.strip()}
    return rules


def _violations(graph: dict[str, dict[str, int]],
                rules: dict[str, set[str] | None]) -> list[str]:
    bad = []
    for module, edges in graph.items():
        src = _package_of(module)
        allowed = rules.get(src, TOP_RULES.get(src))
        if src in ("__init__", "__main__"):
            allowed = None
        elif src == "demo":
            allowed = (set(rules) - {"cli"}) | set(TOP_RULES)
        for target, line in edges.items():
            dst = _package_of(target)
            if dst in (src, "__init__") or dst in FOUNDATION or allowed is None:
                continue
            if dst not in allowed:
                bad.append(f"{module}:{line} imports {target} ({src} may import {sorted(allowed)})")
    return bad


def test_every_import_follows_the_declared_layers() -> None:
    rules = _declared_rules()
    assert {"io", "frames", "stats", "kernels", "metrics", "results", "views", "cli"} <= set(rules)
    graph = _graph()
    bad = _violations(graph, rules)
    assert not bad, "\n".join(bad)
    for module in FOUNDATION:  # usable by every layer because it uses none
        assert not graph[f"scoreframe.{module}"], graph[f"scoreframe.{module}"]


def test_the_layer_rule_catches_an_upward_import() -> None:
    """The check can fail: a kernel importing the results layer, stats importing views."""
    graph = {"scoreframe.kernels.x": {"scoreframe.results.evaluate": 3},
             "scoreframe.stats.y": {"scoreframe.views.report": 7, "scoreframe.kernels.z": 8}}
    bad = _violations(graph, _declared_rules())
    assert len(bad) == 2
    assert bad[0].startswith("scoreframe.kernels.x:3 imports scoreframe.results.evaluate")
    assert bad[1].startswith("scoreframe.stats.y:7 imports scoreframe.views.report")


def test_the_package_top_holds_few_modules() -> None:
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= MAX_TOP_MODULES, top
    assert set(TOP_RULES) <= set(top)


def test_importing_the_package_and_its_cli_leaves_heavy_libraries_unloaded() -> None:
    """scipy.stats, scipy.optimize, pandas (via pyarrow.dataset), jsonschema and altair cost
    ~1.5 s of start-up together; they are imported where they are used, so ``import
    scoreframe`` and every CLI command start without them."""
    heavy = ("scipy.stats", "scipy.optimize", "scipy.linalg", "pandas", "pyarrow.dataset",
             "jsonschema", "altair", "dask", "numba")
    code = ("import sys, scoreframe, scoreframe.cli; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""


def test_heavy_optional_modules_load_on_first_use() -> None:
    # DuckDB (SQL inputs), h5py (BOSARIS HDF5), Altair (charts) and numba (replicates) cost
    # ~0.3 s of every start and exit of the CLI when imported with the package
    code = ("import sys, scoreframe; print(' '.join(m for m in "
            "('duckdb', 'h5py', 'altair', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == ""
