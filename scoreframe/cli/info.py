"""``scoreframe info``: rows, schema and targets / non-targets per condition."""

from __future__ import annotations

import argparse

import polars as pl

from scoreframe.cli.console import console, print_frame
from scoreframe.cli.inputs import load_dataset
from scoreframe.cli.options import add_command, dataset_options, reading_options

__all__ = ["cmd_info", "register"]


def cmd_info(a: argparse.Namespace) -> int:
    """Run ``scoreframe info``."""
    lf = load_dataset(a.dataset, a.from_, None, None, where=a.where)
    schema = lf.collect_schema()
    con = console()
    n = lf.select(pl.len()).collect().item()
    con.print(f"[bold]{a.dataset}[/bold]: {n} rows")
    con.print("schema: " + ", ".join(f"{k}: {v}" for k, v in schema.items()))
    skip = {"model", "segment", "score", "label"}
    conds = [c for c in schema.names() if c not in skip
             and (schema[c] == pl.String or schema[c].is_integer() or schema[c] == pl.Boolean
                  or isinstance(schema[c], (pl.Categorical, pl.Enum)))]
    if "label" not in schema:
        con.print("no labels (scores or trial list only)")
        return 0
    for c in conds:
        stats = (lf.group_by(c).agg(pl.col("label").sum().alias("targets"),
                                    (~pl.col("label")).sum().alias("non-targets"),
                                    pl.col("label").is_null().sum().alias("unknown"))
                 .sort(c).collect())
        if stats.height > a.max_values:
            con.print(f"{c}: {stats.height} distinct values (not listed)")
            continue
        print_frame(stats, f"by {c}", left=(c,))
    tot = lf.select(pl.col("label").sum().alias("t"), (~pl.col("label")).sum().alias("n"),
                    pl.col("label").is_null().sum().alias("u")).collect().row(0)
    con.print(f"targets: {tot[0]}, non-targets: {tot[1]}, unknown: {tot[2]}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``info`` to the command line."""
    i = add_command(sub, "info", func=cmd_info, first="DATASET",
                    help_text="rows, schema, systems and targets/non-targets per condition",
                    parents=[dataset_options(), reading_options()])
    i.add_argument("--max-values", type=int, default=50,
                   help="list conditions with at most this many values")
