"""``scoreframe compare``: paired bootstrap comparison of two systems on the same trials.

Also defines the interval options (``--bootstrap``, ``--ci``, ``--resample``, ``--seed``,
``--interval``) once, for ``compare`` and for ``evaluate`` (:func:`add_interval_options`,
:func:`intervals_of`).
"""

from __future__ import annotations

import argparse

import polars as pl

from scoreframe.cli.console import emit_frame, fmt, percent, print_table
from scoreframe.cli.inputs import check_output_format, dataset_source
from scoreframe.cli.options import (
    MAX_BOOTSTRAP,
    MAX_SEED,
    ListAction,
    add_command,
    by_options,
    column_arg,
    dataset_options,
    engine_of,
    engine_options,
    int_in,
    name_arg,
    operating_point_options,
    output_options,
    probability_open,
    reading_options,
)
from scoreframe.errors import UsageError, message
from scoreframe.metrics import Intervals, OperatingPoints
from scoreframe.metrics.registry import declared
from scoreframe.results.bootstrap import DEFAULT_INTERVALS
from scoreframe.results.compare import compare

__all__ = ["add_interval_options", "cmd_compare", "format_interval", "intervals_of",
           "register"]


def add_interval_options(p: argparse.ArgumentParser, *, bootstrap_default: int | None = None
                         ) -> None:
    """Add ``--bootstrap B``, ``--ci``, ``--resample``, ``--seed`` and ``--interval``.

    With ``bootstrap_default=None`` (``evaluate``) no intervals are computed unless
    ``--bootstrap`` is given.
    """
    g = p.add_argument_group("confidence intervals")
    g.add_argument("--bootstrap", type=int_in(2, MAX_BOOTSTRAP), default=bootstrap_default,
                   metavar="B", help="bootstrap replicates (intervals for every metric)")
    g.add_argument("--ci", type=probability_open("a coverage"), default=0.95,
                   help="nominal coverage of the intervals")
    g.add_argument("--resample", action=ListAction, converter=column_arg(distinct=True),
                   default=["trial"], metavar="UNIT",
                   help="resampling units: trial, or id columns resampled independently "
                        "(model segment: the two-way bootstrap for shared speakers)")
    g.add_argument("--seed", type=int_in(0, MAX_SEED), default=0,
                   help="seed of the replicates (same seed, same intervals on any number of "
                        "workers and any file layout)")
    g.add_argument("--interval", choices=("percentile", "bca"), default="percentile",
                   help="interval method")


def intervals_of(a: argparse.Namespace) -> Intervals | None:
    """The :class:`~scoreframe.metrics.Intervals` of the interval options (``None``: none)."""
    if a.bootstrap is None:  # its range is checked while parsing (--bootstrap B)
        given = [o for o, v, default in (("--ci", a.ci, 0.95), ("--resample", a.resample,
                                         ["trial"]), ("--interval", a.interval, "percentile"))
                 if v != default]
        if given:
            raise UsageError(f"{', '.join(given)} set how intervals are computed, and "
                             "intervals need --bootstrap B (e.g. --bootstrap 1000)")
        return None
    return Intervals(bootstrap=a.bootstrap, ci=a.ci, resample=tuple(a.resample), seed=a.seed,
                     method=a.interval)


def format_interval(value: object, lo: object, hi: object, *, rate: bool = False) -> str:
    """``value [lo, hi]`` for a table cell; ``rate=True`` shows percentages (two decimals).

    Examples
    --------
    >>> format_interval(0.1234, 0.1, 0.15)
    '0.1234 [0.1000, 0.1500]'
    >>> format_interval(3.0, None, None)
    '3.0000'
    >>> format_interval(0.0564, 0.046, 0.0659, rate=True)
    '5.64 [4.60, 6.59]'
    """
    cell = percent if rate else fmt
    if lo is None or hi is None:
        return cell(value)
    return f"{cell(value)} [{cell(lo)}, {cell(hi)}]"


def cmd_compare(a: argparse.Namespace) -> int:
    """Run ``scoreframe compare``."""
    if len(a.systems) != 2:
        raise UsageError(message("--systems needs exactly two system names",
                                 got=" ".join(a.systems) or "none"))
    check_output_format(a, machine=("json", "csv", "parquet"))
    iv = intervals_of(a)
    res = compare(dataset_source(a), a.systems[0], a.systems[1], by=a.by, where=a.where,
                  operating_points=OperatingPoints(tuple(a.p_target), a.c_miss, a.c_fa),
                  intervals=iv or DEFAULT_INTERVALS, engine=engine_of(a),
                  validate=getattr(a, "trial_id", None) or True)
    if a.format != "table":
        emit_frame(res, a.format, a.output, a.overwrite)
        return 0
    print_comparison(res, a.systems[0], a.systems[1], ci=a.ci)
    return 0


def print_comparison(res: pl.DataFrame, a: str, b: str, *, ci: float) -> None:
    """The comparison as a table: ``diff [lo, hi]`` and p-values.

    Rates (the metrics declared with unit ``%``, e.g. ``eer``) are shown in percent with two
    decimals and named ``eer (%)``, as in every console table; frames and JSON keep fractions.
    """
    rates = {m.name for m in declared(family=None) if m.unit == "%"}
    group = res.columns[: res.columns.index("metric")]
    header = [*group, "metric", "p_target", a, b, "diff", "p_value", "test"]
    rows = []
    for row in res.iter_rows(named=True):
        counts = row["test"] == "mcnemar exact"  # error counts: integers
        rate = row["metric"] in rates
        cell = ((lambda v: "" if v is None else str(round(v))) if counts
                else percent if rate else fmt)
        rows.append([*[str(row[c]) for c in group],
                     f"{row['metric']} (%)" if rate else row["metric"], fmt(row["p_target"]),
                     cell(row["a"]), cell(row["b"]),
                     cell(row["diff"]) if counts else
                     format_interval(row["diff"], row["diff_lo"], row["diff_hi"], rate=rate),
                     f"{row['p_value']:.3g}" if row["p_value"] is not None else "",
                     row["test"]])
    n = len(group)
    print_table(header, rows, key=range(n + 2), left=[*range(n + 1), len(header) - 1],
                title=f"{b} - {a}: paired bootstrap ({100 * ci:g} % intervals) and McNemar "
                      "tests")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``compare`` to the command line."""
    c = add_command(sub, "compare", func=cmd_compare, first="DATASET --systems A B",
                    help_text="paired comparison of two systems on the same trials "
                              "(bootstrap intervals of the differences, McNemar tests)",
                    parents=[dataset_options(), reading_options(), by_options(),
                             operating_point_options(),
                             output_options(("table", "json", "csv", "parquet"),
                                            default="table"),
                             engine_options()])
    c.add_argument("--systems", action=ListAction, converter=name_arg(distinct=True), default=[],
                   metavar="SYSTEM", required=True,
                   help="the two systems A and B (differences are B - A)")
    add_interval_options(c, bootstrap_default=1000)
