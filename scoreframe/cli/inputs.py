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
from scoreframe.io.parquet import apply_where, scan_trials, write_trials

__all__ = ["guard_outputs", "load_dataset", "load_model_kind", "parse_columns",
           "parse_missing", "quality_table", "write_scored"]


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
                 columns: dict[str, str] | None = None, *,
                 where: str | None = None) -> pl.LazyFrame:
    """A trial table from any supported file (Parquet scanned lazily), filtered by ``where``."""
    f = fmt or sio.guess_format(path)
    if f == "parquet":
        lf = scan_trials(path, check_data=True)
    else:
        lf = sio.read_any(path, fmt=f, kind=kind, columns=columns).lazy()  # type: ignore[arg-type]
    return apply_where(lf, where)


def guard_outputs(inputs: Sequence[str | Path], outputs: Sequence[str | Path]) -> None:
    """Refuse an output that is an input or lies inside (or around) an input directory."""
    ins = {Path(p).resolve() for p in inputs}
    for o in outputs:
        r = Path(o).resolve()
        if r in ins or any(r in i.parents or i in r.parents for i in ins):
            raise UsageError(f"output `{o}` would overwrite or sit inside an input; "
                             "inputs are never modified")


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
    guard_outputs(inputs, [path])
    fmt = "parquet" if not Path(path).suffix else sio.guess_format(path)
    if fmt == "parquet" and not trials:
        from scoreframe.io._atomic import atomic_output

        df = out.collect()
        with atomic_output(path, overwrite=overwrite) as tmp:
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
