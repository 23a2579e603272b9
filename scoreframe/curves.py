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

from scoreframe.evaluate import _as_lazy, _hive_keys, grouped_scores
from scoreframe.kernels import curves as kc
from scoreframe.kernels import dcf as kd
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.elementary import probit
from scoreframe.kernels.sorted_scores import SortedScores

__all__ = ["ape_curve", "ape_points", "det_curve", "det_points", "histogram_frame",
           "nber_curve", "nber_points", "operating_points", "score_histogram"]

Data = pl.DataFrame | pl.LazyFrame | str | Path
NBER_GRID = (-10.0, 0.0, 1001)  # BOSARIS Norm_DCF_Plot default axes
APE_GRID = (-10.0, 10.0, 801)


def _groups(data: Data, by: Sequence[str] | str | None, where: str | None):  # noqa: ANN202
    by_cols = [by] if isinstance(by, str) else list(by or [])
    lf = _as_lazy(data, where)
    if "system" in lf.collect_schema().names() and "system" not in by_cols:
        by_cols = ["system", *by_cols]
    keys, groups, _ = grouped_scores(lf, by_cols, scan_by=_hive_keys(data))
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
    return _frame([_grid_rows(key, s, grid, columns) for key, s in groups], by_cols)


def _grid_rows(key: dict[str, object], s: SortedScores, grid: np.ndarray,
               columns: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
               ) -> pl.DataFrame:
    return pl.DataFrame({**{k: [v] * grid.shape[0] for k, v in key.items()},
                         "prior_log_odds": grid, **columns(kc.bayes_error_curve(s, grid))})


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
    parts = [det_points(key, s, box=box, points_per_segment=points_per_segment,
                        resolution=resolution) for key, s in groups]
    return _frame(parts, by_cols)


def det_points(key: dict[str, object], s: SortedScores, *,
               box: tuple[float, float, float, float] = (0.0005, 0.5, 0.0005, 0.5),
               points_per_segment: int = 100, resolution: float | None = 0.005
               ) -> pl.DataFrame:
    """The :func:`det_curve` rows of one group (``key`` = its group columns)."""
    pm, pf = kc.steppy_roc(s)
    vmiss, vfa = kr.rocch(s.blocks)
    if resolution is not None and pm.shape[0] > 2:
        on_hull = np.isin(pm * s.n_tar + 1j * pf, vmiss * s.n_tar + 1j * vfa)
        keep = kc.decimate(probit(pf), probit(pm), on_hull, resolution)
        pm, pf = pm[keep], pf[keep]
    hx, hy = kc.rocch_det(s, box=box, points_per_segment=points_per_segment)
    eer = kr.rocch_eer(s.blocks)
    parts = []
    for name, a, b in (("steppy", pf, pm), ("rocch", hx, hy)):
        parts.append(pl.DataFrame({
            **{c: [v] * a.shape[0] for c, v in key.items()},
            "curve": [name] * a.shape[0], "pfa": a, "pmiss": b,
            "probit_pfa": probit(a), "probit_pmiss": probit(b)}).with_columns(
            eer=pl.lit(eer), dr30_pfa=pl.lit(30 / s.n_non), dr30_pmiss=pl.lit(30 / s.n_tar),
            probit_dr30_pfa=pl.lit(float(probit(min(30 / s.n_non, 1.0)))),
            probit_dr30_pmiss=pl.lit(float(probit(min(30 / s.n_tar, 1.0))))))
    return pl.concat(parts, how="vertical_relaxed")


def operating_points(key: dict[str, object], s: SortedScores,
                     p_target: Sequence[float]) -> pl.DataFrame:
    """Actual and minimum DCF operating points of one group, for DET markers.

    One row per prior and kind (``act``: the Bayes decision of the llrs; ``min``: the ROCCH
    vertex minimizing the DCF) with ``pmiss``, ``pfa``, their probits and ``dcf_norm``.
    """
    p = np.asarray(p_target, dtype=np.float64)
    q = 1.0 - p
    thr = -(np.log(p) - np.log1p(-p))
    n_miss_a, n_fa_a = kd.error_counts(s, thr)
    dcf_min, n_miss_m, n_fa_m = kr.min_dcf(s.blocks, p, q)
    rows = []
    norm = np.minimum(p, q)
    for kind, nm, nf in (("act", n_miss_a, n_fa_a), ("min", n_miss_m, n_fa_m)):
        pm, pf = np.asarray(nm) / s.n_tar, np.asarray(nf) / s.n_non
        rows.append(pl.DataFrame({
            **{c: [v] * p.shape[0] for c, v in key.items()}, "p_target": p,
            "kind": [kind] * p.shape[0], "pmiss": pm, "pfa": pf,
            "probit_pmiss": probit(pm), "probit_pfa": probit(pf),
            "dcf_norm": (p * pm + q * pf) / norm}))
    return pl.concat(rows)


def score_histogram(key: dict[str, object], s: SortedScores, *, bins: int = 60
                    ) -> pl.DataFrame:
    """Class-conditional score histograms of one group (densities on shared bins)."""
    lo = min(s.tar[0], s.non[0])
    hi = max(s.tar[-1], s.non[-1])
    finite = np.isfinite([lo, hi])
    if not finite.all():
        both = np.concatenate([s.tar, s.non])
        both = both[np.isfinite(both)]
        lo, hi = (both.min(), both.max()) if both.size else (-1.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    out = []
    for cls, x in (("target", s.tar), ("non-target", s.non)):
        dens, _ = np.histogram(x[np.isfinite(x)], bins=edges, density=True)
        out.append(pl.DataFrame({**{c: [v] * bins for c, v in key.items()},
                                 "class": [cls] * bins, "lo": edges[:-1], "hi": edges[1:],
                                 "density": dens}))
    return pl.concat(out)


def histogram_frame(data: Data, *, by: Sequence[str] | str | None = None,
                    where: str | None = None, bins: int = 60) -> pl.DataFrame:
    """Class-conditional score histograms per group (see :func:`score_histogram`)."""
    by_cols, groups = _groups(data, by, where)
    return _frame([score_histogram(k, s, bins=bins) for k, s in groups], by_cols)


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
    return _grid_curve(data, by, where, prior_log_odds, NBER_GRID, _nber_columns)


def nber_points(key: dict[str, object], s: SortedScores,
                prior_log_odds: Sequence[float] | np.ndarray | None = None) -> pl.DataFrame:
    """The :func:`nber_curve` rows of one group."""
    grid = np.linspace(*NBER_GRID) if prior_log_odds is None else np.asarray(prior_log_odds)
    return _grid_rows(key, s, grid, _nber_columns)


def ape_points(key: dict[str, object], s: SortedScores,
               prior_log_odds: Sequence[float] | np.ndarray | None = None) -> pl.DataFrame:
    """The :func:`ape_curve` rows of one group."""
    grid = np.linspace(*APE_GRID) if prior_log_odds is None else np.asarray(prior_log_odds)
    return _grid_rows(key, s, grid, _ape_columns)


def _nber_columns(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
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


def _ape_columns(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"act": c["act"], "min": c["min"], "default": c["default"]}


def ape_curve(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
              prior_log_odds: Sequence[float] | np.ndarray | None = None) -> pl.DataFrame:
    """Applied probability of error curves (seed 002 section 3.4, eq 11).

    Returns group columns, ``prior_log_odds``, ``act`` (the system's Bayes error rate),
    ``min`` (after PAV, whose maximum is the ROCCH-EER) and ``default`` (``min(p, 1-p)``).
    The areas under them are ``2 log 2`` times Cllr, minCllr and 1 (on an infinite grid).
    """
    return _grid_curve(data, by, where, prior_log_odds, APE_GRID, _ape_columns)
