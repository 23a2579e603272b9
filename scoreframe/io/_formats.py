"""The format registry: every trial-table format is one entry (name, reader, writer, sniffers).

I/O layer; imports the readers and writers of this package only. :func:`read_trials`,
:func:`scan_trials`, :func:`write_trials`, :func:`read_any`, :func:`write_any` and
:func:`guess_format` dispatch through the registry, and so do the library's path inputs
(:func:`load_trials`, so every function that takes a path), the command line's ``--from`` /
``--to`` choices and the malformed-input catalogue of the tests: a format added with
:func:`register_format` is available to all of them at once, with no other edit
(``docs/howto/add_format.md``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import polars as pl

from scoreframe.errors import FormatError, Place, UsageError, message
from scoreframe.frames.schema import Kind, validate_trials
from scoreframe.io import parquet as pq
from scoreframe.io.atomic import consistent_read
from scoreframe.io.bosaris_hdf5 import (
    DEFAULT_MAX_DENSE_BYTES,
    read_bosaris_hdf5,
    write_bosaris_hdf5,
)
from scoreframe.io.lines import max_line_bytes as line_limit
from scoreframe.io.lines import read_source
from scoreframe.io.parquet import DEFAULT_MAX_ROW_GROUP_BYTES, apply_where, infer_kind
from scoreframe.io.tables import (
    read_nist_key,
    read_nist_scores,
    read_table,
    write_nist_key,
    write_nist_scores,
    write_table,
)
from scoreframe.io.text import fields_kind, read_text_trials, write_text_trials

__all__ = ["Format", "ReadOptions", "Reader", "Scanner", "Writer", "format_names", "get_format",
           "guess_format", "head_lines", "load_trials", "read_any", "read_trials",
           "register_format", "scan_trials", "write_any", "write_trials"]


@dataclass(frozen=True)
class ReadOptions:
    """What a reader may be told besides the path.

    Attributes
    ----------
    kind
        ``"key"``, ``"ndx"``, ``"scores"`` or ``"trials"``, for formats that cannot tell from
        the content; None lets the reader decide.
    columns
        For tables with a header: canonical name -> the file's column name.
    order
        For headerless lists: the fields of a line in the file's order.
    text_columns
        Columns read as text, never as numbers (conditions: ``01`` and ``1`` stay apart).
    trial_id
        Columns identifying a trial, for the duplicate check (readers that check duplicates).
    check_data
        Lazy readers (:attr:`Format.scan`): scan the data once to check values, not only the
        schema. Eager readers always check.
    max_row_group_bytes
        Parquet: the largest row group decoded (see :func:`scoreframe.io.parquet.scan_trials`).

    See Also
    --------
    Format : The registry entry whose reader takes it.
    scoreframe.read_any : Read a file in any registered format.

    Examples
    --------
    >>> ReadOptions(kind="key", order=("label", "model", "segment")).order
    ('label', 'model', 'segment')
    """

    kind: Kind | None = None
    columns: dict[str, str] | None = None
    order: tuple[str, ...] | None = None
    text_columns: tuple[str, ...] = ()
    trial_id: tuple[str, ...] | None = None
    check_data: bool = True
    max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES


class Reader(Protocol):
    """``read(path, options) -> DataFrame`` in the canonical schema."""

    def __call__(self, path: Path, options: ReadOptions, /) -> pl.DataFrame: ...


class Scanner(Protocol):
    """``scan(path, options) -> LazyFrame`` in the canonical schema (a lazy reader)."""

    def __call__(self, path: Path, options: ReadOptions, /) -> pl.LazyFrame: ...


#: ``write(data, path, *, kind, overwrite, **options)``, atomic. :func:`write_trials` passes
#: only the options the format lists in :attr:`Format.write_options`.
Writer = Callable[..., None]


@dataclass(frozen=True)
class Format:
    """One registered format.

    Attributes
    ----------
    name
        The name users give (``--from NAME``, ``fmt=NAME``).
    description
        One line for ``--help`` and the docs.
    read, write
        The reader and the writer (either may be None: a read-only or write-only format).
    suffixes
        File-name suffixes (lower case, ``.gz`` looked through) that identify the format.
    matches_name
        A test of the whole file name (Kaldi's ``trials``), tried after the suffixes.
    sniff
        A test of the first lines of a file whose suffix names a more general format: when it
        answers True, this format is used instead (a ``.tsv`` with NIST's header is NIST).
    sniff_for
        The formats whose files are sniffed for this one.
    scan
        A lazy reader (Parquet): :func:`scan_trials` and :func:`load_trials` use it instead
        of ``read``, so that a ``where`` prunes before anything is read.
    write_options
        The writer's own options (``partition_by``...); :func:`write_trials` refuses others.
    streams
        The writer takes a LazyFrame or an iterable of DataFrame chunks, not only a DataFrame.

    See Also
    --------
    register_format : Add a format to the registry.
    get_format : Look one up by name.
    format_names : The registered names.

    Examples
    --------
    >>> nist = get_format("nist")
    >>> nist.read is not None, nist.write is not None, nist.sniff_for
    (True, True, ('tsv',))
    """

    name: str
    description: str
    read: Reader | None
    write: Writer | None
    suffixes: tuple[str, ...] = ()
    matches_name: Callable[[str], bool] | None = None
    sniff: Callable[[list[str]], bool] | None = None
    sniff_for: tuple[str, ...] = field(default=())
    scan: Scanner | None = None
    write_options: tuple[str, ...] = ()
    streams: bool = False


_REGISTRY: dict[str, Format] = {}


def register_format(fmt: Format, *, replace: bool = False) -> Format:
    """Add a format to the registry (readers, writers, CLI choices and guessing follow).

    Parameters
    ----------
    fmt
        The format's entry.
    replace
        Replace an entry of the same name (else that is an error).

    Returns
    -------
    Format
        ``fmt``, so that the call can be used as a statement or a decorator's result.

    See Also
    --------
    read_any, write_any : Dispatch on the registry.

    Examples
    --------
    >>> import polars as pl
    >>> def read_pipe(path, options):
    ...     df = pl.read_csv(path, separator="|", has_header=False,
    ...                      new_columns=["model", "segment", "score"])
    ...     return df.with_columns(pl.col("score").cast(pl.Float64))
    >>> _ = register_format(Format("pipe", "model|segment|score lines", read_pipe, None),
    ...                     replace=True)  # suffixes=(".pipe",) would also let it be guessed
    >>> "pipe" in format_names()
    True
    """
    if fmt.name in _REGISTRY and not replace:
        raise UsageError(message(f"format `{fmt.name}` is registered already",
                                 hint="Pass replace=True to replace it."))
    _REGISTRY[fmt.name] = fmt
    return fmt


def format_names(*, readable: bool | None = None, writable: bool | None = None
                 ) -> tuple[str, ...]:
    """The registered format names, in registration order (optionally only readable/writable).

    Parameters
    ----------
    readable, writable
        Keep only formats with (True) or without (False) a reader / a writer.

    Returns
    -------
    tuple of str
        The names, in registration order.

    See Also
    --------
    get_format : The entry of one name.
    guess_format : The name that fits a file.

    Examples
    --------
    >>> format_names()[:3]
    ('parquet', 'bosaris-h5', 'bosaris-txt')
    """
    return tuple(f.name for f in _REGISTRY.values()
                 if (readable is None or (f.read is not None) == readable)
                 and (writable is None or (f.write is not None) == writable))


def get_format(name: str) -> Format:
    """The registry entry of ``name``; an unknown name is an error listing the known ones.

    Parameters
    ----------
    name
        A registered format name.

    Returns
    -------
    Format
        Its registry entry.

    See Also
    --------
    format_names : The names it accepts.
    register_format : Add an entry.

    Examples
    --------
    >>> get_format("kaldi").description
    'Kaldi trials (enroll test target|nontarget) and scores'
    >>> get_format("matlab")
    Traceback (most recent call last):
    ...
    scoreframe.errors.FormatError: unknown format: expected parquet | ...
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise FormatError(message("unknown format", expected=" | ".join(format_names()),
                                  got=repr(name))) from None


def head_lines(path: Path, n_bytes: int = 1 << 16) -> list[str]:
    """The first complete lines of a (possibly gzip) text file, for sniffing only.

    Undecodable or truncated input gives what could be read: the full reader then reports
    the problem with its line number.
    """
    if not path.is_file():
        read_source(path)  # raises the readers' error for a missing file or a directory
    with path.open("rb") as fh:
        raw = fh.read(n_bytes)
    if raw[:2] == b"\x1f\x8b":  # gzip: decompress only the head, member after member
        out, rest = b"", raw
        try:
            while rest[:2] == b"\x1f\x8b" and len(out) < n_bytes:
                d = zlib.decompressobj(wbits=31)
                out += d.decompress(rest, n_bytes - len(out))
                if not d.eof:
                    break  # the head ends inside this member
                rest = d.unused_data
        except zlib.error:
            pass
        raw = out
    lines = raw.decode("utf-8", errors="replace").split("\n")
    if len(raw) == n_bytes and len(lines) > 1:
        lines = lines[:-1]
    return [ln.removeprefix("\ufeff").rstrip("\r") for ln in lines]


def guess_format(path: str | Path) -> str:
    """Format name from a path: a directory or ``.parquet`` is parquet, ``.h5`` BOSARIS, ...

    A trailing ``.gz`` is looked through (``key.txt.gz`` is BOSARIS text). When the suffix
    names a general format, the file's first lines are sniffed for a more specific one: a
    ``.tsv`` with NIST's header is NIST, a ``.txt`` whose lines are ``1|0 enroll test`` is a
    VoxCeleb list.

    Parameters
    ----------
    path
        A file or directory.

    Returns
    -------
    str
        A registered format name.

    See Also
    --------
    scoreframe.read_any : Read a file in the format guessed.
    format_names : The candidates.

    Examples
    --------
    >>> guess_format("scores.tsv.gz"), guess_format("exp/trials")
    ('tsv', 'kaldi')
    """
    p = Path(path)
    suffixes = [x.lower() for x in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    name = p.name[:-3] if p.name.lower().endswith(".gz") else p.name
    if p.is_dir():
        return "parquet"
    found = next((f.name for f in _REGISTRY.values() if suffix and suffix in f.suffixes), None)
    if found is None:
        found = next((f.name for f in _REGISTRY.values()
                      if f.matches_name is not None and f.matches_name(name)), None)
    if found is None:
        raise FormatError(message("cannot tell the format from the file name", path=p,
                                  expected=" | ".join(format_names()),
                                  hint="Name it with --from / --to (fmt= in Python)."))
    sniffers = [f for f in _REGISTRY.values() if found in f.sniff_for and f.sniff is not None]
    if sniffers and p.is_file():
        head = head_lines(p)
        for f in sniffers:
            if f.sniff is not None and f.sniff(head):
                return f.name
    return found


def read_any(path: str | Path, *, fmt: str | None = None, kind: Kind | None = None,
             columns: dict[str, str] | None = None, order: Sequence[str] | None = None,
             text_columns: Sequence[str] = (), max_line_bytes: int | None = None
             ) -> pl.DataFrame:
    r"""Read a key, ndx, scores or trials table in any registered format.

    Parameters
    ----------
    path
        The file (or Parquet dataset directory).
    fmt
        The format's name (:func:`format_names`); default: :func:`guess_format`.
    kind
        ``key``, ``ndx``, ``scores`` or ``trials``, for text formats that cannot tell a key from
        scores by their content (BOSARIS text and Kaldi default to ``key`` when the third
        field is a label).
    columns
        Tables with a header: canonical name -> the file's column name.
    order
        Headerless lists (``fmt="list"``): the fields of a line in the file's order.
    text_columns
        Columns of CSV/TSV/NIST tables read as text, never as numbers (conditions to group
        by: ``01`` and ``1`` stay apart).
    max_line_bytes
        The longest line of a text format accepted (default 1 MiB, or as set by
        :func:`scoreframe.io.max_line_bytes`): a longer line is an error naming the file and
        line, found in bounded memory.

    Returns
    -------
    polars.DataFrame
        The table in the canonical schema, checked.

    See Also
    --------
    write_any : The writer of the same formats.
    scoreframe.scan_trials : Lazy scan of a Parquet dataset.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> _ = p.write_text("m1 s1 target\nm1 s2 nontarget\n")
    >>> read_any(p, fmt="bosaris-txt")["label"].to_list()
    [True, False]
    """
    options = ReadOptions(kind=kind, columns=columns, order=tuple(order) if order else None,
                          text_columns=tuple(text_columns))
    with line_limit(max_line_bytes):
        return _read(Path(path), get_format(fmt or guess_format(path)), options)


def _read(path: Path, f: Format, options: ReadOptions) -> pl.DataFrame:
    """Read with a format's eager reader; a file replaced during the read is read again."""
    read = f.read
    if read is None:
        raise FormatError(message(f"format `{f.name}` cannot be read", where=Place(path),
                                  expected=" | ".join(format_names(readable=True))),
                          path=path, parameter="fmt")
    return consistent_read(path, lambda: read(path, options))


def _scan(path: Path, f: Format, options: ReadOptions) -> pl.LazyFrame:
    """A format's lazy reader, or its eager reader's frame made lazy."""
    return f.scan(path, options) if f.scan is not None else _read(path, f, options).lazy()


def _source_format(source: str | Path) -> str:
    """The format of an input path: a glob is Parquet; a missing path is an error naming it."""
    if any(ch in str(source) for ch in "*?["):
        return "parquet"
    if not Path(source).exists():
        raise FormatError(message("no such file or directory", path=source))
    return guess_format(source)


def write_any(data: pl.DataFrame, path: str | Path, *, fmt: str, kind: Kind,
              overwrite: bool = False, **options: Any) -> None:
    r"""Write a table in a registered format, atomically.

    Parameters
    ----------
    data
        The table in the canonical schema.
    path
        The output (an existing one only with ``overwrite``).
    fmt
        The format's name (:func:`format_names`).
    kind
        What to write: ``key``, ``ndx``, ``scores`` or ``trials``.
    overwrite
        Replace an existing output.
    **options
        Format options: ``partition_by`` (Parquet), ``max_dense_bytes`` (BOSARIS HDF5, see
        :func:`write_bosaris_hdf5`).

    See Also
    --------
    read_any : The reader of the same formats.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "scores.txt"
    >>> df = pl.DataFrame({"model": ["m1"], "segment": ["s1"], "score": [0.25]})
    >>> write_any(df, p, fmt="bosaris-txt", kind="scores")
    >>> p.read_text()
    'm1 s1 0.25\n'
    """
    f = get_format(fmt)
    if f.write is None:
        raise FormatError(message(f"format `{fmt}` cannot be written",
                                  expected=" | ".join(format_names(writable=True))))
    f.write(data, Path(path), kind=kind, overwrite=overwrite, **options)


def load_trials(path: str | Path, *, fmt: str | None = None, kind: Kind | None = None,
                columns: dict[str, str] | None = None, order: Sequence[str] | None = None,
                where: str | None = None, trial_id: Sequence[str] | None = None,
                text_columns: Sequence[str] = ()) -> pl.LazyFrame:
    r"""A checked trial table from a file of any registered format (Parquet scanned lazily).

    The one read path of the library and the command line: ``sf.evaluate("list.txt")`` reads
    what ``scoreframe evaluate list.txt`` reads, with the same checks and messages.

    Parameters
    ----------
    path
        A file, a glob or a Parquet dataset directory.
    fmt, kind, columns, order, text_columns
        As in :func:`read_any`.
    where
        A SQL predicate applied after the checks.
    trial_id
        Columns identifying a trial (duplicates are checked on them).

    Returns
    -------
    polars.LazyFrame
        The trials in the canonical schema.

    See Also
    --------
    read_any : The eager reader, without ``where``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "veri_test.txt"
    >>> _ = p.write_text("1 id1/a.wav id1/b.wav\n0 id1/a.wav id2/c.wav\n")
    >>> load_trials(p).collect()["label"].to_list()
    [True, False]
    """
    options = ReadOptions(kind=kind, columns=columns, order=tuple(order) if order else None,
                          text_columns=tuple(text_columns),
                          trial_id=tuple(trial_id) if trial_id else None)
    f = get_format(fmt or _source_format(path))
    return apply_where(_scan(Path(path), f, options), where, source=Place(path))


def scan_trials(source: str | Path, *, fmt: str | None = None, where: str | None = None,
                kind: Kind | None = None, check_data: bool = False,
                max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES) -> pl.LazyFrame:
    r"""Lazily scan a trial table of any registered format, by path.

    A Parquet file, glob or hive-partitioned directory is scanned lazily (a ``where`` on a
    partition column prunes whole files); a file of another format (``key.txt``, a NIST TSV,
    a VoxCeleb list, a format added with :func:`register_format`) is read and checked by its
    reader and returned as a LazyFrame.

    Parameters
    ----------
    source
        ``trials.parquet``, ``dataset/`` (``col=value/part-*.parquet`` below it), a glob or a
        file of any registered format.
    fmt
        The format's name (:func:`format_names`); default: :func:`guess_format`.
    where
        Optional SQL predicate applied lazily.
    kind
        Expected kind (``key``, ``ndx``, ``scores``, ``trials``); inferred when omitted.
    check_data
        Parquet: scan the data once to validate values (NaN scores, labels, duplicates),
        unless every file carries the validation mark of :func:`write_trials`; the schema is
        always checked. Other formats are always checked as they are read.
    max_row_group_bytes
        Parquet: refuse a file whose footer declares a row group larger than this
        (uncompressed), before any data are read.

    Returns
    -------
    polars.LazyFrame
        The trials in the canonical schema.

    See Also
    --------
    read_trials : The eager read, values checked.
    write_trials : The writer.
    register_format : Add a format.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> df = pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, -1.0],
    ...                    "label": [True, False], "gender": ["f", "m"]})
    >>> write_trials(df, d / "ds", partition_by=["gender"])
    >>> scan_trials(d / "ds", where="gender = 'f'").collect()["model"].to_list()
    ['a']
    >>> _ = (d / "key.txt").write_text("a x target\nb y nontarget\n")
    >>> scan_trials(d / "key.txt").collect()["label"].to_list()
    [True, False]
    """
    f = get_format(fmt or _source_format(source))
    options = ReadOptions(kind=kind, check_data=check_data,
                          max_row_group_bytes=max_row_group_bytes)
    return apply_where(_scan(Path(source), f, options), where, source=Place(source))


def read_trials(source: str | Path, *, fmt: str | None = None, where: str | None = None,
                kind: Kind | None = None,
                max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES) -> pl.DataFrame:
    """Read a trial table of any registered format, by path, with full data validation.

    The eager :func:`scan_trials`. A file or dataset replaced by another process while it is
    read (``write_trials(..., overwrite=True)``) is read again: the result is always one
    complete version, never a mix or a missing file.

    Parameters
    ----------
    source, fmt, where, kind, max_row_group_bytes
        As in :func:`scan_trials`.

    Returns
    -------
    polars.DataFrame
        The trials in the canonical schema, checked.

    See Also
    --------
    scan_trials : The lazy scan (partitions pruned by ``where``).
    write_trials : The writer.
    read_any : The reader with the text formats' options (``columns``, ``order``...).

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> df = pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"],
    ...                    "score": [1.0, -1.0], "label": [True, False]})
    >>> write_trials(df, d / "ds")
    >>> read_trials(d / "ds", where="score > 0")["model"].to_list()
    ['a']
    >>> write_trials(df.drop("score"), d / "key.txt")  # a BOSARIS text key
    >>> read_trials(d / "key.txt")["label"].to_list()
    [True, False]
    """
    f = get_format(fmt or _source_format(source))
    options = ReadOptions(kind=kind, max_row_group_bytes=max_row_group_bytes)

    def read() -> pl.DataFrame:
        lf = apply_where(_scan(Path(source), f, options), where, source=Place(source))
        with pq.unreadable_parquet(Path(source)):  # decoding is lazy: errors come here
            return lf.collect()

    return consistent_read(source, read)


def write_trials(data: pl.DataFrame | pl.LazyFrame | Iterable[pl.DataFrame], path: str | Path,
                 *, fmt: str | None = None, kind: Kind | None = None,
                 partition_by: Sequence[str] = (), overwrite: bool = False,
                 chunk_rows: int = 2_000_000, progress: object | None = None,
                 validate: bool | Literal["trusted"] = True,
                 trial_id: Sequence[str] | None = None) -> None:
    r"""Write trials in any registered format, atomically (Parquet when the name has no suffix).

    Parquet is written as one file or a hive-partitioned directory, streamed chunk by chunk
    and checked as every reader checks it (:func:`scoreframe.io.parquet.write_trials`); the
    other formats are written by their registry entry's writer.

    Parameters
    ----------
    data
        A frame, a LazyFrame or (Parquet) any iterable of DataFrame chunks.
    path
        The output: ``*.parquet`` (one file), a name without suffix (a dataset directory) or a
        file of any writable format (``key.txt``, ``scores.h5``...).
    fmt
        The format's name (:func:`format_names`); default from ``path``.
    kind
        What to write (``key``, ``ndx``, ``scores``, ``trials``); default from the columns.
    partition_by, chunk_rows, progress, validate, trial_id
        Parquet's options (see :func:`scoreframe.io.parquet.write_trials`); given for a
        format that does not take them, they are an error.
    overwrite
        Replace an existing output.

    See Also
    --------
    read_trials, scan_trials : Read it back.
    write_any : The writer with each format's own options.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> df = pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, -1.0],
    ...                    "label": [True, False], "gender": ["f", "m"]})
    >>> write_trials(df, d / "ds", partition_by=["gender"])
    >>> sorted(p.name for p in (d / "ds").iterdir())
    ['gender=f', 'gender=m']
    >>> write_trials(df.select("model", "segment", "score"), d / "scores.txt")
    >>> (d / "scores.txt").read_text()
    'a x 1.0\nb y -1.0\n'
    """
    name = fmt or ("parquet" if not Path(path).suffix else guess_format(path))
    f = get_format(name)
    if f.write is None:
        raise FormatError(message(f"format `{name}` cannot be written", where=Place(path),
                                  expected=" | ".join(format_names(writable=True))),
                          path=path, parameter="fmt")
    given = {"partition_by": tuple(partition_by), "chunk_rows": chunk_rows,
             "progress": progress, "validate": validate, "trial_id": trial_id}
    defaults = {"partition_by": (), "chunk_rows": 2_000_000, "progress": None,
                "validate": True, "trial_id": None}
    for option, value in given.items():
        if option not in f.write_options and value != defaults[option]:
            raise UsageError(message(f"format `{name}` does not take `{option}`",
                                     where=Place(path),
                                     hint="It is an option of: " + ", ".join(
                                         g.name for g in _REGISTRY.values()
                                         if option in g.write_options) + "."),
                             path=path, parameter=option)
    if not f.streams and not isinstance(data, pl.DataFrame):
        data = data.collect() if isinstance(data, pl.LazyFrame) else pl.concat(list(data))
    if kind is None:
        names = (data.collect_schema().names() if isinstance(data, pl.DataFrame | pl.LazyFrame)
                 else None)
        kind = infer_kind(names) if names is not None else "trials"
    f.write(data, Path(path), kind=kind, overwrite=overwrite,
            **{k: v for k, v in given.items() if k in f.write_options})


# ---------------------------------------------------------------- the built-in formats
def _sniff_text_kind(head: list[str]) -> Kind:
    for line in head:
        fields = line.split()
        if not fields:
            continue
        if len(fields) == 2:
            return "ndx"
        if len(fields) < 3:
            return "key"  # ragged: the key reader names the line
        try:
            float(fields[2])
        except ValueError:
            return "key"
        return "scores"
    return "key"  # empty: the key reader says so, naming the file


def _text_reader(label: str) -> Reader:
    def read(path: Path, o: ReadOptions) -> pl.DataFrame:
        kind = o.kind or _sniff_text_kind(head_lines(path))
        return read_text_trials(path, kind, fmt=label)
    return read


def _text_writer(path_data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                 **_: Any) -> None:
    write_text_trials(path_data, path, kind, overwrite=overwrite)


def _tsv_names(head: list[str]) -> set[str]:
    return set(head[0].split("\t")) if head else set()


def _is_nist(head: list[str]) -> bool:
    """A TSV whose header has NIST's ``modelid``, ``segmentid`` and ``targettype`` or ``LLR``."""
    names = _tsv_names(head)
    return {"modelid", "segmentid"} <= names and bool(names & {"targettype", "LLR"})


def _read_nist(path: Path, o: ReadOptions) -> pl.DataFrame:
    """A NIST TSV by its header: a key, a system output, or both (``targettype`` and ``LLR``)."""
    header = _tsv_names(head_lines(path))
    tc = o.text_columns
    if {"targettype", "LLR"} <= header:  # key and scores in one table: trials
        return read_table(path, columns={"model": "modelid", "segment": "segmentid",
                                         "label": "targettype", "score": "LLR"},
                          kind=o.kind or "trials", separator="\t", text_columns=tc)
    if o.kind in ("scores", "key"):
        return read_nist_scores(path) if o.kind == "scores" else read_nist_key(
            path, text_columns=tc)
    return read_nist_scores(path) if "LLR" in header else read_nist_key(path, text_columns=tc)


def _write_nist(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                **_: Any) -> None:
    if kind == "scores":
        write_nist_scores(data, path, overwrite=overwrite)
    else:
        write_nist_key(data, path, overwrite=overwrite)


def _table_reader(separator: str) -> Reader:
    def read(path: Path, o: ReadOptions) -> pl.DataFrame:
        if separator == "\t" and o.columns is None and _is_nist(head_lines(path)):
            return _read_nist(path, o)
        return read_table(path, columns=o.columns, kind=o.kind, text_columns=o.text_columns,
                          separator=separator, trial_id=o.trial_id)
    return read


def _write_table(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                 **_: Any) -> None:
    write_table(data, path, overwrite=overwrite)


def _read_parquet(path: Path, o: ReadOptions) -> pl.DataFrame:
    if o.columns or o.trial_id:
        with pq.unreadable_parquet(path):
            return _scan_parquet(path, o).collect()
    return pq.read_trials(path, kind=o.kind, max_row_group_bytes=o.max_row_group_bytes)


def _scan_parquet(path: Path, o: ReadOptions) -> pl.LazyFrame:
    if o.columns:  # other column names: renamed and checked on reading
        return read_table(path, columns=o.columns, kind=o.kind, trial_id=o.trial_id,
                          text_columns=o.text_columns).lazy()
    if o.trial_id:  # the scan's check has no trial_id: check on the scan
        lf = pq.scan_trials(path, kind=o.kind, max_row_group_bytes=o.max_row_group_bytes)
        return validate_trials(lf, kind=o.kind or infer_kind(lf.collect_schema().names()),
                               where=Place(path), trial_id=o.trial_id)
    return pq.scan_trials(path, kind=o.kind, check_data=o.check_data,
                          max_row_group_bytes=o.max_row_group_bytes)


def _write_parquet(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                   partition_by: Sequence[str] = (), **options: Any) -> None:
    known = ("chunk_rows", "progress", "validate", "trial_id")
    pq.write_trials(data, path, partition_by=tuple(partition_by), overwrite=overwrite,
                    **{k: v for k, v in options.items() if k in known})


def _read_h5(path: Path, o: ReadOptions) -> pl.DataFrame:
    return read_bosaris_hdf5(path, o.kind)


def _write_h5(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
              max_dense_bytes: int | None = DEFAULT_MAX_DENSE_BYTES, **_: Any) -> None:
    write_bosaris_hdf5(data, path, kind, overwrite=overwrite, max_dense_bytes=max_dense_bytes)


_LABEL_WORDS = ("target", "nontarget", "true", "false", "0", "1")

#: VoxCeleb verification lists: ``1 id10270/a.wav id10270/b.wav`` (1 = same speaker).
VOXCELEB_ORDER = ("label", "model", "segment")


def _is_voxceleb(head: list[str]) -> bool:
    """Lines of three fields whose first is ``0`` or ``1`` and whose third is no number or label.

    A BOSARIS key whose model is named ``1`` (``1 seg target``) is not a VoxCeleb list.
    """
    rows = [ln.split() for ln in head if ln.strip()][:20]
    if not rows:
        return False
    for r in rows:
        if len(r) != 3 or r[0] not in ("0", "1") or r[2].lower() in _LABEL_WORDS:
            return False
        try:
            float(r[2])
        except ValueError:
            continue
        return False
    return True


def _read_voxceleb(path: Path, o: ReadOptions) -> pl.DataFrame:
    if o.kind not in (None, "key"):
        raise FormatError(message(f"a VoxCeleb list is a key, not {o.kind}",
                                  where=Place(path), expected="label enroll test lines"))
    return read_text_trials(path, "key", fmt="VoxCeleb", order=VOXCELEB_ORDER)


def _write_voxceleb(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                    **_: Any) -> None:
    if kind != "key":
        raise FormatError(message(f"a VoxCeleb list holds a key, not {kind}",
                                  where=Place(path)))
    write_text_trials(data, path, "key", overwrite=overwrite, order=VOXCELEB_ORDER,
                      labels=("1", "0"))


def _read_list(path: Path, o: ReadOptions) -> pl.DataFrame:
    if not o.order:
        raise UsageError(message(
            "a headerless list needs its column order", where=Place(path),
            hint="Give --column-order (order= in Python), e.g. label,model,segment."))
    kind = fields_kind(o.order)
    if o.kind not in (None, kind):
        raise FormatError(message(f"column order {', '.join(o.order)} is a {kind}, not {o.kind}",
                                  where=Place(path)))
    return read_text_trials(path, kind, fmt="headerless list", order=o.order)


register_format(Format("parquet", "Parquet file or hive-partitioned dataset directory",
                       _read_parquet, _write_parquet, suffixes=(".parquet",),
                       scan=_scan_parquet, streams=True,
                       write_options=("partition_by", "chunk_rows", "progress", "validate",
                                      "trial_id")))
register_format(Format("bosaris-h5", "BOSARIS HDF5 Key, Ndx or Scores", _read_h5, _write_h5,
                       suffixes=(".h5", ".hdf5")))
register_format(Format("bosaris-txt", "BOSARIS text: model segment target|nontarget|score",
                       _text_reader("BOSARIS text"), _text_writer,
                       suffixes=(".txt", ".ndx", ".key", ".scores", ".lst")))
register_format(Format("nist", "NIST SRE TSV key (targettype) or system output (LLR)",
                       _read_nist, _write_nist, sniff=_is_nist, sniff_for=("tsv",)))
register_format(Format("kaldi", "Kaldi trials (enroll test target|nontarget) and scores",
                       _text_reader("Kaldi"), _text_writer,
                       matches_name=lambda n: n == "trials" or n.endswith("trials")))
register_format(Format("csv", "CSV with a header (--columns maps other names)",
                       _table_reader(","), _write_table, suffixes=(".csv",)))
register_format(Format("tsv", "TSV with a header (--columns maps other names)",
                       _table_reader("\t"), _write_table, suffixes=(".tsv", ".tab")))
register_format(Format("voxceleb", "VoxCeleb list: 1|0 enroll test (1 = same speaker)",
                       _read_voxceleb, _write_voxceleb, sniff=_is_voxceleb,
                       sniff_for=("bosaris-txt", "kaldi")))
register_format(Format("list", "headerless list in any column order (--column-order)",
                       _read_list, None))
