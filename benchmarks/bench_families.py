"""Cost of the spoof and forensic families: ``evaluate --spoof --forensic`` beside plain.

Run: ``python benchmarks/bench_families.py [--n N] [--code DIR] [--label NAME]`` (alone: it
uses both cores). Writes ``benchmarks/RESULTS.md`` (section ``families_NAME``, default
``after``). The dataset is that of the issue "One pass, one engine" with a ``trial_type``
column: ``N`` trials x 20 conditions in 10 plain Parquet files with ``model``, ``segment``,
``score``, ``label`` (10 % targets), ``trial_type`` (targets; the non-targets split 4:1 into
``nontarget`` and ``spoof``) and ``condition``. Each measurement runs in a fresh process
(wall time including reading the files, and peak resident memory):

* ``evaluate(DS, by="condition")``;
* ``evaluate(DS, by="condition", metrics=["spoof", "forensic"])``.

Targets (issue 21): with the families, at most 1.2x the memory and 1.5x the time of plain.
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
import json, resource, sys, time
import scoreframe as sf
path, fam = sys.argv[1], sys.argv[2] == "1"
t = time.perf_counter()
res = sf.evaluate(path, by="condition", metrics=["spoof", "forensic"] if fam else None)
print(json.dumps({"seconds": time.perf_counter() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rows": res.height}))
"""


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


def run(path: Path, families: bool, code: str | None) -> dict:
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "1" if families else "0"],
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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.data or tmp) / f"sasv_{args.n}"
        if not path.exists():
            make(args.n, path)
        runs = {fam: [run(path, fam, args.code) for _ in range(args.repeat)]
                for fam in (False, True)}
    best = {k: {"seconds": min(r["seconds"] for r in v),
                "peak_rss_mb": min(r["peak_rss_mb"] for r in v)} for k, v in runs.items()}
    tr = best[True]["seconds"] / best[False]["seconds"]
    mr = best[True]["peak_rss_mb"] / best[False]["peak_rss_mb"]
    scale = "" if args.n == 10**7 else (
        f" Reduced scale ({args.n:.0e} trials instead of 10^7: the machine is shared by "
        "several sessions).")
    text = "\n".join([
        f"## Spoof and forensic families on the statistics layer: {args.label}",
        "",
        f"Machine: {machine()}. Written by `benchmarks/bench_families.py --n {args.n}` (label "
        f"`{args.label}`); each cell the best of {args.repeat} fresh process(es) (wall time "
        "including reading the 10 Parquet files, and peak resident memory). 20 conditions "
        "(+ the pooled row), 10 % targets, a fifth of the non-targets spoofs. Load average "
        f"when the run ended: {os.getloadavg()[0]:.1f} (the machine is shared).{scale}",
        "",
        "| trials | `evaluate --by condition` | `... --spoof --forensic` | time ratio | "
        "memory ratio | targets |",
        "|---:|---:|---:|---:|---:|---|",
        f"| {args.n:.0e} | {best[False]['seconds']:.1f} s / "
        f"{best[False]['peak_rss_mb']:.0f} MB | {best[True]['seconds']:.1f} s / "
        f"{best[True]['peak_rss_mb']:.0f} MB | {tr:.2f}x | {mr:.2f}x | time "
        f"{'met' if tr <= 1.5 else 'NOT met'} (<= 1.5x), memory "
        f"{'met' if mr <= 1.2 else 'NOT met'} (<= 1.2x) |",
    ])
    print(text)
    if not args.no_write:
        write_section(HERE / "RESULTS.md", f"families_{args.label}", text)


if __name__ == "__main__":
    main()
