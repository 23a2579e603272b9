"""Reading what the command line names: datasets, quality tables, models; guarding outputs.

Views layer: turns option values into library calls; every problem is a
:class:`~scoreframe.errors.UsageError` or another :class:`~scoreframe.errors.ScoreframeError`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import polars as pl

from scoreframe import io as sio
from scoreframe.errors import FormatError, Place, ScoreframeError, UsageError, message
from scoreframe.frames._sql_guard import check_where
from scoreframe.frames.align import align, join_metadata
from scoreframe.frames.schema import Kind
from scoreframe.io.atomic import atomic_output, check_outputs
from scoreframe.io.parquet import scan_trials, write_trials

if TYPE_CHECKING:
    from scoreframe.estimators.base import Estimator

__all__ = ["ReadingKwargs", "check_output_format", "dataset_label", "dataset_source",
           "guard_outputs", "input_paths", "load_dataset",
           "load_model_kind", "named_paths", "other_system", "parse_columns", "parse_missing",
           "quality_table", "read_sql", "reading_kwargs", "scored_format", "sql_source",
           "table_map", "with_joins", "write_scored"]


def parse_columns(text: str | None) -> dict[str, str] | None:
    """``model=enroll,segment=test`` -> ``{"model": "enroll", "segment": "test"}``.

    Examples
    --------
    >>> parse_columns("model=enroll, score=llr")
    {'model': 'enroll', 'score': 'llr'}
    """
    if not text:
        return None
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise UsageError(f"--columns takes canonical=source pairs (model=enroll,...); "
                             f"got {part!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def parse_missing(text: str) -> str | float:
    """``error``, ``drop`` or a fill value.

    Examples
    --------
    >>> parse_missing("drop"), parse_missing("-5")
    ('drop', -5.0)
    """
    if text in ("error", "drop"):
        return text
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"--missing takes error, drop or a number; got {text!r}") from None


def _format_of(path: str) -> str:
    if not Path(path).exists() and not any(ch in path for ch in "*?["):
        raise FormatError(message("no such file or directory", path=path))
    return sio.guess_format(path)


def load_dataset(path: str, fmt: str | None = None, kind: Kind | None = None,
                 columns: dict[str, str] | None = None, *, where: str | None = None,
                 trial_id: Sequence[str] | None = None, order: Sequence[str] | None = None,
                 text_columns: Sequence[str] = ()) -> pl.LazyFrame:
    """A checked trial table from any registered format: :func:`scoreframe.io.load_trials`.

    ``trial_id`` names the columns that identify a trial (duplicates are checked on them);
    ``where`` filters the trials after the checks; ``text_columns`` (the conditions a command
    groups by) are read from text tables as text, so ``01`` and ``1`` stay apart.
    """
    return sio.load_trials(path, fmt=fmt, kind=kind, columns=columns, order=order,
                           where=where, trial_id=trial_id, text_columns=text_columns)


class ReadingKwargs(TypedDict):
    """The reading options of a command, as :func:`load_dataset` takes them."""

    fmt: str | None
    columns: dict[str, str] | None
    order: Sequence[str] | None
    trial_id: Sequence[str] | None
    text_columns: Sequence[str]


def reading_kwargs(a: object) -> ReadingKwargs:
    """The reading options as keyword arguments of :func:`load_dataset`.

    ``fmt``, ``columns``, ``order`` and ``trial_id`` come from ``--from``, ``--columns``,
    ``--column-order`` and ``--trial-id``; the ``--by`` and ``--equalize-by`` columns are
    read as text.
    """
    text = [*(getattr(a, "by", None) or []), *(getattr(a, "equalize_by", None) or [])]
    return {"fmt": getattr(a, "from_", None), "columns": parse_columns(getattr(a, "columns", None)),
            "order": getattr(a, "column_order", None) or None,
            "trial_id": getattr(a, "trial_id", None) or None,
            "text_columns": [c for c in text if c != "system"]}


def dataset_source(a: argparse.Namespace, *, library_trial_id: bool = False) -> str | pl.LazyFrame:
    """The ``DATASET`` of a command, ready for the library.

    With ``--key K --scores S`` instead of a dataset, the two files are read (any registered
    format) and aligned as ``convert --key K --scores S`` aligns them: trials that do not
    align are an error naming counts and examples. Each ``--join FILE --on COL ...`` joins a
    metadata table (:func:`scoreframe.frames.align.join_metadata`: a missing or repeated key is an
    error naming the rows).

    A Parquet path is passed as is (the library scans it and prunes partitions); any other
    file goes through :func:`load_dataset` with the reading options (``--from``,
    ``--columns``, ``--trial-id``) into a checked LazyFrame. With ``--trial-id`` a Parquet
    path is also checked here, unless the library function takes ``trial_id`` itself
    (``library_trial_id=True``, e.g. :func:`scoreframe.results.evaluate.evaluate`).
    """
    src = sql_source(a) if getattr(a, "sql", None) else \
        _trials_source(a, library_trial_id=library_trial_id)
    joins = list(zip(getattr(a, "join", None) or [], getattr(a, "on", None) or [], strict=True))
    if not joins:
        return src
    return with_joins(scan_trials(src) if isinstance(src, str) else src, a)


def with_joins(lf: pl.LazyFrame, a: object) -> pl.LazyFrame:
    """``lf`` with each ``--join FILE --on COL ...`` of the command joined to it, in order."""
    for table, on in zip(getattr(a, "join", None) or [], getattr(a, "on", None) or [],
                         strict=True):
        lf = join_metadata(lf, table, on=on)
    return lf


def table_map(tokens: Sequence[str]) -> dict[str, str]:
    """``--table NAME=PATH`` values as a mapping; a name given twice is an error.

    Names are compared ignoring case, as SQL compares them; the library checks each name.

    Examples
    --------
    >>> table_map(["models=m.csv", "segs=s.parquet"])
    {'models': 'm.csv', 'segs': 's.parquet'}
    """
    out: dict[str, str] = {}
    for t in tokens:
        name, _, path = t.partition("=")
        name = name.strip()
        twice = next((n for n in out if n.lower() == name.lower()), None)
        if twice is not None:
            raise UsageError(f"--table {name}: the name is given twice (as `{twice}` before; "
                             "SQL names ignore case); give each table one distinct name")
        out[name] = path
    return out


#: Largest SQL file read (bytes): a query is text typed by a person, never a data file.
MAX_SQL_BYTES = 1 << 20


def read_sql(path: Path) -> str:
    """The text of an SQL file: UTF-8, at most :data:`MAX_SQL_BYTES`, else a clear error."""
    if not path.is_file():
        raise UsageError("no such SQL file", path=path)
    size = path.stat().st_size
    if size > MAX_SQL_BYTES:
        raise ScoreframeError(message("the SQL file is too large", where=Place(path),
                                      expected=f"at most {MAX_SQL_BYTES:,} bytes of SQL",
                                      got=f"{size:,} bytes",
                                      hint="Give the file with the query, not a data file."))
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScoreframeError(message("the SQL file is not UTF-8 text", where=Place(path),
                                      got=f"byte 0x{data[exc.start]:02x} at offset "
                                          f"{exc.start}")) from None


def sql_source(a: argparse.Namespace) -> pl.LazyFrame:
    """``--sql FILE`` over ``DATASET`` and the ``--table`` tables, as a streaming LazyFrame.

    The query is checked (one read-only ``SELECT``, the tables' names and files) before any
    trial is read; see :func:`scoreframe.frames.sql.scan_query`.
    """
    from scoreframe.frames.sql import scan_query

    if getattr(a, "key", None):
        raise UsageError("--sql reads the Parquet DATASET as the table `trials`; --key/--scores "
                         "do not apply (convert them first)")
    path = a.sql
    return scan_query(read_sql(Path(path)), a.dataset,
                      tables=table_map(getattr(a, "table", None) or []), sql_name=path)


def _trials_source(a: argparse.Namespace, *, library_trial_id: bool) -> str | pl.LazyFrame:
    if getattr(a, "table", None):
        raise UsageError("--table names a table for --sql; give --sql FILE too (or join a "
                         "metadata table with --join FILE --on COL)")
    kw = reading_kwargs(a)
    if getattr(a, "key", None):
        fmt, columns, order = kw["fmt"], kw["columns"], kw["order"]
        return align(load_dataset(a.key, fmt, "key", columns, order=order,
                                  text_columns=kw["text_columns"]),
                     load_dataset(a.scores, fmt, "scores", columns, order=order))
    path: str = a.dataset
    if ((kw["fmt"] or _format_of(path)) == "parquet" and not kw["columns"]
            and (library_trial_id or not kw["trial_id"])):
        return path
    lf = load_dataset(path, **kw)
    check_where(getattr(a, "where", None), lf, source=Place(path))  # named on the file
    return lf


def dataset_label(a: argparse.Namespace) -> str:
    """How messages and titles name the command's input: ``DATASET`` or ``KEY + SCORES``."""
    if getattr(a, "key", None):
        return f"{a.key} + {a.scores}"
    return str(a.dataset)


def input_paths(a: object) -> list[str]:
    """The input files of a command (never to be written): the dataset or the key and scores."""
    return [*(p for p in (getattr(a, n, None) for n in ("dataset", "key", "scores", "sql"))
              if isinstance(p, str)), *(getattr(a, "join", None) or []),
            *(t.partition("=")[2] for t in getattr(a, "table", None) or [])]


def _suffix_format(output: str, machine: Sequence[str]) -> str:
    fmt = Path(output).suffix.lower().lstrip(".")
    if fmt not in machine:
        raise UsageError(f"cannot tell the format of -o {output} from its suffix; give "
                         f"--format {' or '.join(machine)}")
    return fmt


def check_output_format(a: argparse.Namespace, *, machine: Sequence[str],
                        needs_file: Sequence[str] = ("parquet",)) -> None:
    """Check ``-o``/``--format`` before any work (and settle ``--format``).

    Without ``--format`` the format comes from the suffix of ``-o`` (``r.csv``), else it is
    the command's default (a table). ``-o`` goes only with a machine format, binary formats
    only with ``-o``, and an existing ``-o`` only with ``--overwrite``.
    """
    output = a.output
    fmt = a.format or (_suffix_format(output, machine) if output
                       else getattr(a, "format_default", None) or "table")
    a.format = fmt
    if output and fmt not in machine:
        raise UsageError(f"-o needs --format {', '.join(machine)}; got --format {fmt}")
    if not output and fmt in needs_file:
        raise UsageError(f"--format {fmt} needs -o FILE")
    if output:
        inputs = [*(getattr(a, n) for n in ("dataset", "sql", "key", "scores", "truth")
                    if isinstance(getattr(a, n, None), str)),
                  *(getattr(a, "join", None) or []),
                  *(t.partition("=")[2] for t in getattr(a, "table", None) or [])]
        check_outputs([output], overwrite=a.overwrite, inputs=inputs)


def named_paths(tokens: Sequence[str]) -> list[tuple[str, str]]:
    """``NAME=PATH`` arguments as ``(name, path)``; a plain path is named by its file stem.

    A token is ``NAME=PATH`` when the part before the first ``=`` is a plain name (no path
    separator) and the whole token is not an existing file.

    Examples
    --------
    >>> named_paths(["a=dev/sys1.parquet", "dev/sys2.parquet"])
    [('a', 'dev/sys1.parquet'), ('sys2', 'dev/sys2.parquet')]
    """
    out: list[tuple[str, str]] = []
    for t in tokens:
        name, sep, path = t.partition("=")
        if sep and name and "/" not in name and "\\" not in name and not Path(t).exists():
            if not path:
                raise UsageError(f"`{t}`: NAME=PATH needs a path after `=`")
            out.append((name, path))
        else:
            out.append((Path(t).name.split(".")[0], t))
    names = [n for n, _ in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"system name(s) {', '.join(dup)} given twice; name each input "
                         "explicitly: NAME=PATH")
    return out


def guard_outputs(inputs: Sequence[str | Path | None], outputs: Sequence[str | Path], *,
                  overwrite: bool) -> None:
    """Before any work: refuse outputs that exist (without ``overwrite``) or touch an input."""
    check_outputs(outputs, overwrite=overwrite, inputs=[p for p in inputs if p])


def quality_table(path: str | None) -> pl.LazyFrame | None:
    """A quality table (``id`` + columns): parquet, csv or tsv, not validated as trials."""
    if path is None:
        return None
    fmt = sio.guess_format(path)
    if fmt == "parquet":
        return pl.scan_parquet(path if not Path(path).is_dir() else f"{path}/**/*.parquet")
    if fmt in ("csv", "tsv"):
        return pl.read_csv(path, separator="," if fmt == "csv" else "\t").lazy()
    raise UsageError("quality tables are parquet, csv or tsv", path=path)


def other_system(a: object) -> dict[str, bool]:
    """``{"allow_other_system": True}`` when ``--allow-other-system`` was given, else ``{}``."""
    return {"allow_other_system": True} if getattr(a, "allow_other_system", False) else {}


def load_model_kind(path: str, methods: tuple[str, ...]) -> Estimator:
    """Load a model file and check its ``method`` is one of ``methods``."""
    from scoreframe.estimators.models import load_model

    model = load_model(path)
    if model.method not in methods:
        raise UsageError(f"a {model.method} model; expected {' or '.join(methods)}", path=path)
    return model


def scored_format(path: str) -> str:
    """The format of an ``apply`` output: parquet (file or dataset), csv or tsv.

    Examples
    --------
    >>> scored_format("out"), scored_format("out.tsv")
    ('parquet', 'tsv')
    """
    fmt = "parquet" if not Path(path).suffix else sio.guess_format(path)
    if fmt not in ("parquet", "csv", "tsv"):
        raise UsageError(f"apply writes parquet, csv or tsv, not {fmt}")
    return fmt


def write_scored(out: pl.LazyFrame, path: str, overwrite: bool,
                 inputs: Sequence[str | None], *,
                 trials: bool = True) -> pl.LazyFrame:
    """Write an applied model's output; return a lazy view of what was written.

    ``trials=False`` (multiclass tables) writes plain Parquet, not a validated trial dataset.
    """
    guard_outputs(inputs, [path], overwrite=overwrite)
    fmt = scored_format(path)
    if fmt == "parquet" and not trials:
        df = out.collect()
        with atomic_output(path, overwrite=overwrite, inputs=[p for p in inputs if p]) as tmp:
            df.write_parquet(tmp)
        return df.lazy()
    if fmt == "parquet":
        write_trials(out, path, overwrite=overwrite)
        return scan_trials(path)
    df = out.collect()
    from scoreframe.io.tables import write_table

    write_table(df, path, overwrite=overwrite)
    return df.lazy()
