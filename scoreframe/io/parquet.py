"""Parquet trial datasets: lazy scans of files or hive-partitioned directories, atomic writes.

I/O layer: reads and writes files, returns polars frames in the canonical schema
(:mod:`scoreframe.schema`). ``scan_*`` are lazy, ``read_*``/``write_*`` eager (polars naming).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from scoreframe.errors import FormatError, ScoreframeError, message
from scoreframe.io.atomic import atomic_output
from scoreframe.schema import Kind, validate_trials

__all__ = ["apply_where", "infer_kind", "read_trials", "scan_trials", "write_trials"]


def infer_kind(names: Sequence[str]) -> Kind:
    """The table kind implied by which canonical columns are present."""
    has_s, has_l = "score" in names, "label" in names
    return "trials" if has_s and has_l else "scores" if has_s else "key" if has_l else "ndx"


def apply_where(lf: pl.LazyFrame, where: str | None) -> pl.LazyFrame:
    """Filter by an SQL predicate (``"gender = 'f' AND score > 0"``), lazily."""
    if not where:
        return lf
    try:
        expr = pl.sql_expr(where)
        lf.select(expr).collect_schema()
    except Exception as exc:  # polars raises several error types for bad SQL
        raise ScoreframeError(message("cannot use the --where predicate", got=repr(where),
                                      hint=f"{type(exc).__name__}: {exc}".splitlines()[0]
                                      )) from None
    return lf.filter(expr)


def _parquet_source(path: Path) -> tuple[str | Path, bool]:
    if path.is_dir():
        if not any(path.rglob("*.parquet")):
            raise FormatError(message("no parquet files", where=f"directory `{path}`",
                                      expected="a hive-partitioned dataset"))
        return str(path / "**" / "*.parquet"), True
    if not path.exists() and not any(ch in str(path) for ch in "*?["):
        raise FormatError(message(f"no such file or directory `{path}`"))
    return path, False


def scan_trials(source: str | Path, *, where: str | None = None, kind: Kind | None = None,
                check_data: bool = False) -> pl.LazyFrame:
    """Lazily scan a Parquet trial table (a file, a glob or a hive-partitioned directory).

    Parameters
    ----------
    source
        ``trials.parquet``, ``dataset/`` (``col=value/part-*.parquet`` below it) or a glob.
    where
        Optional SQL predicate applied lazily (partition columns prune whole files).
    kind
        Expected kind; inferred from the columns when omitted.
    check_data
        Scan the data once to validate values (NaN scores, labels, duplicates); the schema is
        always checked.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> df = pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, -1.0],
    ...                    "label": [True, False], "gender": ["f", "m"]})
    >>> write_trials(df, d, partition_by=["gender"])
    >>> scan_trials(d, where="gender = 'f'").collect()["model"].to_list()
    ['a']
    """
    path = Path(source)
    src, hive = _parquet_source(path)
    try:
        lf = pl.scan_parquet(src, hive_partitioning=hive or None)
        names = lf.collect_schema().names()
    except (pl.exceptions.ComputeError, OSError) as exc:
        raise FormatError(message("cannot read parquet", where=f"`{path}`",
                                  got=str(exc).splitlines()[0])) from None
    lf = validate_trials(lf, kind=kind or infer_kind(names), where=f"`{path}`",
                         check_data=check_data)
    return apply_where(lf, where)


def read_trials(source: str | Path, *, where: str | None = None,
                kind: Kind | None = None) -> pl.DataFrame:
    """Eager :func:`scan_trials` with full data validation."""
    return scan_trials(source, where=where, kind=kind, check_data=True).collect()


def _chunks(data: pl.DataFrame | pl.LazyFrame | Iterable[pl.DataFrame],
            chunk_rows: int) -> Iterable[pl.DataFrame]:
    if isinstance(data, pl.DataFrame):
        for off in range(0, max(data.height, 1), chunk_rows):
            yield data.slice(off, chunk_rows)
    elif isinstance(data, pl.LazyFrame):
        yield from data.collect_batches(chunk_size=chunk_rows)
    else:
        yield from data


def _value_dir(v: object) -> str:
    s = "__HIVE_DEFAULT_PARTITION__" if v is None else str(v)
    for ch in "/\\=%":
        s = s.replace(ch, f"%{ord(ch):02X}")
    return s


def write_trials(data: pl.DataFrame | pl.LazyFrame | Iterable[pl.DataFrame], path: str | Path,
                 *, partition_by: Sequence[str] = (), overwrite: bool = False,
                 chunk_rows: int = 2_000_000, progress: object | None = None) -> None:
    """Write trials as one Parquet file or a hive-partitioned directory, atomically.

    Parameters
    ----------
    data
        A frame, a LazyFrame (streamed in batches) or any iterable of DataFrame chunks, so
        datasets larger than memory can be produced chunk by chunk.
    path
        ``*.parquet`` without ``partition_by`` writes one file; otherwise a directory
        ``path/col=value/.../part-NNNNN.parquet``.
    partition_by
        Condition columns to partition by (kept out of the files, restored by hive scans).
    overwrite
        Replace an existing output.
    chunk_rows
        Rows per chunk for eager or lazy input.
    progress
        Optional callable ``progress(rows_written)``.
    """
    path = Path(path)
    parts = list(partition_by)
    single = not parts and path.suffix == ".parquet"
    with atomic_output(path, directory=not single, overwrite=overwrite) as out:
        writer: pq.ParquetWriter | None = None
        total = 0
        for i, chunk in enumerate(_chunks(data, chunk_rows)):
            missing = [c for c in parts if c not in chunk.columns]
            if missing:
                raise ScoreframeError(message("cannot partition by missing column(s)",
                                              expected=", ".join(parts),
                                              got=", ".join(chunk.columns)))
            if single:
                table = chunk.to_arrow()
                if writer is None:
                    writer = pq.ParquetWriter(out, table.schema, compression="zstd")
                writer.write_table(table)
            elif parts:
                for key, sub in chunk.partition_by(parts, as_dict=True,
                                                   include_key=False).items():
                    d = out.joinpath(*(f"{c}={_value_dir(v)}" for c, v in zip(parts, key,
                                                                              strict=True)))
                    d.mkdir(parents=True, exist_ok=True)
                    sub.write_parquet(d / f"part-{i:05d}.parquet")
            else:
                if chunk.height or i == 0:
                    chunk.write_parquet(out / f"part-{i:05d}.parquet")
            total += chunk.height
            if progress is not None:
                progress(total)  # type: ignore[operator]
        if writer is not None:
            writer.close()
        elif single:
            raise ScoreframeError("nothing to write: the input has no chunks")
