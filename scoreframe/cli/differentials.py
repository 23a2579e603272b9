"""``scoreframe differentials``: error rates per demographic group at one global threshold."""

from __future__ import annotations

import argparse
import json

from scoreframe.cli.compare import add_interval_options, format_interval
from scoreframe.cli.console import emit_frame, fmt, percent, print_table, write_text_output
from scoreframe.cli.inputs import check_output_format, dataset_source
from scoreframe.cli.options import (
    ListAction,
    add_command,
    column_arg,
    dataset_options,
    engine_of,
    engine_options,
    output_options,
    probability_open,
    reading_options,
    real_in,
)
from scoreframe.errors import UsageError, message
from scoreframe.metrics import Intervals
from scoreframe.results._differentials import differentials

__all__ = ["cmd_differentials", "register"]


def cmd_differentials(a: argparse.Namespace) -> int:
    """Run ``scoreframe differentials``."""
    check_output_format(a, machine=("json", "csv", "parquet"))
    if not a.by:
        raise UsageError(message("differentials need --by", expected="demographic columns, "
                                 "e.g. --by sex age_band", got="none"))
    if (a.fmr is None) == (a.threshold is None):
        raise UsageError(message("give --fmr or --threshold (one of them)",
                                 got="both" if a.fmr is not None else "neither"))
    if a.bootstrap is None:
        given = [o for o, v, default in (("--ci", a.ci, 0.95), ("--interval", a.interval,
                                          "percentile"),
                                         ("--resample", a.resample, ["model", "segment"]))
                 if v != default]
        if given:
            raise UsageError(f"{', '.join(given)} set how intervals are computed, and "
                             "intervals need --bootstrap B (e.g. --bootstrap 1000)")
    iv = None if a.bootstrap is None else Intervals(
        bootstrap=a.bootstrap, ci=a.ci, seed=a.seed, method=a.interval,
        resample=tuple(a.resample))
    d = differentials(dataset_source(a), by=a.by, fmr=a.fmr, threshold=a.threshold,
                      pair_with=a.pair_with, where=a.where, alpha=a.alpha,
                      garbe_weight=a.garbe_weight, intervals=iv, engine=engine_of(a),
                      validate=getattr(a, "trial_id", None) or True)
    with_iv = "rate_lo" in d.groups.columns
    if a.format == "table":
        g = d.groups
        keys = [c for c in g.columns if c not in ("kind", "n_trials", "errors", "rate",
                                                  "rate_lo", "rate_hi", "reason")]
        header = [*keys, "kind", "trials", "errors",
                  f"rate (%) [{a.ci:.0%} interval]" if with_iv else "rate (%)", "reason"]
        rows = [[*("" if r[c] is None else str(r[c]) for c in keys), r["kind"],
                 str(r["n_trials"]), str(r["errors"]),
                 format_interval(r["rate"], r["rate_lo"], r["rate_hi"], rate=True)
                 if with_iv and r["rate"] is not None else percent(r["rate"]),
                 r["reason"] or ""]
                for r in g.iter_rows(named=True)]
        idx = list(range(len(keys)))
        print_table(header, rows, key=idx, left=[*idx, len(keys), len(keys) + 4],
                    title=f"global threshold {d.threshold:.6g} (accept score >= threshold)")
        print_table(["measure", "value", "reason"],
                    [[r["measure"], format_interval(r["value"], r["value_lo"], r["value_hi"])
                      if with_iv and r["value"] is not None else fmt(r["value"]),
                      r["reason"] or ""]
                     for r in d.summary.iter_rows(named=True)], key=[0], left=[0, 2],
                    title="disparity across groups" + (
                        f" ({a.ci:.0%} intervals, {a.bootstrap} replicates, resampling "
                        f"{' and '.join(a.resample)}; threshold held fixed)" if with_iv
                        else ""))
        return 0
    if a.format == "json":
        doc = {"threshold": d.threshold, "by": a.by, "pair_with": a.pair_with,
               "groups": d.groups.to_dicts(), "summary": d.summary.to_dicts()}
        write_text_output(json.dumps(doc, indent=1), a.output, overwrite=a.overwrite)
        return 0
    emit_frame(d.groups, a.format, a.output, a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``differentials`` to the command line."""
    p = add_command(sub, "differentials", func=cmd_differentials, first="DATASET",
                    help_text="FMR and FNMR per demographic group at one global threshold, "
                              "max/min, max/geomean, FDR and GARBE",
                    parents=[dataset_options(), reading_options(), engine_options(),
                             output_options(("table", "json", "csv", "parquet"),
                                            default="table")])
    p.add_argument("--by", action=ListAction, converter=column_arg(), default=[], metavar="COL",
                   help="demographic columns, e.g. --by sex age_band")
    p.add_argument("--pair-with", action=ListAction, converter=column_arg(), default=[],
                   metavar="COL",
                   help="the other side's demographic columns: impostor rates per pair of "
                        "groups (same-group and cross-group apart)")
    p.add_argument("--fmr", type=probability_open("an FMR target"), default=None,
                   help="set the global threshold at this global FMR, e.g. 1e-4")
    p.add_argument("--threshold", type=real_in(-1e15, 1e15, what="a threshold"), default=None,
                   help="or give the threshold")
    p.add_argument("--alpha", type=real_in(0.0, 1.0, what="a weight"), default=0.5,
                   help="weight of FMR in the FDR")
    p.add_argument("--garbe-weight", type=real_in(0.0, 1.0, what="a weight"), default=0.5,
                   help="weight of FMR in GARBE")
    add_interval_options(p)
    p.set_defaults(resample=["model", "segment"])  # the subject-level two-way bootstrap
