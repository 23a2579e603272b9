"""Report size and time beside `evaluate` (issue 22 target 4), 10^7 trials x 20 conditions.

Run: ``python benchmarks/bench_report_size.py [--trials N]``. A ``scoreframe synth`` dataset
(one system, 20 conditions) is evaluated and reported by ``condition`` from the command line,
each in a fresh process, in the same run: ``evaluate``, ``report``, and ``evaluate
--forensic`` with ``report --forensic`` (``--rounds`` rounds of ``evaluate`` and ``report``
alternated, the median of each; ``--forensic-rounds`` rounds of ``evaluate --forensic`` and
``report --forensic`` alternated; the load average is recorded). Beside the wall
time, each command's CPU seconds (user + system of its process) are recorded: under a load
that swings from round to round they compare the two commands more steadily.
Targets: the HTML <= 2 MB (<= 4 MB with the spoofing and forensic sections) and the report's
time <= 1.5x the evaluation's with the same options. Written to the ``report_size`` section of
``benchmarks/RESULTS.md`` (``--no-write``: printed only).
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


def run(args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, the peak memory (MB) and the CPU seconds of one CLI run (a fresh process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "scoreframe", *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, max(after.ru_maxrss, before.ru_maxrss) / 1024, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=float, default=1e7)
    ap.add_argument("--data", type=Path, default=DATA, help="where the synth dataset is made")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forensic-rounds", type=int, default=1)
    ap.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    a = ap.parse_args()
    n = int(a.trials)
    dataset = synth_dataset(n, a.data)
    rows = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        evs, reps, ev_cpu, rep_cpu = [], [], [], []
        for i in range(a.rounds):
            sec, _, cpu = run(["evaluate", str(dataset), "--by", "condition", "-o",
                               f"{tmp}/r{i}.json"])
            evs.append(sec)
            ev_cpu.append(cpu)
            out = Path(tmp) / f"r{i}.html"
            sec, _, cpu = run(["report", str(dataset), "--by", "condition", "-o", str(out)])
            reps.append(sec)
            rep_cpu.append(cpu)
            loads.append(os.getloadavg()[0])
            print(f"round {i + 1}: evaluate {evs[-1]:.1f} s (CPU {ev_cpu[-1]:.1f} s), report "
                  f"{reps[-1]:.1f} s (CPU {rep_cpu[-1]:.1f} s), load {loads[-1]:.1f}",
                  flush=True)
        ev, ev_c = statistics.median(evs), statistics.median(ev_cpu)
        rows.append(("report", statistics.median(reps), statistics.median(rep_cpu),
                     out.stat().st_size / 1e6))
        fors, for_cpu, fevs, fev_cpu = [], [], [], []
        for i in range(a.forensic_rounds):
            sec, _, cpu = run(["evaluate", str(dataset), "--by", "condition", "--forensic",
                               "-o", f"{tmp}/f{i}.json"])
            fevs.append(sec)
            fev_cpu.append(cpu)
            out = Path(tmp) / f"f{i}.html"
            sec, _, cpu = run(["report", str(dataset), "--by", "condition", "--forensic", "-o",
                               str(out)])
            fors.append(sec)
            for_cpu.append(cpu)
            loads.append(os.getloadavg()[0])
            print(f"evaluate --forensic {fevs[-1]:.1f} s (CPU {fev_cpu[-1]:.1f} s), report "
                  f"--forensic {fors[-1]:.1f} s (CPU {cpu:.1f} s), load {loads[-1]:.1f}",
                  flush=True)
        if fors:
            rows.append(("report --forensic", statistics.median(fors),
                         statistics.median(for_cpu), out.stat().st_size / 1e6))
    # each report against the evaluation with the same options
    base = {"report": (ev, ev_c)}
    if fevs:
        base["report --forensic"] = (statistics.median(fevs), statistics.median(fev_cpu))
    against = {"report": "evaluate", "report --forensic": "evaluate --forensic"}
    lines = [f"| {label} | {sec:.1f} | {against[label]} "
             f"{base[label][0]:.1f} | {sec / base[label][0]:.2f}x | {cpu:.1f} | "
             f"{cpu / base[label][1]:.2f}x | {mb:.2f} |" for label, sec, cpu, mb in rows]
    verdict_forensic = ""
    if fevs:
        ok = rows[-1][1] <= 1.5 * base["report --forensic"][0]
        verdict_forensic = f", report --forensic {'met' if ok else 'not met'}"
    text = f"""## Report size and time (`bench_report_size.py`, issue 22 target 4)

{n:.0e} trials (`scoreframe synth`, one system, 20 conditions), by `condition`; every command
in a fresh process, in the same run: {a.rounds} rounds of `evaluate` and `report` alternated
(median; `evaluate` {', '.join(f'{x:.1f}' for x in evs)} s, `report`
{', '.join(f'{x:.1f}' for x in reps)} s), then {a.forensic_rounds} round(s) of `evaluate
--forensic` ({', '.join(f'{x:.1f}' for x in fevs)} s) and `report --forensic`
({', '.join(f'{x:.1f}' for x in fors)} s) alternated.
`evaluate` took {ev:.1f} s (median; CPU {', '.join(f'{x:.1f}' for x in ev_cpu)} s). Load
average during the run {min(loads):.1f}-{max(loads):.1f} (2 cores shared with other jobs).

| command | time (s) | against (s) | time ratio | CPU (s) | CPU ratio | HTML (MB) |
| --- | ---: | --- | ---: | ---: | ---: | ---: |
{chr(10).join(lines)}

Targets: HTML <= 2 MB ({'met' if rows[0][3] <= 2 else 'not met'}), <= 4 MB with the forensic
section ({'met' if rows[-1][3] <= 4 else 'not met'}); time <= 1.5x evaluate with the same
options: report {'met' if rows[0][1] <= 1.5 * ev else 'not met'}{verdict_forensic}.
Before issue 22 the same report was 5.2-5.6 MB. Measured {time.strftime('%Y-%m-%d %H:%M')} UTC.
"""
    print(text)
    if not a.no_write:
        write_section(HERE / "RESULTS.md", "report_size", text)


if __name__ == "__main__":
    main()
