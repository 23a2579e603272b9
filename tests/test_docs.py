"""The documentation site covers the public API: every name is in the reference with an example.

The public API is ``scoreframe.__all__`` plus the ``__all__`` of the public subpackages below
(the other packages -- kernels, stats, frames, results, cli -- are layers the library is built
from; what users call from them is re-exported at the top). Every public function and class
has numpydoc sections, a ``See Also`` section naming its neighbours and an ``Examples`` section
whose doctests are run here.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import scoreframe as sf

DOCS = Path(__file__).resolve().parent.parent / "docs"

#: The public subpackages (and the errors module), besides the top level.
PUBLIC_MODULES = ("scoreframe", "scoreframe.io", "scoreframe.metrics", "scoreframe.norm",
                  "scoreframe.identification", "scoreframe.multiclass", "scoreframe.estimators",
                  "scoreframe.views.plots", "scoreframe.errors")


def _public_names() -> dict[str, Any]:
    """``{"module.name": object}`` of every public name (errors: the exception classes)."""
    out: dict[str, Any] = {}
    for mod_name in PUBLIC_MODULES:
        mod = importlib.import_module(mod_name)
        for n in mod.__all__:
            obj = getattr(mod, n)
            if mod_name == "scoreframe.errors" and not (
                    inspect.isclass(obj) and issubclass(obj, BaseException | Warning)):
                continue  # the message helpers serve the library's own errors
            out[f"{mod_name}.{n}"] = obj
    return out


PUBLIC = _public_names()


def _callables() -> dict[str, Any]:
    """Public functions and classes (not modules, constants or exception classes), each once."""
    seen: set[int] = set()
    out: dict[str, Any] = {}
    for name, obj in PUBLIC.items():
        if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue  # documented by their messages and the errors page
        seen.add(id(obj))
        out[name] = obj
    return out


CALLABLES = _callables()


def _reference_names() -> set[str]:
    """Qualified names listed in docs/api.md (``currentmodule`` + autosummary entry)."""
    text = (DOCS / "api.md").read_text()
    names: set[str] = set()
    for block in re.findall(r"```\{eval-rst\}\n(.*?)```", text, re.S):
        cur = re.search(r"\.\. currentmodule:: (\S+)", block)
        mod = cur.group(1) if cur else "scoreframe"
        for items in re.findall(r"\.\. autosummary::\n((?:   .*\n|\n)+)", block):
            names |= {f"{mod}.{ln.strip()}" for ln in items.splitlines()
                      if ln.strip() and not ln.strip().startswith(":")}
    return names


def _resolve(qualified: str) -> object:
    parts = qualified.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(qualified)


def test_every_public_name_is_in_the_api_reference() -> None:
    listed = _reference_names()
    documented = {id(_resolve(n)) for n in listed}
    missing = sorted(n for n, obj in PUBLIC.items()
                     if n not in listed and (inspect.ismodule(obj) or id(obj) not in documented))
    assert missing == [], "public names missing from docs/api.md"
    unknown = []
    for n in sorted(listed):
        try:
            _resolve(n)
        except (ImportError, AttributeError):
            unknown.append(n)
    assert unknown == [], "docs/api.md lists names that scoreframe does not export"


def _doc(obj: object) -> str:
    return inspect.getdoc(obj) or ""


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_every_public_callable_has_an_example(name: str) -> None:
    doc = _doc(CALLABLES[name])
    assert "Examples\n--------" in doc and ">>> " in doc, f"{name} has no runnable example"


@pytest.mark.parametrize("name", sorted(n for n, o in CALLABLES.items() if not inspect.isclass(o)))
def test_every_public_function_documents_its_parameters(name: str) -> None:
    obj = CALLABLES[name]
    doc = _doc(obj)
    params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
    assert not params or "Parameters\n----------" in doc, f"{name} has no Parameters section"
    # numpydoc order: Parameters, Returns, ..., See Also, Notes, References, Examples
    order = [doc.find(f"\n{s}\n") for s in ("Parameters", "Returns", "See Also", "Examples")]
    present = [i for i in order if i >= 0]
    assert present == sorted(present), f"{name}: numpydoc sections out of order"


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_every_public_callable_has_a_see_also_section(name: str) -> None:
    doc = _doc(CALLABLES[name])
    m = re.search(r"See Also\n--------\n(.*?)(?:\n\n[A-Z][a-z]+( [A-Z][a-z]+)?\n-+\n|\Z)", doc,
                  re.S)
    assert m and m.group(1).strip(), f"{name} has no See Also section"
    # each entry names something that exists (relative to the object's module or absolute)
    mods = [importlib.import_module(CALLABLES[name].__module__),  # where it is defined
            importlib.import_module(name.rpartition(".")[0]), sf]  # where it is public
    for entry in re.findall(r"^(\S[^:\n]*?)(?:\s:.*)?$", m.group(1), re.M):
        for target in (t.strip().strip("`") for t in entry.split(",")):
            if not target:
                continue
            found = any(hasattr(mod, target.split(".")[0]) for mod in mods)
            if not found:
                try:
                    _resolve(target)
                    found = True
                except (ImportError, AttributeError):
                    found = False
            assert found, f"{name}: See Also names `{target}`, which does not resolve"


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_every_public_example_runs(name: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    obj = CALLABLES[name]
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    globs = dict(vars(importlib.import_module(obj.__module__)))
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name, globs=globs)
             if t.examples]
    assert tests, f"{name}: no doctest found"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{name}: {res.failed} of {res.attempted} examples failed"


def test_every_page_is_in_a_toctree() -> None:
    pages = {p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md")
             if "_build" not in p.parts and "generated" not in p.parts
             and "jupyter_execute" not in p.parts}
    linked: set[str] = {"index"}
    for p in DOCS.rglob("*.md"):
        for block in re.findall(r"```\{toctree\}\n((?:.*\n)*?)```", p.read_text()):
            for ln in block.splitlines():
                ln = ln.strip()
                if ln and not ln.startswith(":"):
                    base = p.parent.relative_to(DOCS)
                    linked.add((base / ln).as_posix().replace("guide/../", ""))
    assert pages - linked == set(), "pages that no toctree reaches"
