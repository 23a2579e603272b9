r"""Printing for the command line: rich console and progress, number formatting, tables.

Views layer: nothing here computes a metric; it formats frames the library returns.

Data is shown as data. Every value, column name, path and message goes through :func:`shown`
(or :func:`say` for a whole line) before it reaches the terminal: control characters (ESC, C0
and C1 controls, newlines, tabs, bidirectional marks, zero-width characters) become visible
escapes (``\x1b``, ``\n``, ``\u202e``), very long values are cut with an ellipsis and their
length, and tables are built from :class:`rich.text.Text` cells on a console with markup, emoji
codes and highlighting off, so ``[b]x``, ``[/]`` and ``:x:`` print as typed.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

import polars as pl

from scoreframe.errors import UsageError, clip, printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

__all__ = ["CELL_LIMIT", "LINE_LIMIT", "LineProgress", "console", "emit_frame", "fmt",
           "json_safe", "percent", "print_frame", "print_table", "progress", "say", "shown",
           "write_text_output"]

#: Longest value shown in a table cell, a header or a path inside a line (characters).
CELL_LIMIT = 100
#: Longest line :func:`say` prints (characters, before escapes).
LINE_LIMIT = 1000


def shown(value: object, *, limit: int = CELL_LIMIT) -> str:
    r"""Any value as console text: ``str``, control characters escaped, cut at ``limit``.

    A value longer than ``limit`` characters keeps its first ``limit`` characters, then an
    ellipsis and its full length; ``None`` is empty. Markup (``[b]``), emoji codes (``:x:``)
    and backslashes are left as they are: the console prints them literally.

    Examples
    --------
    >>> shown("[b]f"), shown("a\x1b[31mb"), shown("x\ny"), shown(None)
    ('[b]f', 'a\\x1b[31mb', 'x\\ny', '')
    >>> shown("L" * 10_000, limit=4)
    'LLLL… (10,000 characters)'
    """
    return "" if value is None else printable(clip(str(value), limit))


def say(text: str, *, err: bool = False) -> None:
    r"""Print one line as plain text, control characters escaped, cut at :data:`LINE_LIMIT`.

    The line is never parsed for markup. Values inside it should go through :func:`shown`
    first, so that a long one is cut where it stands rather than at the end of the line.

    Examples
    --------
    >>> say("wrote a\x1b]0;title\x07.csv")
    wrote a\x1b]0;title\x07.csv
    """
    print(printable(clip(text, LINE_LIMIT)), file=sys.stderr if err else sys.stdout)


def console() -> Console:
    """A rich console on stdout (wide when stdout is not a terminal); markup and emoji off."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200, markup=False, emoji=False,
                   highlight=False)


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
        print(f"scoreframe: {shown(t['description'])} {done}, {now - t['start']:.0f} s)",
              file=self.stream or sys.stderr, flush=True)


def progress() -> Progress | LineProgress:
    """A transient rich progress bar on a terminal; periodic one-line progress in logs.

    Task descriptions are shown as plain text (:func:`shown`), never parsed for markup.
    """
    if not sys.stderr.isatty():
        return LineProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    class _PlainProgress(Progress):
        def add_task(self, description: str, *args: Any, **kwargs: Any) -> TaskID:
            return super().add_task(shown(description), *args, **kwargs)

        def update(self, task_id: TaskID, *args: Any, description: str | None = None,
                   **kwargs: Any) -> None:
            super().update(task_id, *args, description=None if description is None
                           else shown(description), **kwargs)

    return _PlainProgress(TextColumn("{task.description}", style="progress.description",
                                     markup=False), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(),
                          console=Console(stderr=True, markup=False, emoji=False,
                                          highlight=False),
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
    return "" if v is None else f"{100 * float(v):.2f}"  # type: ignore[arg-type]  # v is a number from a result row (typed object)


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
    """One block of :func:`print_table` (same arguments, already :func:`shown`).

    Every cell, header and the title is a :class:`rich.text.Text`, so nothing is parsed as
    markup or emoji; a cell too wide wraps, never cut.
    """
    from rich.table import Table
    from rich.text import Text

    t = Table(title=Text(title) if title else None)
    for i, name in enumerate(header):
        t.add_column(Text(name), justify="left" if i in left else "right", overflow="fold")
    for r in rows:
        t.add_row(*(Text(c) for c in r))
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
        The cells, already formatted as text; each is shown with :func:`shown` (control
        characters escaped, cut at :data:`CELL_LIMIT` characters), as are the column names and
        the title.
    key
        Indices of the columns repeated in every block.
    left
        Indices of the left-aligned columns (the others are right-aligned).
    title
        Printed above the first block.
    """
    from rich.cells import cell_len

    header = [shown(h) for h in header]
    rows = [[shown(c) for c in r] for r in rows]
    title = None if title is None else shown(title, limit=LINE_LIMIT)
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
    say(f"wrote {shown(output)}")


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
        say(f"wrote {df.height} rows to {shown(output)}")
        return
    if fmt_name == "parquet":
        raise UsageError("--format parquet needs -o FILE")
    if fmt_name == "csv":
        sys.stdout.write(_terminal_safe(df).write_csv() if sys.stdout.isatty()
                         else df.write_csv())
    elif fmt_name == "json":
        print(json.dumps(df.to_dicts(), default=str, indent=1))
    else:
        print_frame(df.head(1000))
        if df.height > 1000:
            say(f"... {df.height - 1000} more rows (use -o to write them all)")


def _terminal_safe(df: pl.DataFrame) -> pl.DataFrame:
    r"""CSV for a terminal: control characters of text cells and names escaped (not cut).

    CSV written to a pipe or a file is the data byte for byte; on a terminal, an ESC or a
    bidirectional mark inside a value would act on the terminal, so it is shown as ``\x1b``.

    Examples
    --------
    >>> _terminal_safe(pl.DataFrame({"a\tb": ["x\x1by", None]})).rows()
    [('x\\x1by',), (None,)]
    """
    text = [c for c, t in df.schema.items() if t == pl.String]
    return df.with_columns(pl.col(c).map_elements(printable, return_dtype=pl.String)
                           for c in text).rename({c: printable(c) for c in df.columns})
