"""Linear fusion of several systems, with quality measures (docs/math.md 10.1; [BdV11] eq. 30).

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
from typing import Any, Self, TypeAlias

import numpy as np
import polars as pl

from scoreframe.checks import check_p_target, check_positive_int
from scoreframe.errors import AlignmentError, FormatError, SchemaError, ScoreframeError, message
from scoreframe.estimators import modelfile as mf
from scoreframe.estimators.base import Estimator
from scoreframe.estimators.calibration import (
    fit_report,
    objective_rule,
    rule_doc,
    rule_from_doc,
    training_frame,
)
from scoreframe.frames.lazy import Data, as_lazy, is_frame_like
from scoreframe.frames.systems import pick_systems
from scoreframe.kernels.logreg import fit_linear
from scoreframe.kernels.psr import BetaRule

__all__ = ["KEY", "LinearFusion", "Systems", "check_missing", "check_wide", "finish_wide",
           "fusion_table", "pick_systems", "split_systems", "system_name"]

#: Systems to fuse: one table with a ``system`` column, several tables, or ``name -> table``.
Systems: TypeAlias = "Data | Sequence[Data] | Mapping[str, Data]"
KEY = ["model", "segment"]


def _raw(system: str) -> str:
    return f"score_raw_{system}"


def system_name(source: object) -> str:
    """The fallback name of a system given as a file: the file name up to its first dot.

    >>> system_name("scores/sys_a.dev.parquet")
    'sys_a'
    """
    return Path(str(source)).name.split(".")[0]


def split_systems(data: Systems, where: str | None = None) -> dict[str, pl.LazyFrame]:
    """One lazy frame per system, by name.

    Names come from the mapping's keys (``{"a": "a_dev.parquet", ...}``: the explicit way),
    else from a ``system`` column, else from file names (:func:`system_name`), else
    ``system<i>``.
    """
    if isinstance(data, Mapping):
        for k in data:
            if not isinstance(k, str) or not k:
                raise ScoreframeError(message("bad system name", expected="a non-empty string",
                                              got=repr(k)[:40]))
        items = [(k, as_lazy(v, where=where), True) for k, v in data.items()]
    elif isinstance(data, str | Path) or is_frame_like(data):
        items = [("", as_lazy(data, where=where), False)]
    elif isinstance(data, Sequence):
        items = [(system_name(d) if isinstance(d, str | Path) else "",
                  as_lazy(d, where=where), False) for d in data]
    else:
        raise ScoreframeError(message("unsupported fusion input", got=type(data).__name__,
                                      expected="a table with a `system` column, a list of "
                                               "tables or a mapping name -> table"))
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


def check_missing(missing: object) -> str | float:
    """The missing-score policy: ``"error"``, ``"drop"`` or a finite fill value.

    >>> check_missing("drop"), check_missing(-5)
    ('drop', -5.0)
    """
    if missing in ("error", "drop"):
        return str(missing)
    if isinstance(missing, int | float) and not isinstance(missing, bool) \
            and math.isfinite(missing):
        return float(missing)
    raise AlignmentError(message("bad `missing` policy", expected="error | drop | a number",
                                 got=repr(missing)[:40]))


def _quality(table: Data | None, side: str) -> tuple[pl.LazyFrame, list[str]] | None:
    if table is None:
        return None
    lf = as_lazy(table)
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
    missing = check_missing(missing)
    frames = pick_systems(split_systems(data, where), systems)
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


class LinearFusion(Estimator):
    """Linear (and quality-measure) fusion of K systems by prior-weighted logistic regression.

    ``llr = offset_ + sum_i weights_[i] * score_i`` (+ ``qa' W ra`` with quality tables),
    trained as BOSARIS' ``train_linear_fuser`` (start: ``1/K`` weights, offset 0), to the exact
    optimum (trust-region Newton-CG finished with exact Newton steps).

    Parameters
    ----------
    p_target : float
        Training prior (enters the objective only).
    objective : str or (float, float) or BetaRule
        Scoring rule of the training objective (``log`` = logistic regression).
    max_iter : int
        Cap on optimizer iterations.
    missing : {"error", "drop"} or float
        Policy for trials some systems did not score (training and application).

    Attributes
    ----------
    weights_ : dict of str to float
        One weight per system, by name (the names :meth:`transform` expects).
    offset_ : float
        The fused llr's offset.
    quality_columns_ : list of str
        Quality measures used (empty without quality tables).
    quality_w_ : ndarray or None
        The symmetric matrix ``W`` of the quality term.
    where_ : str or None
        The ``where`` slice trained on.
    training_ : dict
        Counts, objective values, convergence report.

    See Also
    --------
    scoreframe.LinearCalibration : Calibration of one system.
    scoreframe.multiclass.MulticlassFusion : Fusion of multiclass scores.
    scoreframe.load_model : Read a saved model back.

    Examples
    --------
    >>> import polars as pl
    >>> rows = {"model": ["m"] * 6, "segment": list("abcdef"),
    ...         "label": [True, True, True, False, False, False]}
    >>> a = pl.DataFrame({**rows, "score": [2.0, 1.0, -0.5, 0.0, -1.0, -2.0]})
    >>> b = pl.DataFrame({**rows, "score": [1.0, 0.0, 1.5, 0.5, -1.0, 0.8]})
    >>> fuser = LinearFusion().fit({"a": a, "b": b})
    >>> fuser.systems
    ['a', 'b']
    >>> fuser.transform({"a": a, "b": b}).collect().columns
    ['model', 'segment', 'label', 'score_raw_a', 'score_raw_b', 'score']
    """

    method = "linear_fusion"
    fitted = ("weights_", "offset_")
    schema = {
        "type": "object",
        "required": ["weights", "offset", "p_target", "training"],
        "properties": {
            "weights": {"type": "object", "minProperties": 2,
                        "additionalProperties": mf.FINITE,
                        "propertyNames": {"minLength": 1}},
            "offset": mf.FINITE, "p_target": mf.PRIOR, "objective": mf.OBJECTIVE,
            "missing": {"anyOf": [{"enum": ["error", "drop"]}, mf.FINITE]},
            "quality": {"anyOf": [{"type": "null"}, {
                "type": "object", "required": ["columns", "W"],
                "properties": {"columns": {**mf.NAMES, "minItems": 1},
                               "W": {"type": "array", "items": {"type": "array",
                                                                "items": mf.FINITE}}}}]},
            "training": {"type": "object"}},
    }

    def __init__(self, *, p_target: float = 0.5,
                 objective: str | tuple[float, float] | BetaRule = "log",
                 max_iter: int = 100, missing: str | float = "error") -> None:
        self.p_target = check_p_target(p_target)
        self.objective = objective_rule(objective)
        self.max_iter = check_positive_int(max_iter, name="max_iter")
        self.missing = check_missing(missing)
        self.weights_: dict[str, float] = {}
        self.offset_: float = math.nan
        self.quality_columns_: list[str] = []
        self.quality_w_: np.ndarray | None = None
        self.reset()

    def get_params(self) -> dict[str, Any]:
        """The parameters (the objective by its name)."""
        return {"p_target": self.p_target, "objective": self.objective.name,
                "max_iter": self.max_iter, "missing": self.missing}

    @property
    def rule(self) -> BetaRule:
        """The training objective (alias of ``objective``)."""
        return self.objective

    @property
    def systems(self) -> list[str]:
        """The fused systems, in order."""
        return list(self.weights_)

    def fit(self, data: Systems, *, where: str | None = None,
            quality_model: Data | None = None, quality_segment: Data | None = None) -> Self:
        """Train on labelled trials of every system (joined on ``model``, ``segment``).

        ``data``: a mapping ``name -> table or path`` (explicit names), one table with a
        ``system`` column, or a list of tables/paths (named by their ``system`` column or file
        name).
        """
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
        fit = fit_linear(x[label], x[~label], p_target=self.p_target, rule=self.objective,
                         w0=w0, max_iter=self.max_iter)
        linear_objective = fit.objective
        self.quality_columns_, self.quality_w_ = [], None
        if qcols:
            d = len(qcols)
            qa = np.column_stack([df[f"q_{c}"].to_numpy() for c in qcols] + [np.ones(df.height)])
            ra = np.column_stack([df[f"r_{c}"].to_numpy() for c in qcols] + [np.ones(df.height)])
            pairs = _quality_pairs(d)
            feats = np.column_stack([qa[:, j] * ra[:, kk] + qa[:, kk] * ra[:, j]
                                     for j, kk in pairs])
            xq = np.column_stack([x, feats])
            w0q = np.concatenate([fit.params, np.zeros(len(pairs))])
            fit = fit_linear(xq[label], xq[~label], p_target=self.p_target, rule=self.objective,
                             w0=w0q, max_iter=self.max_iter)
            y = np.zeros((d + 1, d + 1))
            for (j, kk), v in zip(pairs, fit.params[k + 1:], strict=True):
                y[j, kk] = v
            self.quality_w_ = y + y.T
            self.quality_columns_ = qcols
        self.weights_ = {s: float(v) for s, v in zip(names, fit.params[:k], strict=True)}
        self.offset_ = float(fit.params[k])
        self.system_, self.where_ = None, where
        self.training_ = fit_report(fit, p_target=self.p_target, rule=self.objective,
                                    n_tar=int(label.sum()), n_non=int((~label).sum()))
        if qcols:
            self.training_["linear_objective_value"] = linear_objective
        return self

    def to_expr(self) -> pl.Expr:
        """The fused llr over the columns of :func:`fusion_table` (lazy, streaming)."""
        self.check_fitted()
        expr = pl.lit(self.offset_, dtype=pl.Float64)
        for s, w in self.weights_.items():
            expr = expr + pl.col(_raw(s)) * w
        if self.quality_w_ is not None:
            d = len(self.quality_columns_)
            qa = [pl.col(f"q_{c}") for c in self.quality_columns_] + [pl.lit(1.0)]
            ra = [pl.col(f"r_{c}") for c in self.quality_columns_] + [pl.lit(1.0)]
            for j in range(d + 1):
                for k in range(d + 1):
                    if self.quality_w_[j, k] != 0.0:
                        expr = expr + float(self.quality_w_[j, k]) * qa[j] * ra[k]
        return expr

    def transform(self, data: Systems, *, where: str | None = None,
                  quality_model: Data | None = None,
                  quality_segment: Data | None = None) -> pl.LazyFrame:
        """Fuse lazily: one row per trial, ``score`` = fused llr, inputs ``score_raw_<system>``.

        The systems are found by name (mapping keys, ``system`` column or file names); they
        must include every system the model fuses (others are ignored).
        """
        self.check_fitted()
        qc = self.quality_columns_
        if qc and (quality_model is None or quality_segment is None):
            raise ScoreframeError(message("this fusion uses quality measures",
                                          expected="quality_model and quality_segment tables"))
        wide, _ = fusion_table(data, where=where, missing=self.missing, systems=self.systems,
                               quality_model=quality_model if qc else None,
                               quality_segment=quality_segment if qc else None)
        if qc:
            have = _quality_columns(wide)
            if sorted(have) != sorted(qc):
                raise SchemaError(message("quality columns differ from the model's",
                                          expected=f"{qc}", got=f"{have}"))
            qcols = [f"{p}_{c}" for c in qc for p in ("q", "r")]
            n_null = wide.select(pl.any_horizontal(pl.col(qcols).is_null()).sum()
                                 ).collect().item()
            if n_null:
                raise AlignmentError(message("trials without quality measures",
                                             got=f"{n_null} trials whose model or segment is "
                                                 f"not in the quality tables"))
        out = wide.with_columns(self.to_expr().alias("score"))
        if qc:
            out = out.drop([c for c in out.collect_schema().names()
                            if c.startswith(("q_", "r_"))])
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: method, weights by system, offset, p_target, quality, training."""
        self.check_fitted()
        doc = {**mf.header(self.method), "weights": self.weights_, "offset": self.offset_,
               "p_target": self.p_target, "objective": rule_doc(self.objective),
               "missing": self.missing, "quality": None, **self.provenance(),
               "training": self.training_}
        if self.quality_w_ is not None:
            doc["quality"] = {"columns": self.quality_columns_,
                              "W": [[float(v) for v in row] for row in self.quality_w_]}
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from a validated :meth:`to_dict` document."""
        obj = cls(p_target=doc["p_target"], objective=rule_from_doc(doc.get("objective")),
                  missing=doc.get("missing", "error"))
        obj.weights_ = {str(k): float(v) for k, v in doc["weights"].items()}
        obj.offset_ = float(doc["offset"])
        q = doc.get("quality")
        if q is not None:
            cols = list(q["columns"])
            w = np.asarray(q["W"], dtype=np.float64) if all(
                len(r) == len(cols) + 1 for r in q["W"]) else np.empty((0, 0))
            if w.shape != (len(cols) + 1, len(cols) + 1) or not np.allclose(w, w.T):
                raise FormatError(message("bad `quality.W`", where=where,
                                          expected=f"a symmetric {len(cols) + 1}x"
                                                   f"{len(cols) + 1} matrix",
                                          got=f"{len(q['W'])} rows"))
            obj.quality_columns_, obj.quality_w_ = cols, w
        obj.load_provenance(doc)
        return obj
