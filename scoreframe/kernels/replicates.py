"""Compiled kernels of the bootstrap replicates: weighted sums per trial, PAV per replicate.

numpy and numba only (numba is imported when a kernel is first called: importing this module
costs nothing). :mod:`scoreframe.stats._replicates` re-weights the sorted trials of a range
for every replicate; its two loops are here.

:func:`class_sums` is the one per-trial loop: for every trial, the replicate weights are the
product of its units' multiplicities, and three sums take them in the same pass:

* the weight of each *segment* (a run of trials, in sorted order, that PAV treats as one),
  written as an int64 per replicate and segment when the segment ends;
* the weighted low and high mantissa pieces of the finite Cllr terms, per *piece* (a run of
  terms with one binary exponent, at most ``max_len`` long, so that every partial sum is an
  integer below ``2**53``);
* the weight of the trials with an infinite cost.

Every product and every partial sum is an integer below ``2**53``, held exactly in float64,
so the result is the same whatever the order of the additions: it equals, bit for bit, the
numpy formulation (gather the multiplicities, multiply, ``np.add.reduceat``; the twin in
``tests/test_replicate_kernels.py``). The trials are the outer loop and the replicates of the
chunk the inner one: one read of each trial's codes and terms serves every replicate, and the
inner loop runs over small contiguous rows (SIMD).

:func:`replicate_blocks` is the PAV of one replicate over its weighted segments in merged
order: a stack of blocks pooled while a block's target fraction is not below its right
neighbour's, compared as exact integer cross-products. The isotonic solution is unique, so
these are the blocks of :func:`~scoreframe.kernels.sorted_scores.pav_runs` (SciPy's isotonic
regression, then exact pooling of equal fractions). The first pass keeps the segments of
non-zero weight (weight, position, label) in order; the position sums are then added segment
by segment in order from that list, the same float additions as before. Only O(segments)
per replicate, and no Python per segment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["class_sums", "compiled_available", "poisson_draws", "replicate_blocks"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def _sums_body(mults: Any, codes: Any, starts: Any, fin_lo: int, fin_hi: int,
                 piece_starts: Any, low: Any, high: Any, seg: Any, lo: Any, hi: Any,
                 inf: Any) -> None:  # pragma: no cover - compiled; its twin is tested
    n_rows = seg.shape[0]  # seg is (rows, segments): int64, written once per segment
    n = codes[0].shape[0]
    n_seg = starts.shape[0]
    n_piece = piece_starts.shape[0]
    w = np.empty(n_rows)
    acc = np.zeros(n_rows)
    acc_lo = np.zeros(n_rows)
    acc_hi = np.zeros(n_rows)
    acc_inf = np.zeros(n_rows)
    s = 0
    next_seg = starts[1] if n_seg > 1 else n
    p = -1
    next_piece = fin_lo + piece_starts[0] if n_piece > 0 else n + 1
    for t in range(n):
        if t == next_seg:
            for r in range(n_rows):
                seg[r, s] = np.int64(acc[r])
                acc[r] = 0.0
            s += 1
            next_seg = starts[s + 1] if s + 1 < n_seg else n
        if t == next_piece:
            if p >= 0:
                for r in range(n_rows):
                    lo[p, r] = acc_lo[r]
                    hi[p, r] = acc_hi[r]
                    acc_lo[r] = 0.0
                    acc_hi[r] = 0.0
            p += 1
            next_piece = fin_lo + piece_starts[p + 1] if p + 1 < n_piece else n + 1
        m = mults[0]
        c = codes[0][t]
        for r in range(n_rows):
            w[r] = m[c, r]
        for k in range(1, len(mults)):
            m = mults[k]
            c = codes[k][t]
            for r in range(n_rows):
                w[r] *= m[c, r]
        for r in range(n_rows):
            acc[r] += w[r]
        if fin_lo <= t < fin_hi:
            a = low[t - fin_lo]
            b = high[t - fin_lo]
            for r in range(n_rows):
                acc_lo[r] += w[r] * a
                acc_hi[r] += w[r] * b
        else:
            for r in range(n_rows):
                acc_inf[r] += w[r]
    if n_seg > 0:
        for r in range(n_rows):
            seg[r, s] = np.int64(acc[r])
    if p >= 0:
        for r in range(n_rows):
            lo[p, r] = acc_lo[r]
            hi[p, r] = acc_hi[r]
    for r in range(n_rows):
        inf[r] = acc_inf[r]


def _blocks_body(w_t: Any, w_n: Any, order: Any, lab: Any, lo: Any, hi: Any
                 ) -> tuple[Any, ...]:  # pragma: no cover - compiled; its twin is tested
    n_t = w_t.shape[0]
    n_seg = order.shape[0]
    b_t = np.empty(n_seg, np.int64)  # the stack of blocks: targets, trials, first/last segment
    b_n = np.empty(n_seg, np.int64)
    b_first = np.empty(n_seg, np.int64)  # (indices into the segments of non-zero weight)
    b_last = np.empty(n_seg, np.int64)
    c_w = np.empty(n_seg, np.int64)  # the segments of non-zero weight, in merged order:
    c_pos = np.empty(n_seg, np.int64)  # weight, position of the first trial, label, index
    c_lab = np.empty(n_seg, np.bool_)
    c_j = np.empty(n_seg, np.int64)
    k = 0
    m = 0
    pos = 0
    for j in range(n_seg):
        i = order[j]
        w = w_t[i] if i < n_t else w_n[i - n_t]
        if w == 0:
            continue
        c_w[m] = w
        c_pos[m] = pos
        c_lab[m] = lab[j]
        c_j[m] = j
        pos += w
        b_t[k] = w if lab[j] else 0
        b_n[k] = w
        b_first[k] = m
        b_last[k] = m
        m += 1
        k += 1
        while k > 1 and b_t[k - 2] * b_n[k - 1] >= b_t[k - 1] * b_n[k - 2]:
            b_t[k - 2] += b_t[k - 1]
            b_n[k - 2] += b_n[k - 1]
            b_last[k - 2] = b_last[k - 1]
            k -= 1
    t_out = b_t[:k].copy()
    n_out = b_n[:k].copy()
    start = np.empty(k, np.int64)
    lo_out = np.empty(k)
    hi_out = np.empty(k)
    psum = np.zeros(k)
    psq = np.zeros(k)
    for b in range(k):
        start[b] = c_pos[b_first[b]]
        lo_out[b] = lo[c_j[b_first[b]]]
        hi_out[b] = hi[c_j[b_last[b]]]
        for q in range(b_first[b], b_last[b] + 1):
            if c_lab[q]:  # the target positions s + 1 .. s + w, summed in closed form
                wf = float(c_w[q])
                s = float(c_pos[q])
                psum[b] += wf * s + wf * (wf + 1) / 2
                psq[b] += wf * s * s + s * wf * (wf + 1) + wf * (wf + 1) * (2 * wf + 1) / 6
    return t_out, n_out - t_out, start, lo_out, hi_out, psum, psq


def _draws_body(h: Any, rk: Any, table: Any, thresholds: Any, out: Any, by_unit: bool
                ) -> None:  # pragma: no cover - compiled; its twin is tested
    golden = np.uint64(0x9E3779B97F4A7C15)
    m1 = np.uint64(0xBF58476D1CE4E5B9)
    m2 = np.uint64(0x94D049BB133111EB)
    s30, s27, s31, cell = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(48)
    n_r, n_u = rk.shape[0], h.shape[0]
    for a in range(n_u if by_unit else n_r):  # the outer loop follows the output's rows
        for b in range(n_r if by_unit else n_u):
            u, r = (a, b) if by_unit else (b, a)
            z = (h[u] ^ rk[r]) + golden  # splitmix64, wrapping
            z = (z ^ (z >> s30)) * m1
            z = (z ^ (z >> s27)) * m2
            z = z ^ (z >> s31)
            k = table[z >> cell]
            if k == 255:  # a cell that straddles a threshold: count the thresholds below
                k = 0
                while k < thresholds.shape[0] and thresholds[k] <= z:
                    k += 1
            out[a, b] = k


@cache
def compiled_available() -> bool:
    """True when numba imports.

    numba is a dependency; without it the replicates take numpy passes, with the same results.

    >>> isinstance(compiled_available(), bool)
    True
    """
    try:
        import numba  # noqa: F401, PLC0415 - imported when replicates first run
    except ImportError:
        return False
    return True


@cache
def _compiled(name: str) -> Callable[..., Any]:
    import numba  # noqa: PLC0415 - a second of JIT set-up, paid only when replicates run

    body: Any = {"sums": _sums_body, "blocks": _blocks_body, "draws": _draws_body}[name]
    return numba.njit(nogil=True, cache=True, error_model="numpy")(body)


def class_sums(mults: Sequence[NDArray[np.uint8]], codes: Sequence[NDArray[np.integer]],
               starts: I64, fin: slice,
               piece_starts: I64, low: F64, high: F64
               ) -> tuple[I64, I64, I64, I64]:
    """Segment weights, piece sums of ``low`` and ``high``, and the infinite weight.

    Parameters
    ----------
    mults
        Per unit column, the multiplicities ``(units, replicates)`` as uint8, one row per
        unit (with trial-level resampling the units are the trials: one byte per trial and
        replicate).
    codes
        Per unit column, the unit (row of ``mults``) of every trial, ``(n,)`` integers.
    starts
        First trial of each segment (ascending, ``starts[0] == 0`` when ``n > 0``).
    fin
        The trials with a finite cost (the others count in the infinite weight).
    piece_starts
        First term of each piece, relative to ``fin.start``.
    low, high
        The mantissa pieces of the finite terms (``fin.stop - fin.start`` each).

    Returns
    -------
    seg, lo, hi, inf
        ``(replicates, segments)``, ``(replicates, pieces)`` twice, and ``(replicates,)``,
        all int64 and exact.

    See Also
    --------
    replicate_blocks : The PAV of each replicate over these segment weights.

    Examples
    --------
    >>> m = [np.array([[1, 2], [0, 3]], dtype=np.uint8)]  # 2 units, 2 replicates
    >>> codes = [np.array([0, 1, 1])]
    >>> seg, lo, hi, inf = class_sums(m, codes, np.array([0, 2]), slice(0, 3),
    ...                               np.array([0]), np.ones(3), np.zeros(3))
    >>> seg.tolist(), lo.tolist(), inf.tolist()
    ([[1, 0], [5, 3]], [[1], [8]], [0, 0])
    """
    n_rows = mults[0].shape[1]
    seg = np.zeros((n_rows, starts.shape[0]), np.int64)
    lo = np.zeros((piece_starts.shape[0], n_rows))
    hi = np.zeros((piece_starts.shape[0], n_rows))
    inf = np.zeros(n_rows)
    if codes[0].shape[0]:
        small = all(c.dtype == np.int32 for c in codes)  # one tuple type: int32 or int64
        _compiled("sums")(tuple(np.ascontiguousarray(m, dtype=np.uint8) for m in mults),
                    tuple(np.ascontiguousarray(c, dtype=np.int32 if small else np.int64)
                          for c in codes),
                    starts.astype(np.int64), int(fin.start), int(fin.stop),
                    piece_starts.astype(np.int64), np.ascontiguousarray(low, np.float64),
                    np.ascontiguousarray(high, np.float64), seg, lo, hi, inf)
    return (seg, lo.T.astype(np.int64, order="C"), hi.T.astype(np.int64, order="C"),
            inf.astype(np.int64))


def poisson_draws(unit_hashes: NDArray[np.uint64], row_keys: NDArray[np.uint64],
                  table: NDArray[np.uint8], thresholds: NDArray[np.uint64], *,
                  by_unit: bool = False) -> NDArray[np.uint8]:
    """Poisson(1) multiplicities ``(rows, units)`` from the units' hashes and the rows' keys.

    ``by_unit=True`` returns the same integers as ``(units, rows)`` (what the per-trial loop
    of :func:`class_sums` reads), written in that order rather than transposed.

    The compiled form of :func:`scoreframe.kernels.bootstrap.poisson_multiplicities`: for
    every row key and unit, ``splitmix64(hash ^ key)`` (wrapping uint64 arithmetic) looked up
    in ``table`` (indexed by the top 16 bits; 255 marks a cell that straddles a threshold,
    resolved by counting the ``thresholds`` at or below the draw). The same integers as the
    numpy passes, in one loop.

    See Also
    --------
    scoreframe.kernels.bootstrap.poisson_multiplicities : The definition; calls this.

    Examples
    --------
    >>> from scoreframe.kernels import bootstrap as kb
    >>> h = np.arange(4, dtype=np.uint64)
    >>> keys = kb.splitmix64(np.arange(3, dtype=np.uint64))
    >>> poisson_draws(h, keys, kb._TABLE, kb._THRESHOLDS).shape
    (3, 4)
    """
    shape = (row_keys.shape[0], unit_hashes.shape[0])
    out = np.empty(shape[::-1] if by_unit else shape, dtype=np.uint8)
    _compiled("draws")(np.ascontiguousarray(unit_hashes, np.uint64),
                       np.ascontiguousarray(row_keys, np.uint64), table, thresholds, out,
                       by_unit)
    return out


def replicate_blocks(w_t: I64, w_n: I64, order: I64, lab: NDArray[np.bool_], lo: F64,
                     hi: F64) -> tuple[I64, I64, I64, F64, F64, F64, F64]:
    """PAV blocks of one replicate from its segment weights (the fields of ``Blocks``).

    Parameters
    ----------
    w_t, w_n
        The replicate's weight of every target and non-target segment (int64).
    order
        The segments in merged score order, as indices into ``concat(w_t, w_n)``.
    lab, lo, hi
        In merged order: each segment's label (target), lowest and highest score.

    Returns
    -------
    n_tar, n_non, start, lo, hi, tar_pos_sum, tar_pos_sq
        Per block, as in :class:`~scoreframe.kernels.sorted_scores.Blocks`; segments of zero
        weight vanish.

    See Also
    --------
    class_sums : The segment weights.
    scoreframe.kernels.sorted_scores.pav_runs : The same pooling, of the point statistics.

    Examples
    --------
    >>> out = replicate_blocks(np.array([1, 2]), np.array([2, 1]), np.array([2, 0, 3, 1]),
    ...                        np.array([False, True, False, True]), np.arange(4.0),
    ...                        np.arange(4.0))
    >>> [a.tolist() for a in out[:3]]
    [[0, 1, 2], [2, 1, 0], [0, 2, 4]]
    """
    out: tuple[I64, I64, I64, F64, F64, F64, F64] = _compiled("blocks")(
        np.ascontiguousarray(w_t, np.int64), np.ascontiguousarray(w_n, np.int64),
        np.ascontiguousarray(order, np.int64), np.ascontiguousarray(lab, np.bool_),
        np.ascontiguousarray(lo, np.float64), np.ascontiguousarray(hi, np.float64))
    return out
