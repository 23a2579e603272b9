"""Read-only SQL over a trial dataset with DuckDB: the dataset is the table ``trials``.

Named metadata tables (``tables={"models": "models.csv"}``, CLI ``--table NAME=PATH``) sit
beside it; their files are allowed like the dataset's (Parquet) or they are read in memory and
registered as Arrow (any other registered format), see :mod:`scoreframe.frames._sql_tables`.
:func:`scan_query` gives the result of a query as a LazyFrame that streams, so that it can be
evaluated out of core.

Frames layer. A connection sees the trials and nothing else: DuckDB's file access is off
(``enable_external_access = false``), extension install and load are off, Python replacement
scans are off, and the configuration is locked, so ``COPY``, ``ATTACH``, ``EXPORT``,
``read_csv``/``read_parquet``/``read_text``/``read_blob``/``glob`` on other paths,
``INSTALL``/``LOAD`` and ``SET`` fail inside DuckDB. :func:`query` accepts one ``SELECT`` (or
``WITH ... SELECT``) statement, told apart by DuckDB's own parser, and runs it with the
dataset's Parquet files as the only allowed paths (DuckDB's own reader); :func:`connect`
returns a connection for any statement, so it allows no path at all and registers the dataset
as an Arrow dataset read by pyarrow. The same
Parquet files are read by polars (:func:`scoreframe.io.scan_trials`, whose ``where=`` takes
SQL predicates); tests check that both give identical rows for the examples in ``queries/``.
See docs/sql.md.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from scoreframe.errors import FormatError, Place, ScoreframeError, UsageError, message
from scoreframe.frames._sql_tables import NamedTable, TableSource, named_tables, relation_frame
from scoreframe.frames.lazy import parquet_source
from scoreframe.io.atomic import registered_temp

if TYPE_CHECKING:  # pyarrow.dataset (which loads pandas) and duckdb are imported where used
    import duckdb
    import pyarrow.dataset as ds

__all__ = ["connect", "query", "scan_query"]

#: DuckDB settings of every connection, set when it opens; then only the dataset's files are
#: allowed, file access is turned off and the configuration is locked (:func:`connect`).
CONFINED = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "python_enable_replacements": False,
}


def _files(dataset: str | Path) -> tuple[list[Path], bool]:
    p = Path(dataset)
    _, hive = parquet_source(p)  # the one resolver's checks and messages
    if hive:
        return sorted(Path(os.path.abspath(f)) for f in p.rglob("*.parquet")), True
    if not p.is_file():
        raise FormatError(message("no such file or directory", path=p))
    return [Path(os.path.abspath(p))], False


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _temp_directory() -> str:
    """Where DuckDB may spill a large sort: created by DuckDB on demand, removed on close.

    Named like the out-of-core engine's spill directories; :func:`query` registers it
    (:func:`scoreframe.io.atomic.registered_temp`), so that one left by a killed process is
    removed by the next run of any command.
    """
    root = os.environ.get("SCOREFRAME_SPILL_DIR") or tempfile.gettempdir()
    host = socket.gethostname().replace("-", "_") or "host"
    return str(Path(root) / f"scoreframe-spill-{host}-{os.getpid()}-sql{uuid.uuid4().hex[:8]}")


_READ_HINT = ("SQL reads Parquet datasets: convert other formats first "
              "(scoreframe.convert_trials, CLI `scoreframe convert`).")
_INT = re.compile(r"-?\d{1,18}")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _confined(temp: str | None = None, **extra: bool) -> duckdb.DuckDBPyConnection:
    import duckdb  # ~0.1 s to import (and its exit): loaded on first use
    return duckdb.connect(":memory:", config={**CONFINED, "temp_directory": temp
                                              or _temp_directory(), **extra})


def _parquet_view(name: str, files: Sequence[Path], hive: bool) -> str:
    paths = ", ".join(_literal(str(f)) for f in files)
    return (f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet([{paths}], '
            f"hive_partitioning = {str(hive).lower()}, union_by_name = true)")


def _native(dataset: str | Path, temp: str,
            tables: Sequence[NamedTable] = ()) -> duckdb.DuckDBPyConnection:
    """The connection of :func:`query`: DuckDB's own Parquet reader on the dataset's files only.

    The files (and those of the named Parquet ``tables``) are the only allowed paths (then
    file access is turned off and the configuration locked), so the view ``trials`` reads them
    at DuckDB's speed; the other named tables are registered as Arrow. DuckDB could write an
    allowed path (``COPY ... (USE_TMP_FILE false)``), which is why only :func:`query` and
    :func:`scan_query`, which accept one read-only statement, use this connection.
    """
    import duckdb  # ~0.1 s to import (and its exit): loaded on first use
    files, hive = _files(dataset)
    allowed = [*files, *(f for t in tables for f in t.files)]
    con = _confined(temp)
    try:
        con.execute(f"SET allowed_paths = [{', '.join(_literal(str(f)) for f in allowed)}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        con.execute(_parquet_view("trials", files, hive))
    except duckdb.Error as exc:
        con.close()
        raise FormatError(message("cannot read parquet", where=Place(dataset),
                                  got=_first_line(exc, files), hint=_READ_HINT)) from None
    for t in tables:
        try:
            if t.arrow is not None:
                con.register(t.name, t.arrow)
            else:
                con.execute(_parquet_view(t.name, t.files, t.hive))
        except duckdb.Error as exc:
            con.close()
            raise FormatError(message(f"cannot read table `{t.name}`", where=t.label,
                                      got=_first_line(exc))) from None
    return con


def _tables(tables: Mapping[str, TableSource] | None, at: str) -> list[NamedTable]:
    return named_tables(tables, at=at, parquet_files=lambda p: _files(p))


def _partition_schema(root: Path, files: list[Path]) -> pa.Schema:
    """Types of the ``key=value`` directories: int64 when every value is an integer, else text."""
    values: dict[str, list[str | None]] = {}
    for f in files:
        for part in f.parent.relative_to(root).parts:
            key, eq, value = part.partition("=")
            if eq:
                text = unquote(value)
                values.setdefault(key, []).append(None if text == _HIVE_NULL else text)
    return pa.schema([(k, pa.int64() if all(v is None or _INT.fullmatch(v) for v in vs)
                       else pa.string()) for k, vs in values.items()])


def _arrow_dataset(dataset: str | Path) -> ds.Dataset:
    """The Parquet file or hive-partitioned directory as one pyarrow dataset.

    Columns are the union of every file's columns (a file without a column gives nulls), text
    as plain ``string`` (DuckDB scans it faster than ``large_string``); partition columns are
    integers when every value is one, text otherwise.
    """
    import pyarrow.dataset as ds  # ~0.35 s to import (with pandas): loaded on first use

    files, hive = _files(dataset)
    root = Path(os.path.abspath(dataset))
    try:
        part = _partition_schema(root, files) if hive else pa.schema([])
        schema = pa.unify_schemas([*(pq.read_schema(f) for f in files), part],
                                  promote_options="permissive")
        schema = pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type)
                            or str(f.type) == "string_view" else f for f in schema])
        return ds.dataset([str(f) for f in files], schema=schema, format="parquet",
                          partitioning=ds.partitioning(part, flavor="hive") if len(part)
                          else None, partition_base_dir=str(root) if hive else None)
    except (pa.ArrowException, OSError) as exc:
        raise FormatError(message("cannot read parquet", where=Place(dataset),
                                  got=_first_line(exc, files), hint=_READ_HINT)) from None


def connect(dataset: str | Path, *, name: str = "trials",
            tables: Mapping[str, TableSource] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection that sees ``dataset`` as the table ``name``, and nothing else.

    The dataset is registered as an Arrow dataset (read by pyarrow) and the connection has no
    file access at all: extensions and Python replacement scans are off and the configuration
    is locked, so no statement can read or write any file, the dataset's included. (For one
    query, :func:`query` reads the files with DuckDB's own, faster reader.) The named
    ``tables`` (name -> a path in any registered format, or a frame) are registered beside it
    the same way: Parquet as Arrow datasets, other formats read into Arrow tables.

    Parameters
    ----------
    dataset
        A Parquet dataset (file, directory or glob).
    name
        The table name the dataset is seen as.

    Returns
    -------
    duckdb.DuckDBPyConnection
        A locked, in-memory connection.

    See Also
    --------
    scoreframe.query : Run one SQL query over a dataset.
    scoreframe.evaluate : Evaluate the trials a query selects (``where=``).

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0],
    ...               "label": [True]}).write_parquet(f)
    >>> connect(f).execute("select count(*) from trials").fetchall()
    [(1,)]
    >>> import duckdb
    >>> try:
    ...     connect(f).execute(f"copy trials to '{f}'")
    ... except duckdb.PermissionException:
    ...     print("refused: file access is off")
    refused: file access is off
    """
    extra = _tables(tables, f"`{dataset}`")
    if any(t.name.lower() == name.lower() for t in extra):
        raise UsageError(message(f"the table name `{name}` is given twice",
                                 where=Place(dataset), hint="Give each table one name."),
                         parameter="tables")
    data = _arrow_dataset(dataset)
    arrow = {t.name: t.arrow if t.arrow is not None else _arrow_dataset(t.path)  # type: ignore[arg-type]  # a table without Arrow data has a path
             for t in extra}
    con = _confined(enable_external_access=False, lock_configuration=True)
    con.register(name, data)
    for t, d in arrow.items():
        con.register(t, d)
    return con


def _first_line(exc: BaseException, files: Sequence[Path] = (), limit: int = 300) -> str:
    """The first line of ``exc``; a single file it names (the error's ``path``) said once."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    text = " ".join(lines[0].split())
    if len(files) == 1:
        text = text.replace(f"'{files[0]}'", "the file").replace(str(files[0]), "the file")
    return text if len(text) <= limit else text[:limit] + "..."


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _check_query(sql: str, *, at: str) -> None:
    """Refuse ``sql`` unless it is one read-only statement (a ScoreframeError naming ``at``).

    DuckDB's parser splits the text into statements; exactly one is accepted, and it must be a
    query (``SELECT``, ``WITH ... SELECT``, ``FROM trials ...``, ``VALUES``, ``DESCRIBE``,
    ``SUMMARIZE``), never ``COPY``, ``ATTACH``, ``EXPORT``, ``INSTALL``, ``LOAD``, ``PRAGMA``,
    ``SET``, ``CREATE`` or any other statement.

    Examples
    --------
    >>> _check_query("select count(*) from trials; -- a comment", at="`q.sql`")
    >>> _check_query("copy trials to 'x.csv'", at="`q.sql`")
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: the SQL must be one read-only query in `q.sql`: ...
    """
    import duckdb  # ~0.1 s to import (and its exit): loaded on first use
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ScoreframeError(message("SQL syntax error", where=at, got=_first_line(exc),
                                      hint=_QUERY_HINT)) from None
    if not statements:  # an empty file, or comments only
        raise ScoreframeError(message("the SQL returns no table", where=at,
                                      expected="one query such as select ... from trials",
                                      got=_quote(sql) if sql.strip() else "no SQL"))
    kinds = [s.type.name for s in statements]
    if len(statements) > 1 or kinds[0] != "SELECT":
        got = (f"{len(statements)} statements ({', '.join(kinds)})" if len(statements) > 1
               else f"a statement of type {kinds[0]}")
        raise ScoreframeError(message("the SQL must be one read-only query", where=at,
                                      expected="one SELECT (or WITH ... SELECT) over `trials`",
                                      got=got, hint=_QUERY_HINT))


_QUERY_HINT = ("SQL sees only the table `trials` (and the tables named with --table / "
               "tables=) and cannot read or write other files; see docs/sql.md.")


def _open(sql: str, dataset: str | Path, tables: Mapping[str, TableSource] | None,
          at: str) -> tuple[duckdb.DuckDBPyRelation, Callable[[], None]]:
    """The checked query as a relation on a fresh confined connection, and its closer."""
    _check_query(sql, at=at)
    extra = _tables(tables, at)
    temp = _temp_directory()
    stack = contextlib.ExitStack()
    # registered: if this process is killed, the next command removes DuckDB's spill files
    stack.enter_context(registered_temp(temp))
    stack.callback(shutil.rmtree, temp, ignore_errors=True)
    try:
        con = _native(dataset, temp, extra)
        stack.callback(con.close)
        return _run(lambda: con.sql(sql), at), stack.close
    except BaseException:
        stack.close()
        raise


def _error(exc: duckdb.Error, at: str) -> ScoreframeError:
    """A DuckDB error as a one-line ScoreframeError naming ``at``."""
    import duckdb  # ~0.1 s to import (and its exit): loaded on first use
    if isinstance(exc, duckdb.PermissionException):
        return ScoreframeError(message("the SQL tries to reach outside the dataset and its "
                                       "named tables", where=at, got=_first_line(exc),
                                       hint=_QUERY_HINT))
    return ScoreframeError(message("SQL query failed", where=at, got=_first_line(exc)))


def _run(step: Callable[[], object], at: str) -> Any:
    """``step()``, with DuckDB's errors as one-line ScoreframeErrors naming ``at``."""
    import duckdb  # ~0.1 s to import (and its exit): loaded on first use
    try:
        return step()
    except duckdb.Error as exc:
        raise _error(exc, at) from None


def _at(dataset: str | Path, sql_name: str | None) -> str:
    """The SQL file (the error's path) and the dataset it ran on, or the dataset alone."""
    return Place(sql_name, detail=f"the query on `{dataset}`") if sql_name else Place(dataset)


def query(sql: str, dataset: str | Path, *, tables: Mapping[str, TableSource] | None = None,
          sql_name: str | None = None) -> pl.DataFrame:
    """Run one read-only SQL query against ``dataset`` (as the table ``trials``).

    Parameters
    ----------
    sql
        One ``SELECT`` (or ``WITH ... SELECT``) statement over ``trials`` and the named
        ``tables``; a trailing ``;`` and comments are fine.
    dataset
        A Parquet file or a hive-partitioned directory of Parquet files.
    tables
        More tables the SQL may read, by name: a path in any registered format (a Parquet
        file or directory, CSV, TSV as text columns, BOSARIS, NIST, ...) or a polars/pyarrow
        table. Names are plain identifiers, not ``trials``, distinct ignoring case. Their files
        are the only other files the query may read.
    sql_name
        How messages name the SQL (e.g. its file), with the dataset.

    Raises
    ------
    ScoreframeError
        For anything but one query, for SQL that fails (a syntax error, an unknown column, an
        attempt to read a file or change a setting), naming ``sql_name`` and ``dataset``; for
        a bad table name or a table file that is missing or unreadable
        (:class:`~scoreframe.errors.UsageError`, :class:`~scoreframe.errors.FormatError`).

    See Also
    --------
    scan_query : The same query as a LazyFrame that streams (for evaluation out of core).
    connect : The confined connection the query runs on.
    scoreframe.io.scan_trials : The same dataset in polars, with ``where=`` predicates.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, -1.0],
    ...               "label": [True, False]}).write_parquet(f)
    >>> query("select count(*) filter (where label) as n_tar from trials", f)["n_tar"][0]
    1
    >>> models = pl.DataFrame({"model": ["a", "b"], "gender": ["f", "m"]})
    >>> query("select gender, score from trials join models using (model) order by score",
    ...       f, tables={"models": models})["gender"].to_list()
    ['m', 'f']
    """
    at = _at(dataset, sql_name)
    rel, close = _open(sql, dataset, tables, at)
    try:
        out: pl.DataFrame = _run(rel.pl, at)
        return out
    finally:
        close()


def scan_query(sql: str, dataset: str | Path, *,
               tables: Mapping[str, TableSource] | None = None,
               sql_name: str | None = None) -> pl.LazyFrame:
    """One read-only SQL query (as :func:`query`) as a LazyFrame that streams its result.

    Nothing is read until the frame is collected; each collection runs the query again on a
    fresh confined connection and reads its result in Arrow record batches (the columns a
    plan selects are pushed into the SQL), so :func:`scoreframe.evaluate` with
    ``memory_limit=`` reduces a query that joins the trials with metadata tables without
    collecting it whole. The query and the tables are checked here, when the frame is made.

    Parameters
    ----------
    sql, dataset, tables, sql_name
        As for :func:`query`.

    See Also
    --------
    query : The result at once, as a DataFrame.
    scoreframe.evaluate : Reads the frame out of core with ``memory_limit=``.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> pl.DataFrame({"model": ["a", "b"], "score": [1.0, -1.0],
    ...               "label": [True, False]}).write_parquet(f)
    >>> lf = scan_query("select * from trials join models using (model)", f,
    ...                 tables={"models": pl.DataFrame({"model": ["a", "b"], "age": [30, 40]})})
    >>> lf.select(pl.col("age").sum()).collect().item()
    70
    """
    at = _at(dataset, sql_name)
    return relation_frame(lambda: _open(sql, dataset, tables, at), name="scoreframe SQL",
                          on_error=lambda exc: _error(exc, at))
