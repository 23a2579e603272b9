"""Cohort statistics from cohort score tables, reduced out of core by id.

A cohort score table has one row per (id, cohort entry): ``enroll_id, cohort_id, score`` for
the enrolment side, ``test_id, cohort_id, score`` for the test side (``model``/``segment`` or
``id`` are accepted for the first column). The table is read in batches, file by file, on the
local executor's workers; each task keeps, per id, the exact count, sum and sum of squares
(:class:`~scoreframe.kernels.cohort.GroupMoments`) and the largest ``k`` scores. Task states
merge exactly (limbs add; top-k of top-k), in task order, so the statistics do not depend on
the batch size, the number of workers or the order of the rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from scoreframe.errors import FormatError, ValidationError, message
from scoreframe.frames.lazy import Data, as_lazy, parquet_source
from scoreframe.kernels.cohort import MAX_ABS, GroupMoments, merge_topk, moments_of_rows
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
    top: NDArray[np.float64] | None


def _reduce_piece(lf: pl.LazyFrame, *, idc: str, ids: list[str], kmax: int | None,
                  full: bool, exclude_same_id: bool, batch_rows: int,
                  tick: Callable[[int], None]) -> _State:
    g = len(ids)
    state = _State(GroupMoments(g), np.full((g, kmax), -np.inf) if kmax else None)
    q = lf.select(pl.col(idc).cast(pl.String).alias("id"),
                  pl.col("cohort_id").cast(pl.String), pl.col("score").cast(pl.Float64))
    q = q.filter(pl.col("id").is_not_null())
    if exclude_same_id:
        q = q.filter(pl.col("id") != pl.col("cohort_id"))
    q = q.select(pl.col("id").cast(pl.Enum(ids)).to_physical().cast(pl.Int64).alias("code"),
                 "score")
    for batch in q.collect_batches(chunk_size=batch_rows, engine="streaming"):
        scores = batch["score"].to_numpy()
        codes = batch["code"].to_numpy()
        if not np.all(np.abs(scores) < MAX_ABS):
            bad = batch.filter(~(pl.col("score").abs() < MAX_ABS))
            raise ValidationError(message(
                "cohort scores must be finite numbers", got=f"{bad.height} null, NaN or "
                "infinite score(s) in this batch", hint="Drop or fix them before normalizing."))
        if full:
            state.moments.add(scores, codes)
        if kmax and state.top is not None:
            srt = batch.sort(["code", "score"], descending=[False, True])
            c = srt["code"].to_numpy()
            s = srt["score"].to_numpy()
            starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
            run = np.repeat(starts, np.diff(np.r_[starts, c.shape[0]]))
            rank = np.arange(c.shape[0]) - run
            keep = rank < kmax
            touched = c[starts]
            dense = np.full((touched.shape[0], kmax), -np.inf)
            row = np.repeat(np.arange(starts.shape[0]), np.diff(np.r_[starts, c.shape[0]]))
            dense[row[keep], rank[keep]] = s[keep]
            seen = np.isfinite(state.top[touched, 0])  # rows sorted descending
            if seen.any():
                dense[seen] = merge_topk(state.top[touched[seen]], dense[seen], kmax)
            state.top[touched] = dense
            if not full:
                state.moments.count += np.bincount(codes, minlength=g)
        tick(batch.height)
    return state


def table_statistics(data: Data, *, side: str, ks: Sequence[int | None], ddof: int,
                     exclude_same_id: bool, memory_limit: int, workers: int,
                     progress: Callable[[int, int], None] | None = None,
                     ) -> pl.DataFrame:
    """Per-id cohort statistics of one side from a cohort score table (out of core).

    Returns one row per (id, k): ``side, id, top_k, ddof, n, mean, std``; ``n`` is the number
    of cohort scores of the id (after the leakage guard), ``top_k`` null for the whole cohort.
    Ids with fewer scores than a requested k get a null mean and std and the k in ``n``'s
    place is checked by the caller.
    """
    where = f"`{data}`" if isinstance(data, str | Path) else f"the {type(data).__name__} given"
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
    pieces = pieces_of(data, lf) if isinstance(data, str | Path) else [Piece(0, frame=lf)]
    executor = LocalExecutor(workers=min(workers, len(pieces)))
    state_bytes = len(ids) * (8 * (kmax or 0) + 8 * 24)
    budget = max(memory_limit // executor.workers - state_bytes, 64 * BYTES_PER_ROW * 1024)
    batch_rows = int(min(1_000_000, max(65_536, budget // BYTES_PER_ROW)))
    lock = threading.Lock()
    done = [0]

    def tick(rows: int) -> None:
        with lock:
            done[0] += rows
            if progress is not None:
                progress(done[0], n_rows)

    def task(group: list[Piece]) -> _State:
        """One worker's files, one after the other, into one state."""
        state: _State | None = None
        for piece in group:
            plf = pl.scan_parquet(piece.path) if piece.path is not None else piece.frame
            assert plf is not None
            st = _reduce_piece(plf, idc=idc, ids=ids, kmax=kmax, full=full,
                               exclude_same_id=exclude_same_id, batch_rows=batch_rows,
                               tick=tick)
            state = st if state is None else _merge(state, st, kmax)
        assert state is not None
        return state

    groups = [pieces[i::executor.workers] for i in range(executor.workers)]
    states = executor.map(task, groups)
    total = states[0]
    for st in states[1:]:  # in task order: exact either way
        total = _merge(total, st, kmax)
    return _frame(total, ids=ids, side=side, ks=ks, ddof=ddof)


#: Ids per step when two top-k states merge (bounds the temporaries).
MERGE_ROWS = 8192


def _merge(a: _State, b: _State, kmax: int | None) -> _State:
    a.moments.merge(b.moments)
    if a.top is not None and b.top is not None and kmax:
        for i in range(0, a.top.shape[0], MERGE_ROWS):
            rows = slice(i, i + MERGE_ROWS)
            a.top[rows] = merge_topk(a.top[rows], b.top[rows], kmax)
    return a


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
