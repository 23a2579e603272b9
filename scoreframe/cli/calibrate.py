"""``scoreframe calibrate train|apply``: linear or PAV calibration of one system's scores."""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from scoreframe.cli.before_after import fit_summary, report_sets
from scoreframe.cli.console import say, shown
from scoreframe.cli.inputs import (
    guard_outputs,
    load_dataset,
    load_model_kind,
    other_system,
    scored_format,
    with_joins,
    write_scored,
)
from scoreframe.cli.options import (
    MAX_ITER,
    ListAction,
    add_command,
    int_in,
    join_options,
    name_arg,
    objective_arg,
    output_options,
    path_arg,
    prior,
    real_in,
    where_option,
)
from scoreframe.errors import Place
from scoreframe.frames._sql_guard import check_where

__all__ = ["cmd_calibrate_apply", "cmd_calibrate_train", "register"]


def cmd_calibrate_train(a: argparse.Namespace) -> int:
    """Run ``scoreframe calibrate train``."""
    from scoreframe.estimators.calibration import LinearCalibration, PavCalibration

    model: LinearCalibration | PavCalibration
    if a.method == "linear":
        model = LinearCalibration(p_target=a.p_target, objective=a.objective,
                                  max_iter=a.max_iter)
    else:
        model = PavCalibration(variant=a.variant, eps=a.eps)
    guard_outputs([a.dev, *a.join], [a.output], overwrite=a.overwrite)
    dev = with_joins(load_dataset(a.dev), a)
    check_where(a.where, dev, source=Place(a.dev))
    model.fit(dev, where=a.where, system=a.system)  # the model records both
    if a.system is not None:
        dev = dev.filter(pl.col("system") == a.system)
    model.save(a.output, overwrite=a.overwrite)
    say(f"{a.method} calibration: {fit_summary(model)}")
    if a.method == "linear":
        say(f"  llr = {model.scale_:.6g} * score + {model.offset_:.6g}")
    say(f"model written to {shown(a.output)}")
    report_sets([(Path(a.dev).name, model.transform(dev, where=a.where))],
                a.report_p_target or [a.p_target],
                "calibration on the training set")
    return 0


def cmd_calibrate_apply(a: argparse.Namespace) -> int:
    """Run ``scoreframe calibrate apply``."""
    guard_outputs([a.eval, a.model, *a.join], [a.output], overwrite=a.overwrite)
    scored_format(a.output)
    model = load_model_kind(a.model, ("linear", "pav"))
    ev = with_joins(load_dataset(a.eval), a)
    check_where(a.where, ev, source=Place(a.eval))
    out = model.transform(ev, where=a.where, **other_system(a))
    written = write_scored(out, a.output, a.overwrite, [a.eval, a.model])
    say(f"calibrated scores written to {shown(a.output)} (score = llr, input kept as "
        "score_raw)")
    p = a.report_p_target or [model.p_target if model.method == "linear" else 0.5]
    report_sets([(Path(a.eval).name, written)], p, "calibration applied")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``calibrate train`` and ``calibrate apply`` to the command line."""
    cal = sub.add_parser("calibrate", help="train or apply a calibration (linear or PAV)",
                         description="train or apply a calibration (linear or PAV)")
    cal_sub = cal.add_subparsers(dest="action", required=True)
    report_p = argparse.ArgumentParser(add_help=False)
    report_p.add_argument("--report-p-target", action=ListAction, converter=prior,
                          help="priors of the before/after table (default: the model's prior)")
    ct = add_command(cal_sub, "train", func=cmd_calibrate_train, first="DEV",
                     help_text="train on labelled dev trials; write MODEL.json",
                     parents=[where_option(), join_options(), report_p,
                              output_options(required=True, help_text="MODEL.json")])
    ct.add_argument("dev", metavar="DEV", type=path_arg(),
                    help="labelled trials (of one system, or select one)")
    ct.add_argument("--system", type=name_arg(),
                    help="train on this system of a multi-system dataset")
    ct.add_argument("--method", choices=("linear", "pav"), default="linear",
                    help="calibration map")
    ct.add_argument("--p-target", type=prior, default=0.5, help="training prior")
    ct.add_argument("--objective", type=objective_arg, default="log",
                    help="linear: log, brier, boost, asym or 'alpha,beta' (Beta family)")
    ct.add_argument("--max-iter", type=int_in(1, MAX_ITER), default=100,
                    help="linear: iteration limit")
    ct.add_argument("--variant", choices=("bosaris", "raw"), default="bosaris",
                    help="pav: with BOSARIS' two dummy trials, or raw")
    ct.add_argument("--eps", type=real_in(0.0, 1.0), default=0.0, help="pav: BOSARIS small_val")
    ca = add_command(cal_sub, "apply", func=cmd_calibrate_apply, first="MODEL EVAL",
                     help_text="calibrate a dataset with MODEL.json",
                     parents=[where_option(), join_options(), report_p,
                              output_options(required=True,
                                             help_text="parquet dataset, .parquet, .csv, .tsv")])
    ca.add_argument("model", metavar="MODEL", type=path_arg(),
                    help="model file written by calibrate train")
    ca.add_argument("eval", metavar="EVAL", type=path_arg(), help="trials to calibrate")
    ca.add_argument("--allow-other-system", action="store_true",
                    help="apply the model to trials of systems other than the one it was "
                         "trained on")
