"""``scoreframe norm``: z-, t-, s- and adaptive s-norm of trial scores against a cohort."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scoreframe.cli.console import print_frame, progress, say, shown
from scoreframe.cli.inputs import dataset_source, guard_outputs, scored_format, write_scored
from scoreframe.cli.options import (
    ListAction,
    add_command,
    dataset_options,
    engine_of,
    engine_options,
    int_in,
    output_options,
    path_arg,
    probability_open,
    text_arg,
)
from scoreframe.errors import Place, UsageError, message

__all__ = ["cmd_norm", "register"]

def _center(a: argparse.Namespace) -> Any:
    if a.mean_vector is None:
        return "cohort" if a.center else None
    if a.center:
        raise UsageError("--center and --mean-vector exclude each other")
    path = Path(a.mean_vector)
    if not path.is_file():
        raise UsageError(message("no such file", where="--mean-vector", path=path))
    try:
        return np.load(path, allow_pickle=False).astype(np.float64).ravel()
    except (OSError, ValueError) as exc:
        raise UsageError(message("cannot read the mean vector", where=Place(path),
                                 expected="a .npy array", got=str(exc)[:200])) from None


def cmd_norm(a: argparse.Namespace) -> int:
    """Run ``scoreframe norm``."""
    from scoreframe.norm import Normalization, cohort_statistics, normalize

    sources = [n for n, v in (("--cohort-scores", a.cohort_scores), ("--embeddings",
                              a.embeddings), ("--statistics", a.statistics)) if v]
    if len(sources) != 1:
        raise UsageError(message("name exactly one source of cohort statistics",
                                 expected="--cohort-scores ENR TST, --embeddings ENROLL TEST "
                                          "--cohort COHORT, or --statistics FILE",
                                 got=", ".join(sources) or "none"))
    if not a.output and not a.save_statistics:
        raise UsageError("nothing to write: give -o OUT and/or --save-statistics FILE")
    inputs = [a.dataset, *(a.cohort_scores or []), *(a.embeddings or []), a.cohort,
              a.statistics, a.mean_vector]
    outputs = [p for p in (a.output, a.save_statistics) if p]
    guard_outputs(inputs, outputs, overwrite=a.overwrite)
    if a.output:
        scored_format(a.output)
    if a.save_statistics and Path(a.save_statistics).suffix != ".parquet":
        raise UsageError(message("bad `--save-statistics`", expected="a .parquet file",
                                 got=a.save_statistics))
    kw: dict[str, Any] = {"method": Normalization(a.method, top_k=a.top_k, ddof=a.ddof,
                                                  convention=a.convention,
                                                  exclude_same_id=a.exclude_same_id),
                          "engine": engine_of(a)}
    if a.cohort_scores:
        kw["cohort_scores"] = tuple(a.cohort_scores)
    elif a.embeddings:
        kw.update(embeddings=tuple(a.embeddings), cohort=a.cohort, center=_center(a))
    trials = dataset_source(a)
    if a.where:
        from scoreframe.frames.lazy import as_lazy

        trials = as_lazy(trials, where=a.where)
    with progress() as prog:
        tasks: dict[str, Any] = {}

        def tick(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = prog.add_task(what, total=total)
            prog.update(tasks[what], completed=done, total=total)

        stats = None
        if a.statistics:
            stats = pl.read_parquet(a.statistics)
        elif a.save_statistics and not a.embeddings:
            stats = cohort_statistics(progress=tick, **kw)
        if stats is not None:
            kw = {k: v for k, v in kw.items() if k not in (
                "cohort_scores", "embeddings", "cohort", "center", "engine")}
            out = normalize(trials, statistics=stats, layout=a.layout, **kw)
        else:
            out = normalize(trials, layout=a.layout, progress=tick, **kw)
            if a.save_statistics:  # embeddings: the statistics of the trials' ids
                used = out.select("model", "segment").collect()
                stats = cohort_statistics(ids={"enroll": used["model"].unique().to_list(),
                                               "test": used["segment"].unique().to_list()},
                                          progress=tick, **kw)
    if a.output:
        write_scored(out, a.output, a.overwrite, [p for p in inputs if p])
        say(f"normalized scores written to {shown(a.output)} ({a.layout}: "
            + ", ".join(shown(x) for x in _labels(a, out)) + ")")
    if a.save_statistics and stats is not None:
        from scoreframe.io.tables import write_table

        write_table(stats, a.save_statistics, overwrite=a.overwrite)
        say(f"cohort statistics written to {shown(a.save_statistics)} ({stats.height} rows)")
    if a.evaluate and a.output:
        _summary(a, out)
    return 0


def _labels(a: argparse.Namespace, out: pl.LazyFrame) -> list[str]:
    names = out.collect_schema().names()
    if a.layout == "columns":
        return [c for c in names if c.startswith("score_")]
    return ["systems " + ", ".join(out.select(pl.col("system").unique(maintain_order=True))
                                   .collect()["system"].to_list())]


def _summary(a: argparse.Namespace, out: pl.LazyFrame) -> None:
    """EER and minDCF of the raw and normalized scores (trials with labels)."""
    from scoreframe.results.evaluate import evaluate, explode_dcf

    names = out.collect_schema().names()
    if "label" not in names:
        say("no labels: no before/after table")
        return
    if a.layout == "columns":
        norm_cols = [c for c in names if c.startswith("score_")]
        keep = [c for c in names if c not in norm_cols]
        out = pl.concat([out.select(keep).with_columns(pl.lit("raw").alias("system"))] + [
            out.with_columns(pl.col(col).alias("score")).select(keep)
            .with_columns(pl.lit(col.removeprefix("score_")).alias("system"))
            for col in norm_cols])
    table = explode_dcf(evaluate(out, operating_points=a.p_target, engine=engine_of(a)))
    keep = ["system", "n_tar", "n_non", "eer", "p_target", "min_dcf_norm", "act_dcf_norm"]
    print_frame(table.select(keep).with_columns(pl.col("eer") * 100).rename(
        {"eer": "eer (%)"}), "before/after normalization", left=("system",))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``scoreframe norm``."""
    p = add_command(
        sub, "norm", first="TRIALS",
        help_text="z-, t-, s- or adaptive s-norm of trial scores with cohort statistics from "
                  "cohort score tables, embeddings or a saved statistics table",
        parents=[dataset_options("trial table (model, segment, score; without score, cosine "
                                 "scores come from the embeddings)"),
                 output_options(help_text="output trials: parquet file or dataset, csv, tsv"),
                 engine_options()],
        func=cmd_norm)
    src = p.add_argument_group("cohort (exactly one)")
    src.add_argument("--cohort-scores", nargs=2, metavar=("ENR", "TST"),
                     type=path_arg("a cohort score table"),
                     help="cohort score tables (parquet): enroll_id,cohort_id,score and "
                          "test_id,cohort_id,score")
    src.add_argument("--embeddings", nargs=2, metavar=("ENROLL", "TEST"),
                     type=path_arg("an embeddings file"),
                     help="enrolment and test embeddings (parquet id,vector; npz; h5); may "
                          "be the same file")
    src.add_argument("--cohort", type=path_arg("a cohort embeddings file"),
                     help="cohort embeddings (with --embeddings)")
    src.add_argument("--statistics", type=path_arg("a statistics table"),
                     help="a cohort statistics table saved by "
                                          "--save-statistics")
    p.add_argument("--method", action=ListAction, converter=text_arg("a method"),
                   default=["snorm"], metavar="M",
                   help="znorm, tnorm, snorm, asnorm (optionally with k: asnorm300)")
    p.add_argument("--top-k", type=int_in(1, 10**9), metavar="K",
                   help="cohort size of asnorm (and of every method with --convention "
                        "speechbrain)")
    p.add_argument("--ddof", type=int_in(0, 1),
                   help="0: population std (WeSpeaker), 1: sample std (SpeechBrain); default "
                        "from --convention")
    p.add_argument("--convention", choices=("wespeaker", "speechbrain"), default="wespeaker",
                   help="defaults of ddof and top-k as in that toolkit")
    p.add_argument("--exclude-same-id", action="store_true",
                   help="leakage guard: leave out cohort entries of the side's own id "
                        "(speaker when the embeddings have a speaker column)")
    p.add_argument("--center", action="store_true",
                   help="subtract the cohort's mean vector before length normalization")
    p.add_argument("--mean-vector", type=path_arg("a mean vector file"),
                   help="subtract this mean vector (.npy), as WeSpeaker's mean_vec.npy")
    p.add_argument("--layout", choices=("columns", "systems"), default="columns",
                   help="score_<method> columns, or one system per method")
    p.add_argument("--save-statistics", metavar="FILE", type=path_arg("an output path"),
                   help="write the cohort statistics table (parquet) for reuse")
    p.add_argument("--evaluate", action="store_true",
                   help="print EER and minDCF of the raw and normalized scores")
    p.add_argument("--p-target", action=ListAction, converter=probability_open("a prior"),
                   default=[0.01],
                   metavar="P", help="target prior(s) of the minDCF in --evaluate")

