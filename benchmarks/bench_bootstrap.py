"""Cost of bootstrap intervals: one evaluation beside the same evaluation with replicates.

Run: ``python benchmarks/bench_bootstrap.py [--quick] [--code DIR] [--label NAME]`` (alone: it
uses both cores). Writes ``benchmarks/RESULTS.md`` (section ``bootstrap_NAME``, default
``after``). The datasets are those of the issue "One pass, one engine": ``N`` trials x 20
conditions in 10 plain Parquet files with ``model`` (1,000 models), ``segment`` (``N / 1000``
segments, each scored against every model), ``score``, ``label`` (10 % targets) and
``condition``. Each measurement runs in a fresh process (wall time including reading the
files, and peak resident memory):

* ``evaluate(DS, by="condition")`` (the full binary suite at p_target 0.01 and 0.1);
* the same with ``bootstrap=B, resample=["model", "segment"]`` (two-way intervals).

Targets (issue "At the floor", 3): 100 two-way replicates at 10^7 x 20 within 10x one
evaluation in the same memory; 1,000 two-way replicates at 10^6 x 20 within 10x.
``--code DIR`` runs another checkout's package (e.g. the code before a change) on the same
data; ``--profile`` adds a cProfile breakdown (top functions by own time) of the replicate run.
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
N_MODELS = 1000

CHILD = r"""
import cProfile, io, json, pstats, resource, sys, time
import scoreframe as sf
path, b, profile = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
kw = {"by": "condition", "operating_points": [0.01, 0.1]}
if b:
    kw["intervals"] = sf.Intervals(bootstrap=b, resample=["model", "segment"])
prof = cProfile.Profile() if profile else None
if profile:  # one thread, so that the profile sees all the work
    kw["engine"] = sf.Engine(workers=1)
t = time.perf_counter()
if prof:
    prof.enable()
res = sf.evaluate(path, **kw)
if prof:
    prof.disable()
ru = resource.getrusage(resource.RUSAGE_SELF)
out = {"seconds": time.perf_counter() - t, "cpu_seconds": ru.ru_utime + ru.ru_stime,
       "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "rows": res.height}
if prof:
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(12)
    out["profile"] = s.getvalue()
print(json.dumps(out))
"""


def make(n: int, root: Path, seed: int = 0, files: int = 10) -> None:
    """``n`` trials x 20 conditions in ``files`` Parquet files (unique model x segment pairs)."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per = -(-n // files)
    for f in range(files):
        i = np.arange(f * per, min(n, (f + 1) * per))
        label = rng.random(i.shape[0]) < 0.1
        cond = rng.integers(0, 20, i.shape[0])
        half = (1.5 + 2.0 * cond / 19) / 2
        score = rng.standard_normal(i.shape[0]) + np.where(label, half, -half)
        pl.DataFrame({"i": i, "c": cond, "score": score, "label": label}).select(
            pl.format("m{}", pl.col("i") % N_MODELS).alias("model"),
            pl.format("s{}", pl.col("i") // N_MODELS).alias("segment"),
            "score", "label", pl.format("c{}", pl.col("c")).alias("condition"),
        ).write_parquet(root / f"part-{f:02d}.parquet")


def run(path: Path, b: int, code: str | None, profile: bool = False) -> dict:
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(b), "1" if profile else "0"],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(runs: list[dict]) -> dict:
    """The run with the median wall time."""
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10^6 x 100 and 10^5 x 1,000")
    ap.add_argument("--code", default=None, help="PYTHONPATH of the package to measure")
    ap.add_argument("--label", default="after", help="section name in the results file")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--data", default=None, help="keep the datasets in this directory")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--repeat", type=int, default=3,
                    help="fresh processes per cell (the median is reported)")
    args = ap.parse_args()
    cases = ((10**6, 100), (10**5, 1000)) if args.quick else ((10**7, 100), (10**6, 1000))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.data or tmp)
        for n, b in cases:
            path = base / f"trials_{n}"
            if not path.exists():
                make(n, path)
            plains, repss = [], []
            for _ in range(args.repeat):  # alternated, so that both see the same machine
                plains.append(run(path, 0, args.code))
                repss.append(run(path, b, args.code, profile=False))
            plain, reps = _median(plains), _median(repss)
            plain["all"] = [round(r["seconds"], 2) for r in plains]
            reps["all"] = [round(r["seconds"], 2) for r in repss]
            prof = run(path, b, args.code, profile=True)["profile"] if args.profile else ""
            rows.append((n, b, plain, reps, prof))
            print(n, b, plain, reps, flush=True)
    lines = [
        f"## Two-way bootstrap intervals: {args.label}",
        "",
        f"Machine: {machine()}. Written by `benchmarks/bench_bootstrap.py"
        f"{' --quick' if args.quick else ''}` (label `{args.label}`); each cell the median "
        f"of {args.repeat} fresh processes, plain and replicate runs alternated (wall time "
        "including reading the 10 Parquet files, and that run's peak resident memory; "
        "every run's seconds in brackets). 20 conditions (+ the pooled row), 10 % targets, "
        "p_target 0.01 and 0.1, "
        "1,000 models x N/1,000 segments, `resample=[\"model\", \"segment\"]`, percentile "
        f"intervals. Load average when the run ended: {os.getloadavg()[0]:.1f} (the machine "
        "is shared).",
        "",
        "| trials | replicates | evaluate | with intervals | time ratio | memory ratio | "
        "target |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n, b, plain, reps, _ in rows:
        tr = reps["seconds"] / plain["seconds"]
        mr = reps["peak_rss_mb"] / plain["peak_rss_mb"]
        lines.append(f"| {n:.0e} | {b} | {plain['seconds']:.1f} s / "
                     f"{plain['peak_rss_mb']:.0f} MB {plain['all']} | {reps['seconds']:.1f} s / "
                     f"{reps['peak_rss_mb']:.0f} MB {reps['all']} | {tr:.1f}x | {mr:.2f}x | "
                     f"{'met' if tr <= 10 else 'NOT met'} (<= 10x) |")
    for n, b, _, _, prof in rows:
        if prof:
            lines += ["", f"Profile of {b} replicates at {n:.0e} (a separate run with "
                      "`workers=1`, so that cProfile sees the work of every task; top "
                      "functions by own time):",
                      "", "```", prof.strip(), "```"]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(HERE / "RESULTS.md", f"bootstrap_{args.label}", text)


if __name__ == "__main__":
    main()
