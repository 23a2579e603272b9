"""Readers and writers of trial tables (the I/O layer).

Every reader returns a polars frame in the canonical schema (:mod:`scoreframe.frames.schema`); every
writer is atomic and never touches its inputs. :func:`read_trials`, :func:`scan_trials`,
:func:`write_trials`, :func:`read_any` and :func:`write_any` dispatch on a format name (or the
file name) through the format registry (:func:`register_format`), which also gives the command
line its ``--from``/``--to`` choices.

May import: errors, checks, frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from scoreframe.frames.schema import Kind
from scoreframe.io._formats import (
    Format,
    ReadOptions,
    format_names,
    get_format,
    guess_format,
    load_trials,
    read_any,
    read_trials,
    register_format,
    scan_trials,
    write_any,
    write_trials,
)
from scoreframe.io.atomic import atomic_outputs
from scoreframe.io.bosaris_hdf5 import (
    DEFAULT_MAX_DENSE_BYTES,
    read_bosaris_hdf5,
    write_bosaris_hdf5,
)
from scoreframe.io.lines import max_line_bytes
from scoreframe.io.multiclass import (
    read_lre22_key,
    read_lre22_scores,
    read_multiclass_scores,
    read_multiclass_truth,
)
from scoreframe.io.parquet import dataset_validated
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

__all__ = [
    "Format",
    "ReadOptions",
    "dataset_validated",
    "format_names",
    "get_format",
    "guess_format",
    "load_trials",
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
    "read_text_trials",
    "read_trials",
    "register_format",
    "scan_trials",
    "write_all",
    "write_any",
    "write_bosaris_hdf5",
    "write_nist_key",
    "write_nist_scores",
    "write_table",
    "write_text_trials",
    "write_trials",
]

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

    See Also
    --------
    scoreframe.write_trials : One dataset.
    scoreframe.io.write_any : One file in any format.

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
