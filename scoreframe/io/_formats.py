"""The format registry: every trial-table format is one entry (name, reader, writer, sniffers).

I/O layer; imports the readers and writers of this package only. :func:`read_any`,
:func:`write_any` and :func:`guess_format` dispatch through the registry, and so do the
library's path inputs (:func:`scoreframe.io.load_trials`), the command line's ``--from`` /
``--to`` choices and the malformed-input catalogue of the tests: a format added with
:func:`register_format` is available to all of them at once.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from scoreframe.errors import FormatError, UsageError, message
from scoreframe.frames.schema import Kind, validate_trials
from scoreframe.io.atomic import consistent_read
from scoreframe.io.bosaris_hdf5 import (
    DEFAULT_MAX_DENSE_BYTES,
    read_bosaris_hdf5,
    write_bosaris_hdf5,
)
from scoreframe.io.lines import max_line_bytes as line_limit
from scoreframe.io.lines import read_source
from scoreframe.io.parquet import apply_where, infer_kind, read_trials, scan_trials, write_trials
from scoreframe.io.tables import (
    read_nist_key,
    read_nist_scores,
    read_table,
    write_nist_key,
    write_nist_scores,
    write_table,
)
from scoreframe.io.text import fields_kind, read_text_trials, write_text_trials

__all__ = ["Format", "ReadOptions", "Reader", "Writer", "format_names", "get_format",
           "guess_format", "head_lines", "load_trials", "read_any", "register_format", "write_any"]


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


class Reader(Protocol):
    """``read(path, options) -> DataFrame`` in the canonical schema."""

    def __call__(self, path: Path, options: ReadOptions, /) -> pl.DataFrame: ...


#: ``write(data, path, *, kind, overwrite, **options)``, atomic; options it does not take are
#: ignored (``partition_by`` means nothing to a text file).
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
        raise FormatError(message(f"cannot tell the format of `{p}` from its name",
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
    name = fmt or guess_format(path)
    f = get_format(name)
    read = f.read
    if read is None:
        raise FormatError(message(f"format `{name}` cannot be read",
                                  expected=" | ".join(format_names(readable=True))))
    options = ReadOptions(kind=kind, columns=columns, order=tuple(order) if order else None,
                          text_columns=tuple(text_columns))
    with line_limit(max_line_bytes):  # a file replaced during the read is read again
        return consistent_read(path, lambda: read(Path(path), options))


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
    p = Path(path)
    if not p.exists() and not any(ch in str(path) for ch in "*?["):
        raise FormatError(message(f"no such file or directory `{path}`"))
    name = fmt or guess_format(path)
    if name == "parquet" and columns:  # other column names: renamed and checked on reading
        lf = read_table(path, columns=columns, kind=kind, trial_id=trial_id,
                        text_columns=text_columns).lazy()
    elif name == "parquet" and trial_id:  # scan_trials has no trial_id: check on the scan
        lf = scan_trials(path)
        lf = validate_trials(lf, kind=infer_kind(lf.collect_schema().names()),
                             where=f"`{path}`", trial_id=trial_id)
    elif name == "parquet":
        lf = scan_trials(path, check_data=True)
    elif name in ("csv", "tsv") and trial_id and not (name == "tsv" and columns is None
                                                      and _is_nist(head_lines(p))):
        lf = read_table(path, columns=columns, kind=kind, separator="," if name == "csv"
                        else "\t", trial_id=trial_id, text_columns=text_columns).lazy()
    else:
        lf = read_any(path, fmt=name, kind=kind, columns=columns, order=order,
                      text_columns=text_columns).lazy()
    return apply_where(lf, where, source=f"`{path}`")


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
                          separator=separator)
    return read


def _write_table(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                 **_: Any) -> None:
    write_table(data, path, overwrite=overwrite)


def _read_parquet(path: Path, o: ReadOptions) -> pl.DataFrame:
    return read_trials(path, kind=o.kind)


def _write_parquet(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                   partition_by: Sequence[str] = (), **_: Any) -> None:
    write_trials(data, path, partition_by=tuple(partition_by), overwrite=overwrite)


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
                                  where=f"`{path}`", expected="label enroll test lines"))
    return read_text_trials(path, "key", fmt="VoxCeleb", order=VOXCELEB_ORDER)


def _write_voxceleb(data: pl.DataFrame, path: Path, *, kind: Kind, overwrite: bool,
                    **_: Any) -> None:
    if kind != "key":
        raise FormatError(message(f"a VoxCeleb list holds a key, not {kind}",
                                  where=f"`{path}`"))
    write_text_trials(data, path, "key", overwrite=overwrite, order=VOXCELEB_ORDER,
                      labels=("1", "0"))


def _read_list(path: Path, o: ReadOptions) -> pl.DataFrame:
    if not o.order:
        raise UsageError(message(
            "a headerless list needs its column order", where=f"`{path}`",
            hint="Give --column-order (order= in Python), e.g. label,model,segment."))
    kind = fields_kind(o.order)
    if o.kind not in (None, kind):
        raise FormatError(message(f"column order {', '.join(o.order)} is a {kind}, not {o.kind}",
                                  where=f"`{path}`"))
    return read_text_trials(path, kind, fmt="headerless list", order=o.order)


register_format(Format("parquet", "Parquet file or hive-partitioned dataset directory",
                       _read_parquet, _write_parquet, suffixes=(".parquet",)))
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
