"""Printing for the command line: rich console and progress, number formatting, tables.

Views layer: nothing here computes a metric; it formats frames the library returns.
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING

import polars as pl

from scoreframe.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__ = ["console", "emit_frame", "fmt", "json_safe", "print_frame", "progress",
           "write_text_output"]


def console() -> Console:
    """A rich console on stdout (wide when stdout is not a terminal)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def progress() -> Progress:
    """A transient rich progress bar on stderr (shown only on a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress("[progress.description]{task.description}", BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True),
                    transient=True, disable=not sys.stderr.isatty())


def fmt(v: object) -> str:
    """One table cell: floats with 4 decimals (1 above 10), nulls empty.

    Examples
    --------
    >>> fmt(0.123456), fmt(123.456), fmt(None), fmt(3)
    ('0.1235', '123.5', '', '3')
    """
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}"
    return "" if v is None else str(v)


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


def print_frame(df: pl.DataFrame, title: str | None = None, *,
                left: tuple[str, ...] = ()) -> None:
    """Print a frame as a rich table (columns in ``left`` left-aligned)."""
    from rich.table import Table

    t = Table(title=title or None)
    for c in df.columns:
        t.add_column(c, justify="left" if c in left else "right")
    for row in df.iter_rows():
        t.add_row(*[fmt(v) for v in row])
    console().print(t)


def write_text_output(text: str, output: str | None, *, overwrite: bool) -> None:
    """Write ``text`` atomically to ``output``, or print it when there is no output."""
    if not output:
        print(text)
        return
    from scoreframe.io.atomic import atomic_output

    with atomic_output(output, overwrite=overwrite) as out:
        out.write_text(text)


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
