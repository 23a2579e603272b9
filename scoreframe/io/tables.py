"""NIST SRE TSV files and generic CSV/TSV/Parquet tables with a column mapping.

I/O layer.

* NIST SRE trial key (TSV with header): ``modelid segmentid [side] targettype`` plus any
  metadata columns (``gender``, ``phone_num_match``, ...), ``targettype`` = target|nontarget.
* NIST SRE system output (TSV with header): ``modelid segmentid side LLR``.
* Generic tables: any CSV, TSV or Parquet; ``columns`` maps canonical names to the file's
  (``{"model": "enroll", "segment": "test", "score": "llr", "label": "is_target"}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scoreframe.errors import FormatError, Place, message
from scoreframe.frames.schema import Kind, user_columns, validate_trials
from scoreframe.io.atomic import atomic_output, final_path
from scoreframe.io.lines import (
    byte_array,
    check_control_bytes,
    contains_byte,
    count_fields,
    field_counts,
    first_bad_line,
    quote,
    read_lines,
    read_source,
    utf8_or_format_error,
)
from scoreframe.io.parquet import infer_kind

__all__ = ["read_nist_key", "read_nist_scores", "read_table", "write_nist_key",
           "write_nist_scores", "write_table"]

NIST_KEY = {"modelid": "model", "segmentid": "segment", "targettype": "label"}
NIST_SCORES = {"modelid": "model", "segmentid": "segment", "LLR": "score"}


_ID_COLUMNS = ("modelid", "segmentid", "model", "segment", "system")


def _read_delimited(path: Path, separator: str, text_columns: Sequence[str] = (),
                    max_line_bytes: int | None = None) -> pl.DataFrame:
    """Parse a delimited text table with a header; every row must have the header's fields.

    ``text_columns`` (besides the usual id columns) are read as strings, never as numbers
    (an id ``0012`` keeps its zeros).

    Field counts are checked on the raw lines (quoted separators skipped) before parsing, so
    a short or long row is an error naming its line rather than a padded or shifted trial.
    The frame has a ``__line`` column (each row's line) when the lines were counted (blank
    lines are skipped); without it, row i is line i + 2 (:func:`_line_options`).
    """
    src = read_source(path, what="table", max_line_bytes=max_line_bytes)
    where = Place(path)
    arr = byte_array(src)
    quoted = contains_byte(src, b'"')
    header = _header_text(arr, where)
    if not quoted:
        check_control_bytes(arr, path)
        fast = _fast_delimited(src, arr, separator, path, header, text_columns)
        if fast is not None:
            return fast
    if quoted:  # quoted separators: count fields on the lines, quotes removed
        lines = read_lines(path, src=src)
        line = pl.col("line")
        odd = first_bad_line(lines, line.str.count_matches('"', literal=True) % 2 == 1)
        if odd is not None:
            raise FormatError(message("unbalanced quote", where=where.at(odd),
                                      expected="quoted fields closed on the same line",
                                      got="an odd number of `\"`"))
        counted = lines.select("lineno", count_fields(line, separator, quoted=True).alias("n"),
                               line.is_null().alias("blank"))
        texts = lines["line"]

        def text(lineno: int) -> str:
            return str(texts[lineno - 1])
    else:  # fields counted from the bytes: no pass over the lines as strings
        counted, starts, ends = field_counts(arr, separator)

        def text(lineno: int) -> str:
            raw = bytes(arr[starts[lineno - 1]:ends[lineno - 1]])
            return raw.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if not counted.height or counted["blank"][0]:
        raise FormatError(message("no header line", where=where.at(1),
                                  expected="a header naming the columns",
                                  got="an empty file" if not counted.height else "an empty line"))
    expected = int(counted["n"][0])
    bad = counted.filter(~pl.col("blank") & (pl.col("n") != expected))
    if bad.height:
        first = bad.row(0, named=True)
        raise FormatError(message(
            "row with the wrong number of fields", where=where.at(first['lineno']),
            expected=f"{expected} fields, as in the header",
            got=f"{first['n']} field(s): {quote(text(first['lineno']))}"
                + (f" ({bad.height} bad rows in all)" if bad.height > 1 else ""),
            hint="Rows are never padded or shifted: fix or remove the row."))
    if not quoted:
        _check_header(header, separator, where)
    df = _parse(src, separator, path, text_columns)
    body = counted.slice(1)
    if df.height != body.height:
        raise FormatError(message("cannot parse table", where=where,
                                  expected=f"{body.height} data rows",
                                  got=f"{df.height} rows (a quoted field spanning lines?)"))
    df = df.with_columns(body["lineno"].alias("__line"))
    if body["blank"].any():
        df = df.filter(~body["blank"])
    return df


def _parse(src: bytes | Path, separator: str, path: Path,
           text_columns: Sequence[str] = ()) -> pl.DataFrame:
    """Parse with polars (types inferred; ids as strings); errors name the file.

    Types are inferred from the first 100 rows. Every row is used instead when a later value
    does not parse (an integer column holding ``1.5`` further down), or when a column that is
    empty in those rows holds values later (it would otherwise stay text).
    """
    overrides = {c: pl.String for c in (*_ID_COLUMNS, *text_columns)}

    def read(rows: int | None) -> pl.DataFrame:
        return pl.read_csv(src, separator=separator, infer_schema_length=rows,
                           schema_overrides=overrides, raise_if_empty=True,
                           truncate_ragged_lines=False)

    try:
        try:
            df = read(100)
        except pl.exceptions.ComputeError as exc:
            if "could not parse" not in str(exc):
                raise
            return read(None)
        head = df.head(100)
        late = [c for c, dtype in df.schema.items()
                if dtype == pl.String and c not in overrides and df.height > 100
                and head[c].null_count() == head.height
                and df[c].null_count() < df.height]
        return read(None) if late else df
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError,
            pl.exceptions.ShapeError, pl.exceptions.SchemaError) as exc:
        if "utf" in str(exc).lower():
            raise utf8_or_format_error(exc, src, path) from None
        raise FormatError(message("cannot parse table", where=Place(path),
                                  got=str(exc).splitlines()[0])) from None


def _header_text(arr: np.ndarray, where: Place) -> str:
    """The header line (byte-order mark and CR removed); bytes that are not UTF-8 are an error.

    Polars would read such a header lossily into a mangled column name.
    """
    end = bytes(arr[:1 << 16]).find(b"\n")  # the header ends in the first 64 KiB...
    if end < 0:  # ... or the search goes on through the whole file
        end = int(np.argmax(arr == 10)) if (arr == 10).any() else arr.size
    try:
        text = bytes(arr[:end]).decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(message("invalid UTF-8", where=where.at(1),
                                  expected="UTF-8 text", got="bytes that are not UTF-8",
                                  hint="Re-encode the file as UTF-8 (e.g. iconv -f latin1 -t "
                                       "utf-8).")) from None
    return text.removeprefix("\ufeff").removesuffix("\r")


def _check_header(header: str, separator: str, where: Place) -> None:
    names = [h.strip().strip('"') for h in header.split(separator)]
    if len(set(names)) != len(names):
        dups = sorted({h for h in names if names.count(h) > 1})
        raise FormatError(message("duplicate column names", where=where.at(1),
                                  expected="distinct names", got=", ".join(dups)))


def _fast_delimited(src: bytes | Path, arr: np.ndarray, separator: str, path: Path,
                    header: str, text_columns: Sequence[str] = ()) -> pl.DataFrame | None:
    """Parse an unquoted table directly when no row can be ragged; None otherwise.

    A long row makes polars raise and a short row (or a blank line) leaves the last column
    null: when neither happens every row has the header's fields and row i is line i + 2, so
    the per-line field count is not needed.
    """
    if not arr.size or arr[0] in (10, 13):
        return None  # polars skips leading blank lines: the header would not be line 1
    try:
        df = _parse(src, separator, path, text_columns)
    except FormatError:
        return None
    if not df.height or df.get_column(df.columns[-1]).null_count():
        return None
    _check_header(header, separator, Place(path))
    return df  # row i is line i + 2 (no blank line): numbered only for a message


def _line_options(df: pl.DataFrame) -> dict[str, Any]:
    """:func:`validate_trials`' line options: the ``__line`` column, or row i is line i + 2."""
    return {"line_column": "__line"} if "__line" in df.columns else {"first_line": 2}


def _first_line(df: pl.DataFrame, cond: pl.Expr) -> int:
    """The line of the first row where ``cond`` holds (one is known to)."""
    numbered = df if "__line" in df.columns else df.with_row_index("__line", offset=2)
    return int(numbered.filter(cond)["__line"][0])


def _numeric(df: pl.DataFrame, column: str, path: Path) -> pl.DataFrame:
    """Parse a text column of numbers, naming the first line that is not a number."""
    if column not in df.columns or df.schema[column] != pl.String:
        return df
    parsed = pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)
    cond = parsed.is_null() & pl.col(column).is_not_null()
    bad = df.filter(cond)
    if bad.height:
        raise FormatError(message(f"bad value in column `{column}`",
                                  where=Place(path, line=_first_line(df, cond)),
                                  expected="a number", got=quote(bad[column][0])))
    return df.with_columns(parsed)


def _renamed(df: pl.DataFrame, mapping: Mapping[str, str], path: Path, fmt: str) -> pl.DataFrame:
    missing = [src for src in mapping if src not in df.columns]
    if missing:
        raise FormatError(message(f"missing {fmt} column(s) {', '.join(missing)}",
                                  where=Place(path), expected=", ".join(mapping),
                                  got=user_columns(df.columns)))
    taken = [dst for src, dst in mapping.items() if dst in df.columns and dst != src
             and dst not in mapping]
    if taken:
        raise FormatError(message(f"{fmt} column(s) would be renamed onto existing column(s) "
                                  + ", ".join(f"`{c}`" for c in taken), where=Place(path),
                                  expected="no column already named "
                                           + ", ".join(sorted(set(mapping.values()))),
                                  got=user_columns(df.columns),
                                  hint="Rename or drop the existing column."))
    return df.rename(dict(mapping))


def read_nist_key(path: str | Path, *, text_columns: Sequence[str] = (),
                  max_line_bytes: int | None = None) -> pl.DataFrame:
    r"""Read a NIST SRE trial key TSV; metadata columns are kept as condition columns.

    ``text_columns`` name metadata columns read as text, never as numbers;
    ``max_line_bytes`` is the longest line accepted (see :func:`read_table`).

    Parameters
    ----------
    path
        The file (gzip-compressed files are read too).
    text_columns
        Metadata columns read as text.
    max_line_bytes
        Longest line accepted, in bytes (see :func:`read_table`).

    Returns
    -------
    polars.DataFrame
        ``model``, ``segment``, ``label`` and the metadata columns.

    See Also
    --------
    read_nist_scores : The matching scores.
    write_nist_key : The writer.
    scoreframe.align : Join key and scores.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.tsv"
    >>> _ = p.write_text("modelid\tsegmentid\ttargettype\tgender\n"
    ...                  "m1\ts1\ttarget\tf\nm1\ts2\tnontarget\tf\n")
    >>> read_nist_key(p).rows()
    [('m1', 's1', True, 'f'), ('m1', 's2', False, 'f')]
    """
    path = Path(path)
    df = _renamed(_read_delimited(path, "\t", text_columns, max_line_bytes), NIST_KEY, path,
                  "NIST key")
    df = _require_targettype(df, path)
    return validate_trials(df, kind="key", where=Place(path), **_line_options(df)).collect()


def _require_targettype(df: pl.DataFrame, path: Path) -> pl.DataFrame:
    """A NIST key names every trial's ``targettype``: an empty one is an error, not unknown.

    Returns the frame, its label already Boolean when every line says ``target`` or
    ``nontarget`` exactly (the comparisons that check it give the labels too).
    """
    col = df.get_column("label")
    if col.dtype == pl.String and not col.null_count():
        tar = col == "target"
        if (tar | (col == "nontarget")).all():  # the usual spellings: no string stripped
            return df.with_columns(tar.alias("label"))
    label = pl.col("label")
    empty = label.is_null() | (label.cast(pl.String).str.strip_chars() == "")
    bad = df.filter(empty)
    if bad.height:
        raise FormatError(message(
            "empty `targettype` in NIST key", where=Place(path, line=_first_line(df, empty)),
            expected="target or nontarget", got="an empty field"
            + (f" ({bad.height} lines in all)" if bad.height > 1 else ""),
            hint="Every trial of a NIST key is a target or a non-target; remove the line or "
                 "give its type."))
    return df


def read_nist_scores(path: str | Path, *, max_line_bytes: int | None = None) -> pl.DataFrame:
    r"""Read a NIST SRE system output TSV (``modelid segmentid side LLR``).

    ``max_line_bytes`` is the longest line accepted (see :func:`read_table`).

    Parameters
    ----------
    path
        The file (gzip-compressed files are read too).
    max_line_bytes
        Longest line accepted, in bytes (see :func:`read_table`).

    Returns
    -------
    polars.DataFrame
        ``model``, ``segment``, ``side`` and ``score``.

    See Also
    --------
    read_nist_key : The matching key.
    write_nist_scores : The writer.
    scoreframe.align : Join key and scores.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "system.tsv"
    >>> _ = p.write_text("modelid\tsegmentid\tside\tLLR\nm1\ts1\ta\t2.5\n")
    >>> read_nist_scores(p).rows()
    [('m1', 's1', 'a', 2.5)]
    """
    path = Path(path)
    df = _numeric(_renamed(_read_delimited(path, "\t", (), max_line_bytes), NIST_SCORES, path,
                           "NIST scores"), "score", path)
    return validate_trials(df, kind="scores", where=Place(path),
                           **_line_options(df)).collect()


def _require(data: pl.DataFrame, columns: tuple[str, ...], path: str | Path, what: str) -> None:
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise FormatError(message(f"cannot write a {what} file", where=Place(final_path(path)),
                                  expected=f"columns {', '.join(columns)}",
                                  got=f"no {', '.join(missing)}"))


def write_nist_scores(data: pl.DataFrame, path: str | Path, *, overwrite: bool = False) -> None:
    r"""Write ``modelid segmentid side LLR`` (side ``a`` unless a ``side`` column exists).

    Parameters
    ----------
    data
        The trials to write.
    path
        The file written (atomically).
    overwrite
        Replace an existing file (otherwise an error).

    See Also
    --------
    read_nist_scores : The reader.
    write_nist_key : The key file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "system.tsv"
    >>> write_nist_scores(pl.DataFrame({"model": ["m1"], "segment": ["s1"], "score": [2.5]}), p)
    >>> p.read_text().splitlines()
    ['modelid\tsegmentid\tside\tLLR', 'm1\ts1\ta\t2.5']
    """
    _require(data, ("model", "segment", "score"), path, "NIST scores")
    side = pl.col("side") if "side" in data.columns else pl.lit("a").alias("side")
    out_df = data.select(pl.col("model").alias("modelid"), pl.col("segment").alias("segmentid"),
                         side, pl.col("score").alias("LLR"))
    with atomic_output(path, overwrite=overwrite) as out:
        out_df.write_csv(out, separator="\t")


def write_nist_key(data: pl.DataFrame, path: str | Path, *, overwrite: bool = False) -> None:
    r"""Write a NIST-style key TSV (``modelid segmentid targettype`` + other columns).

    A key belongs to no system: a ``system`` column is not written (NIST system outputs are
    one file per system), so the key and scores files read back and align.

    Parameters
    ----------
    data
        The trials to write.
    path
        The file written (atomically).
    overwrite
        Replace an existing file (otherwise an error).

    See Also
    --------
    read_nist_key : The reader.
    write_nist_scores : The scores file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.tsv"
    >>> write_nist_key(pl.DataFrame({"model": ["m1"], "segment": ["s1"], "label": [True]}), p)
    >>> p.read_text().splitlines()
    ['modelid\tsegmentid\ttargettype', 'm1\ts1\ttarget']
    """
    _require(data, ("model", "segment", "label"), path, "NIST key")
    if "system" in data.columns and data["system"].n_unique() > 1:
        raise FormatError(message("a NIST key holds the trials of one system",
                                  where=Place(final_path(path)),
                                  got=f"{data['system'].n_unique()} systems",
                                  hint="Select one system (e.g. filter system == 'x')."))
    if data["label"].null_count():
        raise FormatError(message("cannot write unknown (null) labels to a NIST key",
                                  where=Place(final_path(path)),
                                  got=f"{data['label'].null_count()} null label(s)"))
    rest = [c for c in data.columns
            if c not in ("model", "segment", "label", "score", "system")]
    clash = [c for c in rest if c in (*NIST_KEY, *NIST_SCORES, "side")]
    if clash:
        raise FormatError(message("a column name that NIST files reserve",
                                  where=Place(final_path(path)),
                                  expected="metadata columns other than modelid, segmentid, "
                                           "side, targettype and LLR",
                                  got=", ".join(clash), hint="Rename the column."))
    out_df = data.select(
        pl.col("model").alias("modelid"), pl.col("segment").alias("segmentid"),
        pl.when(pl.col("label")).then(pl.lit("target")).otherwise(pl.lit("nontarget"))
        .alias("targettype"), *rest)
    with atomic_output(path, overwrite=overwrite) as out:
        out_df.write_csv(out, separator="\t")


def read_table(path: str | Path, *, columns: Mapping[str, str] | None = None,
               kind: Kind | None = None, separator: str | None = None,
               trial_id: Sequence[str] | None = None,
               text_columns: Sequence[str] = (),
               max_line_bytes: int | None = None) -> pl.DataFrame:
    r"""Read a CSV, TSV or Parquet table, renaming columns to the canonical names.

    Parameters
    ----------
    path
        ``.csv``, ``.tsv``/``.tab``/``.txt`` (tab-separated) or ``.parquet``.
    columns
        Canonical name -> name in the file, e.g. ``{"model": "enroll", "score": "llr"}``.
    kind
        Expected kind; inferred from the columns present after renaming.
    separator
        Field separator for text tables (from the extension when omitted; gzip is read).
    trial_id
        Columns identifying a trial, for the duplicate check (see
        :func:`scoreframe.frames.schema.validate_trials`); read as text.
    text_columns
        Further columns (canonical names) read as text, never as numbers, e.g. the conditions
        an evaluation groups by: ``01`` and ``1`` stay two conditions.
    max_line_bytes
        Longest line of a text table accepted, in bytes (default
        :func:`scoreframe.io.lines.line_limit`, 1 MiB): a longer line is an error naming the
        file and line, found without reading the line whole.

    Returns
    -------
    polars.DataFrame
        The trials in the canonical schema, checked.

    See Also
    --------
    write_table : The writer.
    scoreframe.read_any : Any registered format.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> _ = p.write_text("enroll,test,llr\nm1,s1,0.5\n")
    >>> read_table(p, columns={"model": "enroll", "segment": "test", "score": "llr"}).rows()
    [('m1', 's1', 0.5)]
    """
    path = Path(path)
    suffix = _suffix(path)
    text = suffix != ".parquet"
    if not text:
        df = _read_parquet_file(path)
    else:
        sep = separator or ("," if suffix == ".csv" else "\t")
        mapping = dict(columns or {})
        ids = [mapping[c] for c in ("model", "segment", "system") if c in mapping]
        ids += [mapping.get(c, c) for c in (*(trial_id or ()), *text_columns)]
        df = _read_delimited(path, sep, ids, max_line_bytes)
    if columns:
        df = _renamed(df, {v: k for k, v in columns.items()}, path, "mapped")
    df = _numeric(df, "score", path) if text else df
    return validate_trials(df, kind=kind or infer_kind(df.columns), where=Place(path),
                           trial_id=trial_id, **(_line_options(df) if text else {})).collect()


def _suffix(path: Path) -> str:
    """The format suffix, looking through a trailing ``.gz``."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def _read_parquet_file(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise FormatError(message("no such file", path=path))
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FormatError(message("cannot read parquet", where=Place(path),
                                  got=str(exc).splitlines()[0])) from None


def write_table(data: pl.DataFrame, path: str | Path, *, overwrite: bool = False) -> None:
    r"""Write a CSV (``.csv``), TSV (other suffixes) or single Parquet file atomically.

    Parameters
    ----------
    data
        The trials to write.
    path
        The file written (atomically).
    overwrite
        Replace an existing file (otherwise an error).

    See Also
    --------
    read_table : The reader.
    scoreframe.write_any : Any registered format.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> write_table(pl.DataFrame({"model": ["m1"], "segment": ["s1"], "score": [2.5]}), p)
    >>> p.read_text()
    'model,segment,score\nm1,s1,2.5\n'
    """
    path = Path(path)
    with atomic_output(path, overwrite=overwrite) as out:
        if path.suffix == ".parquet":
            data.write_parquet(out)
        else:
            data.write_csv(out, separator="," if path.suffix == ".csv" else "\t")
