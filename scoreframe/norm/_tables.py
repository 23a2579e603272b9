"""Cohort statistics from cohort score tables, reduced out of core by id.

A cohort score table has one row per (id, cohort entry): ``enroll_id, cohort_id, score`` for
the enrolment side, ``test_id, cohort_id, score`` for the test side (``model``/``segment`` or
``id`` are accepted for the first column). The table is read in batches by tasks, one per
worker, each with a share of the files (large files split into slices of row groups); the
tasks run on the local executor's threads or on Dask workers (``engine="dask"``). Each task
keeps, per id, the exact count, sum and sum of squares
(:class:`~scoreframe.kernels.cohort.GroupMoments`) and the largest ``k`` scores, and returns
them for the ids it saw. Task states merge exactly (limbs add; top-k of top-k), so the
statistics do not depend on the engine, the batch size, the number of workers, the file
layout or the order of the rows.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from scoreframe.checks import check_choice
from scoreframe.errors import FormatError, Place, UsageError, ValidationError, message
from scoreframe.frames.lazy import Data, as_lazy, parquet_source
from scoreframe.kernels.cohort import (
    MAX_ABS,
    GroupMoments,
    group_topk,
    merge_topk,
    moments_of_rows,
)
from scoreframe.stats.executors import LocalExecutor
from scoreframe.stats.outofcore import Piece, pieces_of

__all__ = ["BYTES_PER_ROW", "id_column", "table_statistics"]

#: Bytes per row of a batch while it is reduced (the frame, sorted copy, numpy views).
BYTES_PER_ROW = 160
_FIRST = {"enroll": ("enroll_id", "model", "id"), "test": ("test_id", "segment", "id")}


def id_column(names: Sequence[str], side: str, where: str) -> str:
    """The id column of a cohort score table of ``side``."""
    idc = next((c for c in _FIRST[side] if c in names), None)
    if idc is None:
        raise FormatError(message(f"no id column in the {side} cohort scores", where=where,
                                  expected=" or ".join(f"`{c}`" for c in _FIRST[side]),
                                  got="columns " + ", ".join(names)))
    for c in ("cohort_id", "score"):
        if c not in names:
            raise FormatError(message(f"no `{c}` column in the {side} cohort scores",
                                      where=where, got="columns " + ", ".join(names)))
    return idc


@dataclass
class _State:
    moments: GroupMoments
    top: NDArray[np.float64] | None  # per id: the k largest scores so far, descending
    floor: NDArray[np.float64]  # per id: the k-th largest so far (-inf: fewer than k)


@dataclass
class _Packed:
    """A task's state, of the ids it saw only (what a task returns, also from Dask)."""

    rows: NDArray[np.int64]  # the ids' codes
    moments: GroupMoments  # of those ids, renumbered 0..len(rows)-1
    top: NDArray[np.float64] | None


@dataclass(frozen=True)
class _Spec:
    """What every task of one reduction needs (picklable for Dask)."""

    idc: str
    ids: tuple[str, ...]
    kmax: int | None
    full: bool
    exclude_same_id: bool
    batch_rows: int


@dataclass(frozen=True)
class _Part:
    """Rows ``[offset, offset + length)`` of one Parquet file (all of it: ``length`` None)."""

    path: str
    hive: tuple[tuple[str, str], ...] = ()
    offset: int = 0
    length: int | None = None

    def scan(self) -> pl.LazyFrame:
        lf = pl.scan_parquet(self.path)
        names = lf.collect_schema().names()
        extra = [pl.lit(v).alias(k) for k, v in self.hive if k not in names]
        if extra:
            lf = lf.with_columns(extra)
        return lf if self.length is None else lf.slice(self.offset, self.length)


def _reduce_piece(lf: pl.LazyFrame, state: _State, spec: _Spec,
                  tick: Callable[[int], None] | None) -> None:
    """Add the rows of ``lf`` to ``state``, batch by batch."""
    g, kmax = len(spec.ids), spec.kmax
    q = lf.select(pl.col(spec.idc).cast(pl.String).alias("id"),
                  pl.col("cohort_id").cast(pl.String), pl.col("score").cast(pl.Float64))
    q = q.filter(pl.col("id").is_not_null())
    if spec.exclude_same_id:
        q = q.filter(pl.col("id") != pl.col("cohort_id"))
    q = q.select(pl.col("id").cast(pl.Enum(spec.ids)).to_physical().cast(pl.Int64)
                 .alias("code"), "score")
    for batch in q.collect_batches(chunk_size=spec.batch_rows, engine="streaming"):
        scores = batch["score"].to_numpy()
        codes = batch["code"].to_numpy()
        if not np.all(np.abs(scores) < MAX_ABS):
            bad = batch.filter(~(pl.col("score").abs() < MAX_ABS))
            raise ValidationError(message(
                "cohort scores must be finite numbers", got=f"{bad.height} null, NaN or "
                "infinite score(s) in this batch", hint="Drop or fix them before normalizing."))
        if spec.full:
            state.moments.add(scores, codes)
        if kmax and state.top is not None:
            if not spec.full:
                state.moments.count += np.bincount(codes, minlength=g)
            # only scores above an id's current k-th largest can enter its top k
            keep = scores > state.floor[codes]
            if not keep.all():
                scores, codes = scores[keep], codes[keep]
            if scores.shape[0]:
                touched, dense = group_topk(scores, codes, kmax)
                seen = np.isfinite(state.top[touched, 0])  # rows sorted descending
                if seen.any():
                    dense[seen] = merge_topk(state.top[touched[seen]], dense[seen], kmax)
                state.top[touched] = dense
                state.floor[touched] = dense[:, kmax - 1]
        if tick is not None:
            tick(batch.height)


def _reduce(spec: _Spec, sources: Sequence[_Part | pl.LazyFrame],
            tick: Callable[[int], None] | None = None) -> _Packed:
    """One task: its sources one after the other into one state, packed to the ids seen."""
    g = len(spec.ids)
    state = _State(GroupMoments(g), np.full((g, spec.kmax), -np.inf) if spec.kmax else None,
                   np.full(g, -np.inf))
    for src in sources:
        _reduce_piece(src.scan() if isinstance(src, _Part) else src, state, spec, tick)
    rows = np.flatnonzero(state.moments.count)
    return _Packed(rows, state.moments.take(rows),
                   None if state.top is None else state.top[rows])


def _task(item: tuple[_Spec, tuple[_Part, ...]]) -> _Packed:
    """A task of the reduction, run by an executor (a module-level function, for Dask)."""
    return _reduce(*item)


#: Rows per batch: bounds of the size drawn from the memory limit.
MIN_BATCH_ROWS = 65_536
MAX_BATCH_ROWS = 1_000_000
#: A task reads at least this many rows (a file is split into slices of its row groups to
#: keep every worker busy).
MIN_PART_ROWS = 1 << 20


def _parts(pieces: Sequence[Piece], n_rows: int, workers: int) -> list[_Part]:
    """The files, split into slices so that every worker gets a few."""
    target = max(MIN_PART_ROWS, -(-n_rows // (4 * workers)))
    out = []
    for pc in pieces:
        assert pc.path is not None
        rows = int(pl.scan_parquet(pc.path).select(pl.len()).collect().item())
        if rows <= 1.5 * target:
            out.append(_Part(pc.path, pc.hive))
            continue
        n = -(-rows // target)
        step = -(-rows // n)
        out.extend(_Part(pc.path, pc.hive, i, step) for i in range(0, rows, step))
    return out


def table_statistics(data: Data, *, side: str, ks: Sequence[int | None], ddof: int,
                     exclude_same_id: bool, memory_limit: int, workers: int | None,
                     engine: str = "local", scheduler: object = None,
                     progress: Callable[[int, int], None] | None = None,
                     ) -> pl.DataFrame:
    """Per-id cohort statistics of one side from a cohort score table (out of core).

    Returns one row per (id, k): ``side, id, top_k, ddof, n, mean, std``; ``n`` is the number
    of cohort scores of the id (after the leakage guard), ``top_k`` null for the whole cohort.
    Ids with fewer scores than a requested k get a null mean and std and the k in ``n``'s
    place is checked by the caller. ``engine="dask"`` runs the tasks on Dask workers
    (:class:`~scoreframe.stats.dask.DaskExecutor`: ``scheduler``, or a local cluster of
    ``workers`` processes); the data must then be Parquet given by path.
    """
    check_choice(engine, name="engine", choices=("local", "dask"))  # resolved by the caller
    where = Place(data) if isinstance(data, str | Path) else f"the {type(data).__name__} given"
    if engine == "dask" and not isinstance(data, str | Path):
        raise UsageError(message(
            "the dask engine reads cohort score tables by path", got=where,
            hint="Write the table to Parquet and pass its path."))
    lf = as_lazy(data) if not isinstance(data, str | Path) else _scan(data, where)
    names = lf.collect_schema().names()
    idc = id_column(names, side, where)
    if not lf.collect_schema()["score"].is_numeric():
        raise ValidationError(message("column `score` must be numeric", where=where,
                                      got=str(lf.collect_schema()["score"])))
    ids = sorted(lf.select(pl.col(idc).cast(pl.String).unique())
                 .collect(engine="streaming").to_series().drop_nulls().to_list())
    if not ids:
        raise ValidationError(message(f"no {side} cohort scores", where=where))
    n_rows = int(lf.select(pl.len()).collect(engine="streaming").item())
    tops = [k for k in ks if k is not None]
    kmax = max(tops) if tops else None
    full = None in ks
    with contextlib.ExitStack() as stack:
        executor: Any
        if engine == "dask":
            from scoreframe.stats.dask import DaskExecutor

            executor = stack.enter_context(DaskExecutor(scheduler=scheduler, workers=workers))
        else:
            executor = LocalExecutor(workers=workers)
        n_workers = executor.workers
        # a task's state: k scores and ~10 limbs of two exact sums per id, and the bins
        state_bytes = len(ids) * (8 * (kmax or 0) + 8 * 32)
        budget = max(memory_limit // n_workers - 2 * state_bytes, 64 * BYTES_PER_ROW * 1024)
        batch_rows = int(min(MAX_BATCH_ROWS, max(MIN_BATCH_ROWS, budget // BYTES_PER_ROW)))
        spec = _Spec(idc, tuple(ids), kmax, full, exclude_same_id, batch_rows)
        sources: list[Any] = (
            _parts(pieces_of(data, lf), n_rows, n_workers) if isinstance(data, str | Path)
            else [lf])
        groups = [tuple(sources[i::n_workers]) for i in range(min(n_workers, len(sources)))]
        if engine == "dask":
            packed = executor.map(_task, [(spec, grp) for grp in groups])
            if progress is not None:
                progress(n_rows, n_rows)
        else:
            lock = threading.Lock()
            done = [0]

            def tick(rows: int) -> None:
                with lock:
                    done[0] += rows
                    if progress is not None:
                        progress(done[0], n_rows)

            packed = executor.map(lambda grp: _reduce(spec, grp, tick), groups)
    total = _State(GroupMoments(len(ids)), np.full((len(ids), kmax), -np.inf) if kmax else None,
                   np.full(len(ids), -np.inf))
    for st in packed:  # in task order: exact either way
        _merge(total, st, kmax)
    return _frame(total, ids=ids, side=side, ks=ks, ddof=ddof)


#: Ids per step when two top-k states merge (bounds the temporaries).
MERGE_ROWS = 8192


def _merge(a: _State, b: _Packed, kmax: int | None) -> None:
    """Add a task's packed state into the total (exact; top-k of top-k)."""
    a.moments.merge(b.moments, rows=b.rows)
    if a.top is not None and b.top is not None and kmax:
        in_a = np.isfinite(a.top[b.rows, 0])
        new = b.rows[~in_a]
        a.top[new] = b.top[~in_a]
        both = np.flatnonzero(in_a)
        for i in range(0, both.shape[0], MERGE_ROWS):
            sel = both[i:i + MERGE_ROWS]
            rows = b.rows[sel]
            a.top[rows] = merge_topk(a.top[rows], b.top[sel], kmax)


def _scan(path: str | Path, where: str) -> pl.LazyFrame:
    src, hive = parquet_source(path)
    return pl.scan_parquet(src, hive_partitioning=hive or None)


def _frame(state: _State, *, ids: list[str], side: str, ks: Sequence[int | None],
           ddof: int) -> pl.DataFrame:
    counts = state.moments.count
    frames = []
    for k in ks:
        if k is None:
            mean, std = state.moments.finalize(ddof=ddof)
            n: Any = counts
        else:
            assert state.top is not None
            top = state.top[:, :k]
            ok = np.isfinite(top).all(axis=1)
            mean = np.full(len(ids), np.nan)
            std = np.full(len(ids), np.nan)
            with np.errstate(invalid="ignore"):  # rows short of k (-inf): set to NaN below
                for i in range(0, len(ids), MERGE_ROWS):  # in steps: bounded temporaries
                    rows = slice(i, i + MERGE_ROWS)
                    mean[rows], std[rows] = moments_of_rows(top[rows], ddof=ddof)
            mean[~ok] = np.nan
            std[~ok] = np.nan
            n = np.where(ok, k, np.minimum(counts, k))
        frames.append(pl.DataFrame({
            "side": side, "id": ids, "top_k": pl.Series([k] * len(ids), dtype=pl.Int64),
            "ddof": pl.Series([ddof] * len(ids), dtype=pl.Int8),
            "n": pl.Series(n, dtype=pl.Int64),
            "mean": pl.Series(mean, dtype=pl.Float64, nan_to_null=True),
            "std": pl.Series(std, dtype=pl.Float64, nan_to_null=True)}))
    return pl.concat(frames)
