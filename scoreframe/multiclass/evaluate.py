"""Per-condition multiclass evaluation: Cmxe, information, Bayes error/cost, LRE Cavg; Cavg sweep.

Results layer: one tidy row per ``system`` x ``by`` group (group columns first), numbers from
:mod:`scoreframe.kernels.multiclass`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from scoreframe.errors import ScoreframeError, message
from scoreframe.kernels import multiclass as km
from scoreframe.multiclass.data import Data, read_scores, read_truth, score_matrices

__all__ = ["cavg_sweep", "evaluate_multiclass"]


def _prior(prior: Sequence[float] | dict[str, float] | None, classes: list[str]) -> np.ndarray:
    if prior is None:
        return np.full(len(classes), 1.0 / len(classes))
    if isinstance(prior, dict):
        missing = [c for c in classes if c not in prior]
        if missing:
            raise ScoreframeError(message("prior lacks classes", got=f"{missing}"))
        p = np.array([float(prior[c]) for c in classes])
    else:
        p = np.asarray(prior, dtype=np.float64)
    if p.shape != (len(classes),) or np.any(p < 0) or not math.isclose(p.sum(), 1.0):
        raise ScoreframeError(message("bad class prior", expected=f"{len(classes)} "
                                      "non-negative numbers summing to 1", got=f"{p.tolist()}"))
    return p


def _p_list(p_target: Sequence[float] | float) -> list[float]:
    ps = [float(p_target)] if isinstance(p_target, int | float) else [float(p) for p in p_target]
    if not ps or any(not 0.0 < p < 1.0 for p in ps):
        raise ScoreframeError(message("bad `p_target`", expected="priors in (0, 1)",
                                      got=f"{ps}"))
    return ps


def evaluate_multiclass(scores: Data, truth: Data, *, by: Sequence[str] | str | None = None,
                        prior: Sequence[float] | dict[str, float] | None = None,
                        p_target: Sequence[float] | float = (0.5,),
                        cost: np.ndarray | None = None) -> pl.DataFrame:
    """Evaluate multiclass log-likelihood scores per condition.

    Parameters
    ----------
    scores, truth
        Long score table (or path, see :func:`scoreframe.multiclass.read_scores`) and truth.
    by
        Condition columns (from either table); ``system`` is always a grouping key.
    prior
        Class prior of Cmxe and of the Bayes decisions (flat by default).
    p_target
        Target priors of the LRE Cavg; the first is the primary (``cavg`` columns), all are in
        ``cavg_by_p`` and averaged into ``c_primary`` (normalized, as LRE'17).
    cost
        Optional K x K cost matrix (``cost[i, j]``: true class i decided as j) for
        ``expected_cost``; the 0-1 cost gives ``error_rate``.

    Returns
    -------
    polars.DataFrame
        Group columns, ``n_segments``, ``n_classes``, ``cmxe`` (bits), ``cmxe_ref``
        (H2(prior) = log2 K at the flat prior), ``cmxe_norm``, ``info_bits`` (ref - cmxe),
        ``error_rate`` (prior-weighted error of Bayes decisions), ``expected_cost``, ``cavg``,
        ``cavg_norm``, ``min_cavg``, ``min_cavg_norm`` (evaluator-optimized threshold),
        ``c_primary`` and ``cavg_by_p`` (list of structs).

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
    by_cols = [by] if isinstance(by, str) else list(by or [])
    ps = _p_list(p_target)
    groups = score_matrices(read_scores(scores), read_truth(truth), by=by_cols)
    rows = []
    for g in groups:
        p = _prior(prior, g.classes)
        try:
            c = km.cmxe(g.w, g.y, p)
            s = km.detection_llrs(g.w)
            d = km.bayes_decisions(g.w, p)
            err = km.expected_cost(g.y, d, p)
            ec = err if cost is None else km.expected_cost(
                g.y, km.bayes_decisions(g.w, p, cost), p, cost)
            by_p = []
            for pt in ps:
                act = km.cavg(s, g.y, pt)
                mn, _ = km.min_cavg(s, g.y, pt)
                norm = min(pt, 1.0 - pt)
                by_p.append({"p_target": pt, "cavg": act, "cavg_norm": act / norm,
                             "min_cavg": mn, "min_cavg_norm": mn / norm})
        except ValueError as exc:
            raise ScoreframeError(message("cannot evaluate group", where=str(g.key or "all"),
                                          got=str(exc))) from None
        ref = km.prior_entropy(p)
        first = by_p[0]
        rows.append({**g.key, "n_segments": int(g.y.size), "n_classes": len(g.classes),
                     "cmxe": c, "cmxe_ref": ref, "cmxe_norm": c / ref, "info_bits": ref - c,
                     "error_rate": err, "expected_cost": ec,
                     "cavg": first["cavg"], "cavg_norm": first["cavg_norm"],
                     "min_cavg": first["min_cavg"], "min_cavg_norm": first["min_cavg_norm"],
                     "c_primary": float(np.mean([b["cavg_norm"] for b in by_p])),
                     "cavg_by_p": by_p})
    return pl.DataFrame(rows)


def cavg_sweep(scores: Data, truth: Data, *, by: Sequence[str] | str | None = None,
               prior_log_odds: Sequence[float] | np.ndarray | None = None) -> pl.DataFrame:
    """Normalized Cavg as a function of the target prior (seed 004 eq 8.28).

    Per group and ``logit(p_target)``: ``actual`` (the system's detection llrs thresholded at
    the Bayes threshold), ``calibrated`` (after the Cmxe-optimal affine recalibration trained
    on these same data: an oracle reference) and ``minimum`` (evaluator-optimized threshold).
    """
    from scoreframe.multiclass.calibration import _fit_groups

    by_cols = [by] if isinstance(by, str) else list(by or [])
    grid = np.linspace(-5.0, 5.0, 81) if prior_log_odds is None else np.asarray(prior_log_odds)
    groups = score_matrices(read_scores(scores), read_truth(truth), by=by_cols)
    parts = []
    for g in groups:
        fit = _fit_groups([g.w], g.y, None, 100)
        w_cal = fit.alpha[0] * g.w + fit.beta
        s, s_cal = km.detection_llrs(g.w), km.detection_llrs(w_cal)
        p = 1.0 / (1.0 + np.exp(-grid))
        norm = np.minimum(p, 1.0 - p)
        act = np.array([km.cavg(s, g.y, pt) for pt in p]) / norm
        cal = np.array([km.cavg(s_cal, g.y, pt) for pt in p]) / norm
        mn = np.array([km.min_cavg(s, g.y, pt)[0] for pt in p]) / norm
        n = grid.size
        parts.append(pl.DataFrame({**{k: [v] * n for k, v in g.key.items()},
                                   "prior_log_odds": grid, "p_target": p, "actual": act,
                                   "calibrated": cal, "minimum": mn}))
    return pl.concat(parts, how="vertical_relaxed")
