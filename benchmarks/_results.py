"""Write one benchmark's section of ``benchmarks/RESULTS.md``, leaving the others in place."""

from __future__ import annotations

import re
from pathlib import Path

HEADER = ("# Benchmark results\n\nEach section is written by the script it names "
          "(`make bench` runs them all).\n")


def write_section(path: str | Path, name: str, text: str) -> None:
    """Replace (or append) the section between ``<!-- begin:name -->`` and ``<!-- end:name -->``."""
    path = Path(path)
    old = path.read_text() if path.exists() else HEADER
    if "<!-- begin:" not in old:  # a file from before sections existed: start over
        old = HEADER
    block = f"<!-- begin:{name} -->\n{text.strip()}\n<!-- end:{name} -->"
    pattern = re.compile(rf"<!-- begin:{name} -->.*?<!-- end:{name} -->", re.S)
    if pattern.search(old):
        new = pattern.sub(lambda _: block, old)
    else:
        new = old.rstrip() + "\n\n" + block
    path.write_text(new.rstrip() + "\n")
