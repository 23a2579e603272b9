"""``scoreframe synth``: write a synthetic evaluation as a partitioned dataset."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from scoreframe.checks import check_choice
from scoreframe.cli.console import progress, say, shown
from scoreframe.cli.inputs import guard_outputs
from scoreframe.cli.options import (
    MAX_SEED,
    ListAction,
    add_command,
    first_positional,
    int_in,
    overwrite_option,
    probability_open,
)
from scoreframe.errors import ScoreframeError, UsageError
from scoreframe.frames.synth import MAX_SYSTEMS, SYNTH_COLUMNS, synth_chunks
from scoreframe.io.parquet import write_trials

__all__ = ["cmd_synth", "register"]


def _option(option: str, check: Callable[..., object], value: object, **kwargs: Any) -> None:
    """Run a :mod:`scoreframe.checks` check; its error names the option as typed."""
    try:
        check(value, **{**kwargs, "name": option})
    except ScoreframeError as exc:
        raise UsageError(str(exc)) from None


def cmd_synth(a: argparse.Namespace) -> int:
    """Run ``scoreframe synth``."""
    columns = [c for c in SYNTH_COLUMNS if c != "condition" or a.conditions is not None]
    for c in a.partition_by or ():
        _option("--partition-by", check_choice, c, choices=columns)
    guard_outputs([], [a.output], overwrite=a.overwrite)
    chunks = synth_chunks(a.trials, n_systems=a.systems, seed=a.seed,
                          target_rate=a.target_rate, n_conditions=a.conditions,
                          chunk_trials=a.chunk_trials)
    total_rows = a.trials * a.systems
    with progress() as prog:
        task = prog.add_task("writing trials", total=total_rows)
        write_trials(chunks, a.output, partition_by=a.partition_by or (),
                     overwrite=a.overwrite, validate="trusted",  # ids unique by construction
                     progress=lambda n: prog.update(task, completed=n))
    say(f"wrote {total_rows} rows ({a.trials} trials x {a.systems} systems) to "
        f"{shown(a.output)}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``synth`` to the command line."""
    s = add_command(sub, "synth", func=cmd_synth, first="OUTPUT",
                    help_text="write a synthetic evaluation as a partitioned dataset",
                    parents=[overwrite_option()])
    first_positional(s, "output", metavar="OUTPUT",
                     help="output dataset directory (or .parquet)")
    s.add_argument("--trials", type=int_in(1, 10**12), default=1_000_000,
                   help="trials per system")
    s.add_argument("--systems", type=int_in(1, MAX_SYSTEMS), default=3,
                   help="number of systems")
    s.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="random seed")
    s.add_argument("--target-rate", type=probability_open("a fraction"), default=0.1,
                   help="fraction of target trials")
    s.add_argument("--conditions", type=int_in(1, 1_000_000),
                   help="add a `condition` column with N values")
    s.add_argument("--chunk-trials", type=int_in(1, 10**7), default=1_000_000,
                   help="trials generated per chunk (bounds memory)")
    s.add_argument("--partition-by", action=ListAction, default=["system"], metavar="COL",
                   help="partition columns of the dataset")
