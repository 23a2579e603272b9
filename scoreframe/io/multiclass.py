"""Multiclass score and truth tables: long, wide (NIST LRE22 system output) and truth readers.

I/O layer. Every reader returns a polars DataFrame in the canonical multiclass schema and
checks the data on the way in, naming the file and the line (text files, counting the header
as line 1), or the row (Parquet, frames; 0-based as in
:func:`scoreframe.frames.schema.validate_trials`)
of the first problem:

* scores, long: ``segment, class, score`` (+ ``system`` and any other columns);
* scores, wide: an id column plus one numeric column per class (+ ``system``): the NIST LRE22
  system output TSV (``segmentid`` + one column per language code) or any wide CSV/Parquet;
* truth: ``segment, class`` (+ ``system`` and condition columns).

The id column may be named ``segment``, ``segmentid``, ``segment_id`` or ``id``; the truth class
column ``class``, ``true_class``, ``language``, ``language_code`` or ``label``. Text files are
tab-separated unless their name ends in ``.csv`` (gzip is read); a row with more or fewer fields
than the header is an error.

Checks: scores: an id on every row, a number on every row (no null, no NaN; the infinities are
log-likelihoods of 0 and are kept), no duplicate (``system``, ``segment``, ``class``), every
segment scores every class, and (with ``classes=``) no class outside the given ones. Truth: an
id and a class on every row, no segment listed twice (per ``system`` when the truth has one),
and (with ``classes=``) no unknown class.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from scoreframe.errors import FormatError, Place, SchemaError, ValidationError, message
from scoreframe.io.lines import (
    count_fields,
    first_bad_line,
    quote,
    read_lines,
    read_source,
    utf8_or_format_error,
)

__all__ = ["ID_NAMES", "TRUTH_NAMES", "read_lre22_key", "read_lre22_scores",
           "read_multiclass_scores", "read_multiclass_truth"]

#: Accepted names of the segment id column, in order of preference.
ID_NAMES = ("segment", "segmentid", "segment_id", "id")
#: Accepted names of the truth class column, in order of preference.
TRUTH_NAMES = ("class", "true_class", "language", "language_code", "label")
#: What the readers accept: a path or a polars frame (see :func:`scoreframe.frames.lazy.as_lazy`
#: for pandas and pyarrow).
Source = str | Path | pl.DataFrame | pl.LazyFrame

_POS = "__pos"
Unit = Literal["line", "row"]


class _Table:
    """A raw table with the position of each row (``__pos``) and how to name a position."""

    def __init__(self, df: pl.DataFrame, where: str, unit: Unit) -> None:
        self.df = df
        self.where = where
        self.unit = unit

    def at(self, pos: object) -> str:
        if isinstance(self.where, Place) and isinstance(pos, int):  # a file: its path (and line)
            return (self.where.at(pos) if self.unit == "line"  # as the message's attributes
                    else self.where.inside(f"{self.unit} {pos}"))
        return f"{self.where} {self.unit} {pos}"

    def first(self, cond: pl.Expr) -> int | None:
        """Position of the first row where ``cond`` holds (None if none)."""
        hit = self.df.lazy().filter(cond).select(pl.col(_POS).min()).collect().item()
        return None if hit is None else int(hit)


def _format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in ("parquet", "csv", "tsv"):
            raise FormatError(message("unknown multiclass table format",
                                      expected="parquet | csv | tsv", got=repr(fmt)))
        return fmt
    name = path.name.lower().removesuffix(".gz")
    if path.is_dir() or name.endswith(".parquet"):
        return "parquet"
    return "csv" if name.endswith(".csv") else "tsv"


def _read_text(path: Path, sep: str, where: str) -> pl.DataFrame:
    """All fields as strings, ``__pos`` = line number.

    Goes through :mod:`scoreframe.io.lines` like every text reader: gzip (truncated or corrupt
    streams), UTF-8 and control bytes, and rows with more or fewer fields than the header, each
    an error naming the file and line.
    """
    src = read_source(path, what="table")
    lines = read_lines(path, src=src)
    if lines.height == 0 or lines["line"][0] is None:
        raise FormatError(message("no header line", where=Place(path, line=1),
                                  expected="column names", got="an empty line or file"))
    fields = count_fields(pl.col("line"), sep, quoted=sep == ",")
    n_fields = lines.head(1).select(fields).item()
    body = lines.slice(1).filter(pl.col("line").str.strip_chars() != "")
    ln = first_bad_line(body, fields != n_fields)
    if ln is not None:
        text = body.filter(pl.col("lineno") == ln)["line"][0]
        raise FormatError(message(
            "a row with the wrong number of fields", where=Place(path, line=ln),
            expected=f"{n_fields} fields like the header",
            got=f"{body.filter(pl.col('lineno') == ln).select(fields).item()}: {quote(text)}"))
    try:
        df = pl.read_csv(src, separator=sep, infer_schema=False, raise_if_empty=True)
    except pl.exceptions.PolarsError as exc:
        raise utf8_or_format_error(exc, src, path) from None
    df = df.with_row_index(_POS, offset=2)
    data = [c for c in df.columns if c != _POS]
    return df.filter(~pl.all_horizontal(pl.col(data).is_null()))  # blank lines


def _load(source: Source, fmt: str | None, what: str) -> _Table:
    if isinstance(source, pl.LazyFrame | pl.DataFrame):
        try:
            df = source.collect() if isinstance(source, pl.LazyFrame) else source
        except pl.exceptions.PolarsError as exc:
            raise FormatError(message(f"cannot read the {what} table",
                                      got=str(exc).splitlines()[0])) from None
        if _POS in df.columns:
            df = df.drop(_POS)
        return _Table(df.with_row_index(_POS), f"the {what} table", "row")
    path = Path(source)
    where = Place(path)
    if not path.exists():
        raise FormatError(message("no such file", path=path,
                                  expected=f"the {what} table (Parquet, CSV or TSV)"))
    kind = _format(path, fmt)
    if kind != "parquet":
        return _Table(_read_text(path, "," if kind == "csv" else "\t", where), where, "line")
    try:
        df = pl.read_parquet(str(path / "**" / "*.parquet") if path.is_dir() else path,
                             hive_partitioning=True if path.is_dir() else None)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FormatError(message("cannot read parquet", where=where,
                                  got=str(exc).splitlines()[0])) from None
    return _Table(df.with_row_index(_POS), where, "row")


def _column(t: _Table, names: Sequence[str], what: str) -> str:
    for c in names:
        if c in t.df.columns:
            return c
    raise SchemaError(message(f"no {what} column", where=t.where,
                              expected=" or ".join(f"`{c}`" for c in names),
                              got="columns " + ", ".join(c for c in t.df.columns if c != _POS)))


def _ids(t: _Table, cols: Sequence[str]) -> list[pl.Expr]:
    """Cast id-like columns to strings; a type that cannot be an id is an error."""
    exprs = []
    for c in cols:
        dt = t.df.schema[c]
        if not (dt == pl.String or dt.is_numeric() or isinstance(dt, pl.Categorical | pl.Enum)):
            raise SchemaError(message(f"column `{c}` must hold names", where=t.where,
                                      expected="str", got=str(dt)))
        exprs.append(pl.col(c).cast(pl.String))
    return exprs


def _numbers(t: _Table, cols: Sequence[str]) -> None:
    """Cast score columns to f64 in place; text that is not a number is an error."""
    exprs = []
    for c in cols:
        dt = t.df.schema[c]
        if dt == pl.String:
            num = pl.col(c).str.strip_chars().cast(pl.Float64, strict=False)
            pos = t.first(num.is_null() & pl.col(c).is_not_null()
                          & (pl.col(c).str.strip_chars() != ""))
            if pos is not None:
                raw = t.df.filter(pl.col(_POS) == pos)[c][0]
                raise FormatError(message(f"column `{c}` has a value that is not a number",
                                          where=t.at(pos), expected="a number",
                                          got=quote(raw)))
            exprs.append(num.alias(c))
        elif dt.is_numeric():
            exprs.append(pl.col(c).cast(pl.Float64))
        else:
            raise SchemaError(message(f"column `{c}` must hold numbers", where=t.where,
                                      expected="f64", got=str(dt)))
    t.df = t.df.with_columns(exprs)


def _no_nulls(t: _Table, cols: Sequence[str], what: str) -> None:
    counts = t.df.select(pl.col(c).null_count() for c in cols).row(0)  # one pass
    for c, n in zip(cols, counts, strict=True):
        if n:
            raise ValidationError(message(f"column `{c}` has missing values",
                                          where=t.at(t.first(pl.col(c).is_null())),
                                          expected=what, got=f"{n} empty value(s)"))


def _known_classes(t: _Table, classes: Sequence[str] | None) -> None:
    if classes is None:
        return
    known = [str(c) for c in classes]
    pos = t.first(~pl.col("class").is_in(known))
    if pos is not None:
        bad = t.df.filter(pl.col(_POS) == pos)["class"][0]
        raise ValidationError(message("a class outside the known classes", where=t.at(pos),
                                      expected=", ".join(known), got=quote(bad)))


def _no_duplicates(t: _Table, keys: list[str], what: str, hint: str) -> None:
    n_dup = t.df.lazy().group_by(keys).agg(pl.len()).filter(pl.col("len") > 1).select(
        pl.len()).collect().item()
    if not n_dup:
        return
    again = t.first(~pl.struct(keys).is_first_distinct())
    row = t.df.filter(pl.col(_POS) == again).row(0, named=True)
    key = ", ".join(f"{k} {quote(row[k])}" for k in keys)
    first = t.first(pl.all_horizontal(pl.col(k) == row[k] for k in keys))
    raise ValidationError(message(
        what, where=t.at(again), expected="each once",
        got=f"{key} again (first at {t.unit} {first}); {n_dup} duplicated in all", hint=hint))


def _one_per_class(t: _Table, keys: list[str], classes: Sequence[str] | None) -> None:
    """Every segment scores each class exactly once: one group-by pass over the segments.

    With K <= 62 classes, the sum of ``2^class_index`` over a segment's rows is ``2^K - 1``
    with K rows exactly when the classes are all there once (K powers of two make K one-bits
    only without carries); larger K count the distinct classes instead.
    """
    known = ([str(c) for c in classes] if classes is not None
             else t.df["class"].unique().sort().to_list())
    k = len(known)
    if k <= 62:
        bits = pl.col("class").replace_strict({c: 1 << i for i, c in enumerate(known)},
                                              return_dtype=pl.Int64)
        ok = (pl.len() == k) & (bits.sum() == (1 << k) - 1)
    else:
        ok = (pl.len() == k) & (pl.col("class").n_unique() == k)
    bad = (t.df.lazy().group_by(keys).agg(ok.alias("ok"), pl.len().alias("n"),
                                          pl.col(_POS).min())
           .filter(~pl.col("ok")).sort(_POS).collect())
    if not bad.height:
        return
    _no_duplicates(t, [*keys, "class"], "duplicate (segment, class) score",
                   "Each segment needs exactly one score per class (per system).")
    row = bad.row(0, named=True)
    have = set(t.df.filter(pl.all_horizontal(pl.col(c) == row[c] for c in keys))["class"])
    lack = [c for c in known if c not in have]
    raise ValidationError(message(
        f"segment {quote(row['segment'])} does not score every class", where=t.at(row[_POS]),
        expected=f"{k} classes per segment",
        got=f"{row['n']}, missing {', '.join(map(str, lack[:5]))}; "
            f"{bad.height} incomplete segment(s) in all"))


def read_multiclass_scores(source: Source, *, fmt: str | None = None,
                           classes: Sequence[str] | None = None) -> pl.DataFrame:
    """Read and check multiclass scores into the long schema ``segment, class, score``.

    Parameters
    ----------
    source
        A Parquet file or hive directory, a CSV or TSV file (``.csv`` is comma-separated, any
        other name tab-separated; gzip is read), or a polars frame; long or wide (see the module
        docstring).
    fmt
        ``"parquet"``, ``"csv"`` or ``"tsv"`` to override the guess from the file name.
    classes
        The known classes: a score for any other class is an error (default: the table's).

    Returns
    -------
    polars.DataFrame
        ``segment`` (str), ``class`` (str), ``score`` (f64), plus ``system`` and the table's
        other columns (long tables), in the input's row order.

    Raises
    ------
    FormatError
        The file cannot be parsed, a row is ragged or a score is not a number (file, line).
    SchemaError
        No id column, or a wide table has no class column.
    ValidationError
        Missing ids or scores, NaN, duplicate or missing (segment, class) scores, unknown
        classes (naming the file and line, or the row).

    See Also
    --------
    read_multiclass_truth : The matching truth.
    scoreframe.multiclass.read_scores : The checked long-form reader.

    Examples
    --------
    >>> import polars as pl
    >>> wide = pl.DataFrame({"segmentid": ["s1", "s2"], "eng": [0.5, -1.0], "fra": [0.0, 2.0]})
    >>> read_multiclass_scores(wide).sort("segment", "class").rows()
    [('s1', 'eng', 0.5), ('s1', 'fra', 0.0), ('s2', 'eng', -1.0), ('s2', 'fra', 2.0)]
    >>> read_multiclass_scores(pl.DataFrame({"segment": ["s1", "s1"], "class": ["a", "a"],
    ...                                      "score": [1.0, 2.0]}))
    Traceback (most recent call last):
    ...
    scoreframe.errors.ValidationError: duplicate (segment, class) score in the scores table row 1: ...
    """  # noqa: E501
    return _scores(_load(source, fmt, "scores"), classes)


def _scores(t: _Table, classes: Sequence[str] | None) -> pl.DataFrame:
    idc = _column(t, ID_NAMES, "segment id")
    sys_cols = ["system"] if "system" in t.df.columns else []
    if "class" in t.df.columns and "score" in t.df.columns:
        t.df = t.df.rename({idc: "segment"}) if idc != "segment" else t.df
        t.df = t.df.with_columns(_ids(t, ["segment", "class", *sys_cols]))
        _numbers(t, ["score"])
        _no_nulls(t, ["segment", "class", *sys_cols], "a name on every row")
    elif "class" in t.df.columns or "score" in t.df.columns:
        raise SchemaError(message("a long score table needs `segment`, `class` and `score`",
                                  where=t.where, got="columns " + ", ".join(
                                      c for c in t.df.columns if c != _POS)))
    else:
        names = [c for c in t.df.columns if c not in (idc, _POS, *sys_cols)]
        if not names:
            raise SchemaError(message("no class columns in a wide score table", where=t.where,
                                      expected="`segment, class, score` or an id column and "
                                      "one numeric column per class",
                                      got="columns " + ", ".join(t.df.columns[:-1])))
        t.df = t.df.with_columns(_ids(t, [idc, *sys_cols]))
        _numbers(t, names)
        _no_nulls(t, [idc, *sys_cols], "a name on every row")
        t.df = t.df.unpivot(on=names, index=[_POS, idc, *sys_cols], variable_name="class",
                            value_name="score").rename({idc: "segment"})
    if t.df.height == 0:
        raise ValidationError(message("no scores", where=t.where, expected="at least one row",
                                      got="an empty table"))
    stats = t.df.select(pl.col("score").null_count().alias("null"),
                        pl.col("score").is_nan().sum().alias("nan")).row(0, named=True)
    if stats["null"]:
        raise ValidationError(message("a missing score",
                                      where=t.at(t.first(pl.col("score").is_null())),
                                      expected="a number for every (segment, class)",
                                      got=f"{stats['null']} empty score(s)"))
    if stats["nan"]:
        raise ValidationError(message("a NaN score", where=t.at(t.first(pl.col("score").is_nan())),
                                      expected="numbers (log-likelihoods; -inf is allowed)",
                                      got=f"{stats['nan']} NaN score(s)"))
    _known_classes(t, classes)
    _one_per_class(t, [*sys_cols, "segment"], classes)
    return t.df.drop(_POS)


def read_multiclass_truth(source: Source, *, fmt: str | None = None,
                          classes: Sequence[str] | None = None) -> pl.DataFrame:
    """Read and check a multiclass truth table into ``segment, class`` (+ other columns).

    Parameters
    ----------
    source
        A Parquet file or hive directory, a CSV/TSV file or a polars frame.
    fmt
        ``"parquet"``, ``"csv"`` or ``"tsv"`` to override the guess from the file name.
    classes
        The known classes: a truth class outside them is an error.

    Returns
    -------
    polars.DataFrame
        ``segment`` (str), ``class`` (str), plus ``system`` and condition columns.

    Raises
    ------
    FormatError, SchemaError, ValidationError
        As :func:`read_multiclass_scores`; a segment listed twice (per ``system`` when the truth
        has that column) names both lines.

    See Also
    --------
    read_multiclass_scores : The matching scores.
    scoreframe.multiclass.read_truth : The checked long-form reader.

    Examples
    --------
    >>> import polars as pl
    >>> read_multiclass_truth(pl.DataFrame({"segmentid": ["s1"], "language_code": ["eng"]}))
    shape: (1, 2)
    ┌─────────┬───────┐
    │ segment ┆ class │
    │ ---     ┆ ---   │
    │ str     ┆ str   │
    ╞═════════╪═══════╡
    │ s1      ┆ eng   │
    └─────────┴───────┘
    """
    return _truth(_load(source, fmt, "truth"), classes)


def _truth(t: _Table, classes: Sequence[str] | None) -> pl.DataFrame:
    idc = _column(t, ID_NAMES, "segment id")
    cls = _column(t, [c for c in TRUTH_NAMES if c != idc], "truth class")
    t.df = t.df.rename({idc: "segment", cls: "class"})
    sys_cols = ["system"] if "system" in t.df.columns else []
    t.df = t.df.with_columns(_ids(t, ["segment", "class", *sys_cols]))
    if t.df.height == 0:
        raise ValidationError(message("no truth", where=t.where, expected="at least one row",
                                      got="an empty table"))
    _no_nulls(t, ["segment", *sys_cols], "a segment id on every row")
    _no_nulls(t, ["class"], "the true class of every segment")
    _known_classes(t, classes)
    _no_duplicates(t, [*sys_cols, "segment"], "the truth lists a segment more than once",
                   "Give each segment one true class.")
    return t.df.drop(_POS)


def read_lre22_scores(path: str | Path) -> pl.DataFrame:
    r"""Read a NIST LRE22 system output TSV: ``segmentid`` + one log-likelihood column per language.

    The same checks as :func:`read_multiclass_scores`; the file must have ``segmentid``.

    Parameters
    ----------
    path
        The tab-separated system output.

    Returns
    -------
    polars.DataFrame
        Long form: ``segment``, ``class``, ``score``, one row per segment and language.

    See Also
    --------
    read_lre22_key : The matching key.
    scoreframe.multiclass.evaluate_multiclass : Evaluate them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "system.tsv"
    >>> _ = p.write_text("segmentid\teng\tfra\nseg1\t1.5\t-0.5\n")
    >>> read_lre22_scores(p).rows()
    [('seg1', 'eng', 1.5), ('seg1', 'fra', -0.5)]
    """
    t = _load(path, "tsv", "scores")
    _column(t, ("segmentid",), "LRE22 `segmentid`")
    return _scores(t, None)


def read_lre22_key(path: str | Path, *, classes: Sequence[str] | None = None) -> pl.DataFrame:
    r"""Read a NIST LRE22 key TSV (``segmentid``, ``language_code`` + metadata columns).

    Parameters
    ----------
    path
        The tab-separated key.
    classes
        The known languages: a segment labelled with another one is an error naming its line
        (default: any language).

    Returns
    -------
    polars.DataFrame
        ``segment``, ``class`` and the metadata columns, one row per segment.

    See Also
    --------
    read_lre22_scores : The matching scores.
    scoreframe.multiclass.evaluate_multiclass : Evaluate them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.tsv"
    >>> _ = p.write_text("segmentid\tlanguage_code\tsource\nseg1\teng\tcts\n")
    >>> read_lre22_key(p).rows()
    [('seg1', 'eng', 'cts')]
    """
    t = _load(path, "tsv", "truth")
    _column(t, ("segmentid",), "LRE22 `segmentid`")
    _column(t, ("language_code",), "LRE22 `language_code`")
    return _truth(t, classes)
