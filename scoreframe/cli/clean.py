"""``scoreframe clean``: remove the temporaries that killed runs left behind."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from scoreframe.cli.console import say, shown
from scoreframe.cli.options import add_command, path_arg
from scoreframe.errors import UsageError, message
from scoreframe.io.atomic import clean_stale
from scoreframe.stats.outofcore import clean_stale_spills

__all__ = ["cmd_clean", "register"]


def cmd_clean(a: argparse.Namespace) -> int:
    """Run ``scoreframe clean``: every registered stale temporary, and those found in DIRs.

    Every command already removes registered stale temporaries when it starts; this command
    does it on demand and also looks in the directories given (and in the spill directory)
    for temporaries of dead processes that were never registered.
    """
    dirs = [Path(d) for d in a.dirs]
    for d in dirs:
        if not d.is_dir():
            raise UsageError(message(f"cannot clean `{d}`", expected="a directory",
                                     got="a file" if d.exists() else "no such directory"))
    spill_root = os.environ.get("SCOREFRAME_SPILL_DIR") or tempfile.gettempdir()
    removed = clean_stale()
    for d in dirs:
        removed += clean_stale(d)
    for d in {*dirs, Path(spill_root)}:
        removed += clean_stale_spills(d)
    for p in removed:
        say(f"removed {shown(p)}")
    say(f"{len(removed)} stale temporar{'y' if len(removed) == 1 else 'ies'} removed")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``clean`` to the command line."""
    c = add_command(sub, "clean", func=cmd_clean, first="[DIR ...]",
                    help_text="remove temporaries left by killed runs (outputs' temporary "
                              "files and directories, out-of-core spill directories)")
    c.add_argument("dirs", nargs="*", metavar="DIR", type=path_arg("a directory"),
                   help="also look in these directories for unregistered temporaries")
