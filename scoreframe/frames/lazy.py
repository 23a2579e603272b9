"""Trial data as Polars LazyFrames: the one entry point from user data to the frame layer.

Every public function that takes trials (``evaluate``, curves, reports, calibration, fusion)
accepts the same inputs through :func:`as_lazy`: a path (Parquet file, glob or hive dataset,
scanned lazily; a file of any other registered format, read and checked as the command line
reads it), a Polars DataFrame or LazyFrame, a pandas DataFrame, a pyarrow Table or a DuckDB
relation (streamed in record batches, see :mod:`scoreframe.frames._sql_tables`). It
imports nothing from the statistics layer or the views.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias, TypeGuard

import polars as pl

from scoreframe.errors import FormatError, Place, ScoreframeError, message
from scoreframe.io import guess_format, scan_trials
from scoreframe.io.parquet import apply_where

__all__ = ["ARROW_DATASETS", "ARROW_TYPES", "ArrowDataset", "ArrowStream", "By", "Data",
           "as_lazy", "by_columns", "is_frame_like", "parquet_source", "path_format"]

#: pyarrow in-memory frames.
ARROW_TYPES = ("Table", "RecordBatch")
#: pyarrow datasets, scanned lazily (``pyarrow.dataset.dataset(...)``); not frame-like.
ARROW_DATASETS = ("FileSystemDataset", "InMemoryDataset", "UnionDataset")

class ArrowStream(Protocol):
    """A frame that exports the Arrow C stream interface: a pandas DataFrame, a pyarrow Table."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow C stream capsule (the Arrow PyCapsule interface)."""


class ArrowDataset(Protocol):
    """A pyarrow dataset (``pyarrow.dataset.dataset(...)``), scanned lazily."""

    def scanner(self, *args: object, **kwargs: object) -> object:
        """A scanner over the dataset's fragments."""


#: Anything :func:`as_lazy` accepts: the one type of trial data of every entry point.
Data: TypeAlias = pl.DataFrame | pl.LazyFrame | str | Path | ArrowStream | ArrowDataset
#: What ``by=`` accepts: column names, or one comma-separated string.
By: TypeAlias = Sequence[str] | str | None


def by_columns(by: By) -> list[str]:
    """The columns of a ``by=`` value: a list, or a comma-separated string (the one normalizer).

    >>> by_columns("gender,channel"), by_columns(["gender"]), by_columns(None)
    (['gender', 'channel'], ['gender'], [])
    """
    if by is None:
        return []
    items = by.split(",") if isinstance(by, str) else list(by)
    return [c.strip() if isinstance(c, str) else c for c in items if c != ""]


def is_frame_like(data: object) -> TypeGuard[pl.DataFrame | pl.LazyFrame | ArrowStream]:
    """True for Polars/pandas DataFrames, LazyFrames and pyarrow Tables (in-memory frames)."""
    if isinstance(data, pl.DataFrame | pl.LazyFrame):
        return True
    mod = type(data).__module__
    return (mod.startswith("pandas") and type(data).__name__ == "DataFrame") or (
        mod.startswith("pyarrow") and type(data).__name__ in ARROW_TYPES)


def as_lazy(data: Data, *, where: str | None = None) -> pl.LazyFrame:
    """Trials as a LazyFrame, with an optional SQL ``where`` predicate applied.

    A pandas DataFrame keeps a named (non-default) index as columns, e.g. a ``model, segment``
    MultiIndex; a pyarrow dataset (``pyarrow.dataset.dataset(...)``) is scanned lazily.

    Examples
    --------
    >>> import pyarrow as pa
    >>> as_lazy(pa.table({"score": [1.0, 2.0]}), where="score > 1").collect()["score"].to_list()
    [2.0]
    """
    if isinstance(data, str | Path):
        return scan_trials(data, where=where)  # any registered format, through the registry
    if isinstance(data, pl.LazyFrame):
        return apply_where(data, where, source=f"the {type(data).__name__} given")
    if isinstance(data, pl.DataFrame):
        return apply_where(data.lazy(), where, source="the DataFrame given")
    mod = type(data).__module__
    name = type(data).__name__
    if mod.startswith("pyarrow") and name in ARROW_DATASETS:
        return apply_where(pl.scan_pyarrow_dataset(data), where, source=f"the {name} given")
    if mod.startswith("pyarrow") and name in ARROW_TYPES:
        frame = pl.from_arrow(data)
        if isinstance(frame, pl.Series):  # not for a Table or RecordBatch; keeps type checkers calm
            frame = frame.to_frame()
        return apply_where(frame.lazy(), where, source=f"the {name} given")
    if mod.startswith("pandas") and name == "DataFrame":
        return apply_where(pl.from_pandas(data, include_index=True).lazy(), where,
                           source="the pandas DataFrame given")
    if mod.startswith("duckdb") and name == "DuckDBPyRelation":
        # run again and streamed in record batches at each collection, never collected whole
        from scoreframe.frames._sql_tables import relation_frame

        rel: Any = data  # a DuckDBPyRelation (duckdb is imported only when used)
        return apply_where(relation_frame(lambda: (rel, lambda: None), name="DuckDB relation"),
                           where, source="the DuckDB relation given")
    raise ScoreframeError(message(
        "unsupported trial data", expected="a path, a polars DataFrame/LazyFrame, a pandas "
        "DataFrame, a pyarrow Table or dataset, a DuckDB relation", got=type(data).__name__))


def path_format(path: str | Path) -> str:
    """The registered format of a path (a glob or a directory is Parquet).

    A path that does not exist is an error naming it, before any format is guessed.

    Examples
    --------
    >>> path_format("ds/**/*.parquet")
    'parquet'
    """
    text = str(path)
    if any(ch in text for ch in "*?["):
        return "parquet"
    if not Path(path).exists():
        raise FormatError(message("no such file or directory", path=path))
    return guess_format(path)


def parquet_source(path: str | Path) -> tuple[str | Path, bool]:
    """What to scan for a Parquet path, and whether it is a hive dataset (the one resolver).

    A directory is a hive dataset of its ``*.parquet`` files (at any depth); a file or a glob
    is scanned as given. A directory without Parquet files, or a path that does not exist, is
    a :class:`~scoreframe.errors.FormatError` naming it.

    >>> parquet_source("ds/*.parquet")
    ('ds/*.parquet', False)
    """
    p = Path(path)
    if p.is_dir():
        if not any(p.rglob("*.parquet")):
            raise FormatError(message("no parquet files", where=Place(p),
                                      expected="a Parquet dataset"))
        return str(p / "**" / "*.parquet"), True
    if p.exists() or any(ch in str(path) for ch in "*?["):
        return path, False
    raise FormatError(message("no such file or directory", path=p))


def scan_raw(data: Data, *, where: str | None = None) -> pl.LazyFrame:
    """Like :func:`as_lazy`, but a Parquet path is scanned as stored: labels are not normalized.

    The statistics layer uses it so that labels outside the accepted spellings are counted
    (and rejected) in its one pass instead of becoming unknown (null) labels at the scan;
    column types are checked there too. Other inputs are as in :func:`as_lazy`.
    """
    if not isinstance(data, str | Path) or path_format(data) != "parquet":
        return as_lazy(data, where=where)
    path = Path(data)
    src, hive = parquet_source(path)
    try:
        lf = pl.scan_parquet(src, hive_partitioning=hive or None)
        lf.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FormatError(message("cannot read parquet", where=Place(path),
                                  got=(str(exc).splitlines() or [type(exc).__name__])[0][:200]
                                  )) from None
    return apply_where(lf, where, source=Place(path))
