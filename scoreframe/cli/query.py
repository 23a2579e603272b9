"""``scoreframe query``: run an SQL file on a dataset (visible as ``trials``) and named tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from scoreframe.cli.console import emit_frame
from scoreframe.cli.inputs import check_output_format, read_sql, table_map
from scoreframe.cli.options import TABLE, add_command, output_options, path_arg
from scoreframe.frames.sql import query
from scoreframe.io.atomic import check_outputs

__all__ = ["cmd_query", "register"]


def cmd_query(a: argparse.Namespace) -> int:
    """Run ``scoreframe query``."""
    sql_path = Path(a.sql)
    sql = read_sql(sql_path)
    tables = table_map(a.table)
    check_output_format(a, machine=("table", "csv", "json", "parquet"))
    if a.output:
        check_outputs([a.output], overwrite=a.overwrite,
                      inputs=[a.dataset, sql_path, *tables.values()])
    df = query(sql, a.dataset, tables=tables, sql_name=str(sql_path))
    emit_frame(df, a.format, a.output, a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``query`` to the command line."""
    q = add_command(sub, "query", func=cmd_query,
                    help_text="run an SQL file on a dataset (visible as `trials`) and named "
                              "tables",
                    parents=[output_options(("table", "csv", "json", "parquet"),
                                            default="table")])
    q.add_argument("sql", type=path_arg(),
                   help="file with one read-only SQL query (SELECT or WITH ... SELECT) over the "
                        "table `trials`; it cannot read or write other files (docs/sql.md)")
    q.add_argument("dataset", metavar="DATASET", type=path_arg(),
                   help="Parquet trial dataset (a file or a directory; convert other formats "
                        "first with `scoreframe convert`)")
    q.add_argument("--table", action="append", type=TABLE, metavar="NAME=PATH", default=[],
                   help="a table the query sees as NAME: parquet (file or directory), csv, tsv "
                        "(read as text) or any readable format; repeatable; only its files "
                        "become readable besides the dataset's")
