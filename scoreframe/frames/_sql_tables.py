"""Named tables beside ``trials`` in read-only SQL, and SQL results as lazy, streaming frames.

Frames layer. :func:`named_tables` checks the ``tables=`` of :func:`scoreframe.query` /
:func:`scoreframe.connect` / :func:`scoreframe.scan_query` (CLI ``--table NAME=PATH``): each
name is a plain SQL identifier, never ``trials`` and never given twice (DuckDB names are
case-insensitive, so ``Models`` and ``models`` are the same name); each path exists. Parquet
tables (a file or a hive directory) are read by DuckDB from their files, which become allowed
paths like the dataset's; a table in any other registered format (CSV, TSV, BOSARIS, NIST, ...)
is read here into memory and registered as an Arrow table, so the connection's file access stays
off. Metadata tables are small (one row per model or segment); the trials never go through
this path.

:func:`relation_frame` turns something that opens a DuckDB relation into a
:class:`polars.LazyFrame` (a Polars IO source): every collection runs the relation again and
reads its result in Arrow record batches, so a query that joins the trials with metadata streams
into the out-of-core statistics without being collected whole.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import polars as pl
import pyarrow as pa
from polars.io.plugins import register_io_source

from scoreframe.errors import FormatError, UsageError, message

if TYPE_CHECKING:  # imported where used (~0.1 s, and its exit)
    import duckdb

__all__ = ["NamedTable", "TableSource", "named_tables", "relation_frame"]

#: What a named table may be: a path (any registered format) or an in-memory frame.
TableSource: TypeAlias = "str | os.PathLike[str] | pl.DataFrame | pa.Table"

#: A name DuckDB reads as a plain identifier (and that fits its 63-character display limit).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

#: The batch size asked of DuckDB when a result streams into polars.
STREAM_ROWS = 1 << 17


@dataclass(frozen=True)
class NamedTable:
    """One table of ``tables=``: read from Parquet ``files`` by DuckDB, or from ``arrow``.

    Attributes
    ----------
    name
        The table's name in SQL.
    label
        How messages name it (its path, or ``tables['name']``).
    path
        The absolute path of a table read from a file, else None.
    files
        Absolute Parquet files (DuckDB's own reader; allowed paths), or empty.
    hive
        Whether ``files`` come from a hive-partitioned directory.
    arrow
        The table in memory (any other format, or a frame), registered as Arrow.
    """

    name: str
    label: str
    path: Path | None = None
    files: tuple[Path, ...] = ()
    hive: bool = False
    arrow: pa.Table | None = None


def _check_name(name: object, *, at: str) -> str:
    hint = ("Name each table with a plain SQL identifier (letters, digits, _), e.g. "
            "--table models=models.csv (tables={'models': 'models.csv'}).")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise UsageError(message("a table name must be a plain SQL identifier", where=at,
                                 expected="letters, digits and _, not starting with a digit, "
                                          "at most 63 characters",
                                 got=repr(name)[:80], hint=hint), parameter="tables")
    if name.lower() == "trials":
        raise UsageError(message(f"the table name `{name}` shadows the trials", where=at,
                                 expected="a name other than `trials` (the dataset's table)",
                                 hint=hint), parameter="tables")
    return name


def named_tables(tables: Mapping[str, TableSource] | None, *, at: str,
                 parquet_files: Callable[[Path], tuple[list[Path], bool]]) -> list[NamedTable]:
    """Check and open the named tables of a query (nothing is read for Parquet tables).

    Parameters
    ----------
    tables
        Name -> a path (Parquet file or directory, or any readable registered format) or a
        polars/pyarrow table.
    at
        How messages name the query (the SQL and the dataset).
    parquet_files
        Lists a Parquet path's files (absolute) and whether it is a hive directory.

    Raises
    ------
    UsageError
        A name that is not an identifier, that is ``trials``, or given twice (in any case).
    FormatError
        A path that does not exist or that no registered format reads.

    Examples
    --------
    >>> import polars as pl
    >>> [t.name for t in named_tables({"models": pl.DataFrame({"model": ["a"]})}, at="q",
    ...                               parquet_files=lambda p: ([p], False))]
    ['models']
    >>> named_tables({"Trials": "m.csv"}, at="`q.sql`", parquet_files=lambda p: ([p], False))
    Traceback (most recent call last):
    ...
    scoreframe.errors.UsageError: the table name `Trials` shadows the trials in `q.sql`: ...
    """
    if tables is None:
        return []
    if not isinstance(tables, Mapping):
        raise UsageError(message("tables= must map names to files or frames", where=at,
                                 got=type(tables).__name__,
                                 hint="e.g. tables={'models': 'models.csv'}"),
                         parameter="tables")
    out: list[NamedTable] = []
    seen: dict[str, str] = {}
    for raw, source in tables.items():
        name = _check_name(raw, at=at)
        if name.lower() in seen:
            raise UsageError(message(f"the table name `{name}` is given twice", where=at,
                                     got=f"`{seen[name.lower()]}` and `{name}` (SQL names "
                                         "ignore case)",
                                     hint="Give each table one distinct name."),
                             parameter="tables")
        seen[name.lower()] = name
        out.append(_open(name, source, at=at, parquet_files=parquet_files))
    return out


def _open(name: str, source: object, *, at: str,
          parquet_files: Callable[[Path], tuple[list[Path], bool]]) -> NamedTable:
    if isinstance(source, pl.DataFrame | pa.Table):
        frame = source if isinstance(source, pl.DataFrame) else pl.DataFrame(source)
        return NamedTable(name, f"tables[{name!r}]", arrow=_arrow(frame))
    if not isinstance(source, str | os.PathLike):
        raise UsageError(message(f"table `{name}` must be a path or a polars/pyarrow table",
                                 where=at, got=type(source).__name__), parameter="tables")
    path = Path(os.path.abspath(source))
    label = f"`{source}`"
    if not path.exists():
        raise FormatError(message(f"no such file or directory for table `{name}`",
                                  where=at), path=str(source))
    from scoreframe.io import guess_format, read_any

    fmt = guess_format(path)
    if fmt == "parquet":
        files, hive = parquet_files(path)
        return NamedTable(name, label, path, tuple(files), hive)
    lower = path.name.lower().removesuffix(".gz")
    try:
        if fmt in ("csv", "tsv") or lower.endswith((".csv", ".tsv", ".tab")):
            # metadata, not trials: every column as text, as --join reads it
            frame = pl.read_csv(path, separator="," if lower.endswith(".csv") else "\t",
                                infer_schema=False)
        else:
            frame = read_any(path, fmt=fmt)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FormatError(message(f"cannot read table `{name}`", where=label,
                                  got=str(exc).splitlines()[0][:200]),
                          path=str(source)) from None
    return NamedTable(name, label, path, arrow=_arrow(frame))


def _arrow(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow with plain ``string`` text (what DuckDB scans fastest)."""
    table = frame.to_arrow()
    return table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type)
                                 or str(f.type) == "string_view" else f
                                 for f in table.schema]))


def relation_frame(open_relation: Callable[[], tuple[duckdb.DuckDBPyRelation, Callable[[], None]]],
                   *, name: str = "sql",
                   on_error: Callable[[duckdb.Error], Exception] | None = None) -> pl.LazyFrame:
    """A LazyFrame over a DuckDB relation that is run again, and streamed, at each collection.

    ``open_relation`` returns the relation and a function that releases what it holds (a
    connection, a spill directory); it is called once for the schema and once per collection.
    Projections are pushed into the SQL (DuckDB reads only the columns asked for); filters and
    row limits are applied to each batch as it arrives. ``on_error`` turns a DuckDB error
    (while the schema is found or the rows stream) into the exception raised instead.

    Examples
    --------
    >>> import duckdb
    >>> def open_():
    ...     con = duckdb.connect()
    ...     return con.sql("select range as x, range % 3 as g from range(10)"), con.close
    >>> lf = relation_frame(open_)
    >>> lf.filter(pl.col("g") == 0).select(pl.col("x").sum()).collect().item()
    18
    """
    import duckdb  # ~0.1 s to import (and its exit): loaded on first use

    def fail(exc: duckdb.Error) -> Exception:
        return exc if on_error is None else on_error(exc)

    rel, close = open_relation()
    try:
        schema = pl.from_arrow(rel.limit(0).to_arrow_table()).schema  # type: ignore[union-attr]  # polars stubs: from_arrow of a Table is a DataFrame
    except duckdb.Error as exc:
        raise fail(exc) from None
    finally:
        close()

    def source(with_columns: list[str] | None, predicate: pl.Expr | None,
               n_rows: int | None, batch_size: int | None) -> Iterator[pl.DataFrame]:
        rel, close = open_relation()
        try:
            if with_columns is not None:
                rel = rel.select(*(duckdb.ColumnExpression(c) for c in with_columns))
            reader = rel.to_arrow_reader(batch_size or STREAM_ROWS)
            left = n_rows
            for batch in reader:
                df = pl.DataFrame(batch)
                if predicate is not None:
                    df = df.filter(predicate)
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                yield df
                if left is not None and left <= 0:
                    break
        except duckdb.Error as exc:
            raise fail(exc) from None
        finally:
            close()

    return register_io_source(source, schema=schema, explain_name=name)

