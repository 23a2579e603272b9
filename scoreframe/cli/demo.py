"""``scoreframe demo``: synthesize the demo evaluation and run the whole pipeline on it."""

from __future__ import annotations

import argparse

from scoreframe.cli.before_after import print_before_after
from scoreframe.cli.console import progress, say, shown
from scoreframe.cli.evaluate import print_results
from scoreframe.cli.options import MAX_SEED, add_command, int_in, overwrite_option, path_arg
from scoreframe.demo import run_demo

__all__ = ["cmd_demo", "register"]


def cmd_demo(a: argparse.Namespace) -> int:
    """Run ``scoreframe demo``: print each stage of :func:`scoreframe.demo.run_demo`."""
    say(f"running the demo into {shown(a.out)} ({a.trials} trials x 3 systems)")
    with progress() as prog:
        task = prog.add_task("demo", total=None)
        steps = run_demo(a.out, trials=a.trials, seed=a.seed, overwrite=a.overwrite,
                         progress=lambda d, t: prog.update(task, completed=d, total=t))
        for step in steps:
            prog.update(task, description=f"demo after step {step.title[:3]}")
            say(step.title)
            for line in step.lines:
                say(line)
            if step.table is not None and step.kind == "results":
                print_results(step.table, title=step.table_title)
            elif step.table is not None:
                print_before_after(step.table, title=step.table_title)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to the command line."""
    d = add_command(sub, "demo", func=cmd_demo, parents=[overwrite_option()],
                    help_text="synthesize the demo evaluation and run the pipeline on it")
    d.add_argument("--out", type=path_arg("a directory"), default="demo_out",
                   help="output directory")
    d.add_argument("--trials", type=int_in(100, 10**9), default=1_000_000,
                   help="trials per system")
    d.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="random seed")
