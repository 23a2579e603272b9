"""Multiclass tables as frames and per-group ``(N, K)`` matrices.

Frames layer over :mod:`scoreframe.io.multiclass`: :func:`read_scores` / :func:`read_truth`
take anything :func:`scoreframe.frames.lazy.as_lazy` takes (paths, polars, pandas, pyarrow) and
check it like the readers; :func:`score_matrices` aligns scores with the truth and pivots each
``system`` into one ``(N, K)`` matrix with a single sort, splitting it by the ``by`` conditions
without sorting again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scoreframe.errors import AlignmentError, Place, SchemaError, ValidationError, message
from scoreframe.frames.lazy import Data, as_lazy
from scoreframe.io.multiclass import read_multiclass_scores, read_multiclass_truth

__all__ = ["Data", "Group", "describe", "read_scores", "read_truth", "score_matrices"]

#: What the multiclass functions take: a path, a polars/pandas frame or a pyarrow table (a
#: runtime union, so other modules can build types such as ``Data | Sequence[Data]``).


def describe(source: Any, what: str) -> str:  # noqa: ANN401 - any trial data
    """How error messages name an input: the file, or "the <what> table"."""
    return Place(source) if isinstance(source, str | Path) else f"the {what} table"


def read_scores(source: Data, *, fmt: str | None = None,
                classes: Sequence[str] | None = None) -> pl.DataFrame:
    """Read and check multiclass scores into the long schema ``[system], segment, class, score``.

    Paths go to :func:`scoreframe.io.multiclass.read_multiclass_scores` (long or wide tables,
    NIST LRE22 system output); frames of any kind are converted by
    :func:`scoreframe.frames.lazy.as_lazy` and checked the same way.

    Parameters
    ----------
    source
        A path or a frame.
    fmt
        The file's format when a path (guessed when None).
    classes
        The known classes (default: those present).

    Returns
    -------
    polars.DataFrame
        The checked long-form scores.

    See Also
    --------
    read_truth : The matching truth.
    score_matrices : The arrays the kernels take.

    Examples
    --------
    >>> import pyarrow as pa
    >>> read_scores(pa.table({"id": ["s1"], "a": [1.0], "b": [0.0]}))["score"].to_list()
    [1.0, 0.0]
    """
    src = source if isinstance(source, str | Path) else as_lazy(source)
    return read_multiclass_scores(src, fmt=fmt, classes=classes)


def read_truth(source: Data, *, fmt: str | None = None,
               classes: Sequence[str] | None = None) -> pl.DataFrame:
    """Read and check a truth table into ``segment, class`` (+ ``system``, conditions).

    See :func:`scoreframe.io.multiclass.read_multiclass_truth` for the accepted column names.

    Parameters
    ----------
    source
        A path or a frame.
    fmt
        The file's format when a path (guessed when None).
    classes
        The known classes (default: those present).

    Returns
    -------
    polars.DataFrame
        The checked truth table.

    See Also
    --------
    read_scores : The matching scores.
    score_matrices : The arrays the kernels take.

    Examples
    --------
    >>> import polars as pl
    >>> read_truth(pl.DataFrame({"segment": ["s1"], "true_class": ["a"]})).columns
    ['segment', 'class']
    """
    src = source if isinstance(source, str | Path) else as_lazy(source)
    return read_multiclass_truth(src, fmt=fmt, classes=classes)


@dataclass(frozen=True)
class Group:
    """One group's matrices: scores ``w`` (N x K, rows sorted by segment), labels ``y``.

    ``y`` holds class indices into ``classes`` (-1 without a truth table).
    """

    key: dict[str, object]
    segments: list[str]
    classes: list[str]
    w: np.ndarray
    y: np.ndarray


def _examples(values: pl.Series) -> str:
    return ", ".join(repr(v) for v in values.head(3).to_list())


def _truth_keys(truth: pl.DataFrame, systems: list[str] | None) -> list[str]:
    """Join on (system, segment) when the truth's ``system`` names every scored system."""
    if systems is not None and "system" in truth.columns and set(systems) <= set(
            truth["system"].unique().to_list()):
        return ["system", "segment"]
    return ["segment"]


def _check_truth(truth: pl.DataFrame, keys: list[str], known: list[str], where: str) -> None:
    dups = truth.group_by(keys).len().filter(pl.col("len") > 1)
    if dups.height:
        raise ValidationError(message("the truth lists a segment more than once", where=where,
                                      expected="one true class per segment",
                                      got=f"{dups.height} segments, e.g. "
                                          f"{_examples(dups['segment'].sort())}"))
    bad = truth.filter(~pl.col("class").is_in(known))
    if bad.height:
        raise ValidationError(message("truth classes outside the scored classes", where=where,
                                      expected=", ".join(known),
                                      got=_examples(bad["class"].unique().sort())))


def _not_one_per_class(part: pl.DataFrame, k: int, where: str) -> ValidationError:
    """The error for a system whose rows are not exactly one per (segment, class)."""
    counts = part.group_by("segment").agg(pl.len(), pl.col("class").n_unique().alias("u"))
    dup = counts.filter(pl.col("len") != pl.col("u")).sort("segment")
    if dup.height:
        return ValidationError(message("duplicate (segment, class) scores", where=where,
                                       expected="one score per class",
                                       got=f"{dup.height} segments, e.g. "
                                           f"{_examples(dup['segment'])}"))
    short = counts.filter(pl.col("len") != k).sort("segment")
    return ValidationError(message("segments without a score for every class", where=where,
                                   expected=f"{k} classes per segment",
                                   got=f"{short.height} incomplete segments, e.g. "
                                       f"{_examples(short['segment'])}"))


def _pivot(part: pl.DataFrame, known: list[str], where: str
           ) -> tuple[pl.DataFrame, np.ndarray]:
    """One sort by segment; the ``(N, K)`` scores and one row of ``part`` per segment.

    The sorted order itself proves that every segment has each class exactly once: the class
    indices of the segment's K rows cover 0..K-1 and the segment changes every K rows.
    """
    k = len(known)
    part = part.sort("segment")  # the one sort of this system's rows
    h = part.height
    n = h // k
    ci = part["__ci"].to_numpy()
    row = np.arange(h) // k
    cover = np.zeros((n, k), dtype=bool)
    ok = h % k == 0 and n > 0
    if ok:
        cover[row, ci] = True
        starts = part.select((pl.col("segment") != pl.col("segment").shift(1)).fill_null(True)
                             )["segment"].to_numpy()
        ok = bool(cover.all()) and bool(np.array_equal(starts, row * k == np.arange(h)))
    if not ok:
        raise _not_one_per_class(part, k, where) if h else SchemaError(
            message("no scores", where=where, expected="at least one segment"))
    w = np.empty((n, k), dtype=np.float64)
    w[row, ci] = part["score"].to_numpy()
    return part.gather_every(k), w


def score_matrices(scores: pl.DataFrame, truth: pl.DataFrame | None, *,
                   by: Sequence[str] = (), classes: Sequence[str] | None = None,
                   where: str = "the scores table", truth_where: str = "the truth table"
                   ) -> list[Group]:
    """Align long scores with the truth and pivot them: one ``(N, K)`` matrix per group.

    Groups are ``system`` x ``by`` (``by`` columns from either table), in sorted order. Each
    system's rows are sorted once (by segment); the ``by`` groups are row subsets of that
    matrix. Checks: the classes are the known ones (``classes``, or the score table's, sorted);
    exactly one score per (segment, class); with ``truth``: one truth per segment, a known
    class, and a truth for every scored segment. A ``system`` column in the truth (segment ids
    per system, as in the cifar10 set) is a join key only when it names every scored system.

    Parameters
    ----------
    scores
        Long-form scores (:func:`read_scores`).
    truth
        The truth table (:func:`read_truth`), or None for unlabelled scores.
    by
        Condition columns.
    classes
        The known classes (default: the score table's, sorted).
    where, truth_where
        How messages name the two tables.

    Returns
    -------
    list of Group
        One ``(N, K)`` score matrix (with labels) per group.

    See Also
    --------
    read_scores, read_truth : Its inputs.
    evaluate_multiclass : The evaluation.

    Examples
    --------
    >>> import polars as pl
    >>> sc = pl.DataFrame({"segment": ["s2", "s1", "s2", "s1"], "class": ["b", "a", "a", "b"],
    ...                    "score": [4.0, 1.0, 3.0, 2.0]})
    >>> g = score_matrices(sc, pl.DataFrame({"segment": ["s1", "s2"], "class": ["b", "a"]}))[0]
    >>> g.segments, g.w.tolist(), g.y.tolist()
    (['s1', 's2'], [[1.0, 2.0], [3.0, 4.0]], [1, 0])
    """
    known = (sorted(scores["class"].unique().to_list()) if classes is None
             else [str(c) for c in classes])
    unknown = scores.filter(~pl.col("class").is_in(known))
    if unknown.height:
        raise ValidationError(message("scores for unknown classes", where=where,
                                      expected=", ".join(known),
                                      got=_examples(unknown["class"].unique().sort())))
    has_sys = "system" in scores.columns
    by_cols = [c for c in by if c != "system"]
    t_keys: list[str] = ["segment"]
    t = None
    if truth is not None:
        systems = scores["system"].unique().to_list() if has_sys else None
        t_keys = _truth_keys(truth, systems)
        t = truth if "system" in t_keys or "system" not in truth.columns else truth.drop(
            "system")
        _check_truth(t, t_keys, known, truth_where)
        t = t.select(*t_keys, pl.col("class").cast(pl.Enum(known)).to_physical()
                     .cast(pl.Int64).alias("__y"),
                     *[c for c in by_cols if c in t.columns and c not in scores.columns])
    missing = [c for c in by_cols if c not in scores.columns and (t is None or c not in
                                                                  t.columns)]
    if missing:
        raise SchemaError(message(f"grouping column(s) {missing} not found", where=where,
                                  got=f"{scores.columns}"))
    keep = ["segment", "score", *(["system"] if has_sys else []),
            *[c for c in by_cols if c in scores.columns]]
    data = scores.select(*keep, pl.col("class"),
                         pl.col("class").cast(pl.Enum(known)).to_physical().alias("__ci"))
    systems_parts = (sorted(data.partition_by("system", as_dict=True).items(),
                            key=lambda kv: str(kv[0][0])) if has_sys else [((), data)])
    out = []
    for sys_key, part in systems_parts:
        seg, w = _pivot(part, known, where)
        if t is not None:
            seg = seg.join(t, on=t_keys, how="left", maintain_order="left")
            lost = seg.filter(pl.col("__y").is_null())
            if lost.height:
                raise AlignmentError(message(
                    "scored segments have no truth", where=where,
                    got=f"{lost.height} segments, e.g. {_examples(lost['segment'])}",
                    hint=f"The truth ({truth_where}) must list every scored segment."))
            y = seg["__y"].to_numpy()
        else:
            y = np.full(w.shape[0], -1, dtype=np.int64)
        base = {"system": sys_key[0]} if has_sys else {}
        if not by_cols:
            out.append(Group(base, seg["segment"].to_list(), known, w, y))
            continue
        idx = seg.select(*by_cols).with_row_index("__i").partition_by(
            by_cols, as_dict=True, include_key=False)
        for key, rows in sorted(idx.items(), key=lambda kv: tuple(map(str, kv[0]))):
            i = rows["__i"].to_numpy()
            out.append(Group({**base, **dict(zip(by_cols, key, strict=True))},
                             seg["segment"].gather(i).to_list(), known, w[i], y[i]))
    return out
