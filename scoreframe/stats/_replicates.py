"""Replicate statistics: the :class:`ScoreStats` of every bootstrap replicate of one range.

numpy/scipy only. A replicate re-weights the trials of a range (integer multiplicities from
:class:`~scoreframe.stats._resampling.Replicates`); its statistics are exactly those
:func:`~scoreframe.stats.summary.reduce_sorted` would give for the range with every trial
repeated as often as its weight, computed without repeating anything:

* the sorted order is fixed, so the PAV inputs of a replicate are the weighted counts of the
  range's *segments* (runs of equal labels in the merged order, also cut at the request's
  thresholds), summed with the Cllr pieces below in one compiled pass over the trials
  (:func:`~scoreframe.kernels.replicates.class_sums`; numpy's ``np.add.reduceat`` of the
  trial weights when a typed statistic reads those weights, or without numba). PAV then runs
  on the weighted segments: a compiled exact-integer stack PAV
  (:func:`~scoreframe.kernels.replicates.replicate_blocks`), whose blocks are those of the
  point statistics' kernel (:func:`~scoreframe.kernels.sorted_scores.pav_runs`, the path
  without numba), and the blocks merge across ranges with the same
  :func:`~scoreframe.stats.summary.merge`;
* the Cllr sums are exact, in the fixed point of
  :func:`~scoreframe.kernels.elementary.exact_sum`: the finite cost terms of a class are
  monotone in the sorted order, so runs of one binary exponent are contiguous; each term's
  mantissa is split into a low and a high piece (26 and 27 bits). A weight times a piece is an
  integer below ``2**36`` (two resampling columns), and each run is summed in pieces of at
  most ``2**17`` trials, so every partial sum is an integer below ``2**53``: exact in float64,
  whatever the order, and turned into exact Python integers per run;
* error counts at the thresholds are cumulative sums of the segment weights (integers);
* the typed statistics of :attr:`~scoreframe.stats.summary.Request.replicated` (the spoof and
  forensic families') are their own kernels on the range with every trial repeated by its
  weight, one replicate at a time (:mod:`scoreframe.stats._replicate_families`).

A replicate therefore costs, per trial, a gather and an integer multiply per resampling
column, one add for the segments and two multiply-adds for Cllr, plus O(segments). No BLAS
and no float sum whose value depends on an order: results do not depend on chunking,
threads or engines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe._cached_property import cached_property
from scoreframe.kernels.elementary import EXACT_SCALE, softplus
from scoreframe.kernels.replicates import (
    class_sums,
    compiled_available,
    replicate_blocks,
    unit_codes,
)
from scoreframe.kernels.sorted_scores import Blocks, SortedScores, pav_runs
from scoreframe.stats._replicate_biometric import ReplicateContext, replicate_verification
from scoreframe.stats._replicate_families import ClassUnits, prepare_extras, replicate_extras
from scoreframe.stats._resampling import Replicates, SortedUnits
from scoreframe.stats._statistics import Statistic
from scoreframe.stats.summary import ScoreStats, Verification

__all__ = ["CHUNK_BYTES", "merge_units", "replicate_stats", "with_replicates"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
#: Bytes of one chunk's float64 temporaries (replicates x trials): cache-sized.
CHUNK_BYTES = 16 * 2**20
#: Replicates a chunk holds when ``4 * CHUNK_BYTES`` allow that many (a larger range keeps
#: the ``CHUNK_BYTES`` chunks): the compiled per-trial loop runs over the chunk's replicates,
#: and a short loop costs more per replicate (0.69 ns per trial and replicate with 25
#: replicates, 0.35 ns with 64, measured on a range of 10^6 trials).
CHUNK_MIN_ROWS = 64
_LOW = 26  # bits of the low mantissa piece (the high piece has the other 27)


@dataclass(frozen=True, eq=False)
class _Class:
    """The fixed structure of one class (targets or non-targets) of a range."""

    n: int
    starts: I64  # first trial of each segment
    pos: I64  # merged position of each segment's first trial
    lo: F64
    hi: F64
    cut_seg: I64  # per threshold: segments entirely below it
    codes: list[NDArray[np.integer] | None]  # per unit column: unit code of each trial
    hashes: list[U64]  # per unit column: the units' hashes
    inf: slice  # trials with an infinite cost
    fin: slice  # trials with a finite cost
    piece_starts: I64  # first finite term of each piece (relative to ``fin``)
    shifts: list[int]  # per piece: the binary shift of its exponent (units of 2**-1126)
    low: F64  # low mantissa piece of every finite term
    high: F64  # high mantissa piece

    @cached_property
    def trial_codes(self) -> list[NDArray[np.integer]]:
        """Per unit column, the row of its multiplicities each trial reads (trial level: itself)."""
        return [np.arange(self.n, dtype=np.int32 if self.n < 2**31 else np.int64)
                if k is None else k for k in self.codes]


def _class(x: F64, other: F64, hashes: Sequence[U64], thr: F64, *, target: bool,
           trial: bool, max_len: int) -> _Class:
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
    codes: list[NDArray[np.integer] | None] = []
    uniq: list[U64] = []
    for h in hashes:
        if trial:
            codes.append(None)
            uniq.append(np.ascontiguousarray(h, dtype=np.uint64))
        else:
            code, u = unit_codes(h)
            codes.append(code)
            uniq.append(u)
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
    low = (mant & ((1 << _LOW) - 1)).astype(np.float64)
    high = (mant >> _LOW).astype(np.float64)
    piece_starts: list[int] = []
    shifts: list[int] = []
    if bits.shape[0]:
        change = np.flatnonzero(field[1:] != field[:-1]) + 1  # monotone terms: runs
        bounds = np.concatenate(([0], change, [bits.shape[0]]))
        for a, e in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            for s in range(a, e, max_len):
                piece_starts.append(s)
                shifts.append(max(int(field[a]), 1) - 1075 + EXACT_SCALE)
    return _Class(n, starts, starts + below[starts] if n else starts,
                  x[starts], x[ends - 1] if n else x[:0],
                  np.searchsorted(starts, cuts, side="left").astype(np.int64)
                  if n else np.zeros(thr.shape[0], np.int64),
                  codes, uniq, inf, fin, np.array(piece_starts, dtype=np.int64), shifts,
                  low, high)


def _weights(c: _Class, spec: Replicates, rows: I64) -> NDArray[np.integer]:
    """Trial weights ``(len(rows), n)``: the product of the trial's units' multiplicities.

    Small integers (below 2**16 for up to three resampling columns), multiplied as integers.
    """
    dtype = np.uint16 if spec.max_weight() < 2**16 else np.uint32
    w: NDArray[np.integer] | None = None
    for k, (codes, h) in enumerate(zip(c.codes, c.hashes, strict=True)):
        m = spec.multiplicities(k, h, rows)
        m = m if codes is None else np.take(m, codes, axis=1)
        if w is None:
            w = m.astype(dtype)
        else:
            w *= m
    assert w is not None
    return w


def _sums(c: _Class, w: NDArray[np.integer]) -> tuple[I64, list[int], I64]:
    """Segment weights, exact cost sums (units of ``2**-EXACT_SCALE``) and infinite weight.

    The segment weights are ``(segments, replicates)``, as the compiled loop gives them.
    """
    b = w.shape[0]
    seg = np.ascontiguousarray(np.add.reduceat(w, c.starts, axis=1, dtype=np.int64).T) \
        if c.n else np.zeros((0, b), np.int64)
    total = [0] * b
    if c.piece_starts.shape[0]:
        wf = w[:, c.fin]
        lo = np.add.reduceat(np.multiply(wf, c.low), c.piece_starts, axis=1).astype(np.int64)
        hi = np.add.reduceat(np.multiply(wf, c.high), c.piece_starts, axis=1).astype(np.int64)
        total = _totals(c, lo, hi)
    inf = w[:, c.inf].sum(axis=1, dtype=np.int64) if c.inf.stop > c.inf.start \
        else np.zeros(b, np.int64)
    return seg, total, inf


def _totals(c: _Class, lo: I64, hi: I64) -> list[int]:
    """Exact cost sums per replicate from the pieces' sums of the mantissa pieces."""
    exact = (hi.astype(object) << _LOW) + lo.astype(object)  # (b, pieces), exact ints
    shifted = exact << np.array(c.shifts, dtype=object)[None, :]
    return [int(t) for t in shifted.sum(axis=1)]


def _fused_sums(c: _Class, spec: Replicates, rows: I64) -> tuple[I64, list[int], I64]:
    """:func:`_sums` of :func:`_weights` without the ``(rows, n)`` weights: one compiled pass.

    The multiplicities of each unit column are gathered, multiplied and summed per segment
    and per piece trial by trial (:func:`~scoreframe.kernels.replicates.class_sums`);
    the integers are the same.
    """
    mults = [spec.unit_multiplicities(k, h, rows)  # (units, rows) uint8
             for k, h in enumerate(c.hashes)]
    seg, lo, hi, inf = class_sums(mults, c.trial_codes, c.starts, c.fin, c.piece_starts,
                                  c.low, c.high)
    total = _totals(c, lo, hi) if c.piece_starts.shape[0] else [0] * rows.shape[0]
    return seg, total, inf


def _prefix_sums(seg: I64, cuts: I64) -> tuple[I64, I64]:
    """``seg[:c].sum(axis=0)`` for every ``c`` of ``cuts`` (rows: replicates), and the totals.

    ``seg`` is ``(segments, replicates)``; the result is ``(replicates, cuts)``. One pass: the
    sums between consecutive distinct cuts (a few slabs of whole rows, each summed down its
    columns), then their cumulative sums (integers: exact).
    """
    n, rows = seg.shape
    inner = np.unique(cuts)
    inner = inner[(inner > 0) & (inner < n)]
    if n == 0:
        return np.zeros((rows, cuts.shape[0]), np.int64), np.zeros(rows, np.int64)
    bounds = np.concatenate(([0], inner, [n])).tolist()
    csum = np.zeros((len(bounds), rows), np.int64)
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        np.add(csum[i], seg[a:b].sum(axis=0, dtype=np.int64), out=csum[i + 1])
    at = np.searchsorted(np.asarray(bounds), cuts)
    return np.ascontiguousarray(csum[at].T), csum[-1].copy()


def _blocks(w: I64, lab: NDArray[np.bool_], lo: F64, hi: F64) -> Blocks:
    """PAV blocks of weighted segments in merged order (zero-weight segments vanish).

    Adjacent segments of one label need no merging first: PAV pools them or leaves equal
    fractions that :func:`~scoreframe.kernels.sorted_scores.pav_runs` pools exactly.
    """
    idx = np.flatnonzero(w)
    if idx.shape[0] == 0:
        z = np.zeros(0, dtype=np.int64)
        f = np.zeros(0)
        return Blocks(z, z, z, f, f, f, f)
    wk = w[idx]
    lk = lab[idx]
    t_b, n_b = pav_runs(wk, lk)
    end = np.cumsum(n_b)
    start = end - n_b
    seg_end = np.cumsum(wk)
    first = idx[np.searchsorted(seg_end, start, side="right")]
    last = idx[np.searchsorted(seg_end, end, side="left")]
    # 1-based positions of a target segment: seg_start + 1 .. seg_start + w (contiguous)
    tk = np.flatnonzero(lk)
    wf = wk[tk].astype(np.float64)
    s = (seg_end[tk] - wk[tk]).astype(np.float64)
    psum = wf * s + wf * (wf + 1) / 2
    psq = wf * s * s + s * wf * (wf + 1) + wf * (wf + 1) * (2 * wf + 1) / 6
    block_of = np.searchsorted(end, seg_end[tk] - wk[tk], side="right")
    nb = t_b.shape[0]
    return Blocks(t_b.astype(np.int64), (n_b - t_b).astype(np.int64), start.astype(np.int64),
                  lo[first], hi[last],
                  np.bincount(block_of, weights=psum, minlength=nb).astype(np.float64),
                  np.bincount(block_of, weights=psq, minlength=nb).astype(np.float64))


def replicate_stats(s: SortedScores, units: SortedUnits, spec: Replicates, thresholds: F64,
                    *, rows: I64 | None = None, verification: Verification | None = None,
                    context: ReplicateContext | None = None,
                    statistics: Sequence[Statistic] = (),
                    classes: Mapping[str | None, ClassUnits] | None = None
                    ) -> tuple[ScoreStats, ...]:
    """The statistics of every replicate of one range (see the module docstring).

    ``units`` holds the unit hashes of the range's sorted targets and non-targets; ``rows``
    the replicates (default: all of ``spec``). Each result is a :class:`ScoreStats` with
    weighted integer counts, exact Cllr sums and threshold counts, and no located results.
    Its ``extra`` holds the replicate values of ``statistics`` (typed statistics, by their
    own kernels on the repeated range: :mod:`scoreframe.stats._replicate_families`), which
    read the unit's ``classes`` when they read classes.

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
    bits_w = max(1, math.ceil(math.log2(spec.max_weight() + 1)))
    max_len = 1 << max(0, 53 - (53 - _LOW) - bits_w)  # w * piece < 2**(27 + bits_w): exact
    ct = _class(s.tar, s.non, units.tar, thr, target=True, trial=spec.trial, max_len=max_len)
    cn = _class(s.non, s.tar, units.non, thr, target=False, trial=spec.trial, max_len=max_len)
    order = np.argsort(np.concatenate((ct.pos, cn.pos)), kind="stable")
    lab = np.concatenate((np.ones(ct.starts.shape[0], bool),
                          np.zeros(cn.starts.shape[0], bool)))[order]
    lo = np.concatenate((ct.lo, cn.lo))[order]
    hi = np.concatenate((ct.hi, cn.hi))[order]
    # the trial weights themselves are needed only by the verification and typed statistics;
    # otherwise one compiled pass sums them per segment and piece: chunks sized by segments
    # (int64 sums), plus the multiplicities of trial-level units (a byte per trial, twice)
    compiled = compiled_available()  # else the numpy passes, with the same results
    fused = verification is None and not statistics and compiled
    per_row = 8 * (ct.starts.shape[0] + cn.starts.shape[0]) + \
        (2 * (ct.n + cn.n) if spec.trial else 0) if fused else 8 * (ct.n + cn.n)
    chunk = max(1, CHUNK_BYTES // max(per_row, 1))
    if fused and chunk < CHUNK_MIN_ROWS <= 4 * CHUNK_BYTES // max(per_row, 1):
        chunk = CHUNK_MIN_ROWS  # a mid-sized range: 64 replicates in at most 64 MB
    out: list[ScoreStats] = []
    prepared = prepare_extras(statistics, s, classes or {}) if statistics else {}
    for a in range(0, rows.shape[0], chunk):
        rb = rows[a:a + chunk]
        none = (np.zeros((0, rb.shape[0]), np.int64), [0] * rb.shape[0],
                np.zeros(rb.shape[0], np.int64))
        w_t: NDArray[np.integer]
        w_n: NDArray[np.integer]
        if fused:
            w_t = w_n = np.zeros((rb.shape[0], 0), np.uint16)  # not read
            seg_t, sum_t, inf_t = _fused_sums(ct, spec, rb) if ct.n else none
            seg_n, sum_n, inf_n = _fused_sums(cn, spec, rb) if cn.n else none
        else:
            w_t = _weights(ct, spec, rb) if ct.n else np.zeros((rb.shape[0], 0), np.uint16)
            w_n = _weights(cn, spec, rb) if cn.n else np.zeros((rb.shape[0], 0), np.uint16)
            seg_t, sum_t, inf_t = _sums(ct, w_t) if ct.n else none
            seg_n, sum_n, inf_n = _sums(cn, w_n) if cn.n else none
        ctx_rb = None if context is None else context.rows(rb)
        ver = replicate_verification(s, w_t, w_n, verification.request, ctx_rb) \
            if verification is not None else [None] * rb.shape[0]
        miss, n_tar = _prefix_sums(seg_t, ct.cut_seg)
        below_n, n_non = _prefix_sums(seg_n, cn.cut_seg)
        fa = n_non[:, None] - below_n
        # the compiled PAV compares cross-products of weighted counts in int64: below 2**62
        if compiled and int((n_tar + n_non).max(initial=0)) < 2**31:
            blocks = [Blocks(*f) for f in replicate_blocks(seg_t, seg_n, order, lab, lo, hi)]
        else:  # without numba, or weighted counts whose cross-products could overflow int64
            merged = np.ascontiguousarray(np.concatenate((seg_t, seg_n), axis=0)[order].T)
            blocks = [_blocks(merged[r], lab, lo, hi) for r in range(rb.shape[0])]
        fam: list[dict[Statistic, Any]] = [{}] * rb.shape[0]
        if statistics:
            cls = classes or {}
            fam = replicate_extras(statistics, s, w_t, w_n, cls,
                                   {c: cu.weights(spec, rb) for c, cu in cls.items()},
                                   ctx_rb, blocks, prepared)
        for r in range(rb.shape[0]):
            extra: dict[Statistic, Any] = {} if verification is None \
                else {verification: ver[r]}
            extra.update(fam[r])
            out.append(ScoreStats(int(n_tar[r]), int(n_non[r]), blocks[r], sum_t[r],
                                  sum_n[r], int(inf_t[r] + inf_n[r]), miss[r].copy(),
                                  fa[r].copy(), extra=extra))
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
                    context: ReplicateContext | None = None,
                    statistics: Sequence[Statistic] = (),
                    classes: Mapping[str | None, ClassUnits] | None = None) -> ScoreStats:
    """``stats`` with the replicates of its range attached (unchanged without ``spec``).

    ``verification``, ``context``, ``statistics`` and ``classes`` are passed to
    :func:`replicate_stats`.

    ``workers > 1`` computes chunks of replicates on that many threads (numpy releases the
    GIL in the per-trial work); every replicate is exact, so the result is the same.
    """
    if spec is None or units is None:
        return stats
    rows = np.arange(spec.n_rows, dtype=np.int64)
    if workers <= 1 or rows.shape[0] < 2 * workers:
        return replace(stats, replicates=replicate_stats(
            s, units, spec, thresholds, verification=verification, context=context,
            statistics=statistics, classes=classes))
    parts = np.array_split(rows, workers)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda r: replicate_stats(s, units, spec, thresholds, rows=r,
                                                       verification=verification,
                                                       context=context,
                                                       statistics=statistics,
                                                       classes=classes), parts))
    return replace(stats, replicates=tuple(x for part in done for x in part))
