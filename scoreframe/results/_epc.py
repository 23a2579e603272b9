"""The expected performance curve (EPC) of a verification system.

Results layer, above :mod:`scoreframe.results.evaluate`: for each ``alpha`` the threshold minimizing
``alpha FMR + (1 - alpha) FNMR`` on development trials (a vertex of the ROC convex hull) and,
on evaluation trials, FMR, FNMR, HTER and the same weighted error at it (Bengio & Mariéthoz's
EPC, as bob/BEAT draw it). Two reductions; integer counts at fixed thresholds, every engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from scoreframe.errors import ScoreframeError, message
from scoreframe.results._verification import eval_where, fixed_threshold_column, table_thresholds
from scoreframe.results.evaluate import group_statistics, validation
from scoreframe.stats.engine import EngineLike, Statistics
from scoreframe.stats.summary import VerificationRequest

__all__ = ["epc_curve"]


def _weighted_thresholds(stats: Statistics, alphas: np.ndarray
                         ) -> list[np.ndarray | None]:
    """Per development unit, the threshold minimizing ``alpha FMR + (1 - alpha) FNMR``.

    The minimum of a linear cost lies at a vertex of the ROC convex hull (a PAV block
    boundary); ties go to the lowest threshold; the threshold is the lowest score of the
    first accepted block (one float step above the data when all are rejected).
    """
    out: list[np.ndarray | None] = []
    for us in stats.units:
        st = us.stats
        if not (st.n_tar and st.n_non):
            out.append(None)
            continue
        b = st.blocks
        fnm = np.concatenate(([0], np.cumsum(b.n_tar)))
        fm = st.n_non - np.concatenate(([0], np.cumsum(b.n_non)))
        cost = alphas[:, None] * (fm / st.n_non)[None, :] + \
            (1.0 - alphas)[:, None] * (fnm / st.n_tar)[None, :]
        j = np.argmin(cost, axis=1)
        lo = np.append(b.lo, np.nextafter(b.hi[-1], np.inf))
        out.append(lo[j])
    return out


def epc_curve(data: Any, *, dev: str, eval: str | None = None,
              by: Sequence[str] | str | None = None, alphas: Sequence[float] | int = 11,
              pooled: bool = True, engine: EngineLike = "auto",
              validate: bool | Sequence[str] = True) -> pl.DataFrame:
    """Expected performance curve (EPC): thresholds chosen on dev, errors on eval.

    Parameters
    ----------
    data
        Trials (as for :func:`scoreframe.evaluate`).
    dev
        SQL predicate selecting the development trials (``"split = 'dev'"``).
    eval
        SQL predicate selecting the evaluation trials (default: ``NOT (dev)``).
    by, pooled
        Condition columns; one curve per group (and a pooled one).
    alphas
        The weights ``alpha`` in [0, 1] (a list, or a number of evenly spaced points).
    engine, validate
        Where the reductions run and the duplicate-trial check, as in
        :func:`scoreframe.evaluate`.

    Returns
    -------
    polars.DataFrame
        Group columns, ``alpha``, ``threshold`` (chosen on dev), ``dev_weighted_error``,
        then on eval ``fmr``, ``fnmr``, ``hter`` and ``weighted_error``
        (``alpha fmr + (1 - alpha) fnmr``). Groups of eval with no dev trials are left out
        with a :class:`FixedThresholdWarning`.

    See Also
    --------
    scoreframe.views.plots.epc_plot, scoreframe.evaluate

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [0.0, 1.0, 2.0, 3.0, 0.5, 1.5, 2.5, 3.5],
    ...                    "label": [False, False, True, True] * 2,
    ...                    "split": ["dev"] * 4 + ["eval"] * 4})
    >>> epc_curve(df, dev="split = 'dev'", alphas=[0.5]).select(
    ...     "alpha", "threshold", "hter").rows()
    [(0.5, 2.0, 0.0)]
    """
    grid = np.linspace(0.0, 1.0, int(alphas)) if isinstance(alphas, int) else \
        np.asarray(list(alphas), dtype=np.float64)
    if grid.size == 0 or np.isnan(grid).any() or (grid < 0).any() or (grid > 1).any():
        raise ScoreframeError(message("bad `alphas`", expected="weights in [0, 1]",
                                      got=repr(alphas)))
    check, ids = validation(validate)
    run = {"engine": engine, "validate": check, "trial_id": ids}
    dstats, _ = group_statistics(data, by=by, where=dev, pooled=pooled, **run)  # type: ignore[arg-type]  # run holds engine, validate and trial_id
    dthr = _weighted_thresholds(dstats, grid)
    keys = list(dstats.row_cols)
    table_rows = []
    for us, thr in zip(dstats.units, dthr, strict=True):
        if thr is None:
            continue
        for a, t in zip(grid.tolist(), thr.tolist(), strict=True):
            table_rows.append({**us.unit.key, "criterion": f"{a!r}", "threshold": t})
    table = pl.DataFrame(table_rows, schema={c: pl.String for c in keys}
                         | {"criterion": pl.String, "threshold": pl.Float64})
    thresholds = table_thresholds(table)
    estats, _ = group_statistics(data, by=by, where=eval_where(eval, dev), pooled=pooled,
                                 verification=VerificationRequest(thresholds=thresholds),
                                 **run)  # type: ignore[arg-type]  # run holds engine, validate and trial_id
    col = fixed_threshold_column(estats, table, thresholds)
    dev_cost = {}
    for us, thr in zip(dstats.units, dthr, strict=True):
        if thr is None:
            continue
        st = us.stats
        b = st.blocks
        fnm = np.concatenate(([0], np.cumsum(b.n_tar)))
        fm = st.n_non - np.concatenate(([0], np.cumsum(b.n_non)))
        cost = grid[:, None] * (fm / st.n_non)[None, :] + \
            (1.0 - grid)[:, None] * (fnm / st.n_tar)[None, :]
        dev_cost[tuple(us.unit.key[c] for c in keys)] = cost.min(axis=1)
    rows = []
    for us, fixed in zip(estats.units, col.to_list(), strict=True):
        k = tuple(us.unit.key[c] for c in keys)
        if fixed is None or k not in dev_cost:
            continue
        for i, f in enumerate(fixed):
            a = float(grid[i])
            rows.append({**us.unit.key, "alpha": a, "threshold": f["threshold"],
                         "dev_weighted_error": float(dev_cost[k][i]), "fmr": f["fmr"],
                         "fnmr": f["fnmr"], "hter": f["hter"],
                         "weighted_error": None if f["fmr"] is None
                         else a * f["fmr"] + (1.0 - a) * f["fnmr"]})
    schema = {c: pl.String for c in keys} | dict.fromkeys(
        ("alpha", "threshold", "dev_weighted_error", "fmr", "fnmr", "hter", "weighted_error"),
        pl.Float64)
    return pl.DataFrame(rows, schema=schema)
