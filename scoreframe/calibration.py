"""Calibration of one system's scores into llrs: affine (logistic regression, Beta rules) and PAV.

Frames layer on top of the kernels: reads supervised trials (``score``, ``label``) from a
DataFrame, LazyFrame or dataset path, fits with :mod:`scoreframe.kernels.logreg` or
:mod:`scoreframe.kernels.pav_map`, and applies the fitted map lazily as a Polars expression
(``to_expr``), so datasets of any size are calibrated in streaming chunks. Models are saved as
JSON by :mod:`scoreframe.models`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import (
    DegenerateError,
    FormatError,
    SchemaError,
    ScoreframeError,
    message,
)
from scoreframe.evaluate import _as_lazy
from scoreframe.kernels.logreg import LinearFit, fit_linear
from scoreframe.kernels.pav_map import apply_pav_map, pav_map
from scoreframe.kernels.psr import BetaRule, psr_beta
from scoreframe.kernels.sorted_scores import sort_scores
from scoreframe.models import decode_floats, field, header, save_model

__all__ = ["LinearCalibration", "PavCalibration", "calibration_map", "objective_rule"]

Data = pl.DataFrame | pl.LazyFrame | str | Path
F64 = NDArray[np.float64]


class NotFittedError(ScoreframeError):
    """A model was used before ``fit``."""


def objective_rule(objective: str | tuple[float, float] | BetaRule) -> BetaRule:
    """The training objective from a name, an ``(alpha, beta)`` pair or a :class:`BetaRule`.

    Names: ``log``, ``brier``, ``boost``, ``asym``; pairs are in Brümmer's convention.
    """
    if isinstance(objective, BetaRule):
        return objective
    try:
        if isinstance(objective, str):
            if "," in objective:
                a, b = (float(x) for x in objective.split(","))
                return psr_beta(a, b)
            return psr_beta(objective)
        a, b = objective
        return psr_beta(float(a), float(b))
    except ValueError as exc:
        raise ScoreframeError(message("bad training objective", got=repr(objective),
                                      expected="log | brier | boost | asym | 'alpha,beta'",
                                      hint=str(exc))) from None


def _rule_doc(rule: BetaRule) -> dict[str, Any]:
    return {"rule": rule.name, "alpha": rule.alpha, "beta": rule.beta}


def _rule_from_doc(doc: Any, *, where: str) -> BetaRule:
    if not isinstance(doc, dict):
        raise FormatError(message("bad `objective` in the model file", where=where,
                                  expected="an object with alpha and beta"))
    return psr_beta(field(doc, "alpha", float, where=where), field(doc, "beta", float,
                                                                    where=where))


def check_p_target(p_target: float) -> float:
    """A training prior strictly between 0 and 1."""
    p = float(p_target)
    if not 0.0 < p < 1.0:
        raise ScoreframeError(message("bad `p_target`", expected="a prior in (0, 1)",
                                      got=repr(p_target)))
    return p


def training_frame(data: Data, columns: Sequence[str], *, where: str | None = None,
                   what: str = "training") -> pl.DataFrame:
    """Collect ``columns`` + ``label`` of labelled trials, with clear errors."""
    lf = _as_lazy(data, where)
    names = lf.collect_schema().names()
    missing = [c for c in [*columns, "label"] if c not in names]
    if missing:
        raise SchemaError(message(f"{what} data lack column(s) {missing}",
                                  expected=f"{[*columns, 'label']}", got=f"{names}"))
    df = lf.select(*[pl.col(c).cast(pl.Float64) for c in columns], pl.col("label")).collect()
    if df.height == 0:
        raise DegenerateError(message(f"no {what} trials", hint="Check --where."))
    n_null = df["label"].null_count()
    if n_null:
        raise SchemaError(message(f"{what} needs labelled trials",
                                  got=f"{n_null} trials with a null `label`"))
    for c in columns:
        bad = df[c].is_null().sum() + df[c].is_nan().sum()
        if bad:
            raise SchemaError(message(f"{what} scores must be numbers", where=f"column `{c}`",
                                      got=f"{bad} null or NaN values"))
    return df


def one_system(data: Data, where: str | None) -> pl.LazyFrame:
    """The trials of a dataset that must hold a single system."""
    lf = _as_lazy(data, where)
    if "system" in lf.collect_schema().names():
        systems = lf.select(pl.col("system").unique()).collect()["system"].to_list()
        if len(systems) > 1:
            raise ScoreframeError(message(
                "calibration trains one system at a time", got=f"systems {sorted(systems)[:5]}",
                hint="Select one with where=\"system = 'name'\" (CLI: --where), or fuse them."))
    return lf


def _tar_non(df: pl.DataFrame, column: str) -> tuple[F64, F64]:
    label = df["label"].to_numpy()
    s = df[column].to_numpy()
    tar, non = s[label], s[~label]
    if tar.size == 0 or non.size == 0:
        raise DegenerateError(message("training needs targets and non-targets",
                                      got=f"{tar.size} targets, {non.size} non-targets"))
    return tar, non


def fit_report(fit: LinearFit, *, p_target: float, rule: BetaRule, n_tar: int,
               n_non: int) -> dict[str, Any]:
    """The ``training`` section of a model file."""
    return {"p_target": p_target, "objective": _rule_doc(rule), "n_tar": n_tar, "n_non": n_non,
            "objective_value": fit.objective, "initial_objective": fit.initial_objective,
            "converged": fit.converged, "n_iter": fit.n_iter, "message": fit.message,
            "gradient_norm": fit.gradient_norm}


def with_llr(lf: pl.LazyFrame, expr: pl.Expr, *, score: str = "score") -> pl.LazyFrame:
    """Replace ``score`` by the llr expression and keep the input as ``score_raw``."""
    names = lf.collect_schema().names()
    if score not in names:
        raise SchemaError(message(f"data lack the score column `{score}`", got=f"{names}"))
    if "score_raw" in names and score != "score_raw":
        lf = lf.drop("score_raw")
    return lf.with_columns(expr.alias("__llr")).rename({score: "score_raw"}).rename(
        {"__llr": "score"})


class _Calibrator:
    method = ""

    def _check_fitted(self) -> None:
        if not getattr(self, "training", None):
            raise NotFittedError(f"this {type(self).__name__} is not fitted: call fit() first")

    def transform(self, data: Data, *, where: str | None = None) -> pl.LazyFrame:
        """Calibrate lazily: ``score`` becomes the llr, the input score is kept as ``score_raw``.

        Nothing is computed until the result is collected or sunk (streaming-friendly).
        """
        self._check_fitted()
        return with_llr(_as_lazy(data, where), self.to_expr("score"))

    def to_expr(self, score: str | pl.Expr = "score") -> pl.Expr:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the fitted model as JSON (atomically)."""
        self._check_fitted()
        return save_model(self, path, overwrite=overwrite)


class LinearCalibration(_Calibrator):
    """Affine calibration ``llr = scale * score + offset`` by prior-weighted logistic regression.

    The objective is BOSARIS' normalized, prior-weighted cross-entropy (MATH.md 10.2), or any
    proper scoring rule of the Beta family (``objective="brier"``, ``"boost"``, ``"asym"``,
    ``(alpha, beta)``; seed 001), minimized by trust-region Newton-CG from ``(0, 0)``.

    Parameters
    ----------
    p_target : float
        Training prior (BOSARIS' ``prior``); it enters the objective only, not the llrs.
    objective : str or (float, float)
        Scoring rule of the training objective.
    max_iter : int
        Cap on optimizer iterations (separable data have their optimum at infinity).

    Examples
    --------
    >>> import polars as pl
    >>> dev = pl.DataFrame({"score": [-3.0, 1, 2, 5, 7, -7, -5, -2, -1, 3, 4],
    ...                     "label": [True] * 5 + [False] * 6})
    >>> cal = LinearCalibration(p_target=0.5).fit(dev)
    >>> round(cal.scale, 6), round(cal.offset, 6), round(cal.training["objective_value"], 6)
    (0.254935, -0.152622, 0.842058)
    >>> cal.transform(dev).collect()["score"][0] == cal.scale * -3.0 + cal.offset
    True
    """

    method = "linear"

    def __init__(self, *, p_target: float = 0.5,
                 objective: str | tuple[float, float] | BetaRule = "log",
                 max_iter: int = 100) -> None:
        self.p_target = check_p_target(p_target)
        self.rule = objective_rule(objective)
        self.max_iter = int(max_iter)
        self.scale: float = math.nan
        self.offset: float = math.nan
        self.training: dict[str, Any] = {}

    def fit(self, data: Data, *, where: str | None = None) -> Self:
        """Train on labelled trials (``score``, ``label``) of one system."""
        df = training_frame(one_system(data, where), ["score"])
        tar, non = _tar_non(df, "score")
        fit = fit_linear(np.column_stack([tar, np.ones_like(tar)]),
                         np.column_stack([non, np.ones_like(non)]), p_target=self.p_target,
                         rule=self.rule, w0=np.zeros(2), max_iter=self.max_iter)
        self.scale, self.offset = float(fit.params[0]), float(fit.params[1])
        self.training = fit_report(fit, p_target=self.p_target, rule=self.rule,
                                   n_tar=tar.size, n_non=non.size)
        return self

    def __call__(self, scores: ArrayLike) -> F64:
        """Calibrate an array of scores."""
        self._check_fitted()
        return self.scale * np.asarray(scores, dtype=np.float64) + self.offset

    def to_expr(self, score: str | pl.Expr = "score") -> pl.Expr:
        """The calibration as a Polars expression (lazy, streaming)."""
        self._check_fitted()
        col = pl.col(score) if isinstance(score, str) else score
        return col.cast(pl.Float64) * self.scale + self.offset

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: method, scale, offset, p_target, objective, training."""
        self._check_fitted()
        return {**header(self.method), "scale": self.scale, "offset": self.offset,
                "p_target": self.p_target, "objective": _rule_doc(self.rule),
                "training": self.training}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from :meth:`to_dict` output, validating every field."""
        obj = cls(p_target=field(doc, "p_target", float, where=where),
                  objective=_rule_from_doc(doc.get("objective", {"alpha": 1, "beta": 1}),
                                           where=where))
        obj.scale, obj.offset = decode_floats([doc.get("scale"), doc.get("offset")],
                                              where=f"{where}, scale/offset", finite=True)
        obj.training = field(doc, "training", dict, where=where) or {"loaded": True}
        return obj


class PavCalibration(_Calibrator):
    """Non-parametric calibration by PAV (isotonic regression), as BOSARIS' ``pav_calibration``.

    Parameters
    ----------
    variant : {"bosaris", "raw"}
        ``bosaris`` adds a dummy target at -1e6 and a dummy non-target at +1e6 (finite llrs);
        ``raw`` does not (the end blocks may map to -inf/+inf). See
        :mod:`scoreframe.kernels.pav_map` for the behaviour outside the training range.
    eps : float
        BOSARIS' ``small_val``: tilts each flat block by ``±eps`` so the map is invertible.

    Examples
    --------
    >>> import polars as pl
    >>> dev = pl.DataFrame({"score": [-3.0, 1, 2, 5, 7, -7, -5, -2, -1, 3, 4],
    ...                     "label": [True] * 5 + [False] * 6})
    >>> pav = PavCalibration().fit(dev)
    >>> pav([-10.0, 0.0, 2.5, 4.5, 10.0]).round(5).tolist()
    [-0.539, -0.19242, 0.15415, 0.50072, 0.8473]
    """

    method = "pav"

    def __init__(self, *, variant: str = "bosaris", eps: float = 0.0) -> None:
        if variant not in ("bosaris", "raw"):
            raise ScoreframeError(message("bad PAV variant", expected="bosaris | raw",
                                          got=repr(variant)))
        self.variant = variant
        self.eps = float(eps)
        self.knots_score: F64 = np.empty(0)
        self.knots_llr: F64 = np.empty(0)
        self.training: dict[str, Any] = {}

    def fit(self, data: Data, *, where: str | None = None) -> Self:
        """Train on labelled trials (``score``, ``label``) of one system."""
        df = training_frame(one_system(data, where), ["score"])
        tar, non = _tar_non(df, "score")
        try:
            self.knots_score, self.knots_llr = pav_map(sort_scores(tar, non), eps=self.eps,
                                                       variant=self.variant)
        except ValueError as exc:
            raise ScoreframeError(str(exc)) from None
        self.training = {"n_tar": int(tar.size), "n_non": int(non.size),
                         "n_blocks": int(self.knots_score.size // 2)}
        return self

    def __call__(self, scores: ArrayLike) -> F64:
        """Calibrate an array of scores."""
        self._check_fitted()
        return apply_pav_map(scores, self.knots_score, self.knots_llr)

    def to_expr(self, score: str | pl.Expr = "score") -> pl.Expr:
        """The map as a Polars expression (element-wise, so it streams chunk by chunk)."""
        self._check_fitted()
        col = pl.col(score) if isinstance(score, str) else score
        x, y = self.knots_score, self.knots_llr
        return col.cast(pl.Float64).map_batches(
            lambda s: pl.Series(s.name, apply_pav_map(s.to_numpy(), x, y)),
            return_dtype=pl.Float64, is_elementwise=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: method, variant, eps, knots, training."""
        from scoreframe.models import encode_float

        self._check_fitted()
        return {**header(self.method), "variant": self.variant, "eps": self.eps,
                "knots_score": [float(v) for v in self.knots_score],
                "knots_llr": [encode_float(v) for v in self.knots_llr],
                "training": self.training}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from :meth:`to_dict` output, validating the knots."""
        obj = cls(variant=field(doc, "variant", str, where=where),
                  eps=field(doc, "eps", float, where=where))
        x = np.asarray(decode_floats(doc.get("knots_score"), where=f"{where}, knots_score",
                                     finite=True))
        y = np.asarray(decode_floats(doc.get("knots_llr"), where=f"{where}, knots_llr"))
        if x.size < 2 or x.size != y.size or x.size % 2 or np.any(x[1:] < x[:-1]) \
                or np.isnan(y).any() or np.any(y[1:] < y[:-1]):
            raise FormatError(message("bad PAV knots in the model file", where=where,
                                      expected="equal-length, even, non-decreasing lists"))
        obj.knots_score, obj.knots_llr = x, y
        obj.training = field(doc, "training", dict, where=where) or {"loaded": True}
        return obj


def calibration_map(models: dict[str, LinearCalibration | PavCalibration], *, lo: float,
                    hi: float, n: int = 400) -> pl.DataFrame:
    """Score -> llr curves of fitted calibrations over ``[lo, hi]`` (for plotting).

    PAV maps also get their knots inside the range, so flat blocks and ramps are drawn exactly.

    Examples
    --------
    >>> import polars as pl
    >>> dev = pl.DataFrame({"score": [-3.0, 1, 2, 5, 7, -7, -5, -2, -1, 3, 4],
    ...                     "label": [True] * 5 + [False] * 6})
    >>> m = calibration_map({"pav": PavCalibration().fit(dev)}, lo=-8, hi=8, n=5)
    >>> m.columns
    ['map', 'score', 'llr']
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ScoreframeError(message("bad score range", expected="finite lo < hi",
                                      got=f"[{lo}, {hi}]"))
    grid = np.linspace(lo, hi, n)
    parts = []
    for name, model in models.items():
        x = grid
        if isinstance(model, PavCalibration):
            k = model.knots_score
            x = np.unique(np.concatenate([grid, k[(k >= lo) & (k <= hi)]]))
        parts.append(pl.DataFrame({"map": [name] * x.size, "score": x, "llr": model(x)}))
    return pl.concat(parts)
