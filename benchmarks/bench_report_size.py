"""Report size and time beside `evaluate` (issue 22 target 4), 10^7 trials x 20 conditions.

Run: ``python benchmarks/bench_report_size.py [--trials N]``. A ``scoreframe synth`` dataset
(one system, 20 conditions) is evaluated and reported by ``condition`` from the command line,
each in a fresh process, in the same run: ``evaluate``, ``report``, and ``report --forensic``.
Targets: the HTML <= 2 MB (<= 4 MB with the spoofing and forensic sections) and the report's
time <= 1.5x the evaluation's. Written to the ``report_size`` section of
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import synth_dataset, write_section

HERE = Path(__file__).parent
DATA = HERE / "data"


def run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and the peak memory (MB) of one CLI run in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "scoreframe", *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=float, default=1e7)
    n = int(ap.parse_args().trials)
    dataset = synth_dataset(n, DATA)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ev, _ = run(["evaluate", str(dataset), "--by", "condition", "-o", f"{tmp}/r.json"])
        for label, extra in (("report", []), ("report --forensic", ["--forensic"])):
            out = Path(tmp) / f"{len(rows)}.html"
            sec, _ = run(["report", str(dataset), "--by", "condition", *extra, "-o", str(out)])
            rows.append((label, sec, out.stat().st_size / 1e6))
    lines = [f"| {label} | {sec:.1f} | {sec / ev:.2f}x | {mb:.2f} |" for label, sec, mb in rows]
    text = f"""## Report size and time (`bench_report_size.py`, issue 22 target 4)

{n:.0e} trials (`scoreframe synth`, one system, 20 conditions), by `condition`; every command
in a fresh process, in the same run. `evaluate` took {ev:.1f} s.

| command | time (s) | x evaluate | HTML (MB) |
| --- | ---: | ---: | ---: |
{chr(10).join(lines)}

Targets: HTML <= 2 MB ({'met' if rows[0][2] <= 2 else 'not met'}), <= 4 MB with the forensic
section ({'met' if rows[1][2] <= 4 else 'not met'}); time <= 1.5x evaluate
({'met' if rows[0][1] <= 1.5 * ev else 'not met'}). Before this round the same report was
5.2-5.6 MB. Measured {time.strftime('%Y-%m-%d')} on a 2-core machine shared with other jobs.
"""
    print(text)
    write_section(HERE / "RESULTS.md", "report_size", text)


if __name__ == "__main__":
    main()
