"""Tidy curve frames per condition: DET, normalized Bayes error rate (NBER), APE, DCF points.

Results layer: every curve is read from the statistics layer's mergeable statistics
(:func:`scoreframe.results.evaluate.group_statistics`: PAV blocks for the ROCCH and minimum curves,
integer error counts at the Bayes thresholds of the prior grid for the actual curves, the
decimated steppy-DET corners), so curves need one reduction, in memory or out of core, and the
report computes its table and its curves in the same pass. Plots (Altair) only draw these
frames. Probit coordinates and rule-of-30 markers are computed here, not in the chart spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from scoreframe.frames.lazy import Data, as_lazy, by_columns
from scoreframe.kernels import curves as kc
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.elementary import operating_points as ops_arrays
from scoreframe.kernels.elementary import probit
from scoreframe.metrics.registry import GroupStats
from scoreframe.results.evaluate import group_statistics
from scoreframe.stats.engine import EngineLike

__all__ = ["APE_GRID", "ECE_GRID", "NBER_GRID", "TIPPETT_GRID", "CurveGrids", "ForensicCurves",
           "ape_curve", "ape_points", "dcf_points", "det_curve", "det_points", "histogram_frame",
           "histogram_points",
           "nber_curve", "nber_points", "operating_points"]

NBER_GRID = (-10.0, 0.0, 1001)  # BOSARIS Norm_DCF_Plot default axes
APE_GRID = (-10.0, 10.0, 801)
DET_RESOLUTION = 0.005


class CurveGrids:
    """The prior-log-odds grids of the NBER and APE curves, and where their counts sit.

    The statistics hold error counts at the operating points' thresholds first, then at
    ``thresholds`` (the grids' Bayes thresholds ``-prior_log_odds``).
    """

    def __init__(self, n_ops: int, *, nber: Sequence[float] | np.ndarray | None = None,
                 ape: Sequence[float] | np.ndarray | None = None) -> None:
        self.nber = np.linspace(*NBER_GRID) if nber is None else np.asarray(nber, float)
        self.ape = np.linspace(*APE_GRID) if ape is None else np.asarray(ape, float)
        self.nber_slice = slice(n_ops, n_ops + self.nber.shape[0])
        self.ape_slice = slice(self.nber_slice.stop, self.nber_slice.stop + self.ape.shape[0])

    @property
    def thresholds(self) -> np.ndarray:
        """Bayes thresholds of both grids, NBER first."""
        return -np.concatenate((self.nber, self.ape))


#: Tippett thresholds (natural-log llrs) and ECE prior log odds of the report's forensic curves.
#: The ECE is smooth in the prior log odds and its chart draws a natural cubic spline through
#: these exact points (:func:`scoreframe.views.plots.ece_plot`): a step of 0.5 keeps that spline
#: within a few hundredths of a pixel of the exact curve, and every point is an exact sum of
#: one log term per trial, so each point saved is a pass over the trials saved.
TIPPETT_GRID = (-25.0, 25.0, 501)
ECE_GRID = (-7.0, 7.0, 29)


class ForensicCurves:
    """Tippett and ECE curves of every group from its statistics (no trial arrays).

    Tippett: the fractions of target and non-target llrs ``>= t`` are the statistics' integer
    counts at the thresholds of a fixed llr grid (``offset``: where those counts sit among the
    request's thresholds); the flat ends are trimmed to one point each. ECE: the exact sums of
    :class:`~scoreframe.stats.summary.EceSums` at each prior log odds, and the ECE of the PAV
    llrs from the group's PAV blocks (:func:`scoreframe.metrics.forensic.ece` conventions;
    labels are the classes, so spoofs count as non-targets).

    >>> import numpy as np
    >>> from scoreframe.metrics.registry import GroupStats, OperatingPoints
    >>> from scoreframe.kernels import sort_scores
    >>> from scoreframe.stats.summary import Request, reduce_sorted
    >>> fc = ForensicCurves(0)
    >>> st = reduce_sorted(sort_scores([1.0, 2.0], [-1.0]),
    ...                    Request(fc.thresholds, statistics=(fc.ece,)))
    >>> g = GroupStats(st, OperatingPoints((0.5,)))
    >>> fc.tippett({}, g).filter(pl.col("threshold") == 0.0).rows()
    [(0.0, 1.0, 0.0)]
    """

    def __init__(self, offset: int, *, tippett: Sequence[float] | np.ndarray | None = None,
                 prior_log_odds: Sequence[float] | np.ndarray | None = None) -> None:
        from scoreframe.stats.summary import EceSums

        self.tippett_grid = np.linspace(*TIPPETT_GRID) if tippett is None \
            else np.asarray(tippett, float)
        self.prior_log_odds = np.linspace(*ECE_GRID) if prior_log_odds is None \
            else np.asarray(prior_log_odds, float)
        self.slice = slice(offset, offset + self.tippett_grid.shape[0])
        self.ece = EceSums(prior_log_odds=tuple(self.prior_log_odds.tolist()))

    @property
    def thresholds(self) -> np.ndarray:
        """The Tippett thresholds (appended to the request's thresholds at ``offset``)."""
        return self.tippett_grid

    def tippett(self, key: dict[str, object], g: GroupStats) -> pl.DataFrame:
        """The group's Tippett frame (``threshold``, ``p_tar_ge``, ``p_non_ge``)."""
        s = g.stats
        p_tar = (s.n_tar - s.n_miss[self.slice]) / s.n_tar
        p_non = s.n_fa[self.slice] / s.n_non
        top = np.flatnonzero((p_tar < 1) | (p_non < 1))
        low = np.flatnonzero((p_tar > 0) | (p_non > 0))
        a = max(int(top[0]) - 1, 0) if top.size else 0
        b = min(int(low[-1]) + 2, p_tar.shape[0]) if low.size else p_tar.shape[0]
        return pl.DataFrame({"threshold": self.tippett_grid[a:b], "p_tar_ge": p_tar[a:b],
                             "p_non_ge": p_non[a:b]}).with_columns(
            [pl.lit(v).alias(c) for c, v in key.items()])

    def ece_curve(self, key: dict[str, object], g: GroupStats) -> pl.DataFrame:
        """The group's ECE frame (``prior_log_odds``, ``ece``, ``ece_min``, ``ece_ref``)."""
        from scoreframe.kernels import forensic as kf
        from scoreframe.stats.summary import ece_values

        plo = self.prior_log_odds
        ece_min = kf.ece_min_blocks(g.stats.blocks, plo)
        return pl.DataFrame({"prior_log_odds": plo,
                             "ece": ece_values(g.stats.get(self.ece), plo, g.n_tar, g.n_non),
                             "ece_min": ece_min, "ece_ref": kf.ece_ref(plo)}).with_columns(
            [pl.lit(v).alias(c) for c, v in key.items()])


def histogram_points(key: dict[str, object], g: GroupStats, statistic: Any, *,
                     bins: int = 50) -> pl.DataFrame:
    """Class-conditional score histogram of a group from its statistics (no trial arrays).

    ``statistic`` is the request's :class:`~scoreframe.stats.summary.ScoreHistogram`; the
    frame has the columns of :func:`histogram_frame` (``class``, ``lo``, ``hi``,
    ``density``) with the group's key. Each bin counts the scores of the buckets whose lower
    edge it holds (at most 2,048 buckets of a power-of-two width over the scores: a bin of 50
    spans 20 buckets or more), the same on every engine.

    >>> from scoreframe.kernels import sort_scores
    >>> from scoreframe.metrics.registry import OperatingPoints
    >>> from scoreframe.stats.summary import Request, ScoreHistogram, reduce_sorted
    >>> h = ScoreHistogram()
    >>> st = reduce_sorted(sort_scores([1.0, 2.0], [0.0]), Request(statistics=(h,)))
    >>> df = histogram_points({}, GroupStats(st, OperatingPoints((0.5,))), h, bins=2)
    >>> df.select("class", "lo", "density").rows()
    [('target', 0.0, 0.0), ('target', 1.0, 1.0), ('non-target', 0.0, 1.0), ('non-target', 1.0, 0.0)]
    """
    from scoreframe.stats.summary import histogram_bins

    st = g.stats.get(statistic)
    got = None if st is None else histogram_bins(st, bins)
    if got is None:
        return pl.DataFrame()
    edges, ct, cn = got
    width = edges[1] - edges[0]
    parts = []
    for cls, n in (("target", ct), ("non-target", cn)):
        dens = n / (n.sum() * width) if n.sum() else n.astype(np.float64)
        parts.append(pl.DataFrame({**{c: [v] * bins for c, v in key.items()},
                                   "class": [cls] * bins, "lo": edges[:-1], "hi": edges[1:],
                                   "density": dens.astype(np.float64)}))
    return pl.concat(parts)


def _frame(parts: list[pl.DataFrame], by: Sequence[str]) -> pl.DataFrame:
    df = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()
    return df.select([*by, *(c for c in df.columns if c not in by)])


def _curves(data: Data, by: Sequence[str] | str | None, where: str | None, *,
            grids: CurveGrids | None = None, det_resolution: float | None = None, **kw: Any
            ) -> tuple[list[tuple[dict[str, object], GroupStats]], tuple[str, ...]]:
    stats, ops = group_statistics(
        data, by=by, where=where, pooled=False,
        thresholds=None if grids is None else grids.thresholds,
        det_resolution=det_resolution, **kw)
    out: list[tuple[dict[str, object], GroupStats]] = [
        (dict(u.unit.key), GroupStats(u.stats, ops)) for u in stats.units
        if u.stats.n_tar and u.stats.n_non]
    return out, stats.row_cols


def _bayes_rows(key: dict[str, object], g: GroupStats, grid: np.ndarray, where: slice,
                columns: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
                ) -> pl.DataFrame:
    p, q, _ = ops_arrays(prior_log_odds=grid)
    s = g.stats
    a_miss, a_fa = s.n_miss[where], s.n_fa[where]
    mn, m_miss, m_fa = kr.min_dcf(s.blocks, p, q)
    c = {"p": p, "act": p * (a_miss / s.n_tar) + q * (a_fa / s.n_non), "min": mn,
         "default": np.minimum(p, q), "act_pmiss": a_miss / s.n_tar, "act_pfa": a_fa / s.n_non,
         "min_pmiss": m_miss / s.n_tar, "min_pfa": m_fa / s.n_non,
         "min_n_miss": m_miss.astype(np.float64), "min_n_fa": m_fa.astype(np.float64)}
    return pl.DataFrame({**{k: [v] * grid.shape[0] for k, v in key.items()},
                         "prior_log_odds": grid, **columns(c)})


def det_curve(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
              box: tuple[float, float, float, float] = (0.0005, 0.5, 0.0005, 0.5),
              points_per_segment: int = 100, resolution: float | None = 0.005,
              engine: EngineLike = "auto") -> pl.DataFrame:
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
    engine
        Where the reduction runs, as in :func:`scoreframe.evaluate` (the curve comes from the
        statistics, so it is the same on every engine).

    Returns
    -------
    polars.DataFrame
        Group columns, ``curve`` (``"steppy"`` | ``"rocch"``), ``pfa``, ``pmiss``,
        ``probit_pfa``, ``probit_pmiss`` (infinite at 0 and 1), ``eer``, and the rule-of-30
        lines ``dr30_pfa = 30/N``, ``dr30_pmiss = 30/T`` with their probits.

    See Also
    --------
    scoreframe.eer : Where the curve crosses the diagonal.
    scoreframe.min_dcf : Its best point for a prior.
    scoreframe.act_dcf : The point at the Bayes threshold.
    scoreframe.views.plots.det_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0], "label": [True, True, False, False]})
    >>> det_curve(df)["curve"].unique().sort().to_list()
    ['rocch', 'steppy']
    """
    groups, by_cols = _curves(data, by, where, engine=engine,
                              det_resolution=0.0 if resolution is None else resolution)
    parts = [det_points(key, g, box=box, points_per_segment=points_per_segment,
                        resolution=resolution) for key, g in groups]
    return _frame(parts, by_cols)


def det_points(key: dict[str, object], g: GroupStats, *,
               box: tuple[float, float, float, float] = (0.0005, 0.5, 0.0005, 0.5),
               points_per_segment: int = 100, resolution: float | None = DET_RESOLUTION
               ) -> pl.DataFrame:
    """The :func:`det_curve` rows of one group (``key`` = its group columns).

    The steppy curve is read from the statistics' DET corners (reduced with a
    ``det_resolution``); without them only the ROCCH vertices are drawn as corners.
    """
    s = g.stats
    if s.det_miss is not None:
        pm = np.concatenate(([0], s.det_miss)) / s.n_tar
        pf = (s.n_non - np.concatenate(([0], s.det_fa))) / s.n_non  # type: ignore[arg-type]  # det_fa is set with det_miss (checked above)
    else:
        pm, pf = kr.rocch(s.blocks)
    hx, hy = kc.rocch_det(s.blocks, box=box, points_per_segment=points_per_segment)
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


def operating_points(key: dict[str, object], g: GroupStats) -> pl.DataFrame:
    """Actual and minimum DCF operating points of one group, for DET markers.

    One row per prior of the evaluation and kind (``act``: the Bayes decision of the llrs;
    ``min``: the ROCCH vertex minimizing the DCF) with ``pmiss``, ``pfa``, their probits and
    ``dcf_norm``.
    """
    ops = g.ops
    k = len(ops.p_target)
    n_miss_a, n_fa_a = g.act_counts()
    _, n_miss_m, n_fa_m = g.min_dcf
    p, q = ops.p, ops.q
    rows = []
    for kind, nm, nf in (("act", n_miss_a, n_fa_a), ("min", n_miss_m, n_fa_m)):
        pm, pf = np.asarray(nm) / g.n_tar, np.asarray(nf) / g.n_non
        rows.append(pl.DataFrame({
            **{c: [v] * k for c, v in key.items()}, "p_target": list(ops.p_target),
            "kind": [kind] * k, "pmiss": pm, "pfa": pf,
            "probit_pmiss": probit(pm), "probit_pfa": probit(pf),
            "dcf_norm": (p * pm + q * pf) / ops.default_dcf}))
    return pl.concat(rows)


def dcf_points(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
               p_target: Sequence[float] | float = (0.01,), c_miss: float = 1.0,
               c_fa: float = 1.0, **kw: Any) -> pl.DataFrame:
    """Actual and minimum DCF points per group, ready for ``det_plot(..., points=)``.

    Parameters
    ----------
    data
        Trials: a Parquet dataset path, a polars (Lazy)Frame, or anything
        :func:`scoreframe.evaluate` takes.
    by
        Condition columns.
    where
        A SQL predicate selecting trials first.
    p_target, c_miss, c_fa
        The operating points, as in :func:`scoreframe.evaluate`.
    **kw
        Further options of :func:`scoreframe.evaluate` (engine, ``eer_method``...).

    Returns
    -------
    polars.DataFrame
        One row per group and operating point: the actual and minimum DCF
        with their miss and false-alarm rates.

    See Also
    --------
    scoreframe.det_curve : The curve these points lie on.
    scoreframe.min_dcf, scoreframe.act_dcf : The costs at them.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0], "label": [True, True, False, False]})
    >>> dcf_points(df, p_target=0.5).select("kind", "pmiss", "pfa").rows()
    [('act', 0.0, 1.0), ('min', 0.0, 0.5)]
    """
    groups, by_cols = _curves(data, by, where, p_target=p_target, c_miss=c_miss, c_fa=c_fa,
                              **kw)
    return _frame([operating_points(key, g) for key, g in groups], by_cols)


def histogram_frame(data: Data, *, by: Sequence[str] | str | None = None,
                    where: str | None = None, bins: int = 60) -> pl.DataFrame:
    """Class-conditional score histograms per group (densities on bins shared by the classes).

    A streaming aggregation (two passes: the finite score range of each group, then counts per
    bin), no sort: bounded memory at any size.
    """
    by_cols = by_columns(by)
    lf = as_lazy(data, where=where)
    if "system" in lf.collect_schema().names() and "system" not in by_cols:
        by_cols = ["system", *by_cols]
    keys = [pl.col(c).cast(pl.String) for c in by_cols]
    lab = pl.col("label")
    score = pl.col("score").cast(pl.Float64)
    fin = lf.select(*keys, score, lab).filter(score.is_finite() & lab.is_not_null())
    rng = (fin.group_by(by_cols).agg(lo=score.min(), hi=score.max()) if by_cols
           else fin.select(lo=score.min(), hi=score.max())).collect(engine="streaming")
    if by_cols:
        rng = rng.sort(by_cols)
    out = []
    for r in rng.iter_rows(named=True):
        lo, hi = r["lo"], r["hi"]
        if lo is None:
            continue
        hi = hi if hi > lo else lo + 1.0
        width = (hi - lo) / bins
        cond = pl.all_horizontal([pl.col(c) == r[c] for c in by_cols]) if by_cols else pl.lit(True)
        counts = (fin.filter(cond)
                  .with_columns(b=((score - lo) / width).floor().clip(0, bins - 1).cast(pl.Int64))
                  .group_by(lab, "b").agg(n=pl.len()).collect(engine="streaming"))
        edges = np.linspace(lo, hi, bins + 1)
        for cls, flag in (("target", True), ("non-target", False)):
            sub = counts.filter(pl.col("label") == flag)
            n = np.zeros(bins)
            n[sub["b"].to_numpy()] = sub["n"].to_numpy()
            dens = n / (n.sum() * width) if n.sum() else n
            out.append(pl.DataFrame({**{c: [r[c]] * bins for c in by_cols},
                                     "class": [cls] * bins, "lo": edges[:-1], "hi": edges[1:],
                                     "density": dens}))
    return _frame(out, by_cols)


def nber_curve(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
               prior_log_odds: Sequence[float] | np.ndarray | None = None,
               engine: EngineLike = "auto") -> pl.DataFrame:
    """Normalized Bayes error-rate curves ([BdV11] section 2.5.4, BOSARIS ``Norm_DCF_Plot``).

    Parameters
    ----------
    prior_log_odds
        Ascending grid of ``logit(p_target)``; default 1001 points on [-10, 0] as BOSARIS.
    engine
        Where the reduction runs, as in :func:`scoreframe.evaluate`.

    Returns
    -------
    polars.DataFrame
        Group columns, ``prior_log_odds``, ``act_dcf_norm``, ``min_dcf_norm``, ``default``
        (1), the actual miss and false-alarm contributions ``act_miss_norm`` and
        ``act_fa_norm`` (summing to ``act_dcf_norm``), the rates at the minimum
        (``min_pmiss``, ``min_pfa``) and the rule-of-30 markers ``dr30_fa``/``dr30_miss``
        (True at the first grid point with 30 false alarms and at the last with 30 misses on
        the minimum curve; docs/math.md §7.4).

    See Also
    --------
    ape_curve : The same costs, unnormalized, over both sides of the prior.
    scoreframe.views.plots.nber_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [-1.0, 0.0, 1.0, 0.5, 2.0, 3.0],
    ...                    "label": [False, False, False, True, True, True]})
    >>> c = nber_curve(df, prior_log_odds=[-2.0, 0.0])
    >>> c["min_dcf_norm"].round(4).to_list()
    [0.3333, 0.3333]
    """
    grids = CurveGrids(1, nber=prior_log_odds)
    groups, by_cols = _curves(data, by, where, grids=grids, p_target=0.5, engine=engine)
    return _frame([_bayes_rows(k, g, grids.nber, grids.nber_slice, _nber_columns)
                   for k, g in groups], by_cols)


def nber_points(key: dict[str, object], g: GroupStats, grids: CurveGrids) -> pl.DataFrame:
    """The :func:`nber_curve` rows of one group (statistics reduced with ``grids``)."""
    return _bayes_rows(key, g, grids.nber, grids.nber_slice, _nber_columns)


def ape_points(key: dict[str, object], g: GroupStats, grids: CurveGrids) -> pl.DataFrame:
    """The :func:`ape_curve` rows of one group (statistics reduced with ``grids``)."""
    return _bayes_rows(key, g, grids.ape, grids.ape_slice, _ape_columns)


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
              prior_log_odds: Sequence[float] | np.ndarray | None = None,
              engine: EngineLike = "auto") -> pl.DataFrame:
    """Applied probability of error curves ([vLB07] section 3.4, eq 11).

    Returns group columns, ``prior_log_odds``, ``act`` (the system's Bayes error rate),
    ``min`` (after PAV, whose maximum is the ROCCH-EER) and ``default`` (``min(p, 1-p)``).
    The areas under them are ``2 log 2`` times Cllr, minCllr and 1 (on an infinite grid).

    Parameters
    ----------
    data
        Trials: a Parquet dataset path, a polars (Lazy)Frame, or anything
        :func:`scoreframe.evaluate` takes.
    by
        Condition columns; one curve per group (and per ``system``).
    where
        A SQL predicate selecting trials first.
    prior_log_odds
        The grid of prior log odds (default: 801 points over [-10, 10]).
    engine
        Where the reduction runs, as in :func:`scoreframe.evaluate`.

    Returns
    -------
    polars.DataFrame
        One row per group and prior log odds.

    See Also
    --------
    nber_curve : The normalized costs on one side of the prior.
    scoreframe.views.plots.ape_plot : Its chart, with the Cllr decomposition.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [-1.0, 0.0, 1.0, 0.5, 2.0, 3.0],
    ...                    "label": [False, False, False, True, True, True]})
    >>> c = ape_curve(df, prior_log_odds=[0.0])
    >>> round(c["min"][0], 4), c["default"][0]
    (0.1667, 0.5)
    """
    grids = CurveGrids(1, ape=prior_log_odds)
    groups, by_cols = _curves(data, by, where, grids=grids, p_target=0.5, engine=engine)
    return _frame([_bayes_rows(k, g, grids.ape, grids.ape_slice, _ape_columns)
                   for k, g in groups], by_cols)
