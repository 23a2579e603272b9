"""The ``scoreframe`` command: parser assembly and error handling.

Views layer: every command module registers its sub-command; :func:`main` parses, runs it and
turns user errors into one line on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

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
from scoreframe.errors import (
    DegenerateGroupWarning,
    ScoreframeError,
    printable,
)
from scoreframe.io import max_line_bytes
from scoreframe.io.atomic import clean_stale

__all__ = ["ERROR_LIMIT", "INPUTS", "build_parser", "error_line", "main", "one_line"]

#: Longest error or warning message (characters, after ``scoreframe: error: ``).
ERROR_LIMIT = 400
#: The attributes of a parsed command line that hold input files (each a path or a list).
INPUTS = ("dataset", "input", "key", "scores", "sql", "dev", "eval", "model", "truth",
          "calibration", "quality_model", "quality_segment", "join")

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


def _paragraphs(exc: BaseException, text: str | None = None) -> tuple[str, str | None]:
    """An exception's message (or ``text``) and hint (the paragraph after a blank line).

    Each is on one line: control characters are escaped, a newline inside a paragraph becomes
    a space. Polars' further paragraphs (the query plan) are not hints and are left out.
    """
    parts = [printable(" ".join(p.split()))
             for p in (str(exc) if text is None else text).strip().split("\n\n") if p.strip()]
    if not parts:
        return type(exc).__name__, None
    hint = parts[1] if len(parts) > 1 and not isinstance(exc, pl.exceptions.PolarsError) else None
    return parts[0], hint


def _fit(text: str, hint: str | None, limit: int | None) -> str:
    """``text (hint: ...)`` in at most ``limit`` characters: the hint is cut first.

    The message keeps as much as it can; the hint gets the room left (at least 40
    characters when there is a hint), both cut with an ellipsis and their length.

    >>> _fit("a" * 20, "b" * 100, 70)
    'aaaaaaaaaaaaaaaaaaaa (hint: bbbbbbbbbbbbbbbbbbbbbbb… (100 characters))'
    """
    tail = "" if hint is None else f" (hint: {hint})"
    if limit is None or len(text) + len(tail) <= limit:
        return text + tail
    if hint is not None:
        room = max(limit - len(text), 40) - len(" (hint: )")
        tail = f" (hint: {_cut(hint, room)})"
    return _cut(text, limit - len(tail)) + tail


def _cut(text: str, width: int) -> str:
    """``text`` in ``width`` characters: its start, an ellipsis and its full length.

    >>> _cut("abcdefghijklmnopqrstuvwxyz" * 4, 30)
    'abcdefghijkl… (104 characters)'
    """
    if len(text) <= width:
        return text
    note = f"… ({len(text):,} characters)"
    return text[:max(width - len(note), 0)] + note


def one_line(exc: BaseException, *, limit: int | None = None) -> str:
    r"""An exception's message on one line, its hint (after a blank line) in parentheses.

    Control characters are escaped. With ``limit``, the line is cut to at most ``limit``
    characters (its start, an ellipsis and its full length), the hint before the message.

    Examples
    --------
    >>> one_line(ValueError("bad `x`: expected 1; got 2\n\nPass 1."))
    'bad `x`: expected 1; got 2 (hint: Pass 1.)'
    >>> len(one_line(ValueError("x" * 10_000 + "\n\nPass 1."), limit=100))
    100
    """
    return _fit(*_paragraphs(exc), limit)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    args, extra = parser.parse_known_args(argv)
    command_parser = getattr(args, "parser", parser)
    if extra:
        command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    restore_dataset(command_parser, args)
    return args


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None, *,
                  seen: set[tuple[tuple[str, str], ...]] | None = None) -> None:
    """Show a Python warning as one line: ``scoreframe: warning: <message>``.

    A :class:`~scoreframe.errors.DegenerateGroupWarning` about a group already warned about
    (``seen`` holds their keys) is not repeated: one warning per group and run.
    """
    if isinstance(message, DegenerateGroupWarning) and message.group and seen is not None:
        key = tuple(sorted((str(k), str(v)) for k, v in message.group.items()))
        if key in seen:
            return
        seen.add(key)
    prefix = "scoreframe: warning: "
    text = (one_line(message, limit=ERROR_LIMIT) if isinstance(message, Warning)
            else _cut(printable(" ".join(str(message).split())), ERROR_LIMIT))
    print(prefix + text, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (2 on user errors)."""
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # argparse: --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    seen: set[tuple[tuple[str, str], ...]] = set()

    def show(*w: Any, **kw: Any) -> None:
        _show_warning(*w, **kw, seen=seen)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        return _run(args)


#: A full collection's generation threshold high enough that a command never reaches it.
FULL_COLLECTIONS_OFF = 1 << 30


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI as its own process (``python -m scoreframe``, the ``scoreframe`` command).

    :func:`main` with the garbage collector set for a process that runs one command and
    exits: the young generations are collected as usual, the full collections are left
    out, and at the end everything is frozen (:func:`gc.freeze`) so that the interpreter's
    exit does not traverse it once more. A full collection traverses every object, the
    hundreds of thousands that Altair's and numba's modules hold included: a report of
    10^7 trials ran four of them (0.23 s) and its exit took 0.36 s more, while the cyclic
    garbage they find in a command is a few thousand objects (the argument parser's),
    whatever the data or the number of score ranges (``benchmarks/RESULTS.md``, section
    ``targets``, target 22-4).
    A notebook or a test calling :func:`main` keeps the collector as it was.
    """
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(gen0, gen1, FULL_COLLECTIONS_OFF)
    try:
        return main(argv)
    finally:
        gc.freeze()


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
    except (ScoreframeError, pl.exceptions.PolarsError, OSError) as exc:
        print(error_line(exc, args), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scoreframe: interrupted", file=sys.stderr)
        return 130


def _inputs(args: argparse.Namespace) -> list[str]:
    """The input files named on the command line (:data:`INPUTS`), in order."""
    out: list[str] = []
    for name in INPUTS:
        value = getattr(args, name, None)
        for v in [value] if isinstance(value, str) else value or []:
            if isinstance(v, str) and v and v not in out:
                out.append(v)
    return out


def _short_path(path: str, width: int = 60) -> str:
    """A path for an error line: escaped; its start and end kept when longer than ``width``.

    >>> _short_path("/tmp/" + "x" * 100 + "/key.txt", width=20)
    '/tmp/xx…xxxx/key.txt'
    """
    text = printable(path)
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 5
    return text[:head] + "…" + text[-(width - 1 - head):]


def _os_message(exc: OSError) -> str:
    """An OS error as a sentence naming its file(s), without ``[Errno N]``."""
    what = (exc.strerror or str(exc) or type(exc).__name__).rstrip(".")
    files = [f for f in (exc.filename, exc.filename2) if f is not None]
    if not files:
        return what[:1].lower() + what[1:]
    named = " and ".join(f"`{_short_path(os.fsdecode(f), 100)}`" for f in files)
    return f"{what[:1].lower()}{what[1:]}: {named}"


def error_line(exc: BaseException, args: argparse.Namespace) -> str:
    """The one line a user error prints: escaped, bounded, naming the option and the file.

    The line is ``scoreframe: error: <place>: <message>``, the message at most
    :data:`ERROR_LIMIT` characters (values in it escaped and cut, the hint cut first). It is
    built from the exception's attributes, never by reading its text: the bare ``text`` of a
    :class:`~scoreframe.errors.ScoreframeError`, the option it is about as typed (from
    ``parameter``), and the place first: the exception's ``path``, else the inputs of the
    command (``scoreframe: error: `ds.parquet`: cannot use the --where ...``), then its
    ``line``. An operating-system error names its own file(s) (``filename``).

    Examples
    --------
    >>> from scoreframe.errors import FormatError, UsageError
    >>> ns = argparse.Namespace(dataset="ds.parquet")
    >>> error_line(UsageError("bad `--where`: got 'x ='"), ns)
    "scoreframe: error: `ds.parquet`: bad `--where`: got 'x ='"
    >>> error_line(FormatError("bad score", path="data/s.txt", line=3), ns)
    'scoreframe: error: `data/s.txt` line 3: bad score'
    >>> error_line(FileNotFoundError(2, "No such file or directory", "ds.parquet"), ns)
    'scoreframe: error: no such file or directory: `ds.parquet`'
    """
    prefix = "scoreframe: error: "
    if isinstance(exc, OSError) and not isinstance(exc, ScoreframeError):
        text, hint = _os_message(exc), None
        if exc.filename is not None:  # the text names the file(s), from the error's attributes
            return prefix + _fit(text, hint, ERROR_LIMIT)
    else:
        text, hint = _paragraphs(exc, exc.text if isinstance(exc, ScoreframeError) else None)
    parameter = getattr(exc, "parameter", None)
    if isinstance(parameter, str):
        text = _option_name(text, parameter, args)
    path = getattr(exc, "path", None)
    files = [path] if isinstance(path, str) else _inputs(args)
    width = 160 if len(files) == 1 else 60
    place = [", ".join(f"`{_short_path(f, width)}`" for f in files[:3])] if files else []
    if len(files) > 3:
        place.append(f"and {len(files) - 3} more")
    line = getattr(exc, "line", None)
    if isinstance(line, int):
        place.append(f"line {line}")
    if place:
        prefix += " ".join(place) + ": "
    return prefix + _fit(text, hint, ERROR_LIMIT + len("scoreframe: error: ") - len(prefix))


def _option_name(text: str, parameter: str, args: argparse.Namespace) -> str:
    """``text`` with the keyword argument ``parameter`` shown as the option typed, if any."""
    parser = getattr(args, "parser", None)
    usage = parser.format_help() if isinstance(parser, argparse.ArgumentParser) else ""
    option = "--" + parameter.replace("_", "-")
    if re.search(re.escape(option) + r"(?![\w-])", usage):
        return text.replace(f"`{parameter}`", f"`{option}`")
    return text
