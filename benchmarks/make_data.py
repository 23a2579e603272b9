"""Write a benchmark dataset fast: N trials x 20 conditions as a plain directory of Parquet files.

Not ``scoreframe synth`` (which models models, segments and several systems): this writes only
what the scale benchmark reads, as fast as NumPy and PyArrow allow, in bounded memory and on
every core::

    python benchmarks/make_data.py benchmarks/data/plain_1e9 --trials 1000000000

Layout: ``DIR/part-NNNNN.parquet`` (no hive keys), each file ``--file-trials`` trials in row
groups of ``--row-group`` trials, columns

* ``condition`` (string ``c00`` .. ``c19``, an ordinary column, uniformly mixed in every file),
* ``score`` (float64; equal-variance Gaussian with separation ``d' = 1.5 + 2 c / 19`` for
  condition ``c``; 5 % of the scores are rounded to 0.01, so there are ties),
* ``label`` (bool, 10 % targets),
* ``system`` (one value, ``sys1``);

and with ``--full`` (the issue-21 layout: two-way resampling, anti-spoofing) also

* ``model`` (int32, 1,000 models) and ``segment`` (int32, ``ceil(N / 1000)`` segments): trial
  ``i`` (counted over the whole dataset) is model ``i % 1000`` against segment ``i // 1000``,
  so every (model, segment) pair is one trial (the two-way bootstrap's units; no duplicates),
* ``group`` and ``segment_group`` (int8, 8 demographic groups: ``model % 8`` and
  ``segment % 8``, the enrolled subject's and the probe's, for ``differentials``),
* ``trial_type`` (string ``target`` / ``nontarget`` / ``spoof``: 10 % / 70 % / 20 %; ``label`` is
  true exactly on ``target`` trials; spoof scores are Gaussian midway, ``N(0, 1)``).

File ``k`` depends only on ``(seed, k)``, so files are generated independently on a thread pool
(NumPy's random generators and PyArrow's writer release the GIL); each thread holds one row
group at a time. The directory is written under a temporary name and renamed when complete.
A sidecar ``DIR.json`` records the arguments and the exact per-condition target / non-target
counts, against which the benchmark checks that an evaluation counted every trial.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N_CONDITIONS = 20
TARGET_RATE = 0.1
TIE_FRACTION = 0.05
CONDITIONS = pa.array([f"c{c:02d}" for c in range(N_CONDITIONS)], pa.string())
DPRIME = 1.5 + 2.0 * np.arange(N_CONDITIONS) / (N_CONDITIONS - 1)
SCHEMA = pa.schema([("condition", pa.string()), ("score", pa.float64()),
                    ("label", pa.bool_()), ("system", pa.string())])
FULL_SCHEMA = pa.schema([("model", pa.int32()), ("segment", pa.int32()),
                         ("group", pa.int8()), ("segment_group", pa.int8()),
                         ("condition", pa.string()), ("score", pa.float64()),
                         ("label", pa.bool_()), ("trial_type", pa.string()),
                         ("system", pa.string())])
N_MODELS = 1000
N_GROUPS = 8
SPOOF_RATE = 0.2
TRIAL_TYPES = pa.array(["target", "nontarget", "spoof"], pa.string())


def row_group(rng: np.random.Generator, n: int, first: int | None = None
              ) -> tuple[pa.Table, np.ndarray]:
    """One row group of ``n`` trials and its (condition, label) counts.

    ``first`` (the dataset-wide index of its first trial) given: the ``--full`` layout.
    """
    full = first is not None
    cond = rng.integers(0, N_CONDITIONS, n, dtype=np.int32)
    u = rng.random(n)
    label = u < TARGET_RATE
    half = DPRIME[cond] / 2
    score = rng.standard_normal(n)
    if full:
        spoof = u >= 1 - SPOOF_RATE
        score += np.where(label, half, np.where(spoof, 0.0, -half))
    else:
        score += np.where(label, half, -half)
    tied = rng.random(n) < TIE_FRACTION
    score[tied] = np.round(score[tied], 2)
    counts = np.bincount(cond * 2 + label, minlength=2 * N_CONDITIONS)
    condition = pa.DictionaryArray.from_arrays(pa.array(cond), CONDITIONS).dictionary_decode()
    if full:
        kind = np.where(label, 0, np.where(spoof, 2, 1)).astype(np.int8)
        trial_type = pa.DictionaryArray.from_arrays(pa.array(kind), TRIAL_TYPES
                                                    ).dictionary_decode()
        i = np.arange(first, first + n, dtype=np.int64)
        model = (i % N_MODELS).astype(np.int32)
        segment = (i // N_MODELS).astype(np.int32)
        table = pa.Table.from_arrays(
            [pa.array(model), pa.array(segment), pa.array((model % N_GROUPS).astype(np.int8)),
             pa.array((segment % N_GROUPS).astype(np.int8)), condition,
             pa.array(score), pa.array(label), trial_type, pa.repeat(pa.scalar("sys1"), n)],
            schema=FULL_SCHEMA)
        return table, counts
    table = pa.Table.from_arrays(
        [condition, pa.array(score), pa.array(label), pa.repeat(pa.scalar("sys1"), n)],
        schema=SCHEMA)
    return table, counts


def write_file(path: Path, seed: int, k: int, n: int, row_group_trials: int,
               compression: str, first: int | None = None) -> np.ndarray:
    """Write file ``k`` (``n`` trials from trial ``first`` on, given in the ``--full``
    layout); return its (condition, label) counts."""
    rng = np.random.default_rng([seed, k])
    counts = np.zeros(2 * N_CONDITIONS, np.int64)
    schema = SCHEMA if first is None else FULL_SCHEMA
    with pq.ParquetWriter(path, schema, compression=compression) as w:
        for start in range(0, n, row_group_trials):
            table, c = row_group(rng, min(row_group_trials, n - start),
                                 None if first is None else first + start)
            w.write_table(table, row_group_size=row_group_trials)
            counts += c
    return counts


def make(out: Path, n_trials: int, *, seed: int = 0, file_trials: int = 10_000_000,
         row_group_trials: int = 1_000_000, threads: int | None = None,
         compression: str = "zstd", overwrite: bool = False, full: bool = False) -> dict:
    """Write the dataset; return the sidecar record (also written as ``out.json``)."""
    out = Path(out)
    side = out.with_suffix(".json")
    if out.exists() and not overwrite:
        raise SystemExit(f"{out} exists (use --overwrite)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    threads = threads or os.cpu_count() or 1
    sizes = [min(file_trials, n_trials - s) for s in range(0, n_trials, file_trials)]
    t = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            futures = [pool.submit(write_file, tmp / f"part-{k:05d}.parquet", seed, k, n,
                                   row_group_trials, compression,
                                   k * file_trials if full else None)
                       for k, n in enumerate(sizes)]
            counts = sum((f.result() for f in futures), np.zeros(2 * N_CONDITIONS, np.int64))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    seconds = time.perf_counter() - t
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    record = {
        "trials": n_trials, "seed": seed, "files": len(sizes), "file_trials": file_trials,
        "row_group_trials": row_group_trials, "compression": compression, "full": full,
        "seconds": seconds, "bytes": sum(f.stat().st_size for f in out.iterdir()),
        "counts": {f"c{c:02d}": {"n_non": int(counts[2 * c]), "n_tar": int(counts[2 * c + 1])}
                   for c in range(N_CONDITIONS)},
    }
    side.write_text(json.dumps(record, indent=1))
    return record


def ensure(out: Path, n_trials: int, **kwargs: object) -> dict:
    """The sidecar record of ``out``, writing the dataset first unless it matches."""
    side = Path(out).with_suffix(".json")
    if Path(out).is_dir() and side.exists():
        record = json.loads(side.read_text())
        if record["trials"] == n_trials and record["seed"] == kwargs.get("seed", 0):
            return record
    return make(Path(out), n_trials, overwrite=True, **kwargs)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("output", type=Path)
    ap.add_argument("--trials", type=float, required=True, help="e.g. 1e9")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--file-trials", type=float, default=1e7)
    ap.add_argument("--row-group", type=float, default=1e6)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--compression", default="zstd")
    ap.add_argument("--overwrite", action="store_true")
    ap.add_argument("--full", action="store_true",
                    help="also model, segment and trial_type columns (two-way bootstrap, spoof)")
    a = ap.parse_args(argv)
    need = int(a.trials) * (15 if a.full else 11)  # bytes per trial on disk
    free = shutil.disk_usage(a.output.parent if a.output.parent.exists() else ".").free
    if need > free * 0.9:
        print(f"not enough disk: need ~{need / 1e9:.1f} GB, {free / 1e9:.1f} GB free",
              file=sys.stderr)
        return 2
    r = make(a.output, int(a.trials), seed=a.seed, file_trials=int(a.file_trials),
             row_group_trials=int(a.row_group), threads=a.threads, compression=a.compression,
             overwrite=a.overwrite, full=a.full)
    print(f"wrote {r['trials']} trials in {r['files']} files, {r['bytes'] / 1e9:.2f} GB, "
          f"{r['seconds']:.1f} s -> {a.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
