"""Shared argument groups of the command line, defined once as argparse parent parsers.

A command builds its parser from these parents (``parents=[dataset_options(), ...]``) so every
command spells, documents and defaults an option the same way.

List options (``--by``, ``--p-target``, ...) take space- or comma-separated values and may be
repeated: ``--by gender,channel``, ``--by gender channel`` and ``--by gender --by channel`` are
the same. When such an option comes just before the dataset (``--by gender channel DATASET``)
and swallows it, the dataset is given back (see :func:`restore_dataset`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from scoreframe import io as sio
from scoreframe.errors import clip, printable

__all__ = ["Formatter", "ListAction", "Parser", "add_command", "by_options", "dataset_options",
           "first_positional", "operating_point_options", "output_options", "overwrite_option",
           "prior", "reading_options", "restore_dataset", "where_option"]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2.

    The line names the command, the problem and the command's usage:
    ``scoreframe evaluate: error: unrecognized arguments: --bogus (usage: scoreframe evaluate
    DATASET [options])``.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``message`` and this command's usage on one line; exit with status 2."""
        usage = " ".join(self.format_usage().split()).removeprefix("usage: ")
        self.exit(2, f"{self.prog}: error: {printable(clip(message, 300))} (usage: {usage})\n")


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help text with ``(default: ...)`` after every option that has a default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS
                or (isinstance(default, list) and not default) or "%(default)" in text):
            return text
        if not (action.option_strings or action.nargs in ("?", "*")):
            return text
        shown = (",".join(str(v) for v in default) if isinstance(default, list | tuple)
                 else str(default))
        return text + f" (default: {shown.replace('%', '%%')})"


def prior(text: str) -> float:
    """A prior (probability) in ``(0, 1)`` from the command line, checked while parsing.

    >>> prior("0.01")
    0.01
    """
    value = float(text)
    if not 0.0 < value < 1.0:
        raise ValueError("expected a prior in (0, 1)")
    return value


class ListAction(argparse.Action):
    """Collect values given with spaces, commas or by repeating the option.

    ``converter`` turns each item into its value (``float`` for priors). The last item of the
    last list option is kept aside when it cannot be converted, so that a dataset path
    swallowed by the list can be given back by :func:`restore_dataset`.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *,
                 converter: Callable[[str], Any] = str, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", "+")
        super().__init__(option_strings, dest, **kwargs)
        self.converter = converter

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        """Add the values of one occurrence of the option."""
        raw = [values] if isinstance(values, str) else list(values)
        seen = vars(namespace).setdefault("list_seen", set())
        items: list[Any] = list(getattr(namespace, self.dest, None) or []) if (
            self.dest in seen) else []
        seen.add(self.dest)
        unconverted = False
        for i, token in enumerate(raw):
            parts = [p.strip() for p in token.split(",") if p.strip()]
            try:
                items.extend(self.converter(p) for p in parts)
            except (TypeError, ValueError) as exc:
                if i == len(raw) - 1 and i > 0:
                    unconverted = True
                    break
                why = f" ({exc})" if str(exc).startswith("expected") else ""
                parser.error(f"argument {option_string}: invalid value {token!r}{why}")
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
    return p.add_argument(name, nargs="?", **kwargs)


DATASET_HELP = ("trial table: parquet file or dataset directory, csv, tsv, BOSARIS, NIST or "
                "Kaldi files")


def dataset_options(help_text: str = DATASET_HELP) -> argparse.ArgumentParser:
    """The positional ``DATASET`` (first in usage), or ``--key`` and ``--scores``; ``--where``."""
    p = argparse.ArgumentParser(add_help=False)
    first_positional(p, "dataset", metavar="DATASET", help=help_text)
    p.add_argument("--key", help="instead of DATASET: a key or trial list (any format), "
                                 "aligned with --scores as `convert --key --scores` does")
    p.add_argument("--scores", help="instead of DATASET: the scores of the --key trials")
    p.add_argument("--join", action="append", metavar="FILE", default=[],
                   help="a metadata table (parquet, csv, tsv) joined to the trials on the "
                        "columns of the --on that follows it; repeatable")
    p.add_argument("--on", action="append", nargs="+", metavar="COL", default=[],
                   help="the key columns of the --join before it")
    p.add_argument("--where", help="SQL predicate selecting trials, e.g. \"gender = 'f'\"")
    return p


def where_option() -> argparse.ArgumentParser:
    """``--where`` alone (for commands whose inputs are not one ``DATASET``)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--where", help="SQL predicate selecting trials, e.g. \"gender = 'f'\"")
    return p


def reading_options() -> argparse.ArgumentParser:
    """How to read a file: ``--from``, ``--columns``, ``--trial-id``."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--from", dest="from_", choices=sio.format_names(readable=True),
                   help="input format (default: guessed from the file name and its first "
                        "lines)")
    p.add_argument("--columns", help="column mapping canonical=source,... for tables with a "
                                     "header (csv, tsv, parquet)")
    p.add_argument("--column-order", action=ListAction, metavar="COL",
                   help="headerless lists (--from list): the fields of a line in order, "
                        "e.g. label model segment")
    p.add_argument("--trial-id", action=ListAction, metavar="COL",
                   help="columns identifying a trial (duplicates are checked on them; "
                        "default: model, segment and any id-like columns)")
    return p


def by_options() -> argparse.ArgumentParser:
    """``--by``: condition columns (the system column is always a group)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--by", action=ListAction, default=[], metavar="COL",
                   help="condition columns, e.g. --by gender,channel or --by gender channel")
    return p


def operating_point_options(*, costs: bool = True, p_default: float | None = 0.01,
                            ) -> argparse.ArgumentParser:
    """``--p-target`` (one or more priors) and the costs ``--c-miss``/``--c-fa``."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--p-target", action=ListAction, converter=float, metavar="P",
                   default=None if p_default is None else [p_default],
                   help="target prior(s) of the DCF operating points")
    if costs:
        p.add_argument("--c-miss", type=float, default=1.0, help="cost of a miss")
        p.add_argument("--c-fa", type=float, default=1.0, help="cost of a false alarm")
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
    p.add_argument("-o", "--output", required=required, help=help_text)
    if formats:
        p.add_argument("--format", choices=tuple(formats),
                       help=f"output format (default: from the suffix of -o, else {default})")
        p.set_defaults(format_default=default)
    return p


def add_command(sub: argparse._SubParsersAction, name: str, *, help_text: str,
                parents: Sequence[argparse.ArgumentParser] = (),
                func: Callable[[argparse.Namespace], int] | None = None,
                first: str | None = None) -> argparse.ArgumentParser:
    """Add a sub-command whose help shows defaults; ``first`` names positionals led in usage.

    The parser is stored as the ``parser`` default so errors found after parsing (unknown
    options, a missing dataset) are answered with this command's usage.
    """
    p = sub.add_parser(name, help=help_text, description=help_text, parents=list(parents),
                       formatter_class=Formatter,
                       usage=f"%(prog)s {first} [options]" if first else None)
    p.set_defaults(parser=p)
    if func is not None:
        p.set_defaults(func=func)
    return p
