"""PAV calibration map: score -> llr knots from PAV blocks (docs/math.md section 8; [BdV11] 2.7.1).

numpy only (the blocks come from :mod:`scoreframe.kernels.sorted_scores`). Two variants:

``bosaris``
    A dummy target at ``-1e6`` and a dummy non-target at ``+1e6`` are added before PAV, so every
    block llr is finite; ``llr = logit(p_block) - logit((T+1)/(T+N+2))``. Each block gives two
    knots, ``(lowest score, llr - eps)`` and ``(highest score, llr + eps)``; the map is piecewise
    linear through the knots (flat inside a block when ``eps = 0``, a ramp across the gap between
    blocks) and constant beyond the end knots (``-1e6``, ``+1e6``: scoreframe clamps where BOSARIS
    errs).
``raw``
    No dummies: ``llr = logit(p_block) - logit(T/(T+N))``, so the lowest block may be ``-inf`` and
    the highest ``+inf``. Scores inside or beyond an infinite block map to that infinity; the gap
    next to an infinite block takes the finite neighbour's value (an unseen score is never given
    infinite evidence; between a ``-inf`` and a ``+inf`` block it is 0); beyond the ends the map
    is constant. Blocks of infinite *scores* (knots at ``+-inf``): a gap with one infinite end
    takes its finite end's value, a gap from ``-inf`` to ``+inf`` the mean of its ends.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoreframe.kernels.sorted_scores import Blocks, SortedScores, concat_blocks

__all__ = ["DUMMY_SCORE", "apply_pav_map", "pav_map"]

F64 = NDArray[np.float64]

#: Score of BOSARIS' two dummy trials.
DUMMY_SCORE = 1e6


def pav_map(s: SortedScores | Blocks, *, eps: float = 0.0, variant: str = "bosaris"
            ) -> tuple[F64, F64]:
    """Knots ``(scores, llrs)`` of the PAV calibration map trained on sorted scores or blocks.

    From :class:`Blocks` (the statistics layer's PAV blocks, possibly merged out of core) the
    map is the same: BOSARIS' two dummy trials are added as one-trial blocks merged exactly
    at both ends.

    Examples
    --------
    >>> from scoreframe.kernels.sorted_scores import sort_scores
    >>> s = sort_scores([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4])
    >>> x, y = pav_map(s)
    >>> x.tolist()
    [-1000000.0, -1.0, 1.0, 4.0, 5.0, 1000000.0]
    >>> [round(v, 6) for v in y.tolist()]
    [-0.538997, -0.538997, 0.154151, 0.154151, 0.847298, 0.847298]
    >>> bool(np.array_equal(pav_map(s.blocks)[1], y))
    True
    """
    if variant not in ("bosaris", "raw"):
        raise ValueError(f"unknown PAV map variant {variant!r}: expected 'bosaris' or 'raw'")
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    b = s.blocks if isinstance(s, SortedScores) else s
    n_tar, n_non = b.total_tar, b.total_non
    if variant == "bosaris":
        lo = float(b.lo[0]) if b.lo.shape[0] else 0.0
        hi = float(b.hi[-1]) if b.hi.shape[0] else 0.0
        if lo < -DUMMY_SCORE or hi >= DUMMY_SCORE:
            raise ValueError(f"PAV calibration ('bosaris' variant) needs training scores in "
                             f"[-1e6, 1e6), got range [{lo:g}, {hi:g}]; use variant='raw' or "
                             f"rescale the scores")
        b = concat_blocks(concat_blocks(_one(True, -DUMMY_SCORE), b), _one(False, DUMMY_SCORE))
        prior_log_odds = np.log(n_tar + 1.0) - np.log(n_non + 1.0)
    else:
        if n_tar == 0 or n_non == 0:
            raise ValueError(f"the raw PAV map needs targets and non-targets, got {n_tar} and "
                             f"{n_non}")
        prior_log_odds = np.log(float(n_tar)) - np.log(float(n_non))
    with np.errstate(divide="ignore"):
        llr = np.log(b.n_tar.astype(np.float64)) - np.log(b.n_non.astype(np.float64)) \
            - prior_log_odds
    x = np.empty(2 * llr.shape[0])
    y = np.empty_like(x)
    x[0::2], x[1::2] = b.lo, b.hi
    y[0::2], y[1::2] = llr - eps, llr + eps
    return x, y


def _one(target: bool, score: float) -> Blocks:
    """A block of one trial (BOSARIS' dummy target at -1e6 or non-target at +1e6)."""
    one, zero = np.array([1], np.int64), np.array([0], np.int64)
    at = np.array([score])
    return Blocks(one if target else zero, zero if target else one, zero, at, at,
                  np.array([1.0 if target else 0.0]), np.array([1.0 if target else 0.0]))


def apply_pav_map(scores: ArrayLike, x: F64, y: F64) -> F64:
    """Evaluate the piecewise-linear map through the knots ``(x, y)`` (see the module notes).

    >>> import numpy as np
    >>> x = np.array([-1e6, -1.0, 1.0, 4.0, 5.0, 1e6]); y = np.array([-1.0, -1, 0, 0, 1, 1])
    >>> apply_pav_map([-10.0, 0.0, 4.5, 2e6], x, y).tolist()
    [-1.0, -0.5, 0.5, 1.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(y)
    if finite.all() and np.isfinite(x).all():
        return np.interp(s, x, y)
    idx = np.flatnonzero(finite)
    if idx.size:
        fy = y.copy()
        fy[: idx[0]] = y[idx[0]]
        fy[idx[-1] + 1:] = y[idx[-1]]
    else:  # two infinite blocks only: the gap between them gets llr 0
        fy = np.zeros_like(y)
    out = _interp_infinite_knots(s, x, fy)
    if not finite[0]:  # lowest block infinite (-inf): its scores and below
        out[s <= x[1]] = y[0]
    if not finite[-1]:
        out[s >= x[-2]] = y[-1]
    return out


def _interp_infinite_knots(s: F64, x: F64, y: F64) -> F64:
    """``np.interp`` when knot scores may be ``+-inf`` (blocks of infinite training scores).

    A gap with one infinite end takes its finite end's value (the limit of the ramp); a gap
    from ``-inf`` to ``+inf`` takes the mean of its two ends; scores at ``+-inf`` take the
    value of the knot there.
    """
    fin = np.isfinite(x)
    if fin.all():
        return np.interp(s, x, y)
    if fin.any():
        out = np.interp(s, x[fin], y[fin])
    else:
        low = int(np.count_nonzero(x == -np.inf)) - 1  # last knot at -inf
        mid = 0.5 * (y[low] + y[low + 1]) if 0 <= low < x.shape[0] - 1 else y[0]
        out = np.full(s.shape, mid, dtype=np.float64)
    if x[0] == -np.inf:
        out[s == -np.inf] = y[0]
    if x[-1] == np.inf:
        out[s == np.inf] = y[-1]
    return out
