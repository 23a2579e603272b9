"""The out-of-core engine: range-partition trials by score, spill, reduce range by range.

Statistics layer (Polars to read, numpy to reduce). Memory does not grow with the number of
trials: only one batch of rows (while partitioning) or one score range (while reducing) per
worker is in memory, and the statistics that come back are small. The phases:

1. *plan* (one streaming pass over the grouping columns and a sample of the scores): the
   base-group keys (given integer codes) and range boundaries from sample quantiles. Any
   boundaries give exact results; they only change the balance, and an equal score never
   straddles two ranges (ranges are ``[b_i, b_{i+1})``).
2. *partition* (one task per input piece: a Parquet file, or the whole LazyFrame when the
   input is not a path): each batch's rows go, as 12-byte records (score, group code * 2 +
   label), to one spill file per range and task under a temporary directory; the task returns
   its counts per (range, group, label) and the data-check counts. With id columns, a 64-bit
   hash of each trial's ids is spilled by hash range for the duplicate check.
3. *reduce* (one task per range): the records are split by group with a radix sort, each
   group's scores sorted once, units built by merging their members' sorted runs, and every
   unit's :class:`~scoreframe.stats.summary.ScoreStats` reduced with its :class:`Context`
   (the counts below the range come from phase 2).
4. *merge*: each unit's range statistics are merged in score order (exact).

The temporary directory is removed when the evaluation ends, also on errors; a directory
left by a killed process is recognized by its name and removed by the next run.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
import socket
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scoreframe.errors import MemoryLimitWarning, Place, ScoreframeError, message
from scoreframe.frames._sql_guard import where_expr
from scoreframe.frames.schema import id_hash, repeated_hashes
from scoreframe.io.atomic import SPILL_PREFIX, registered_temp
from scoreframe.kernels.sorted_scores import SortedScores
from scoreframe.stats._replicate_biometric import ReplicateContext, weighted_counts
from scoreframe.stats._replicate_families import class_units
from scoreframe.stats._replicates import merge_units, with_replicates
from scoreframe.stats._resampling import Replicates, SortedUnits
from scoreframe.stats._statistics import ClassData
from scoreframe.stats.executors import Executor, LocalExecutor
from scoreframe.stats.groups import Unit, class_plan, plan_units
from scoreframe.stats.reduce import (
    POSITION,
    UNIT_COLUMN,
    Checks,
    Statistics,
    UnitStats,
    check_counts,
    check_duplicates,
    class_data,
    covering,
    label_columns,
    merge_sorted,
    partitions,
    require_columns,
    unit_columns,
)
from scoreframe.stats.summary import (
    Context,
    EqContext,
    EqStats,
    Request,
    ScoreStats,
    empty_stats,
    merge,
    merge_equalized,
    reduce_equalized,
    reduce_sorted,
    verification_of,
)

#: Phase markers (``logging.debug("phase %s", name)``: count, plan, partition, duplicates,
#: reduce, merge, done), for tools that attribute time or CPU to phases
#: (``benchmarks/bench_phases.py``). Cheap: one record per phase.
LOG = logging.getLogger(__name__)

__all__ = ["RANGE_BYTES_PER_TRIAL", "SPILL_PREFIX", "compute", "partition_task", "plan_task",
           "reduce_task", "spill_full_error"]

#: Bytes per trial while a range is reduced (records read and concatenated, radix order, sorted
#: copies, the pooled merge, kernel temporaries): measured peak ~90 at 10^9 trials.
RANGE_BYTES_PER_TRIAL = 96
#: Bytes of one result row's statistics in one score range (point statistics, in memory:
#: measured ~1.9 KB at 1,501 rows), and per row and replicate (~2.9 KB: each replicate's
#: blocks, exact sums and threshold counts). A range's result costs this whatever its trials.
UNIT_RANGE_BYTES = 2048
REPLICATE_RANGE_BYTES = 3072
#: Bookkeeping per range and base group: counts per label, those below the range, a task's.
GROUP_RANGE_BYTES = 48
#: The smallest range worth a task (trials).
MIN_RANGE_TRIALS = 1024
#: The most score ranges a run uses.
MAX_RANGES = 60_000
#: Bytes spilled per trial: a record, plus a trial-id hash when duplicates are checked.
SPILL_BYTES_PER_TRIAL = 12
HASH_BYTES_PER_TRIAL = 8
#: Extra bytes per trial and resampling column of a range when replicates are asked for (the
#: spilled hashes, their sorted copies, unit codes and the pooled rows' merged copies, and
#: each unit's cost-term pieces and temporaries, for the group and again for the pooled row).
RANGE_BYTES_PER_UNIT_COLUMN = 128
RECORD = np.dtype([("score", "<f8"), ("key", "<u4")])


def record_dtype(n_units: int) -> np.dtype:
    """Spilled record: score, group code * 2 + label, and one hash per unit column."""
    if not n_units:
        return RECORD
    return np.dtype([("score", "<f8"), ("key", "<u4")]
                    + [(f"u{i}", "<u8") for i in range(n_units)])
SAMPLE_SIZE = 200_000
#: Seed of the hash that picks the planning sample's rows (a pseudo-random ``1/step`` of the
#: rows: every ``step``-th row would alias with any period in the row order, e.g. trials
#: written condition by condition, and plan ranges 20x larger than the memory limit allows).
SAMPLE_SEED = 0x5EED
BATCH_ROWS = 1_000_000


@dataclass(frozen=True)
class Piece:
    """One input piece: a Parquet file (with its hive values), or a LazyFrame (local only)."""

    index: int
    path: str | None = None
    hive: tuple[tuple[str, str], ...] = ()
    frame: pl.LazyFrame | None = None


@dataclass(frozen=True)
class PartitionSpec:
    """Everything a partition task needs besides its piece (picklable for Dask)."""

    spill_dir: str
    group_cols: tuple[str, ...]
    codes: dict[tuple[str | None, ...], int]
    boundaries: np.ndarray
    schema: dict[str, Any]
    where: str | None
    id_cols: tuple[str, ...] = ()
    hash_bits: int = 0
    batch_rows: int = BATCH_ROWS
    categories: tuple[tuple[str, ...], ...] = ()  # per group column, from the plan
    lut: np.ndarray | None = None  # mixed-radix category codes (null last) -> group code
    need_bytes: int = 0  # estimated size of everything spilled (for the disk-full message)
    replicates: Replicates | None = None  # spill each trial's unit hashes
    offsets: tuple[int, ...] = ()  # per piece: rows before it (trial positions)

    @property
    def n_units(self) -> int:
        """Unit columns spilled with each record."""
        return 0 if self.replicates is None else len(self.replicates.columns)


@dataclass
class PartitionResult:
    """Counts returned by a partition task: ``counts[range, group, label]`` and the checks."""

    counts: np.ndarray
    checks: Checks = field(default_factory=Checks)


@dataclass(frozen=True)
class ReduceSpec:
    """Everything a range task needs (picklable)."""

    spill_dir: str
    index: int
    units: tuple[Unit, ...]
    n_groups: int
    request: Request
    totals: np.ndarray  # [group, label] over all ranges
    offsets: np.ndarray  # [group, label] below this range
    equalize: bool
    p: np.ndarray
    q: np.ndarray
    classes_of: tuple[str | None, ...] | None = None  # per group code: its class value
    partition_of: tuple[int, ...] | None = None  # per group code: its equalized partition
    # the replicates' weighted counts [group, label, row], totals and below this range (for
    # the replicates' verification and replicated statistics), are in the spill directory
    # (False: the range is the whole of every unit, or nothing needs them)
    rep_files: bool = False

    @property
    def n_units(self) -> int:
        """Unit columns spilled with each record."""
        return 0 if self.request.replicates is None else len(self.request.replicates.columns)


@dataclass
class RangeResult:
    """The statistics of every unit in one range (and of its members when equalizing)."""

    stats: list[ScoreStats]
    eq: list[EqStats | None]
    members: list[list[ScoreStats]]


def _host() -> str:
    return socket.gethostname().replace("-", "_") or "host"


def clean_stale_spills(root: str | os.PathLike[str]) -> list[Path]:
    """Remove this host's spill directories whose process is no longer running.

    Names are ``scoreframe-spill-<host>-<pid>-<random>``: on a spill directory shared by the
    nodes of a cluster, only the directories of this host are ever removed. Returns them.
    """
    removed: list[Path] = []
    try:
        entries = list(Path(root).glob(f"{SPILL_PREFIX}{_host()}-*"))
    except OSError:
        return removed
    for d in entries:
        try:
            pid = int(d.name[len(SPILL_PREFIX) + len(_host()) + 1:].split("-")[0])
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        except PermissionError:
            pass
    return removed


def _scan_piece(piece: Piece, spec: PartitionSpec) -> pl.LazyFrame:
    if piece.frame is not None:
        return piece.frame
    lf = pl.scan_parquet(piece.path)  # type: ignore[arg-type]  # a piece read here always has a path
    names = lf.collect_schema().names()
    lits = []
    for k, v in piece.hive:
        if k not in names:
            dtype = spec.schema.get(k, pl.String)
            lits.append(pl.lit(v).cast(dtype).alias(k))
    if lits:
        lf = lf.with_columns(lits)
    if spec.where:
        lf = lf.filter(where_expr(spec.where))
    return lf


def _batches(lf: pl.LazyFrame, spec: PartitionSpec, piece: Piece | None = None) -> Any:
    schema = pl.Schema(spec.schema)
    label, bad = label_columns(schema)
    if spec.lut is not None:  # category codes, combined in numpy through the lookup table
        keys = [pl.col(c).cast(pl.String).cast(pl.Enum(list(cats))).to_physical()
                .fill_null(len(cats)).cast(pl.Int64).alias(c)
                for c, cats in zip(spec.group_cols, spec.categories, strict=True)]
    else:
        keys = [pl.col(c).cast(pl.String).alias(c) for c in spec.group_cols]
    cols: list[pl.Expr] = [*keys, pl.col("score").cast(pl.Float64), label, bad.alias("__bad")]
    if spec.id_cols:
        cols.append(id_hash(spec.id_cols).alias("__hash"))
    if spec.replicates is not None:
        if spec.replicates.trial and not spec.replicates.ids:
            offset = spec.offsets[piece.index] if piece is not None and spec.offsets else 0
            lf = lf.with_row_index(POSITION, offset=offset)
        cols += unit_columns(spec.replicates, list(spec.schema))
    return lf.select(cols).collect_batches(chunk_size=spec.batch_rows, engine="streaming")


class _Writer:
    """Appends records to one file per range (and hashes to one file per hash range)."""

    def __init__(self, spill_dir: str, task: int) -> None:
        self.dir = Path(spill_dir)
        self.task = task
        self.files: dict[str, Any] = {}

    def write(self, name: str, data: np.ndarray) -> None:
        f = self.files.get(name)
        if f is None:
            path = self.dir / name
            path.mkdir(exist_ok=True)
            f = self.files[name] = open(path / f"t{self.task:06d}.bin", "ab")  # noqa: SIM115
        f.write(np.ascontiguousarray(data).view(np.uint8).data)  # OSError keeps its errno

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def partition_task(args: tuple[Piece, PartitionSpec]) -> PartitionResult:
    """Phase 2: read one piece in batches and spill its records by score range."""
    piece, spec = args
    n_ranges = spec.boundaries.shape[0] + 1
    n_groups = max(len(spec.codes), 1)
    counts = np.zeros((n_ranges, n_groups, 2), dtype=np.int64)
    checks = Checks()
    writer = _Writer(spec.spill_dir, piece.index)
    try:
        try:
            for batch in _batches(_scan_piece(piece, spec), spec, piece):
                _partition_batch(batch, spec, counts, checks, writer)
        finally:
            writer.close()
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise spill_full_error(spec.spill_dir, spec.need_bytes, exc) from None
        raise
    return PartitionResult(counts, checks)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover - the loop returns


def spill_full_error(spill_dir: str, need_bytes: int, exc: OSError) -> ScoreframeError:
    """The message of a spill that ran out of disk: the directory, the size needed, the free space.

    Examples
    --------
    >>> import errno, tempfile
    >>> d = tempfile.mkdtemp()
    >>> msg = str(spill_full_error(d, 10**9, OSError(errno.ENOSPC, "No space left on device")))
    >>> msg.startswith("`"), ": no space left for the out-of-core spill" in msg
    (True, True)
    >>> "--spill-dir" in msg and "free" in msg
    True
    """
    root = Path(spill_dir).parent
    try:
        free = _size(shutil.disk_usage(root).free) + " free"
    except OSError:
        free = "unknown free space"
    why = "the disk is full" if exc.errno == errno.ENOSPC else (
        "the disk quota is exceeded" if exc.errno == errno.EDQUOT else "a file is too large")
    return ScoreframeError(message(
        "no space left for the out-of-core spill", where=Place(root),
        expected=f"about {_size(need_bytes)} of temporary score ranges",
        got=f"{why} ({free})",
        hint="Free space there, or spill to a larger disk with spill_dir= (CLI --spill-dir) "
             "or SCOREFRAME_SPILL_DIR; a larger memory_limit (CLI --memory-limit) keeps "
             "more in memory."))


def _partition_batch(batch: pl.DataFrame, spec: PartitionSpec, counts: np.ndarray,
                     checks: Checks, writer: _Writer) -> None:
    n = batch.height
    if n == 0:
        return
    score_s = batch["score"]
    label_s = batch["label"]
    checks.add(Checks(rows=n, null_score=score_s.null_count(),
                      nan_score=int(score_s.is_nan().sum() or 0),
                      unknown_label=label_s.null_count(),
                      bad_label=int(batch["__bad"].sum() or 0)))
    keep = (score_s.is_not_null() & ~score_s.is_nan().fill_null(False) & label_s.is_not_null())
    if not keep.all():
        batch = batch.filter(keep)
    if batch.height == 0:
        return
    if spec.group_cols and spec.lut is not None:
        mixed = np.zeros(batch.height, dtype=np.int64)
        for c, cats in zip(spec.group_cols, spec.categories, strict=True):
            mixed *= len(cats) + 1
            mixed += batch[c].to_numpy()
        group = spec.lut[mixed]
    elif spec.group_cols:  # too many combinations for a lookup table: join the keys
        key_frame = batch.select(spec.group_cols)
        uniq = key_frame.unique(maintain_order=True)
        lut = np.array([spec.codes[tuple(r)] for r in uniq.iter_rows()], dtype=np.uint32)
        local = (key_frame.join(uniq.with_row_index("__code"), on=list(spec.group_cols),
                                how="left", nulls_equal=True, maintain_order="left")
                 ["__code"].to_numpy())
        group = lut[local]
    else:
        group = np.zeros(batch.height, dtype=np.uint32)
    score = batch["score"].to_numpy()
    key = group.astype(np.uint32) * 2 + batch["label"].to_numpy().astype(np.uint32)
    n_ranges = spec.boundaries.shape[0] + 1
    rng = _range_of(score, spec.boundaries)
    flat = rng.astype(np.int64) * (2 * counts.shape[1]) + key
    counts += np.bincount(flat, minlength=counts.size).reshape(counts.shape)
    # records in range order; fields gathered as plain arrays (a structured gather is ~6x
    # slower) and interleaved once
    order = np.argsort(rng, kind="stable")  # radix sort of 16-bit keys
    rec = np.empty(score.shape[0], dtype=record_dtype(spec.n_units))
    rec["score"] = score[order]
    rec["key"] = key[order]
    for i in range(spec.n_units):
        rec[f"u{i}"] = batch[UNIT_COLUMN.format(i)].to_numpy()[order]
    bounds = np.zeros(n_ranges + 1, np.int64)
    np.cumsum(np.bincount(rng, minlength=n_ranges), out=bounds[1:])
    for r in np.flatnonzero(np.diff(bounds)):
        writer.write(f"r{r:05d}", rec[bounds[r]:bounds[r + 1]])
    if spec.id_cols:
        h = batch["__hash"].to_numpy()
        part = (h >> np.uint64(64 - spec.hash_bits)).astype(np.uint32) if spec.hash_bits \
            else np.zeros(h.shape[0], np.uint32)
        horder = np.argsort(part, kind="stable")
        hb = np.zeros((1 << spec.hash_bits) + 1, np.int64)
        np.cumsum(np.bincount(part, minlength=1 << spec.hash_bits), out=hb[1:])
        hs = h[horder]
        for r in np.flatnonzero(np.diff(hb)):
            writer.write(f"h{r:05d}", hs[hb[r]:hb[r + 1]])


#: Up to this many boundaries, a score's range is counted with one vectorized comparison per
#: boundary (branch-free, ~5x faster than a binary search per score at ~30 boundaries).
COMPARE_BOUNDARIES = 48


def _range_of(score: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """The range of each score: the number of boundaries ``<=`` it (ranges ``[b_i, b_i+1)``)."""
    if boundaries.shape[0] > COMPARE_BOUNDARIES:
        return np.searchsorted(boundaries, score, side="right").astype(np.uint16)
    rng = np.zeros(score.shape[0], np.uint16)
    for b in boundaries:  # a loop over the few boundaries, not over trials
        rng += score >= b
    return rng


def _read_dir(path: Path, dtype: np.dtype) -> np.ndarray:
    """All records of one spill directory, read straight into one array (no second copy)."""
    files = sorted(path.glob("t*.bin")) if path.is_dir() else []
    sizes = [f.stat().st_size // dtype.itemsize for f in files]
    out = np.empty(sum(sizes), dtype=dtype)
    pos = 0
    for f, n in zip(files, sizes, strict=True):
        with open(f, "rb") as fh:
            fh.readinto(out[pos:pos + n].view(np.uint8).data)
        pos += n
    return out


def reduce_task(spec: ReduceSpec) -> RangeResult:
    """Phase 3: the statistics of every unit in one score range."""
    path = Path(spec.spill_dir) / f"r{spec.index:05d}"
    rep_totals: np.ndarray | None = None
    rep_offsets: np.ndarray | None = None
    if spec.rep_files:
        w = Path(spec.spill_dir) / f"w{spec.index:05d}.npy"
        rep_totals, rep_offsets = np.load(Path(spec.spill_dir) / "wtotal.npy"), np.load(w)
        w.unlink()
    rec = _read_dir(path, record_dtype(spec.n_units))
    shutil.rmtree(path, ignore_errors=True)
    # plain contiguous fields first: gathers through a structured array are ~3x slower
    key = rec["key"].astype(np.uint16 if spec.n_groups < 32768 else np.uint32)
    score = np.ascontiguousarray(rec["score"])
    hashes = [np.ascontiguousarray(rec[f"u{i}"]) for i in range(spec.n_units)]
    del rec
    order = np.argsort(key, kind="stable")  # radix sort when the keys fit 16 bits
    score = score[order]
    hashes = [h[order] for h in hashes]
    bounds = np.zeros(2 * spec.n_groups + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=2 * spec.n_groups), out=bounds[1:])
    del key, order
    base: list[SortedScores] = []
    base_units: list[SortedUnits] = []
    for g in range(spec.n_groups):
        if hashes:  # the unit hashes travel with the scores
            sides = []
            for a, b in ((bounds[2 * g + 1], bounds[2 * g + 2]),  # targets, then non-targets
                         (bounds[2 * g], bounds[2 * g + 1])):
                o = np.argsort(score[a:b], kind="stable")
                sides.append((score[a:b][o], tuple(h[a:b][o] for h in hashes)))
            base.append(SortedScores(sides[0][0], sides[1][0]))
            base_units.append(SortedUnits(sides[0][1], sides[1][1]))
            continue
        non = np.sort(score[bounds[2 * g]:bounds[2 * g + 1]])
        tar = np.sort(score[bounds[2 * g + 1]:bounds[2 * g + 2]])
        base.append(SortedScores(tar, non))
    del score, hashes
    spec_r = spec.request.replicates

    def ctx(members: Sequence[int]) -> Context:
        m = list(members)
        return Context(int(spec.totals[m, 1].sum()), int(spec.totals[m, 0].sum()),
                       int(spec.offsets[m, 1].sum()), int(spec.offsets[m, 0].sum()))

    def rep_ctx(members: Sequence[int]) -> ReplicateContext | None:
        if rep_totals is None or rep_offsets is None:
            return None
        m = list(members)
        tot, off = rep_totals[m].sum(axis=0), rep_offsets[m].sum(axis=0)
        by: dict[str | None, list[int]] = {}  # per class (replicated class statistics)
        cls_of = spec.classes_of or ()
        for g in m if cls_of else ():
            by.setdefault(cls_of[g], []).append(g)
        return ReplicateContext(tot[1], tot[0], off[1], off[0],
                                {c: rep_totals[gs].sum(axis=(0, 1)) for c, gs in by.items()},
                                {c: rep_offsets[gs].sum(axis=(0, 1))
                                 for c, gs in by.items()})

    cache: dict[int, ScoreStats] = {}

    def classes(members: Sequence[int]) -> dict[str | None, ClassData] | None:
        if spec.classes_of is None:
            return None
        return class_data(members, spec.classes_of, base, spec.totals.sum(axis=1),
                          spec.offsets.sum(axis=1))

    def base_stats(g: int) -> ScoreStats:
        if g not in cache:
            cache[g] = reduce_sorted(base[g], spec.request, ctx([g]), classes=classes([g]))
        return cache[g]

    stats, eqs, members = [], [], []
    reduced: dict[tuple[int, ...], ScoreStats] = {}  # units' statistics, by their members
    for u in spec.units:
        if spec_r is not None:
            s, su = merge_units([(base[g], base_units[g]) for g in u.members])
            st = base_stats(u.members[0]) if len(u.members) == 1 else \
                reduce_sorted(s, spec.request, ctx(u.members), classes=classes(u.members),
                              parts=covering(u.members, reduced))
            fam = None if spec.classes_of is None or not spec.request.replicated else \
                class_units(u.members, spec.classes_of, base, base_units, spec_r)
            stats.append(with_replicates(st, s, su, spec_r, spec.request.thresholds,
                                         verification=verification_of(spec.request),
                                         context=rep_ctx(u.members),
                                         statistics=spec.request.replicated, classes=fam))
        elif len(u.members) == 1:
            stats.append(base_stats(u.members[0]))
        else:
            stats.append(reduce_sorted(merge_sorted([base[g] for g in u.members]),
                                       spec.request, ctx(u.members),
                                       classes=classes(u.members),
                                       parts=covering(u.members, reduced)))
        # (a later pooled unit reads only their Cllr sums and additive statistics)
        reduced[tuple(u.members)] = stats[-1]
        eq = None
        mem: list[ScoreStats] = []
        if spec.equalize and spec.partition_of is not None:  # partitions split by class
            groups = partitions(u.members, spec.partition_of)
            parts = [merge_sorted([base[g] for g in gs]) for gs in groups]
            tt = np.array([spec.totals[gs, 1].sum() for gs in groups], np.int64)
            nn = np.array([spec.totals[gs, 0].sum() for gs in groups], np.int64)
            if tt.sum() and nn.sum():
                eq = reduce_equalized(parts, EqContext(
                    tt, nn, np.array([spec.offsets[gs, 1].sum() for gs in groups], np.int64),
                    np.array([spec.offsets[gs, 0].sum() for gs in groups], np.int64)),
                    spec.p, spec.q)
            mem = [reduce_sorted(s, spec.request, ctx(gs)) for s, gs in zip(parts, groups,
                                                                          strict=True)]
        elif spec.equalize:
            m = list(u.members)
            tt, nn = spec.totals[m, 1], spec.totals[m, 0]
            if tt.sum() and nn.sum():
                eq = reduce_equalized([base[g] for g in m],
                                      EqContext(tt, nn, spec.offsets[m, 1], spec.offsets[m, 0]),
                                      spec.p, spec.q)
            mem = [base_stats(g) for g in m]
        eqs.append(eq)
        members.append(mem)
    return RangeResult(stats, eqs, members)


def weighted_counts_task(args: tuple[str, int, int, Replicates]) -> np.ndarray:
    """The replicates' weighted counts ``[group, label, row]`` of one spilled range.

    Reads the range's records without removing them (the reduction reads them next).
    """
    spill_dir, index, n_groups, replicates = args
    path = Path(spill_dir) / f"r{index:05d}"
    n_units = len(replicates.columns)
    if not path.exists():
        return np.zeros((n_groups, 2, replicates.n_rows), np.int64)
    rec = _read_dir(path, record_dtype(n_units))
    key = np.ascontiguousarray(rec["key"])
    hashes = [np.ascontiguousarray(rec[f"u{i}"]) for i in range(n_units)]
    del rec
    return weighted_counts(key, hashes, replicates, n_groups)


def duplicate_task(args: tuple[str, int]) -> np.ndarray:
    """Hashes that occur more than once in one hash range (candidates for duplicates)."""
    spill_dir, index = args
    path = Path(spill_dir) / f"h{index:05d}"
    h = _read_dir(path, np.dtype("<u8"))
    shutil.rmtree(path, ignore_errors=True)
    # sorted in place: a sorted copy would double the range's memory (2 GB per task pair at
    # 10^9 trials with the default 1 GiB budget, where the budget allows one copy)
    return repeated_hashes(h, overwrite_input=True)


def pieces_of(data: object, lf: pl.LazyFrame) -> list[Piece]:
    """Input pieces: the Parquet files of a path (with hive values), else the LazyFrame."""
    if isinstance(data, str | Path):
        p = Path(data)
        if p.is_dir():
            files = sorted(p.rglob("*.parquet"))
            root = p
        elif p.exists():
            files, root = [p], p.parent
        else:
            files = sorted(Path(p.anchor or ".").glob(str(p.relative_to(p.anchor))
                                                      if p.is_absolute() else str(p)))
            root = Path(".")
        out = []
        for i, f in enumerate(files):
            rel = f.relative_to(root).parts[:-1] if f.is_relative_to(root) else ()
            hive = tuple(tuple(part.split("=", 1)) for part in rel if "=" in part)
            out.append(Piece(i, str(f), hive))  # type: ignore[arg-type]  # hive pairs are (name, value) 2-tuples
        if out:
            return out
    return [Piece(0, frame=lf)]


@dataclass(frozen=True)
class PlanSpec:
    """What a plan task needs (picklable): the grouping columns and the sampling step."""

    group_cols: tuple[str, ...]
    schema: dict[str, Any]
    where: str | None
    step: int


def sample_rows(position: pl.Expr, step: int) -> pl.Expr:
    """Whether each row is in the planning sample: a seeded hash of its 0-based position.

    The one rule of both ways a plan task reads (a file's row index, a query's batches with
    their offsets), so the same rows are picked however the trials arrive.
    """
    return (position.cast(pl.UInt64).hash(SAMPLE_SEED) % step) == 0


def plan_task(args: tuple[Piece, PlanSpec]) -> tuple[pl.DataFrame, np.ndarray, int]:
    """Phase 1 on one piece: its group keys, a sample of its finite scores, its rows.

    The sample is a ``1/step`` of the rows, picked by a hash of their position. One file at
    a time, so memory is bounded by a file's columns, not by the dataset.
    """
    piece, spec = args
    lf = _scan_piece(piece, PartitionSpec("", spec.group_cols, {}, np.empty(0), spec.schema,
                                          spec.where))
    keys = lf.select([pl.col(c).cast(pl.String) for c in spec.group_cols]).unique() \
        if spec.group_cols else pl.LazyFrame()
    score = pl.col("score").cast(pl.Float64)
    if piece.frame is None:  # one file: the three answers from one read
        sample = lf.select(score).with_row_index("__row").filter(
            score.is_finite() & sample_rows(pl.col("__row"), spec.step)).select("score")
        frames = pl.collect_all([keys, sample, lf.select(pl.len())], engine="streaming")
        return frames[0], frames[1]["score"].to_numpy(), int(frames[2].item())
    # A query (joins, filters): collected together, the plans would share the query's whole
    # result in memory; run separately, each streams in batches.
    key_frame = keys.collect(engine="streaming") if spec.group_cols else pl.DataFrame()
    parts, rows = [], 0
    for batch in lf.select(score).collect_batches(chunk_size=BATCH_ROWS, engine="streaming"):
        position = pl.int_range(rows, rows + batch.height, dtype=pl.UInt64)
        rows += batch.height
        parts.append(batch.select(pl.col("score").filter(
            pl.col("score").is_finite() & sample_rows(position, spec.step)))["score"].to_numpy())
    return key_frame, np.concatenate(parts) if parts else np.empty(0), rows


def _plan(pieces: Sequence[Piece], spec: PlanSpec, executor: Executor
          ) -> tuple[list[dict[str, str | None]], np.ndarray, tuple[int, ...]]:
    """Phase 1: the group keys (sorted), the sorted score sample and the pieces' row offsets."""
    parts = executor.map(plan_task, [(pc, spec) for pc in pieces])
    cols = list(spec.group_cols)
    if cols:
        keys = (pl.concat([k for k, _, _ in parts], how="vertical_relaxed").unique()
                .sort(cols).to_dicts())
    else:
        keys = [{}]
    offsets = tuple(np.concatenate(([0], np.cumsum([c for _, _, c in parts])))[:-1].tolist())
    sample = np.sort(np.concatenate([s for _, s, _ in parts])) if parts else np.empty(0)
    return keys, sample, offsets


@dataclass(frozen=True)
class RangePlan:
    """How many score ranges, and how many reduce tasks in flight (``window``).

    ``peak`` is the estimated memory of the reduction (bytes) and ``fits`` whether it is
    within the memory limit.
    """

    n_ranges: int
    window: int
    range_trials: int
    peak: int
    fits: bool


def range_plan(*, n_rows: int, per_trial: int, fixed: int, n_groups: int, workers: int,
               memory_limit: int) -> RangePlan:
    """The ranges and reduce tasks in flight that keep the reduction within ``memory_limit``.

    A range's task holds its trials (``per_trial`` bytes each) and builds its result, which
    costs ``fixed`` bytes whatever the range's size (result rows x replicates); results that
    are done wait, in range order, to be folded into the running statistics (one more result,
    and one while merging). With ``window`` tasks in flight of which ``r = min(workers,
    window)`` run, the estimated peak is ``r * (trials * per_trial + fixed) + (window - r) *
    fixed + 2 * fixed``, plus :data:`GROUP_RANGE_BYTES` per range and group of bookkeeping.
    A window must leave ranges of at least :data:`MIN_RANGE_TRIALS` trials. Of ``2 *
    workers`` (a worker that finishes early takes the next range) and ``workers``, the one
    that needs fewer ranges wins (the wider on a tie): each range also pays the fixed part in
    time (the statistics of its replicates), so with 1,000 replicates the narrower window's
    larger ranges are faster. Then fewer tasks than workers. If none fits, the limit cannot
    be met: one task at a time,
    ranges whose trials cost about what their fixed part does (smaller ones would save little
    and cost a fixed part each), ``fits=False``.

    Whole rounds: once there are at least as many ranges as running tasks, their number is
    rounded up to a multiple of it (no task idles while the last range is reduced; the ranges
    at most double, so only get smaller).

    Examples
    --------
    >>> p = range_plan(n_rows=10**8, per_trial=100, fixed=10**6, n_groups=20, workers=2,
    ...                memory_limit=2**30)
    >>> p.n_ranges, p.window, p.fits
    (20, 4, True)
    >>> range_plan(n_rows=10**6, per_trial=400, fixed=4 * 10**8, n_groups=1500, workers=2,
    ...            memory_limit=20 * 10**6).fits
    False
    """
    workers = max(1, workers)
    book = GROUP_RANGE_BYTES * max(n_groups, 1)

    def peak_of(n: int, trials: int, window: int) -> int:
        run = min(workers, window)
        return (run * (trials * per_trial + fixed) + (window - run) * fixed
                + (2 * fixed if n > 1 else 0) + n * book)

    def plan(window: int) -> RangePlan | None:
        run = min(workers, window)
        n = 1
        for _ in range(2):  # the bookkeeping grows with the ranges: a second pass counts it
            avail = memory_limit - window * fixed - 2 * fixed - n * book
            trials = avail // (run * per_trial) if avail > 0 else 0
            if trials < MIN_RANGE_TRIALS:
                break
            n = max(1, -(-n_rows // trials))
            if n >= run:
                n = -(-n // run) * run
            n = min(MAX_RANGES, n)
        trials = -(-n_rows // n)
        peak = peak_of(n, trials, window)
        if (n == 1 or trials >= MIN_RANGE_TRIALS) and peak <= memory_limit:
            return RangePlan(n, window, trials, peak, True)
        return None

    # all workers busy; of the two windows the one with fewer ranges (each range pays the
    # fixed part in time too: its replicates' statistics), the wider on a tie
    wide, narrow = plan(2 * workers), plan(workers)
    if wide is not None and (narrow is None or wide.n_ranges <= narrow.n_ranges):
        return wide
    if narrow is not None:
        return narrow
    for window in range(workers - 1, 0, -1):  # fewer tasks than workers
        fewer = plan(window)
        if fewer is not None:
            return fewer
    trials = max(MIN_RANGE_TRIALS, fixed // max(per_trial, 1),
                 (memory_limit - 3 * fixed) // max(per_trial, 1))
    n = min(MAX_RANGES, max(1, -(-n_rows // trials)))
    trials = -(-n_rows // n)
    peak = peak_of(n, trials, 1)
    return RangePlan(n, 1, trials, peak, peak <= memory_limit)


def _boundaries(sample: np.ndarray, n_ranges: int) -> np.ndarray:
    """Range boundaries: the sample's quantiles (distinct), none for one range."""
    if n_ranges == 1 or sample.shape[0] == 0:
        return np.empty(0)
    qs = np.quantile(sample, np.linspace(0, 1, n_ranges + 1)[1:-1], method="inverted_cdf")
    return np.unique(qs)


def compute(data: object, lf: pl.LazyFrame, *, group_cols: Sequence[str],
            row_cols: Sequence[str], system_cols: Sequence[str], pooled: bool, equalize: bool,
            request: Request, p: np.ndarray, q: np.ndarray, engine: str, memory_limit: int,
            workers: int | None, scheduler: object, id_cols: Sequence[str],
            where: str | None,
            where_name: str, progress: Callable[[int, int], None] | None = None,
            spill_root: str | None = None, class_col: str | None = None) -> Statistics:
    """Run the out-of-core engine (see the module docstring); returns ``Statistics``."""
    t0 = time.perf_counter()
    bound_heap()
    schema = lf.collect_schema()
    require_columns(schema, group_cols, where=where_name)
    label_columns(schema)  # checks the label column's type up front
    root = spill_root or os.environ.get("SCOREFRAME_SPILL_DIR") or tempfile.gettempdir()
    if not Path(root).is_dir():
        raise ScoreframeError(message(
            "the spill directory does not exist", where=Place(root),
            expected="an existing directory for the temporary score ranges",
            got="a file" if Path(root).exists() else "no such directory",
            hint="Create it, or name another with spill_dir= (CLI --spill-dir) or "
                 "SCOREFRAME_SPILL_DIR."))
    clean_stale_spills(root)
    spill_path = Path(root) / f"{SPILL_PREFIX}{_host()}-{os.getpid()}-{secrets.token_hex(4)}"
    registration = registered_temp(spill_path)  # removed by the next run if this one is killed
    registration.__enter__()
    try:
        spill_path.mkdir(mode=0o700)
    except BaseException:
        registration.__exit__(None, None, None)
        raise
    spill = str(spill_path)
    executor: Executor
    ctxmgr: Any = None
    try:
        if engine == "dask":
            from scoreframe.stats.dask import DaskExecutor

            ctxmgr = DaskExecutor(scheduler=scheduler, workers=workers)
            executor = ctxmgr.__enter__()
        else:
            executor = LocalExecutor(workers=workers)
        LOG.debug("phase %s", "count")
        n_rows = int(lf.select(pl.len()).collect(engine="streaming").item())
        per_trial = RANGE_BYTES_PER_TRIAL + request.bytes_per_trial + (
            0 if request.replicates is None
            else RANGE_BYTES_PER_UNIT_COLUMN * len(request.replicates.columns))
        # a batch row costs ~200 B while partitioned (the frame, codes, records, the order)
        batch_rows = int(min(BATCH_ROWS, max(16_384, memory_limit // (200 * executor.workers))))
        pieces = pieces_of(data, lf) if engine == "dask" or isinstance(data, str | Path) \
            else [Piece(0, frame=lf)]
        if engine == "dask" and any(pc.frame is not None for pc in pieces):
            raise ScoreframeError(message(
                "the dask engine reads Parquet datasets by path", got=where_name,
                hint="Write the trials with scoreframe.write_trials and evaluate the path."))
        piece_where = where if pieces[0].frame is None else None
        LOG.debug("phase %s", "plan")
        keys, sample, offsets = _plan(
            pieces, PlanSpec(tuple(group_cols), dict(schema), piece_where,
                             max(1, n_rows // SAMPLE_SIZE)), executor)
        rows_out = len(plan_units(keys, row_cols=row_cols, system_cols=system_cols,
                                  pooled=pooled))
        n_rep = 0 if request.replicates is None else request.replicates.n_rows
        fixed = (rows_out * (UNIT_RANGE_BYTES + n_rep * REPLICATE_RANGE_BYTES)
                 + (len(keys) * UNIT_RANGE_BYTES if equalize else 0))
        rplan = range_plan(n_rows=n_rows, per_trial=per_trial, fixed=fixed,
                           n_groups=len(keys), workers=executor.workers,
                           memory_limit=memory_limit)
        if not rplan.fits:
            warnings.warn(MemoryLimitWarning(
                f"memory_limit={_size(memory_limit)} is below what this evaluation needs: the "
                f"statistics of {rows_out:,} result rows"
                + (f" x {n_rep:,} replicates" if n_rep else "")
                + f" take about {_size(fixed)} per score range whatever its trials; it goes on "
                f"with {rplan.n_ranges:,} range{'s' if rplan.n_ranges > 1 else ''}, one at a "
                f"time, and may use about {_size(rplan.peak)} (raise memory_limit, or ask "
                "for fewer groups or replicates)", need=rplan.peak, limit=memory_limit),
                stacklevel=2)
        range_trials = rplan.range_trials
        boundaries = _boundaries(sample, rplan.n_ranges)
        del sample
        t_plan = time.perf_counter()
        peak_plan = _peak_mb()
        codes = {tuple(k[c] for c in group_cols): i for i, k in enumerate(keys)}
        hash_bits = 0
        if id_cols:
            need = max(1, -(-(n_rows * 8 * executor.workers) // memory_limit))
            hash_bits = min(12, int(np.ceil(np.log2(need))) if need > 1 else 0)
        cats = tuple(tuple(sorted({str(k[c]) for k in keys if k[c] is not None}))
                     for c in group_cols)
        size = int(np.prod([len(x) + 1 for x in cats])) if cats else 1
        lut: np.ndarray | None = np.zeros(size, np.uint32) if size <= 1 << 22 else None
        for code, k in enumerate(keys if lut is not None else []):
            mixed = 0
            for c, cs in zip(group_cols, cats, strict=True):
                mixed = mixed * (len(cs) + 1) + (cs.index(k[c]) if k[c] is not None
                                                 else len(cs))
            lut[mixed] = code  # type: ignore[index]  # the loop runs only when lut is not None
        need = n_rows * (SPILL_BYTES_PER_TRIAL + (HASH_BYTES_PER_TRIAL if id_cols else 0))
        pspec = PartitionSpec(spill, tuple(group_cols), codes, boundaries, dict(schema),
                              piece_where, tuple(id_cols), hash_bits, batch_rows, cats, lut,
                              need, request.replicates, offsets)
        LOG.debug("phase %s", "partition")
        checks = Checks()
        counts = np.zeros((boundaries.shape[0] + 1, max(len(keys), 1), 2), dtype=np.int64)
        for part in executor.imap(partition_task, ((pc, pspec) for pc in pieces),
                                  window=2 * executor.workers):
            checks.add(part.checks)
            counts += part.counts
        release_memory()
        t_part = time.perf_counter()
        peak_part = _peak_mb()
        check_counts(checks, where=where_name, source=data, where_sql=where)
        if id_cols:
            LOG.debug("phase %s", "duplicates")
            cands = executor.map(duplicate_task, [(spill, i) for i in range(1 << hash_bits)])
            cand = np.concatenate(cands) if cands else np.empty(0, np.uint64)
            if cand.shape[0]:
                _report_duplicates(lf, list(id_cols), cand, where_name)
        present = counts.sum(axis=(0, 2)) > 0
        keys = [k for k, ok in zip(keys, present, strict=True) if ok] if group_cols else keys
        idx = np.flatnonzero(present) if group_cols else np.array([0])
        counts = counts[:, idx, :]
        units = plan_units(keys, row_cols=row_cols, system_cols=system_cols, pooled=pooled)
        totals = counts.sum(axis=0)
        below = np.cumsum(counts, axis=0) - counts
        # the range files are named by the old group codes: remap units' members to them
        code_of = idx.tolist()
        spill_units = tuple(Unit(u.key, tuple(code_of[m] for m in u.members), u.pooled)
                            for u in units)
        full_tot = np.zeros((max(len(codes), 1), 2), np.int64)
        full_tot[idx] = totals
        n_spec = max(len(codes), 1)
        rep_files = (request.replicates is not None and counts.shape[0] > 1 and (
            verification_of(request) is not None or bool(request.replicated)))
        if rep_files and request.replicates is not None:
            # replicates locate FNMR at FMR, and replicated statistics read the totals and
            # the counts below a range: weighted counts per range, summed in range order; each
            # range's counts below it go to a file beside its records (groups x replicates
            # per range would not fit in memory for thousands of groups)
            below_w = np.zeros((n_spec, 2, request.replicates.n_rows), np.int64)
            for r, w in enumerate(executor.imap(
                    weighted_counts_task,
                    ((spill, r, n_spec, request.replicates) for r in range(counts.shape[0])),
                    window=2 * executor.workers)):
                np.save(Path(spill) / f"w{r:05d}.npy", below_w)
                below_w += w
            np.save(Path(spill) / "wtotal.npy", below_w)
            del below_w
        full_keys: list[dict[str, str | None]] = [{}] * n_spec
        for k, c in zip(keys, code_of, strict=True):
            full_keys[c] = k
        cls_of, part_of = class_plan(full_keys, class_col) if class_col is not None \
            else (None, None)

        def specs() -> Iterator[ReduceSpec]:  # made as the tasks start, a window at a time
            for r in range(counts.shape[0]):
                off = np.zeros_like(full_tot)
                off[idx] = below[r]
                yield ReduceSpec(spill, r, spill_units, n_spec, request, full_tot, off,
                                 equalize, p, q, None if cls_of is None else tuple(cls_of),
                                 None if part_of is None else tuple(part_of), rep_files=rep_files)

        LOG.debug("phase %s", "reduce")
        # every unit's statistics folded over the ranges in range order as each range's
        # result arrives (the same left fold as merging them all at the end, so the same
        # bits); at most `window` results exist at once (see range_plan), whatever the ranges
        acc_st = [empty_stats(request) for _ in units]
        acc_eq: list[EqStats | None] = [None for _ in units]
        acc_mem: list[list[ScoreStats]] = [
            [empty_stats(request) for _ in range(
                len(u.members) if part_of is None else len(partitions(u.members, part_of)))]
            if equalize else [] for u in units]
        done = 0
        for res in executor.imap(reduce_task, specs(), window=rplan.window):
            for i in range(len(units)):
                acc_st[i] = merge(acc_st[i], res.stats[i])
                part_eq = res.eq[i]
                if part_eq is not None:
                    prev = acc_eq[i]
                    acc_eq[i] = part_eq if prev is None else merge_equalized(prev, part_eq)
                if equalize:
                    acc_mem[i] = [merge(a, b) for a, b in zip(acc_mem[i], res.members[i],
                                                              strict=True)]
            del res
            done += 1
            if done % rplan.window == 0 or done == counts.shape[0]:
                release_memory()  # freed heap trimmed every window of ranges
                if progress is not None:
                    progress(done, counts.shape[0])
        t_reduce = time.perf_counter()
        LOG.debug("phase %s", "merge")
        out = [UnitStats(u, acc_st[i], acc_eq[i], tuple(acc_mem[i]))
               for i, u in enumerate(units)]
        LOG.debug("phase %s", "done")
        return Statistics(tuple(row_cols), out, checks, engine if engine == "dask"
                          else "out-of-core", n_ranges=int(counts.shape[0]),
                          details={"seconds": time.perf_counter() - t0,
                                   "plan": t_plan - t0, "partition": t_part - t_plan,
                                   "reduce": t_reduce - t_part,
                                   "peak_mb_plan": peak_plan, "peak_mb_partition": peak_part,
                                   "peak_mb_reduce": _peak_mb(),
                                   "range_trials": range_trials, "pieces": len(pieces),
                                   "window": rplan.window, "peak_estimate": rplan.peak})
    finally:
        if ctxmgr is not None:
            ctxmgr.__exit__(None, None, None)
        shutil.rmtree(spill, ignore_errors=True)
        registration.__exit__(None, None, None)


#: Allocations from this size up are mapped on their own and unmapped when freed (glibc).
MMAP_THRESHOLD = 1 << 20


def bound_heap() -> None:
    """Make glibc give large freed arrays back to the system at once (a no-op elsewhere).

    glibc maps an allocation of at least its *mmap threshold* on its own, but raises that
    threshold (up to 32 MiB) each time such a block is freed, after which the per-group
    arrays of a range (a few MiB each) come from its thread arenas and stay there when freed:
    the resident size then follows the arenas' high-water marks, not the live data. The
    out-of-core engine, whose purpose is a bounded resident size, fixes the threshold at
    :data:`MMAP_THRESHOLD` (``mallopt(M_MMAP_THRESHOLD)``, for the rest of the process)
    unless the user set ``MALLOC_MMAP_THRESHOLD_``. Measured at 10^7 trials x 20 conditions
    (docs/guide/scale.md, seventh session): the report's
    peak 717 -> 520 MB,
    plain evaluate 559 -> 503 MB, for ~6 % more CPU time (page faults of fresh mappings).
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def release_memory() -> None:
    """Give freed heap memory back to the system (glibc ``malloc_trim``; a no-op elsewhere).

    The ranges' large arrays are freed after each round of reduce tasks, but glibc keeps
    freed blocks of its thread arenas mapped, so the resident size would creep up with the
    number of ranges; trimming keeps the peak at one round's worth.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _peak_mb() -> float:
    """Peak resident memory of this process so far (MB; 0 where it cannot be read)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except (ImportError, OSError):
        return 0.0


def _report_duplicates(lf: pl.LazyFrame, ids: list[str], cand: np.ndarray, where: str) -> None:
    h = pl.Series("h", cand, dtype=pl.UInt64)
    sub = lf.filter(id_hash(ids).is_in(h.implode()))
    check_duplicates(sub, ids, where=where)  # exact comparison of the candidates
