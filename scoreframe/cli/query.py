"""``scoreframe query``: run an SQL file on a dataset (visible as ``trials``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from scoreframe.cli.console import emit_frame
from scoreframe.cli.inputs import check_output_format
from scoreframe.cli.options import add_command, output_options, path_arg
from scoreframe.errors import ScoreframeError, UsageError, message
from scoreframe.frames.sql import query
from scoreframe.io.atomic import check_outputs

__all__ = ["cmd_query", "register"]

#: Largest SQL file read (bytes): a query is text typed by a person, never a data file.
MAX_SQL_BYTES = 1 << 20


def read_sql(path: Path) -> str:
    """The text of an SQL file: UTF-8, at most :data:`MAX_SQL_BYTES`, else a clear error."""
    if not path.is_file():
        raise UsageError(f"no such SQL file `{path}`")
    size = path.stat().st_size
    if size > MAX_SQL_BYTES:
        raise ScoreframeError(message("the SQL file is too large", where=f"`{path}`",
                                      expected=f"at most {MAX_SQL_BYTES:,} bytes of SQL",
                                      got=f"{size:,} bytes",
                                      hint="Give the file with the query, not a data file."))
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScoreframeError(message("the SQL file is not UTF-8 text", where=f"`{path}`",
                                      got=f"byte 0x{data[exc.start]:02x} at offset "
                                          f"{exc.start}")) from None


def cmd_query(a: argparse.Namespace) -> int:
    """Run ``scoreframe query``."""
    sql_path = Path(a.sql)
    sql = read_sql(sql_path)
    check_output_format(a, machine=("table", "csv", "json", "parquet"))
    if a.output:
        check_outputs([a.output], overwrite=a.overwrite, inputs=[a.dataset, sql_path])
    df = query(sql, a.dataset, sql_name=str(sql_path))
    emit_frame(df, a.format, a.output, a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``query`` to the command line."""
    q = add_command(sub, "query", func=cmd_query,
                    help_text="run an SQL file on a dataset (visible as `trials`)",
                    parents=[output_options(("table", "csv", "json", "parquet"),
                                            default="table")])
    q.add_argument("sql", type=path_arg(),
                   help="file with one read-only SQL query (SELECT or WITH ... SELECT) over the "
                        "table `trials`; it cannot read or write other files (docs/sql.md)")
    q.add_argument("dataset", metavar="DATASET", type=path_arg(),
                   help="Parquet trial dataset (a file or a directory; convert other formats "
                        "first with `scoreframe convert`)")
