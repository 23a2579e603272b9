"""Cost of the biometric intervals: two-way bootstrap with and without the verification metrics.

Run: ``python benchmarks/bench_biometric_intervals.py [--trials N] [--bootstrap B]`` (alone:
it uses both cores). Writes the section ``biometric_intervals`` of
``benchmarks/RESULTS.md``. The dataset is that of ``bench_bootstrap.py`` (``N`` trials x
20 conditions in 10 Parquet files, 1,000 models x N/1,000 segments, 10 % targets). Each cell
is a fresh process (wall time including reading the files, and peak resident memory):

* ``evaluate(DS, by="condition", intervals=Intervals(bootstrap=B, resample=["model",
  "segment"]))``;
* the same with ``metrics=[Biometric(fmr=[1e-3, 1e-4], fnmr=[1e-2])]`` (FNMR at FMR located
  again in every replicate, ZeroFMR/ZeroFNMR, min HTER, AUC: all with intervals);

each in memory and out of core (``engine=Engine(memory_limit=...)`` small enough for several
score ranges: the replicates' weighted counts per range are summed by a first task before the
reduction).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import write_section
from bench_bootstrap import make
from bench_evaluate import machine

HERE = Path(__file__).parent

CHILD = r"""
import json, resource, sys, time, warnings
import scoreframe as sf
path, b, bio, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
kw = {"by": "condition", "operating_points": sf.OperatingPoints([0.01]),
      "intervals": sf.Intervals(bootstrap=b, resample=["model", "segment"])}
if bio:
    kw["metrics"] = [sf.Biometric(fmr=[1e-3, 1e-4], fnmr=[1e-2])]
if limit != "-":
    kw["engine"] = sf.Engine(memory_limit=limit)
warnings.simplefilter("ignore")
t = time.perf_counter()
res = sf.evaluate(path, **kw)
print(json.dumps({"seconds": time.perf_counter() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rows": res.height}))
"""


def run(path: Path, b: int, bio: bool, limit: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(b), "1" if bio else "0",
                          limit], capture_output=True, text=True, check=True,
                         env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=float, default=1e6)
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--limit", default="200MB", help="memory_limit of the out-of-core runs")
    ap.add_argument("--data", default=None, help="keep the dataset in this directory")
    args = ap.parse_args()
    n, b = int(args.trials), args.bootstrap
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.data or tmp) / f"trials_{n}"
        if not path.exists():
            make(n, path)
        for engine, limit in (("in memory", "-"), (f"out of core ({args.limit})", args.limit)):
            plain = run(path, b, False, limit)
            bio = run(path, b, True, limit)
            rows.append((engine, plain, bio))
            print(engine, plain, bio, flush=True)
    lines = [
        "## Biometric intervals (bio2)", "",
        f"Machine: {machine()}. Written by `benchmarks/bench_biometric_intervals.py --trials "
        f"{n:.0e} --bootstrap {b}`; each cell a fresh process (wall time including reading the "
        "10 Parquet files, peak resident memory). 20 conditions (+ pooled), 10 % targets, "
        "two-way resampling (model, segment). Load average when the run ended: "
        f"{os.getloadavg()[0]:.1f} (the machine is shared by several sessions).", "",
        "| engine | bootstrap, binary suite | + FNMR@FMR x2, FMR@FNMR, ZeroFMR/FNMR, "
        "min HTER, AUC | time ratio | memory ratio |",
        "|---|---:|---:|---:|---:|"]
    for engine, plain, bio in rows:
        lines.append(f"| {engine} | {plain['seconds']:.1f} s / {plain['peak_rss_mb']:.0f} MB | "
                     f"{bio['seconds']:.1f} s / {bio['peak_rss_mb']:.0f} MB | "
                     f"{bio['seconds'] / plain['seconds']:.2f}x | "
                     f"{bio['peak_rss_mb'] / plain['peak_rss_mb']:.2f}x |")
    write_section(HERE / "RESULTS.md", "biometric_intervals", "\n".join(lines))


if __name__ == "__main__":
    main()
