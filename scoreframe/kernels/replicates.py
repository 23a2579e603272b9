"""Compiled kernels of the bootstrap replicates: weighted sums per trial, PAV per replicate.

numpy and numba only (numba is imported when a kernel is first called: importing this module
costs nothing). :mod:`scoreframe.stats._replicates` re-weights the sorted trials of a range
for every replicate; its compiled loops are here (the draws, the unit codes, the per-trial
sums and the PAV).

:func:`class_sums` is the one per-trial loop: for every trial, the replicate weights are the
product of its units' multiplicities, and three sums take them in the same pass:

* the weight of each *segment* (a run of trials, in sorted order, that PAV treats as one),
  written when the segment ends as one contiguous row of int64, a replicate per column
  (segments are often one or two trials long: a column per segment would cost a scattered
  store per replicate);
* the weighted low and high mantissa pieces of the finite Cllr terms, per *piece* (a run of
  terms with one binary exponent, at most ``max_len`` long, so that every partial sum is an
  integer below ``2**53``);
* the weight of the trials with an infinite cost.

Every product and every partial sum is an integer below ``2**53``, held exactly in float64,
so the result is the same whatever the order of the additions: it equals, bit for bit, the
numpy formulation (gather the multiplicities, multiply, ``np.add.reduceat``; the twin in
``tests/test_replicate_kernels.py``). The trials are the outer loop and the replicates of the
chunk the inner one: one read of each trial's codes and terms serves every replicate, and the
inner loop runs over small contiguous rows (SIMD): one loop over them per trial.

:func:`replicate_blocks` is the PAV of each replicate over its weighted segments in merged
order, all the replicates of a chunk in one call with one work space (eight replicates' weights
gathered into merged order at a time, one cache line per segment): a stack of blocks pooled
while a block's target fraction is not below its right neighbour's, compared as exact integer
cross-products (a non-target segment, of fraction 0, pools with the top at once; a target
segment, of fraction 1, only with a top of targets alone). The isotonic solution is unique,
so these are the blocks of :func:`~scoreframe.kernels.sorted_scores.pav_runs` (SciPy's
isotonic regression, then exact pooling of equal fractions). Each target segment's position
sums are computed as it is pushed, and each block's are then added segment by segment in
order: the same float additions as the numpy formulation. Only O(segments) per replicate, and
no Python per segment.

:func:`unit_codes` numbers a range's units (models, segments...) through a hash table, in
one pass, for the per-unit multiplicities the per-trial loop reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.compiled import compiled_available, jit

__all__ = ["class_sums", "compiled_available", "poisson_draws", "replicate_blocks",
           "unit_codes"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def _sums_body(mults: Any, codes: Any, starts: Any, fin_lo: int, fin_hi: int,
                 piece_starts: Any, low: Any, high: Any, seg: Any, lo: Any, hi: Any,
                 inf: Any) -> None:  # pragma: no cover - compiled; its twin is tested
    n_rows = seg.shape[1]  # seg is (segments, rows): int64, one contiguous row per segment
    n = codes[0].shape[0]
    n_seg = starts.shape[0]
    n_piece = piece_starts.shape[0]
    n_cols = len(mults)
    acc = np.zeros(n_rows)
    acc_lo = np.zeros(n_rows)
    acc_hi = np.zeros(n_rows)
    acc_inf = np.zeros(n_rows)
    w = np.empty(n_rows)
    s = 0
    next_seg = starts[1] if n_seg > 1 else n
    p = -1
    next_piece = fin_lo + piece_starts[0] if n_piece > 0 else n + 1
    for t in range(n):
        if t == next_seg:
            for r in range(n_rows):
                seg[s, r] = np.int64(acc[r])
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
        m0 = mults[0][codes[0][t]]  # this trial's multiplicities, one per row
        m1 = mults[1][codes[1][t]] if n_cols > 1 else m0
        if n_cols > 2:  # three or more columns: the product first
            for r in range(n_rows):
                w[r] = np.float64(m0[r]) * np.float64(m1[r])
            for k in range(2, n_cols):
                mk = mults[k][codes[k][t]]
                for r in range(n_rows):
                    w[r] *= mk[r]
        finite = fin_lo <= t < fin_hi
        a = low[t - fin_lo] if finite else 0.0
        b = high[t - fin_lo] if finite else 0.0
        # one pass over the rows: the weight, the segment's sum, and the two pieces (or the
        # infinite weight); one and two columns without a temporary
        for r in range(n_rows):
            if n_cols == 1:
                wr = np.float64(m0[r])
            elif n_cols == 2:
                wr = np.float64(m0[r]) * np.float64(m1[r])
            else:
                wr = w[r]
            acc[r] += wr
            if finite:
                acc_lo[r] += wr * a
                acc_hi[r] += wr * b
            else:
                acc_inf[r] += wr
    if n_seg > 0:
        for r in range(n_rows):
            seg[s, r] = np.int64(acc[r])
    if p >= 0:
        for r in range(n_rows):
            lo[p, r] = acc_lo[r]
            hi[p, r] = acc_hi[r]
    for r in range(n_rows):
        inf[r] = acc_inf[r]


def _blocks_body(seg_t: Any, seg_n: Any, order: Any, lab: Any, lo: Any, hi: Any
                 ) -> tuple[Any, Any, Any]:  # pragma: no cover - compiled; its twin is tested
    n_rows = seg_t.shape[1]  # seg_t (target segments, rows), seg_n (non-target ones, rows)
    n_t = seg_t.shape[0]
    n_seg = order.shape[0]
    group = 8  # rows gathered at once: one cache line of each segment's weights
    merged = np.empty((n_seg, group), np.int64)  # the group's weights in merged order
    # the stack of blocks (reused by every row): targets, trials, first position, first and
    # last segment (merged index), first target segment (index into t_ps / t_pq)
    b_t = np.empty(n_seg, np.int64)
    b_n = np.empty(n_seg, np.int64)
    b_pos = np.empty(n_seg, np.int64)
    b_first = np.empty(n_seg, np.int64)
    b_last = np.empty(n_seg, np.int64)
    b_tf = np.empty(n_seg, np.int64)
    t_ps = np.empty(n_seg)  # per target segment of non-zero weight: its position sums
    t_pq = np.empty(n_seg)
    cap = max(64, 8 * n_rows)
    out_i = np.empty((3, cap), np.int64)  # n_tar, n_non, start of every block of every row
    out_f = np.empty((4, cap))  # lo, hi, tar_pos_sum, tar_pos_sq
    offsets = np.zeros(n_rows + 1, np.int64)
    total = 0
    for r0 in range(0, n_rows, group):
        g = min(group, n_rows - r0)
        for j in range(n_seg):
            i = order[j]
            if i < n_t:
                for u in range(g):
                    merged[j, u] = seg_t[i, r0 + u]
            else:
                for u in range(g):
                    merged[j, u] = seg_n[i - n_t, r0 + u]
        for u in range(g):
            r = r0 + u
            k = 0
            mt = 0
            pos = 0
            for j in range(n_seg):
                w = merged[j, u]
                if w == 0:
                    continue
                if lab[j]:  # the target positions pos + 1 .. pos + w, summed in closed form
                    wf = float(w)
                    s = float(pos)
                    t_ps[mt] = wf * s + wf * (wf + 1) / 2
                    t_pq[mt] = wf * s * s + s * wf * (wf + 1) + wf * (wf + 1) * (2 * wf + 1) / 6
                    if k > 0 and b_t[k - 1] == b_n[k - 1]:  # onto a block of targets only:
                        b_t[k - 1] += w  # pooled (equal fractions), and nothing below
                        b_n[k - 1] += w  # it can pool (fractions rise strictly)
                        b_last[k - 1] = j
                    else:  # fraction 1 above a lower one: a block of its own
                        b_t[k] = w
                        b_n[k] = w
                        b_pos[k] = pos
                        b_first[k] = j
                        b_last[k] = j
                        b_tf[k] = mt
                        k += 1
                    mt += 1
                elif k == 0:  # the first block
                    b_t[0] = 0
                    b_n[0] = w
                    b_pos[0] = pos
                    b_first[0] = j
                    b_last[0] = j
                    b_tf[0] = mt
                    k = 1
                else:  # fraction 0 is never above the top's: pooled with it, then down
                    b_n[k - 1] += w
                    b_last[k - 1] = j
                    while k > 1 and b_t[k - 2] * b_n[k - 1] >= b_t[k - 1] * b_n[k - 2]:
                        b_t[k - 2] += b_t[k - 1]
                        b_n[k - 2] += b_n[k - 1]
                        b_last[k - 2] = b_last[k - 1]
                        k -= 1
                pos += w
            if total + k > cap:  # grow the outputs
                cap = max(2 * cap, total + k)
                grown_i = np.empty((3, cap), np.int64)
                grown_f = np.empty((4, cap))
                grown_i[:, :total] = out_i[:, :total]
                grown_f[:, :total] = out_f[:, :total]
                out_i = grown_i
                out_f = grown_f
            for b in range(k):
                q_end = b_tf[b + 1] if b + 1 < k else mt
                ps = 0.0  # the block's target segments, added in order
                pq = 0.0
                for q in range(b_tf[b], q_end):
                    ps += t_ps[q]
                    pq += t_pq[q]
                out_i[0, total + b] = b_t[b]
                out_i[1, total + b] = b_n[b] - b_t[b]
                out_i[2, total + b] = b_pos[b]
                out_f[0, total + b] = lo[b_first[b]]
                out_f[1, total + b] = hi[b_last[b]]
                out_f[2, total + b] = ps
                out_f[3, total + b] = pq
            total += k
            offsets[r + 1] = total
    return out_i, out_f, offsets


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


def _codes_body(h: Any, codes: Any, uniq: Any) -> int:  # pragma: no cover - compiled; tested
    n = h.shape[0]
    bits = 10
    size = 1 << bits
    table = np.full(size, -1, np.int64)  # open addressing: the index into uniq, or -1
    golden = np.uint64(0x9E3779B97F4A7C15)
    n_u = 0
    for t in range(n):
        x = h[t]
        slot = np.int64((x * golden) >> np.uint64(64 - bits))  # the product's top bits
        while table[slot] != -1 and uniq[table[slot]] != x:
            slot = (slot + 1) & (size - 1)
        if table[slot] == -1:
            uniq[n_u] = x
            table[slot] = n_u
            n_u += 1
            if 2 * n_u > size:  # half full: twice the size, every unit placed again
                bits += 1
                size = 1 << bits
                table = np.full(size, -1, np.int64)
                for q in range(n_u):
                    y = uniq[q]
                    sl = np.int64((y * golden) >> np.uint64(64 - bits))
                    while table[sl] != -1:
                        sl = (sl + 1) & (size - 1)
                    table[sl] = q
                codes[t] = n_u - 1
                continue
        codes[t] = table[slot]
    return n_u


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
        ``(segments, replicates)`` (one contiguous row per segment, as the loop writes it),
        ``(replicates, pieces)`` twice, and ``(replicates,)``, all int64 and exact.

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
    ([[1, 5], [0, 3]], [[1], [8]], [0, 0])
    """
    n_rows = mults[0].shape[1]
    seg = np.zeros((starts.shape[0], n_rows), np.int64)
    lo = np.zeros((piece_starts.shape[0], n_rows))
    hi = np.zeros((piece_starts.shape[0], n_rows))
    inf = np.zeros(n_rows)
    if codes[0].shape[0]:
        small = all(c.dtype == np.int32 for c in codes)  # one tuple type: int32 or int64
        jit(_sums_body)(tuple(np.ascontiguousarray(m, dtype=np.uint8) for m in mults),
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
    jit(_draws_body)(np.ascontiguousarray(unit_hashes, np.uint64),
                       np.ascontiguousarray(row_keys, np.uint64), table, thresholds, out,
                       by_unit)
    return out


def replicate_blocks(w_t: I64, w_n: I64, order: I64, lab: NDArray[np.bool_], lo: F64,
                     hi: F64) -> list[tuple[I64, I64, I64, F64, F64, F64, F64]]:
    """PAV blocks of replicates from their segment weights (the fields of ``Blocks``).

    One compiled call for all the rows: the stack and the per-segment work space are
    allocated once, not per replicate.

    Parameters
    ----------
    w_t, w_n
        The weight of every target and non-target segment (int64), one column per
        replicate: ``(target segments, replicates)`` and ``(non-target segments,
        replicates)``, as :func:`class_sums` gives them.
    order
        The segments in merged score order, as indices into ``concat(w_t, w_n)``.
    lab, lo, hi
        In merged order: each segment's label (target), lowest and highest score.

    Returns
    -------
    list of tuple
        Per replicate, ``(n_tar, n_non, start, lo, hi, tar_pos_sum, tar_pos_sq)`` per block,
        as in :class:`~scoreframe.kernels.sorted_scores.Blocks` (views of shared arrays);
        segments of zero weight vanish.

    See Also
    --------
    class_sums : The segment weights.
    scoreframe.kernels.sorted_scores.pav_runs : The same pooling, of the point statistics.

    Examples
    --------
    >>> out = replicate_blocks(np.array([[1], [2]]), np.array([[2], [1]]),
    ...                        np.array([2, 0, 3, 1]), np.array([False, True, False, True]),
    ...                        np.arange(4.0), np.arange(4.0))
    >>> [a.tolist() for a in out[0][:3]]
    [[0, 1, 2], [2, 1, 0], [0, 2, 4]]
    """
    w_t = np.ascontiguousarray(w_t, np.int64)
    w_n = np.ascontiguousarray(w_n, np.int64)
    if w_t.ndim != 2 or w_n.ndim != 2 or w_t.shape[1] != w_n.shape[1]:
        raise ValueError(f"w_t {w_t.shape} and w_n {w_n.shape}: expected (segments, replicates) "
                         "with the same replicates")
    out_i, out_f, offsets = jit(_blocks_body)(
        w_t, w_n, np.ascontiguousarray(order, np.int64), np.ascontiguousarray(lab, np.bool_),
        np.ascontiguousarray(lo, np.float64), np.ascontiguousarray(hi, np.float64))
    cut = offsets.tolist()
    return [(out_i[0, a:b], out_i[1, a:b], out_i[2, a:b], out_f[0, a:b], out_f[1, a:b],
             out_f[2, a:b], out_f[3, a:b]) for a, b in zip(cut[:-1], cut[1:], strict=True)]


def unit_codes(hashes: NDArray[np.uint64]) -> tuple[NDArray[np.int32] | I64, NDArray[np.uint64]]:
    """The distinct unit hashes, in order of first appearance, and each trial's index into them.

    One pass through a hash table (open addressing, grown as the units come): no sort. The
    order of the units does not matter to the replicates (a unit's multiplicities depend on
    its hash alone); ``uniq[codes]`` gives the hashes back. Without numba, ``np.unique``
    (the units sorted).

    Parameters
    ----------
    hashes
        Each trial's unit hash.

    Returns
    -------
    codes, uniq
        int32 codes (int64 from 2**31 units on) and the distinct hashes.

    See Also
    --------
    class_sums : Reads the codes.

    Examples
    --------
    >>> codes, uniq = unit_codes(np.array([7, 3, 7, 9], dtype=np.uint64))
    >>> codes.tolist(), uniq.tolist()
    ([0, 1, 0, 2], [7, 3, 9])
    """
    h = np.ascontiguousarray(hashes, np.uint64)
    if not compiled_available():  # the same numbering up to the order of the units
        uniq, inv = np.unique(h, return_inverse=True)
        small = uniq.shape[0] < 2**31
        return (inv.astype(np.int32) if small else inv.astype(np.int64)), uniq
    codes = np.empty(h.shape[0], np.int64)
    uniq = np.empty(h.shape[0], np.uint64)
    n_u = int(jit(_codes_body)(h, codes, uniq))
    return (codes.astype(np.int32) if n_u < 2**31 else codes), uniq[:n_u].copy()
