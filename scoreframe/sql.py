"""Read-only SQL over a trial dataset with DuckDB: the dataset is the table ``trials``.

Frames layer. The connection sees the trials and nothing else: DuckDB's file access is off
(``enable_external_access = false``) except for the dataset's own Parquet files
(``allowed_paths``, read through the view ``trials`` with hive partitions), extension install
and load are off, Python replacement scans are off, and the configuration is locked.
``COPY``, ``ATTACH``, ``EXPORT``, ``read_csv``/``read_parquet``/``read_text``/``read_blob``/
``glob`` on any other path, ``INSTALL``/``LOAD`` and ``SET`` therefore fail inside DuckDB, and
:func:`query` accepts only one ``SELECT`` (or ``WITH ... SELECT``) statement, told apart by
DuckDB's own parser, so nothing is ever written, not even over the dataset. The same
Parquet files are read by polars (:func:`scoreframe.io.scan_trials`, whose ``where=`` takes
SQL predicates); tests check that both give identical rows for the examples in ``queries/``.
See docs/sql.md.
"""

from __future__ import annotations

import os
import socket
import tempfile
import uuid
from pathlib import Path

import duckdb
import polars as pl

from scoreframe.errors import FormatError, ScoreframeError, message

__all__ = ["connect", "query"]

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
    if p.is_dir():
        files = sorted(Path(os.path.abspath(f)) for f in p.rglob("*.parquet"))
        if not files:
            raise FormatError(message("no parquet files", where=f"directory `{p}`"))
        return files, True
    if not p.is_file():
        raise FormatError(message(f"no such file or directory `{p}`"))
    return [Path(os.path.abspath(p))], False


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _temp_directory() -> str:
    """Where DuckDB may spill a large sort: created by DuckDB on demand, removed on close.

    Named like the out-of-core engine's spill directories, so that one left by a killed
    process is removed by the next run (``scoreframe.stats.outofcore.clean_stale_spills``).
    """
    root = os.environ.get("SCOREFRAME_SPILL_DIR") or tempfile.gettempdir()
    host = socket.gethostname().replace("-", "_") or "host"
    return str(Path(root) / f"scoreframe-spill-{host}-{os.getpid()}-sql{uuid.uuid4().hex[:8]}")


def connect(dataset: str | Path, *, name: str = "trials") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection that sees ``dataset`` as the table ``name``, and nothing else.

    File access (but to the dataset's Parquet files), extensions and Python replacement scans
    are off and the configuration is locked (see the module docstring): the connection cannot
    read any other file. Use :func:`query` for SQL from users: it also refuses every statement
    but one query, so nothing can write, not even over the dataset.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0],
    ...               "label": [True]}).write_parquet(f)
    >>> connect(f).execute("select count(*) from trials").fetchall()
    [(1,)]
    >>> try:
    ...     connect(f).execute(f"select * from read_csv('{f.parent / 'other.csv'}')")
    ... except duckdb.PermissionException:
    ...     print("refused: file access is off")
    refused: file access is off
    """
    files, hive = _files(dataset)
    paths = [_literal(str(f)) for f in files]
    con = duckdb.connect(":memory:", config={**CONFINED, "temp_directory": _temp_directory()})
    try:
        con.execute(f"SET allowed_paths = [{', '.join(paths)}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        view = '"' + name.replace('"', '""') + '"'
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet([{', '.join(paths)}], "
                    f"hive_partitioning = {str(hive).lower()}, union_by_name = true)")
    except duckdb.Error as exc:
        con.close()
        raise FormatError(message("cannot read parquet", where=f"`{dataset}`",
                                  got=_first_line(exc),
                                  hint="SQL reads Parquet datasets: convert other formats "
                                       "first (scoreframe.convert_trials, CLI `scoreframe "
                                       "convert`).")) from None
    return con


def _first_line(exc: BaseException, limit: int = 300) -> str:
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    text = " ".join(lines[0].split())
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


_QUERY_HINT = ("SQL sees only the table `trials` and cannot read or write files; see "
               "docs/sql.md.")


def query(sql: str, dataset: str | Path, *, sql_name: str | None = None) -> pl.DataFrame:
    """Run one read-only SQL query against ``dataset`` (as the table ``trials``).

    Parameters
    ----------
    sql
        One ``SELECT`` (or ``WITH ... SELECT``) statement over ``trials``; a trailing ``;``
        and comments are fine.
    dataset
        A Parquet file or a hive-partitioned directory of Parquet files.
    sql_name
        How messages name the SQL (e.g. its file), with the dataset.

    Raises
    ------
    ScoreframeError
        For anything but one query, for SQL that fails (a syntax error, an unknown column, an
        attempt to read a file or change a setting), naming ``sql_name`` and ``dataset``.

    See Also
    --------
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
    """
    at = f"`{sql_name}` on `{dataset}`" if sql_name else f"`{dataset}`"
    _check_query(sql, at=at)
    con = connect(dataset)
    try:
        return con.sql(sql).pl()
    except duckdb.PermissionException as exc:
        raise ScoreframeError(message("the SQL tries to reach outside the dataset", where=at,
                                      got=_first_line(exc), hint=_QUERY_HINT)) from None
    except duckdb.Error as exc:
        raise ScoreframeError(message("SQL query failed", where=at,
                                      got=_first_line(exc))) from None
    finally:
        con.close()
