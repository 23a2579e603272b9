"""Paired comparison of two systems in bounded memory (issue 21 "compare", issue 22 target 6).

Run: ``python benchmarks/bench_compare.py [--trials 1e7] [--big-trials 5e7] [--runs ...]``.
Two-system ``scoreframe synth`` datasets (both systems score the same trials, 20 conditions;
string ``model``/``segment`` ids) are made once under ``--data``. Each run is a fresh process
(peak RSS of that process from ``resource.getrusage``); ``--runs`` picks them:

* ``evaluate``: ``sf.evaluate`` of one system by condition (``where`` selects it), at
  ``--trials`` per system; ``compare_default`` / ``compare_b``: ``sf.compare`` of the two by
  condition with the default intervals (1000 trial-level replicates) / ``--bootstrap``
  replicates. Target: compare <= 2x the time of evaluate. ``compare`` always computes
  intervals (its p-values are the paired bootstrap's), so it is also measured against
  ``evaluate_default`` / ``evaluate_b``: one system with the same intervals;
* ``pairing`` / ``big_pairing``: the pairing alone by hash (alignment checks and McNemar
  counts, ``scoreframe.results.compare._pair_counts``) at ``--trials`` / ``--big-trials``;
  ``pairing_in_order``: the same counts with the rows paired in their order (what ``compare``
  does when its reduction checked each system's trials unique);
* ``big_compare`` / ``big_report``: peak MB of ``compare`` and of
  ``build_report(..., compare=..., intervals=...)`` (the report's one pass, then
  ``compare_statistics`` pairing the trials) at ``--big-trials`` per system with
  ``--big-bootstrap`` replicates. Target: <= 2 GB each.

Each finished run rewrites the ``compare`` section of ``benchmarks/RESULTS.md``.
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
    r = sf.evaluate(data, by="condition", where="system = 'sys1'", engine=eng, **iv)
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
    r = _pair_counts(data, "sys1", "sys2", ["condition"], None, [4.59512], eng,
                     unique=args.get("unique", False))
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


RUNS = ("evaluate", "evaluate_default", "evaluate_b", "compare_default", "compare_b", "pairing",
        "pairing_in_order", "big_pairing", "big_compare", "big_report")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=float, default=1e7, help="per system")
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--big-trials", type=float, default=5e7, help="per system")
    ap.add_argument("--big-bootstrap", type=int, default=100)
    ap.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of the runs (interleaved); each row is the median round")
    args = ap.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    small, big = f"{args.trials:.0e}", f"{args.big_trials:.0e}"
    plan = {  # name: (what, dataset size, measure arguments)
        "evaluate": (f"evaluate of one system (`where system = 'sys1'`), {small}/system",
                     args.trials, {"kind": "evaluate"}),
        "evaluate_default": (f"evaluate of one system, 1000 replicates (compare's default "
                             f"intervals), {small}/system", args.trials,
                             {"kind": "evaluate", "bootstrap": 1000}),
        "evaluate_b": (f"evaluate of one system, {args.bootstrap} replicates, {small}/system",
                       args.trials, {"kind": "evaluate", "bootstrap": args.bootstrap}),
        "compare_default": (f"compare, 1000 replicates (the default), {small}/system",
                            args.trials, {"kind": "compare"}),
        "compare_b": (f"compare, {args.bootstrap} replicates, {small}/system", args.trials,
                      {"kind": "compare", "bootstrap": args.bootstrap}),
        "pairing": (f"pairing alone by hash (alignment checks + McNemar counts; streaming, "
                    f"1 GiB), {small}/system", args.trials,
                    {"kind": "pairing", "engine": "streaming", "limit": "1GiB"}),
        "pairing_in_order": (f"pairing alone in the rows' order (what compare does when its "
                             f"pass checked the trials unique), {small}/system", args.trials,
                             {"kind": "pairing", "unique": True}),
        "big_pairing": (f"pairing alone (auto, 1 GiB), {big}/system", args.big_trials,
                        {"kind": "pairing"}),
        "big_compare": (f"compare, {args.big_bootstrap} replicates, {big}/system",
                        args.big_trials, {"kind": "compare", "bootstrap": args.big_bootstrap}),
        "big_report": (f"build_report(..., compare=[sys1, sys2], intervals {args.big_bootstrap} "
                       f"replicates) (frames; no HTML), {big}/system", args.big_trials,
                       {"kind": "report", "bootstrap": args.big_bootstrap}),
    }
    head = [f"## Paired comparison in bounded memory (bench_compare.py, {started})", "",
            "`scoreframe synth --systems 2 --conditions 20` (string model/segment ids), by "
            "`condition`; every run a fresh process (peak RSS of the process, "
            "`resource.getrusage`); default engine (`auto`, memory_limit 1 GiB) unless stated. "
            "Trials are per system (the two systems' rows are twice that).", "",
            "| run | seconds | peak MB | load average at the end (1/5/15 min) |",
            "|---|---:|---:|---|"]
    if args.repeat > 1:
        head[2] += (f" Each row is the median of {args.repeat} rounds of all the runs (the "
                    "rounds interleaved, so that every run sees the same machine); every "
                    "round's seconds in brackets.")
    rounds: dict[str, list[dict]] = {name: [] for name in args.runs}
    loads: dict[str, str] = {}
    for _ in range(args.repeat):
        for name in args.runs:
            _, n, kw = plan[name]
            rounds[name].append(measure(dataset=str(dataset(args.data, n)), **kw))
            loads[name] = load()
    rows: list[str] = []
    res: dict[str, dict] = {}
    for name in args.runs:
        runs = sorted(rounds[name], key=lambda r: r["seconds"])
        res[name] = runs[len(runs) // 2]
        every = f" {[round(r['seconds'], 1) for r in rounds[name]]}" if args.repeat > 1 else ""
        rows.append(f"| {plan[name][0]} | {res[name]['seconds']:.1f}{every} | "
                    f"{res[name]['peak_mb']:.0f} | {loads[name]} |")
    write_section(args.results, "compare", "\n".join([*head, *rows, "", *_verdicts(res)]))
    print("\n".join([*head, *rows, "", *_verdicts(res)]))


def _verdicts(res: dict[str, dict]) -> list[str]:
    out = []
    ev = res.get("evaluate")
    for name, same in (("compare_default", "evaluate_default"), ("compare_b", "evaluate_b")):
        if ev and name in res:
            ratio = res[name]["seconds"] / ev["seconds"]
            out.append(f"- {name}: time {ratio:.2f}x evaluate of one system (target <= 2x): "
                       f"{'met' if ratio <= 2 else 'NOT met'}")
        if same in res and name in res:
            ratio = res[name]["seconds"] / res[same]["seconds"]
            out.append(f"- {name}: time {ratio:.2f}x evaluate of one system with the same "
                       f"intervals ({same}; target <= 2x): {'met' if ratio <= 2 else 'NOT met'}")
    for name in ("big_pairing", "big_compare", "big_report"):
        if name in res:
            mb = res[name]["peak_mb"]
            out.append(f"- {name}: peak {mb:.0f} MB (target <= 2048 MB): "
                       f"{'met' if mb <= 2048 else 'NOT met'}")
    return out


if __name__ == "__main__":
    main()
