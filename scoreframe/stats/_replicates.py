"""Replicate statistics: the :class:`ScoreStats` of every bootstrap replicate of one range.

numpy/scipy only. A replicate re-weights the trials of a range (integer multiplicities from
:class:`~scoreframe.stats._resampling.Replicates`); its statistics are exactly those
:func:`~scoreframe.stats.summary.reduce_sorted` would give for the range with every trial
repeated as often as its weight, computed without repeating anything:

* the sorted order is fixed, so the PAV inputs of a replicate are the weighted counts of the
  range's *segments* (runs of equal labels in the merged order, also cut at the request's
  thresholds): one ``np.add.reduceat`` of the weights per replicate. PAV then runs on the
  weighted runs with the same kernel as the point statistics
  (:func:`~scoreframe.kernels.sorted_scores.pav_runs`), and the blocks merge across ranges
  with the same :func:`~scoreframe.stats.summary.merge`;
* the Cllr sums are exact, in the fixed point of
  :func:`~scoreframe.kernels.elementary.exact_sum`: the finite cost terms of a class are
  monotone in the sorted order, so runs of one binary exponent are contiguous; each term's
  mantissa is split into a low and a high piece (26 and 27 bits). A weight times a piece is an
  integer below ``2**36`` (two resampling columns), and each run is summed in pieces of at
  most ``2**17`` trials, so every partial sum is an integer below ``2**53``: exact in float64,
  whatever the order, and turned into exact Python integers per run;
* error counts at the thresholds are cumulative sums of the segment weights (integers).

A replicate therefore costs, per trial, a gather and an integer multiply per resampling
column, one add for the segments and two multiply-adds for Cllr, plus O(segments). No BLAS
and no float sum whose value depends on an order: results do not depend on chunking,
threads or engines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import isotonic_regression

from scoreframe.kernels.elementary import EXACT_SCALE, softplus
from scoreframe.kernels.sorted_scores import Blocks, SortedScores
from scoreframe.stats._replicate_biometric import ReplicateContext, replicate_verification
from scoreframe.stats._resampling import Replicates, SortedUnits
from scoreframe.stats.summary import ScoreStats, Verification

__all__ = ["CHUNK_BYTES", "merge_units", "replicate_stats", "with_replicates"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
#: Bytes of one chunk's float64 temporaries (replicates x trials): cache-sized.
CHUNK_BYTES = 16 * 2**20
_LOW = 26  # bits of the low mantissa piece (the high piece has the other 27)


@dataclass(frozen=True, eq=False)
class _Class:
    """The fixed structure of one class (targets or non-targets) of a range."""

    n: int
    starts: I64  # first trial of each segment
    bounds: I64  # ``starts`` and ``n``: the segment boundaries
    pos: I64  # merged position of each segment's first trial
    lo: F64
    hi: F64
    cut_seg: I64  # per threshold: segments entirely below it
    codes: list[NDArray[np.integer] | None]  # per unit column: unit code of each trial
    hashes: list[U64]  # per unit column: the units' hashes (``codes`` index them)
    inf: slice  # trials with an infinite cost
    fin: slice  # trials with a finite cost
    piece_starts: I64  # first finite term of each piece (relative to ``fin``)
    piece_ends: I64  # end of each piece (relative to ``fin``)
    shifts: list[int]  # per piece: the binary shift of its exponent (units of 2**-1126)
    pieces: F64  # ``(finite terms, 2)``: the low and the high mantissa piece of each term


def _unit_codes(tar: Sequence[U64], non: Sequence[U64], *, trial: bool
                ) -> tuple[list[U64], list[U64], list[NDArray[np.integer] | None],
                           list[NDArray[np.integer] | None]]:
    """Per unit column: the units of each class and each trial's code among them.

    With unit columns, both classes share one sorted table of units (each unit's
    multiplicities are drawn once per replicate); with ``trial`` each trial is its own unit.
    """
    if trial:
        return ([np.ascontiguousarray(h, dtype=np.uint64) for h in tar],
                [np.ascontiguousarray(h, dtype=np.uint64) for h in non],
                [None] * len(tar), [None] * len(non))
    uniq: list[U64] = []
    c_t: list[NDArray[np.integer] | None] = []
    c_n: list[NDArray[np.integer] | None] = []
    for ht, hn in zip(tar, non, strict=True):
        u, inv = np.unique(np.concatenate((ht, hn)), return_inverse=True)
        inv = inv.astype(np.int32 if u.shape[0] < 2**31 else np.int64)
        uniq.append(u)
        c_t.append(inv[:ht.shape[0]])
        c_n.append(inv[ht.shape[0]:])
    return uniq, uniq, c_t, c_n


def _class(x: F64, other: F64, hashes: list[U64], codes: list[NDArray[np.integer] | None],
           thr: F64, *, target: bool, max_len: int) -> _Class:
    n = x.shape[0]
    # segments: runs of this class with no trial of the other class between (ties: targets
    # first), cut where a threshold falls
    below = np.searchsorted(other, x, side="left" if target else "right").astype(np.int64)
    cuts = np.searchsorted(x, thr, side="left").astype(np.int64)
    new = np.zeros(n, dtype=bool)
    if n:
        new[0] = True
        new[1:] = below[1:] != below[:-1]
        inner = cuts[(cuts > 0) & (cuts < n)]
        new[inner] = True
    starts = np.flatnonzero(new).astype(np.int64)
    ends = np.append(starts[1:], n)
    with np.errstate(over="ignore"):
        terms = softplus(-x) if target else softplus(x)
    n_inf = int(np.searchsorted(x, -np.inf, side="right")) if target else \
        n - int(np.searchsorted(x, np.inf, side="left"))
    fin = slice(n_inf, n) if target else slice(0, n - n_inf)
    inf = slice(0, n_inf) if target else slice(n - n_inf, n)
    bits = np.ascontiguousarray(terms[fin]).view(np.int64)
    field = bits >> 52  # non-negative terms: the sign bit is 0
    mant = bits & ((1 << 52) - 1)
    mant |= (field > 0).astype(np.int64) << 52
    pieces = np.empty((bits.shape[0], 2))
    pieces[:, 0] = mant & ((1 << _LOW) - 1)  # low mantissa piece
    pieces[:, 1] = mant >> _LOW  # high piece
    piece_starts: list[int] = []
    shifts: list[int] = []
    if bits.shape[0]:
        change = np.flatnonzero(field[1:] != field[:-1]) + 1  # monotone terms: runs
        edges = np.concatenate(([0], change, [bits.shape[0]]))
        for a, e in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
            for s in range(a, e, max_len):
                piece_starts.append(s)
                shifts.append(max(int(field[a]), 1) - 1075 + EXACT_SCALE)
    ps = np.array(piece_starts, dtype=np.int64)
    return _Class(n, starts, np.append(starts, n).astype(np.int64),
                  starts + below[starts] if n else starts,
                  x[starts], x[ends - 1] if n else x[:0],
                  np.searchsorted(starts, cuts, side="left").astype(np.int64)
                  if n else np.zeros(thr.shape[0], np.int64),
                  codes, hashes, inf, fin, ps, np.append(ps[1:], bits.shape[0]).astype(np.int64),
                  shifts, pieces)


@dataclass(frozen=True, eq=False)
class _Work:
    """Chunk-sized buffers of one class, reused by every chunk.

    Fresh arrays of this size are new pages, and faulting them in costs as much as the
    arithmetic.
    """

    gather: list[NDArray[np.uint8]]  # per unit column: the gathered multiplicities
    w: I64  # trial weights
    run: I64  # running sum of the weights (one more element)
    wf: F64  # the weights of the finite-cost trials, as floats

    @staticmethod
    def of(c: _Class, rows: int) -> _Work:
        return _Work([np.empty((rows, c.n), np.uint8) for _ in c.codes],
                     np.empty((rows, c.n), np.int64), np.empty(rows * c.n + 1, np.int64),
                     np.empty((rows, c.fin.stop - c.fin.start)))


def _weights(c: _Class, mult: Sequence[NDArray[np.uint8]], work: _Work) -> I64:
    """Trial weights ``(rows, n)``: the product of the trial's units' multiplicities.

    ``mult[k]`` holds the multiplicities ``(rows, units)`` of unit column ``k``; they are
    gathered as bytes (the cheapest gather) and multiplied into int64.
    """
    nr = mult[0].shape[0]
    g = [m if codes is None else np.take(m, codes, axis=1, out=buf[:nr], mode="clip")
         for codes, m, buf in zip(c.codes, mult, work.gather, strict=True)]
    w = work.w[:nr]
    if len(g) == 1:
        np.copyto(w, g[0])
    else:
        np.multiply(g[0], g[1], out=w, dtype=np.int64)
    for x in g[2:]:
        np.multiply(w, x, out=w)
    return w


def _sums(c: _Class, w: I64, work: _Work) -> tuple[I64, list[int], I64]:
    """Cumulative weights at the segment bounds, exact cost sums and infinite weight.

    One running integer sum over the whole ``(rows, n)`` block (below ``2**53``: the caller
    bounds the rows), read at each row's segment bounds. Each cost piece is a float64 matrix
    product of integers whose every partial sum is an integer below ``2**53`` (``max_len``):
    exact in any summation order (BLAS blocking, threads).
    """
    b = w.shape[0]
    run = work.run[:w.size + 1]
    run[0] = 0
    np.cumsum(w.reshape(-1), out=run[1:])
    at = run[(np.arange(b, dtype=np.int64) * c.n)[:, None] + c.bounds[None, :]]
    cum = at - at[:, :1]  # (b, segments + 1), starting at 0
    total = [0] * b
    if c.piece_starts.shape[0]:
        wf = work.wf[:b]
        np.copyto(wf, w[:, c.fin])
        lh = np.empty((b, c.piece_starts.shape[0], 2))
        for j, (a, e) in enumerate(zip(c.piece_starts.tolist(), c.piece_ends.tolist(),
                                       strict=True)):
            np.matmul(wf[:, a:e], c.pieces[a:e], out=lh[:, j])
        lo = lh[:, :, 0].astype(np.int64)
        hi = lh[:, :, 1].astype(np.int64)
        exact = (hi.astype(object) << _LOW) + lo.astype(object)  # (b, pieces), exact ints
        shifted = exact << np.array(c.shifts, dtype=object)[None, :]
        total = [int(t) for t in shifted.sum(axis=1)]
    inf = w[:, c.inf].sum(axis=1) if c.inf.stop > c.inf.start \
        else np.zeros(b, np.int64)
    return cum, total, inf


def _pav_rows(wk: I64, lk: NDArray[np.bool_], off: I64) -> tuple[I64, I64, I64]:
    """:func:`~scoreframe.kernels.sorted_scores.pav_runs` of each row's runs, all rows at once.

    Row ``r`` holds the runs ``off[r]:off[r + 1]`` of ``wk``/``lk``. SciPy's isotonic
    regression runs row by row on the same float inputs as ``pav_runs``; the pooled counts and
    the exact pooling of equal fractions (as
    :func:`~scoreframe.kernels.sorted_scores.strictly_increasing`, never across rows) run
    once for all rows. Returns the targets and trials of every block, and the blocks per row.
    """
    yf = lk.astype(np.float64)
    wf = wk.astype(np.float64)
    firsts: list[NDArray[np.intp]] = []
    for a, e in zip(off[:-1].tolist(), off[1:].tolist(), strict=True):
        if e - a > 1:
            firsts.append(isotonic_regression(yf[a:e], weights=wf[a:e]).blocks[:-1] + a)
        elif e > a:
            firsts.append(np.array([a], dtype=np.intp))
    start = np.concatenate(firsts).astype(np.int64) if firsts else np.zeros(0, np.int64)
    row_of = np.searchsorted(off, start, side="right") - 1  # the row of each block
    t = np.add.reduceat(np.where(lk, wk, 0), start) if start.shape[0] else start
    n = np.add.reduceat(wk, start) if start.shape[0] else start
    while t.shape[0] > 1:
        bad = t[:-1] * n[1:] >= t[1:] * n[:-1]  # fraction i >= fraction i+1
        bad &= row_of[1:] == row_of[:-1]
        if not bad.any():
            break
        keep = np.ones(t.shape[0], dtype=bool)
        keep[1:] = ~bad  # a violating pair continues the previous pool
        idx = np.flatnonzero(keep)
        t = np.add.reduceat(t, idx)
        n = np.add.reduceat(n, idx)
        row_of = row_of[idx]
    return t, n, np.bincount(row_of, minlength=off.shape[0] - 1).astype(np.int64)


def _blocks_rows(w: I64, lab: NDArray[np.bool_], lo: F64, hi: F64) -> list[Blocks]:
    """PAV blocks of the weighted segments (merged order) of every row of ``w``.

    Zero-weight segments vanish. Adjacent segments of one label need no merging first: PAV
    pools them or leaves equal fractions that
    :func:`~scoreframe.kernels.sorted_scores.pav_runs` pools exactly. PAV runs row by row;
    everything else runs once over all rows (integer positions offset by the weight of the
    rows before, sums per block in the same order as row by row).
    """
    rows, cols = np.nonzero(w)
    wk = w[rows, cols]
    lk = lab[cols]
    off = np.searchsorted(rows, np.arange(w.shape[0] + 1), side="left")
    run = np.cumsum(wk)  # integer weights: exact
    base = np.concatenate(([0], run))[off]  # weight of the rows before each row
    t_all, n_all, nb = _pav_rows(wk, lk, off)
    end = np.cumsum(n_all)  # = each row's block ends + its ``base``
    start = end - n_all
    first = cols[np.searchsorted(run, start, side="right")]
    last = cols[np.searchsorted(run, end, side="left")]
    # 1-based positions of a target segment: seg_start + 1 .. seg_start + w (contiguous)
    tk = np.flatnonzero(lk)
    seg_start = run[tk] - wk[tk]  # plus the row's base
    wf = wk[tk].astype(np.float64)
    s = (seg_start - base[rows[tk]]).astype(np.float64)
    psum = wf * s + wf * (wf + 1) / 2
    psq = wf * s * s + s * wf * (wf + 1) + wf * (wf + 1) * (2 * wf + 1) / 6
    block_of = np.searchsorted(end, seg_start, side="right")
    total = end.shape[0]
    p_sum = np.bincount(block_of, weights=psum, minlength=total).astype(np.float64)
    p_sq = np.bincount(block_of, weights=psq, minlength=total).astype(np.float64)
    m_all = n_all - t_all
    row_of = np.repeat(np.arange(w.shape[0]), nb)
    start -= base[row_of]
    lo_b, hi_b = lo[first], hi[last]
    bo = np.concatenate(([0], np.cumsum(nb))).tolist()
    return [Blocks(t_all[a:e], m_all[a:e], start[a:e], lo_b[a:e], hi_b[a:e], p_sum[a:e],
                   p_sq[a:e]) for a, e in zip(bo[:-1], bo[1:], strict=True)]


def replicate_stats(s: SortedScores, units: SortedUnits, spec: Replicates, thresholds: F64,
                    *, rows: I64 | None = None, verification: Verification | None = None,
                    context: ReplicateContext | None = None) -> tuple[ScoreStats, ...]:
    """The statistics of every replicate of one range (see the module docstring).

    ``units`` holds the unit hashes of the range's sorted targets and non-targets; ``rows``
    the replicates (default: all of ``spec``). Each result is a :class:`ScoreStats` with
    weighted integer counts, exact Cllr sums and threshold counts, and no located results.

    Examples
    --------
    >>> from scoreframe.kernels import sort_scores
    >>> from scoreframe.kernels.bootstrap import splitmix64
    >>> s = sort_scores([1.0, 2.0, 3.0], [0.0, 1.5])
    >>> u = SortedUnits((splitmix64(np.arange(3, dtype=np.uint64)),),
    ...                 (splitmix64(np.arange(3, 5, dtype=np.uint64)),))
    >>> reps = replicate_stats(s, u, Replicates(bootstrap=4), np.array([0.5]))
    >>> len(reps), all(r.n_miss[0] == 0 for r in reps)
    (4, True)
    """
    thr = np.asarray(thresholds, dtype=np.float64)
    rows = np.arange(spec.n_rows, dtype=np.int64) if rows is None else np.asarray(rows)
    max_w = spec.max_weight()
    bits_w = max(1, math.ceil(math.log2(max_w + 1)))
    max_len = 1 << max(0, 53 - (53 - _LOW) - bits_w)  # w * piece < 2**(27 + bits_w): exact
    h_t, h_n, c_t, c_n = _unit_codes(units.tar, units.non, trial=spec.trial)
    ct = _class(s.tar, s.non, h_t, c_t, thr, target=True, max_len=max_len)
    cn = _class(s.non, s.tar, h_n, c_n, thr, target=False, max_len=max_len)
    order = np.argsort(np.concatenate((ct.pos, cn.pos)), kind="stable")
    lab = np.concatenate((np.ones(ct.starts.shape[0], bool),
                          np.zeros(cn.starts.shape[0], bool)))[order]
    lo = np.concatenate((ct.lo, cn.lo))[order]
    hi = np.concatenate((ct.hi, cn.hi))[order]
    n = max(ct.n + cn.n, 1)
    # rows per chunk: cache-sized int64 weights, and the weight sum of a chunk of one class
    # below 2**53 (one row always is: a range of fewer than 10**12 trials)
    chunk = max(1, min(CHUNK_BYTES // (8 * n), (2**53 - 1) // (max(ct.n, cn.n, 1) * max_w)))
    w_int = np.uint16 if max_w < 2**16 else np.uint32  # the weights handed to verification
    shared = not spec.trial
    rows_max = min(chunk, rows.shape[0])
    work_t, work_n = _Work.of(ct, rows_max), _Work.of(cn, rows_max)
    out: list[ScoreStats] = []
    for a in range(0, rows.shape[0], chunk):
        rb = rows[a:a + chunk]
        nr = rb.shape[0]
        m_t: list[NDArray[np.uint8]] = []
        m_n: list[NDArray[np.uint8]] = []
        for k in range(len(spec.columns)):
            m_t.append(spec.multiplicities(k, ct.hashes[k], rb))
            m_n.append(m_t[-1] if shared else spec.multiplicities(k, cn.hashes[k], rb))
        w_t = _weights(ct, m_t, work_t) if ct.n else np.zeros((nr, 0), np.int64)
        w_n = _weights(cn, m_n, work_n) if cn.n else np.zeros((nr, 0), np.int64)
        cum_t, sum_t, inf_t = _sums(ct, w_t, work_t) if ct.n else \
            (np.zeros((nr, 1), np.int64), [0] * nr, np.zeros(nr, np.int64))
        cum_n, sum_n, inf_n = _sums(cn, w_n, work_n) if cn.n else \
            (np.zeros((nr, 1), np.int64), [0] * nr, np.zeros(nr, np.int64))
        ver = replicate_verification(s, w_t.astype(w_int), w_n.astype(w_int),
                                     verification.request,
                                     None if context is None else context.rows(rb)) \
            if verification is not None else [None] * nr
        n_tar, n_non = cum_t[:, -1], cum_n[:, -1]
        miss = cum_t[:, ct.cut_seg]
        fa = n_non[:, None] - cum_n[:, cn.cut_seg]
        merged = np.concatenate((np.diff(cum_t, axis=1), np.diff(cum_n, axis=1)),
                                axis=1)[:, order]
        blocks = _blocks_rows(merged, lab, lo, hi)
        for r in range(nr):
            out.append(ScoreStats(int(n_tar[r]), int(n_non[r]), blocks[r], sum_t[r], sum_n[r],
                                  int(inf_t[r] + inf_n[r]), miss[r].copy(), fa[r].copy(),
                                  extra={} if verification is None
                                  else {verification: ver[r]}))
    return tuple(out)


def merge_units(parts: Sequence[tuple[SortedScores, SortedUnits]]
                ) -> tuple[SortedScores, SortedUnits]:
    """Sorted scores and unit hashes of a union of groups (a merge of their sorted runs)."""
    if len(parts) == 1:
        return parts[0]

    def one(scores: list[F64], hashes: list[tuple[U64, ...]]) -> tuple[F64, tuple[U64, ...]]:
        x = np.concatenate(scores)
        order = np.argsort(x, kind="stable")  # timsort: merges the sorted runs
        return x[order], tuple(np.concatenate(col)[order] for col in zip(*hashes, strict=True))

    tar, tu = one([s.tar for s, _ in parts], [u.tar for _, u in parts])
    non, nu = one([s.non for s, _ in parts], [u.non for _, u in parts])
    return SortedScores(tar, non), SortedUnits(tu, nu)


def with_replicates(stats: ScoreStats, s: SortedScores, units: SortedUnits | None,
                    spec: Replicates | None, thresholds: F64, *, workers: int = 1,
                    verification: Verification | None = None,
                    context: ReplicateContext | None = None) -> ScoreStats:
    """``stats`` with the replicates of its range attached (unchanged without ``spec``).

    ``verification`` and ``context`` are passed to :func:`replicate_stats`.

    ``workers > 1`` computes chunks of replicates on that many threads (numpy releases the
    GIL in the per-trial work); every replicate is exact, so the result is the same.
    """
    if spec is None or units is None:
        return stats
    rows = np.arange(spec.n_rows, dtype=np.int64)
    if workers <= 1 or rows.shape[0] < 2 * workers:
        return replace(stats, replicates=replicate_stats(
            s, units, spec, thresholds, verification=verification, context=context))
    parts = np.array_split(rows, workers)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda r: replicate_stats(s, units, spec, thresholds, rows=r,
                                                       verification=verification,
                                                       context=context), parts))
    return replace(stats, replicates=tuple(x for part in done for x in part))
