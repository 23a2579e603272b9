"""Speed of bootstrap intervals: 1,000 replicates of the full suite beside one plain evaluation.

Run: ``python benchmarks/bench_bootstrap.py [--quick]`` (alone: it uses both cores). Writes the
``bootstrap`` section of ``benchmarks/RESULTS.md``. For each size, on the same Parquet file
(one group; 10 % targets; ``model``/``segment`` ids, 200 trials per model), each measurement in
a fresh process (wall time and peak resident memory):

* ``scoreframe.evaluate`` (EER, Cllr, minCllr, PRBEP, act/min DCF at two priors);
* ``scoreframe.bootstrap_evaluate`` with 1,000 replicates (same metrics with percentile
  intervals), trial resampling and the two-way (model x segment) bootstrap.

Target (issue 14): the 1,000 replicates at 10^6 trials within 300x one plain evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from _results import write_section
from bench_evaluate import machine

HERE = Path(__file__).parent
P_TARGET = (0.01, 0.1)

CHILD = r"""
import json, resource, sys, time
import scoreframe as sf
path, what, b = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
if what == "evaluate":
    sf.evaluate(path, p_target=[0.01, 0.1])
else:
    sf.bootstrap_evaluate(path, p_target=[0.01, 0.1], bootstrap=b,
                          resample="trial" if what == "trial" else ["model", "segment"])
print(json.dumps({"seconds": time.perf_counter() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make(n: int, path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.1
    score = np.where(label, rng.normal(2.0, 2.0, n), rng.normal(-2.0, 2.0, n))
    pl.DataFrame({"i": np.arange(n), "score": score, "label": label}).select(
        pl.format("m{}", pl.col("i") // 200).alias("model"),
        pl.format("s{}", (pl.col("i") * 7919) % max(n // 10, 1)).alias("segment"),
        "score", "label").write_parquet(path)


def run(path: Path, what: str, b: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), what, str(b)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10^5 and 10^6 with 100 replicates")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    sizes = (10**5, 10**6) if args.quick else (10**6, 10**7)
    b = 100 if args.quick else 1000
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"trials_{n}.parquet"
            make(n, path)
            plain = run(path, "evaluate", 0)
            trial = run(path, "trial", b)
            two_way = run(path, "two_way", b) if n <= 10**6 or args.quick else None
            rows.append((n, plain, trial, two_way))
            print(n, plain, trial, two_way, flush=True)
    lines = [
        "## Bootstrap intervals (issue 14)",
        "",
        f"Machine: {machine()}. Written by `benchmarks/bench_bootstrap.py`"
        f"{' --quick' if args.quick else ''}; each cell a fresh process (wall time including "
        "reading the Parquet file, and peak resident memory). One group, 10 % targets, "
        f"p_target {list(P_TARGET)}; {b} replicates of the full suite (EER, Cllr, minCllr, "
        "act/min DCF at both priors, with the DET-point rates), percentile intervals. "
        f"Load average when the run ended: {os.getloadavg()[0]:.1f} (the machine is shared; "
        "both sides of each row ran under the same load).",
        "",
        "| trials | evaluate | bootstrap, trial | ratio | bootstrap, model x segment | ratio |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, plain, trial, two_way in rows:
        tw = (f"{two_way['seconds']:.1f} s / {two_way['peak_rss_mb']:.0f} MB | "
              f"{two_way['seconds'] / plain['seconds']:.0f}x") if two_way else "not run | "
        lines.append(f"| {n:.0e} | {plain['seconds']:.2f} s / {plain['peak_rss_mb']:.0f} MB | "
                     f"{trial['seconds']:.1f} s / {trial['peak_rss_mb']:.0f} MB | "
                     f"{trial['seconds'] / plain['seconds']:.0f}x | {tw} |")
    n6 = [r for r in rows if r[0] == 10**6]
    if n6 and not args.quick:
        ratio = n6[0][2]["seconds"] / n6[0][1]["seconds"]
        lines += ["", f"Target: 1,000 replicates at 10^6 trials within 300x one evaluation: "
                      f"**{ratio:.0f}x**, {'met' if ratio <= 300 else 'NOT met'}."]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(HERE / "RESULTS.md", "bootstrap", text)


if __name__ == "__main__":
    main()
