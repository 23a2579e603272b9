"""Multiclass affine calibration ``alpha * w + beta`` and linear fusion of multiclass systems.

Frames layer: trains with :func:`scoreframe.kernels.logreg.fit_affine` (multiclass logistic
regression, trust-region Newton-CG) on score/truth tables, applies lazily as Polars expressions
(``score`` = calibrated log-likelihood, input kept as ``score_raw`` / ``score_raw_<system>``),
and saves as JSON through :mod:`scoreframe.models`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import polars as pl

from scoreframe.errors import FormatError, ScoreframeError, message
from scoreframe.fusion import pick_systems
from scoreframe.kernels import logreg
from scoreframe.models import check_names, decode_floats, field, header, save_model
from scoreframe.multiclass.data import Data, read_scores, read_truth, score_matrices

__all__ = ["MulticlassCalibration", "MulticlassFusion"]


def _fit_groups(ws: list[np.ndarray], y: np.ndarray, prior: np.ndarray | None,
                max_iter: int) -> logreg.MulticlassFit:
    try:
        return logreg.fit_affine(ws, y, prior, max_iter=max_iter)
    except ValueError as exc:
        raise ScoreframeError(message("cannot train the multiclass model", got=str(exc))
                              ) from None


def _prior_vec(prior: Sequence[float] | None) -> np.ndarray | None:
    return None if prior is None else np.asarray(prior, dtype=np.float64)


def _training(fit: logreg.MulticlassFit, n: int, classes: list[str]) -> dict[str, Any]:
    return {"n_segments": n, "n_classes": len(classes),
            "objective": "normalized Cmxe (multiclass cross-entropy / H(prior))",
            "objective_value": fit.objective, "initial_objective": fit.initial_objective,
            "converged": fit.converged, "n_iter": fit.n_iter, "message": fit.message}


def _beta_expr(beta: dict[str, float]) -> pl.Expr:
    return pl.col("class").cast(pl.String).replace_strict(beta, return_dtype=pl.Float64)


class _Base:
    method = ""
    classes: list[str]
    beta: dict[str, float]
    training: dict[str, Any]
    prior: list[float] | None

    def _check_fitted(self) -> None:
        if not self.training:
            raise ScoreframeError(f"this {type(self).__name__} is not fitted: call fit() first")

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the fitted model as JSON (atomically)."""
        self._check_fitted()
        return save_model(self, path, overwrite=overwrite)

    def _common_doc(self) -> dict[str, Any]:
        return {"classes": self.classes, "beta": self.beta, "prior": self.prior,
                "training": self.training}

    def _load_common(self, doc: dict[str, Any], where: str) -> None:
        self.classes = check_names(doc.get("classes"), where=f"{where}, classes")
        beta = field(doc, "beta", dict, where=where)
        if sorted(beta) != sorted(self.classes):
            raise FormatError(message("`beta` must have one value per class", where=where))
        vals = decode_floats([beta[c] for c in self.classes], where=f"{where}, beta",
                             finite=True)
        self.beta = dict(zip(self.classes, vals, strict=True))
        prior = doc.get("prior")
        self.prior = None if prior is None else decode_floats(prior, where=f"{where}, prior")
        self.training = field(doc, "training", dict, where=where) or {"loaded": True}


class MulticlassCalibration(_Base):
    """Affine multiclass calibration ``w' = alpha * w + beta`` (MATH.md 11.2).

    Trained by multiclass logistic regression (minimum prior-weighted Cmxe) from
    ``alpha = 1, beta = 0``; ``beta`` of the last class is 0.

    Examples
    --------
    >>> import polars as pl
    >>> w = [[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
    ...      [-1, 0, 1], [1, 0, 0]]
    >>> sc = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
    ...                    "class": ["a", "b", "c"] * 9, "score": [x for r in w for x in r]})
    >>> tr = pl.DataFrame({"segment": [f"t{i}" for i in range(9)], "class": list("aaabbbccc")})
    >>> cal = MulticlassCalibration().fit(sc, tr)
    >>> round(cal.alpha, 5), [round(b, 5) for b in cal.beta.values()]
    (0.99595, [0.12014, 0.06543, 0.0])
    """

    method = "multiclass_affine"

    def __init__(self, *, prior: Sequence[float] | None = None, max_iter: int = 100) -> None:
        self.prior = None if prior is None else [float(p) for p in prior]
        self.max_iter = int(max_iter)
        self.alpha = math.nan
        self.classes = []
        self.beta = {}
        self.training = {}

    def fit(self, scores: Data, truth: Data) -> Self:
        """Train on one system's scores and the truth."""
        sc = read_scores(scores)
        if "system" in sc.columns and sc["system"].n_unique() > 1:
            raise ScoreframeError(message("multiclass calibration trains one system at a time",
                                          got=f"systems {sorted(sc['system'].unique())[:5]}"))
        g = score_matrices(sc.drop("system", strict=False), read_truth(truth))[0]
        fit = _fit_groups([g.w], g.y, _prior_vec(self.prior), self.max_iter)
        self.classes = g.classes
        self.alpha = float(fit.alpha[0])
        self.beta = dict(zip(g.classes, map(float, fit.beta), strict=True))
        self.training = _training(fit, int(g.y.size), g.classes)
        return self

    def to_expr(self) -> pl.Expr:
        """The calibrated score as a Polars expression over ``score`` and ``class``."""
        self._check_fitted()
        return pl.col("score") * self.alpha + _beta_expr(self.beta)

    def transform(self, scores: Data) -> pl.LazyFrame:
        """Calibrate lazily: ``score`` = calibrated log-likelihood, input as ``score_raw``."""
        self._check_fitted()
        lf = read_scores(scores).lazy()
        bad = lf.filter(~pl.col("class").is_in(self.classes)).select(pl.len()).collect().item()
        if bad:
            raise ScoreframeError(message("scores for classes the model does not know",
                                          expected=f"{self.classes}", got=f"{bad} rows"))
        return lf.with_columns(self.to_expr().alias("__cal")).rename(
            {"score": "score_raw"}).rename({"__cal": "score"})

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        self._check_fitted()
        return {**header(self.method), "alpha": self.alpha, **self._common_doc()}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from :meth:`to_dict` output, validating every field."""
        obj = cls()
        obj.alpha = decode_floats([doc.get("alpha")], where=f"{where}, alpha", finite=True)[0]
        obj._load_common(doc, where)
        return obj


def _wide_systems(scores: Data | Sequence[Data] | Mapping[str, Data],
                  systems: Sequence[str] | None = None) -> tuple[pl.DataFrame, list[str]]:
    """Join several multiclass systems on (segment, class): ``score_raw_<system>`` columns."""
    if isinstance(scores, Mapping):
        frames = {k: read_scores(v).drop("system", strict=False) for k, v in scores.items()}
    elif isinstance(scores, (str, Path, pl.DataFrame, pl.LazyFrame)):
        df = read_scores(scores)
        if "system" not in df.columns:
            raise ScoreframeError(message("fusion needs several systems",
                                          hint="Give a `system` column or one table each."))
        frames = {s: df.filter(pl.col("system") == s).drop("system")
                  for s in sorted(df["system"].unique().to_list())}
    else:
        frames = {}
        for i, d in enumerate(scores):
            name = Path(d).name.split(".")[0] if isinstance(d, (str, Path)) else f"system{i+1}"
            frames[name] = read_scores(d).drop("system", strict=False)
    frames = pick_systems(frames, systems)
    wide = None
    for s, f in frames.items():
        part = f.select("segment", "class", pl.col("score").alias(f"score_raw_{s}"))
        wide = part if wide is None else wide.join(part, on=["segment", "class"], how="full",
                                                   coalesce=True)
    assert wide is not None
    cols = [f"score_raw_{s}" for s in frames]
    holes = wide.filter(pl.any_horizontal(pl.col(cols).is_null()))
    if holes.height:
        raise ScoreframeError(message(
            "systems do not score the same (segment, class) pairs",
            got=f"{holes.height} pairs missing in some system, e.g. segment "
                f"{holes['segment'].head(3).to_list()}",
            hint="Multiclass fusion needs aligned systems (same segment ids)."))
    return wide, list(frames)


class MulticlassFusion(_Base):
    """Linear fusion ``w' = sum_m alpha_m w_m + beta`` of multiclass systems (MATH.md 11.2).

    Systems are joined on (``segment``, ``class``); trained from ``alpha = 0, beta = 0``.
    """

    method = "multiclass_fusion"

    def __init__(self, *, prior: Sequence[float] | None = None, max_iter: int = 100) -> None:
        self.prior = None if prior is None else [float(p) for p in prior]
        self.max_iter = int(max_iter)
        self.weights: dict[str, float] = {}
        self.classes = []
        self.beta = {}
        self.training = {}

    def fit(self, scores: Data | Sequence[Data] | Mapping[str, Data], truth: Data) -> Self:
        """Train on several systems' scores (a ``system`` column, a list or a mapping)."""
        wide, names = _wide_systems(scores)
        truth_df = read_truth(truth)
        mats = []
        g0 = None
        for s in names:
            g = score_matrices(wide.select("segment", "class",
                                           pl.col(f"score_raw_{s}").alias("score")),
                               truth_df)[0]
            g0 = g0 or g
            mats.append(g.w)
        assert g0 is not None
        fit = _fit_groups(mats, g0.y, _prior_vec(self.prior), self.max_iter)
        self.weights = dict(zip(names, map(float, fit.alpha), strict=True))
        self.classes = g0.classes
        self.beta = dict(zip(g0.classes, map(float, fit.beta), strict=True))
        self.training = _training(fit, int(g0.y.size), g0.classes)
        return self

    def to_expr(self) -> pl.Expr:
        """The fused score over ``score_raw_<system>`` and ``class`` columns."""
        self._check_fitted()
        expr = _beta_expr(self.beta)
        for s, a in self.weights.items():
            expr = expr + pl.col(f"score_raw_{s}") * a
        return expr

    def transform(self, scores: Data | Sequence[Data] | Mapping[str, Data]) -> pl.LazyFrame:
        """Fuse: ``segment, class, score_raw_<system>..., score``."""
        self._check_fitted()
        wide, _ = _wide_systems(scores, systems=list(self.weights))
        return wide.lazy().with_columns(self.to_expr().alias("score"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        self._check_fitted()
        return {**header(self.method), "weights": self.weights, **self._common_doc()}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from :meth:`to_dict` output, validating every field."""
        obj = cls()
        weights = field(doc, "weights", dict, where=where)
        names = check_names(list(weights), where=f"{where}, weights")
        if len(names) < 2:
            raise FormatError(message("a fusion model needs at least two weights", where=where))
        obj.weights = dict(zip(names, decode_floats(list(weights.values()),
                                                    where=f"{where}, weights", finite=True),
                               strict=True))
        obj._load_common(doc, where)
        return obj
