"""The ``scoreframe`` command: parser assembly and error handling.

Views layer: every command module registers its sub-command; :func:`main` parses, runs it and
turns user errors into one line on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

import polars as pl

from scoreframe.cli import (
    calibrate,
    clean,
    compare,
    convert,
    demo,
    differentials,
    evaluate,
    fuse,
    identify,
    info,
    multiclass,
    norm,
    query,
    report,
    synth,
)
from scoreframe.cli.options import Formatter, Parser, restore_dataset
from scoreframe.errors import ScoreframeError
from scoreframe.io import max_line_bytes
from scoreframe.io.atomic import clean_stale

__all__ = ["build_parser", "main", "one_line", "option_names"]

DESCRIPTION = ("Evaluate, calibrate and fuse detector scores: convert, info, query, synth, "
               "evaluate, compare, calibrate, fuse, report, multiclass, demo, identify, "
               "differentials, norm, clean.")
COMMANDS = (convert, info, query, synth, evaluate, compare, calibrate, fuse, report, multiclass,
            demo, identify, differentials, norm, clean)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scoreframe")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``scoreframe`` command."""
    p = Parser(prog="scoreframe", description=DESCRIPTION,
               formatter_class=Formatter,
               epilog="`scoreframe COMMAND --help` lists a command's options "
                      "with their defaults. User errors exit with status 2.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return p


def one_line(exc: BaseException) -> str:
    r"""An exception's message on one line, its hint (after a blank line) in parentheses.

    Examples
    --------
    >>> one_line(ValueError("bad `x`: expected 1; got 2\n\nPass 1."))
    'bad `x`: expected 1; got 2 (hint: Pass 1.)'
    """
    text = str(exc).strip()
    parts = [p.strip() for p in text.split("\n\n") if p.strip()]
    if not parts:
        return type(exc).__name__
    line = parts[0].replace("\n", " ")
    if len(parts) > 1:
        line += " (hint: " + parts[1].replace("\n", " ") + ")"
    return line


def option_names(text: str, args: argparse.Namespace) -> str:
    """Name the command's options as typed (``--p-target``) in a library message.

    The library reports a bad keyword argument as ``bad `p_target```; on the command line
    that option is ``--p-target``. Only names that are options of the command (listed in its
    help) are rewritten, never positional arguments or column names.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--p-target")
    >>> option_names("bad `p_target`: expected priors in (0, 1); got (1.5,)",
    ...              argparse.Namespace(p_target=[1.5], parser=p))
    'bad `--p-target`: expected priors in (0, 1); got (1.5,)'
    """
    parser = getattr(args, "parser", None)
    usage = parser.format_help() if isinstance(parser, argparse.ArgumentParser) else ""

    def flag(m: re.Match[str]) -> str:
        option = "--" + m.group(1).replace("_", "-")
        typed = re.search(re.escape(option) + r"(?![\w-])", usage)
        return f"bad `{option}`" if typed else m.group(0)

    return re.sub(r"bad `(\w+)`", flag, text)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    command_parser = getattr(args, "parser", parser)
    if extra:
        command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    restore_dataset(command_parser, args)
    return args


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Show a Python warning as one line: ``scoreframe: warning: <message>``."""
    text = one_line(message) if isinstance(message, Warning) else " ".join(message.split())
    print(f"scoreframe: warning: {text}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (2 on user errors)."""
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # argparse: --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.command != "clean":  # `clean` does it itself, and lists what it removes
        clean_stale()  # what killed runs left behind, in any directory
    try:
        with max_line_bytes(getattr(args, "max_line_bytes", None)):
            return int(args.func(args))
    except BrokenPipeError:  # `scoreframe ... | head`: stop quietly, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (ScoreframeError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        print(f"scoreframe: error: {option_names(one_line(exc), args)}", file=sys.stderr)
        return 2
    except (pl.exceptions.PolarsError, OSError) as exc:
        print(f"scoreframe: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scoreframe: interrupted", file=sys.stderr)
        return 130
