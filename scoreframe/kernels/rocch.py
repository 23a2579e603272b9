"""ROCCH vertices and the statistics read from them (docs/math.md section 5).

numpy only: ROCCH, minDCF at any operating points, ROCCH-EER, UER, PRBEP, area under the ROCCH.
The ``*_stack`` kernels take the blocks of many replicates at once (a
:class:`~scoreframe.kernels.sorted_scores.BlockStack`); the one-group kernels are the stack of
one, so a replicate and a point value come from the same operations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.sorted_scores import Blocks, BlockStack

__all__ = ["area_under_rocch", "crossing", "crossing_stack", "min_dcf", "min_dcf_stack", "prbep",
           "prbep_stack", "rocch", "rocch_counts_stack", "rocch_eer", "rocch_eer_stack", "uer"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def rocch_counts(b: Blocks) -> tuple[I64, I64]:
    """Cumulative miss and false-alarm counts at the ROCCH vertices (B + 1 of them)."""
    return rocch_counts_stack(BlockStack.of([b]))


def rocch_counts_stack(b: BlockStack) -> tuple[I64, I64]:
    """:func:`rocch_counts` of every member of a stack, one after the other.

    Member ``r`` has vertices ``b.vertices[r]:b.vertices[r + 1]`` (its blocks plus one).
    """
    vert = b.vertices
    first = vert[:-1]
    n_miss = np.zeros(vert[-1], dtype=np.int64)
    n_fa = np.zeros(vert[-1], dtype=np.int64)
    if b.n_tar.shape[0]:
        inner = np.ones(vert[-1], dtype=bool)
        inner[first] = False  # the vertex before the first block of each member: 0, 0
        cm = np.cumsum(b.n_tar)
        cf = np.cumsum(b.n_non)
        base_m = np.concatenate(([0], cm))[b.offsets[:-1]]
        base_f = np.concatenate(([0], cf))[b.offsets[:-1]]
        own = b.owner
        n_miss[inner] = cm - base_m[own]
        n_fa[inner] = cf - base_f[own]
    n_fa = b.total_non[b.vertex_owner] - n_fa
    return n_miss, n_fa


def rocch(b: Blocks) -> tuple[F64, F64]:
    """ROCCH vertices ``(pmiss, pfa)`` from ``(0, 1)`` to ``(1, 0)`` (docs/math.md §5.2)."""
    n_miss, n_fa = rocch_counts(b)
    return n_miss / b.total_tar, n_fa / b.total_non


def crossing(x: F64, y: F64) -> float:
    """Value of ``y`` where the polyline through ``(x_b, y_b)`` crosses ``x = y``.

    ``x - y`` must be non-increasing, from ``>= 0`` to ``<= 0`` (docs/math.md §5.4).
    """
    x = np.asarray(x, dtype=np.float64)
    return float(crossing_stack(x, np.asarray(y, dtype=np.float64),
                                np.array([0, x.shape[0]], dtype=np.int64))[0])


def crossing_stack(x: F64, y: F64, offsets: I64) -> F64:
    """:func:`crossing` of every polyline ``offsets[r]:offsets[r + 1]`` of ``x``, ``y``.

    Each polyline has at least one vertex. The same operations as one crossing at a time,
    element by element, so the same bits.
    """
    d = x - y
    first, last = offsets[:-1], offsets[1:] - 1
    nonneg = np.zeros(d.shape[0] + 1, dtype=np.int64)
    np.cumsum(d >= 0, out=nonneg[1:])
    k = nonneg[offsets[1:]] - nonneg[first] - 1  # last vertex with d >= 0, per polyline
    at = first + np.maximum(k, 0)
    nxt = np.minimum(at + 1, last)
    with np.errstate(all="ignore"):
        u = d[at] / (d[at] - d[nxt])
        out: F64 = y[at] + u * (y[nxt] - y[at])
    exact = (k < 0) | (d[at] == 0) | (at == last)
    out[exact] = y[at][exact]
    return out


def rocch_eer(b: Blocks) -> float:
    """ROCCH-EER: where the ROCCH crosses ``pmiss = pfa`` ([BdV11] eq 26)."""
    return float(rocch_eer_stack(BlockStack.of([b]))[0])


def rocch_eer_stack(b: BlockStack) -> F64:
    """:func:`rocch_eer` of every member of a stack (members with targets and non-targets)."""
    _, _, pmiss, pfa = _rates_stack(b)
    return crossing_stack(pfa, pmiss, b.vertices)


def _rates_stack(b: BlockStack) -> tuple[I64, I64, F64, F64]:
    """Miss and false-alarm counts and rates at every member's ROCCH vertices.

    The rates are over each member's own totals.
    """
    n_miss, n_fa = rocch_counts_stack(b)
    vown = b.vertex_owner
    return n_miss, n_fa, n_miss / b.total_tar[vown], n_fa / b.total_non[vown]


def uer(b: Blocks, r: float) -> float:
    """Unit error rate ``UER(r)``: the ROCCH point with ``pfa = r * pmiss`` ([BdV11] eq 27)."""
    pmiss, pfa = rocch(b)
    return crossing(pfa, r * pmiss)


def prbep(b: Blocks) -> float:
    """Precision-recall break-even point as an error count (``#miss = #fa`` on the ROCCH)."""
    return float(prbep_stack(BlockStack.of([b]))[0])


def prbep_stack(b: BlockStack) -> F64:
    """:func:`prbep` of every member of a stack."""
    n_miss, n_fa = rocch_counts_stack(b)
    return crossing_stack(n_fa.astype(np.float64), n_miss.astype(np.float64), b.vertices)


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
    cost, miss, fa = min_dcf_stack(BlockStack.of([b]), p, q)
    return cost[0], miss[0], fa[0]


def min_dcf_stack(b: BlockStack, p: F64, q: F64) -> tuple[F64, I64, I64]:
    """:func:`min_dcf` of every member of a stack (with targets and non-targets): ``(R, K)``."""
    n_miss, n_fa, pmiss, pfa = _rates_stack(b)
    vown = b.vertex_owner
    p = np.atleast_1d(p)
    q = np.atleast_1d(q)
    first = b.vertices[:-1]
    out = np.empty((p.shape[0], b.count))
    idx = np.empty((p.shape[0], b.count), dtype=np.int64)
    where = np.arange(pmiss.shape[0], dtype=np.int64)
    # chunks of operating points (not trials): ~1M costs each, with the masks beside them
    step = max(1, 1_000_000 // max(pmiss.shape[0], 1))
    for i in range(0, p.shape[0], step):
        cost = p[i:i + step, None] * pmiss[None, :] + q[i:i + step, None] * pfa[None, :]
        low = np.minimum.reduceat(cost, first, axis=1) if b.count else cost[:, :0]
        # the first vertex at the minimum, or the first NaN (np.argmin's choice)
        at = np.where((cost == low[:, vown]) | np.isnan(cost), where[None, :], pmiss.shape[0])
        idx[i:i + step] = np.minimum.reduceat(at, first, axis=1) if b.count else at[:, :0]
        out[i:i + step] = low
    return out.T, n_miss[idx].T, n_fa[idx].T
