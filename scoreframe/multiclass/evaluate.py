"""Per-condition multiclass evaluation: Cmxe, information, Bayes error/cost, LRE Cavg; Cavg sweep.

Results layer: one tidy row per ``system`` x ``by`` group (group columns first), numbers from
:mod:`scoreframe.kernels.multiclass`. The detection llrs of a group are sorted once; the actual
and minimum Cavg at every target prior come from that one sort
(:func:`scoreframe.kernels.multiclass.cavg_curve`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from scoreframe.checks import check_p_targets, check_probability
from scoreframe.errors import ScoreframeError, message
from scoreframe.frames.lazy import by_columns
from scoreframe.kernels import multiclass as km
from scoreframe.kernels.logreg import fit_affine
from scoreframe.multiclass.tables import (
    Data,
    Group,
    describe,
    read_scores,
    read_truth,
    score_matrices,
)
from scoreframe.stats import EngineLike, as_engine

__all__ = ["cavg_sweep", "evaluate_multiclass"]

Prior = Sequence[float] | Mapping[str, float] | None


def _class_prior(prior: Prior, classes: list[str]) -> NDArray[np.float64]:
    """The class prior as a vector in ``classes`` order (flat when None)."""
    k = len(classes)
    if prior is None:
        return np.full(k, 1.0 / k)
    if isinstance(prior, Mapping):
        missing = [c for c in classes if c not in prior]
        extra = [c for c in prior if c not in classes]
        if missing or extra:
            raise ScoreframeError(message("bad class `prior`", expected=f"one value for each "
                                          f"of {classes}", got=f"missing {missing}, unknown "
                                          f"{extra}"))
        values = [prior[c] for c in classes]
    else:
        values = list(prior)
    p = np.array([check_probability(v, name="prior", closed=True) for v in values])
    if p.shape != (k,) or not math.isclose(p.sum(), 1.0, rel_tol=1e-9):
        raise ScoreframeError(message("bad class `prior`", expected=f"{k} numbers in [0, 1] "
                                      "summing to 1", got=f"{p.tolist()}"))
    return p


def _cost_matrix(cost: ArrayLike | None, k: int) -> NDArray[np.float64] | None:
    if cost is None:
        return None
    c = np.asarray(cost, dtype=np.float64)
    if c.shape != (k, k) or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ScoreframeError(message("bad `cost` matrix", expected=f"a {k} x {k} matrix of "
                                      "finite non-negative costs", got=f"shape {c.shape}"))
    return c


def _groups(scores: Data, truth: Data, by: Sequence[str] | str | None) -> list[Group]:
    by_cols = by_columns(by)
    return score_matrices(read_scores(scores), read_truth(truth), by=by_cols,
                          where=describe(scores, "scores"), truth_where=describe(truth, "truth"))


def _where(g: Group) -> str:
    return "group " + (", ".join(f"{k}={v}" for k, v in g.key.items()) or "all")


def evaluate_multiclass(scores: Data, truth: Data, *, by: Sequence[str] | str | None = None,
                        prior: Prior = None, p_target: Sequence[float] | float = (0.5,),
                        cost: ArrayLike | None = None, engine: EngineLike = "auto"
                        ) -> pl.DataFrame:
    """Evaluate multiclass log-likelihood scores per condition.

    Parameters
    ----------
    scores, truth
        Long or wide score table and truth table: paths or frames (see
        :func:`scoreframe.multiclass.read_scores`); both are checked like the readers.
    by
        Condition columns (from either table); ``system`` is always a grouping key.
    prior
        Class prior of Cmxe and of the Bayes decisions (flat by default): K numbers in
        ``[0, 1]`` summing to 1, in sorted class order, or a mapping class -> prior.
    p_target
        Target priors of the LRE Cavg, each in ``(0, 1)``; the first is the primary (``cavg``
        columns), all are in ``cavg_by_p`` and averaged into ``c_primary`` (normalized, as
        LRE'17).
    cost
        Optional K x K cost matrix (``cost[i, j]``: true class i decided as j) for
        ``expected_cost``; the 0-1 cost gives ``error_rate``.
    engine
        As in :func:`scoreframe.evaluate` (checked the same way). Multiclass statistics do
        not merge across score ranges yet: each group's score matrix is held in this process
        whatever the engine.

    Returns
    -------
    polars.DataFrame
        Group columns, ``n_segments``, ``n_classes``, ``cmxe`` (bits), ``cmxe_ref``
        (H2(prior) = log2 K at the flat prior), ``cmxe_norm``, ``info_bits`` (ref - cmxe),
        ``error_rate`` (prior-weighted error of Bayes decisions), ``expected_cost``, ``cavg``,
        ``cavg_norm``, ``min_cavg``, ``min_cavg_norm`` (evaluator-optimized threshold),
        ``c_primary`` and ``cavg_by_p`` (list of structs). Actual and minimum Cavg are the
        exact values of their integer error counts, correctly rounded.

    See Also
    --------
    cavg_sweep : Cavg over a range of priors.
    read_scores, read_truth : Read its inputs.
    scoreframe.evaluate : The binary evaluation.

    Examples
    --------
    >>> import polars as pl
    >>> w = [[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
    ...      [-1, 0, 1], [1, 0, 0]]
    >>> sc = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
    ...                    "class": ["a", "b", "c"] * 9, "score": [x for r in w for x in r]})
    >>> tr = pl.DataFrame({"segment": [f"t{i}" for i in range(9)], "class": list("aaabbbccc")})
    >>> res = evaluate_multiclass(sc, tr)
    >>> round(res["cmxe"][0], 6), round(res["cavg"][0], 6)
    (1.236188, 0.333333)
    """
    as_engine(engine)
    ps = check_p_targets(p_target)
    norm = np.minimum(ps, 1.0 - ps)
    rows = []
    for g in _groups(scores, truth, by):
        p = _class_prior(prior, g.classes)
        c_mat = _cost_matrix(cost, len(g.classes))
        try:
            c = km.cmxe(g.w, g.y, p)
            d = km.bayes_decisions(g.w, p)
            err = km.expected_cost(g.y, d, p)
            ec = err if c_mat is None else km.expected_cost(
                g.y, km.bayes_decisions(g.w, p, c_mat), p, c_mat)
            curve = km.cavg_curve(km.detection_llrs(g.w), g.y, ps)
        except ValueError as exc:
            raise ScoreframeError(message("cannot evaluate", where=_where(g),
                                          got=str(exc))) from None
        act_n, min_n = curve.actual / norm, curve.minimum / norm
        by_p = [{"p_target": float(pt), "cavg": float(a), "cavg_norm": float(an),
                 "min_cavg": float(m), "min_cavg_norm": float(mn)}
                for pt, a, an, m, mn in zip(ps, curve.actual, act_n, curve.minimum, min_n,
                                            strict=True)]
        ref = km.prior_entropy(p)
        rows.append({**g.key, "n_segments": int(g.y.size), "n_classes": len(g.classes),
                     "cmxe": c, "cmxe_ref": ref, "cmxe_norm": c / ref, "info_bits": ref - c,
                     "error_rate": err, "expected_cost": ec,
                     "cavg": by_p[0]["cavg"], "cavg_norm": by_p[0]["cavg_norm"],
                     "min_cavg": by_p[0]["min_cavg"],
                     "min_cavg_norm": by_p[0]["min_cavg_norm"],
                     "c_primary": float(np.mean(act_n)), "cavg_by_p": by_p})
    return pl.DataFrame(rows)


def cavg_sweep(scores: Data, truth: Data, *, by: Sequence[str] | str | None = None,
               prior_log_odds: ArrayLike | None = None) -> pl.DataFrame:
    """Normalized Cavg as a function of the target prior ([Br10t] eq 8.28).

    Per group and ``logit(p_target)`` (default: 81 points from -5 to 5): ``actual`` (the
    system's detection llrs thresholded at the Bayes threshold ``-logit(p_target)``),
    ``calibrated`` (after the Cmxe-optimal affine recalibration trained on these same data: an
    oracle reference) and ``minimum`` (evaluator-optimized threshold). The detection llrs are
    sorted once per group (and the recalibrated ones once) for all priors.

    Parameters
    ----------
    scores
        Multiclass scores (see :func:`read_scores`).
    truth
        The true class per segment (see :func:`read_truth`).
    by
        Condition columns.
    prior_log_odds
        The grid of ``logit(p_target)``.

    Returns
    -------
    polars.DataFrame
        Per group and prior: ``prior_log_odds``, ``p_target``, ``actual``, ``calibrated``,
        ``minimum``.

    See Also
    --------
    evaluate_multiclass : Cavg at given priors.
    scoreframe.views.plots.cavg_sweep_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> sc = pl.DataFrame({"segment": ["s1", "s1", "s2", "s2"], "class": ["a", "b"] * 2,
    ...                    "score": [1.0, 0.0, 0.0, 2.0]})
    >>> tr = pl.DataFrame({"segment": ["s1", "s2"], "class": ["a", "b"]})
    >>> cavg_sweep(sc, tr, prior_log_odds=[0.0])["minimum"].to_list()
    [0.0]
    """
    grid = np.linspace(-5.0, 5.0, 81) if prior_log_odds is None else np.atleast_1d(
        np.asarray(prior_log_odds, dtype=np.float64))
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
        raise ScoreframeError(message("bad `prior_log_odds`", expected="finite numbers",
                                      got=repr(prior_log_odds)))
    p = check_p_targets(expit(grid), name="p_target (from prior_log_odds)")
    norm = np.minimum(p, 1.0 - p)
    parts = []
    for g in _groups(scores, truth, by):
        try:
            fit = fit_affine([g.w], g.y, None, max_iter=100)
            curve = km.cavg_curve(km.detection_llrs(g.w), g.y, p)
            cal = km.cavg_curve(km.detection_llrs(fit.alpha[0] * g.w + fit.beta), g.y, p,
                                minimum=False)
        except ValueError as exc:
            raise ScoreframeError(message("cannot evaluate", where=_where(g),
                                          got=str(exc))) from None
        n = grid.size
        parts.append(pl.DataFrame({**{k: [v] * n for k, v in g.key.items()},
                                   "prior_log_odds": grid, "p_target": p,
                                   "actual": curve.actual / norm,
                                   "calibrated": cal.actual / norm,
                                   "minimum": curve.minimum / norm}))
    return pl.concat(parts, how="vertical_relaxed")
