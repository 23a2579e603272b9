"""Helpers of the benchmarks: write one section of ``benchmarks/RESULTS.md``; shared data."""

from __future__ import annotations

import re
import subprocess
import sys
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


def synth_dataset(n: int, data: Path) -> Path:
    """A ``scoreframe synth`` dataset of ``n`` trials (one system, 20 conditions), made once."""
    dataset = data / f"synth_{n:.0e}".replace("+", "")
    if not dataset.is_dir():
        subprocess.run([sys.executable, "-m", "scoreframe", "synth", str(dataset), "--trials",
                        str(n), "--systems", "1", "--conditions", "20"], check=True)
    return dataset
