"""From trial frames to statistics: the lazy -> numpy boundary, with the data checks folded in.

Frame side of the statistics layer (Polars). :func:`scan_plan` resolves the grouping columns
and the label/score expressions of a LazyFrame; :func:`sorted_groups` reduces it in memory to
one sorted :class:`~scoreframe.kernels.sorted_scores.SortedScores` per base group (one sort
per group, done by Polars on all cores), counting on the way what the checks need: null and
NaN scores, unknown and unrecognized labels. :func:`check_counts` turns those counts into
errors naming the data source; :func:`check_duplicates` finds duplicated trials by their id
columns. :func:`unit_statistics` builds every result unit's statistics by merging its members.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from scoreframe.errors import DegenerateError, ValidationError, message
from scoreframe.kernels.sorted_scores import SortedScores
from scoreframe.schema import id_hash, normalize_label, repeated_hashes
from scoreframe.stats.groups import Unit
from scoreframe.stats.summary import (
    EqContext,
    EqStats,
    Request,
    ScoreStats,
    reduce_equalized,
    reduce_sorted,
)

__all__ = ["Checks", "UnitStats", "check_counts", "check_duplicates", "check_trials",
           "label_columns", "merge_sorted", "require_columns", "sorted_groups", "unit_statistics"]


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
            where=where + first_location(source, "label", where_sql),
            expected="bool, 1/0, target/nontarget or true/false",
            got=f"{checks.bad_label} trial(s) with other values",
            hint="Map those labels explicitly (or filter them out with --where)."))
    if checks.null_score or checks.nan_score:
        raise ValidationError(message(
            "column `score` has missing values",
            where=where + first_location(source, "score", where_sql),
            expected="a number for every trial",
            got=f"{checks.null_score} null and {checks.nan_score} NaN score(s)",
            hint="NaN and null scores are rejected at the boundary: drop or repair those "
                 "trials first."))
    if checks.rows == 0:
        raise DegenerateError(message("nothing to evaluate", where=where,
                                      got="no trials (after the --where selection)"))


def first_location(source: object, column: str, where_sql: str | None = None) -> str:
    """``" (first in file F, row R)"`` for the first bad ``score`` or ``label`` of a dataset path.

    Rows are 1-based within the file. Empty when ``source`` is not a path or nothing is found.
    """
    from pathlib import Path

    if not isinstance(source, str | Path):
        return ""
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
                lf = lf.filter(pl.sql_expr(where_sql))
            hit = lf.filter(bad).select("__row").head(1).collect()
        except Exception:  # noqa: BLE001 - locating is best effort; the error stands anyway
            continue
        if hit.height:
            return f" (first in file `{f}`, row {int(hit.item()) + 1})"
    return ""


def check_duplicates(lf: pl.LazyFrame, id_cols: Sequence[str], *, where: str) -> None:
    """Raise if two trials share their id columns (``model``, ``segment``, ``system``)."""
    if not id_cols:
        return
    ids = list(id_cols)
    key = id_hash(ids)  # only rows whose hash occurs twice are compared exactly
    rep = repeated_hashes(lf.select(key).collect(engine="streaming").to_series().to_numpy())
    if rep.shape[0] == 0:
        return
    cand = pl.Series("h", rep, dtype=pl.UInt64)
    dup = (lf.filter(key.is_in(cand.implode())).select(ids).group_by(ids)
           .agg(pl.len().alias("n")).filter(pl.col("n") > 1).sort(ids)
           .collect(engine="streaming"))
    if dup.height:
        extra = int((dup["n"] - 1).sum())
        examples = "; ".join(", ".join(f"{c}={r[c]}" for c in ids) + f" ({r['n']}x)"
                             for r in dup.head(3).iter_rows(named=True))
        raise ValidationError(message(
            "duplicate trials", where=where, expected=f"each ({', '.join(ids)}) once",
            got=f"{extra} extra row(s) for {dup.height} trial(s), e.g. {examples}",
            hint="A duplicated trial would be counted twice. Remove the duplicates, name the "
                 "columns that identify a trial (trial_id=, CLI --trial-id), or pass "
                 "validate=False (CLI --no-validate) if they are intended."))


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


def sorted_groups(lf: pl.LazyFrame, group_cols: Sequence[str]
                  ) -> tuple[list[dict[str, str | None]], list[SortedScores], Checks]:
    """One :class:`SortedScores` per base group (keys in sorted order), and the check counts.

    Only ``score``, ``label`` and the grouping columns are read (never the id strings).
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
    sel = lf.select(*keys, pl.col("score"), label, bad.alias("__bad"))
    if group_cols:
        red = sel.group_by(list(group_cols)).agg(aggs).sort(list(group_cols))
    else:
        red = sel.select([a.implode() if i < 2 else a for i, a in enumerate(aggs)])
    df = red.collect(engine="streaming")
    checks = Checks()
    for f in ("rows", "null_score", "nan_score", "unknown_label", "bad_label"):
        setattr(checks, f, int(df[f].sum()) if df.height else 0)
    groups = [SortedScores(df["tar"][i].to_numpy(), df["non"][i].to_numpy())
              for i in range(df.height)]
    key_rows = df.select(list(group_cols)).to_dicts() if group_cols else [{}] * df.height
    if not group_cols and checks.rows == 0:
        return [], [], checks
    return key_rows, groups, checks


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
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    k = min(int(cores or 1), 8)
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


def unit_statistics(units: Sequence[Unit], base: Sequence[SortedScores], request: Request, *,
                    equalize: bool = False, p: np.ndarray | None = None,
                    q: np.ndarray | None = None,
                    progress: Callable[[int, int], None] | None = None) -> list[UnitStats]:
    """Statistics of every unit from the base groups' sorted scores (in memory, one range)."""
    cache: dict[int, ScoreStats] = {}
    # the base groups' statistics first, one group per thread (numpy releases the GIL)
    needed = sorted({i for u in units for i in u.members if len(u.members) == 1 or equalize})
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if len(needed) > 1 and (cores or 1) > 1:
        with ThreadPoolExecutor(min(int(cores or 1), 8)) as pool:
            cache.update(zip(needed, pool.map(lambda i: reduce_sorted(base[i], request),
                                              needed), strict=True))

    def base_stats(i: int) -> ScoreStats:
        if i not in cache:
            cache[i] = reduce_sorted(base[i], request)
        return cache[i]

    out: list[UnitStats] = []
    for done, u in enumerate(units, 1):
        if len(u.members) == 1:
            st = base_stats(u.members[0])
        else:
            st = reduce_sorted(merge_sorted([base[i] for i in u.members]), request)
        eq = None
        members: tuple[ScoreStats, ...] = ()
        if equalize:
            parts = [base[i] for i in u.members]
            tt = np.array([s.n_tar for s in parts], np.int64)
            nn = np.array([s.n_non for s in parts], np.int64)
            z = np.zeros(len(parts), np.int64)
            if tt.sum() and nn.sum():
                eq = reduce_equalized(parts, EqContext(tt, nn, z, z), p, q)  # type: ignore[arg-type]
            members = tuple(base_stats(i) for i in u.members)
        out.append(UnitStats(u, st, eq, members))
        if progress is not None:
            progress(done, len(units))
    return out

