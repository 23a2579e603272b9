"""The documentation site covers the public API: every name is in the reference with an example."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import scoreframe as sf

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _reference_names() -> set[str]:
    text = (DOCS / "api.md").read_text()
    names: set[str] = set()
    for block in re.findall(r"\.\. autosummary::\n((?:   .*\n|\n)+)", text):
        names |= {ln.strip() for ln in block.splitlines()
                  if ln.strip() and not ln.strip().startswith(":")}
    return names


def test_every_public_name_is_in_the_api_reference() -> None:
    listed = _reference_names()
    public = set(sf.__all__)
    assert public - listed == set(), "public names missing from docs/api.md"
    extra = {n for n in listed - public
             if not hasattr(sf, n) and importlib.util.find_spec(f"scoreframe.{n}") is None}
    assert extra == set(), "docs/api.md lists names that scoreframe does not export"


@pytest.mark.parametrize("name", sorted(sf.__all__))
def test_every_public_callable_has_an_example(name: str) -> None:
    obj = getattr(sf, name)
    if inspect.ismodule(obj) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
        pytest.skip("modules and exception classes are documented by their members/messages")
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc and ">>> " in doc, f"{name} has no runnable example"


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
