"""NIST SRE TSV files and generic CSV/TSV/Parquet tables with a column mapping.

I/O layer.

* NIST SRE trial key (TSV with header): ``modelid segmentid [side] targettype`` plus any
  metadata columns (``gender``, ``phone_num_match``, ...), ``targettype`` = target|nontarget.
* NIST SRE system output (TSV with header): ``modelid segmentid side LLR``.
* Generic tables: any CSV, TSV or Parquet; ``columns`` maps canonical names to the file's
  (``{"model": "enroll", "segment": "test", "score": "llr", "label": "is_target"}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from scoreframe.errors import FormatError, message
from scoreframe.io.atomic import atomic_output
from scoreframe.io.parquet import infer_kind
from scoreframe.schema import Kind, validate_trials

__all__ = ["read_nist_key", "read_nist_scores", "read_table", "write_nist_key",
           "write_nist_scores", "write_table"]

NIST_KEY = {"modelid": "model", "segmentid": "segment", "targettype": "label"}
NIST_SCORES = {"modelid": "model", "segmentid": "segment", "LLR": "score"}


def _read_delimited(path: Path, separator: str) -> pl.DataFrame:
    if not path.is_file():
        raise FormatError(message(f"no such file `{path}`"))
    try:
        return pl.read_csv(path, separator=separator, infer_schema_length=10_000,
                           schema_overrides={"modelid": pl.String, "segmentid": pl.String,
                                             "model": pl.String, "segment": pl.String},
                           raise_if_empty=True)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError,
            pl.exceptions.ShapeError) as exc:
        raise FormatError(message("cannot parse table", where=f"`{path}`",
                                  got=str(exc).splitlines()[0])) from None


def _renamed(df: pl.DataFrame, mapping: Mapping[str, str], path: Path, fmt: str) -> pl.DataFrame:
    missing = [src for src in mapping if src not in df.columns]
    if missing:
        raise FormatError(message(f"missing {fmt} column(s) {', '.join(missing)}",
                                  where=f"`{path}`", expected=", ".join(mapping),
                                  got=", ".join(df.columns)))
    return df.rename(dict(mapping))


def read_nist_key(path: str | Path) -> pl.DataFrame:
    """Read a NIST SRE trial key TSV; metadata columns are kept as condition columns."""
    path = Path(path)
    df = _renamed(_read_delimited(path, "\t"), NIST_KEY, path, "NIST key")
    return validate_trials(df, kind="key", where=f"`{path}`").collect()


def read_nist_scores(path: str | Path) -> pl.DataFrame:
    """Read a NIST SRE system output TSV (``modelid segmentid side LLR``)."""
    path = Path(path)
    df = _renamed(_read_delimited(path, "\t"), NIST_SCORES, path, "NIST scores")
    return validate_trials(df, kind="scores", where=f"`{path}`").collect()


def write_nist_scores(data: pl.DataFrame, path: str | Path, *, overwrite: bool = False) -> None:
    """Write ``modelid segmentid side LLR`` (side ``a`` unless a ``side`` column exists)."""
    side = pl.col("side") if "side" in data.columns else pl.lit("a").alias("side")
    out_df = data.select(pl.col("model").alias("modelid"), pl.col("segment").alias("segmentid"),
                         side, pl.col("score").alias("LLR"))
    with atomic_output(path, overwrite=overwrite) as out:
        out_df.write_csv(out, separator="\t")


def write_nist_key(data: pl.DataFrame, path: str | Path, *, overwrite: bool = False) -> None:
    """Write a NIST-style key TSV (``modelid segmentid targettype`` + other columns)."""
    rest = [c for c in data.columns if c not in ("model", "segment", "label", "score")]
    out_df = data.select(
        pl.col("model").alias("modelid"), pl.col("segment").alias("segmentid"),
        pl.when(pl.col("label")).then(pl.lit("target")).otherwise(pl.lit("nontarget"))
        .alias("targettype"), *rest)
    with atomic_output(path, overwrite=overwrite) as out:
        out_df.write_csv(out, separator="\t")


def read_table(path: str | Path, *, columns: Mapping[str, str] | None = None,
               kind: Kind | None = None, separator: str | None = None,
               trial_id: Sequence[str] | None = None) -> pl.DataFrame:
    """Read a CSV, TSV or Parquet table, renaming columns to the canonical names.

    Parameters
    ----------
    path
        ``.csv``, ``.tsv``/``.tab``/``.txt`` (tab-separated) or ``.parquet``.
    columns
        Canonical name -> name in the file, e.g. ``{"model": "enroll", "score": "llr"}``.
    kind
        Expected kind; inferred from the columns present after renaming.
    separator
        Field separator for text tables (from the extension when omitted; gzip is read).
    trial_id
        Columns identifying a trial, for the duplicate check (see
        :func:`scoreframe.schema.validate_trials`).
    """
    path = Path(path)
    if path.suffix == ".parquet":
        if not path.is_file():
            raise FormatError(message(f"no such file `{path}`"))
        df = pl.read_parquet(path)
    else:
        sep = separator or ("," if path.suffix == ".csv" else "\t")
        df = _read_delimited(path, sep)
    if columns:
        df = _renamed(df, {v: k for k, v in columns.items()}, path, "mapped")
    return validate_trials(df, kind=kind or infer_kind(df.columns), where=f"`{path}`",
                           trial_id=trial_id).collect()


def write_table(data: pl.DataFrame, path: str | Path, *, overwrite: bool = False) -> None:
    """Write a CSV (``.csv``), TSV (other suffixes) or single Parquet file atomically."""
    path = Path(path)
    with atomic_output(path, overwrite=overwrite) as out:
        if path.suffix == ".parquet":
            data.write_parquet(out)
        else:
            data.write_csv(out, separator="," if path.suffix == ".csv" else "\t")
