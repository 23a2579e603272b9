"""The replicate kernels against their previous implementation, bit for bit.

``stats/_replicates.py`` computes the replicates of a range in chunks of rows at once (float64
integer weights, one running sum per chunk, the cost pieces as exact matrix products, PAV
blocks of all rows of a chunk together) and ``kernels/bootstrap.py`` draws multiplicities for
several rows per call. The twins below are the code they replace, verbatim (row by row, uint16
weights, ``reduceat``): every field of every replicate must be identical on random data with
ties, infinite scores, thresholds, empty classes, one and two resampling columns, jackknife
rows and several chunks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

from scoreframe.kernels import bootstrap as kb
from scoreframe.kernels import sort_scores
from scoreframe.kernels.elementary import EXACT_SCALE, softplus
from scoreframe.kernels.sorted_scores import Blocks, SortedScores, pav_runs
from scoreframe.stats import _replicates as rp
from scoreframe.stats._replicate_biometric import ReplicateContext, replicate_verification
from scoreframe.stats._resampling import Replicates, SortedUnits
from scoreframe.stats.summary import ScoreStats, Verification

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
CHUNK_BYTES = rp.CHUNK_BYTES
_LOW = 26


# ---- the previous implementation (twin), verbatim ------------------------------------------
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
            u, inv = np.unique(h, return_inverse=True)
            codes.append(inv.astype(np.int32 if u.shape[0] < 2**31 else np.int64))
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
    """Segment weights, exact cost sums (units of ``2**-EXACT_SCALE``) and infinite weight."""
    b = w.shape[0]
    seg = np.add.reduceat(w, c.starts, axis=1, dtype=np.int64) if c.n else \
        np.zeros((b, 0), np.int64)
    total = [0] * b
    if c.piece_starts.shape[0]:
        wf = w[:, c.fin]
        lo = np.add.reduceat(np.multiply(wf, c.low), c.piece_starts, axis=1).astype(np.int64)
        hi = np.add.reduceat(np.multiply(wf, c.high), c.piece_starts, axis=1).astype(np.int64)
        exact = (hi.astype(object) << _LOW) + lo.astype(object)  # (b, pieces), exact ints
        shifted = exact << np.array(c.shifts, dtype=object)[None, :]
        total = [int(t) for t in shifted.sum(axis=1)]
    inf = w[:, c.inf].sum(axis=1, dtype=np.int64) if c.inf.stop > c.inf.start \
        else np.zeros(b, np.int64)
    return seg, total, inf


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


def _old_replicate_stats(s: SortedScores, units: SortedUnits, spec: Replicates, thresholds: F64,
                    *, rows: I64 | None = None, verification: Verification | None = None,
                    context: ReplicateContext | None = None) -> tuple[ScoreStats, ...]:
    """The previous implementation of ``replicate_stats``."""
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
    n = max(ct.n + cn.n, 1)
    chunk = max(1, CHUNK_BYTES // (8 * n))
    out: list[ScoreStats] = []
    for a in range(0, rows.shape[0], chunk):
        rb = rows[a:a + chunk]
        w_t = _weights(ct, spec, rb) if ct.n else np.zeros((rb.shape[0], 0), np.uint16)
        w_n = _weights(cn, spec, rb) if cn.n else np.zeros((rb.shape[0], 0), np.uint16)
        seg_t, sum_t, inf_t = _sums(ct, w_t) if ct.n else \
            (np.zeros((rb.shape[0], 0), np.int64), [0] * rb.shape[0],
             np.zeros(rb.shape[0], np.int64))
        seg_n, sum_n, inf_n = _sums(cn, w_n) if cn.n else \
            (np.zeros((rb.shape[0], 0), np.int64), [0] * rb.shape[0],
             np.zeros(rb.shape[0], np.int64))
        ver = replicate_verification(s, w_t, w_n, verification.request,
                                     None if context is None else context.rows(rb)) \
            if verification is not None else [None] * rb.shape[0]
        cum_t = np.concatenate((np.zeros((rb.shape[0], 1), np.int64),
                                np.cumsum(seg_t, axis=1)), axis=1)
        cum_n = np.concatenate((np.zeros((rb.shape[0], 1), np.int64),
                                np.cumsum(seg_n, axis=1)), axis=1)
        n_tar, n_non = cum_t[:, -1], cum_n[:, -1]
        miss = cum_t[:, ct.cut_seg]
        fa = n_non[:, None] - cum_n[:, cn.cut_seg]
        merged = np.concatenate((seg_t, seg_n), axis=1)[:, order]
        for r in range(rb.shape[0]):
            out.append(ScoreStats(int(n_tar[r]), int(n_non[r]),
                                  _blocks(merged[r], lab, lo, hi), sum_t[r], sum_n[r],
                                  int(inf_t[r] + inf_n[r]), miss[r].copy(), fa[r].copy(),
                                  extra={} if verification is None
                                  else {verification: ver[r]}))
    return tuple(out)


def _old_poisson_multiplicities(unit_hashes: U64, replicates: I64, *, key: np.uint64
                           ) -> NDArray[np.uint8]:
    """The previous row-by-row draws."""
    r = np.asarray(replicates, dtype=np.uint64)
    rk = kb.splitmix64(np.uint64(key) + r * kb._GOLDEN)
    h = np.asarray(unit_hashes, dtype=np.uint64)
    out = np.empty((r.shape[0], h.shape[0]), dtype=np.uint8)
    z = np.empty(h.shape[0], dtype=np.uint64)
    tmp = np.empty(h.shape[0], dtype=np.uint64)
    for i in range(r.shape[0]):  # row by row into two reused buffers: no large temporaries
        np.bitwise_xor(h, rk[i], out=z)
        kb._splitmix64_inplace(z, tmp)
        np.right_shift(z, kb._CELL, out=tmp)
        np.take(kb._TABLE, tmp, out=out[i])
        amb = np.flatnonzero(out[i] == 255)
        if amb.size:
            out[i, amb] = np.searchsorted(kb._THRESHOLDS, z[amb], side="right")
    return out


# ---- the comparison -------------------------------------------------------------------------

def _data(seed: int, n_tar: int, n_non: int, cols: int):
    rng = np.random.default_rng(seed)
    tar = np.round(rng.normal(1.0, 2.0, n_tar), 1)  # ties, across labels too
    non = np.round(rng.normal(-1.0, 2.0, n_non), 1)
    if n_tar > 3:
        tar[:2] = [np.inf, -np.inf]
    if n_non > 3:
        non[:2] = [-np.inf, np.inf]
    s = sort_scores(tar, non)
    units = max(2, (n_tar + n_non) // 7)

    def hashes(m: int) -> tuple[U64, ...]:
        return tuple(kb.splitmix64(rng.integers(0, units, m).astype(np.uint64))
                     for _ in range(cols))

    return s, SortedUnits(hashes(n_tar), hashes(n_non))


def _same_blocks(a: Blocks, b: Blocks) -> None:
    for f in ("n_tar", "n_non", "start", "lo", "hi", "tar_pos_sum", "tar_pos_sq"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype, f
        np.testing.assert_array_equal(x, y, err_msg=f)  # NaN-free: exact equality


def _same(new: tuple[ScoreStats, ...], old: tuple[ScoreStats, ...]) -> None:
    assert len(new) == len(old)
    for x, y in zip(new, old, strict=True):
        assert (x.n_tar, x.n_non, x.cllr_tar, x.cllr_non, x.cllr_inf) == \
            (y.n_tar, y.n_non, y.cllr_tar, y.cllr_non, y.cllr_inf)
        np.testing.assert_array_equal(x.n_miss, y.n_miss)
        np.testing.assert_array_equal(x.n_fa, y.n_fa)
        _same_blocks(x.blocks, y.blocks)


@pytest.mark.parametrize("resample", [("trial",), ("model",), ("model", "segment")])
@pytest.mark.parametrize("sizes", [(40, 300), (1, 50), (0, 30), (25, 0), (700, 3000)])
def test_replicate_stats_equal_the_previous_kernel(resample, sizes, monkeypatch) -> None:
    s, units = _data(sum(sizes) + len(resample), *sizes, cols=len(resample))
    spec = Replicates(resample, seed=7, bootstrap=60, jackknife=True)
    thr = np.array([-1.05, 0.0, 0.3, 2.5])
    old = _old_replicate_stats(s, units, spec, thr)
    _same(rp.replicate_stats(s, units, spec, thr), old)
    # small chunks: many chunks of rows, the same replicates
    monkeypatch.setattr(rp, "CHUNK_BYTES", 8 * max(1, sum(sizes)) * 3)
    _same(rp.replicate_stats(s, units, spec, thr), old)
    rows = np.array([5, 0, 59, 60, 61, 230])
    _same(rp.replicate_stats(s, units, spec, thr, rows=rows),
          _old_replicate_stats(s, units, spec, thr, rows=rows))


@pytest.mark.parametrize("units", [1, 3, 1000, 70_000])
def test_poisson_multiplicities_equal_the_row_by_row_draws(units) -> None:
    h = kb.splitmix64(np.arange(units, dtype=np.uint64) * np.uint64(977))
    rows = np.array([0, 1, 2, 7, 1000, 31, 5, 99_999, 3, 4], dtype=np.int64)
    key = kb.stream_key(3, "model")
    new = kb.poisson_multiplicities(h, rows, key=key)
    old = _old_poisson_multiplicities(h, rows, key=key)
    assert new.dtype == old.dtype == np.uint8
    np.testing.assert_array_equal(new, old)
    if units >= 1000:  # some draws fell in a table cell holding a threshold (binary search)
        rk = kb.splitmix64(np.uint64(key) + rows.astype(np.uint64) * kb._GOLDEN)
        u = kb.splitmix64(h[None, :] ^ rk[:, None])
        assert (kb._TABLE[u >> kb._CELL] == 255).any()


def test_pav_of_all_rows_equals_pav_runs_row_by_row() -> None:
    """Equal fractions everywhere (tiny weights), empty rows and one-run rows: row by row."""
    rng = np.random.default_rng(5)
    lens = [0, 1, 2, 0, 7, 40, 1, 300, 0, 3]
    wk = rng.integers(1, 4, sum(lens)).astype(np.int64)
    lk = rng.random(sum(lens)) < 0.4
    off = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    t, n, nb = rp._pav_rows(wk, lk, off)
    assert nb.tolist()[:2] == [0, 1] and int(nb.sum()) == t.shape[0]
    bo = np.concatenate(([0], np.cumsum(nb)))
    pooled = 0
    for r, (a, e) in enumerate(zip(off[:-1], off[1:], strict=True)):
        if e == a:
            assert nb[r] == 0
            continue
        t_r, n_r = pav_runs(wk[a:e], lk[a:e])
        np.testing.assert_array_equal(t[bo[r]:bo[r + 1]], t_r)
        np.testing.assert_array_equal(n[bo[r]:bo[r + 1]], n_r)
        pooled += (e - a) - t_r.shape[0]
    assert pooled > 100  # PAV pooled a lot: the comparison is not vacuous
