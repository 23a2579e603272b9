"""Reading what the command line names: datasets, quality tables, models; guarding outputs.

Views layer: turns option values into library calls; every problem is a
:class:`~scoreframe.errors.UsageError` or another :class:`~scoreframe.errors.ScoreframeError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from scoreframe import io as sio
from scoreframe._sql_guard import check_where
from scoreframe.errors import FormatError, UsageError, message
from scoreframe.io.atomic import atomic_output, check_outputs
from scoreframe.io.parquet import apply_where, infer_kind, scan_trials, write_trials
from scoreframe.schema import validate_trials

__all__ = ["check_output_format", "dataset_source", "guard_outputs", "load_dataset",
           "load_model_kind", "named_paths", "other_system", "parse_columns", "parse_missing",
           "quality_table", "reading_kwargs", "scored_format", "write_scored"]


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
        raise FormatError(message(f"no such file or directory `{path}`"))
    return sio.guess_format(path)


def load_dataset(path: str, fmt: str | None = None, kind: str | None = None,
                 columns: dict[str, str] | None = None, *, where: str | None = None,
                 trial_id: Sequence[str] | None = None,
                 text_columns: Sequence[str] = ()) -> pl.LazyFrame:
    """A checked trial table from any supported file (Parquet scanned lazily).

    ``trial_id`` names the columns that identify a trial (duplicates are checked on them);
    ``where`` filters the trials after the checks; ``text_columns`` (the conditions a command
    groups by) are read from text tables as text, so ``01`` and ``1`` stay apart.
    """
    f = fmt or _format_of(path)
    if f == "parquet" and trial_id:  # scan_trials has no trial_id: check on the scan
        lf = scan_trials(path)
        lf = validate_trials(lf, kind=infer_kind(lf.collect_schema().names()),
                             where=f"`{path}`", trial_id=trial_id)
    elif f == "parquet":
        lf = scan_trials(path, check_data=True)
    elif f in ("csv", "tsv") and trial_id:
        lf = sio.read_table(path, columns=columns, kind=kind,  # type: ignore[arg-type]
                            separator="," if f == "csv" else "\t", trial_id=trial_id,
                            text_columns=text_columns).lazy()
    else:
        lf = sio.read_any(path, fmt=f, kind=kind, columns=columns,  # type: ignore[arg-type]
                          text_columns=text_columns).lazy()
    return apply_where(lf, where, source=f"`{path}`")


def reading_kwargs(a: object) -> dict[str, object]:
    """The reading options as keyword arguments of :func:`load_dataset`.

    ``fmt``, ``columns`` and ``trial_id`` come from ``--from``, ``--columns`` and
    ``--trial-id``; the ``--by`` and ``--equalize-by`` columns are read as text.
    """
    text = [*(getattr(a, "by", None) or []), *(getattr(a, "equalize_by", None) or [])]
    return {"fmt": getattr(a, "from_", None), "columns": parse_columns(getattr(a, "columns", None)),
            "trial_id": getattr(a, "trial_id", None) or None,
            "text_columns": [c for c in text if c != "system"]}


def dataset_source(a: object, *, library_trial_id: bool = False) -> str | pl.LazyFrame:
    """The ``DATASET`` of a command, ready for the library.

    A Parquet path is passed as is (the library scans it and prunes partitions); any other
    file goes through :func:`load_dataset` with the reading options (``--from``,
    ``--columns``, ``--trial-id``) into a checked LazyFrame. With ``--trial-id`` a Parquet
    path is also checked here, unless the library function takes ``trial_id`` itself
    (``library_trial_id=True``, e.g. :func:`scoreframe.evaluate.evaluate`).
    """
    path = a.dataset  # type: ignore[attr-defined]
    kw = reading_kwargs(a)
    if (kw["fmt"] or _format_of(path)) == "parquet" and (library_trial_id or not kw["trial_id"]):
        return path
    lf = load_dataset(path, **kw)  # type: ignore[arg-type]
    check_where(getattr(a, "where", None), lf, source=f"`{path}`")  # named on the file
    return lf


def _suffix_format(output: str, machine: Sequence[str]) -> str:
    fmt = Path(output).suffix.lower().lstrip(".")
    if fmt not in machine:
        raise UsageError(f"cannot tell the format of -o {output} from its suffix; give "
                         f"--format {' or '.join(machine)}")
    return fmt


def check_output_format(a: object, *, machine: Sequence[str],
                        needs_file: Sequence[str] = ("parquet",)) -> None:
    """Check ``-o``/``--format`` before any work (and settle ``--format``).

    Without ``--format`` the format comes from the suffix of ``-o`` (``r.csv``), else it is
    the command's default (a table). ``-o`` goes only with a machine format, binary formats
    only with ``-o``, and an existing ``-o`` only with ``--overwrite``.
    """
    output = a.output  # type: ignore[attr-defined]
    fmt = a.format or (_suffix_format(output, machine) if output  # type: ignore[attr-defined]
                       else getattr(a, "format_default", None) or "table")
    a.format = fmt  # type: ignore[attr-defined]
    if output and fmt not in machine:
        raise UsageError(f"-o needs --format {', '.join(machine)}; got --format {fmt}")
    if not output and fmt in needs_file:
        raise UsageError(f"--format {fmt} needs -o FILE")
    if output:
        inputs = [getattr(a, n) for n in ("dataset", "sql", "scores", "truth")
                  if isinstance(getattr(a, n, None), str)]
        check_outputs([output], overwrite=a.overwrite, inputs=inputs)  # type: ignore[attr-defined]


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
    raise UsageError(f"quality tables are parquet, csv or tsv; got {path}")


def other_system(a: object) -> dict[str, bool]:
    """``{"allow_other_system": True}`` when ``--allow-other-system`` was given, else ``{}``."""
    return {"allow_other_system": True} if getattr(a, "allow_other_system", False) else {}


def load_model_kind(path: str, methods: tuple[str, ...]):  # noqa: ANN201
    """Load a model file and check its ``method`` is one of ``methods``."""
    from scoreframe.models import load_model

    model = load_model(path)
    if model.method not in methods:
        raise UsageError(f"{path} is a {model.method} model; expected {' or '.join(methods)}")
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
