"""``scoreframe info``: rows, schema and targets / non-targets per condition."""

from __future__ import annotations

import argparse

from scoreframe.cli.console import console, print_frame, say, shown
from scoreframe.cli.inputs import dataset_label, dataset_source, load_dataset, reading_kwargs
from scoreframe.cli.options import add_command, dataset_options, int_in, reading_options
from scoreframe.io.info import dataset_info
from scoreframe.io.parquet import apply_where

__all__ = ["cmd_info", "register"]


def cmd_info(a: argparse.Namespace) -> int:
    """Run ``scoreframe info``."""
    from rich.text import Text

    src = dataset_source(a)
    lf = (load_dataset(src, where=a.where, **reading_kwargs(a))
          if isinstance(src, str) else apply_where(src, a.where))
    info = dataset_info(lf, max_values=a.max_values)
    con = console()
    con.print(Text.assemble((shown(dataset_label(a)), "bold"), f": {info.rows} rows"))
    con.print(Text("schema: " + ", ".join(f"{shown(k)}: {v}" for k, v in info.schema.items())))
    if not info.has_labels:
        say("no labels (scores or trial list only)")
        return 0
    for c, n in info.too_many_values.items():
        say(f"{shown(c)}: {n} distinct values (not listed)")
    for c, table in info.conditions.items():
        print_frame(table, f"by {c}", left=(c,))
    say(f"targets: {info.targets}, non-targets: {info.non_targets}, unknown: {info.unknown}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``info`` to the command line."""
    i = add_command(sub, "info", func=cmd_info, first="DATASET",
                    help_text="rows, schema, systems and targets/non-targets per condition",
                    parents=[dataset_options(), reading_options()])
    i.add_argument("--max-values", type=int_in(0, 1_000_000), default=50,
                   help="list conditions with at most this many values")
