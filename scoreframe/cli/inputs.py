"""Reading what the command line names: datasets, quality tables, models; guarding outputs.

Views layer: turns option values into library calls; every problem is a
:class:`~scoreframe.errors.UsageError` or another :class:`~scoreframe.errors.ScoreframeError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from scoreframe import io as sio
from scoreframe.errors import UsageError
from scoreframe.io.atomic import atomic_output, check_outputs
from scoreframe.io.parquet import apply_where, infer_kind, scan_trials, write_trials
from scoreframe.schema import validate_trials

__all__ = ["guard_outputs", "load_dataset", "load_model_kind", "parse_columns",
           "parse_missing", "quality_table", "reading_kwargs", "write_scored"]


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


def load_dataset(path: str, fmt: str | None = None, kind: str | None = None,
                 columns: dict[str, str] | None = None, *, where: str | None = None,
                 trial_id: Sequence[str] | None = None) -> pl.LazyFrame:
    """A checked trial table from any supported file (Parquet scanned lazily).

    ``trial_id`` names the columns that identify a trial (duplicates are checked on them);
    ``where`` filters the trials after the checks.
    """
    f = fmt or sio.guess_format(path)
    if f == "parquet" and trial_id:
        lf = validate_trials(scan_trials(path), kind=infer_kind(
            scan_trials(path).collect_schema().names()), where=f"`{path}`", trial_id=trial_id)
    elif f == "parquet":
        lf = scan_trials(path, check_data=True)
    elif f in ("csv", "tsv") and trial_id:
        lf = sio.read_table(path, columns=columns, kind=kind,  # type: ignore[arg-type]
                            separator="," if f == "csv" else "\t", trial_id=trial_id).lazy()
    else:
        lf = sio.read_any(path, fmt=f, kind=kind, columns=columns).lazy()  # type: ignore[arg-type]
    return apply_where(lf, where)


def reading_kwargs(a: object) -> dict[str, object]:
    """``fmt``, ``columns`` and ``trial_id`` of :func:`load_dataset` from the reading options."""
    return {"fmt": getattr(a, "from_", None), "columns": parse_columns(getattr(a, "columns", None)),
            "trial_id": getattr(a, "trial_id", None) or None}


def guard_outputs(inputs: Sequence[str | Path], outputs: Sequence[str | Path], *,
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


def load_model_kind(path: str, methods: tuple[str, ...]):  # noqa: ANN201
    """Load a model file and check its ``method`` is one of ``methods``."""
    from scoreframe.models import load_model

    model = load_model(path)
    if model.method not in methods:
        raise UsageError(f"{path} is a {model.method} model; expected {' or '.join(methods)}")
    return model


def write_scored(out: pl.LazyFrame, path: str, overwrite: bool, inputs: Sequence[str], *,
                 trials: bool = True) -> pl.LazyFrame:
    """Write an applied model's output; return a lazy view of what was written.

    ``trials=False`` (multiclass tables) writes plain Parquet, not a validated trial dataset.
    """
    guard_outputs(inputs, [path], overwrite=overwrite)
    fmt = "parquet" if not Path(path).suffix else sio.guess_format(path)
    if fmt == "parquet" and not trials:
        df = out.collect()
        with atomic_output(path, overwrite=overwrite, inputs=inputs) as tmp:
            df.write_parquet(tmp)
        return df.lazy()
    if fmt == "parquet":
        write_trials(out, path, overwrite=overwrite)
        return scan_trials(path)
    if fmt not in ("csv", "tsv"):
        raise UsageError(f"apply writes parquet, csv or tsv, not {fmt}")
    df = out.collect()
    from scoreframe.io.tables import write_table

    write_table(df, path, overwrite=overwrite)
    return df.lazy()
