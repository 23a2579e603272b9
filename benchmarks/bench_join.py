"""Joined inputs (issue 21 item 6): an evaluation of trials joined with metadata tables.

Run: ``python benchmarks/bench_join.py [--trials N]``. A ``scoreframe synth`` dataset (one
system, 20 conditions: ``model, segment, score, label, condition, ...``) is evaluated by
``condition`` twice, each in a fresh process: by path, and as a LazyFrame that joins a model
table (``age``) and a segment table (``mic``) and groups by ``condition, age, mic``. Target:
the joined evaluation's peak memory <= 1.2x the evaluation by path; times recorded. Written to
the ``join`` section of ``benchmarks/RESULTS.md``.

With ``--sql``, the joined input is instead an SQL query over the dataset and the two tables
(:func:`scoreframe.scan_query`, which streams the query's result), measured against the path
in the same run with the same ``--memory-limit``, and written to the ``join_sql`` section.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _results import synth_dataset, write_section

HERE = Path(__file__).parent
DATA = HERE / "data"

CHILD = r"""
import json, resource, sys, time
import polars as pl
import scoreframe as sf
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
files = args["files"]
limit = {"memory_limit": args["limit"]} if args.get("limit") else {}
if args["kind"] == "path":
    r = sf.evaluate(args["dataset"], by=["condition"], **limit)
elif args["kind"] == "sql":
    lf = sf.scan_query("select t.*, m.age, s.mic from trials t join models m using (model) "
                       "join segs s using (segment)", args["dataset"],
                       tables={"models": args["models"], "segs": args["segments"]})
    r = sf.evaluate(lf, by=["condition", "age", "mic"], **limit)
else:
    lf = pl.scan_parquet(files)
    lf = lf.join(pl.scan_parquet(args["models"]), on="model")
    lf = lf.join(pl.scan_parquet(args["segments"]), on="segment")
    r = sf.evaluate(lf, by=["condition", "age", "mic"])
print(json.dumps({"seconds": time.perf_counter() - t0, "rows": r.height,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(**args: object) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def metadata(dataset: Path) -> tuple[Path, Path]:
    import polars as pl

    models, segments = dataset.parent / f"{dataset.name}_models.parquet", \
        dataset.parent / f"{dataset.name}_segments.parquet"
    if not models.exists() or not segments.exists():
        lf = pl.scan_parquet(str(dataset / "**" / "*.parquet"))
        (lf.select("model").unique().collect(engine="streaming")
         .with_columns(age=(pl.col("model").hash(1) % 4).cast(pl.String))
         .write_parquet(models))
        (lf.select("segment").unique().collect(engine="streaming")
         .with_columns(mic=(pl.col("segment").hash(2) % 3).cast(pl.String))
         .write_parquet(segments))
    return models, segments


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=float, default=1e8)
    ap.add_argument("--sql", action="store_true", help="the joined input is an SQL query")
    ap.add_argument("--memory-limit", default=None, help="memory_limit of both runs")
    a = ap.parse_args()
    n = int(a.trials)
    if a.sql:
        return sql_main(n, a.memory_limit)
    dataset = synth_dataset(n, DATA)
    models, segments = metadata(dataset)
    files = str(dataset / "**" / "*.parquet")
    t = time.time()
    path = measure(kind="path", dataset=str(dataset), files=files)
    joined = measure(kind="join", dataset=str(dataset), files=files, models=str(models),
                     segments=str(segments))
    ratio = joined["peak_mb"] / path["peak_mb"]
    text = f"""## Joined inputs (`bench_join.py`, issue 21 item 6)

{n:.0e} trials (`scoreframe synth`, one system, 20 conditions), each run in a fresh
process, in the same run.
The joined run scans the files as a LazyFrame joined with a model table (`age`) and a segment
table (`mic`) and groups by `condition, age, mic`; the path run groups by `condition`.

| input | time (s) | peak memory (MB) | groups |
| --- | ---: | ---: | ---: |
| by path | {path['seconds']:.1f} | {path['peak_mb']:.0f} | {path['rows']} |
| joined query | {joined['seconds']:.1f} | {joined['peak_mb']:.0f} | {joined['rows']} |

Joined / path peak memory: **{ratio:.2f}x** (target <= 1.2x:
{'met' if ratio <= 1.2 else 'not met'}).
Measured {time.strftime('%Y-%m-%d')} in {time.time() - t:.0f} s on a 2-core machine shared
with other jobs (times are indicative; memory is not affected).
"""
    print(text)
    write_section(HERE / "RESULTS.md", "join", text)


def sql_main(n: int, limit: str | None) -> None:
    """Path against an SQL query that joins the two tables (``--sql``): the ``join_sql`` section."""
    dataset = synth_dataset(n, DATA)
    models, segments = metadata(dataset)
    t = time.time()
    path = measure(kind="path", dataset=str(dataset), files="", limit=limit)
    sql = measure(kind="sql", dataset=str(dataset), files="", models=str(models),
                  segments=str(segments), limit=limit)
    ratio = sql["peak_mb"] / path["peak_mb"]
    text = f"""## Joined inputs through SQL (`bench_join.py --sql`, issue 21 item 6)

{n:.0e} trials (`scoreframe synth`, one system, 20 conditions), each run in a fresh process, in
the same run, memory limit {limit or 'default'}. The SQL run evaluates
`scan_query("select t.*, m.age, s.mic from trials t join models m using (model) join segs s
using (segment)", ds, tables={{"models": ..., "segs": ...}})` (DuckDB joins; its result
streams in record batches into the out-of-core statistics) and groups by `condition, age, mic`;
the path run groups by `condition`.

| input | time (s) | peak memory (MB) | groups |
| --- | ---: | ---: | ---: |
| by path | {path['seconds']:.1f} | {path['peak_mb']:.0f} | {path['rows']} |
| SQL query over 3 tables | {sql['seconds']:.1f} | {sql['peak_mb']:.0f} | {sql['rows']} |

SQL / path peak memory: **{ratio:.2f}x** (target <= 1.2x: {'met' if ratio <= 1.2 else 'not met'}).
Measured {time.strftime('%Y-%m-%d')} in {time.time() - t:.0f} s on a 2-core machine shared
with other jobs (times are indicative; memory is not affected).
"""
    print(text)
    write_section(HERE / "RESULTS.md", "join_sql", text)


if __name__ == "__main__":
    main()
