"""``scoreframe fuse train|apply``: linear (quality) fusion of several systems."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, cast

import polars as pl

from scoreframe.cli.before_after import fit_summary, report_sets
from scoreframe.cli.console import say, shown
from scoreframe.cli.inputs import (
    guard_outputs,
    load_dataset,
    load_model_kind,
    named_paths,
    parse_missing,
    quality_table,
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
    missing_arg,
    objective_arg,
    output_options,
    path_arg,
    prior,
    where_option,
)
from scoreframe.errors import Place, UsageError, listing
from scoreframe.frames._sql_guard import check_where

if TYPE_CHECKING:
    from scoreframe.estimators.fusion import LinearFusion

__all__ = ["cmd_fuse_apply", "cmd_fuse_train", "fusion_inputs", "register"]

#: Terms of the fused llr printed after training (the model file holds them all).
TERMS = 10


def _place(paths: list[str]) -> Place | None:
    """The one input a --where error is about, as its path (several: the command names them)."""
    return Place(paths[0]) if len(paths) == 1 else None


def fusion_inputs(tokens: list[str], a: object = None
                  ) -> pl.LazyFrame | dict[str, pl.LazyFrame]:
    """One dataset with a system column, or one dataset per system (``NAME=PATH``).

    The ``--join`` tables of the command ``a`` are joined to each.
    """
    if len(tokens) == 1 and "=" not in tokens[0]:
        return with_joins(load_dataset(tokens[0]), a)
    return {n: with_joins(load_dataset(p), a) for n, p in named_paths(tokens)}


def input_paths(tokens: list[str]) -> list[str]:
    """The file paths of ``NAME=PATH`` / ``PATH`` arguments."""
    return [p for _, p in named_paths(tokens)]


def cmd_fuse_train(a: argparse.Namespace) -> int:
    """Run ``scoreframe fuse train``."""
    from scoreframe.estimators.fusion import LinearFusion

    model = LinearFusion(p_target=a.p_target, objective=a.objective, max_iter=a.max_iter,
                         missing=parse_missing(a.missing))
    guard_outputs([*input_paths(a.dev), a.quality_model, a.quality_segment, *a.join],
                  [a.output],
                  overwrite=a.overwrite)
    check_where(a.where, source=_place(input_paths(a.dev)))
    data = fusion_inputs(a.dev, a)
    qm, qs = quality_table(a.quality_model), quality_table(a.quality_segment)
    if (qm is None) != (qs is None):
        raise UsageError("give both --quality-model and --quality-segment, or neither")
    model.fit(data, where=a.where, quality_model=qm,
              quality_segment=qs)
    model.save(a.output, overwrite=a.overwrite)
    say(f"linear fusion of {len(model.weights_)} systems: {fit_summary(model)}")
    shown_terms = list(model.weights_.items())[:TERMS]
    terms = " + ".join(f"{w:.6g} * {shown(s)}" for s, w in shown_terms)
    if len(model.weights_) > TERMS:
        terms += f" + … ({len(model.weights_) - TERMS} more systems)"
    quality = model.quality_columns_
    say(f"  llr = {terms} + {model.offset_:.6g}"
        + (f" + quality term over {listing(quality, quoted=True)}" if quality else ""))
    say(f"model written to {shown(a.output)}")
    out = model.transform(data, where=a.where, quality_model=qm,
                          quality_segment=qs)
    report_sets([("+".join(Path(p).name for p in input_paths(a.dev)), out)],
                a.report_p_target or [a.p_target], "fusion on the training set")
    return 0


def cmd_fuse_apply(a: argparse.Namespace) -> int:
    """Run ``scoreframe fuse apply``."""
    inputs = [*input_paths(a.eval), a.model, a.quality_model, a.quality_segment, *a.join]
    guard_outputs(inputs, [a.output], overwrite=a.overwrite)
    scored_format(a.output)
    model = cast("LinearFusion", load_model_kind(a.model, ("linear_fusion",)))
    if a.missing is not None:
        model.missing = parse_missing(a.missing)
    qm, qs = quality_table(a.quality_model), quality_table(a.quality_segment)
    check_where(a.where, source=_place(input_paths(a.eval)))
    out = model.transform(fusion_inputs(a.eval, a), where=a.where, quality_model=qm,
                          quality_segment=qs)
    written = write_scored(out, a.output, a.overwrite, inputs)
    say(f"fused scores written to {shown(a.output)} (score = fused llr, inputs as "
        "score_raw_<system>)")
    report_sets([("+".join(Path(p).name for p in input_paths(a.eval)), written)],
                a.report_p_target or [model.p_target], "fusion applied")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``fuse train`` and ``fuse apply`` to the command line."""
    fu = sub.add_parser("fuse", help="train or apply a linear (quality) fusion of systems",
                        description="train or apply a linear (quality) fusion of systems")
    fu_sub = fu.add_subparsers(dest="action", required=True)
    common = argparse.ArgumentParser(add_help=False, parents=[where_option(), join_options()])
    common.add_argument("--quality-model", type=path_arg(),
                        help="quality table (id + columns) joined on model")
    common.add_argument("--quality-segment", type=path_arg(),
                        help="quality table (id + columns) joined on segment")
    common.add_argument("--report-p-target", action=ListAction, converter=prior,
                        help="priors of the before/after table (default: the model's prior)")
    ft = add_command(fu_sub, "train", func=cmd_fuse_train, first="DEV [DEV ...]",
                     help_text="train on labelled dev trials; write MODEL.json",
                     parents=[common, output_options(required=True, help_text="MODEL.json")])
    ft.add_argument("dev", nargs="+", metavar="DEV", type=path_arg(),
                    help="one dataset with a system column, or one per system as NAME=PATH "
                         "(a plain PATH is named by its file stem)")
    ft.add_argument("--p-target", type=prior, default=0.5, help="training prior")
    ft.add_argument("--objective", type=objective_arg, default="log",
                    help="log, brier, boost, asym or 'a,b'")
    ft.add_argument("--max-iter", type=int_in(1, MAX_ITER), default=100, help="iteration limit")
    ft.add_argument("--missing", type=missing_arg, default="error",
                    help="trials not scored by every system: error, drop or a fill value")
    fa = add_command(fu_sub, "apply", func=cmd_fuse_apply, first="MODEL EVAL [EVAL ...]",
                     help_text="fuse datasets with MODEL.json",
                     parents=[common, output_options(required=True,
                                                     help_text="parquet dataset, .parquet, "
                                                               ".csv, .tsv")])
    fa.add_argument("model", metavar="MODEL", type=path_arg(),
                    help="model file written by fuse train")
    fa.add_argument("eval", nargs="+", metavar="EVAL", type=path_arg(),
                    help="one dataset with a system column, or one per system as NAME=PATH "
                         "with the names used in training")
    fa.add_argument("--missing", type=missing_arg, help="override the model's missing-score policy")
