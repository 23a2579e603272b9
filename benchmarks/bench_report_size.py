"""Report size and time beside `evaluate` (issue 22 target 4), 10^7 trials x 20 conditions.

Run: ``python benchmarks/bench_report_size.py [--trials N]``. A ``scoreframe synth`` dataset
(one system, 20 conditions) is evaluated and reported by ``condition`` from the command line,
each in a fresh process, in the same run: ``evaluate``, ``report``, and ``report --forensic``
(``--rounds`` rounds of ``evaluate`` and ``report`` alternated, the median of each;
``--forensic-rounds`` of ``report --forensic``; the load average is recorded).
Targets: the HTML <= 2 MB (<= 4 MB with the spoofing and forensic sections) and the report's
time <= 1.5x the evaluation's. Written to the ``report_size`` section of
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
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
    ap.add_argument("--data", type=Path, default=DATA, help="where the synth dataset is made")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forensic-rounds", type=int, default=1)
    a = ap.parse_args()
    n = int(a.trials)
    dataset = synth_dataset(n, a.data)
    rows = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        evs, reps = [], []
        for i in range(a.rounds):
            evs.append(run(["evaluate", str(dataset), "--by", "condition", "-o",
                            f"{tmp}/r{i}.json"])[0])
            out = Path(tmp) / f"r{i}.html"
            reps.append(run(["report", str(dataset), "--by", "condition", "-o", str(out)])[0])
            loads.append(os.getloadavg()[0])
            print(f"round {i + 1}: evaluate {evs[-1]:.1f} s, report {reps[-1]:.1f} s, "
                  f"load {loads[-1]:.1f}", flush=True)
        ev = statistics.median(evs)
        rows.append(("report", statistics.median(reps), out.stat().st_size / 1e6))
        fors = []
        for i in range(a.forensic_rounds):
            out = Path(tmp) / f"f{i}.html"
            fors.append(run(["report", str(dataset), "--by", "condition", "--forensic", "-o",
                             str(out)])[0])
            loads.append(os.getloadavg()[0])
            print(f"report --forensic {fors[-1]:.1f} s, load {loads[-1]:.1f}", flush=True)
        if fors:
            rows.append(("report --forensic", statistics.median(fors), out.stat().st_size / 1e6))
    lines = [f"| {label} | {sec:.1f} | {sec / ev:.2f}x | {mb:.2f} |" for label, sec, mb in rows]
    text = f"""## Report size and time (`bench_report_size.py`, issue 22 target 4)

{n:.0e} trials (`scoreframe synth`, one system, 20 conditions), by `condition`; every command
in a fresh process, in the same run: {a.rounds} rounds of `evaluate` and `report` alternated
(median; `evaluate` {', '.join(f'{x:.1f}' for x in evs)} s, `report`
{', '.join(f'{x:.1f}' for x in reps)} s), `report --forensic` {a.forensic_rounds} time(s).
`evaluate` took {ev:.1f} s (median). Load average during the run
{min(loads):.1f}-{max(loads):.1f} (2 cores shared with other jobs).

| command | time (s) | x evaluate | HTML (MB) |
| --- | ---: | ---: | ---: |
{chr(10).join(lines)}

Targets: HTML <= 2 MB ({'met' if rows[0][2] <= 2 else 'not met'}), <= 4 MB with the forensic
section ({'met' if rows[-1][2] <= 4 else 'not met'}); time <= 1.5x evaluate
({'met' if rows[0][1] <= 1.5 * ev else 'not met'}). Before this round the same report was
5.2-5.6 MB. Measured {time.strftime('%Y-%m-%d %H:%M')} UTC.
"""
    print(text)
    write_section(HERE / "RESULTS.md", "report_size", text)


if __name__ == "__main__":
    main()
