"""Readers and writers of trial tables (the I/O layer).

Every reader returns a polars frame in the canonical schema (:mod:`scoreframe.schema`); every
writer is atomic and never touches its inputs. :func:`read_any` / :func:`write_any` dispatch on
a format name (or the file name) for the CLI's ``convert``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from scoreframe.errors import FormatError, message
from scoreframe.io.atomic import atomic_outputs, consistent_read
from scoreframe.io.bosaris_hdf5 import (
    DEFAULT_MAX_DENSE_BYTES,
    read_bosaris_hdf5,
    write_bosaris_hdf5,
)
from scoreframe.io.lines import DEFAULT_MAX_LINE_BYTES, max_line_bytes, read_source
from scoreframe.io.lines import max_line_bytes as _line_limit
from scoreframe.io.multiclass import (
    read_lre22_key,
    read_lre22_scores,
    read_multiclass_scores,
    read_multiclass_truth,
)
from scoreframe.io.parquet import (
    dataset_validated,
    read_trials,
    scan_trials,
    validation_mark,
    write_trials,
)
from scoreframe.io.tables import (
    read_nist_key,
    read_nist_scores,
    read_table,
    write_nist_key,
    write_nist_scores,
    write_table,
)
from scoreframe.io.text import (
    read_kaldi_scores,
    read_kaldi_trials,
    read_key_txt,
    read_ndx_txt,
    read_scores_txt,
    read_text_trials,
    write_text_trials,
)
from scoreframe.schema import Kind

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "FORMATS",
    "dataset_validated",
    "guess_format",
    "max_line_bytes",
    "read_any",
    "read_bosaris_hdf5",
    "read_kaldi_scores",
    "read_kaldi_trials",
    "read_key_txt",
    "read_lre22_key",
    "read_lre22_scores",
    "read_multiclass_scores",
    "read_multiclass_truth",
    "read_ndx_txt",
    "read_nist_key",
    "read_nist_scores",
    "read_scores_txt",
    "read_table",
    "read_trials",
    "scan_trials",
    "validation_mark",
    "write_all",
    "write_any",
    "write_bosaris_hdf5",
    "write_nist_key",
    "write_nist_scores",
    "write_table",
    "write_text_trials",
    "write_trials",
]

FORMATS = ("parquet", "bosaris-h5", "bosaris-txt", "nist", "kaldi", "csv", "tsv")


def guess_format(path: str | Path) -> str:
    """Format name from a path: a directory or ``.parquet`` is parquet, ``.h5`` BOSARIS, ...

    A trailing ``.gz`` is looked through (``key.txt.gz`` is BOSARIS text).

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
    if p.is_dir() or suffix == ".parquet":
        return "parquet"
    if suffix in (".h5", ".hdf5"):
        return "bosaris-h5"
    if suffix == ".csv":
        return "csv"
    if suffix in (".tsv", ".tab"):
        return "tsv"
    if suffix in (".txt", ".ndx", ".key", ".scores", ".lst"):
        return "bosaris-txt"
    if name == "trials" or name.endswith("trials"):
        return "kaldi"
    raise FormatError(message(f"cannot tell the format of `{p}` from its name",
                              expected=" | ".join(FORMATS),
                              hint="Name it with --from / --to."))


def read_any(path: str | Path, *, fmt: str | None = None, kind: Kind | None = None,
             columns: dict[str, str] | None = None,
             text_columns: Sequence[str] = (),
             max_line_bytes: int | None = None) -> pl.DataFrame:
    """Read a key, ndx, scores or trials table in any supported format.

    ``kind`` is needed for text formats that cannot tell a key from scores by their content
    (BOSARIS text and Kaldi default to ``key`` when the third field is a label).
    ``text_columns`` name columns of CSV/TSV/NIST tables read as text, never as numbers
    (conditions to group by: ``01`` and ``1`` stay apart). ``max_line_bytes`` is the longest
    line of a text format accepted (default 1 MiB, or as set by :func:`max_line_bytes`): a
    longer line is an error naming the file and line, found in bounded memory. A file or
    dataset replaced by another process during the read is read again
    (:func:`scoreframe.io.atomic.consistent_read`).
    """
    with _line_limit(max_line_bytes):
        return consistent_read(path, lambda: _read_any(
            path, fmt=fmt, kind=kind, columns=columns, text_columns=text_columns))


def _read_any(path: str | Path, *, fmt: str | None, kind: Kind | None,
              columns: dict[str, str] | None, text_columns: Sequence[str]) -> pl.DataFrame:
    fmt = fmt or guess_format(path)
    if fmt == "parquet":
        return read_trials(path, kind=kind)
    if fmt == "bosaris-h5":
        return read_bosaris_hdf5(path, kind)
    if fmt in ("bosaris-txt", "kaldi"):
        return read_text_trials(path, kind or _sniff_text_kind(Path(path)),
                                fmt="Kaldi" if fmt == "kaldi" else "BOSARIS text")
    if fmt == "nist":
        return _nist_sniff(Path(path), kind, text_columns)
    if fmt == "tsv" and columns is None and _is_nist(Path(path)):
        return _read_any(path, fmt="nist", kind=kind, columns=None, text_columns=text_columns)
    if fmt in ("csv", "tsv"):
        return read_table(path, columns=columns, kind=kind, text_columns=text_columns,
                          separator="," if fmt == "csv" else "\t")
    raise FormatError(message("unknown format", expected=" | ".join(FORMATS), got=repr(fmt)))


def _head_lines(path: Path, n_bytes: int = 1 << 16) -> list[str]:
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


def _sniff_text_kind(path: Path) -> Kind:
    for line in _head_lines(path):
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


def _tsv_header(path: Path) -> set[str]:
    """The column names of a TSV's header line (exact, as the readers match them)."""
    head = _head_lines(path)
    return set(head[0].split("\t")) if head else set()


def _is_nist(path: Path) -> bool:
    """A TSV whose header has NIST's ``modelid``, ``segmentid`` and ``targettype`` or ``LLR``."""
    names = _tsv_header(path)
    return {"modelid", "segmentid"} <= names and bool(names & {"targettype", "LLR"})


def _nist_sniff(path: Path, kind: Kind | None = None,
                text_columns: Sequence[str] = ()) -> pl.DataFrame:
    """A NIST TSV by its header: a key, a system output, or both (``targettype`` and ``LLR``)."""
    header = _tsv_header(path)
    if {"targettype", "LLR"} <= header:  # key and scores in one table: trials
        return read_table(path, columns={"model": "modelid", "segment": "segmentid",
                                         "label": "targettype", "score": "LLR"},
                          kind=kind or "trials", separator="\t", text_columns=text_columns)
    if kind in ("scores", "key"):
        return read_nist_scores(path) if kind == "scores" else read_nist_key(
            path, text_columns=text_columns)
    return read_nist_scores(path) if "LLR" in header else read_nist_key(
        path, text_columns=text_columns)


def write_any(data: pl.DataFrame, path: str | Path, *, fmt: str, kind: Kind,
              overwrite: bool = False, partition_by: tuple[str, ...] = (),
              max_dense_bytes: int | None = DEFAULT_MAX_DENSE_BYTES) -> None:
    """Write a table in the given format (see :data:`FORMATS`).

    ``max_dense_bytes`` applies to BOSARIS HDF5 (see :func:`write_bosaris_hdf5`).
    """
    if fmt == "parquet":
        write_trials(data, path, partition_by=partition_by, overwrite=overwrite)
    elif fmt == "bosaris-h5":
        write_bosaris_hdf5(data, path, kind, overwrite=overwrite,
                           max_dense_bytes=max_dense_bytes)
    elif fmt in ("bosaris-txt", "kaldi"):
        write_text_trials(data, path, kind, overwrite=overwrite)
    elif fmt == "nist":
        if kind == "scores":
            write_nist_scores(data, path, overwrite=overwrite)
        else:
            write_nist_key(data, path, overwrite=overwrite)
    elif fmt in ("csv", "tsv"):
        write_table(data, path, overwrite=overwrite)
    else:
        raise FormatError(message("unknown format", expected=" | ".join(FORMATS),
                                  got=repr(fmt)))


def write_all(jobs: Sequence[tuple[pl.DataFrame, str | Path, str, Kind]], *,
              overwrite: bool = False, inputs: Sequence[str | Path] = (),
              max_dense_bytes: int | None = DEFAULT_MAX_DENSE_BYTES) -> None:
    """Write several outputs all or nothing (e.g. a key and a scores file).

    Every target is checked (existing without ``overwrite``, equal to or inside an input)
    before any work starts; all are written under temporary names and renamed at the end; if
    any write fails, no target is created or replaced and no temporary is left.

    Parameters
    ----------
    jobs
        ``(data, path, fmt, kind)`` for each output, as :func:`write_any` takes them.
    overwrite
        Replace existing outputs.
    inputs
        The input files of the computation (never modified).
    max_dense_bytes
        BOSARIS HDF5 limit (see :func:`write_bosaris_hdf5`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> df = pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0], "label": [True]})
    >>> write_all([(df, d / "k.txt", "bosaris-txt", "key"),
    ...            (df, d / "s.txt", "bosaris-txt", "scores")])
    >>> sorted(p.name for p in d.iterdir())
    ['k.txt', 's.txt']
    """
    targets = [Path(j[1]) for j in jobs]
    with atomic_outputs(targets, overwrite=overwrite, inputs=inputs) as temps:
        for (data, _, fmt, kind), tmp in zip(jobs, temps, strict=True):
            # a temporary path with the target's name (writers look at the suffix)
            write_any(data, tmp, fmt=fmt, kind=kind, max_dense_bytes=max_dense_bytes)
