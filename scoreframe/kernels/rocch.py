"""ROCCH vertices and the statistics read from them (docs/math.md section 5).

numpy only: ROCCH, minDCF at any operating points, ROCCH-EER, UER, PRBEP, area under the ROCCH.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.sorted_scores import Blocks

__all__ = ["area_under_rocch", "crossing", "min_dcf", "prbep", "rocch", "rocch_eer", "uer"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def rocch_counts(b: Blocks) -> tuple[I64, I64]:
    """Cumulative miss and false-alarm counts at the ROCCH vertices (B + 1 of them)."""
    n_miss = np.concatenate(([0], np.cumsum(b.n_tar)))
    n_fa = b.total_non - np.concatenate(([0], np.cumsum(b.n_non)))
    return n_miss, n_fa


def rocch(b: Blocks) -> tuple[F64, F64]:
    """ROCCH vertices ``(pmiss, pfa)`` from ``(0, 1)`` to ``(1, 0)`` (docs/math.md §5.2)."""
    n_miss, n_fa = rocch_counts(b)
    return n_miss / b.total_tar, n_fa / b.total_non


def crossing(x: F64, y: F64) -> float:
    """Value of ``y`` where the polyline through ``(x_b, y_b)`` crosses ``x = y``.

    ``x - y`` must be non-increasing, from ``>= 0`` to ``<= 0`` (docs/math.md §5.4).
    """
    d = x - y
    b = int(np.count_nonzero(d >= 0)) - 1
    if b < 0:
        return float(y[0])
    if d[b] == 0 or b == d.shape[0] - 1:
        return float(y[b])
    u = d[b] / (d[b] - d[b + 1])
    return float(y[b] + u * (y[b + 1] - y[b]))


def rocch_eer(b: Blocks) -> float:
    """ROCCH-EER: where the ROCCH crosses ``pmiss = pfa`` ([BdV11] eq 26)."""
    pmiss, pfa = rocch(b)
    return crossing(pfa, pmiss)


def uer(b: Blocks, r: float) -> float:
    """Unit error rate ``UER(r)``: the ROCCH point with ``pfa = r * pmiss`` ([BdV11] eq 27)."""
    pmiss, pfa = rocch(b)
    return crossing(pfa, r * pmiss)


def prbep(b: Blocks) -> float:
    """Precision-recall break-even point as an error count (``#miss = #fa`` on the ROCCH)."""
    n_miss, n_fa = rocch_counts(b)
    return crossing(n_fa.astype(np.float64), n_miss.astype(np.float64))


def area_under_rocch(b: Blocks) -> float:
    """Area under the ROCCH in (pfa, pmiss) coordinates: an error measure, 0 is perfect."""
    pmiss, pfa = rocch(b)
    return float(np.sum((pfa[:-1] - pfa[1:]) * (pmiss[:-1] + pmiss[1:]) / 2.0))


def min_dcf(b: Blocks, p: F64, q: F64) -> tuple[F64, I64, I64]:
    """Minimum Bayes error rate at effective priors ``p`` (with ``q = 1 - p``).

    Returns the unnormalized ``min_b p*Pmiss_b + q*Pfa_b`` and the miss and false-alarm counts
    at the minimizing vertex: the first (lowest Pmiss) among the vertices whose floating-point
    costs are equal. Vertices whose exact costs tie may round differently; the vertex then
    follows the rounding, as in BOSARIS (the minimum itself is the same).
    """
    n_miss, n_fa = rocch_counts(b)
    pmiss = n_miss / b.total_tar
    pfa = n_fa / b.total_non
    p = np.atleast_1d(p)
    q = np.atleast_1d(q)
    out = np.empty(p.shape[0])
    idx = np.empty(p.shape[0], dtype=np.int64)
    step = max(1, 4_000_000 // pmiss.shape[0])
    for i in range(0, p.shape[0], step):  # chunks of operating points, not trials
        cost = p[i:i + step, None] * pmiss[None, :] + q[i:i + step, None] * pfa[None, :]
        j = np.argmin(cost, axis=1)
        idx[i:i + step] = j
        out[i:i + step] = cost[np.arange(j.shape[0]), j]
    return out, n_miss[idx], n_fa[idx]
