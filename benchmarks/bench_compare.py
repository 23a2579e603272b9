"""Paired comparison of two systems in bounded memory (issue 21 "compare", issue 22 target 6).

Run: ``python benchmarks/bench_compare.py [--trials 1e7] [--big-trials 5e7] [--data DIR]``.
Two ``scoreframe synth`` datasets (two systems scoring the same trials, 20 conditions; string
``model``/``segment`` ids) are made once under ``--data``. Each measurement runs in a fresh
process (peak RSS from ``resource.getrusage`` of that process):

* at ``--trials`` per system: ``sf.evaluate`` of one system by condition (``where`` selects
  it) against ``sf.compare`` of the two by condition, with the default intervals (1000
  trial-level replicates) and with ``--bootstrap`` (100) replicates. Targets: compare <= 2x
  the time of evaluate (with 1000 and with 100 replicates), both <= 2 GB;
* at ``--big-trials`` per system: peak MB of ``compare`` (``--big-bootstrap`` replicates) and
  of ``build_report(..., compare=...)`` (the report's one pass with intervals, its
  ``compare_statistics`` pairing the trials). Target: <= 2 GB each;
* ``pairing``: the pairing alone (alignment checks and McNemar counts) with the
  ``streaming`` engine at the default 1 GiB memory limit.

Written to the ``compare`` section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _results import write_section

HERE = Path(__file__).parent

CHILD = r"""
import json, resource, sys, time
args = json.loads(sys.argv[1])
import polars as pl
import scoreframe as sf
from scoreframe.metrics import Intervals
from scoreframe.stats import Engine
t0 = time.perf_counter()
data, kind = args["dataset"], args["kind"]
eng = Engine(args.get("engine", "auto"), memory_limit=args["limit"]) if args.get("limit") \
    else "auto"
iv = {} if args.get("bootstrap") is None else {"intervals": Intervals(bootstrap=args["bootstrap"])}
extra = {}
if kind == "evaluate":
    r = sf.evaluate(data, by="condition", where="system = 'sys1'", engine=eng)
    extra["rows"] = r.height
elif kind == "compare":
    r = sf.compare(data, "sys1", "sys2", by="condition", engine=eng, **iv)
    extra["rows"] = r.height
    extra["mcnemar_misses_pooled"] = r.filter(
        (pl.col("condition") == "all") & (pl.col("metric") == "misses"))["a"].to_list()
elif kind == "report":
    from scoreframe.views.report import build_report
    rep = build_report(data, by="condition", compare=["sys1", "sys2"], engine=eng, **iv)
    extra["comparison_rows"] = rep.comparison.height
elif kind == "pairing":
    from scoreframe.results.compare import _pair_counts
    r = _pair_counts(data, "sys1", "sys2", ["condition"], None, [4.59512], eng)
    extra["rows_a"] = int(r["rows_a"].sum())
print(json.dumps({"seconds": time.perf_counter() - t0,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  **extra}))
"""


def measure(**args: object) -> dict:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                         text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{args}: {out.stderr[-2000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(args.get("kind"), args.get("bootstrap"), args.get("limit"), res, flush=True)
    return res


def dataset(data: Path, n: float) -> Path:
    d = data / f"two_{n:.0e}".replace("+", "")
    if not d.is_dir():
        subprocess.run([sys.executable, "-m", "scoreframe", "synth", str(d), "--trials",
                        str(int(n)), "--systems", "2", "--conditions", "20"], check=True,
                       env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
    return d


def load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=float, default=1e7, help="per system")
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--big-trials", type=float, default=5e7, help="per system; 0: skip")
    ap.add_argument("--big-bootstrap", type=int, default=100)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args()
    started, loads = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), [load()]
    small = dataset(args.data, args.trials)
    gb = 2 * 1024
    lines = [f"## Paired comparison in bounded memory (bench_compare.py, {started})", "",
             f"`scoreframe synth --systems 2 --conditions 20`, string model/segment ids; "
             f"every run a fresh process (peak RSS of the process); default engine (`auto`, "
             f"memory_limit 1 GiB) unless stated. Load average (1/5/15 min) at the start: "
             f"{loads[0]}.", ""]
    # the pairing alone: bytes per row from two bucket sizes
    n_rows = 2 * args.trials
    pair = {lim: measure(kind="pairing", dataset=str(small), engine="streaming", limit=lim)
            for lim in ("1GiB",)}
    ev = measure(kind="evaluate", dataset=str(small))
    cmp_default = measure(kind="compare", dataset=str(small))
    cmp_b = measure(kind="compare", dataset=str(small), bootstrap=args.bootstrap)
    loads.append(load())
    lines += [f"### {args.trials:.0e} trials per system ({n_rows:.0e} rows), by condition", "",
              "| run | seconds | peak MB | compare / evaluate time |", "|---|---:|---:|---:|",
              f"| evaluate, one system | {ev['seconds']:.1f} | {ev['peak_mb']:.0f} | |",
              f"| compare, 1000 replicates (default) | {cmp_default['seconds']:.1f} | "
              f"{cmp_default['peak_mb']:.0f} | {cmp_default['seconds'] / ev['seconds']:.2f}x |",
              f"| compare, {args.bootstrap} replicates | {cmp_b['seconds']:.1f} | "
              f"{cmp_b['peak_mb']:.0f} | {cmp_b['seconds'] / ev['seconds']:.2f}x |",
              *[f"| pairing alone (alignment + McNemar), streaming, memory_limit {lim} | "
                f"{r['seconds']:.1f} | {r['peak_mb']:.0f} | |" for lim, r in pair.items()],
              ""]
    met = []
    for name, r in (("compare (1000 replicates)", cmp_default),
                    (f"compare ({args.bootstrap} replicates)", cmp_b)):
        ratio = r["seconds"] / ev["seconds"]
        met.append(f"{name} <= 2x evaluate time: {'met' if ratio <= 2 else 'NOT met'} "
                   f"({ratio:.2f}x)")
    if args.big_trials:
        big = dataset(args.data, args.big_trials)
        bc = measure(kind="compare", dataset=str(big), bootstrap=args.big_bootstrap)
        br = measure(kind="report", dataset=str(big), bootstrap=args.big_bootstrap)
        loads.append(load())
        lines += [f"### {args.big_trials:.0e} trials per system "
                  f"({2 * args.big_trials:.0e} rows), by condition, "
                  f"{args.big_bootstrap} replicates", "",
                  "| run | seconds | peak MB |", "|---|---:|---:|",
                  f"| compare | {bc['seconds']:.1f} | {bc['peak_mb']:.0f} |",
                  "| build_report(..., compare=[sys1, sys2], intervals) (frames; no HTML) | "
                  f"{br['seconds']:.1f} | {br['peak_mb']:.0f} |", ""]
        for name, r in (("compare", bc), ("report with compare", br)):
            met.append(f"{name} at {2 * args.big_trials:.0e} rows <= 2 GB: "
                       f"{'met' if r['peak_mb'] <= gb else 'NOT met'} ({r['peak_mb']:.0f} MB)")
    lines += [f"Load average during the runs: {' -> '.join(loads)} (a 10^9 benchmark and "
              "other jobs shared the 2 cores).", "", *[f"- {m}" for m in met]]
    text = "\n".join(lines)
    print(text)
    write_section(args.results, "compare", text)


if __name__ == "__main__":
    main()
