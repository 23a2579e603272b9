"""``scoreframe query``: run an SQL file on a dataset (visible as ``trials``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from scoreframe.cli.console import emit_frame
from scoreframe.cli.inputs import check_output_format
from scoreframe.cli.options import add_command, output_options, path_arg
from scoreframe.errors import UsageError
from scoreframe.sql import query

__all__ = ["cmd_query", "register"]


def cmd_query(a: argparse.Namespace) -> int:
    """Run ``scoreframe query``."""
    sql_path = Path(a.sql)
    if not sql_path.is_file():
        raise UsageError(f"no such SQL file `{sql_path}`")
    check_output_format(a, machine=("table", "csv", "json", "parquet"))
    df = query(sql_path.read_text(), a.dataset, sql_name=str(sql_path))
    emit_frame(df, a.format, a.output, a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``query`` to the command line."""
    q = add_command(sub, "query", func=cmd_query,
                    help_text="run an SQL file on a dataset (visible as `trials`)",
                    parents=[output_options(("table", "csv", "json", "parquet"),
                                            default="table")])
    q.add_argument("sql", type=path_arg(), help="file with one SQL query over the table `trials`")
    q.add_argument("dataset", metavar="DATASET", type=path_arg(),
                   help="Parquet trial dataset (a file or a directory; convert other formats "
                        "first with `scoreframe convert`)")
