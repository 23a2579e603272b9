"""From trial frames to statistics: the lazy -> numpy boundary, with the data checks folded in.

Frame side of the statistics layer (Polars). :func:`scan_plan` resolves the grouping columns
and the label/score expressions of a LazyFrame; :func:`sorted_groups` reduces it in memory to
one sorted :class:`~scoreframe.kernels.sorted_scores.SortedScores` per base group (one sort
per group, done by Polars on all cores; without grouping columns, by numpy on two threads,
:func:`sort_classes`), counting on the way what the checks need: null and
NaN scores, unknown and unrecognized labels. :func:`check_counts` turns those counts into
errors naming the data source; :func:`check_duplicates` finds duplicated trials by their id
columns. :func:`unit_statistics` builds every result unit's statistics by merging its members.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from scoreframe._cached_property import cached_property
from scoreframe._sorting import POLARS_SORT_MIN, polars_sorts_faster
from scoreframe.errors import DegenerateError, Place, ValidationError, message
from scoreframe.frames._sql_guard import where_expr
from scoreframe.frames.schema import check_duplicates as schema_check_duplicates
from scoreframe.frames.schema import normalize_label
from scoreframe.kernels import bootstrap as kb
from scoreframe.kernels.elementary import PARALLEL_MIN, usable_cores
from scoreframe.kernels.sorted_scores import SortedScores, nontarget_cost_sum, target_cost_sum
from scoreframe.stats._replicate_families import class_units
from scoreframe.stats._replicates import merge_units, with_replicates
from scoreframe.stats._resampling import Replicates, SortedUnits
from scoreframe.stats._statistics import ClassData
from scoreframe.stats.groups import Unit
from scoreframe.stats.summary import (
    EqContext,
    EqStats,
    Request,
    ScoreStats,
    reduce_equalized,
    reduce_sorted,
    verification_of,
)

__all__ = ["POSITION", "Checks", "Statistics", "UnitStats", "check_counts", "check_duplicates",
           "check_trials", "covering", "label_columns", "merge_sorted", "require_columns",
           "sort_classes", "sorted_groups", "sorted_unit_groups", "string_hashes", "unit_columns",
           "unit_statistics", "class_data", "partitions"]

#: Column holding a trial's row position when trials are resampled without id columns.
POSITION = "__position"
#: Column of the hashes of unit column ``i`` (``UNIT_COLUMN.format(i)``).
UNIT_COLUMN = "__unit{}"
_NULL_ID = "\x00null"  # null ids are one unit of their own


@dataclass
class Checks:
    """Counts gathered by the reduction pass for the data checks."""

    rows: int = 0
    null_score: int = 0
    nan_score: int = 0
    unknown_label: int = 0  # null label: unsupervised trials, left out of the evaluation
    bad_label: int = 0  # a label value outside the accepted spellings

    def add(self, other: Checks) -> None:
        """Accumulate another pass's counts."""
        for f in ("rows", "null_score", "nan_score", "unknown_label", "bad_label"):
            setattr(self, f, getattr(self, f) + getattr(other, f))


def label_columns(schema: pl.Schema) -> tuple[pl.Expr, pl.Expr]:
    """``(label, bad)``: the label as Boolean, and a flag for unrecognized label values."""
    if "label" not in schema:
        raise ValidationError(message("column `label` not found",
                                      expected="a trial table with scores and labels",
                                      got=", ".join(schema.names())))
    dtype = schema["label"]
    lab = normalize_label(dtype)
    if dtype == pl.Boolean:
        return lab.alias("label"), pl.lit(False)
    return lab.alias("label"), (pl.col("label").is_not_null() & lab.is_null())


def check_counts(checks: Checks, *, where: str, source: object = None,
                 where_sql: str | None = None) -> None:
    """Raise on null/NaN scores, unrecognized labels or an empty selection (``where`` names it).

    When ``source`` is a path, the message also names the first file and row with the problem
    (found by a scan that runs only when there is an error).
    """
    if checks.bad_label:
        raise ValidationError(message(
            "column `label` has values outside the accepted spellings",
            where=first_location(source, "label", where_sql) or where,
            expected="bool, 1/0, target/nontarget or true/false",
            got=f"{checks.bad_label} trial(s) with other values",
            hint="Map those labels explicitly (or filter them out with --where)."))
    if checks.null_score or checks.nan_score:
        raise ValidationError(message(
            "column `score` has missing values",
            where=first_location(source, "score", where_sql) or where,
            expected="a number for every trial",
            got=f"{checks.null_score} null and {checks.nan_score} NaN score(s)",
            hint="NaN and null scores are rejected at the boundary: drop or repair those "
                 "trials first."))
    if checks.rows == 0:
        raise DegenerateError(message("nothing to evaluate", where=where,
                                      got="no trials (after the --where selection)"))


def first_location(source: object, column: str, where_sql: str | None = None) -> Place | None:
    """The file and row of the first bad ``score`` or ``label`` of a dataset path.

    Rows are 1-based within the file (``row R`` is the place's detail, the file its ``path``).
    None when ``source`` is not a path or nothing is found.
    """
    from pathlib import Path

    if not isinstance(source, str | Path):
        return None
    p = Path(source)
    files = sorted(p.rglob("*.parquet")) if p.is_dir() else [p] if p.is_file() else []
    for f in files:
        try:
            lf = pl.scan_parquet(f).with_row_index("__row")
            schema = lf.collect_schema()
            if column not in schema:
                continue
            if column == "score":
                sc = pl.col("score").cast(pl.Float64)
                bad = sc.is_null() | sc.is_nan()
            else:
                bad = label_columns(schema)[1]
            if where_sql:
                lf = lf.filter(where_expr(where_sql))
            hit = lf.filter(bad).select("__row").head(1).collect()
        except Exception:  # noqa: BLE001 - locating is best effort; the error stands anyway
            continue
        if hit.height:
            return Place(f, detail=f"row {int(hit.item()) + 1}")
    return None


def check_duplicates(lf: pl.LazyFrame, id_cols: Sequence[str], *, where: str) -> None:
    """Raise if two trials share their id columns (``model``, ``segment``, ``system``).

    :func:`scoreframe.frames.schema.check_duplicates` (one wording for readers, ``info`` and the
    statistics pass), with a hint naming the options of the evaluation.
    """
    if not id_cols:
        return
    schema_check_duplicates(
        lf, list(id_cols), where=where,
        hint="A duplicated trial would be counted twice. Remove the duplicates, name the "
             "columns that identify a trial (trial_id=, CLI --trial-id), or pass "
             "validate=False (CLI --no-validate) if they are intended.")


def check_trials(lf: pl.LazyFrame, *, where: str, validate: bool = True,
                 trial_id: Sequence[str] | None = None) -> pl.LazyFrame:
    """The data checks of ``evaluate`` for any other path that reads trials (one pass).

    Raises on null/NaN scores, labels outside the accepted spellings, an empty selection and
    (unless ``validate=False``) duplicated trials by their id columns (``system``, ``model``,
    ``segment``, or ``trial_id``); returns the trials with ``label`` as Boolean.

    >>> import polars as pl
    >>> lf = pl.LazyFrame({"score": [1.0, 2.0], "label": ["target", "nontarget"]})
    >>> check_trials(lf, where="the example").collect()["label"].to_list()
    [True, False]
    """
    schema = lf.collect_schema()
    if "score" not in schema:
        raise ValidationError(message("column `score` not found", where=where,
                                      expected="a trial table with scores and labels",
                                      got=", ".join(schema.names())))
    label, bad = label_columns(schema)
    score = pl.col("score").cast(pl.Float64)
    row = lf.select(pl.len().alias("rows"), score.is_null().sum().alias("null_score"),
                    score.is_nan().sum().alias("nan_score"),
                    label.is_null().sum().alias("unknown_label"),
                    bad.sum().alias("bad_label")).collect(engine="streaming").row(0, named=True)
    check_counts(Checks(**{k: int(v or 0) for k, v in row.items()}), where=where)
    if validate:
        names = schema.names()
        ids = list(trial_id) if trial_id else [c for c in ("model", "segment") if c in names]
        if len(ids) >= 2 or trial_id:
            check_duplicates(lf, [*(["system"] if "system" in names else []), *ids],
                             where=where)
    return lf.with_columns(label)


def require_columns(schema: pl.Schema, group_cols: Sequence[str], *,
                    where: str | None = None) -> None:
    """``score`` and the grouping columns must be in the table; the error lists its columns."""
    for c in ("score", *group_cols):
        if c not in schema:
            raise ValidationError(message(
                f"column `{c}` not found", where=where,
                expected="score and the columns named in by= / --by and equalize_by= / "
                "--equalize-by", got="columns " + ", ".join(schema.names())))


def string_hashes(values: pl.Series) -> np.ndarray:
    """Stable 64-bit hash of each value of ``values`` as a string (:func:`kb.hash_strings`).

    Each distinct value is hashed once; nulls are one value of their own.

    >>> h = string_hashes(pl.Series(["a", "b", "a"]))
    >>> bool(h[0] == h[2] and h[0] != h[1])
    True
    """
    s = values.cast(pl.String).fill_null(_NULL_ID)
    uniq = s.unique()
    arr = uniq.to_arrow()
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    import pyarrow as pa

    arr = arr.cast(pa.large_string())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    h = pl.Series(kb.hash_strings(data, offsets), dtype=pl.UInt64)
    if uniq.len() == s.len():
        order = s.to_frame("v").join(uniq.to_frame("v").with_row_index("i"), on="v",
                                     how="left", maintain_order="left")["i"].to_numpy()
        keyed: np.ndarray = h.to_numpy()[order]
        return keyed
    return s.replace_strict(uniq, h, return_dtype=pl.UInt64).to_numpy()


def _hash_ids(s: pl.Series) -> pl.Series:
    """Hashes of one id column, or of an ordered tuple of id columns (a struct)."""
    if s.dtype == pl.Struct:
        fields = s.struct.fields
        h = string_hashes(s.struct.field(fields[0]))
        for f in fields[1:]:
            h = kb.combine_hashes(h, string_hashes(s.struct.field(f)))
    else:
        h = string_hashes(s)
    return pl.Series(s.name, h, dtype=pl.UInt64)


def _hash_position(s: pl.Series) -> pl.Series:
    return pl.Series(s.name, kb.splitmix64(s.cast(pl.UInt64).to_numpy()), dtype=pl.UInt64)


def unit_columns(spec: Replicates, names: Sequence[str]) -> list[pl.Expr]:
    """Expressions for the unit hashes of every trial (``__unit0``, ``__unit1``, ...).

    ``"trial"`` hashes the ordered tuple of ``spec.ids`` (or the :data:`POSITION` column the
    caller adds when there are none); other resampling columns hash their values. Hashes
    depend on the values only, never on the engine, the batch or the row order.
    """
    missing = [c for c in (spec.ids if spec.trial else spec.resample) if c not in names]
    if missing:
        raise ValidationError(message(
            f"column `{missing[0]}` not found",
            expected="the resampling columns (resample=)", got=", ".join(names),
            hint='resample="trial" needs no id columns; ["model", "segment"] needs both.'))
    if not spec.trial:
        return [pl.col(c).map_batches(_hash_ids, return_dtype=pl.UInt64, is_elementwise=True)
                .alias(UNIT_COLUMN.format(i)) for i, c in enumerate(spec.resample)]
    if spec.ids:
        col = pl.struct([pl.col(c).cast(pl.String) for c in spec.ids]) if len(spec.ids) > 1 \
            else pl.col(spec.ids[0])
        return [col.map_batches(_hash_ids, return_dtype=pl.UInt64, is_elementwise=True)
                .alias(UNIT_COLUMN.format(0))]
    return [pl.col(POSITION).map_batches(_hash_position, return_dtype=pl.UInt64,
                                         is_elementwise=True).alias(UNIT_COLUMN.format(0))]


def sorted_groups(lf: pl.LazyFrame, group_cols: Sequence[str]
                  ) -> tuple[list[dict[str, str | None]], list[SortedScores], Checks]:
    """One :class:`SortedScores` per base group (keys in sorted order), and the check counts.

    Only ``score``, ``label`` and the grouping columns are read (never the id strings).
    """
    keys, groups, _, checks = sorted_unit_groups(lf, group_cols, None)
    return keys, groups, checks


def sorted_unit_groups(lf: pl.LazyFrame, group_cols: Sequence[str],
                       replicates: Replicates | None
                       ) -> tuple[list[dict[str, str | None]], list[SortedScores],
                                  list[SortedUnits] | None, Checks]:
    """:func:`sorted_groups`, with every trial's unit hashes when ``replicates`` are asked.

    The hashes of each class are sorted along its scores (ties in any order: replicate
    statistics do not depend on the order of equal scores of one class).
    """
    schema = lf.collect_schema()
    require_columns(schema, group_cols)
    label, bad = label_columns(schema)
    keys = [pl.col(c).cast(pl.String).alias(c) for c in group_cols]
    score = pl.col("score").cast(pl.Float64)
    valid = score.is_not_null() & ~score.is_nan()
    aggs = [score.filter(pl.col("label") & valid).sort().alias("tar"),
            score.filter(~pl.col("label") & valid).sort().alias("non"),
            pl.len().alias("rows"),
            score.is_null().sum().alias("null_score"),
            score.is_nan().sum().alias("nan_score"),
            pl.col("label").is_null().sum().alias("unknown_label"),
            pl.col("__bad").sum().alias("bad_label")]
    if not group_cols and replicates is None:
        return _one_group(lf, score, label, None if schema["label"] == pl.Boolean else bad)
    unit_exprs: list[pl.Expr] = []
    if replicates is not None:
        if replicates.trial and not replicates.ids:
            lf = lf.with_row_index(POSITION)
        unit_exprs = unit_columns(replicates, schema.names())
        for i in range(len(unit_exprs)):
            u = pl.col(UNIT_COLUMN.format(i))
            aggs += [u.filter(pl.col("label") & valid).sort_by(score.filter(pl.col("label")
                                                                            & valid))
                     .alias(f"tar{i}"),
                     u.filter(~pl.col("label") & valid).sort_by(score.filter(~pl.col("label")
                                                                             & valid))
                     .alias(f"non{i}")]
    sel = lf.select(*keys, pl.col("score"), label, bad.alias("__bad"), *unit_exprs)
    if group_cols:
        red = sel.group_by(list(group_cols)).agg(aggs).sort(list(group_cols))
    else:
        red = sel.select([a.implode() if i < 2 or i >= 7 else a for i, a in enumerate(aggs)])
    df = red.collect(engine="streaming")
    checks = Checks()
    for f in ("rows", "null_score", "nan_score", "unknown_label", "bad_label"):
        setattr(checks, f, int(df[f].sum()) if df.height else 0)
    groups = [SortedScores(df["tar"][i].to_numpy(), df["non"][i].to_numpy())
              for i in range(df.height)]
    units = None if not unit_exprs else [
        SortedUnits(tuple(df[f"tar{k}"][i].to_numpy() for k in range(len(unit_exprs))),
                    tuple(df[f"non{k}"][i].to_numpy() for k in range(len(unit_exprs))))
        for i in range(df.height)]
    key_rows = df.select(list(group_cols)).to_dicts() if group_cols else [{}] * df.height
    if not group_cols and checks.rows == 0:
        return [], [], ([] if units is not None else None), checks
    return key_rows, groups, units, checks


def _one_group(lf: pl.LazyFrame, score: pl.Expr, label: pl.Expr, bad: pl.Expr | None
               ) -> tuple[list[dict[str, str | None]], list[SortedScores], None, Checks]:
    """:func:`sorted_unit_groups` without grouping columns or replicates: numpy sorts.

    Polars only selects the columns (no copy of a Float64 score column already in memory: one
    chunk, read by numpy in place) and numpy flags each trial's class; numpy's sort
    (vectorized, faster than Polars' on one core) sorts the classes on both cores
    (:func:`sort_classes`). The counts of the checks come from the same columns. ``bad`` is
    ``None`` for a Boolean label (no value can be unrecognized).
    """
    cols = [score.alias("score"), label] + ([] if bad is None else [bad.alias("__bad")])
    df = lf.select(cols).collect(engine="streaming")
    sc, lab = df["score"], df["label"]
    checks = Checks(rows=df.height, null_score=sc.null_count(),
                    nan_score=int(sc.is_nan().sum() or 0), unknown_label=lab.null_count(),
                    bad_label=0 if bad is None else int(df["__bad"].sum() or 0))
    if checks.rows == 0:
        return [], [], None, checks
    cores = usable_cores()
    if (checks.rows >= POLARS_SORT_MIN and cores >= 2
            and threading.current_thread() is threading.main_thread()
            and polars_sorts_faster()):
        return [{}], [_sorted_by_polars(df)], None, checks
    values = sc.to_numpy()  # no copy without nulls; nulls become NaN (flagged by neither class)
    if checks.unknown_label:
        is_tar = lab.fill_null(False).to_numpy()
        is_non = lab.not_().fill_null(False).to_numpy()
    else:
        is_tar = lab.to_numpy()
        is_non = ~is_tar
    if checks.null_score or checks.nan_score:
        valid_np = ~np.isnan(values)
        is_tar, is_non = is_tar & valid_np, is_non & valid_np
    groups = [sort_classes(values, is_tar, is_non)]
    return [{}], groups, None, checks


def _sorted_by_polars(df: pl.DataFrame) -> SortedScores:
    """The sorted classes of ``df`` (``score``, Boolean ``label``) by Polars, then two scans.

    One Polars query filters and sorts both classes (in parallel, on all its threads; the
    results are read in place). Then two threads each locate half of the targets in the
    merged order and go on to sum Cllr costs: one the targets' and those of the lower
    non-targets, the other the upper non-targets' (exact integers: the pieces add up to the
    whole). This returns as soon as the positions are known, so the PAV blocks (which need
    them) are computed on this thread while the sums run (:class:`_SummingScores`). Trials
    with a null or NaN score or an unknown label are in neither class, as in
    :func:`sort_classes`.
    """
    score, label = pl.col("score"), pl.col("label")
    ok = score.is_not_null() & score.is_not_nan()
    out = df.select(score.filter(label & ok).sort().implode().alias("tar"),
                    score.filter(label.not_() & ok).sort().implode().alias("non"))
    # zeros made positive by SortedScores (a copy only if there is a -0.0)
    plain = SortedScores(out["tar"][0].to_numpy(), out["non"][0].to_numpy())
    tar, non = plain.tar, plain.non
    n_tar, n_non = tar.shape[0], non.shape[0]
    k = max(0, min(n_non, (n_non - n_tar) // 2))  # the first thread also has the targets
    pos = np.empty(n_tar, dtype=np.int64)

    def positions(lo: int, hi: int) -> None:
        pos[lo:hi] = np.searchsorted(non, tar[lo:hi], side="left")
        pos[lo:hi] += np.arange(lo, hi, dtype=np.int64)

    located = [threading.Event(), threading.Event()]
    found = [False, False]

    def first() -> tuple[int, int]:
        try:
            positions(0, n_tar // 2)
            found[0] = True
        finally:
            located[0].set()
        return target_cost_sum(tar), nontarget_cost_sum(non[:k])

    def second() -> int:
        try:
            positions(n_tar // 2, n_tar)
            found[1] = True
        finally:
            located[1].set()
        return nontarget_cost_sum(non[k:])

    pool = ThreadPoolExecutor(2)
    try:
        sums = (pool.submit(first), pool.submit(second))
    finally:
        pool.shutdown(wait=False)  # the sums finish on their own; their results are kept
    for i in range(2):
        located[i].wait()
        if not found[i]:  # the search failed: its error, from the thread
            sums[i].result()
    sorted_ = _SummingScores(tar, non)
    # the slots of the futures and of the cached positions, as SortedScores.seeded sets sums
    sorted_.__dict__.update(_sums=sums, tar_positions=pos)
    return sorted_


@dataclass(frozen=True, eq=False)
class _SummingScores(SortedScores):
    """Sorted classes whose Cllr sums are still being summed by two threads.

    The futures of :func:`_sorted_by_polars`' two threads (the targets' and the lower
    non-targets' exact sums, and the upper non-targets') sit in the instance's ``_sums``
    slot; :attr:`cllr_sums` waits for them (the same integers as summing here). A copy made
    by :func:`dataclasses.replace` has no futures and sums its own classes; a pickle or deep
    copy is a plain :class:`SortedScores` with the sums already known.
    """

    #: :func:`~scoreframe.stats.summary.reduce_sorted` need not sum them in a thread of its own
    summed_elsewhere = True

    @cached_property
    def cllr_sums(self) -> tuple[int, int]:
        """The exact sums of the threads (waits for them), or of this copy's classes."""
        sums = self.__dict__.get("_sums")
        if sums is None:  # a copy with other classes (dataclasses.replace)
            return SortedScores.cllr_sums.func(self)
        (cost_tar, cost_lo), cost_hi = sums[0].result(), sums[1].result()
        return cost_tar, cost_lo + cost_hi

    def __reduce__(self) -> tuple[Any, ...]:
        return SortedScores.seeded, (self.tar, self.non, self.cllr_sums)


def sort_classes(score: np.ndarray, is_tar: np.ndarray, is_non: np.ndarray) -> SortedScores:
    """The sorted target and non-target scores, sorted on every core.

    One thread sorts the targets, the non-targets are split at a sampled pivot and their two
    parts sorted in two threads (the first thread's part smaller by the targets), each into
    its own slice of the result (numpy releases the GIL while it sorts). A sort's result does
    not depend on how it was computed, so this is the same array as
    ``np.sort(score[is_non])``. Each thread then sums the Cllr costs of its pieces
    (:attr:`SortedScores.cllr_sums`: exact integers, so the pieces' sums add up to the
    sum of the whole, bit for bit) and locates half of the targets in the merged order
    (:attr:`SortedScores.tar_positions`: a target below the pivot has only the lower part's
    non-targets below it, one at or above it all of the lower part; exact integers). The
    masks of the two parts are formed in the threads too, so the main thread only waits.

    >>> s = sort_classes(np.array([3.0, 1.0, 2.0, 0.5]), np.array([True, False, False, False]),
    ...                  np.array([False, True, True, True]))
    >>> s.tar.tolist(), s.non.tolist()
    ([3.0], [0.5, 1.0, 2.0])
    """
    cores = usable_cores()
    if (score.shape[0] < PARALLEL_MIN or cores < 2
            or threading.current_thread() is not threading.main_thread()):  # a worker already
        return SortedScores(np.sort(score[is_tar]), np.sort(score[is_non]))
    # the pivot balances the threads: the first also has the targets
    n_tar, n_non = int(np.count_nonzero(is_tar)), int(np.count_nonzero(is_non))
    step = max(1, score.shape[0] // 4096)
    sample = score[::step][is_non[::step]]
    sample = sample[np.isfinite(sample)]
    share = max(0.0, (n_non - n_tar) / (2 * max(n_non, 1)))
    pivot = float(np.quantile(sample, share)) if sample.shape[0] else 0.0
    tar = np.empty(n_tar)
    non = np.empty(n_non)
    pos = np.empty(n_tar, dtype=np.int64)
    n_lo = [0]
    split = threading.Barrier(2)  # n_lo known (both threads write into ``non``)
    sorted_ = threading.Barrier(2)  # every piece sorted (positions read both)

    def positions(lo: int, hi: int) -> None:
        """Merged positions of ``tar[lo:hi]``: its non-targets below, in the piece they fall in."""
        k = min(max(int(np.searchsorted(tar, pivot, side="left")), lo), hi)
        pos[lo:k] = np.searchsorted(non[:n_lo[0]], tar[lo:k], side="left")
        pos[k:hi] = np.searchsorted(non[n_lo[0]:], tar[k:hi], side="left")
        pos[k:hi] += n_lo[0]
        pos[lo:hi] += np.arange(lo, hi, dtype=np.int64)

    def first() -> tuple[int, int]:
        non_lo = np.less(score, pivot)
        non_lo &= is_non
        n_lo[0] = int(np.count_nonzero(non_lo))
        split.wait()
        np.compress(is_tar, score, out=tar)
        tar.sort()
        np.compress(non_lo, score, out=non[:n_lo[0]])
        del non_lo
        non[:n_lo[0]].sort()
        sorted_.wait()
        positions(0, n_tar // 2)
        return target_cost_sum(tar), nontarget_cost_sum(non[:n_lo[0]])

    def second() -> int:
        non_hi = np.greater_equal(score, pivot)
        non_hi &= is_non
        split.wait()
        np.compress(non_hi, score, out=non[n_lo[0]:])
        del non_hi
        non[n_lo[0]:].sort()
        sorted_.wait()
        positions(n_tar // 2, n_tar)
        return nontarget_cost_sum(non[n_lo[0]:])

    def breaking(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            try:
                return fn()
            except BaseException:  # the other thread must not wait at a barrier forever
                split.abort()
                sorted_.abort()
                raise
        return run

    with ThreadPoolExecutor(2) as pool:
        one, two = pool.submit(breaking(first)), pool.submit(breaking(second))
        (cost_tar, cost_lo), cost_hi = one.result(), two.result()
    # exact integer sums: the pieces' sums are the sum of the whole
    out = SortedScores.seeded(tar, non, (cost_tar, cost_lo + cost_hi))
    out.__dict__["tar_positions"] = pos  # the cached_property's own slot (exact integers)
    return out


def partitions(members: Sequence[int], partition_of: Sequence[int]) -> list[list[int]]:
    """The members of a unit grouped by partition (first appearance order)."""
    out: dict[int, list[int]] = {}
    for i in members:
        out.setdefault(partition_of[i], []).append(i)
    return list(out.values())


def class_data(members: Sequence[int], classes_of: Sequence[str | None],
               base: Sequence[SortedScores], totals: np.ndarray | None = None,
               offsets: np.ndarray | None = None) -> dict[str | None, ClassData]:
    """Per class value, the sorted scores of a unit's members of that class in one range.

    ``totals``/``offsets`` (``[group, label]``) place the range in the unit (out of core);
    without them the range is the whole unit.
    """
    by: dict[str | None, list[int]] = {}
    for g in members:
        by.setdefault(classes_of[g], []).append(g)
    out: dict[str | None, ClassData] = {}
    for c, gs in by.items():
        runs = [x for g in gs for x in (base[g].tar, base[g].non) if x.shape[0]]
        scores = runs[0] if len(runs) == 1 else (
            np.sort(np.concatenate(runs), kind="stable") if runs else np.empty(0))
        n_tar = sum(base[g].n_tar for g in gs)
        total = int(totals[gs].sum()) if totals is not None else \
            sum(base[g].n_tar + base[g].n_non for g in gs)
        offset = int(offsets[gs].sum()) if offsets is not None else 0
        out[c] = ClassData(scores, total, offset, n_tar)
    return out


def covering(members: Sequence[int], done: Mapping[tuple[int, ...], ScoreStats]
             ) -> list[ScoreStats]:
    """Statistics already computed whose members split ``members`` exactly, or ``[]``.

    ``done`` maps the sorted members of every unit (or base group) reduced so far to its
    statistics; the largest fit first (a pooled unit: its conditions). Used as
    :func:`~scoreframe.stats.summary.reduce_sorted`'s ``parts``.

    >>> covering([0, 1, 2], {(0,): "a", (1, 2): "b", (1,): "c"})
    ['b', 'a']
    >>> covering([0, 1, 2], {(0,): "a"})
    []
    """
    need = set(members)
    whole = len(need)
    if whole < 2:
        return []
    out: list[ScoreStats] = []
    for key in sorted(done, key=len, reverse=True):
        if len(key) < whole and need.issuperset(key):
            out.append(done[key])
            need.difference_update(key)
            if not need:
                return out
    return []


def merge_sorted(parts: Sequence[SortedScores]) -> SortedScores:
    """The sorted scores of a union of groups: a merge of their sorted runs, not a re-sort."""
    if len(parts) == 1:
        return parts[0]
    return SortedScores(_merge_runs([s.tar for s in parts]), _merge_runs([s.non for s in parts]))


def _merge_runs(runs: Sequence[np.ndarray]) -> np.ndarray:
    """The stable merge of sorted runs, split by value into one slice per core.

    numpy's stable sort (timsort) detects the sorted runs and merges them: O(n log k). Each
    run is cut at the same pivots (every value below a pivot goes left, equal values right),
    so equal values stay together and in run order: the result is that of one stable sort of
    the concatenation, whatever the number of cores.
    """
    n = sum(r.shape[0] for r in runs)
    cores = usable_cores()
    k = min(cores, 8)
    if n < 1 << 20 or k < 2:
        return np.sort(np.concatenate(runs), kind="stable")
    big = max(runs, key=lambda r: r.shape[0])
    pivots = big[[big.shape[0] * i // k for i in range(1, k)]]
    cuts = [np.concatenate(([0], np.searchsorted(r, pivots, side="left"), [r.shape[0]]))
            for r in runs]
    pieces = [[r[c[j]:c[j + 1]] for r, c in zip(runs, cuts, strict=True)] for j in range(k)]
    out = np.empty(n)
    ends = np.cumsum([sum(p.shape[0] for p in piece) for piece in pieces])

    def merge_piece(j: int) -> None:
        lo = int(ends[j - 1]) if j else 0
        out[lo:int(ends[j])] = np.sort(np.concatenate(pieces[j]), kind="stable")

    with ThreadPoolExecutor(k) as pool:
        list(pool.map(merge_piece, range(k)))
    return out


@dataclass(frozen=True, eq=False)
class UnitStats:
    """A result unit with its final statistics (and equalized statistics when asked)."""

    unit: Unit
    stats: ScoreStats
    eq: EqStats | None = None
    members: tuple[ScoreStats, ...] = ()


@dataclass(frozen=True, eq=False)
class Statistics:
    """The statistics of one evaluation: one :class:`UnitStats` per result row."""

    row_cols: tuple[str, ...]
    units: list[UnitStats]
    checks: Checks
    engine: str
    n_ranges: int = 1
    details: dict[str, Any] = field(default_factory=dict)


def unit_statistics(units: Sequence[Unit], base: Sequence[SortedScores], request: Request, *,
                    equalize: bool = False, p: np.ndarray | None = None,
                    q: np.ndarray | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    base_units: Sequence[SortedUnits] | None = None,
                    workers: int = 1, classes_of: Sequence[str | None] | None = None,
                    partition_of: Sequence[int] | None = None) -> list[UnitStats]:
    """Statistics of every unit from the base groups' sorted scores (in memory, one range).

    With ``request.replicates`` and the base groups' unit hashes (``base_units``), every
    unit's statistics carry its replicates (members of equalized units do not), computed in
    chunks of replicates on ``workers`` threads (exact integer statistics: the same on any
    number of threads).

    With ``request.class_column``, ``classes_of`` gives each base group's class value (the
    class column is then the last grouping column) and ``partition_of`` the equalized
    partition each base group belongs to (its key without the class column).
    """
    cache: dict[int, ScoreStats] = {}

    def classes(members: Sequence[int]) -> dict[str | None, ClassData] | None:
        return None if classes_of is None else class_data(members, classes_of, base)

    reduced: dict[tuple[int, ...], ScoreStats] = {}  # units' statistics, by their members

    def reduce_members(members: Sequence[int]) -> ScoreStats:
        if len(members) == 1:
            return reduce_sorted(base[members[0]], request, classes=classes(members))
        return reduce_sorted(merge_sorted([base[i] for i in members]), request,
                             classes=classes(members), parts=covering(members, reduced))

    spec = request.replicates if base_units is not None else None
    # the base groups' statistics first, one group per thread (numpy releases the GIL)
    needed = sorted({i for u in units for i in u.members if len(u.members) == 1 or equalize})
    cores = usable_cores()
    if len(needed) > 1 and cores > 1:
        with ThreadPoolExecutor(min(cores, 8)) as pool:
            cache.update(zip(needed, pool.map(lambda i: reduce_members([i]), needed),
                             strict=True))

    reduced.update(((i,), st) for i, st in cache.items())

    def base_stats(i: int) -> ScoreStats:
        if i not in cache:
            cache[i] = reduce_members([i])
        return cache[i]

    def replicated(u: Unit, threads: int) -> ScoreStats:
        assert spec is not None and base_units is not None
        s, su = merge_units([(base[i], base_units[i]) for i in u.members])
        st = base_stats(u.members[0]) if len(u.members) == 1 else \
            reduce_sorted(s, request, classes=classes(u.members),
                          parts=covering(u.members, reduced))
        fam = None if classes_of is None or not request.replicated else \
            class_units(u.members, classes_of, base, base_units, spec)
        return with_replicates(st, s, su, spec, request.thresholds, workers=threads,
                               verification=verification_of(request),
                               statistics=request.replicated, classes=fam)

    # replicates of several units: one unit per thread, the largest first (each unit's
    # per-trial set-up is then done once, and the threads share no chunk); a unit larger than
    # a thread's share, or a single unit, splits its replicates between the threads
    ready: dict[int, ScoreStats] = {}
    if spec is not None and workers > 1 and len(units) > 1:
        size = [sum(base[i].n_tar + base[i].n_non for i in u.members) for u in units]
        first = sorted(range(len(units)), key=lambda k: -size[k])
        if size[first[0]] * workers > sum(size):  # dominant: all the threads for it
            ready[first[0]] = replicated(units[first[0]], workers)
            first = first[1:]
            if progress is not None:
                progress(len(ready), len(units))
        pool = ThreadPoolExecutor(max(1, min(workers, len(first))))
        try:
            futures = {pool.submit(replicated, units[k], 1): k for k in first}
            for fut in as_completed(futures):  # progress from this thread, as units finish
                ready[futures[fut]] = fut.result()
                if progress is not None:
                    progress(len(ready), len(units))
        finally:  # an error (or Ctrl-C) cancels the units not started
            pool.shutdown(wait=True, cancel_futures=True)

    out: list[UnitStats] = []
    for done, u in enumerate(units, 1):
        if spec is not None:
            st = ready[done - 1] if done - 1 in ready else replicated(u, workers)
        elif len(u.members) == 1:
            st = base_stats(u.members[0])
        else:
            st = reduce_members(u.members)
        reduced[tuple(u.members)] = st
        eq = None
        members: tuple[ScoreStats, ...] = ()
        if equalize and partition_of is not None:  # partitions split by class: join them
            groups = partitions(u.members, partition_of)
            parts = [merge_sorted([base[i] for i in g]) for g in groups]
            tt = np.array([s.n_tar for s in parts], np.int64)
            nn = np.array([s.n_non for s in parts], np.int64)
            z = np.zeros(len(parts), np.int64)
            if tt.sum() and nn.sum():
                eq = reduce_equalized(parts, EqContext(tt, nn, z, z), p, q)  # type: ignore[arg-type]  # the zero offsets are int arrays, typed as ints
            members = tuple(reduce_sorted(s, request) for s in parts)
        elif equalize:
            parts = [base[i] for i in u.members]
            tt = np.array([s.n_tar for s in parts], np.int64)
            nn = np.array([s.n_non for s in parts], np.int64)
            z = np.zeros(len(parts), np.int64)
            if tt.sum() and nn.sum():
                eq = reduce_equalized(parts, EqContext(tt, nn, z, z), p, q)  # type: ignore[arg-type]  # the zero offsets are int arrays, typed as ints  # p and q are given when equalize is on
            members = tuple(base_stats(i) for i in u.members)
        out.append(UnitStats(u, st, eq, members))
        if progress is not None and not ready:
            progress(done, len(units))
    return out

