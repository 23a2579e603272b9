"""Canonical trial schema and the one validation entry point used by every reader.

Frames layer: may use polars; never touches files (see :mod:`scoreframe.io`).

A trial table has ``model: str``, ``segment: str``, ``score: f64``, ``label: bool`` (True =
target, null = unknown), optionally ``system: str``, and any number of condition columns. A key
has no ``score``, a score table no ``label``, an index (Ndx) neither. Text labels are normalized
to bool here, at the import boundary, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import numpy as np
import polars as pl

from scoreframe._cores import usable_cores
from scoreframe.checks import check_positive_int
from scoreframe.errors import SchemaError, ValidationError, message


def polars_frame(data: object) -> pl.DataFrame | pl.LazyFrame:
    """A Polars frame from a Polars, pandas or pyarrow table (the others as they are).

    >>> import pyarrow as pa
    >>> polars_frame(pa.table({"x": [1]})).columns
    ['x']
    """
    if isinstance(data, pl.DataFrame | pl.LazyFrame):
        return data
    mod, name = type(data).__module__, type(data).__name__
    if mod.startswith("pyarrow") and name in ("Table", "RecordBatch"):
        out = pl.from_arrow(data)
        if isinstance(out, pl.DataFrame):
            return out
    if mod.startswith("pandas") and name == "DataFrame":
        return pl.from_pandas(data)
    raise SchemaError(message("unsupported table", expected="a polars, pandas or pyarrow table",
                              got=name))


__all__ = [
    "polars_frame",
    "KEY_COLUMNS",
    "check_duplicates",
    "Kind",
    "id_columns",
    "id_hash",
    "normalize_label",
    "repeated_hashes",
    "user_columns",
    "validate_trials",
]

KEY_COLUMNS = ("model", "segment")
Kind = Literal["trials", "key", "scores", "ndx"]
_REQUIRED: dict[str, tuple[str, ...]] = {
    # model/segment are needed only where something uses them (alignment, fusion, the
    # duplicate check); a score/label table (with condition columns) is a valid trial table
    "trials": ("score", "label"),
    "key": ("model", "segment", "label"),
    "scores": ("model", "segment", "score"),
    "ndx": ("model", "segment"),
}
# text labels: the numbers 1/0 are also accepted as written by float columns (1.0/0.0), so a
# column that mixes them with target/nontarget (and is read as text) reads as the numbers do
_TRUE = ("target", "1", "1.0", "true")
_FALSE = ("nontarget", "0", "0.0", "false")
#: (non-target, target) spellings checked exactly, without normalizing, on a string column
_EXACT_PAIRS = (("nontarget", "target"), ("0", "1"), ("false", "true"))


def user_columns(names: Sequence[str]) -> str:
    """The columns of a table as a message names them: the readers' own ``__`` columns left out.

    Examples
    --------
    >>> user_columns(["modelid", "LLRx", "__line"])
    'modelid, LLRx'
    >>> user_columns(["__line"])
    '(none)'
    """
    return ", ".join(c for c in names if not c.startswith("__")) or "(none)"


def id_hash(ids: Sequence[str]) -> pl.Expr:
    """A 64-bit hash of each row's trial id columns (one seeded hash per column, xor-ed).

    Equal ids give equal hashes, so sorted hashes find duplicate candidates in 8 bytes a row;
    equal hashes only make rows candidates for an exact comparison (collisions are never
    reported as duplicates).
    """
    key = pl.col(ids[0]).hash(seed=0)
    for i, c in enumerate(ids[1:], start=1):
        key = key ^ pl.col(c).hash(seed=i)
    return key


def repeated_hashes(h: np.ndarray | pl.Series, *, overwrite_input: bool = False
                    ) -> np.ndarray:
    """The distinct values that occur more than once in ``h`` (sorted).

    ``overwrite_input=True`` sorts ``h`` in place instead of sorting a copy (half the memory,
    for a caller that owns ``h`` and no longer needs its order). A Polars Series (the hashes
    as Polars computed them, in the parser's chunks: the readers' check) is sorted and
    compared by Polars, with no copy to numpy (0.15-0.2 s at 10^7 hashes on two cores; numpy's
    sort is not vectorized on every CPU); a numpy array is sorted by numpy, in parts on
    several threads.

    >>> repeated_hashes(np.array([5, 1, 5, 2, 1, 5], dtype=np.uint64)).tolist()
    [1, 5]
    >>> repeated_hashes(pl.Series([5, 1, 5, 2, 1, 5], dtype=pl.UInt64)).tolist()
    [1, 5]
    """
    if isinstance(h, pl.Series):
        srt = h.sort()
        later = srt.slice(1)
        same = later == srt.slice(0, max(srt.len() - 1, 0))
        if not same.any():
            return np.zeros(0, dtype=np.uint64)
        return np.unique(later.filter(same).to_numpy())
    if not overwrite_input:  # else in place: one copy of the range in memory (the
        h = np.array(h, dtype=np.uint64)  # out-of-core task)
    _sort_in_place(h)
    return np.unique(h[1:][h[1:] == h[:-1]])


#: Arrays from this size up are sorted in parts on several threads.
_PARALLEL_SORT_MIN = 1 << 20


def _sort_in_place(h: np.ndarray) -> None:
    """Sort ``h`` in place, in up to four parts sorted on as many threads.

    ``np.partition`` (one linear pass) puts every part's values between its neighbours', so
    the parts sorted one by one are the array sorted; numpy's sort releases the GIL. At 10^7
    ``uint64`` hashes on two cores: 0.18 s instead of 0.26-0.40 s for one ``np.sort``. The
    sorted array is the same whatever the number of parts.

    >>> h = np.array([5, 3, 9, 1, 3], dtype=np.uint64); _sort_in_place(h); h.tolist()
    [1, 3, 3, 5, 9]
    """
    parts = min(usable_cores(), 4, max(1, h.size // _PARALLEL_SORT_MIN))
    if parts == 1:
        h.sort()
        return
    kth = [h.size * i // parts for i in range(1, parts)]
    h.partition(kth)
    bounds = [0, *kth, h.size]
    with ThreadPoolExecutor(max_workers=parts) as pool:
        list(pool.map(np.ndarray.sort, [h[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]))


def id_columns(schema: pl.Schema | Sequence[str]) -> list[str]:
    """Columns that identify a trial: ``model``, ``segment`` and ``system`` when present."""
    names = list(schema.names() if isinstance(schema, pl.Schema) else schema)
    return [c for c in ("model", "segment", "system") if c in names]


def normalize_label(dtype: pl.DataType, name: str = "label") -> pl.Expr:
    """Expression mapping an accepted label column to ``Boolean`` (invalid values become null).

    Accepted: booleans; numbers 1/0; strings ``target``/``nontarget``, ``1``/``0``,
    ``1.0``/``0.0``, ``true``/``false`` (case-insensitive, surrounding space ignored). Null
    stays null (unknown). The text ``1.0``/``0.0`` is what a float label column becomes when it
    is written as text, and what it reads as when another row of the same column says
    ``target`` (the column is then text): it means what the numbers mean.
    """
    col = pl.col(name)
    if dtype == pl.Boolean:
        return col
    if dtype.is_integer() or dtype.is_float():
        return pl.when(col == 1).then(True).when(col == 0).then(False).otherwise(None)
    if dtype in (pl.String, pl.Categorical, pl.Enum) or isinstance(dtype, (pl.Categorical,
                                                                        pl.Enum)):
        low = col.cast(pl.String).str.strip_chars().str.to_lowercase()
        return (pl.when(low.is_in(_TRUE)).then(True)
                .when(low.is_in(_FALSE)).then(False).otherwise(None))
    raise SchemaError(message(f"column `{name}` has an unsupported type",
                              expected="bool, 0/1 integers or target/nontarget strings",
                              got=str(dtype)))


def _cast_plan(schema: pl.Schema, kind: Kind, where: str) -> list[pl.Expr]:
    missing = [c for c in _REQUIRED[kind] if c not in schema]
    if kind == "trials" and ("model" in schema or "segment" in schema):
        missing += [c for c in ("model", "segment") if c not in schema]  # ids come in pairs
    if missing:
        raise SchemaError(message(
            f"missing column(s) {', '.join(f'`{c}`' for c in missing)}", where=where,
            expected=f"{kind} columns {', '.join(_REQUIRED[kind])}",
            got=f"columns {user_columns(schema.names())}",
            hint="Rename the columns (readers accept a `columns=` mapping, CLI --columns "
                 "model=SRC,...) or pick another kind."))
    exprs: list[pl.Expr] = []
    for c in ("model", "segment", "system"):
        if c in schema and schema[c] != pl.String:
            if schema[c].is_numeric() or schema[c] in (pl.Categorical, pl.Enum) or isinstance(
                    schema[c], (pl.Categorical, pl.Enum)):
                exprs.append(pl.col(c).cast(pl.String))
            else:
                raise SchemaError(message(f"column `{c}` must hold identifiers", where=where,
                                          expected="str", got=str(schema[c])))
    if "score" in schema and schema["score"] != pl.Float64:
        if not schema["score"].is_numeric():
            raise SchemaError(message("column `score` must be numeric", where=where,
                                      expected="f64", got=str(schema["score"]),
                                      hint="Parse the scores as numbers before importing."))
        exprs.append(pl.col("score").cast(pl.Float64))
    if "label" in schema and schema["label"] != pl.Boolean:
        exprs.append(normalize_label(schema["label"]).alias("label"))
    return exprs


def _label_expr(frame: pl.DataFrame | pl.LazyFrame, dtype: pl.DataType) -> pl.Expr:
    """Label normalization; for an eager string column, computed once per distinct spelling."""
    if isinstance(frame, pl.DataFrame) and dtype == pl.String:
        # the usual spellings exactly (the pair the first label belongs to): two string
        # comparisons per row (faster than a cast to an Enum, which hashes every value)
        col = frame.get_column("label")
        first = col[0] if col.len() else None  # a null anywhere fails the test below
        pair = next((p for p in _EXACT_PAIRS if first in p), _EXACT_PAIRS[0])
        tar = col == pair[1]
        if (tar | (col == pair[0])).all(ignore_nulls=False):
            return pl.lit(tar).alias("label")
    if isinstance(frame, pl.DataFrame) and (dtype == pl.String or isinstance(
            dtype, (pl.Categorical, pl.Enum))):
        distinct = frame.get_column("label").cast(pl.String).unique()
        mapped = pl.DataFrame({"label": distinct}).select(
            normalize_label(pl.String()).alias("label"))["label"]
        return pl.col("label").cast(pl.String).replace_strict(
            distinct, mapped, default=None, return_dtype=pl.Boolean)
    return normalize_label(dtype).alias("label")


def _numbered(lf: pl.LazyFrame, line_column: str | None, first_line: int | None,
              name: str = "__row") -> pl.LazyFrame:
    """``lf`` with each row's line (``line_column``, or ``first_line`` + its index) or index."""
    if line_column:
        return lf.with_columns(pl.col(line_column).alias(name))
    return lf.with_row_index(name, offset=first_line or 0).with_columns(
        pl.col(name).cast(pl.Int64))


def _data_problems(lf: pl.LazyFrame, stats: dict[str, int], schema: pl.Schema, kind: Kind,
                   where: str, original: pl.LazyFrame, ids: list[str] | None,
                   line_column: str | None = None, first_line: int | None = None) -> None:
    """Raise on the first problem the aggregate ``stats`` show (rows located on demand)."""
    unit = "line" if line_column or first_line is not None else "row"
    if stats["rows"] == 0:
        raise SchemaError(message(f"no {kind} rows", where=where, expected="at least one row",
                                  got="an empty table"))
    for c in ("model", "segment"):
        if stats.get(f"null_{c}"):
            rows = _first_rows(lf, pl.col(c).is_null(), line_column, first_line)
            raise SchemaError(message(f"column `{c}` has missing values", where=where,
                                      expected="an identifier on every row",
                                      got=f"{stats[f'null_{c}']} null(s), first at {unit}(s) "
                                          f"{rows}"))
    if stats.get("null_score"):
        rows = _first_rows(lf, pl.col("score").is_null(), line_column, first_line)
        raise SchemaError(message("column `score` has missing values", where=where,
                                  expected="a number on every row",
                                  got=f"{stats['null_score']} null(s), first at {unit}(s) "
                                      f"{rows}"))
    if stats.get("nan"):
        rows = _first_rows(lf, pl.col("score").is_nan(), line_column, first_line)
        raise SchemaError(message("column `score` has NaN values", where=where,
                                  expected="finite or infinite numbers",
                                  got=f"{stats['nan']} NaN(s), first at {unit}(s) {rows}",
                                  hint="Drop those trials or give them a score explicitly."))
    if stats.get("bad_label"):
        vals = (_numbered(original, line_column, first_line).select("__row", "label")
                .filter(pl.col("label").is_not_null()).with_columns(
                    normalize_label(schema["label"]).alias("__n"))
                .filter(pl.col("__n").is_null()).head(3).collect())
        shown = ", ".join(f"{v!r} ({unit} {r})" for r, v in zip(vals["__row"], vals["label"],
                                                               strict=True))
        raise SchemaError(message(
            "column `label` has values outside the accepted spellings", where=where,
            expected="bool, 1/0, target/nontarget or true/false (any case)",
            got=f"{stats['bad_label']} bad value(s), e.g. {shown}",
            hint="Map those values explicitly before importing."))
    if ids and stats.get("repeated_ids"):
        # distinct hashes prove distinct trials; equal hashes need the exact check
        check_duplicates(lf, ids, where=where, line_column=line_column, first_line=first_line)


def check_duplicates(data: pl.DataFrame | pl.LazyFrame, ids: Sequence[str], *,
                     where: str = "input", line_column: str | None = None,
                     hint: str | None = None, first_line: int | None = None) -> None:
    """Raise :class:`~scoreframe.errors.ValidationError` when two rows share their trial ids.

    Sorted 64-bit hashes of the id columns find the candidates; only those rows are
    grouped exactly (a hash collision is never reported). The one duplicate check of the
    readers, ``info`` and the statistics pass, so all word it the same way: how many trials
    occur more than once, how many extra rows, and up to three examples with their count
    (and first line, for text files: ``line_column`` holds each row's line, or the rows are
    the lines from ``first_line`` on). ``hint`` replaces the default hint.

    Examples
    --------
    >>> df = pl.DataFrame({"model": ["a", "a"], "segment": ["x", "x"]})
    >>> check_duplicates(df, ["model", "segment"])
    Traceback (most recent call last):
    ...
    scoreframe.errors.ValidationError: duplicate trials on (model, segment) in input: ...
    """
    lf = data.lazy()
    ids = list(dict.fromkeys(ids))  # a column named twice is the same trial id
    names = lf.collect_schema().names()
    missing = [c for c in ids if c not in names]
    if missing:
        raise SchemaError(message("trial id column(s) not found", where=where,
                                  expected=", ".join(ids), got=user_columns(names)))
    key = id_hash(ids)  # only rows whose hash occurs twice are compared exactly
    cand = repeated_hashes(lf.select(key).collect(engine="streaming").to_series())
    if cand.shape[0] == 0:
        return
    lines = bool(line_column) or first_line is not None
    if lines:
        lf = _numbered(lf, line_column, first_line, "__line")
    lf = lf.filter(key.is_in(pl.Series("h", cand, dtype=pl.UInt64).implode()))
    aggs = [pl.len().alias("n")]
    if lines:
        aggs.append(pl.col("__line").min().alias("__first"))
    dup = (lf.group_by(ids).agg(aggs).filter(pl.col("n") > 1)
           .sort("__first" if lines else list(ids)).collect())
    if dup.height:
        def short(v: object) -> str:
            t = str(v)
            return t if len(t) <= 40 else t[:39] + "\u2026"

        ex = "; ".join(", ".join(f"{c}={short(row[c])}" for c in ids) + f" (x{row['n']}"
                       + (f", first at line {row['__first']})" if lines else ")")
                       for row in dup.head(3).iter_rows(named=True))
        extra = int((dup["n"] - 1).sum())
        raise ValidationError(message(
            f"duplicate trials on ({', '.join(ids)})", where=where,
            expected="each trial once",
            got=f"{dup.height} trial(s) that occur more than once ({extra} extra row(s)), "
                f"e.g. {ex}",
            hint=hint or "Add the distinguishing column (e.g. `system` or a condition) to the "
                         "trial id, or deduplicate the input."))


def _first_rows(lf: pl.LazyFrame, cond: pl.Expr, line_column: str | None = None,
                first_line: int | None = None, n: int = 3) -> str:
    rows = _numbered(lf, line_column, first_line).filter(cond).select("__row").head(n).collect()
    return ", ".join(str(r) for r in rows["__row"])


def validate_trials(data: pl.DataFrame | pl.LazyFrame, *, kind: Kind = "trials",
                    where: str = "input", check_data: bool = True,
                    duplicates: bool = True,
                    trial_id: Sequence[str] | None = None,
                    line_column: str | None = None,
                    first_line: int | None = None) -> pl.LazyFrame:
    """Check and normalize a table to the canonical schema; return it as a LazyFrame.

    Parameters
    ----------
    data
        The table, eager or lazy.
    kind
        ``"trials"`` (key + scores), ``"key"``, ``"scores"`` or ``"ndx"``.
    where
        Where the data came from (a file name), quoted in error messages.
    check_data
        Also scan the data (one aggregate pass): empty input, null ids, NaN or null scores,
        labels outside the accepted spellings. Column names and types are always checked.
    duplicates
        With ``check_data``, also reject duplicate trials.
    trial_id
        Columns that identify a trial (default ``model, segment`` and ``system`` if present);
        e.g. ``("model", "mcond", "segment")`` when a model is enrolled in several conditions.
    line_column
        A column holding the source line number of each row (text readers): messages quote
        lines instead of 0-based rows, and the column is dropped from the result.
    first_line
        Instead of ``line_column``: the rows are consecutive lines from this one on (a text
        file without blank lines), numbered only when a message quotes them.

    Raises
    ------
    SchemaError
        With the column, what was expected, what was found and where.

    See Also
    --------
    scoreframe.scan_trials : Read a dataset (validated when it was written).
    scoreframe.align : Build a trial table from a key and scores.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"model": ["m1"], "segment": ["s1"], "score": [1], "label": ["target"]})
    >>> validate_trials(df).collect().dtypes
    [String, String, Float64, Boolean]
    """
    if first_line is not None:
        first_line = check_positive_int(first_line, name="first_line")
        if line_column:
            raise ValidationError(message("`line_column` and `first_line` both given",
                                          expected="one way to number the lines"))
    data = polars_frame(data)
    lf = data.lazy() if isinstance(data, pl.DataFrame) else data
    schema = lf.collect_schema()
    exprs = _cast_plan(schema, kind, where)
    if "label" in schema and schema["label"] != pl.Boolean:
        exprs = [e for e in exprs if e.meta.output_name() != "label"]
        exprs.append(_label_expr(data, schema["label"]))
    if not check_data:
        out = lf.with_columns(exprs) if exprs else lf
        return out.drop(line_column) if line_column else out
    ids: list[str] | None = None
    if duplicates:
        ids = list(dict.fromkeys(trial_id)) if trial_id else id_columns(schema)
        missing = [c for c in ids if c not in schema]
        if missing:
            raise SchemaError(message("trial id column(s) not found", where=where,
                                      expected=", ".join(ids),
                                      got=user_columns(schema.names())))
    # one pass: normalized columns, plus whether each label was given (to tell bad from null)
    had = [pl.col("label").is_not_null().alias("__had_label")] if "label" in schema else []
    full = lf.with_columns(*exprs, *had)
    aggs = [pl.len().alias("rows")]
    if "score" in schema:
        aggs += [pl.col("score").is_nan().sum().alias("nan"),
                 pl.col("score").is_null().sum().alias("null_score")]
    if "label" in schema:
        aggs.append((pl.col("label").is_null() & pl.col("__had_label")).sum()
                    .alias("bad_label"))
    aggs += [pl.col(c).is_null().sum().alias(f"null_{c}") for c in ("model", "segment")
             if c in schema]
    if isinstance(data, pl.DataFrame):
        frame = full.collect()
        row = frame.select(aggs).row(0, named=True)
        if ids:  # sorting the hashes is ~2x faster than a hash table of them. Hashed in a
            # frame of the id columns alone: in the whole frame, a column chunked unlike them
            # (a line number, a computed label) first makes Polars copy every column into one
            # chunk (0.2 s at 10^7 parsed rows)
            h = pl.DataFrame([frame.get_column(c) for c in ids]).select(id_hash(ids))
            row["repeated_ids"] = int(repeated_hashes(h.to_series()).shape[0] > 0)
        # the columns as they are: `drop` would first align their chunks (0.05-0.2 s at 10^7
        # rows when the label, computed eagerly, is chunked unlike the parsed text)
        out = pl.DataFrame([c for c in frame.iter_columns() if c.name != "__had_label"]).lazy()
    else:
        if ids:
            aggs.append((id_hash(ids).n_unique() < pl.len()).alias("repeated_ids"))
        row = full.select(aggs).collect().row(0, named=True)
        out = lf.with_columns(exprs) if exprs else lf
    stats = {k: int(v or 0) for k, v in row.items()}
    _data_problems(out, stats, schema, kind, where, lf, ids, line_column, first_line)
    return out.drop(line_column) if line_column else out
