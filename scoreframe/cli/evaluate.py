"""``scoreframe evaluate``: EER, Cllr, minCllr, PRBEP and act/min DCF per condition."""

from __future__ import annotations

import argparse
import json

import polars as pl

from scoreframe.cli.console import console, emit_frame, fmt, json_safe, progress, write_text_output
from scoreframe.cli.options import (
    add_command,
    by_options,
    dataset_options,
    operating_point_options,
    output_options,
)
from scoreframe.errors import UsageError
from scoreframe.evaluate import evaluate, explode_dcf, group_columns
from scoreframe.metrics import EER_METHODS

__all__ = ["add_evaluate_options", "cmd_evaluate", "print_results", "register", "run_evaluate"]


# --- the evaluate option group ------------------------------------------------------------------
# Options of how an evaluation runs go HERE, so that `evaluate`, `report` and `compare` share them:
# engine (--engine/--scheduler/--workers/--memory-limit/--no-validate), intervals
# (--bootstrap/--ci/--resample/--seed), spoofing/forensic metrics (--spoof/--tandem/
# --t-dcf-variant/--forensic). Add each as its own small block with a help text and a default.
def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    """Add the options of how an evaluation is computed (EER method, equalization)."""
    g = p.add_argument_group("evaluation")
    g.add_argument("--eer-method", choices=EER_METHODS, default="rocch",
                   help="EER convention")
    g.add_argument("--equalize-by", nargs="+",
                   help="also report metrics with these conditions weighted equally")


def evaluate_kwargs(a: argparse.Namespace) -> dict[str, object]:
    """Keyword arguments of :func:`scoreframe.evaluate.evaluate` from the evaluate options."""
    return {"eer_method": a.eer_method, "equalize_by": a.equalize_by or []}
# --- end of the evaluate option group -----------------------------------------------------------


def run_evaluate(dataset: str | pl.LazyFrame, *, by: list[str], where: str | None,
                 p_target: list[float], c_miss: float, c_fa: float,
                 **options: object) -> pl.DataFrame:
    """Evaluate with a progress bar over groups."""
    with progress() as prog:
        task = prog.add_task("evaluating groups", total=None)
        return evaluate(dataset, by=by, where=where, p_target=p_target, c_miss=c_miss,
                        c_fa=c_fa, progress=lambda d, t: prog.update(task, completed=d, total=t),
                        **options)  # type: ignore[arg-type]


def print_results(res: pl.DataFrame, *, title: str = "") -> None:
    """Print the per-condition table: one row per group and operating point."""
    from rich.table import Table

    flat = explode_dcf(res)
    group_cols = group_columns(res)
    cols = [*group_cols, "n_tar", "n_non", "eer", "cllr", "min_cllr", "prbep", "p_target",
            "act_dcf_norm", "min_dcf_norm"]
    if "eq_eer" in flat.columns:
        cols += ["eq_eer", "eq_act_dcf_norm", "eq_min_dcf_norm"]
    t = Table(title=title or None)
    for c in cols:
        t.add_column(c, justify="left" if c in group_cols else "right")
    warn = False
    for row in flat.iter_rows(named=True):
        cells = [fmt(row[c]) for c in cols]
        if row.get("dr30_ok") is False:
            cells[cols.index("min_dcf_norm")] += " *"
            warn = True
        t.add_row(*cells)
    console().print(t)
    if warn:
        print("* fewer than 30 misses or false alarms at the minDCF point (Doddington's rule "
              "of 30): that value is not reliable")


def cmd_evaluate(a: argparse.Namespace) -> int:
    """Run ``scoreframe evaluate``."""
    if a.format == "table" and a.output:
        raise UsageError("-o needs --format json, csv or parquet")
    res = run_evaluate(a.dataset, by=a.by, where=a.where, p_target=a.p_target,
                       c_miss=a.c_miss, c_fa=a.c_fa, **evaluate_kwargs(a))
    if a.format == "table":
        print_results(res, title=f"EER method: {a.eer_method}")
        return 0
    if a.format == "json":
        doc = {"eer_method": a.eer_method, "by": group_columns(res), "p_target": a.p_target,
               "c_miss": a.c_miss, "c_fa": a.c_fa, "groups": json_safe(res.to_dicts())}
        write_text_output(json.dumps(doc, indent=1), a.output, overwrite=a.overwrite)
        return 0
    emit_frame(explode_dcf(res), a.format, a.output, a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``evaluate`` to the command line."""
    e = add_command(sub, "evaluate", func=cmd_evaluate, first="DATASET",
                    help_text="EER, Cllr, minCllr, PRBEP, act/min DCF per condition",
                    parents=[dataset_options(), by_options(), operating_point_options(),
                             output_options(("table", "json", "csv", "parquet"),
                                            default="table")])
    add_evaluate_options(e)
