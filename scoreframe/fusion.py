"""Linear fusion of several systems, with optional quality measures (MATH.md 10.1; seed 000 eq 30).

Frames layer: joins the systems' scores on (``model``, ``segment``) into one wide, lazy table
(:func:`fusion_table`), collects only the columns training needs, fits
``llr = offset + sum_i w_i s_i [+ qa' W ra]`` with :mod:`scoreframe.kernels.logreg`, and applies
the fitted model lazily as a Polars expression over the same wide table.

Quality vectors come from two tables, ``id`` + quality columns: one joined on ``model`` (the
enrolment side, ``q``), one on ``segment`` (the test side, ``r``), both with the same columns. Both
vectors are augmented with a constant 1 and ``W = Y + Y'`` is symmetric; the constant corner of
``Y`` duplicates the offset, so it is fixed at 0 (BOSARIS leaves that direction free).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import polars as pl

from scoreframe.calibration import (
    Data,
    NotFittedError,
    _rule_doc,
    _rule_from_doc,
    check_p_target,
    fit_report,
    objective_rule,
    training_frame,
)
from scoreframe.errors import AlignmentError, FormatError, SchemaError, ScoreframeError, message
from scoreframe.evaluate import _as_lazy
from scoreframe.kernels.logreg import fit_linear
from scoreframe.kernels.psr import BetaRule
from scoreframe.models import check_names, decode_floats, field, header, save_model

__all__ = ["LinearFusion", "check_wide", "finish_wide", "fusion_table", "pick_systems"]

Systems = Data | Sequence[Data] | Mapping[str, Data]
KEY = ["model", "segment"]


def _raw(system: str) -> str:
    return f"score_raw_{system}"


def _split_systems(data: Systems, where: str | None) -> dict[str, pl.LazyFrame]:
    """One lazy frame per system, by name."""
    if isinstance(data, Mapping):
        items = [(str(k), _as_lazy(v, where), True) for k, v in data.items()]
    elif isinstance(data, (str, Path, pl.DataFrame, pl.LazyFrame)):
        items = [("", _as_lazy(data, where), False)]
    else:
        items = [(Path(d).name.split(".")[0] if isinstance(d, (str, Path)) else "",
                  _as_lazy(d, where), False) for d in data]
    out: dict[str, pl.LazyFrame] = {}
    for i, (name, lf, explicit) in enumerate(items):
        if "system" in lf.collect_schema().names():
            systems = sorted(lf.select(pl.col("system").cast(pl.String).unique()).collect()
                             ["system"].to_list())
            parts = {(name if explicit and len(systems) == 1 else s):
                     lf.filter(pl.col("system").cast(pl.String) == s).drop("system")
                     for s in systems}
        else:
            parts = {name or f"system{i + 1}": lf}
        for key, part in parts.items():
            if key in out:
                raise ScoreframeError(message(f"system `{key}` given twice",
                                              hint="Give each dataset its own name."))
            out[key] = part
    return out


def pick_systems(frames: dict[str, Any], systems: Sequence[str] | None) -> dict[str, Any]:
    """The frames of ``systems`` (a fitted model's), in its order; at least two of them."""
    if systems is not None:
        absent = [s for s in systems if s not in frames]
        if absent:
            raise ScoreframeError(message("the data lack systems the model fuses",
                                          expected=f"{list(systems)}", got=f"{sorted(frames)}"))
        frames = {s: frames[s] for s in systems}
    if len(frames) < 2:
        raise ScoreframeError(message("fusion needs at least two systems",
                                      got=f"{list(frames) or 'none'}"))
    return frames


def _quality(table: Data | None, side: str) -> tuple[pl.LazyFrame, list[str]] | None:
    if table is None:
        return None
    lf = _as_lazy(table, None)
    names = lf.collect_schema().names()
    if "id" not in names or len(names) < 2:
        raise SchemaError(message(f"{side} quality table must have `id` and quality columns",
                                  got=f"{names}"))
    cols = [c for c in names if c != "id"]
    return lf.select(pl.col("id").cast(pl.String), *[pl.col(c).cast(pl.Float64) for c in cols]
                     ), cols


def fusion_table(data: Systems, *, where: str | None = None, missing: str | float = "error",
                 quality_model: Data | None = None, quality_segment: Data | None = None,
                 systems: Sequence[str] | None = None, check: bool = True
                 ) -> tuple[pl.LazyFrame, list[str]]:
    """Join the systems' scores on (``model``, ``segment``) into one wide lazy table.

    Parameters
    ----------
    data
        One table with a ``system`` column, or several tables (one system each: named by their
        ``system`` value, the file name, or ``system<i>``), or a mapping ``name -> table``.
    missing
        Trials scored by some systems only: ``"error"`` (default, with counts and examples),
        ``"drop"``, or a number to fill in (BOSARIS ``set_missing_to_value``).
    quality_model, quality_segment
        Quality tables (``id`` + columns) joined on ``model`` and ``segment``.
    systems
        Expected systems (a fitted model's); others are ignored, absent ones are an error.
    check
        Run :func:`check_wide` (label agreement; with ``missing="error"``, holes) now, as one
        lazy query. ``False`` returns the raw join (``__label_<i>`` columns, holes untouched)
        for the caller to check and :func:`finish_wide` (e.g. on a frame collected once).

    Returns
    -------
    (polars.LazyFrame, list of str)
        ``model, segment, [label], <metadata of the first system>, score_raw_<system>...,
        [q_<col>..., r_<col>...]`` and the system names in column order.
    """
    if missing not in ("error", "drop") and not isinstance(missing, (int, float)):
        raise AlignmentError(message("bad `missing` policy", expected="error | drop | a number",
                                     got=repr(missing)))
    frames = pick_systems(_split_systems(data, where), systems)
    names = list(frames)
    wide: pl.LazyFrame | None = None
    for i, (s, lf) in enumerate(frames.items()):
        cols = lf.collect_schema().names()
        lack = [c for c in [*KEY, "score"] if c not in cols]
        if lack:
            raise SchemaError(message(f"scores of system `{s}` lack column(s) {lack}",
                                      got=f"{cols}"))
        keep = [c for c in cols if c not in ("score", "score_raw")] if i == 0 else KEY + (
            ["label"] if "label" in cols else [])
        part = lf.select(*keep, pl.col("score").cast(pl.Float64).alias(_raw(s)))
        if i and "label" in keep:
            part = part.rename({"label": f"__label_{i}"})
        if wide is None:
            wide = part
        else:
            wide = wide.join(part, on=KEY, how="full", coalesce=True)
    assert wide is not None
    for side, table, on in (("q", quality_model, "model"), ("r", quality_segment, "segment")):
        q = _quality(table, "model-side" if side == "q" else "segment-side")
        if q is None:
            continue
        qlf, qcols = q
        qlf = qlf.rename({c: f"{side}_{c}" for c in qcols})
        wide = wide.join(qlf, left_on=on, right_on="id", how="left")
    if check:
        check_wide(wide, names, holes=missing == "error")
    return finish_wide(wide, names, missing=missing), names


def finish_wide(wide: pl.LazyFrame, systems: Sequence[str], *, missing: str | float
                ) -> pl.LazyFrame:
    """Merge the systems' label columns into ``label`` and apply the missing-score policy."""
    cols = wide.collect_schema().names()
    extra_labels = [c for c in cols if c.startswith("__label_")]
    if extra_labels:
        wide = wide.with_columns(pl.coalesce(*[c for c in ("label", *extra_labels)
                                               if c in cols]).alias("label")).drop(extra_labels)
    score_cols = [_raw(s) for s in systems]
    if missing == "drop":
        return wide.drop_nulls(score_cols)
    if missing != "error":
        return wide.with_columns(pl.col(score_cols).fill_null(float(missing)))
    return wide


def check_wide(wide: pl.LazyFrame | pl.DataFrame, systems: Sequence[str], *,
               holes: bool = True) -> None:
    """Raise if the systems disagree on labels, or (``holes``) some trial lacks a score."""
    lf = wide.lazy()
    cols = lf.collect_schema().names()
    extra = [c for c in cols if c.startswith("__label_")]
    score_cols = [_raw(s) for s in systems]
    exprs = [pl.any_horizontal(pl.col(score_cols).is_null()).sum().alias("holes")]
    exprs += [pl.col(c).is_null().sum().alias(c) for c in score_cols]
    if extra and "label" in cols:
        exprs.append(pl.any_horizontal([(pl.col(c) != pl.col("label")).fill_null(False)
                                        for c in extra]).sum().alias("conflicts"))
    counts = lf.select(exprs).collect().row(0, named=True)
    if counts.get("conflicts"):
        raise AlignmentError(message("systems disagree on trial labels",
                                     got=f"{counts['conflicts']} trials with different labels"))
    if holes and counts["holes"]:
        ex = lf.filter(pl.any_horizontal(pl.col(score_cols).is_null())).head(3).select(
            KEY).collect().rows()
        detail = ", ".join(f"{s}: {counts[c]}" for s, c in zip(systems, score_cols, strict=True)
                           if counts[c])
        raise AlignmentError(message(
            f"{counts['holes']} trials are not scored by every system ({detail})",
            got=f"e.g. {[' / '.join(r) for r in ex]}",
            hint="Use missing='drop' (CLI: --missing drop) or a fill value."))


def _quality_columns(wide: pl.LazyFrame) -> list[str]:
    cols = wide.collect_schema().names()
    q = [c[2:] for c in cols if c.startswith("q_")]
    r = [c[2:] for c in cols if c.startswith("r_")]
    if not q and not r:
        return []
    if sorted(q) != sorted(r):
        raise SchemaError(message("model-side and segment-side quality tables must have the "
                                  "same columns", got=f"{q} and {r}"))
    return q


def _quality_pairs(d: int) -> list[tuple[int, int]]:
    """Free entries (j >= k) of the lower-triangular Y over [q; 1], without the constant corner."""
    return [(j, k) for j in range(d + 1) for k in range(j + 1) if not (j == d and k == d)]


class LinearFusion:
    """Linear (and quality-measure) fusion of K systems by prior-weighted logistic regression.

    ``llr = offset + sum_i weights[i] * score_i`` (+ ``qa' W ra`` with quality tables), trained
    as BOSARIS' ``train_linear_fuser`` (start: ``1/K`` weights, offset 0), to the exact optimum.

    Parameters
    ----------
    p_target : float
        Training prior (enters the objective only).
    objective : str or (float, float)
        Scoring rule of the training objective (``log`` = logistic regression).
    max_iter : int
        Cap on optimizer iterations.
    missing : {"error", "drop"} or float
        Policy for trials some systems did not score (training and application).

    Examples
    --------
    >>> import polars as pl
    >>> rows = {"model": ["m"] * 6, "segment": list("abcdef"),
    ...         "label": [True, True, True, False, False, False]}
    >>> a = pl.DataFrame({**rows, "score": [2.0, 1.0, -0.5, 0.0, -1.0, -2.0]})
    >>> b = pl.DataFrame({**rows, "score": [1.0, 0.0, 1.5, 0.5, -1.0, 0.8]})
    >>> fuser = LinearFusion().fit({"a": a, "b": b})
    >>> sorted(fuser.weights)
    ['a', 'b']
    >>> fuser.transform({"a": a, "b": b}).collect().columns
    ['model', 'segment', 'label', 'score_raw_a', 'score_raw_b', 'score']
    """

    method = "linear_fusion"

    def __init__(self, *, p_target: float = 0.5,
                 objective: str | tuple[float, float] | BetaRule = "log",
                 max_iter: int = 100, missing: str | float = "error") -> None:
        self.p_target = check_p_target(p_target)
        self.rule = objective_rule(objective)
        self.max_iter = int(max_iter)
        self.missing = missing
        self.weights: dict[str, float] = {}
        self.offset: float = math.nan
        self.quality_columns: list[str] = []
        self.quality_w: np.ndarray | None = None
        self.training: dict[str, Any] = {}

    @property
    def systems(self) -> list[str]:
        """The fused systems, in order."""
        return list(self.weights)

    def fit(self, data: Systems, *, where: str | None = None,
            quality_model: Data | None = None, quality_segment: Data | None = None) -> Self:
        """Train on labelled trials of every system (joined on ``model``, ``segment``)."""
        wide, names = fusion_table(data, where=where, missing=self.missing,
                                   quality_model=quality_model,
                                   quality_segment=quality_segment, check=False)
        qcols = _quality_columns(wide)
        qfeat = [f"{p}_{c}" for c in qcols for p in ("q", "r")]
        labels = [c for c in wide.collect_schema().names() if c == "label"
                  or c.startswith("__label_")]
        raw = wide.select(*KEY, *labels, *[_raw(s) for s in names], *qfeat).collect()  # one join
        check_wide(raw, names, holes=self.missing == "error")
        df = training_frame(finish_wide(raw.lazy(), names, missing=self.missing),
                            [_raw(s) for s in names] + qfeat, what="fusion training")
        label = df["label"].to_numpy()
        if label.all() or not label.any():
            raise ScoreframeError(message("fusion training needs targets and non-targets",
                                          got=f"{int(label.sum())} targets, "
                                              f"{int((~label).sum())} non-targets"))
        k = len(names)
        x = np.column_stack([df[_raw(s)].to_numpy() for s in names] + [np.ones(df.height)])
        w0 = np.concatenate([np.full(k, 1.0 / k), [0.0]])
        fit = fit_linear(x[label], x[~label], p_target=self.p_target, rule=self.rule, w0=w0,
                         max_iter=self.max_iter)
        linear_objective = fit.objective
        if qcols:
            d = len(qcols)
            qa = np.column_stack([df[f"q_{c}"].to_numpy() for c in qcols] + [np.ones(df.height)])
            ra = np.column_stack([df[f"r_{c}"].to_numpy() for c in qcols] + [np.ones(df.height)])
            pairs = _quality_pairs(d)
            feats = np.column_stack([qa[:, j] * ra[:, kk] + qa[:, kk] * ra[:, j]
                                     for j, kk in pairs])
            xq = np.column_stack([x, feats])
            w0q = np.concatenate([fit.params, np.zeros(len(pairs))])
            fit = fit_linear(xq[label], xq[~label], p_target=self.p_target, rule=self.rule,
                             w0=w0q, max_iter=self.max_iter)
            y = np.zeros((d + 1, d + 1))
            for (j, kk), v in zip(pairs, fit.params[k + 1:], strict=True):
                y[j, kk] = v
            self.quality_w = y + y.T
            self.quality_columns = qcols
        self.weights = {s: float(v) for s, v in zip(names, fit.params[:k], strict=True)}
        self.offset = float(fit.params[k])
        self.training = fit_report(fit, p_target=self.p_target, rule=self.rule,
                                   n_tar=int(label.sum()), n_non=int((~label).sum()))
        if qcols:
            self.training["linear_objective_value"] = linear_objective
        return self

    def _check_fitted(self) -> None:
        if not self.weights:
            raise NotFittedError("this LinearFusion is not fitted: call fit() first")

    def to_expr(self) -> pl.Expr:
        """The fused llr over the columns of :func:`fusion_table` (lazy, streaming)."""
        self._check_fitted()
        expr = pl.lit(self.offset, dtype=pl.Float64)
        for s, w in self.weights.items():
            expr = expr + pl.col(_raw(s)) * w
        if self.quality_w is not None:
            d = len(self.quality_columns)
            qa = [pl.col(f"q_{c}") for c in self.quality_columns] + [pl.lit(1.0)]
            ra = [pl.col(f"r_{c}") for c in self.quality_columns] + [pl.lit(1.0)]
            for j in range(d + 1):
                for k in range(d + 1):
                    if self.quality_w[j, k] != 0.0:
                        expr = expr + float(self.quality_w[j, k]) * qa[j] * ra[k]
        return expr

    def transform(self, data: Systems, *, where: str | None = None,
                  quality_model: Data | None = None,
                  quality_segment: Data | None = None) -> pl.LazyFrame:
        """Fuse lazily: one row per trial, ``score`` = fused llr, inputs ``score_raw_<system>``."""
        self._check_fitted()
        if self.quality_columns and (quality_model is None or quality_segment is None):
            raise ScoreframeError(message("this fusion uses quality measures",
                                          expected="quality_model and quality_segment tables"))
        wide, _ = fusion_table(data, where=where, missing=self.missing, systems=self.systems,
                               quality_model=quality_model if self.quality_columns else None,
                               quality_segment=quality_segment if self.quality_columns else None)
        if self.quality_columns:
            have = _quality_columns(wide)
            if sorted(have) != sorted(self.quality_columns):
                raise SchemaError(message("quality columns differ from the model's",
                                          expected=f"{self.quality_columns}", got=f"{have}"))
            qcols = [f"{p}_{c}" for c in self.quality_columns for p in ("q", "r")]
            n_null = wide.select(pl.any_horizontal(pl.col(qcols).is_null()).sum()
                                 ).collect().item()
            if n_null:
                raise AlignmentError(message("trials without quality measures",
                                             got=f"{n_null} trials whose model or segment is "
                                                 f"not in the quality tables"))
        out = wide.with_columns(self.to_expr().alias("score"))
        if self.quality_columns:
            out = out.drop([c for c in out.collect_schema().names()
                            if c.startswith(("q_", "r_"))])
        return out

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the fitted model as JSON (atomically)."""
        self._check_fitted()
        return save_model(self, path, overwrite=overwrite)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: method, weights by system, offset, p_target, quality, training."""
        self._check_fitted()
        doc = {**header(self.method), "weights": self.weights, "offset": self.offset,
               "p_target": self.p_target, "objective": _rule_doc(self.rule),
               "missing": self.missing, "quality": None, "training": self.training}
        if self.quality_w is not None:
            doc["quality"] = {"columns": self.quality_columns,
                              "W": [[float(v) for v in row] for row in self.quality_w]}
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from :meth:`to_dict` output, validating every field."""
        obj = cls(p_target=field(doc, "p_target", float, where=where),
                  objective=_rule_from_doc(doc.get("objective", {"alpha": 1, "beta": 1}),
                                           where=where),
                  missing=doc.get("missing", "error"))
        weights = field(doc, "weights", dict, where=where)
        names = check_names(list(weights), where=f"{where}, weights")
        if len(names) < 2:
            raise FormatError(message("a fusion model needs at least two weights", where=where))
        vals = decode_floats(list(weights.values()), where=f"{where}, weights", finite=True)
        obj.weights = dict(zip(names, vals, strict=True))
        obj.offset = decode_floats([doc.get("offset")], where=f"{where}, offset", finite=True)[0]
        q = doc.get("quality")
        if q is not None:
            if not isinstance(q, dict):
                raise FormatError(message("bad `quality` in the model file", where=where))
            cols = check_names(q.get("columns"), where=f"{where}, quality.columns")
            w = np.asarray([decode_floats(r, where=f"{where}, quality.W", finite=True)
                            for r in field(q, "W", list, where=where)])
            if w.shape != (len(cols) + 1, len(cols) + 1) or not np.allclose(w, w.T):
                raise FormatError(message("bad quality matrix `W`", where=where,
                                          expected=f"symmetric {len(cols) + 1}x{len(cols) + 1}",
                                          got=f"shape {w.shape}"))
            obj.quality_columns, obj.quality_w = cols, w
        obj.training = field(doc, "training", dict, where=where) or {"loaded": True}
        return obj
