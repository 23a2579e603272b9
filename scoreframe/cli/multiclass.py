"""``scoreframe multiclass``: Cmxe, Cavg, multiclass calibration and fusion."""

from __future__ import annotations

import argparse
import json

import polars as pl

from scoreframe.cli.console import json_safe, print_frame, say, shown, write_text_output
from scoreframe.cli.inputs import (
    check_output_format,
    guard_outputs,
    load_model_kind,
    named_paths,
    other_system,
    write_scored,
)
from scoreframe.cli.options import (
    MAX_ITER,
    ListAction,
    add_command,
    engine_of,
    engine_options,
    first_positional,
    int_in,
    output_options,
    path_arg,
    prior,
)
from scoreframe.results.multiclass_before_after import multiclass_before_after

__all__ = ["MC_COLUMNS", "cmd_mc_apply", "cmd_mc_evaluate", "cmd_mc_train", "register"]

MC_COLUMNS = ["n_segments", "n_classes", "cmxe", "cmxe_ref", "info_bits", "error_rate",
              "cavg", "cavg_norm", "min_cavg_norm", "c_primary"]


def _mc_scores(paths: list[str]) -> pl.DataFrame | dict[str, pl.DataFrame]:
    from scoreframe.multiclass import read_scores

    if len(paths) == 1 and "=" not in paths[0]:
        return read_scores(paths[0])
    return {n: read_scores(p) for n, p in named_paths(paths)}


def cmd_mc_evaluate(a: argparse.Namespace) -> int:
    """Run ``scoreframe multiclass evaluate``."""
    from scoreframe.multiclass import evaluate_multiclass

    check_output_format(a, machine=("json",))
    p_target = a.p_target or [0.5]
    res = evaluate_multiclass(a.scores, a.truth, by=a.by, p_target=p_target,
                              engine=engine_of(a))
    groups = [c for c in res.columns if c not in (*MC_COLUMNS, "cmxe_norm", "expected_cost",
                                                  "min_cavg", "cavg_by_p")]
    if a.format == "json":
        text = json.dumps({"p_target": p_target, "by": groups,
                           "groups": json_safe(res.to_dicts())}, indent=1)
        write_text_output(text, a.output, overwrite=a.overwrite)
        return 0
    print_frame(res.select(*groups, *MC_COLUMNS), "multiclass evaluation (Cmxe in bits; "
                "Cavg at the first p_target, normalized columns divided by min(P, 1-P))")
    return 0


def _mc_before_after(out: pl.DataFrame, truth: str, title: str) -> None:
    print_frame(multiclass_before_after(out, truth), title, left=("stage", "system"))


def cmd_mc_train(a: argparse.Namespace) -> int:
    """Run ``scoreframe multiclass calibrate|fuse train``."""
    from scoreframe.multiclass import MulticlassCalibration, MulticlassFusion

    guard_outputs([*(p for _, p in named_paths(a.scores)), a.truth], [a.output],
                  overwrite=a.overwrite)
    fuse = a.mc_kind == "fuse"
    model = (MulticlassFusion if fuse else MulticlassCalibration)(max_iter=a.max_iter)
    scores = _mc_scores(a.scores) if fuse else _mc_scores(a.scores[:1])
    model.fit(scores, a.truth)  # type: ignore[arg-type]  # one path (a frame) when calibrating
    model.save(a.output, overwrite=a.overwrite)
    tr = model.training_
    state = "converged" if tr["converged"] else "NOT converged: " + tr["message"]
    say(f"{model.method}: {tr['n_segments']} segments, {tr['n_classes']} classes; normalized "
          f"Cmxe {tr['initial_objective']:.6g} -> {tr['objective_value']:.6g} "
          f"({tr['n_iter']} iterations, {state}); model written to {shown(a.output)}")
    out = model.transform(scores)  # type: ignore[arg-type]  # one path (a frame) when calibrating
    _mc_before_after(out.collect(), a.truth,
                     f"{model.method} on the training set")
    return 0


def cmd_mc_apply(a: argparse.Namespace) -> int:
    """Run ``scoreframe multiclass calibrate|fuse apply``."""
    guard_outputs([*(p for _, p in named_paths(a.scores)), a.model, a.truth], [a.output],
                  overwrite=a.overwrite)
    model = load_model_kind(a.model, ("multiclass_fusion",) if a.mc_kind == "fuse"
                            else ("multiclass_affine",))
    scores = _mc_scores(a.scores) if a.mc_kind == "fuse" else _mc_scores(a.scores[:1])
    out = model.transform(scores, **other_system(a))
    written = write_scored(out, a.output, a.overwrite,
                           [*(p for _, p in named_paths(a.scores)), a.model], trials=False)
    say(f"scores written to {shown(a.output)} (score = calibrated log-likelihood)")
    if a.truth:
        _mc_before_after(written.collect(), a.truth, f"{model.method} applied")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``multiclass evaluate|calibrate|fuse`` to the command line."""
    mc = sub.add_parser("multiclass", help="multiclass: Cmxe, Cavg, calibration and fusion",
                        description="multiclass: Cmxe, Cavg, calibration and fusion")
    mc_sub = mc.add_subparsers(dest="mc_command", required=True)
    me = add_command(mc_sub, "evaluate", func=cmd_mc_evaluate, first="SCORES",
                     help_text="Cmxe, information, error rate, LRE Cavg",
                     parents=[output_options(("table", "json"), default="table"),
                              engine_options()])
    first_positional(me, "scores", metavar="SCORES",
                     help="long (segment, class, score) or wide / LRE22 TSV")
    me.add_argument("--truth", type=path_arg(), required=True, help="segment -> true class table")
    me.add_argument("--by", action=ListAction, default=[], help="condition columns")
    me.add_argument("--p-target", action=ListAction, converter=prior,
                    help="Cavg target priors (default: 0.5)")
    for kind in ("calibrate", "fuse"):
        k = mc_sub.add_parser(kind, help=f"multiclass {kind}: train or apply",
                              description=f"multiclass {kind}: train or apply")
        k_sub = k.add_subparsers(dest="action", required=True)
        n = "+" if kind == "fuse" else 1
        kt = add_command(k_sub, "train", func=cmd_mc_train, help_text=f"train a multiclass "
                         f"{kind}; write MODEL.json",
                         parents=[output_options(required=True, help_text="MODEL.json")])
        kt.add_argument("scores", nargs=n, metavar="SCORES", type=path_arg(),
                        help="multiclass scores")
        kt.add_argument("--truth", type=path_arg(), required=True,
                        help="segment -> true class table")
        kt.add_argument("--max-iter", type=int_in(1, MAX_ITER), default=100,
                        help="iteration limit")
        kt.set_defaults(mc_kind=kind)
        ka = add_command(k_sub, "apply", func=cmd_mc_apply, help_text=f"apply a multiclass "
                         f"{kind} model",
                         parents=[output_options(required=True, help_text="output table")])
        ka.add_argument("model", metavar="MODEL", type=path_arg(), help="model file")
        ka.add_argument("scores", nargs=n, metavar="SCORES", type=path_arg(),
                        help="multiclass scores")
        ka.add_argument("--truth", type=path_arg(), help="print a before/after table")
        if kind == "calibrate":
            ka.add_argument("--allow-other-system", action="store_true",
                            help="apply the model to another system than the one it was "
                                 "trained on")
        ka.set_defaults(mc_kind=kind)
