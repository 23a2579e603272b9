"""Multiclass affine calibration ``scale * w + offset`` and linear fusion of multiclass systems.

Frames layer: trains with :func:`scoreframe.kernels.logreg.fit_affine` (multiclass logistic
regression: trust-region Newton-CG finished with exact Newton steps) on score/truth tables,
applies lazily as Polars expressions (``score`` = calibrated log-likelihood, input kept as
``score_raw`` / ``score_raw_<system>``), and saves as JSON (:mod:`scoreframe.estimators`).
The estimators are registered as ``multiclass_affine`` and ``multiclass_fusion`` and are
also importable from :mod:`scoreframe.estimators.multiclass`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self, cast

import numpy as np
import polars as pl

from scoreframe.checks import check_positive_int, check_probability
from scoreframe.errors import FormatError, SchemaError, ScoreframeError, message
from scoreframe.estimators import modelfile as mf
from scoreframe.estimators.base import Estimator
from scoreframe.estimators.calibration import check_system, one_system
from scoreframe.estimators.fusion import system_name
from scoreframe.frames.lazy import is_frame_like
from scoreframe.frames.systems import pick_systems
from scoreframe.kernels.logreg import MulticlassFit, fit_affine
from scoreframe.multiclass.data import Data, read_scores, read_truth, score_matrices

__all__ = ["MulticlassCalibration", "MulticlassFusion", "check_prior", "fit_multiclass"]

MulticlassSystems = Data | Sequence[Data] | Mapping[str, Data]


def fit_multiclass(ws: list[np.ndarray], y: np.ndarray, prior: Sequence[float] | None = None,
                   *, max_iter: int = 100) -> MulticlassFit:
    """:func:`~scoreframe.kernels.logreg.fit_affine` with the house errors (ScoreframeError).

    >>> w = np.array([[2.0, 0], [0, 1], [1, 0], [0, 2]])
    >>> fit = fit_multiclass([w], np.array([0, 1, 0, 0]))
    >>> fit.converged
    True
    """
    try:
        return fit_affine(ws, y, None if prior is None else np.asarray(prior, dtype=np.float64),
                          max_iter=max_iter)
    except ValueError as exc:
        raise ScoreframeError(message("cannot train the multiclass model", got=str(exc))
                              ) from None


def check_prior(prior: Sequence[float] | None) -> list[float] | None:
    """A class prior: non-negative numbers summing to 1 (None: flat).

    >>> check_prior([0.25, 0.75])
    [0.25, 0.75]
    """
    if prior is None:
        return None
    if isinstance(prior, str) or not isinstance(prior, Sequence | np.ndarray):
        raise ScoreframeError(message("bad `prior`", expected="a sequence of class priors",
                                      got=repr(prior)[:40]))
    p = [check_probability(v, name="prior", closed=True) for v in prior]
    if len(p) < 2 or not math.isclose(sum(p), 1.0, rel_tol=1e-9):
        raise ScoreframeError(message("bad `prior`", expected="at least 2 numbers summing to 1",
                                      got=repr(list(prior))[:60]))
    return p


def _training(fit: MulticlassFit, n: int, classes: list[str]) -> dict[str, Any]:
    return {"n_segments": n, "n_classes": len(classes),
            "objective": "normalized Cmxe (multiclass cross-entropy / H(prior))",
            "objective_value": fit.objective, "initial_objective": fit.initial_objective,
            "converged": fit.converged, "n_iter": fit.n_iter, "n_newton": fit.n_newton,
            "gradient_norm": fit.gradient_norm, "message": fit.message}


def _offset_expr(offset: dict[str, float]) -> pl.Expr:
    return pl.col("class").cast(pl.String).replace_strict(offset, return_dtype=pl.Float64)


def _truth_of(truth: pl.DataFrame, system: str | None) -> pl.DataFrame:
    """The truth of one system (a truth table may list segments per system)."""
    if "system" not in truth.columns:
        return truth
    if system is not None and system in truth["system"].unique().to_list():
        truth = truth.filter(pl.col("system") == system)
    return truth.drop("system")


_COMMON_SCHEMA: dict[str, Any] = {
    "classes": {**mf.NAMES, "minItems": 2},
    "beta": {"type": "object", "additionalProperties": mf.FINITE},
    "prior": {"anyOf": [{"type": "null"},
                        {"type": "array", "minItems": 2,
                         "items": {"type": "number", "minimum": 0, "maximum": 1}}]},
    "training": {"type": "object"},
}


class _MulticlassEstimator(Estimator):
    """What multiclass calibration and fusion share: classes, per-class offsets, the prior."""

    aliases = {"beta": "offset_"}

    classes_: list[str]
    offset_: dict[str, float]
    prior: list[float] | None

    def _common_doc(self) -> dict[str, Any]:
        return {"classes": self.classes_, "beta": self.offset_, "prior": self.prior,
                **self.provenance(), "training": self.training_}

    def _load_common(self, doc: dict[str, Any], where: str) -> None:
        self.classes_ = list(doc["classes"])
        beta = doc["beta"]
        if sorted(beta) != sorted(self.classes_):
            raise FormatError(message("bad `beta`", where=where,
                                      expected=f"one value per class {self.classes_[:6]}",
                                      got=f"keys {sorted(beta)[:6]}"))
        self.offset_ = {c: float(beta[c]) for c in self.classes_}
        prior = doc.get("prior")
        if prior is not None and len(prior) != len(self.classes_):
            raise FormatError(message("bad `prior`", where=where,
                                      expected=f"{len(self.classes_)} class priors",
                                      got=f"{len(prior)}"))
        try:
            self.prior = check_prior(prior)
        except ScoreframeError:
            raise FormatError(message("bad `prior`", where=where,
                                      expected="class priors summing to 1",
                                      got=repr(prior)[:60])) from None
        self.load_provenance(doc)

    def _check_classes(self, lf: pl.LazyFrame) -> None:
        bad = lf.filter(~pl.col("class").cast(pl.String).is_in(self.classes_)).select(
            pl.len()).collect().item()
        if bad:
            raise SchemaError(message("scores for classes the model does not know",
                                      expected=f"{self.classes_}", got=f"{bad} rows"))


class MulticlassCalibration(_MulticlassEstimator):
    """Affine multiclass calibration ``w' = scale_ * w + offset_[class]`` (docs/math.md 11.2).

    Trained by multiclass logistic regression (minimum prior-weighted Cmxe) from
    ``scale = 1, offset = 0``; the offset of the last class is 0.

    Parameters
    ----------
    prior : sequence of float, optional
        Class prior of the training objective (flat when None), in the sorted class order.
    max_iter : int
        Cap on optimizer iterations.

    Attributes
    ----------
    scale_ : float
        The common scale (``alpha`` in the model file).
    offset_ : dict of str to float
        One offset per class (``beta`` in the model file).
    classes_ : list of str
        The classes, in the model's order.
    system_ : str or None
        The system trained on; applying to another system's scores is an error unless
        ``allow_other_system=True``.
    training_ : dict
        Counts, objective values, convergence report.

    See Also
    --------
    MulticlassFusion : Fusion of several systems.
    scoreframe.multiclass.evaluate_multiclass : Cllr-style metrics before and after.
    scoreframe.LinearCalibration : The binary analogue.

    Examples
    --------
    >>> import polars as pl
    >>> w = [[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
    ...      [-1, 0, 1], [1, 0, 0]]
    >>> sc = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
    ...                    "class": ["a", "b", "c"] * 9, "score": [x for r in w for x in r]})
    >>> tr = pl.DataFrame({"segment": [f"t{i}" for i in range(9)], "class": list("aaabbbccc")})
    >>> cal = MulticlassCalibration().fit(sc, tr)
    >>> round(cal.scale_, 5), [round(b, 5) for b in cal.offset_.values()]
    (0.99595, [0.12014, 0.06543, 0.0])
    """

    method = "multiclass_affine"
    aliases = {"alpha": "scale_", "beta": "offset_"}
    fitted = ("scale_", "offset_")
    schema = {
        "type": "object", "required": ["alpha", "classes", "beta", "training"],
        "properties": {"alpha": mf.FINITE, **_COMMON_SCHEMA},
    }

    def __init__(self, *, prior: Sequence[float] | None = None, max_iter: int = 100) -> None:
        self.prior = check_prior(prior)
        self.max_iter = check_positive_int(max_iter, name="max_iter")
        self.scale_: float = math.nan
        self.classes_ = []
        self.offset_ = {}
        self.reset()

    def fit(self, scores: Data, truth: Data, *, system: str | None = None) -> Self:
        """Train on one system's scores and the truth.

        ``system`` selects one system of a multi-system score table (several systems without
        it are an error naming them).
        """
        sc, name = one_system(read_scores(scores), system=system,
                              what="multiclass calibration")
        g = score_matrices(sc, _truth_of(read_truth(truth), name))[0]
        if self.prior is not None and len(self.prior) != len(g.classes):
            raise ScoreframeError(message("bad `prior`", expected=f"{len(g.classes)} class "
                                          f"priors (classes {g.classes[:6]})",
                                          got=f"{len(self.prior)}"))
        fit = fit_multiclass([g.w], g.y, self.prior, max_iter=self.max_iter)
        self.classes_ = list(g.classes)
        self.scale_ = float(fit.alpha[0])
        self.offset_ = dict(zip(g.classes, map(float, fit.beta), strict=True))
        self.system_, self.where_ = name, None
        self.training_ = _training(fit, int(g.y.size), g.classes)
        return self

    def to_expr(self) -> pl.Expr:
        """The calibrated score as a Polars expression over ``score`` and ``class``."""
        self.check_fitted()
        return pl.col("score") * self.scale_ + _offset_expr(self.offset_)

    def transform(self, scores: Data, *, allow_other_system: bool = False) -> pl.LazyFrame:
        """Calibrate lazily: ``score`` = calibrated log-likelihood, input as ``score_raw``.

        Scores of a system other than the training one are an error unless
        ``allow_other_system=True``.
        """
        self.check_fitted()
        lf = read_scores(scores).lazy()
        check_system(lf, self.system_, allow_other_system=allow_other_system,
                     what="multiclass calibration")
        self._check_classes(lf)
        return lf.with_columns(self.to_expr().alias("__cal")).rename(
            {"score": "score_raw"}).rename({"__cal": "score"})

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``alpha`` = scale, ``beta`` = per-class offsets)."""
        self.check_fitted()
        return {**mf.header(self.method), "alpha": self.scale_, **self._common_doc()}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from a validated :meth:`to_dict` document."""
        obj = cls()
        obj.scale_ = float(doc["alpha"])
        obj._load_common(doc, where)
        return obj


def _wide_systems(scores: MulticlassSystems, systems: Sequence[str] | None = None
                  ) -> tuple[pl.DataFrame, list[str]]:
    """Join several multiclass systems on (segment, class): ``score_raw_<system>`` columns."""
    if isinstance(scores, Mapping):
        frames = {str(k): read_scores(v).drop("system", strict=False) for k, v in scores.items()}
    elif isinstance(scores, str | Path) or is_frame_like(scores):
        df = read_scores(scores)
        if "system" not in df.columns:
            raise ScoreframeError(message("fusion needs several systems",
                                          hint="Give a `system` column, a mapping name -> "
                                               "table, or one table each."))
        frames = {s: df.filter(pl.col("system") == s).drop("system")
                  for s in sorted(df["system"].unique().to_list())}
    else:
        frames = {}
        for i, d in enumerate(cast("Sequence[Data]", scores)):
            name = system_name(d) if isinstance(d, str | Path) else f"system{i + 1}"
            if name in frames:
                raise ScoreframeError(message(f"system `{name}` given twice",
                                              hint="Name the systems: pass a mapping "
                                                   "name -> table."))
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


class MulticlassFusion(_MulticlassEstimator):
    """Linear fusion ``w' = sum_m weights_[m] w_m + offset_[class]`` of multiclass systems.

    Systems are joined on (``segment``, ``class``) and named by the keys of a mapping
    ``name -> table or path``, a ``system`` column, or file names; trained from weights 0,
    offsets 0 (docs/math.md 11.2).

    Attributes
    ----------
    weights_ : dict of str to float
        One weight per system, by name.
    offset_ : dict of str to float
        One offset per class (``beta`` in the model file).
    classes_, training_
        As :class:`MulticlassCalibration`.

    See Also
    --------
    MulticlassCalibration : One system.
    scoreframe.LinearFusion : The binary analogue.

    Examples
    --------
    >>> import polars as pl
    >>> w = [[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
    ...      [-1, 0, 1], [1, 0, 0]]
    >>> x = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
    ...                   "class": ["a", "b", "c"] * 9, "score": [float(v) for r in w for v in r]})
    >>> y = x.with_columns(score=pl.col("score") * 0.5 + (pl.col("class") == "a"))
    >>> tr = pl.DataFrame({"segment": [f"t{i}" for i in range(9)], "class": list("aaabbbccc")})
    >>> fus = MulticlassFusion().fit({"x": x, "y": y}, tr)
    >>> {k: round(v, 4) for k, v in fus.weights_.items()}, fus.classes_
    ({'x': 0.8586, 'y': 0.2747}, ['a', 'b', 'c'])
    >>> fus.transform({"x": x, "y": y}).collect().columns[:3]
    ['segment', 'class', 'score_raw_x']
    """

    method = "multiclass_fusion"
    fitted = ("weights_", "offset_")
    schema = {
        "type": "object", "required": ["weights", "classes", "beta", "training"],
        "properties": {"weights": {"type": "object", "minProperties": 2,
                                   "additionalProperties": mf.FINITE,
                                   "propertyNames": {"minLength": 1}},
                       **_COMMON_SCHEMA},
    }

    def __init__(self, *, prior: Sequence[float] | None = None, max_iter: int = 100) -> None:
        self.prior = check_prior(prior)
        self.max_iter = check_positive_int(max_iter, name="max_iter")
        self.weights_: dict[str, float] = {}
        self.classes_ = []
        self.offset_ = {}
        self.reset()

    @property
    def systems(self) -> list[str]:
        """The fused systems, in order."""
        return list(self.weights_)

    def fit(self, scores: MulticlassSystems, truth: Data) -> Self:
        """Train on several systems' scores (a mapping, a ``system`` column or a list)."""
        wide, names = _wide_systems(scores)
        truth_df = _truth_of(read_truth(truth), None)
        mats = []
        g0 = None
        for s in names:
            g = score_matrices(wide.select("segment", "class",
                                           pl.col(f"score_raw_{s}").alias("score")),
                               truth_df)[0]
            g0 = g0 or g
            mats.append(g.w)
        assert g0 is not None
        if self.prior is not None and len(self.prior) != len(g0.classes):
            raise ScoreframeError(message("bad `prior`", expected=f"{len(g0.classes)} class "
                                          "priors", got=f"{len(self.prior)}"))
        fit = fit_multiclass(mats, g0.y, self.prior, max_iter=self.max_iter)
        self.weights_ = dict(zip(names, map(float, fit.alpha), strict=True))
        self.classes_ = list(g0.classes)
        self.offset_ = dict(zip(g0.classes, map(float, fit.beta), strict=True))
        self.system_, self.where_ = None, None
        self.training_ = _training(fit, int(g0.y.size), g0.classes)
        return self

    def to_expr(self) -> pl.Expr:
        """The fused score over ``score_raw_<system>`` and ``class`` columns."""
        self.check_fitted()
        expr = _offset_expr(self.offset_)
        for s, a in self.weights_.items():
            expr = expr + pl.col(f"score_raw_{s}") * a
        return expr

    def transform(self, scores: MulticlassSystems) -> pl.LazyFrame:
        """Fuse: ``segment, class, score_raw_<system>..., score``."""
        self.check_fitted()
        wide, _ = _wide_systems(scores, systems=self.systems)
        self._check_classes(wide.lazy())
        return wide.lazy().with_columns(self.to_expr().alias("score"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        self.check_fitted()
        return {**mf.header(self.method), "weights": self.weights_, **self._common_doc()}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from a validated :meth:`to_dict` document."""
        obj = cls()
        obj.weights_ = {str(k): float(v) for k, v in doc["weights"].items()}
        obj._load_common(doc, where)
        return obj
