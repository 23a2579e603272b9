"""Calibration of one system's scores into llrs: affine (logistic regression, Beta rules) and PAV.

Frames layer on top of the kernels: reads supervised trials (``score``, ``label``) through
:func:`scoreframe.frames.lazy.as_lazy` (a path, a Polars, pandas or pyarrow table), fits with
:mod:`scoreframe.kernels.logreg` or :mod:`scoreframe.kernels.pav_map`, and applies the fitted
map lazily as a Polars expression (``to_expr``), so datasets of any size are calibrated in
streaming chunks. A calibration belongs to one system: it records the system (and the
``where`` slice) it was trained on, and applying it to trials of another system is an error
unless ``allow_other_system=True``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from scoreframe.checks import check_choice, check_p_target, check_positive, check_positive_int
from scoreframe.errors import (
    DegenerateError,
    FormatError,
    SchemaError,
    ScoreframeError,
    message,
)
from scoreframe.estimators import modelfile as mf
from scoreframe.estimators.base import Estimator
from scoreframe.frames.lazy import Data, as_lazy, scan_raw
from scoreframe.kernels.logreg import LinearFit, fit_linear
from scoreframe.kernels.pav_map import apply_pav_map, pav_map
from scoreframe.kernels.psr import BetaRule, psr_beta
from scoreframe.stats.engine import compute_statistics, source_name
from scoreframe.stats.reduce import check_trials, label_columns
from scoreframe.stats.summary import Request, ScoreStats

__all__ = ["LinearCalibration", "PavCalibration", "calibration_map", "check_system",
           "fit_report", "objective_rule", "one_system", "rule_doc", "rule_from_doc",
           "training_frame", "with_llr"]

F64 = NDArray[np.float64]


def objective_rule(objective: str | tuple[float, float] | BetaRule) -> BetaRule:
    """The training objective from a name, an ``(alpha, beta)`` pair or a :class:`BetaRule`.

    Names: ``log``, ``brier``, ``boost``, ``asym``; pairs are in Brümmer's convention.

    >>> objective_rule("brier").name
    'brier'
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
    except (ValueError, TypeError) as exc:
        raise ScoreframeError(message("bad training objective", got=repr(objective)[:60],
                                      expected="log | brier | boost | asym | 'alpha,beta'",
                                      hint=str(exc))) from None


def rule_doc(rule: BetaRule) -> dict[str, Any]:
    """The ``objective`` object of a model document."""
    return {"rule": rule.name, "alpha": rule.alpha, "beta": rule.beta}


def rule_from_doc(doc: dict[str, Any] | None) -> BetaRule:
    """Inverse of :func:`rule_doc` on a validated document (absent: the log rule)."""
    if doc is None:
        return psr_beta("log")
    return psr_beta(float(doc["alpha"]), float(doc["beta"]))


def training_frame(data: Data, columns: Sequence[str], *, where: str | None = None,
                   what: str = "training") -> pl.DataFrame:
    """Collect ``columns`` + ``label`` (+ ``system`` if present) of labelled trials."""
    lf = scan_raw(data, where=where)  # labels as stored: bad spellings are errors below
    names = lf.collect_schema().names()
    missing = [c for c in [*columns, "label"] if c not in names]
    if missing:
        raise SchemaError(message(f"{what} data lack column(s) {missing}",
                                  expected=f"{[*columns, 'label']}", got=f"{names}"))
    if "score" in columns:  # the checks of evaluate: labels, NaN/null scores, empty data
        # (no duplicate check: trials may be identified by more than model and segment)
        lf = check_trials(lf, where=source_name(data), validate=False)
    else:
        label_expr, bad_label = label_columns(lf.collect_schema())
        n_bad = int(lf.select(bad_label.sum()).collect().item() or 0)
        if n_bad:
            raise SchemaError(message(
                "column `label` has values outside the accepted spellings",
                where=source_name(data), expected="bool, 1/0, target/nontarget or true/false",
                got=f"{n_bad} trial(s) with other values"))
        lf = lf.with_columns(label_expr)
    extra = [pl.col("system").cast(pl.String)] if "system" in names else []
    df = lf.select(*[pl.col(c).cast(pl.Float64) for c in columns], pl.col("label"),
                   *extra).collect()
    if df.height == 0:
        raise DegenerateError(message(f"no {what} trials", hint="Check --where."))
    n_null = df["label"].null_count()
    if n_null:
        raise SchemaError(message(f"{what} needs labelled trials",
                                  got=f"{n_null} trials with a null `label`"))
    for c in columns:
        bad = int(df[c].is_null().sum()) + int(df[c].is_nan().sum())
        if bad:
            raise SchemaError(message(f"{what} scores must be numbers", where=f"column `{c}`",
                                      got=f"{bad} null or NaN values"))
    return df


def _systems_of(values: pl.Series) -> list[str]:
    return sorted(str(s) for s in values.drop_nulls().unique().to_list())


def one_system(df: pl.DataFrame, *, system: str | None = None,
               what: str = "calibration") -> tuple[pl.DataFrame, str | None]:
    """The trials of one system: ``system`` selects it; several systems without it is an error.

    Returns the trials and the system's name (None when the data have no ``system`` column).
    """
    if "system" not in df.columns:
        if system is not None:
            raise SchemaError(message(f"cannot select system {system!r}",
                                      got="data without a `system` column"))
        return df, None
    if system is not None:
        available = _systems_of(df["system"])
        df = df.filter(pl.col("system") == system)
        if df.height == 0:
            raise DegenerateError(message(f"no trials of system {system!r}",
                                          expected=f"one of {available[:10]}"))
    systems = _systems_of(df["system"])
    if len(systems) > 1:
        shown = ", ".join(repr(s) for s in systems[:8]) + (" ..." if len(systems) > 8 else "")
        raise ScoreframeError(message(
            f"{what} trains one system at a time", got=f"{len(systems)} systems: {shown}",
            hint=f"Select one with system={systems[0]!r} (or where=\"system = '{systems[0]}'\"; "
                 f"CLI: --where), or fuse them."))
    return df.drop("system"), (systems[0] if systems else None)


def check_system(lf: pl.LazyFrame, model_system: str | None, *, allow_other_system: bool,
                 what: str = "calibration") -> None:
    """Refuse trials of systems other than ``model_system`` (the one the model was trained on).

    Data without a ``system`` column cannot be checked and pass.
    """
    if model_system is None or allow_other_system:
        return
    if "system" not in lf.collect_schema().names():
        return
    systems = _systems_of(lf.select(pl.col("system").cast(pl.String).unique()).collect()
                          ["system"])
    other = [s for s in systems if s != model_system]
    if other:
        raise ScoreframeError(message(
            f"this {what} was trained on system {model_system!r}",
            got=f"trials of system(s) {other[:8]}",
            hint=f"Select system {model_system!r} (where=\"system = '{model_system}'\", CLI "
                 f"--where), or "
                 f"pass allow_other_system=True (CLI: --allow-other-system) to apply it anyway."))


def training_statistics(data: Data, *, where: str | None = None, system: str | None = None
                        ) -> tuple[ScoreStats, str | None]:
    """The statistics-layer summary (PAV blocks, counts) of one system's training trials.

    The same reduction as ``evaluate`` (in memory or out of core, with its data checks), so a
    PAV calibration trains on datasets of any size. Several systems without ``system=`` is an
    error naming them. Returns the statistics and the system's name (None without a column).
    """
    names = as_lazy(data).collect_schema().names()
    if system is not None and "system" not in names:
        raise SchemaError(message(f"cannot select system {system!r}",
                                  got="data without a `system` column"))
    w = where
    if system is not None:
        cond = "system = '" + str(system).replace("'", "''") + "'"
        w = cond if not where else f"({where}) AND {cond}"
    stats = compute_statistics(data, where=w, pooled=False, request=Request(),
                               p=np.array([0.5]), q=np.array([0.5]), validate=False)
    systems = [str(u.unit.key.get("system")) for u in stats.units]
    if len(stats.units) > 1:
        shown = ", ".join(repr(x) for x in systems[:8]) + (" ..." if len(systems) > 8 else "")
        raise ScoreframeError(message(
            "calibration trains one system at a time", got=f"{len(systems)} systems: {shown}",
            hint=f"Select one with system={systems[0]!r} (or where=\"system = '{systems[0]}'\"; "
                 f"CLI: --where), or fuse them."))
    st = stats.units[0].stats
    if st.n_tar == 0 or st.n_non == 0:
        raise DegenerateError(message("training needs targets and non-targets",
                                      got=f"{st.n_tar} targets, {st.n_non} non-targets"))
    return st, (systems[0] if "system" in names else None)


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
    return {"p_target": p_target, "objective": rule_doc(rule), "n_tar": n_tar, "n_non": n_non,
            "objective_value": fit.objective, "initial_objective": fit.initial_objective,
            "converged": fit.converged, "n_iter": fit.n_iter, "n_newton": fit.n_newton,
            "message": fit.message, "gradient_norm": fit.gradient_norm}


def with_llr(lf: pl.LazyFrame, expr: pl.Expr, *, score: str = "score") -> pl.LazyFrame:
    """Replace ``score`` by the llr expression and keep the input as ``score_raw``."""
    names = lf.collect_schema().names()
    if score not in names:
        raise SchemaError(message(f"data lack the score column `{score}`", got=f"{names}"))
    if "score_raw" in names and score != "score_raw":
        lf = lf.drop("score_raw")
    return lf.with_columns(expr.alias("__llr")).rename({score: "score_raw"}).rename(
        {"__llr": "score"})


class _Calibrator(Estimator):
    """What the binary calibrators share: one-system training, lazy application."""

    def _training_data(self, data: Data, *, where: str | None, system: str | None
                       ) -> tuple[F64, F64]:
        df, sys_name = one_system(training_frame(data, ["score"], where=where), system=system)
        tar, non = _tar_non(df, "score")
        self.system_, self.where_ = sys_name, where
        return tar, non

    def transform(self, data: Data, *, where: str | None = None,
                  allow_other_system: bool = False) -> pl.LazyFrame:
        """Calibrate lazily: ``score`` becomes the llr, the input score is kept as ``score_raw``.

        Nothing is computed until the result is collected or sunk (streaming-friendly), except
        a scan of the ``system`` column: trials of a system other than the training one are an
        error unless ``allow_other_system=True``.
        """
        self.check_fitted()
        lf = as_lazy(data, where=where)
        check_system(lf, self.system_, allow_other_system=allow_other_system)
        return with_llr(lf, self.to_expr("score"))

    def to_expr(self, score: str | pl.Expr = "score") -> pl.Expr:  # pragma: no cover
        """The calibration as a Polars expression."""
        raise NotImplementedError


class LinearCalibration(_Calibrator):
    """Affine calibration ``llr = scale_ * score + offset_`` by prior-weighted logistic regression.

    The objective is BOSARIS' normalized, prior-weighted cross-entropy (docs/math.md 10.2), or any
    proper scoring rule of the Beta family (``objective="brier"``, ``"boost"``, ``"asym"``,
    ``(alpha, beta)``; [BD13]), minimized from ``(0, 0)`` by trust-region Newton-CG finished
    with exact Newton steps (:func:`scoreframe.kernels.logreg.minimize_newton`).

    Parameters
    ----------
    p_target : float
        Training prior (BOSARIS' ``prior``); it enters the objective only, not the llrs.
    objective : str or (float, float) or BetaRule
        Scoring rule of the training objective.
    max_iter : int
        Cap on optimizer iterations (separable data have their optimum at infinity).

    Attributes
    ----------
    scale_, offset_ : float
        The fitted map.
    system_ : str or None
        The system trained on (None: the data had no ``system`` column).
    where_ : str or None
        The ``where`` slice trained on.
    training_ : dict
        Counts, objective values, convergence report.

    See Also
    --------
    scoreframe.PavCalibration : Non-parametric (PAV) calibration.
    scoreframe.LinearFusion : The same objective over several systems.
    scoreframe.load_model : Read a saved model back.

    Examples
    --------
    >>> import polars as pl
    >>> dev = pl.DataFrame({"score": [-3.0, 1, 2, 5, 7, -7, -5, -2, -1, 3, 4],
    ...                     "label": [True] * 5 + [False] * 6})
    >>> cal = LinearCalibration(p_target=0.5).fit(dev)
    >>> round(cal.scale_, 6), round(cal.offset_, 6), round(cal.training_["objective_value"], 6)
    (0.254935, -0.152622, 0.842058)
    >>> cal.transform(dev).collect()["score"][0] == cal.scale_ * -3.0 + cal.offset_
    True
    >>> cal  # doctest: +ELLIPSIS
    LinearCalibration(p_target=0.5, objective='log', max_iter=100)  # fitted: scale_=0.254935, ...
    """

    method = "linear"
    fitted = ("scale_", "offset_")
    schema = {
        "type": "object",
        "required": ["scale", "offset", "p_target", "training"],
        "properties": {"scale": mf.FINITE, "offset": mf.FINITE, "p_target": mf.PRIOR,
                       "objective": mf.OBJECTIVE, "training": {"type": "object"}},
    }

    def __init__(self, *, p_target: float = 0.5,
                 objective: str | tuple[float, float] | BetaRule = "log",
                 max_iter: int = 100) -> None:
        self.p_target = check_p_target(p_target)
        self.objective = objective_rule(objective)
        self.max_iter = check_positive_int(max_iter, name="max_iter")
        self.scale_: float = math.nan
        self.offset_: float = math.nan
        self.reset()

    def get_params(self) -> dict[str, Any]:
        """The parameters (the objective by its name)."""
        return {"p_target": self.p_target, "objective": self.objective.name,
                "max_iter": self.max_iter}

    @property
    def rule(self) -> BetaRule:
        """The training objective (alias of ``objective``)."""
        return self.objective

    def fit(self, data: Data, *, where: str | None = None, system: str | None = None) -> Self:
        """Train on labelled trials (``score``, ``label``) of one system.

        ``system`` selects one system of a multi-system table (several systems without it are
        an error naming them).
        """
        tar, non = self._training_data(data, where=where, system=system)
        fit = fit_linear(np.column_stack([tar, np.ones_like(tar)]),
                         np.column_stack([non, np.ones_like(non)]), p_target=self.p_target,
                         rule=self.objective, w0=np.zeros(2), max_iter=self.max_iter)
        self.scale_, self.offset_ = float(fit.params[0]), float(fit.params[1])
        self.training_ = fit_report(fit, p_target=self.p_target, rule=self.objective,
                                    n_tar=tar.size, n_non=non.size)
        return self

    def __call__(self, scores: ArrayLike) -> F64:
        """Calibrate an array of scores."""
        self.check_fitted()
        return self.scale_ * np.asarray(scores, dtype=np.float64) + self.offset_

    def to_expr(self, score: str | pl.Expr = "score") -> pl.Expr:
        """The calibration as a Polars expression (lazy, streaming)."""
        self.check_fitted()
        col = pl.col(score) if isinstance(score, str) else score
        return col.cast(pl.Float64) * self.scale_ + self.offset_

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: method, scale, offset, p_target, objective, system, training."""
        self.check_fitted()
        return {**mf.header(self.method), "scale": self.scale_, "offset": self.offset_,
                "p_target": self.p_target, "objective": rule_doc(self.objective),
                **self.provenance(), "training": self.training_}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from a validated :meth:`to_dict` document."""
        obj = cls(p_target=doc["p_target"], objective=rule_from_doc(doc.get("objective")))
        obj.scale_, obj.offset_ = float(doc["scale"]), float(doc["offset"])
        obj.load_provenance(doc)
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

    Attributes
    ----------
    knots_score_, knots_llr_ : ndarray
        The piecewise-linear map (two knots per PAV block).
    system_, where_, training_
        As :class:`LinearCalibration`.

    See Also
    --------
    scoreframe.LinearCalibration : Affine calibration (two parameters).
    scoreframe.pav_llrs : The PAV llrs of one set of scores.
    scoreframe.load_model : Read a saved model back.

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
    fitted = ("knots_score_", "knots_llr_")
    schema = {
        "type": "object",
        "required": ["variant", "eps", "knots_score", "knots_llr", "training"],
        "properties": {
            "variant": {"enum": ["bosaris", "raw"]},
            "eps": {**mf.FINITE, "minimum": 0},
            "knots_score": {"type": "array", "items": mf.FINITE, "minItems": 2},
            "knots_llr": {"type": "array", "items": mf.EXTENDED, "minItems": 2},
            "training": {"type": "object"}},
    }

    def __init__(self, *, variant: str = "bosaris", eps: float = 0.0) -> None:
        self.variant = check_choice(variant, name="variant", choices=("bosaris", "raw"))
        self.eps = check_positive(eps, name="eps", allow_zero=True)
        self.knots_score_: F64 = np.empty(0)
        self.knots_llr_: F64 = np.empty(0)
        self.reset()

    def fit(self, data: Data, *, where: str | None = None, system: str | None = None) -> Self:
        """Train on labelled trials (``score``, ``label``) of one system."""
        stats, self.system_ = training_statistics(data, where=where, system=system)
        self.where_ = where
        try:
            self.knots_score_, self.knots_llr_ = pav_map(stats.blocks, eps=self.eps,
                                                         variant=self.variant)
        except ValueError as exc:
            raise ScoreframeError(str(exc)) from None
        self.training_ = {"n_tar": stats.n_tar, "n_non": stats.n_non,
                          "n_blocks": int(self.knots_score_.size // 2)}
        return self

    def __call__(self, scores: ArrayLike) -> F64:
        """Calibrate an array of scores."""
        self.check_fitted()
        return apply_pav_map(scores, self.knots_score_, self.knots_llr_)

    def to_expr(self, score: str | pl.Expr = "score") -> pl.Expr:
        """The map as a Polars expression (element-wise, so it streams chunk by chunk)."""
        self.check_fitted()
        col = pl.col(score) if isinstance(score, str) else score
        x, y = self.knots_score_, self.knots_llr_
        return col.cast(pl.Float64).map_batches(
            lambda s: pl.Series(s.name, apply_pav_map(s.to_numpy(), x, y)),
            return_dtype=pl.Float64, is_elementwise=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: method, variant, eps, knots, system, training."""
        self.check_fitted()
        return {**mf.header(self.method), "variant": self.variant, "eps": self.eps,
                "knots_score": [float(v) for v in self.knots_score_],
                "knots_llr": [mf.encode_float(v) for v in self.knots_llr_],
                **self.provenance(), "training": self.training_}

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Rebuild from a validated :meth:`to_dict` document, checking the knots."""
        obj = cls(variant=doc["variant"], eps=doc["eps"])
        x = np.asarray([float(v) for v in doc["knots_score"]])
        y = np.asarray(mf.decode_floats(doc["knots_llr"], where=mf.within(where, "`knots_llr`")))
        if x.size % 2:
            raise FormatError(message("bad `knots_score`", where=where,
                                      expected="an even number of knots (two per block)",
                                      got=f"{x.size}"))
        if x.size != y.size:
            raise FormatError(message("`knots_score` and `knots_llr` differ in length",
                                      where=where, got=f"{x.size} and {y.size} knots"))
        for name, v in (("knots_score", x), ("knots_llr", y)):
            if np.any(v[1:] < v[:-1]):
                raise FormatError(message(f"bad `{name}`", where=where,
                                          expected="non-decreasing values"))
        obj.knots_score_, obj.knots_llr_ = x, y
        obj.load_provenance(doc)
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
    n = check_positive_int(n, name="n", minimum=2)
    grid = np.linspace(lo, hi, n)
    parts = []
    for name, model in models.items():
        x = grid
        if isinstance(model, PavCalibration):
            k = model.knots_score_
            x = np.unique(np.concatenate([grid, k[(k >= lo) & (k <= hi)]]))
        parts.append(pl.DataFrame({"map": [name] * x.size, "score": x, "llr": model(x)}))
    return pl.concat(parts)
