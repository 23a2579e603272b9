"""Tidy curve frames per condition: DET, normalized Bayes error rate (NBER), APE.

Results layer: groups come from :func:`scoreframe.evaluate.grouped_scores`, the numbers from
:mod:`scoreframe.kernels.curves`; plots (Altair) only draw these frames. Probit coordinates and
rule-of-30 markers are computed here, not in the chart specification.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from scoreframe.evaluate import _as_lazy, grouped_scores
from scoreframe.kernels import curves as kc
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.elementary import probit

__all__ = ["ape_curve", "det_curve", "nber_curve"]

Data = pl.DataFrame | pl.LazyFrame | str | Path


def _groups(data: Data, by: Sequence[str] | str | None, where: str | None):  # noqa: ANN202
    by_cols = [by] if isinstance(by, str) else list(by or [])
    lf = _as_lazy(data, where)
    if "system" in lf.collect_schema().names() and "system" not in by_cols:
        by_cols = ["system", *by_cols]
    keys, groups, _ = grouped_scores(lf, by_cols)
    out = []
    for i, s in enumerate(groups):
        if s.n_tar and s.n_non:
            out.append(({c: keys[c][i] for c in by_cols}, s))
    return by_cols, out


def _frame(parts: list[pl.DataFrame], by: list[str]) -> pl.DataFrame:
    df = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()
    return df.select(by + [c for c in df.columns if c not in by])


def _grid_curve(data: Data, by: Sequence[str] | str | None, where: str | None,
                prior_log_odds: Sequence[float] | np.ndarray | None,
                default: tuple[float, float, int],
                columns: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
                ) -> pl.DataFrame:
    """Per group: Bayes error rates over a prior-log-odds grid, turned into columns."""
    grid = (np.linspace(*default) if prior_log_odds is None
            else np.asarray(prior_log_odds, dtype=np.float64))
    by_cols, groups = _groups(data, by, where)
    parts = [pl.DataFrame({**{k: [v] * grid.shape[0] for k, v in key.items()},
                           "prior_log_odds": grid,
                           **columns(kc.bayes_error_curve(s, grid))})
             for key, s in groups]
    return _frame(parts, by_cols)


def det_curve(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
              box: tuple[float, float, float, float] = (0.0005, 0.5, 0.0005, 0.5),
              points_per_segment: int = 100, resolution: float | None = 0.005) -> pl.DataFrame:
    """DET points per group: the steppy ROC and the sampled ROCCH, in probit coordinates.

    Parameters
    ----------
    box
        ``(pfa_min, pfa_max, pmiss_min, pmiss_max)`` of the plot; the ROCCH is clipped to it.
    points_per_segment
        Samples per visible hull segment (BOSARIS ``rocchdet`` uses 100).
    resolution
        Decimate the steppy curve to about one point per ``resolution`` probit units, always
        keeping its corners on the hull; None keeps every corner.

    Returns
    -------
    polars.DataFrame
        Group columns, ``curve`` (``"steppy"`` | ``"rocch"``), ``pfa``, ``pmiss``,
        ``probit_pfa``, ``probit_pmiss`` (infinite at 0 and 1), ``eer``, and the rule-of-30
        lines ``dr30_pfa = 30/N``, ``dr30_pmiss = 30/T`` with their probits.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0], "label": [True, True, False, False]})
    >>> det_curve(df)["curve"].unique().sort().to_list()
    ['rocch', 'steppy']
    """
    by_cols, groups = _groups(data, by, where)
    parts = []
    for key, s in groups:
        pm, pf = kc.steppy_roc(s)
        vmiss, vfa = kr.rocch(s.blocks)
        if resolution is not None and pm.shape[0] > 2:
            on_hull = np.isin(pm * s.n_tar + 1j * pf, vmiss * s.n_tar + 1j * vfa)
            x, y = probit(pf), probit(pm)
            keep = kc.decimate(x, y, on_hull, resolution)
            pm, pf = pm[keep], pf[keep]
        hx, hy = kc.rocch_det(s, box=box, points_per_segment=points_per_segment)
        eer = kr.rocch_eer(s.blocks)
        for name, a, b in (("steppy", pf, pm), ("rocch", hx, hy)):
            parts.append(pl.DataFrame({
                **{c: [v] * a.shape[0] for c, v in key.items()},
                "curve": [name] * a.shape[0], "pfa": a, "pmiss": b,
                "probit_pfa": probit(a), "probit_pmiss": probit(b)}).with_columns(
                eer=pl.lit(eer), dr30_pfa=pl.lit(30 / s.n_non), dr30_pmiss=pl.lit(30 / s.n_tar),
                probit_dr30_pfa=pl.lit(float(probit(min(30 / s.n_non, 1.0)))),
                probit_dr30_pmiss=pl.lit(float(probit(min(30 / s.n_tar, 1.0))))))
    return _frame(parts, by_cols)


def nber_curve(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
               prior_log_odds: Sequence[float] | np.ndarray | None = None) -> pl.DataFrame:
    """Normalized Bayes error-rate curves (seed 000 section 2.5.4, BOSARIS ``Norm_DCF_Plot``).

    Parameters
    ----------
    prior_log_odds
        Ascending grid of ``logit(p_target)``; default 1001 points on [-10, 0] as BOSARIS.

    Returns
    -------
    polars.DataFrame
        Group columns, ``prior_log_odds``, ``act_dcf_norm``, ``min_dcf_norm``, ``default``
        (1), the actual miss and false-alarm contributions ``act_miss_norm`` and
        ``act_fa_norm`` (summing to ``act_dcf_norm``), the rates at the minimum
        (``min_pmiss``, ``min_pfa``) and the rule-of-30 markers ``dr30_fa``/``dr30_miss``
        (True at the first grid point with 30 false alarms and at the last with 30 misses on
        the minimum curve; MATH.md 7.4).
    """
    def columns(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        norm = c["default"]
        fa_i, miss_i = kc.dr30_indices(c["min_n_miss"], c["min_n_fa"])
        idx = np.arange(norm.shape[0])
        return {
            "act_dcf_norm": c["act"] / norm,
            "min_dcf_norm": c["min"] / norm, "default": np.ones_like(norm),
            "act_miss_norm": c["p"] * c["act_pmiss"] / norm,
            "act_fa_norm": (1.0 - c["p"]) * c["act_pfa"] / norm,
            "min_pmiss": c["min_pmiss"], "min_pfa": c["min_pfa"],
            "dr30_fa": idx == (-1 if fa_i is None else fa_i),
            "dr30_miss": idx == (-1 if miss_i is None else miss_i)}

    return _grid_curve(data, by, where, prior_log_odds, (-10.0, 0.0, 1001), columns)


def ape_curve(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
              prior_log_odds: Sequence[float] | np.ndarray | None = None) -> pl.DataFrame:
    """Applied probability of error curves (seed 002 section 3.4, eq 11).

    Returns group columns, ``prior_log_odds``, ``act`` (the system's Bayes error rate),
    ``min`` (after PAV, whose maximum is the ROCCH-EER) and ``default`` (``min(p, 1-p)``).
    The areas under them are ``2 log 2`` times Cllr, minCllr and 1 (on an infinite grid).
    """
    return _grid_curve(data, by, where, prior_log_odds, (-10.0, 10.0, 801),
                       lambda c: {"act": c["act"], "min": c["min"], "default": c["default"]})
