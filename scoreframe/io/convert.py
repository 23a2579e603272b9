"""Convert a trial table between formats: outputs planned and checked first, Parquet streamed.

I/O orchestration above :mod:`scoreframe.io`: :func:`plan_outputs` says which files a
conversion writes (paired formats such as BOSARIS text write a key and a scores file);
:func:`convert_trials` checks every one of them before any work starts, then writes them all or
nothing. Parquet to Parquet streams through :func:`scoreframe.io.write_trials` in batches, so a
dataset larger than memory converts (and repartitions) without being collected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from scoreframe import io as sio
from scoreframe.errors import UsageError, message
from scoreframe.frames.schema import Kind
from scoreframe.io.atomic import atomic_outputs, check_outputs
from scoreframe.io.bosaris_hdf5 import DEFAULT_MAX_DENSE_BYTES
from scoreframe.io.parquet import infer_kind, write_trials

__all__ = ["PAIRED_FORMATS", "ConvertResult", "convert_trials", "output_format",
           "plan_outputs"]

#: Formats that keep a key (or trial list) and the scores in two files.
PAIRED_FORMATS = ("bosaris-h5", "bosaris-txt", "kaldi", "nist")


@dataclass(frozen=True)
class ConvertResult:
    """What :func:`convert_trials` wrote: rows, the table kind and the output paths."""

    rows: int
    kind: Kind
    paths: tuple[Path, ...]


def output_format(output: str | Path, to: str | None = None) -> str:
    """The output format: ``to``, else from the file name (no suffix: a Parquet dataset).

    Examples
    --------
    >>> output_format("out"), output_format("x.h5"), output_format("x.csv", "tsv")
    ('parquet', 'bosaris-h5', 'tsv')
    """
    if to:
        return to
    return "parquet" if not Path(output).suffix else sio.guess_format(output)


def plan_outputs(output: str | Path, *, to: str, kind: Kind, key_out: str | Path | None = None,
                 scores_out: str | Path | None = None) -> list[tuple[Kind, Path]]:
    """The ``(what, path)`` pairs a conversion writes, ``what`` being a table kind.

    Paired formats write the key (or trial list) to ``<stem>_key<ext>`` and the scores to
    ``<stem>_scores<ext>`` (or ``key_out``/``scores_out``); a table with only one of them
    writes that one to ``output``. Other formats write ``output``.

    Examples
    --------
    >>> [(k, str(p)) for k, p in plan_outputs("out.txt", to="bosaris-txt", kind="trials")]
    [('key', 'out_key.txt'), ('scores', 'out_scores.txt')]
    >>> [(k, str(p)) for k, p in plan_outputs("o.h5", to="bosaris-h5", kind="ndx")]
    [('ndx', 'o.h5')]
    >>> [(k, str(p)) for k, p in plan_outputs("ds", to="parquet", kind="trials")]
    [('trials', 'ds')]
    """
    if to not in PAIRED_FORMATS:
        return [(kind, Path(output))]
    jobs: list[Kind] = []
    if kind in ("trials", "key", "ndx") and not (to == "nist" and kind == "ndx"):
        jobs.append("key" if kind in ("trials", "key") else "ndx")
    if kind in ("trials", "scores"):
        jobs.append("scores")
    if not jobs:
        raise UsageError(message(f"nothing to write in {to}", got=f"a {kind} table"))
    p = Path(output)
    if len(jobs) == 1:
        single = key_out if jobs[0] != "scores" else scores_out
        return [(jobs[0], Path(single or output))]
    ext = p.suffix or {"bosaris-h5": ".h5", "nist": ".tsv"}.get(to, ".txt")
    stem = p.with_suffix("")
    kpath = Path(key_out) if key_out else stem.with_name(stem.name + "_key" + ext)
    spath = Path(scores_out) if scores_out else stem.with_name(stem.name + "_scores" + ext)
    return [(jobs[0], kpath), ("scores", spath)]


def convert_trials(data: pl.LazyFrame | pl.DataFrame, output: str | Path, *,
                   to: str | None = None, key_out: str | Path | None = None,
                   scores_out: str | Path | None = None, partition_by: Sequence[str] = (),
                   overwrite: bool = False, inputs: Sequence[str | Path] = (),
                   trial_id: Sequence[str] | None = None,
                   progress: Callable[[int], None] | None = None,
                   max_dense_bytes: int | None = DEFAULT_MAX_DENSE_BYTES) -> ConvertResult:
    """Write a trial table in another format, all outputs or none.

    Parameters
    ----------
    data
        The (checked) trial table; a LazyFrame is streamed when the output is Parquet.
    output
        Output file, directory (Parquet dataset) or stem (paired formats).
    to
        Output format (:func:`scoreframe.io.format_names`); default from ``output``'s name.
    key_out, scores_out
        Paired formats: explicit paths of the two files.
    partition_by
        Parquet: partition columns.
    overwrite
        Replace existing outputs; otherwise any existing output is an error raised before
        anything is read or written.
    inputs
        Input paths: an output equal to, inside or containing one is refused.
    trial_id
        Parquet: the columns that identify a trial, for the duplicate check of what is
        written (recorded in the dataset, which later reads do not check again).
    progress
        Optional ``progress(rows_written)`` (Parquet output).
    max_dense_bytes
        BOSARIS HDF5: refuse to write when the dense model x segment matrices would exceed
        this many bytes (``None``: no limit); see :func:`scoreframe.io.write_bosaris_hdf5`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> df = pl.DataFrame({"model": ["m1", "m1"], "segment": ["s1", "s2"],
    ...                    "label": [True, False], "score": [1.5, -0.5]})
    >>> res = convert_trials(df, d / "out.txt", to="bosaris-txt")
    >>> res.rows, [p.name for p in res.paths]
    (2, ['out_key.txt', 'out_scores.txt'])
    """
    fmt = output_format(output, to)
    lf = data.lazy()
    names = lf.collect_schema().names()
    kind = infer_kind(names)
    plan = plan_outputs(output, to=fmt, kind=kind, key_out=key_out, scores_out=scores_out)
    paths = check_outputs([p for _, p in plan], overwrite=overwrite, inputs=inputs)
    if fmt == "parquet":
        written = [0]

        def count(n: int) -> None:
            written[0] = n
            if progress is not None:
                progress(n)

        write_trials(lf, output, partition_by=tuple(partition_by), overwrite=overwrite,
                     trial_id=trial_id, progress=count)
        return ConvertResult(written[0], kind, tuple(paths))
    df = lf.collect()
    if fmt in PAIRED_FORMATS and "system" in names and df["system"].n_unique() > 1:
        raise UsageError(message(f"{fmt} holds one system", got=f"{df['system'].n_unique()} "
                                 "systems", hint="Select one with --where \"system = 'x'\"."))
    with atomic_outputs(paths, overwrite=overwrite, inputs=inputs) as tmps:
        for (job, _), tmp in zip(plan, tmps, strict=True):
            sio.write_any(df, tmp, fmt=fmt, kind=job, max_dense_bytes=max_dense_bytes)
    return ConvertResult(df.height, kind, tuple(paths))
