"""Printing for the command line: rich console and progress, number formatting, tables.

Views layer: nothing here computes a metric; it formats frames the library returns.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

import polars as pl

from scoreframe.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

__all__ = ["LineProgress", "console", "emit_frame", "fmt", "json_safe", "print_frame",
           "percent", "print_table", "progress", "write_text_output"]


def console() -> Console:
    """A rich console on stdout (wide when stdout is not a terminal)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


class LineProgress:
    """Progress for logs (stderr not a terminal): one plain line now and then.

    A line ``scoreframe: <task> 40% (400/1000 done, 12 s)`` is printed when ``interval``
    seconds have passed since the last line, or when a further 10 % is done once ``interval``
    seconds have passed since the start; runs shorter than ``interval`` print nothing. The
    interface is the part of :class:`rich.progress.Progress` the commands use.

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> with LineProgress(interval=0, stream=buf) as prog:
    ...     t = prog.add_task("evaluating groups", total=4)
    ...     for i in range(1, 5):
    ...         prog.update(t, completed=i)
    >>> buf.getvalue().splitlines()[-1].split(" (")[0]
    'scoreframe: evaluating groups 100%'
    """

    def __init__(self, *, interval: float = 10.0, stream: TextIO | None = None) -> None:
        self.interval = interval
        self.stream = stream
        self.tasks: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, **_: object) -> TaskID:
        """Start a task; return its id."""
        now = time.monotonic()
        tid = cast("TaskID", len(self.tasks))
        self.tasks[tid] = {"description": description, "total": total, "completed": 0,
                           "start": now, "last": now, "decile": 0}
        return tid

    def update(self, task: int, *, completed: float | None = None, total: float | None = None,
               description: str | None = None, advance: float | None = None,
               **_: object) -> None:
        """Record progress; print a line when one is due."""
        t = self.tasks[task]
        if description is not None:
            t["description"] = description
        if total is not None:
            t["total"] = total
        if completed is not None:
            t["completed"] = completed
        if advance is not None:
            t["completed"] += advance
        now = time.monotonic()
        total_ = t["total"]
        decile = int(10 * t["completed"] / total_) if total_ else 0
        due = now - t["last"] >= self.interval or (
            decile > t["decile"] and now - t["start"] >= self.interval)
        if not due:
            return
        t["last"], t["decile"] = now, decile
        done = (f"{100 * t['completed'] / total_:.0f}% ({t['completed']:g}/{total_:g} done"
                if total_ else f"({t['completed']:g} done")
        print(f"scoreframe: {t['description']} {done}, {now - t['start']:.0f} s)",
              file=self.stream or sys.stderr, flush=True)


def progress() -> Progress | LineProgress:
    """A transient rich progress bar on a terminal; periodic one-line progress in logs."""
    if not sys.stderr.isatty():
        return LineProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress("[progress.description]{task.description}", BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True),
                    transient=True)


def fmt(v: object) -> str:
    """One table cell: floats with 4 decimals, nulls empty.

    Values of 10 and more get 1 decimal; values below 0.001 get 3 significant digits, so a
    small prior is not shown as 0.

    Examples
    --------
    >>> fmt(0.123456), fmt(123.456), fmt(None), fmt(3), fmt(1e-05), fmt(0.0)
    ('0.1235', '123.5', '', '3', '1e-05', '0.0000')
    """
    if isinstance(v, float):
        if 0 < abs(v) < 1e-3:
            return f"{v:.3g}"
        return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}"
    return "" if v is None else str(v)


def percent(v: object) -> str:
    """A rate as a percentage with two decimals (the report's EER format).

    Examples
    --------
    >>> percent(0.07742), percent(None)
    ('7.74', '')
    """
    return "" if v is None else f"{100 * float(v):.2f}"  # type: ignore[arg-type]


def json_safe(v: object) -> object:
    """Replace non-finite floats by ``None`` (JSON has no NaN), recursively.

    Examples
    --------
    >>> json_safe({"a": [1.0, float("nan")]})
    {'a': [1.0, None]}
    """
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_safe(x) for x in v]
    return v


def _rich_table(header: Sequence[str], rows: Sequence[Sequence[str]], *,
                left: Sequence[int] = (), title: str | None = None) -> Table:
    """One block of :func:`print_table` (same arguments); a cell too wide wraps, never cut."""
    from rich.table import Table

    t = Table(title=title or None)
    for i, name in enumerate(header):
        t.add_column(name, justify="left" if i in left else "right", overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], *,
                key: Sequence[int] = (), left: Sequence[int] = (),
                title: str | None = None) -> None:
    """Print a table whole: on a narrow terminal, in column blocks that each fit.

    When the table is wider than the terminal, the columns after the ``key`` columns (e.g.
    the condition) are split into blocks printed one under the other, each repeating the key
    columns, as pandas does with wide frames. Values wrap onto further lines (never cut) only
    when the key columns and one more column alone are wider than the terminal.

    Parameters
    ----------
    header
        Column names.
    rows
        The cells, already formatted as text.
    key
        Indices of the columns repeated in every block.
    left
        Indices of the left-aligned columns (the others are right-aligned).
    title
        Printed above the first block.
    """
    from rich.cells import cell_len

    out = console()
    width = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) + 3
             for i, h in enumerate(header)]
    keys = [i for i in key if i < len(header)]
    rest = [i for i in range(len(header)) if i not in keys]
    base = 1 + sum(width[i] for i in keys)
    blocks: list[list[int]] = [[]]
    used = base
    for i in rest:
        if blocks[-1] and used + width[i] > out.width:
            blocks.append([])
            used = base
        blocks[-1].append(i)
        used += width[i]
    for n, block in enumerate(blocks):
        cols = [*keys, *block]
        out.print(_rich_table([header[i] for i in cols], [[r[i] for i in cols] for r in rows],
                              left=[j for j, i in enumerate(cols) if i in left],
                              title=title if n == 0 else None))


def print_frame(df: pl.DataFrame, title: str | None = None, *,
                left: tuple[str, ...] = (), right: tuple[str, ...] = ()) -> None:
    """Print a frame as a rich table: numbers right-aligned, text (and ``left``) left-aligned.

    The ``left`` columns are the keys repeated in every block on a narrow terminal
    (:func:`print_table`); ``right`` text columns (numbers formatted beforehand) are
    right-aligned.
    """
    rows = [[fmt(v) for v in row] for row in df.iter_rows()]
    lefts = [i for i, (c, dtype) in enumerate(df.schema.items())
             if c in left or (not dtype.is_numeric() and c not in right)]
    print_table(df.columns, rows, key=[i for i, c in enumerate(df.columns) if c in left],
                left=lefts, title=title)


def write_text_output(text: str, output: str | None, *, overwrite: bool) -> None:
    """Write ``text`` atomically to ``output``, or print it when there is no output."""
    if not output:
        print(text)
        return
    from scoreframe.io.atomic import atomic_output

    with atomic_output(output, overwrite=overwrite) as out:
        out.write_text(text)
    print(f"wrote {output}")


def emit_frame(df: pl.DataFrame, fmt_name: str, output: str | None, overwrite: bool) -> None:
    """Print or write a frame as a table, CSV, JSON or Parquet."""
    if output:
        from scoreframe.io.atomic import atomic_output

        with atomic_output(output, overwrite=overwrite) as out:
            if fmt_name == "parquet" or (fmt_name == "table" and output.endswith(".parquet")):
                df.write_parquet(out)
            elif fmt_name == "json":
                out.write_text(json.dumps(df.to_dicts(), default=str, indent=1))
            else:
                df.write_csv(out)
        print(f"wrote {df.height} rows to {output}")
        return
    if fmt_name == "parquet":
        raise UsageError("--format parquet needs -o FILE")
    if fmt_name == "csv":
        sys.stdout.write(df.write_csv())
    elif fmt_name == "json":
        print(json.dumps(df.to_dicts(), default=str, indent=1))
    else:
        print_frame(df.head(1000))
        if df.height > 1000:
            print(f"... {df.height - 1000} more rows (use -o to write them all)")
