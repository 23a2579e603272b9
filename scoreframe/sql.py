"""SQL over trial datasets with DuckDB: the dataset is the view ``trials``.

Frames layer. The same Parquet files are read by polars (:func:`scoreframe.io.scan_trials`,
whose ``where=`` takes the same SQL predicates) and by DuckDB here; tests check that both give
identical rows for the examples in ``queries/``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from scoreframe.errors import FormatError, ScoreframeError, message

__all__ = ["connect", "query"]


def _source(dataset: str | Path) -> tuple[str, bool]:
    p = Path(dataset)
    if p.is_dir():
        if not any(p.rglob("*.parquet")):
            raise FormatError(message("no parquet files", where=f"directory `{p}`"))
        return str(p / "**" / "*.parquet"), True
    if not p.is_file():
        raise FormatError(message(f"no such file or directory `{p}`"))
    return str(p), False


def connect(dataset: str | Path, *, name: str = "trials") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with ``dataset`` visible as the view ``name``.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0],
    ...               "label": [True]}).write_parquet(f)
    >>> connect(f).execute("select count(*) from trials").fetchall()
    [(1,)]
    """
    src, hive = _source(dataset)
    con = duckdb.connect()
    esc = src.replace("'", "''")
    try:
        con.execute(f"create view {name} as select * from read_parquet('{esc}', "
                    f"hive_partitioning = {str(hive).lower()}, union_by_name = true)")
    except duckdb.Error as exc:
        con.close()
        raise FormatError(message("cannot read parquet", where=f"`{dataset}`",
                                  got=str(exc).splitlines()[0],
                                  hint="SQL reads Parquet datasets: convert other formats "
                                       "first (scoreframe.convert_trials, CLI `scoreframe "
                                       "convert`).")) from None
    return con


def query(sql: str, dataset: str | Path, *, sql_name: str | None = None) -> pl.DataFrame:
    """Run one SQL query against ``dataset`` (as the table ``trials``) and return a frame.

    ``sql_name`` (e.g. the SQL file) is named with the dataset in error messages.
    """
    at = f"`{sql_name}` on `{dataset}`" if sql_name else f"`{dataset}`"
    con = connect(dataset)
    try:
        rel = con.sql(sql)
        if rel is None:  # an empty file, comments only, or a statement that returns nothing
            raise ScoreframeError(message("the SQL returns no table", where=at,
                                          expected="one query such as select ... from trials",
                                          got=repr(sql.strip()[:80]) if sql.strip()
                                          else "no SQL"))
        return rel.pl()
    except duckdb.Error as exc:
        raise ScoreframeError(message("SQL query failed", where=at,
                                      got=str(exc).splitlines()[0])) from None
    finally:
        con.close()
