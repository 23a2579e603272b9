"""Shared argument groups of the command line, defined once as argparse parent parsers.

A command builds its parser from these parents (``parents=[dataset_options(), ...]``) so every
command spells, documents and defaults an option the same way.

Every option value is checked while parsing, by one mechanism: the option's ``type=`` (or the
``converter=`` of a :class:`ListAction`) is an :class:`OptionType` made by a small factory —
:func:`int_in`, :func:`real_in`, :func:`probability_open`, :func:`size_bytes`,
:func:`column_arg`, :func:`name_arg`, :func:`path_arg`, :func:`text_arg`,
:func:`scheduler_address` — that declares the value's kind and range once. A bad value
(zero or negative where that is out of range, overflow, NaN or infinity, a non-number, an
empty string) is one line on stderr, exit status 2, before any work. Options with a fixed set
of values use argparse ``choices``. ``tests/test_cli_options.py`` walks the whole parser and
fails for an option whose kind is not declared this way.

List options (``--by``, ``--p-target``, ...) take space- or comma-separated values and may be
repeated: ``--by gender,channel``, ``--by gender channel`` and ``--by gender --by channel`` are
the same. When such an option comes just before the dataset (``--by gender channel DATASET``)
and swallows it, the dataset is given back (see :func:`restore_dataset`).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

from scoreframe import io as sio
from scoreframe.errors import UsageError, message, printable
from scoreframe.stats import Engine
from scoreframe.stats.dask import check_scheduler_address
from scoreframe.stats.engine import ENGINES, parse_memory

__all__ = ["ENGINE_OPTIONS", "KINDS", "MAX_BOOTSTRAP", "MAX_COST", "MAX_ITER", "MAX_SEED",
           "MAX_SIZE", "MAX_WORKERS", "Distinct", "Formatter", "ListAction", "OptionType",
           "Parser", "add_command", "by_options", "column_arg", "columns_arg",
           "dataset_options", "engine_kwargs", "engine_of", "engine_options",
           "first_positional", "int_in", "join_options",
           "max_line_bytes_option", "missing_arg", "name_arg", "objective_arg",
           "operating_point_options", "option_kind", "output_options", "overwrite_option",
           "path_arg", "prior",
           "probability_open", "reading_options", "real_in", "restore_dataset",
           "scheduler_address", "size_bytes", "TABLE", "text_arg", "where_option"]

#: Largest ``--bootstrap``: 100,000 replicates. Every replicate keeps a value per group, metric
#: and operating point in memory; beyond this the Monte Carlo error of an interval end is far
#: below the sampling uncertainty it measures, and ``1e12`` would ask for terabytes.
MAX_BOOTSTRAP = 100_000
#: Largest ``--workers`` (threads here, or Dask workers to wait for): 4096.
MAX_WORKERS = 4096
#: Largest size option (``--memory-limit``, ``--max-dense-bytes``): 1 PiB.
MAX_SIZE = 2**50
#: Largest seed: 2**63 - 1 (seeds are hashed as 64-bit integers).
MAX_SEED = 2**63 - 1
#: Largest cost ``--c-miss``/``--c-fa``: 10**12 (only the ratio of the two matters).
MAX_COST = 1e12
#: Largest iteration limit of a training (``--max-iter``): 10**6.
MAX_ITER = 1_000_000
#: The kinds of option value an :class:`OptionType` declares (plus ``choice``: argparse choices).
KINDS = ("integer", "real", "size", "column", "name", "path", "text", "address")
#: The engine options, in the order of the library keywords (see :func:`engine_options`).
ENGINE_OPTIONS = ("engine", "memory_limit", "workers", "scheduler", "spill_dir")

_BAD = object()


def _shown(text: str) -> str:
    """A value as a message quotes it: repr, cut to 40 characters."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text)} characters)"


@dataclass(frozen=True)
class OptionType:
    """The declared type of an option value: its kind, its range and how text becomes it.

    Instances are made by the factories of this module and passed as argparse ``type=`` (or
    as a :class:`ListAction` ``converter=``). Calling one on the command-line text returns the
    value or raises :class:`argparse.ArgumentTypeError` with ``expected ...; got ...``.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    expected : str
        What a valid value is, as messages and ``--help`` say it (``an integer in [1, 4096]``).
    lo, hi : float or None
        The range of a number (``integer``, ``real``, ``size``); always finite.
    lo_open, hi_open : bool
        Whether the range excludes ``lo`` / ``hi``.
    none : bool
        Whether ``none`` is accepted (a size option without a limit).
    distinct : bool
        Whether the items of a list option must differ.

    Examples
    --------
    >>> workers = int_in(1, 8)
    >>> workers("3"), workers.kind
    (3, 'integer')
    >>> workers("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer in [1, 8]; got '0'
    """

    kind: str
    expected: str
    parse: Callable[[str], Any] = field(repr=False)
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    none: bool = False
    distinct: bool = False

    @property
    def __name__(self) -> str:  # argparse names a type by it in some messages
        return self.kind

    def __call__(self, text: str) -> Any:
        """The value of ``text``, or :class:`argparse.ArgumentTypeError`."""
        value: Any = _BAD
        if isinstance(text, str) and text.strip() and "\0" not in text:
            try:
                value = self.parse(text)
            except (ValueError, TypeError, ArithmeticError):  # ScoreframeError included
                value = _BAD
        if value is _BAD:
            raise argparse.ArgumentTypeError(f"expected {self.expected}; got {_shown(text)}")
        return value

    def in_range(self, v: Decimal | float) -> bool:
        """Whether the number ``v`` is inside the declared range (NaN is not)."""
        if v != v:  # noqa: PLR0124 (NaN)
            return False
        lo = Decimal(str(self.lo)) if isinstance(v, Decimal) else self.lo
        hi = Decimal(str(self.hi)) if isinstance(v, Decimal) else self.hi
        return ((lo is None or (v > lo if self.lo_open else v >= lo))
                and (hi is None or (v < hi if self.hi_open else v <= hi)))


def _interval(lo: float, hi: float, lo_open: bool, hi_open: bool) -> str:
    def num(x: float) -> str:
        return str(x) if isinstance(x, int) else f"{x:g}"

    return f"{'(' if lo_open else '['}{num(lo)}, {num(hi)}{')' if hi_open else ']'}"


def int_in(lo: int, hi: int) -> OptionType:
    """An integer in ``[lo, hi]`` (``1e4`` and ``10000`` alike; never rounded).

    >>> int_in(2, 100_000)("1e3")
    1000
    """
    def parse(text: str) -> int:
        d = Decimal(text.strip())  # exact: 10**30 and 1e400 are compared, not overflowed
        if not d.is_finite() or d != d.to_integral_value() or not t.in_range(d):
            raise ValueError(text)
        return int(d)

    t = OptionType("integer", f"an integer in {_interval(lo, hi, False, False)}", parse,
                   lo=lo, hi=hi)
    return t


def real_in(lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False,
            what: str = "a number") -> OptionType:
    """A finite number in the range ``lo .. hi`` (ends included unless ``*_open``).

    >>> real_in(0, 1e12, lo_open=True)("10")
    10.0
    """
    def parse(text: str) -> float:
        v = float(text)
        if not math.isfinite(v) or not t.in_range(v):
            raise ValueError(text)
        return v

    t = OptionType("real", f"{what} in {_interval(lo, hi, lo_open, hi_open)}", parse,
                   lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open)
    return t


def probability_open(what: str = "a probability", *, distinct: bool = False) -> OptionType:
    """A number in the open interval ``(0, 1)``: a prior, a coverage, a rate.

    >>> probability_open("a prior")("0.01")
    0.01
    """
    t = real_in(0.0, 1.0, lo_open=True, hi_open=True, what=what)
    return OptionType(t.kind, t.expected, t.parse, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                      distinct=distinct)


def size_bytes(*, lo: int = 1024, hi: int = MAX_SIZE, none: bool = False) -> OptionType:
    """A size in bytes: ``2GB``, ``512MiB``, ``1e9``; with ``none=True`` also ``none`` (None).

    >>> size_bytes()("512MiB")
    536870912
    """
    def parse(text: str) -> int | None:
        if none and text.strip().lower() == "none":
            return None
        v = parse_memory(text)  # ScoreframeError (a ValueError) or OverflowError on bad text
        if not t.in_range(v):
            raise ValueError(text)
        return v

    unit = next(((u, f) for u, f in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30),
                                      ("MiB", 2**20), ("KiB", 2**10)) if hi >= f), ("", 1))
    expected = (f"a size from {lo} bytes to {hi / unit[1]:g}{unit[0]} such as 16GB or 512MiB"
                + (", or none" if none else ""))
    t = OptionType("size", expected, parse, lo=lo, hi=hi, none=none)
    return t


def _word(kind: str, expected: str, check: Callable[[str], object] | None = None, *,
          distinct: bool = False) -> OptionType:
    def parse(text: str) -> str:
        if check is not None:
            check(text)
        return text

    return OptionType(kind, expected, parse, distinct=distinct)


def column_arg(*, distinct: bool = False) -> OptionType:
    """A column name (items of list options such as ``--by``).

    A column named twice in ``--by`` or ``--trial-id`` counts once; with ``distinct=True``
    (``--resample``, where a repeated unit is a typo with a meaning) it is an error.
    """
    return _word("column", "a column name", distinct=distinct)


def name_arg(what: str = "a system name", *, distinct: bool = False) -> OptionType:
    """A name found in the data, such as a system (``--systems``, ``--tandem``)."""
    return _word("name", what, distinct=distinct)


def path_arg(what: str = "a path") -> OptionType:
    """A file or directory path (not empty, no NUL byte); existence is checked by the command."""
    return _word("path", what)


def text_arg(what: str, check: Callable[[str], object] | None = None) -> OptionType:
    """Free text such as an SQL predicate or a title; ``check`` raises on a bad value."""
    return _word("text", what, check)


def scheduler_address() -> OptionType:
    """A Dask scheduler address ``[tcp://]host:port`` (checked by form; reached later)."""
    return _word("address", "a scheduler address such as tcp://host:8786",
                 check_scheduler_address)


def _fill_or_policy(text: str) -> None:
    if text not in ("error", "drop") and not math.isfinite(float(text)):
        raise ValueError(text)


def _column_mapping(text: str) -> None:
    for part in text.split(","):
        source, _, target = part.partition("=")
        if not (source.strip() and target.strip()):
            raise ValueError(part)


def _objective(text: str) -> None:
    from scoreframe.estimators.calibration import objective_rule

    objective_rule(text)


#: ``--missing``: what to do with trials some input lacks.
missing_arg = text_arg("error, drop or a finite fill value", _fill_or_policy)
#: ``--columns``: a column mapping.
columns_arg = text_arg("canonical=source pairs such as model=enroll,score=llr",
                       _column_mapping)
#: ``--objective``: a training objective.
objective_arg = text_arg("log, brier, boost, asym or 'alpha,beta'", _objective)
#: A prior (probability) in ``(0, 1)``, checked while parsing.
prior = probability_open("a prior", distinct=True)


def option_kind(action: argparse.Action) -> str | None:
    """The declared kind of an option's value: an :class:`OptionType` kind, or ``choice``.

    ``None`` for an option that takes a value but declares no kind (a test fails on it).
    """
    if action.choices is not None:
        return "choice"
    t = getattr(action, "converter", None) or action.type
    return t.kind if isinstance(t, OptionType) else None


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2.

    The line names the command, the problem, the command's usage and, when the line stays
    under 400 characters, the input files given (the arguments that exist as files, other
    than ``-o``, by file name): ``scoreframe evaluate: error: unrecognized arguments: --bogus
    (usage: scoreframe evaluate DATASET [options]; input `ds.parquet`)``.
    """

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]  # argparse's overloads; this override keeps the plain form
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        """Parse as argparse does, keeping the arguments for :meth:`error` to name inputs."""
        self._argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        return super().parse_known_args(args, namespace)

    def _inputs(self) -> str:
        argv = getattr(self, "_argv", [])
        files = [t for i, t in enumerate(argv) if t and not t.startswith("-")
                 and (i == 0 or argv[i - 1] not in ("-o", "--output")) and os.path.exists(t)]
        names = [os.path.basename(f.rstrip("/")) or f for f in files[:3]]
        shown = [f"`{printable(n) if len(n) <= 30 else '…' + printable(n[-29:])}`" for n in names]
        return "; input " + ", ".join(shown) if shown else ""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` and this command's usage on one line; exit with status 2.

        Values quoted by argparse itself (``invalid choice: '...'``) are cut, so the line stays
        a few hundred characters whatever was typed.
        """
        usage = " ".join(self.format_usage().split()).removeprefix("usage: ")
        text = re.sub(r"\S{61,}", lambda m: m.group(0)[:40] + "...", " ".join(message.split()))
        if len(text) > 300:
            text = text[:300] + "..."
        line = f"{self.prog}: error: {printable(text)} (usage: {usage}"
        inputs = self._inputs()
        self.exit(2, line + (inputs if len(line) + len(inputs) < 398 else "") + ")\n")


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help text with the range of every number option and ``(default: ...)`` after it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        t = getattr(action, "converter", None) or action.type
        if isinstance(t, OptionType) and t.kind in ("integer", "real", "size"):
            text += f"; {t.expected}".replace("%", "%%")
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS
                or (isinstance(default, list) and not default) or "%(default)" in text):
            return text
        if not (action.option_strings or action.nargs in ("?", "*")):
            return text
        shown = (",".join(str(v) for v in default) if isinstance(default, list | tuple)
                 else str(default))
        return text + f" (default: {shown.replace('%', '%%')})"


class ListAction(argparse.Action):
    """Collect values given with spaces, commas or by repeating the option.

    ``converter`` (an :class:`OptionType`; column names by default) turns each item into its
    value and checks it; with ``converter.distinct`` an item given twice is an error, and an
    option given with no item at all (``--by ""``) is one too. The last item of the last list
    option is kept aside when it cannot be converted, so that a dataset path swallowed by the
    list can be given back by :func:`restore_dataset`.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *,
                 converter: OptionType | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", "+")
        super().__init__(option_strings, dest, **kwargs)
        self.converter = converter if converter is not None else column_arg()

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        """Add the values of one occurrence of the option."""
        raw = [values] if isinstance(values, str) else list(values)
        seen = vars(namespace).setdefault("list_seen", set())
        items: list[Any] = list(getattr(namespace, self.dest, None) or []) if (
            self.dest in seen) else []
        seen.add(self.dest)
        unconverted = False
        expected = self.converter.expected
        for i, token in enumerate(raw):
            parts = [p.strip() for p in token.split(",") if p.strip()]
            try:
                if not parts:
                    raise argparse.ArgumentTypeError(
                        f"expected {expected} (or several, separated by commas or spaces); "
                        f"got {_shown(token)}")
                items.extend(self.converter(p) for p in parts)
            except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
                if i == len(raw) - 1 and i > 0:
                    unconverted = True
                    break
                parser.error(f"argument {option_string}: {exc}")
        if self.converter.distinct:
            twice = [v for j, v in enumerate(items) if v in items[:j]]
            if twice:
                parser.error(f"argument {option_string}: {_shown(str(twice[0]))} is given "
                             "twice; expected distinct values")
        setattr(namespace, self.dest, items)
        if len(raw) > 1:
            vars(namespace).setdefault("list_tails", []).append(
                (self.dest, raw[-1], unconverted))


def restore_dataset(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """Give back a positional swallowed by a list option (``--by a b DATASET``).

    The command's first positional (``ns.restorable``: its name and whether it is required)
    is taken from the last value of a list option: the one that is not a valid value of the
    option (``--p-target 0.1 DS``), else one that exists as a path, else (required
    positionals only) the last. An optional positional is restored only from an existing path.
    """
    name, required = getattr(ns, "restorable", ("dataset", True))
    joins, ons = getattr(ns, "join", None) or [], getattr(ns, "on", None) or []
    if len(joins) != len(ons):
        parser.error(f"each --join FILE needs its --on COL ... (got {len(joins)} --join, "
                     f"{len(ons)} --on)")
    if (name == "dataset" and hasattr(ns, "dataset") and hasattr(ns, "key")
            and (ns.key or getattr(ns, "scores", None))):
        if not (getattr(ns, "key", None) and getattr(ns, "scores", None)):
            parser.error("--key and --scores go together")
        if ns.dataset is not None:
            parser.error(f"give DATASET or --key and --scores, not both (got {ns.dataset!r})")
        return
    if not hasattr(ns, name) or getattr(ns, name) is not None:
        return
    tails = getattr(ns, "list_tails", [])
    pick = ([t for t in tails if t[2]] or [t for t in tails if Path(t[1]).exists()]
            or (tails[-1:] if required else []))
    if not pick or (not pick[-1][2] and "," in pick[-1][1]):
        if required:
            parser.error(f"the following arguments are required: {name.upper()}")
        return
    dest, token, unconverted = pick[-1]
    positional = next((a for a in parser._actions if a.dest == name), None)
    if positional is not None and callable(positional.type):
        try:
            positional.type(token)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            parser.error(f"argument {positional.metavar or name}: {exc}")
    if not unconverted:
        values = list(getattr(ns, dest))
        del values[len(values) - 1 - values[::-1].index(token)]
        setattr(ns, dest, values)
    setattr(ns, name, token)


def first_positional(p: argparse.ArgumentParser, name: str, *, required: bool = True,
                     **kwargs: Any) -> argparse.Action:
    """Add the positional ``name`` that list options may swallow (see :func:`restore_dataset`).

    It is declared optional to argparse and restored (or reported missing) after parsing.
    """
    p.set_defaults(restorable=(name, required))
    kwargs.setdefault("type", path_arg())
    return p.add_argument(name, nargs="?", **kwargs)


class Distinct(argparse.Action):
    """Store a fixed number of values (``nargs=2``) that must differ: ``--tandem ASV CM``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        """Store the values, or a usage error when one is given twice."""
        items = list(values)
        twice = [v for j, v in enumerate(items) if v in items[:j]]
        if twice:
            parser.error(f"argument {option_string}: {_shown(str(twice[0]))} is given twice; "
                         "expected distinct values")
        setattr(namespace, self.dest, items)


WHERE = text_arg("an SQL predicate")


def _check_table(text: str) -> None:
    name, eq, path = text.partition("=")
    if not (eq and name.strip() and path):
        raise ValueError(text)


TABLE = text_arg("NAME=PATH such as models=models.csv", _check_table)
WHERE_HELP = "SQL predicate selecting trials, e.g. \"gender = 'f'\""
DATASET_HELP = ("trial table: parquet file or dataset directory, csv, tsv, BOSARIS, NIST or "
                "Kaldi files")


def dataset_options(help_text: str = DATASET_HELP) -> argparse.ArgumentParser:
    """The positional ``DATASET`` (first in usage), or ``--key`` and ``--scores``; ``--where``."""
    p = argparse.ArgumentParser(add_help=False)
    first_positional(p, "dataset", metavar="DATASET", help=help_text)
    p.add_argument("--key", type=path_arg(),
                   help="instead of DATASET: a key or trial list (any format), aligned with "
                        "--scores as `convert --key --scores` does")
    p.add_argument("--scores", type=path_arg(),
                   help="instead of DATASET: the scores of the --key trials")
    _add_join(p)
    p.add_argument("--where", type=WHERE, help=WHERE_HELP)
    p.add_argument("--sql", type=path_arg(), metavar="FILE",
                   help="the trials are the result of this read-only SQL query over the table "
                        "`trials` (the Parquet DATASET) and the --table tables; it streams "
                        "(docs/sql.md)")
    p.add_argument("--table", action="append", type=TABLE, metavar="NAME=PATH", default=[],
                   help="with --sql: a table the query sees as NAME (parquet, csv, tsv or any "
                        "readable format); repeatable")
    return p


def _add_join(p: argparse.ArgumentParser) -> None:
    p.add_argument("--join", action="append", type=path_arg(), metavar="FILE", default=[],
                   help="a metadata table (parquet, csv, tsv) joined to the trials on the "
                        "columns of the --on that follows it; repeatable")
    p.add_argument("--on", action="append", nargs="+", type=column_arg(), metavar="COL",
                   default=[], help="the key columns of the --join before it")


def join_options() -> argparse.ArgumentParser:
    """``--join FILE --on COL ...`` alone (commands whose inputs are not one ``DATASET``)."""
    p = argparse.ArgumentParser(add_help=False)
    _add_join(p)
    return p


def where_option() -> argparse.ArgumentParser:
    """``--where`` alone (for commands whose inputs are not one ``DATASET``)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--where", type=WHERE, help=WHERE_HELP)
    return p


def reading_options() -> argparse.ArgumentParser:
    """How to read a file: ``--from``, ``--columns``, ``--trial-id``."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--from", dest="from_", choices=sio.format_names(readable=True),
                   help="input format (default: guessed from the file name and its first "
                        "lines)")
    p.add_argument("--columns", type=columns_arg,
                   help="column mapping canonical=source,... for tables with a header (csv, "
                        "tsv, parquet)")
    p.add_argument("--column-order", action=ListAction, converter=column_arg(distinct=True),
                   metavar="COL",
                   help="headerless lists (--from list): the fields of a line in order, "
                        "e.g. label model segment")
    p.add_argument("--trial-id", action=ListAction, metavar="COL",
                   help="columns identifying a trial (duplicates are checked on them; "
                        "default: model, segment and any id-like columns)")
    return p


def by_options() -> argparse.ArgumentParser:
    """``--by``: condition columns (the system column is always a group)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--by", action=ListAction, converter=column_arg(), default=[], metavar="COL",
                   help="condition columns, e.g. --by gender,channel or --by gender channel")
    return p


def operating_point_options(*, costs: bool = True, p_default: float | None = 0.01,
                            ) -> argparse.ArgumentParser:
    """``--p-target`` (one or more priors) and the costs ``--c-miss``/``--c-fa``."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--p-target", action=ListAction, converter=prior, metavar="P",
                   default=None if p_default is None else [p_default],
                   help="target prior(s) of the DCF operating points")
    if costs:
        cost = real_in(0.0, MAX_COST, lo_open=True, what="a cost")
        p.add_argument("--c-miss", type=cost, default=1.0, help="cost of a miss")
        p.add_argument("--c-fa", type=cost, default=1.0, help="cost of a false alarm")
    return p


def overwrite_option() -> argparse.ArgumentParser:
    """``--overwrite``."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    return p


def output_options(formats: Sequence[str] | None = None, *, default: str | None = None,
                   required: bool = False, help_text: str = "output file"
                   ) -> argparse.ArgumentParser:
    """``-o/--output``, ``--format`` (when ``formats`` is given) and ``--overwrite``."""
    p = argparse.ArgumentParser(add_help=False, parents=[overwrite_option()])
    p.add_argument("-o", "--output", type=path_arg(), required=required, help=help_text)
    if formats:
        p.add_argument("--format", choices=tuple(formats),
                       help=f"output format (default: from the suffix of -o, else {default})")
        p.set_defaults(format_default=default)
    return p


def max_line_bytes_option() -> argparse.ArgumentParser:
    """``--max-line-bytes``: the longest line a text input may have (every command)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--max-line-bytes", type=size_bytes(lo=1024, hi=1 << 30), default=None,
                   metavar="SIZE",
                   help="longest line accepted in a text input (a longer one is an error "
                        "naming the file and line) (default: 1MiB)")
    return p


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, *,
                help_text: str, parents: Sequence[argparse.ArgumentParser] = (),
                func: Callable[[argparse.Namespace], int] | None = None,
                first: str | None = None) -> argparse.ArgumentParser:
    """Add a sub-command whose help shows defaults; ``first`` names positionals led in usage.

    The parser is stored as the ``parser`` default so errors found after parsing (unknown
    options, a missing dataset) are answered with this command's usage.
    """
    p = sub.add_parser(name, help=help_text, description=help_text,
                       parents=[*parents, max_line_bytes_option()],
                       formatter_class=Formatter,
                       usage=f"%(prog)s {first} [options]" if first else None)
    p.set_defaults(parser=p)
    if func is not None:
        p.set_defaults(func=func)
    return p


def engine_options(*, accepted: Collection[str] = ENGINE_OPTIONS) -> argparse.ArgumentParser:
    """Where and how trials are reduced: the one parent parser of the engine options.

    ``--engine``, ``--memory-limit``, ``--workers``, ``--scheduler`` and ``--spill-dir`` are
    defined here only, for every command that reads trials.

    ``accepted`` names the ones the command's library call takes (its keywords, see
    :data:`ENGINE_OPTIONS`); :func:`engine_kwargs` turns the parsed values back into them.
    """
    unknown = set(accepted) - set(ENGINE_OPTIONS)
    if unknown:
        raise ValueError(f"unknown engine options {sorted(unknown)}")
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("engine")
    if "engine" in accepted:
        g.add_argument("--engine", choices=ENGINES, default=ENGINES[0],
                       help="auto: in memory when the selected trials fit in --memory-limit, "
                            "else out of core; memory: always in memory; streaming: always "
                            "out of core (score ranges spilled to a temporary directory); "
                            "dask: the out-of-core tasks on Dask workers")
    if "memory_limit" in accepted:
        g.add_argument("--memory-limit", type=size_bytes(), default="1GiB", metavar="SIZE",
                       help="memory budget of the reduction's data, e.g. 2GB or 512MiB: above "
                            "it the trials are reduced out of core, in score ranges and "
                            "batches sized to it (the Python process and its libraries take "
                            "~250 MB more); results do not depend on it")
    if "workers" in accepted:
        g.add_argument("--workers", type=int_in(1, MAX_WORKERS), default=None, metavar="N",
                       help="parallel tasks: threads in this process, or the worker "
                            "processes of a local Dask cluster (with --scheduler: wait for N "
                            "workers); default: the number of cores")
    if "scheduler" in accepted:
        g.add_argument("--scheduler", type=scheduler_address(), default=None,
                       metavar="ADDRESS",
                       help="address of a running Dask scheduler, tcp://host:port (with "
                            "--engine dask); it must answer within 10 s")
    if "spill_dir" in accepted:
        g.add_argument("--spill-dir", type=path_arg("a directory"), default=None,
                       metavar="DIR",
                       help="where the out-of-core engine spills score ranges (default: "
                            "$SCOREFRAME_SPILL_DIR or the temp dir); on a Dask cluster, a "
                            "directory every worker can see")
    return p


def engine_of(a: argparse.Namespace) -> Engine:
    """The :class:`~scoreframe.Engine` of the engine options a command has.

    Raises
    ------
    UsageError
        ``--scheduler`` without ``--engine dask``.
    EngineError
        ``--engine dask`` without Dask installed (the message names the install).
    """
    kw = {k: getattr(a, k) for k in ENGINE_OPTIONS if getattr(a, k, None) is not None}
    kind = kw.pop("engine", ENGINES[0])
    if kw.get("scheduler") and kind != "dask":
        raise UsageError(message("--scheduler needs --engine dask", got=kw["scheduler"]))
    return Engine(kind, **kw)


def engine_kwargs(a: argparse.Namespace) -> dict[str, Any]:
    """``{"engine": engine_of(a)}``: the library keyword of the engine options."""
    return {"engine": engine_of(a)}
