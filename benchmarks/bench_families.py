"""Issue 21 at 10^7 x 20 from disk: families, two-way intervals and the report beside plain.

Run: ``python benchmarks/bench_families.py [--n N] [--code DIR] [--label NAME]`` (alone: it
uses both cores). Writes ``benchmarks/RESULTS.md`` (section ``families_NAME``, default
``after``). The dataset is that of the issue "One pass, one engine" with a ``trial_type``
column: ``N`` trials x 20 conditions in 10 plain Parquet files with ``model``, ``segment``,
``score``, ``label`` (10 % targets), ``trial_type`` (targets; the non-targets split 4:1 into
``nontarget`` and ``spoof``) and ``condition``. Each measurement runs in a fresh process
(wall time including reading the files, and peak resident memory):

* ``plain``: ``evaluate(DS, by="condition")``;
* ``families``: ``evaluate(DS, by="condition", metrics=["spoof", "forensic"])``;
* ``bootstrap``: ``evaluate(DS, by="condition", intervals=Intervals(bootstrap=100,
  resample=["model", "segment"]))``;
* ``report``: ``build_report(DS, by="condition")`` written to an HTML file (the CLI's
  ``scoreframe report DS --by condition``).

Targets (issue 21), each against plain in the same run: with the families at most 1.2x the
memory and 1.5x the time; with 100 two-way replicates at most 1.5x the memory; the report at
most 1.2x the memory.
``--code DIR`` measures another checkout's package (one with the ``metrics=`` API).
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
N_MODELS = 1000

CHILD = r"""
import json, os, resource, sys, tempfile, time
import scoreframe as sf
path, mode = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if mode == "report":
    from scoreframe.views.report import build_report, write_report
    rep = build_report(path, by="condition")
    with tempfile.TemporaryDirectory() as d:
        write_report(rep, os.path.join(d, "r.html"))
    rows = rep.summary.height
else:
    kw = {"families": {"metrics": ["spoof", "forensic"]},
          "bootstrap": {"intervals": sf.Intervals(bootstrap=100, resample=["model", "segment"])},
          "plain": {}}[mode]
    rows = sf.evaluate(path, by="condition", **kw).height
print(json.dumps({"seconds": time.perf_counter() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rows": rows}))
"""
MODES = ("plain", "families", "bootstrap", "report")
#: (memory, time) bound of each mode against plain (None: not a target)
BOUNDS = {"families": (1.2, 1.5), "bootstrap": (1.5, None), "report": (1.2, None)}


def make(n: int, root: Path, seed: int = 0, files: int = 10) -> None:
    """``n`` SASV trials x 20 conditions in ``files`` Parquet files."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per = -(-n // files)
    for f in range(files):
        i = np.arange(f * per, min(n, (f + 1) * per))
        label = rng.random(i.shape[0]) < 0.1
        spoof = ~label & (rng.random(i.shape[0]) < 0.2)
        cond = rng.integers(0, 20, i.shape[0])
        half = (1.5 + 2.0 * cond / 19) / 2
        score = rng.standard_normal(i.shape[0]) + np.where(label, half, np.where(spoof, 0.0,
                                                                                 -half))
        kind = np.where(label, "target", np.where(spoof, "spoof", "nontarget"))
        pl.DataFrame({"i": i, "c": cond, "score": score, "label": label,
                      "trial_type": kind}).select(
            pl.format("m{}", pl.col("i") % N_MODELS).alias("model"),
            pl.format("s{}", pl.col("i") // N_MODELS).alias("segment"),
            "score", "label", "trial_type", pl.format("c{}", pl.col("c")).alias("condition"),
        ).write_parquet(root / f"part-{f:02d}.parquet")


def run(path: Path, mode: str, code: str | None) -> dict:
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10**7, help="trials (default 10^7)")
    ap.add_argument("--code", default=None, help="PYTHONPATH of the package to measure")
    ap.add_argument("--label", default="after", help="section name in the results file")
    ap.add_argument("--data", default=None, help="keep the dataset in this directory")
    ap.add_argument("--repeat", type=int, default=1, help="runs per cell (the best is kept)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = ap.parse_args()
    modes = ["plain", *[m for m in args.modes if m != "plain"]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.data or tmp) / f"sasv_{args.n}"
        if not path.exists():
            make(args.n, path)
        runs: dict[str, list[dict]] = {m: [] for m in modes}
        for _ in range(args.repeat):  # interleaved: each round sees the same load
            for m in modes:
                runs[m].append(run(path, m, args.code))
    best = {k: {"seconds": float(np.median([r["seconds"] for r in v])),
                "peak_rss_mb": float(np.median([r["peak_rss_mb"] for r in v]))}
            for k, v in runs.items()}
    scale = "" if args.n == 10**7 else (
        f" Reduced scale ({args.n:.0e} trials instead of 10^7: the machine is shared by "
        "several sessions).")
    rows = []
    for m in modes:
        b = best[m]
        tr = b["seconds"] / best["plain"]["seconds"]
        mr = b["peak_rss_mb"] / best["plain"]["peak_rss_mb"]
        mem_bound, time_bound = BOUNDS.get(m, (None, None))
        verdict = []
        if mem_bound is not None:
            verdict.append(f"memory {'met' if mr <= mem_bound else 'NOT met'} (<= {mem_bound}x)")
        if time_bound is not None:
            verdict.append(f"time {'met' if tr <= time_bound else 'NOT met'} (<= {time_bound}x)")
        rows.append(f"| {m} | {b['seconds']:.1f} | {b['peak_rss_mb']:.0f} | {tr:.2f}x | "
                    f"{mr:.2f}x | {', '.join(verdict) or '-'} |")
    text = "\n".join([
        f"## Issue 21 at 10^7 x 20 from disk: families, intervals, report ({args.label})",
        "",
        f"Machine: {machine()}. Written by `benchmarks/bench_families.py --n {args.n}` (label "
        f"`{args.label}`); each cell the median of {args.repeat} fresh process(es), the modes "
        "interleaved (wall time including reading the 10 Parquet files, and peak resident "
        "memory). 20 conditions (+ the pooled row), 10 % targets, a fifth of the non-targets "
        "spoofs, model and segment ids as strings. Load average when the run ended: "
        f"{os.getloadavg()[0]:.1f} (the machine is shared: compare ratios, not seconds).{scale}",
        "",
        "| mode | seconds | peak MB | time / plain | memory / plain | targets |",
        "|---|---:|---:|---:|---:|---|",
        *rows,
    ])
    print(text)
    if not args.no_write:
        write_section(HERE / "RESULTS.md", f"families_{args.label}", text)


if __name__ == "__main__":
    main()
