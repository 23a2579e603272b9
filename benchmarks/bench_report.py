"""Time and peak memory of `scoreframe report` on the 5*10^7-trial partitioned dataset.

Run after ``bench_evaluate.py`` (which generates ``benchmarks/data/synth_50000000``):
``python benchmarks/bench_report.py``. Writes the ``report`` section of ``RESULTS.md``. The
report runs in a fresh process; its peak resident memory is read with ``getrusage``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import write_section
from bench_evaluate import machine

HERE = Path(__file__).parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(HERE / "data" / "synth_50000000"))
    ap.add_argument("--output", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    data = Path(a.data)
    if not data.is_dir():
        sys.exit(f"{data} not found: run benchmarks/bench_evaluate.py first")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "scoreframe", "report", str(data), "--by",
                        "condition", "--p-target", "0.01", "0.1", "-o", str(out)], check=True)
        seconds = time.perf_counter() - t
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        size_mb = out.stat().st_size / 1e6
    n = sum(1 for _ in data.glob("*/"))
    text = "\n".join([
        "## HTML report", "",
        f"Machine: {machine()}.", "",
        f"Produced by `python benchmarks/bench_report.py` ({time.strftime('%Y-%m-%d')}): "
        f"`scoreframe report` on the hive-partitioned 5*10^7-trial dataset ({n} condition "
        "partitions, by condition + pooled row, 2 priors) in a fresh process: "
        f"**{seconds:.1f} s**, peak resident memory **{peak_mb:.0f} MB**, report "
        f"{size_mb:.1f} MB (one self-contained file, JavaScript inlined).", "",
        "Target (issue: plots and reports): within the evaluation benchmark's memory limit "
        f"(4 GB): {'met' if peak_mb <= 4096 else 'NOT met'}.", ""])
    write_section(a.output, "report", text)
    print(text)


if __name__ == "__main__":
    main()
