"""Multiclass score and truth tables: readers (long, wide, NIST LRE22 TSV) and validation.

I/O + frames layer: returns Polars frames in the canonical long schema and turns them into
per-group ``(N, K)`` numpy matrices with clear errors for every way they can be malformed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from scoreframe.errors import AlignmentError, FormatError, SchemaError, message

__all__ = ["Group", "read_scores", "read_truth", "score_matrices"]

ID_NAMES = ("segment", "segmentid", "segment_id", "id")
TRUTH_NAMES = ("class", "true_class", "language", "language_code", "label")
Data = pl.DataFrame | pl.LazyFrame | str | Path


def _read_any(path: str | Path, fmt: str | None) -> pl.DataFrame:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    f = fmt or ("parquet" if p.is_dir() or p.suffix == ".parquet" else
                "csv" if p.suffix == ".csv" else "tsv")
    try:
        if f == "parquet":
            return pl.read_parquet(p if p.is_file() else f"{p}/**/*.parquet")
        return pl.read_csv(p, separator="," if f == "csv" else "\t")
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FormatError(message("cannot read the table", where=f"file {p}",
                                  got=str(exc).splitlines()[0])) from None


def _id_column(df: pl.DataFrame, where: str) -> str:
    for c in ID_NAMES:
        if c in df.columns:
            return c
    raise SchemaError(message("no segment id column", where=where,
                              expected=" or ".join(ID_NAMES), got=f"{df.columns}"))


def read_scores(source: Data, *, fmt: str | None = None) -> pl.DataFrame:
    """Read multiclass scores into the long schema ``[system], segment, class, score``.

    Accepts the long form (``segment, class, score``), a wide table (an id column such as
    ``segment`` or ``segmentid`` plus one numeric column per class: the NIST LRE22 system
    output TSV, or any wide CSV/Parquet), or a frame. Extra columns of a long table are kept.
    """
    where = f"file {source}" if isinstance(source, (str, Path)) else "the score table"
    df = source.collect() if isinstance(source, pl.LazyFrame) else (
        source if isinstance(source, pl.DataFrame) else _read_any(source, fmt))
    if "class" in df.columns and "score" in df.columns:
        idc = _id_column(df, where)
        out = df.rename({idc: "segment"}) if idc != "segment" else df
    else:
        idc = _id_column(df, where)
        keep = [c for c in ("system",) if c in df.columns]
        classes = [c for c in df.columns if c not in (idc, *keep)]
        bad = [c for c in classes if not df.schema[c].is_numeric()]
        if bad or not classes:
            raise SchemaError(message("wide score table needs one numeric column per class",
                                      where=where, got=f"non-numeric {bad}" if bad
                                      else "no class columns"))
        out = df.unpivot(on=classes, index=[idc, *keep], variable_name="class",
                         value_name="score").rename({idc: "segment"})
    out = out.with_columns(pl.col("segment").cast(pl.String), pl.col("class").cast(pl.String),
                           pl.col("score").cast(pl.Float64))
    n_bad = out.select((pl.col("score").is_null() | pl.col("score").is_nan()).sum()).item()
    if n_bad:
        raise SchemaError(message("column `score` has null or NaN values", where=where,
                                  got=f"{n_bad} bad score(s)"))
    return out


def read_truth(source: Data, *, fmt: str | None = None) -> pl.DataFrame:
    """Read a truth table into ``segment, class`` (+ condition columns).

    The class column may be named ``class``, ``true_class``, ``language``, ``language_code``
    or ``label``; the id column ``segment``, ``segmentid``, ``segment_id`` or ``id``.
    """
    where = f"file {source}" if isinstance(source, (str, Path)) else "the truth table"
    df = source.collect() if isinstance(source, pl.LazyFrame) else (
        source if isinstance(source, pl.DataFrame) else _read_any(source, fmt))
    idc = _id_column(df, where)
    cls = next((c for c in TRUTH_NAMES if c in df.columns), None)
    if cls is None:
        raise SchemaError(message("no truth class column", where=where,
                                  expected=" or ".join(TRUTH_NAMES), got=f"{df.columns}"))
    out = df.rename({idc: "segment", cls: "class"} if cls != "class" else {idc: "segment"})
    out = out.with_columns(pl.col("segment").cast(pl.String), pl.col("class").cast(pl.String))
    if out["class"].null_count():
        raise SchemaError(message("truth has segments without a class", where=where,
                                  got=f"{out['class'].null_count()} null classes"))
    return out


@dataclass(frozen=True)
class Group:
    """One group's matrices: scores ``w`` (N x K) per system, labels ``y``, class names."""

    key: dict[str, object]
    segments: list[str]
    classes: list[str]
    w: np.ndarray
    y: np.ndarray


def _examples(s: pl.Series) -> str:
    return ", ".join(map(str, s.head(3).to_list()))


def score_matrices(scores: pl.DataFrame, truth: pl.DataFrame | None, *,
                   by: Sequence[str] = (), classes: Sequence[str] | None = None,
                   where: str = "the score table") -> list[Group]:
    """Validate and pivot long scores into one ``(N, K)`` matrix per ``system`` x ``by`` group.

    Checks: no duplicate (segment, class); every segment scores every class; the classes are
    the known ones (``classes``, or the score table's); with ``truth``: exactly one truth class
    per segment, a known class, and a truth row for every scored segment. A ``system`` column in
    the truth (segment ids per system, as in the cifar10 set) is a join key only when it names
    every scored system.
    """
    known = sorted(scores["class"].unique().to_list()) if classes is None else list(classes)
    unknown = scores.filter(~pl.col("class").is_in(known))
    if unknown.height:
        raise SchemaError(message("scores for unknown classes", where=where,
                                  expected=f"{known}", got=_examples(unknown["class"].unique())))
    sys_cols = ["system"] if "system" in scores.columns else []
    dup = scores.group_by([*sys_cols, "segment", "class"]).len().filter(pl.col("len") > 1)
    if dup.height:
        raise SchemaError(message("duplicate (segment, class) scores", where=where,
                                  got=f"{dup.height} duplicates, e.g. segment "
                                      f"{_examples(dup['segment'])}"))
    per_seg = scores.group_by([*sys_cols, "segment"]).len().filter(pl.col("len") != len(known))
    if per_seg.height:
        raise SchemaError(message("segments without a score for every class", where=where,
                                  expected=f"{len(known)} classes per segment",
                                  got=f"{per_seg.height} incomplete segments, e.g. "
                                      f"{_examples(per_seg['segment'])}"))
    data = scores
    if truth is not None:
        t = truth
        if "system" in t.columns and "system" in scores.columns and set(
                scores["system"].unique().to_list()) <= set(t["system"].unique().to_list()):
            t_keys = ["system", "segment"]
        else:
            t_keys = ["segment"]
            t = t.drop("system") if "system" in t.columns else t
        dups = t.group_by(t_keys).len().filter(pl.col("len") > 1)
        if dups.height:
            raise SchemaError(message("truth lists a segment more than once",
                                      got=f"{dups.height} segments, e.g. "
                                          f"{_examples(dups['segment'])}"))
        bad = t.filter(~pl.col("class").is_in(known))
        if bad.height:
            raise SchemaError(message("truth classes outside the scored classes",
                                      expected=f"{known}", got=_examples(bad["class"].unique())))
        t = t.rename({"class": "__truth"})
        extra = [c for c in t.columns if c not in (*t_keys, "__truth") and c not in
                 scores.columns]
        data = scores.join(t.select(*t_keys, "__truth", *extra), on=t_keys, how="left")
        n_missing = data.filter(pl.col("__truth").is_null())["segment"].n_unique()
        if n_missing:
            raise AlignmentError(message("scored segments have no truth", where=where,
                                         got=f"{n_missing} segments, e.g. " + _examples(
                                             data.filter(pl.col("__truth").is_null())[
                                                 "segment"].unique())))
    group_cols = [*sys_cols, *[c for c in by if c != "system"]]
    missing = [c for c in group_cols if c not in data.columns]
    if missing:
        raise SchemaError(message(f"grouping column(s) {missing} not found", where=where,
                                  got=f"{data.columns}"))
    parts = data.partition_by(group_cols, as_dict=True, maintain_order=True) if group_cols \
        else {(): data}
    out = []
    index = {c: i for i, c in enumerate(known)}
    for key, part in sorted(parts.items(), key=lambda kv: tuple(map(str, kv[0]))):
        part = part.sort("segment", "class")
        wide = part.pivot(on="class", index="segment", values="score", aggregate_function=None
                          ).sort("segment")
        w = wide.select(known).to_numpy().astype(np.float64)
        if truth is not None:
            lab = part.group_by("segment").agg(pl.col("__truth").first()).sort("segment")
            y = lab["__truth"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
        else:
            y = np.full(w.shape[0], -1, dtype=np.int64)
        out.append(Group(dict(zip(group_cols, key, strict=True)), wide["segment"].to_list(),
                         known, w, y))
    return out
