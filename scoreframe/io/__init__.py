"""Readers and writers of trial tables (the I/O layer).

Every reader returns a polars frame in the canonical schema (:mod:`scoreframe.schema`); every
writer is atomic and never touches its inputs. :func:`read_any` / :func:`write_any` dispatch on
a format name (or the file name) for the CLI's ``convert``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from scoreframe.errors import FormatError, message
from scoreframe.io.bosaris_hdf5 import read_bosaris_hdf5, write_bosaris_hdf5
from scoreframe.io.parquet import read_trials, scan_trials, write_trials
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
    "FORMATS",
    "guess_format",
    "read_any",
    "read_bosaris_hdf5",
    "read_kaldi_scores",
    "read_kaldi_trials",
    "read_key_txt",
    "read_ndx_txt",
    "read_nist_key",
    "read_nist_scores",
    "read_scores_txt",
    "read_table",
    "read_trials",
    "scan_trials",
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
    """Format name from a path: a directory or ``.parquet`` is parquet, ``.h5`` BOSARIS, ..."""
    p = Path(path)
    suffix = p.suffix.lower()
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
    if p.name == "trials" or p.name.endswith("trials"):
        return "kaldi"
    raise FormatError(message(f"cannot tell the format of `{p}` from its name",
                              expected=" | ".join(FORMATS),
                              hint="Name it with --from / --to."))


def read_any(path: str | Path, *, fmt: str | None = None, kind: Kind | None = None,
             columns: dict[str, str] | None = None) -> pl.DataFrame:
    """Read a key, ndx, scores or trials table in any supported format.

    ``kind`` is needed for text formats that cannot tell a key from scores by their content
    (BOSARIS text and Kaldi default to ``key`` when the third field is a label).
    """
    fmt = fmt or guess_format(path)
    if fmt == "parquet":
        return read_trials(path, kind=kind)
    if fmt == "bosaris-h5":
        return read_bosaris_hdf5(path, kind)
    if fmt in ("bosaris-txt", "kaldi"):
        return read_text_trials(path, kind or _sniff_text_kind(Path(path)),
                                fmt="Kaldi" if fmt == "kaldi" else "BOSARIS text")
    if fmt == "nist":
        return read_nist_scores(path) if kind == "scores" else (
            read_nist_key(path) if kind == "key" else _nist_sniff(Path(path)))
    if fmt in ("csv", "tsv"):
        return read_table(path, columns=columns, kind=kind,
                          separator="," if fmt == "csv" else "\t")
    raise FormatError(message("unknown format", expected=" | ".join(FORMATS), got=repr(fmt)))


def _sniff_text_kind(path: Path) -> Kind:
    if not path.is_file():
        raise FormatError(message(f"no such file `{path}`"))
    with path.open() as fh:
        for line in fh:
            fields = line.split()
            if not fields:
                continue
            if len(fields) == 2:
                return "ndx"
            try:
                float(fields[2])
            except (ValueError, IndexError):
                return "key"
            return "scores"
    raise FormatError(message("no trials", where=f"`{path}`", expected="at least one line",
                              got="an empty file"))


def _nist_sniff(path: Path) -> pl.DataFrame:
    with path.open() as fh:
        header = fh.readline().rstrip("\n").split("\t")
    return read_nist_scores(path) if "LLR" in header else read_nist_key(path)


def write_any(data: pl.DataFrame, path: str | Path, *, fmt: str, kind: Kind,
              overwrite: bool = False, partition_by: tuple[str, ...] = ()) -> None:
    """Write a table in the given format (see :data:`FORMATS`)."""
    if fmt == "parquet":
        write_trials(data, path, partition_by=partition_by, overwrite=overwrite)
    elif fmt == "bosaris-h5":
        write_bosaris_hdf5(data, path, kind, overwrite=overwrite)
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
