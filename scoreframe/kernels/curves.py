"""Curves of one group: DET (steppy and ROCCH), normalized Bayes error rate, APE.

numpy/scipy only (docs/math.md section 7; [BdV11] 2.5.4, [vLB07] 3.4). Everything is read from the
sorted scores and their PAV blocks; plots only draw these arrays.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import dcf as kd
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.elementary import operating_points
from scoreframe.kernels.sorted_scores import Blocks, SortedScores, label_runs

__all__ = ["bayes_error_curve", "decimate", "dr30_indices", "rocch_det", "steppy_roc"]

F64 = NDArray[np.float64]


def steppy_roc(s: SortedScores) -> tuple[F64, F64]:
    """Corners of the per-trial ROC staircase ``(pmiss, pfa)``, from ``(0, 1)`` to ``(1, 0)``.

    Equals BOSARIS ``compute_roc`` followed by ``filter_roc`` (ties: targets first).
    """
    run_len, run_lab = label_runs(s)
    n_miss = np.concatenate(([0], np.cumsum(np.where(run_lab, run_len, 0))))
    n_corr = np.concatenate(([0], np.cumsum(np.where(run_lab, 0, run_len))))
    return n_miss / s.n_tar, (s.n_non - n_corr) / s.n_non


def rocch_det(s: SortedScores | Blocks, *, box: tuple[float, float, float, float] = (
        0.0005, 0.5, 0.0005, 0.5), points_per_segment: int = 100) -> tuple[F64, F64]:
    """ROCCH segments clipped to the plot box and sampled linearly (BOSARIS ``rocchdet``).

    Parameters
    ----------
    box
        ``(pfa_min, pfa_max, pmiss_min, pmiss_max)``.
    points_per_segment
        Each visible hull segment gives ``points_per_segment + 1`` points (ends included).

    Returns
    -------
    pfa, pmiss
        In (0, 1); ``probit`` of them gives DET coordinates. Straight hull segments become
        curves after the probit warp.
    """
    pmiss, pfa = kr.rocch(s.blocks if isinstance(s, SortedScores) else s)
    x0, x1, y0, y1 = pfa[:-1], pfa[1:], pmiss[:-1], pmiss[1:]
    dx, dy = x1 - x0, y1 - y0
    lo = np.zeros_like(x0)
    hi = np.ones_like(x0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for d, start, vmin, vmax in ((dx, x0, box[0], box[1]), (dy, y0, box[2], box[3])):
            ta = (vmin - start) / d
            tb = (vmax - start) / d
            t_in = np.where(d > 0, ta, np.where(d < 0, tb, -np.inf))
            t_out = np.where(d > 0, tb, np.where(d < 0, ta, np.inf))
            inside = (start >= vmin) & (start <= vmax)
            t_in = np.where((d == 0) & ~inside, np.inf, t_in)
            lo = np.maximum(lo, t_in)
            hi = np.minimum(hi, t_out)
    keep = lo <= hi
    xa, xb = x0[keep] + lo[keep] * dx[keep], x0[keep] + hi[keep] * dx[keep]
    ya, yb = y0[keep] + lo[keep] * dy[keep], y0[keep] + hi[keep] * dy[keep]
    u = np.linspace(0.0, 1.0, points_per_segment + 1)[None, :]  # loops over segments: none
    out_x = ((1.0 - u) * xa[:, None] + u * xb[:, None]).ravel()
    out_y = ((1.0 - u) * ya[:, None] + u * yb[:, None]).ravel()
    return out_x, out_y


def bayes_error_curve(s: SortedScores, prior_log_odds: F64) -> dict[str, F64]:
    """Actual and minimum Bayes error rates over a prior-log-odds grid (NBER and APE curves).

    Returns unnormalized ``act``/``min`` error rates, the default system's ``min(p, 1-p)``,
    the actual and minimizing error rates (``act_pmiss``, ``act_pfa``, ``min_pmiss``,
    ``min_pfa``) and counts (``min_n_miss``, ``min_n_fa``).
    """
    p, q, thr = operating_points(prior_log_odds=prior_log_odds)
    act, a_miss, a_fa = kd.act_dcf(s, p, q, thr)
    mn, m_miss, m_fa = kr.min_dcf(s.blocks, p, q)
    return {"p": p, "act": act, "min": mn, "default": np.minimum(p, q),
            "act_pmiss": a_miss / s.n_tar, "act_pfa": a_fa / s.n_non,
            "min_pmiss": m_miss / s.n_tar, "min_pfa": m_fa / s.n_non,
            "min_n_miss": m_miss.astype(np.float64), "min_n_fa": m_fa.astype(np.float64)}


def dr30_indices(min_n_miss: F64, min_n_fa: F64) -> tuple[int | None, int | None]:
    """Doddington's rule of 30 on an ascending grid (docs/math.md §7.4).

    ``dr30_fa``: the first index whose minimizing vertex has at least 30 false alarms;
    ``dr30_miss``: the last index with at least 30 misses; None when never reached.
    """
    fa = np.flatnonzero(min_n_fa >= 30)
    miss = np.flatnonzero(min_n_miss >= 30)
    return (int(fa[0]) if fa.size else None, int(miss[-1]) if miss.size else None)


def decimate(x: F64, y: F64, keep: NDArray[np.bool_], resolution: float) -> NDArray[np.bool_]:
    """Mask of points to keep so a path has about one point per ``resolution`` cell.

    The first and last point of every run of points in the same grid cell are kept, and every
    point in ``keep`` (hull vertices) whatever its cell, so the drawn shape does not move.
    """
    fx = np.floor(np.clip(x, -1e6, 1e6) / resolution)
    fy = np.floor(np.clip(y, -1e6, 1e6) / resolution)
    change = np.ones(x.shape[0], dtype=bool)
    if x.shape[0] > 1:
        same = (fx[1:] == fx[:-1]) & (fy[1:] == fy[:-1])
        change[1:] = ~same
        change[:-1] |= ~same
        change[-1] = True  # both ends of the path always stay
    return change | keep

