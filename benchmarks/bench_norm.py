"""Benchmark score normalization: cohort statistics from score tables and from embeddings,
and the application of saved statistics to many trials.

Every measured step runs in a fresh process (wall time and peak resident memory of that
process, from ``resource.getrusage``), side by side with its floor measured in the same run:

* score tables: reading the same Parquet columns in batches (the read floor);
* embeddings: the BLAS products alone, in the same block shape;
* application: a Polars join of the trials with the statistics table, written to Parquet.

Usage::

    python benchmarks/bench_norm.py [--ids 2000] [--cohort 20000] [--emb-rows 20000]
                                    [--trials 1e8] [--dir /tmp/bench-norm] [--only tables]

Prints a Markdown section and writes it to the ``norm`` section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from _results import write_section

from scoreframe.stats import Engine

DIM = 256


def _child(step: str, **kw: object) -> dict:
    """Run one step in a fresh interpreter; return its JSON answer."""
    cmd = [sys.executable, __file__, "--step", step, "--args", json.dumps(kw)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise RuntimeError(f"step {step} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- steps (child processes)

def step_make_tables(path: str, ids: int, cohort: int, seed: int = 0) -> dict:
    """``ids`` x ``cohort`` rows, grouped by id (as a scorer writes them), ~10^7 per file."""
    root = Path(path)
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    per_file = max(1, 10_000_000 // cohort)
    t0 = time.perf_counter()
    for f, start in enumerate(range(0, ids, per_file)):
        n = min(per_file, ids - start)
        i = pl.int_range(n * cohort, dtype=pl.Int64)
        df = pl.select(
            enroll_id=pl.lit("e") + (i // cohort + start).cast(pl.String).str.zfill(7),
            cohort_id=pl.lit("c") + (i % cohort).cast(pl.String).str.zfill(6),
            score=pl.Series(rng.normal(0.05, 0.1, n * cohort)))
        df.write_parquet(root / f"part-{f:05d}.parquet", row_group_size=1_000_000)
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb()}


def step_read_floor(path: str) -> dict:
    t0 = time.perf_counter()
    rows = 0
    total = 0.0
    lf = pl.scan_parquet(f"{path}/*.parquet").select("enroll_id", "cohort_id", "score")
    for batch in lf.collect_batches(chunk_size=1_000_000, engine="streaming"):
        rows += batch.height
        total += float(batch["score"].to_numpy().sum())
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb(), "rows": rows}


def step_table_stats(path: str, memory_limit: str) -> dict:
    from scoreframe.norm import cohort_statistics

    t0 = time.perf_counter()
    st = cohort_statistics(method=["znorm", "znorm300"], cohort_scores=(path, None),
                           engine=Engine(memory_limit=memory_limit))
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb(), "rows": st.height,
            "load": os.getloadavg()[0]}


def _embeddings(n: int, cohort: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, DIM)), rng.normal(size=(cohort, DIM))


def step_blas_floor(n: int, cohort: int) -> dict:
    from scoreframe.norm._embeddings import block_rows

    e, c = _embeddings(n, cohort)
    t0 = time.perf_counter()
    ct = np.ascontiguousarray(c.T)
    rows = block_rows(cohort)
    for s in range(0, n, rows):
        x = np.zeros((rows, DIM))
        x[:min(rows, n - s)] = e[s:s + rows]
        _ = x @ ct
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb()}


def step_emb_stats(n: int, cohort: int, memory_limit: str) -> dict:
    from scoreframe.norm import cohort_statistics

    e, c = _embeddings(n, cohort)
    half = n // 2
    enroll = ([f"e{i}" for i in range(half)], e[:half])
    test = ([f"t{i}" for i in range(n - half)], e[half:])
    coh = ([f"c{i}" for i in range(cohort)], c)
    t0 = time.perf_counter()
    st = cohort_statistics(method=["snorm", "asnorm300"], embeddings=(enroll, test), cohort=coh,
                           engine=Engine(memory_limit=memory_limit))
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb(), "rows": st.height,
            "load": os.getloadavg()[0]}


def step_make_trials(path: str, trials: int, ids: int, seed: int = 2) -> dict:
    root = Path(path)
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    names = np.array([f"u{i:07d}" for i in range(ids)])
    t0 = time.perf_counter()
    step = 10_000_000
    for f, start in enumerate(range(0, trials, step)):
        n = min(step, trials - start)
        pl.DataFrame({"model": names[rng.integers(0, ids, n)],
                      "segment": names[rng.integers(0, ids, n)],
                      "score": rng.normal(size=n),
                      "label": rng.random(n) < 0.01}).write_parquet(
            root / f"part-{f:05d}.parquet")
    rows = []
    for side in ("enroll", "test"):
        rows.append(pl.DataFrame({"side": side, "id": names,
                                  "top_k": pl.Series([300] * ids, dtype=pl.Int64),
                                  "ddof": pl.Series([0] * ids, dtype=pl.Int8),
                                  "n": pl.Series([300] * ids, dtype=pl.Int64),
                                  "mean": rng.normal(0.2, 0.05, ids),
                                  "std": rng.uniform(0.05, 0.1, ids)}))
    pl.concat(rows).write_parquet(root.parent / "stats.parquet")
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb()}


def step_join_floor(path: str, out: str) -> dict:
    stats = pl.read_parquet(Path(path).parent / "stats.parquet")
    e = stats.filter(pl.col("side") == "enroll").select(
        pl.col("id").alias("model"), pl.col("mean").alias("me"), pl.col("std").alias("se"))
    t = stats.filter(pl.col("side") == "test").select(
        pl.col("id").alias("segment"), pl.col("mean").alias("mt"), pl.col("std").alias("st"))
    t0 = time.perf_counter()
    (pl.scan_parquet(f"{path}/*.parquet").join(e.lazy(), on="model", how="left")
     .join(t.lazy(), on="segment", how="left").sink_parquet(out))
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb()}


def step_apply(path: str, out: str) -> dict:
    from scoreframe.norm import normalize

    stats = pl.read_parquet(Path(path).parent / "stats.parquet")
    t0 = time.perf_counter()
    normalize(pl.scan_parquet(f"{path}/*.parquet"), method="asnorm300",
              statistics=stats).sink_parquet(out)
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb()}


STEPS = {f.__name__.removeprefix("step_"): f for f in (
    step_make_tables, step_read_floor, step_table_stats, step_blas_floor, step_emb_stats,
    step_make_trials, step_join_floor, step_apply)}


# ---------------------------------------------------------------- driver

def _machine() -> str:
    import numpy
    import polars

    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores (shared with "
            f"other jobs while measured); Python {platform.python_version()}, numpy "
            f"{numpy.__version__}, polars {polars.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step")
    ap.add_argument("--args", default="{}")
    ap.add_argument("--dir", default="/tmp/bench-norm")
    ap.add_argument("--tables", action="append", default=None, metavar="IDSxCOHORT",
                    help="cohort score table shapes, e.g. 2000x20000 (repeatable)")
    ap.add_argument("--emb-rows", type=int, default=20_000)
    ap.add_argument("--cohort", type=int, default=20_000)
    ap.add_argument("--trials", type=float, default=1e8)
    ap.add_argument("--trial-ids", type=int, default=100_000)
    ap.add_argument("--memory-limit", default="4GB")
    ap.add_argument("--only", choices=("tables", "embeddings", "apply"), action="append")
    a = ap.parse_args()
    if a.step:
        print(json.dumps(STEPS[a.step](**json.loads(a.args))))
        return
    only = set(a.only or ("tables", "embeddings", "apply"))
    root = Path(a.dir)
    lines = ["## Score normalization", "", f"Machine: {_machine()}.", "",
             f"Produced by `python benchmarks/bench_norm.py` ({time.strftime('%Y-%m-%d')}); "
             "one run each, seconds; peak = peak resident memory of the fresh process that "
             "ran the step.", ""]
    if "tables" in only:
        lines += ["### Cohort statistics from cohort score tables (out of core)", "",
                  "Statistics of one side for s-norm (whole cohort) and AS-norm (top 300): "
                  "`cohort_statistics(method=['znorm', 'znorm300'], cohort_scores=(DS, None), "
                  f"memory_limit='{a.memory_limit}')`. Floor: reading the same three columns "
                  "in 10^6-row batches.", "",
                  "| ids x cohort | rows | Parquet MB | read floor s (peak MB) | statistics s "
                  "(peak MB) | ratio | rows/s | load |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for shape in a.tables or ["2000x20000", "100000x400"]:
            ids, coh = (int(float(x)) for x in shape.split("x"))
            path = root / f"tables-{shape}"
            if path.exists():
                shutil.rmtree(path)
            _child("make_tables", path=str(path), ids=ids, cohort=coh)
            mb = sum(f.stat().st_size for f in path.iterdir()) / 1e6
            floor = _child("read_floor", path=str(path))
            st = _child("table_stats", path=str(path), memory_limit=a.memory_limit)
            rows = ids * coh
            lines.append(f"| {ids} x {coh} | {rows:.1e} | {mb:.0f} | {floor['seconds']:.1f} "
                         f"({floor['peak_mb']:.0f}) | {st['seconds']:.1f} ({st['peak_mb']:.0f}) "
                         f"| {st['seconds'] / floor['seconds']:.2f}x | "
                         f"{rows / st['seconds']:.2e} | {st['load']:.1f} |")
            print(lines[-1], file=sys.stderr, flush=True)
            shutil.rmtree(path)
        lines.append("")
    if "embeddings" in only:
        n, coh = a.emb_rows, a.cohort
        floor = _child("blas_floor", n=n, cohort=coh)
        st = _child("emb_stats", n=n, cohort=coh, memory_limit=a.memory_limit)
        lines += ["### Cohort statistics from embeddings", "",
                  f"{n} enrolment + test vectors x {coh} cohort vectors, dimension {DIM}, "
                  "float64; s-norm and AS-norm (k = 300) statistics of both sides. Floor: the "
                  "BLAS products alone in the same block shape.", "",
                  "| rows x cohort | BLAS products s (peak MB) | statistics s (peak MB) | "
                  "ratio |", "| --- | ---: | ---: | ---: |",
                  f"| {n} x {coh} | {floor['seconds']:.1f} ({floor['peak_mb']:.0f}) | "
                  f"{st['seconds']:.1f} ({st['peak_mb']:.0f}) | "
                  f"{st['seconds'] / floor['seconds']:.2f}x |", ""]
        print(lines[-2], file=sys.stderr, flush=True)
    if "apply" in only:
        trials = int(a.trials)
        path = root / "trials"
        for p in (path, root / "out-join.parquet", root / "out-norm.parquet",
                  root / "stats.parquet"):
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        made = _child("make_trials", path=str(path), trials=trials, ids=a.trial_ids)
        floor = _child("join_floor", path=str(path), out=str(root / "out-join.parquet"))
        st = _child("apply", path=str(path), out=str(root / "out-norm.parquet"))
        lines += ["### Applying saved statistics", "",
                  f"{trials:.0e} trials over {a.trial_ids} ids (Parquet, 10 files; generated "
                  f"in {made['seconds']:.0f} s), AS-norm from a saved statistics table, output "
                  "sunk to Parquet. Floor: a Polars join of the trials with the statistics "
                  "table (both sides), sunk to Parquet.", "",
                  "| trials | join floor s (peak MB) | normalize s (peak MB) | ratio |",
                  "| ---: | ---: | ---: | ---: |",
                  f"| {trials:.0e} | {floor['seconds']:.1f} ({floor['peak_mb']:.0f}) | "
                  f"{st['seconds']:.1f} ({st['peak_mb']:.0f}) | "
                  f"{st['seconds'] / floor['seconds']:.2f}x |", ""]
        print(lines[-2], file=sys.stderr, flush=True)
        shutil.rmtree(path)
    print("\n".join(lines))
    write_section(Path(__file__).parent / "RESULTS.md", "norm", "\n".join(lines))


if __name__ == "__main__":
    main()
