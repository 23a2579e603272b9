"""Parquet trial datasets: lazy scans of files or hive-partitioned directories, atomic writes.

I/O layer: reads and writes files, returns polars frames in the canonical schema
(:mod:`scoreframe.frames.schema`). ``scan_*`` are lazy, ``read_*``/``write_*`` eager (polars
naming).
"""

from __future__ import annotations

import glob
import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from scoreframe.errors import FormatError, Place, SchemaError, ScoreframeError, message
from scoreframe.frames import _sql_guard
from scoreframe.frames.schema import (
    Kind,
    check_duplicates,
    id_columns,
    polars_frame,
    validate_trials,
)
from scoreframe.io.atomic import atomic_output, consistent_read, final_path

__all__ = ["DEFAULT_MAX_ROW_GROUP_BYTES", "MARK_KEY", "apply_where", "dataset_validated",
           "infer_kind", "read_footers", "read_trials", "scan_trials", "unreadable_parquet",
           "validation_mark",
           "write_trials"]

#: Parquet key-value metadata key of the validation record written by :func:`write_trials`.
MARK_KEY = "scoreframe"
#: The largest row group a reader decodes (uncompressed size declared in the footer): 2 GiB.
DEFAULT_MAX_ROW_GROUP_BYTES = 2 * 2**30
MARK_VERSION = 1


def infer_kind(names: Sequence[str]) -> Kind:
    """The table kind implied by which canonical columns are present."""
    has_s, has_l = "score" in names, "label" in names
    return "trials" if has_s and has_l else "scores" if has_s else "key" if has_l else "ndx"


def apply_where(lf: pl.LazyFrame, where: str | None, *,
                source: str | None = None) -> pl.LazyFrame:
    """Filter by one SQL predicate (``"gender = 'f' AND score > 0"``), lazily.

    The predicate is checked by the one guard of every ``where`` (one expression over the
    columns: no statements, comments or subqueries); ``source`` names the data in messages.
    """
    return _sql_guard.apply_where(lf, where, source=source)


def _parquet_source(path: Path) -> tuple[str | Path, bool]:
    if path.is_dir():
        if not any(path.rglob("*.parquet")):
            raise FormatError(message("no parquet files", where=Place(path),
                                      expected="a hive-partitioned dataset"))
        return str(path / "**" / "*.parquet"), True
    if not path.exists() and not any(ch in str(path) for ch in "*?["):
        raise FormatError(message("no such file or directory", path=path))
    return path, False


def scan_trials(source: str | Path, *, where: str | None = None, kind: Kind | None = None,
                check_data: bool = False,
                max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES) -> pl.LazyFrame:
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
        Scan the data once to validate values (NaN scores, labels, duplicates), unless every
        file carries the validation mark of :func:`write_trials` (see
        :func:`dataset_validated`); the schema is always checked.
    max_row_group_bytes
        Refuse a file whose footer declares a row group larger than this (uncompressed), before
        any data are read: a row group is decoded whole, so a huge (or forged) one would
        exceed any memory limit.

    See Also
    --------
    scoreframe.read_trials : The eager reader.
    scoreframe.write_trials : The writer.
    scoreframe.query : SQL over the same dataset.

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
    footers = read_footers(_parquet_files(path), max_row_group_bytes=max_row_group_bytes)
    try:
        lf = pl.scan_parquet(src, hive_partitioning=hive or None)
        names = lf.collect_schema().names()
    except (pl.exceptions.PolarsError, OSError, pl.exceptions.PanicException) as exc:
        raise FormatError(message("cannot read parquet", where=Place(path),
                                  got=(str(exc).splitlines() or [type(exc).__name__])[0][:200]
                                  )) from None
    if check_data:
        mark = _mark_of(list(footers))
        ids = mark.get("id_columns") if mark else None
        if isinstance(ids, list) and set(ids) <= set(id_columns(names)):
            check_data = False  # written by a validating write_trials: already checked
    with unreadable_parquet(path):
        lf = validate_trials(lf, kind=kind or infer_kind(names), where=Place(path),
                             check_data=check_data)
    return apply_where(lf, where, source=Place(path))


def read_trials(source: str | Path, *, where: str | None = None, kind: Kind | None = None,
                max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES) -> pl.DataFrame:
    """Eager :func:`scan_trials` with full data validation.

    A dataset replaced by another process while it is read (``write_trials(...,
    overwrite=True)``) is read again (:func:`scoreframe.io.atomic.consistent_read`): the
    result is always one complete version, never a mix or a missing file.

    Parameters
    ----------
    source
        A Parquet file, directory or glob.
    where
        A SQL predicate selecting trials first.
    kind
        The expected kind (``key``, ``scores``, ``trials``, ``ndx``); inferred when None.
    max_row_group_bytes
        Refuse a file whose footer declares a larger row group (uncompressed), as
        :func:`scan_trials` does.

    Returns
    -------
    polars.DataFrame
        The validated trials.

    See Also
    --------
    scan_trials : The lazy scan (partitions pruned by ``where``).
    write_trials : The writer.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> write_trials(pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"],
    ...                            "score": [1.0, -1.0], "label": [True, False]}), d)
    >>> read_trials(d, where="score > 0")["model"].to_list()
    ['a']
    """
    def read() -> pl.DataFrame:
        lf = scan_trials(source, where=where, kind=kind, check_data=True,
                         max_row_group_bytes=max_row_group_bytes)
        with unreadable_parquet(Path(source)):
            return lf.collect()

    return consistent_read(source, read)


@contextmanager
def unreadable_parquet(path: Path) -> Iterator[None]:
    """Turn the errors (and Rust panics) of decoding a corrupt Parquet file into FormatError.

    Decoding is lazy, so a damaged page is only met when the data are read; wrap the code that
    collects a scan in this context to name the file instead of surfacing the engine's error.
    """
    try:
        yield
    except ScoreframeError:
        raise
    except (pl.exceptions.PolarsError, OSError, pa.ArrowException,
            pl.exceptions.PanicException) as exc:
        raise FormatError(message("cannot read parquet data (corrupt file?)",
                                  where=Place(path),
                                  got=(str(exc).splitlines() or [type(exc).__name__])[0][:200]
                                  )) from None


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


def _parquet_files(source: str | Path) -> list[Path]:
    p = Path(source)
    if p.is_dir():
        return sorted(p.rglob("*.parquet"))
    if any(ch in str(source) for ch in "*?["):
        return sorted(Path(f) for f in glob.glob(str(source), recursive=True))
    return [p] if p.is_file() else []


def validation_mark(source: str | Path) -> dict[str, object] | None:
    """The validation record :func:`write_trials` left in every file of a dataset, or None.

    Reads only the Parquet footers. None unless every file carries the mark of the same
    validated write (a file added later by another write, or by another tool, voids it).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> write_trials(pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0]}), f)
    >>> validation_mark(f)["id_columns"]
    ['model', 'segment']
    """
    return _mark_of([_footer(f) for f in _parquet_files(source)])


def _footer(f: Path) -> dict[str, str] | None:
    try:
        return pl.read_parquet_metadata(f)
    except (pl.exceptions.PolarsError, OSError, pl.exceptions.PanicException):
        return None


def _mark_of(footers: Sequence[dict[str, str] | None]) -> dict[str, object] | None:
    if not footers:
        return None
    marks: list[dict[str, object]] = []
    for meta in footers:
        try:
            mark = json.loads((meta or {})[MARK_KEY])
        except (KeyError, ValueError):
            return None
        if not isinstance(mark, dict) or mark.get("validated") is not True:
            return None
        marks.append(mark)
    if len({m.get("write_id") for m in marks}) != 1:
        return None
    return marks[0]


def read_footers(files: Sequence[Path], *,
                 max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES) -> list[dict[str, str]]:
    """Every file's key-value metadata (footers only); an unreadable footer is a FormatError.

    Reading the footers first names a damaged file before any data are scanned, and a row
    group declared larger than ``max_row_group_bytes`` (uncompressed) before it is allocated.
    """
    out = []
    for f in files:
        try:
            meta = pq.read_metadata(f)
            sizes = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
            kv = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                  for k, v in (meta.metadata or {}).items()}
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise FormatError(message("cannot read parquet", where=Place(f),
                                      got=(str(exc).splitlines() or [type(exc).__name__])[0][:200]
                                      )) from None
        big = max(range(len(sizes)), key=sizes.__getitem__, default=None)
        if big is not None and sizes[big] > max_row_group_bytes:
            raise FormatError(message(
                "parquet row group too large", where=Place(f, detail=f"row group {big}"),
                expected=f"at most {max_row_group_bytes} bytes uncompressed",
                got=f"{sizes[big]} bytes declared in the footer",
                hint="A row group is decoded whole. Rewrite the file with smaller row groups "
                     "(e.g. scoreframe convert), or raise max_row_group_bytes if memory allows."))
        out.append(kv)
    return out


def dataset_validated(source: str | Path) -> bool:
    """True when every Parquet file of ``source`` was written by a validating :func:`write_trials`.

    The statistics layer uses it to skip re-checking data (NaN/null scores, labels, duplicate
    trials on the recorded ``id_columns``). Reads only the footers. The mark trusts the files
    not to have changed since they were written: a damaged data page that still decodes is
    not detected.

    Parameters
    ----------
    source
        A Parquet file, directory or glob.

    Returns
    -------
    bool
        Whether the validation can be skipped.

    See Also
    --------
    scoreframe.write_trials : Records the validation.
    scoreframe.validate_trials : The checks.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> df = pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0]})
    >>> write_trials(df, d / "a.parquet"); df.write_parquet(d / "b.parquet")
    >>> dataset_validated(d / "a.parquet"), dataset_validated(d / "b.parquet")
    (True, False)
    """
    return validation_mark(source) is not None


def write_trials(data: pl.DataFrame | pl.LazyFrame | Iterable[pl.DataFrame], path: str | Path,
                 *, partition_by: Sequence[str] = (), overwrite: bool = False,
                 chunk_rows: int = 2_000_000, progress: object | None = None,
                 validate: bool | Literal["trusted"] = True,
                 trial_id: Sequence[str] | None = None) -> None:
    """Write trials as one Parquet file or a hive-partitioned directory, atomically.

    The data are checked as every reader checks them
    (:func:`scoreframe.frames.schema.validate_trials`:
    columns and types, null ids, NaN or null scores, labels, duplicate trials) and written in
    the canonical types; every file records in its key-value metadata (key ``scoreframe``) that
    it was validated, so :func:`dataset_validated` can skip re-checking.

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
    validate
        Check the data (default). ``False`` writes as given, without the validation mark.
        Streamed input is checked chunk by chunk, and for duplicates by one scan of what was
        written, before the output is renamed into place. ``"trusted"`` checks every chunk
        but skips that final duplicate scan, for generators whose trial ids are unique by
        construction (``synth``); the mark records it (``"duplicates": "trusted"``).
    trial_id
        Columns identifying a trial for the duplicate check (default ``model, segment`` and
        ``system`` when present).

    Raises
    ------
    SchemaError
        The data fail a check; nothing is written.

    See Also
    --------
    read_trials, scan_trials : Read it back.
    scoreframe.io.write_any : Every other format.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "ds"
    >>> df = pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, -1.0],
    ...                    "label": [True, False], "gender": ["f", "m"]})
    >>> write_trials(df, d, partition_by=["gender"])
    >>> sorted(p.name for p in d.iterdir())
    ['gender=f', 'gender=m']
    """
    if not isinstance(data, pl.DataFrame | pl.LazyFrame) and type(data).__module__.startswith(
            ("pandas", "pyarrow")):
        data = polars_frame(data)  # a pandas or pyarrow table
    path = Path(path)
    parts = list(partition_by)
    single = not parts and path.suffix == ".parquet"
    where = Place(final_path(path), detail="the data written")
    eager = isinstance(data, pl.DataFrame)
    kind: Kind | None = None
    ids: list[str] = []
    if eager and validate:
        assert isinstance(data, pl.DataFrame)
        kind = infer_kind(data.columns)
        ids = list(trial_id) if trial_id else id_columns(data.columns)
        data = validate_trials(data, kind=kind, where=where, trial_id=trial_id).collect()
    mark = {MARK_KEY: json.dumps({"validated": True, "version": MARK_VERSION,
                                  "id_columns": ids, "write_id": uuid.uuid4().hex,
                                  **({"duplicates": "trusted"} if validate == "trusted"
                                     else {})})}
    with atomic_output(path, directory=not single, overwrite=overwrite) as out:
        writer: pq.ParquetWriter | None = None
        total = 0
        for i, raw in enumerate(_chunks(data, chunk_rows)):
            chunk = raw
            if validate and not eager:
                if kind is None:
                    kind = infer_kind(chunk.columns)
                    ids = list(trial_id) if trial_id else id_columns(chunk.columns)
                    mark = {MARK_KEY: json.dumps({**json.loads(mark[MARK_KEY]),
                                                  "id_columns": ids})}
                chunk = validate_trials(chunk, kind=kind, where=where, duplicates=False,
                                        check_data=chunk.height > 0).collect()
            meta = mark if validate else None
            missing = [c for c in parts if c not in chunk.columns]
            if missing:
                raise ScoreframeError(message("cannot partition by missing column(s)",
                                              expected=", ".join(parts),
                                              got=", ".join(chunk.columns)))
            if single:
                table = chunk.to_arrow()
                if writer is None:
                    schema = table.schema.with_metadata(meta) if meta else table.schema
                    writer = pq.ParquetWriter(out, schema, compression="zstd")
                writer.write_table(table.cast(writer.schema))
            elif parts:
                for key, sub in chunk.partition_by(parts, as_dict=True,
                                                   include_key=False).items():
                    d = out.joinpath(*(f"{c}={_value_dir(v)}" for c, v in zip(parts, key,
                                                                              strict=True)))
                    d.mkdir(parents=True, exist_ok=True)
                    sub.write_parquet(d / f"part-{i:05d}.parquet", metadata=meta)
            else:
                if chunk.height or i == 0:
                    chunk.write_parquet(out / f"part-{i:05d}.parquet", metadata=meta)
            total += chunk.height
            if progress is not None:
                progress(total)  # type: ignore[operator]  # a callable taking the row count, typed object
        if writer is not None:
            writer.close()
        elif single:
            raise ScoreframeError("nothing to write: the input has no chunks")
        if validate and not eager:
            if total == 0:
                raise SchemaError(message("no rows", where=where, expected="at least one row",
                                          got="an empty table"))
            src = out if single else out / "**" / "*.parquet"
            written = pl.scan_parquet(src, hive_partitioning=bool(parts) or None)
            if validate != "trusted":
                check_duplicates(written, ids, where=where)
