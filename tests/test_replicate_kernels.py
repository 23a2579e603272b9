"""The compiled replicate kernels (kernels.replicates) against numpy twins, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoreframe.kernels import bootstrap as kb
from scoreframe.kernels.replicates import class_sums, poisson_draws, replicate_blocks
from scoreframe.stats._replicates import _blocks, _prefix_sums
from scoreframe.stats._resampling import Replicates


def sums_twin(mults: list[np.ndarray], codes: list[np.ndarray], starts: np.ndarray,
              fin: slice, piece_starts: np.ndarray, low: np.ndarray, high: np.ndarray
              ) -> tuple[np.ndarray, ...]:
    """The numpy formulation: every trial's weights, then ``np.add.reduceat`` (the segment
    weights transposed: a row per segment, as the compiled loop writes them)."""
    n_rows, n = mults[0].shape[1], codes[0].shape[0]
    w = np.ones((n_rows, n))
    for m, c in zip(mults, codes, strict=True):
        w *= np.take(m, c, axis=0).T.astype(float)
    seg = np.add.reduceat(w, starts, axis=1).T if n else np.zeros((0, n_rows))
    wf = w[:, fin]
    if piece_starts.shape[0]:
        lo = np.add.reduceat(wf * low, piece_starts, axis=1)
        hi = np.add.reduceat(wf * high, piece_starts, axis=1)
    else:
        lo = hi = np.zeros((n_rows, 0))
    inf = w.sum(axis=1) - wf.sum(axis=1)
    return tuple(a.astype(np.int64) for a in (seg, lo, hi, inf))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(1, 9), st.integers(1, 3),
       st.booleans())
def test_class_sums_equal_the_numpy_formulation(seed: int, n: int, n_rows: int, k: int,
                                                wide: bool) -> None:
    """Segments, pieces, finite and infinite trials anywhere; int32 or int64 codes."""
    rng = np.random.default_rng(seed)
    mults = [rng.integers(0, 8, (int(rng.integers(1, 20)), n_rows)).astype(np.uint8)
             for _ in range(k)]
    dtype = np.int64 if wide else np.int32
    codes = [rng.integers(0, m.shape[0], n).astype(dtype) for m in mults]
    starts = np.flatnonzero(np.r_[True, rng.random(n - 1) < 0.3]) if n else \
        np.zeros(0, np.int64)
    a = int(rng.integers(0, n + 1))
    b = int(rng.integers(a, n + 1))
    nf = b - a
    pieces = np.flatnonzero(np.r_[True, rng.random(nf - 1) < 0.2]) if nf else \
        np.zeros(0, np.int64)
    low = rng.integers(0, 2**26, nf).astype(float)
    high = rng.integers(0, 2**27, nf).astype(float)
    got = class_sums(mults, codes, starts, slice(a, b), pieces, low, high)
    want = sums_twin(mults, codes, starts, slice(a, b), pieces, low, high)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.int64 and g.shape == w.shape
        assert np.array_equal(g, w)


def test_class_sums_are_exact_at_the_largest_products() -> None:
    """Weights near 2**16 times 27-bit pieces, summed over 2**10 terms: beyond float32,
    within 2**53, so every sum is the exact integer."""
    rng = np.random.default_rng(5)
    n = 1024
    mults = [np.full((1, 3), 251, np.uint8), np.full((1, 3), 255, np.uint8)]
    codes = [np.zeros(n, np.int32), np.zeros(n, np.int32)]
    high = rng.integers(2**26, 2**27, n).astype(float)
    _, _, hi, _ = class_sums(mults, codes, np.array([0]), slice(0, n), np.array([0]),
                             np.zeros(n), high)
    exact = 251 * 255 * sum(int(x) for x in high)
    assert hi.tolist() == [[exact]] * 3


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 60),
       st.integers(0, 4))
def test_replicate_blocks_equal_scipy_pav_and_the_position_sums(seed: int, n_t: int, n_n: int,
                                                                 zeros: int) -> None:
    """The compiled stack PAV gives the blocks of ``_blocks`` (SciPy's isotonic regression,
    then exact pooling), bit for bit, with zero-weight segments, ties of fractions and runs
    of one label."""
    rng = np.random.default_rng(seed)
    w_t = rng.integers(0, zeros + 2, n_t).astype(np.int64)
    w_n = rng.integers(0, zeros + 2, n_n).astype(np.int64)
    if w_t.sum() + w_n.sum() == 0:
        w_t[0] = 1
    order = rng.permutation(n_t + n_n).astype(np.int64)
    lab = order < n_t
    lo = np.sort(rng.normal(size=n_t + n_n))
    hi = lo + rng.random(n_t + n_n) * 1e-3
    merged = np.concatenate((w_t, w_n))[order]
    want = _blocks(merged, lab, lo, hi)
    got = replicate_blocks(w_t[:, None], w_n[:, None], order, lab, lo, hi)[0]
    for g, w in zip(got, (want.n_tar, want.n_non, want.start, want.lo, want.hi,
                          want.tar_pos_sum, want.tar_pos_sq), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(g, w), (g, w)
        assert g.tobytes() == w.tobytes()


def test_replicate_blocks_of_large_weights_keep_the_position_sums_bits() -> None:
    """Weights in the thousands: position sums well above 2**53 / n are rounded, and the
    compiled kernel rounds them in the same order as the numpy formulation."""
    rng = np.random.default_rng(11)
    n_t, n_n = 500, 3000
    w_t = rng.integers(0, 5000, n_t).astype(np.int64)
    w_n = rng.integers(0, 5000, n_n).astype(np.int64)
    order = rng.permutation(n_t + n_n).astype(np.int64)
    lab = order < n_t
    lo = np.arange(n_t + n_n, dtype=float)
    want = _blocks(np.concatenate((w_t, w_n))[order], lab, lo, lo)
    got = replicate_blocks(w_t[:, None], w_n[:, None], order, lab, lo, lo)[0]
    assert got[5].tobytes() == want.tar_pos_sum.tobytes()
    assert got[6].tobytes() == want.tar_pos_sq.tobytes()


def test_replicates_without_numba_are_the_same_bits(monkeypatch) -> None:
    """Without numba the replicates take the numpy passes (trial weights, ``reduceat``,
    SciPy's PAV): every interval is identical, for one-way and two-way resampling."""
    import polars as pl

    import scoreframe as sf
    from scoreframe.kernels import replicates
    from scoreframe.stats import _replicates

    rng = np.random.default_rng(4)
    n = 4000
    label = rng.random(n) < 0.3
    df = pl.DataFrame({"model": [f"m{i % 37}" for i in range(n)],
                       "segment": [f"s{i // 37}" for i in range(n)],
                       "score": np.round(rng.normal(size=n) + 1.5 * label, 2),
                       "label": label, "condition": [f"c{i % 3}" for i in range(n)]})
    for resample in (["model"], ["model", "segment"]):
        iv = sf.Intervals(bootstrap=30, resample=resample)
        fast = sf.evaluate(df, by="condition", intervals=iv)
        monkeypatch.setattr(_replicates, "compiled_available", lambda: False)
        monkeypatch.setattr(replicates, "compiled_available", lambda: False)  # unit_codes
        slow = sf.evaluate(df, by="condition", intervals=iv)
        monkeypatch.undo()
        assert replicates.compiled_available()
        assert fast["eer_lo"].is_not_null().all() and fast["cllr_hi"].is_not_null().all()
        assert fast.equals(slow)


def test_trial_level_multiplicities_count_in_the_chunk_of_replicates(monkeypatch) -> None:
    """With trial-level resampling the multiplicities are a byte per trial and replicate:
    the chunk of replicates is sized for them too, not only for the segments (few when the
    classes are well separated). Sized by segments alone, 10^7 trials x 100 replicates took
    6.2 GB in memory (727 MB now)."""
    import polars as pl

    import scoreframe as sf
    from scoreframe.stats import _replicates

    seen: list[int] = []
    inner = _replicates.class_sums

    def spy(mults, *args):  # type: ignore[no-untyped-def]
        seen.append(sum(m.nbytes for m in mults))
        return inner(mults, *args)

    monkeypatch.setattr(_replicates, "CHUNK_BYTES", 64 * 1024)
    monkeypatch.setattr(_replicates, "class_sums", spy)
    n = 20_000
    rng = np.random.default_rng(2)
    label = rng.random(n) < 0.5
    df = pl.DataFrame({"score": rng.normal(size=n) + 40.0 * label, "label": label})
    res = sf.evaluate(df, intervals=sf.Intervals(bootstrap=50))
    assert res["eer_lo"].is_not_null().all()
    assert seen and max(seen) <= 64 * 1024


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 200), st.integers(1, 40), st.text(max_size=5))
def test_compiled_poisson_draws_equal_the_numpy_passes(seed: int, n: int, rows: int,
                                                       column: str) -> None:
    """Any unit hashes and replicate rows; draws in straddling cells resolved the same way."""
    rng = np.random.default_rng(seed % 2**32)
    h = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(seed % 2)
    r = np.sort(rng.choice(10**5, rows, replace=False))
    key = kb.stream_key(seed % 1000, column)
    want = kb.poisson_multiplicities(h, r, key=key)
    got = kb.poisson_multiplicities(h, r, key=key, compiled=True)
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    for compiled in (False, True):  # unit-major, drawn so (numba) or transposed (numpy)
        by_unit = kb.poisson_multiplicities(h, r, key=key, compiled=compiled, by_unit=True)
        assert by_unit.flags.c_contiguous and np.array_equal(by_unit, want.T)


def test_compiled_poisson_draws_cover_every_cell_and_straddling_draw() -> None:
    """Draws at and beside every CDF threshold (the cells marked 255) and in every cell."""
    thr = kb._THRESHOLDS
    near = np.concatenate([thr - np.uint64(1), thr, thr + np.uint64(1)])
    cells = np.arange(2**16, dtype=np.uint64) << np.uint64(48)
    z = np.concatenate([near, cells, cells + np.uint64(2**47)])
    pre = _splitmix64_inverse(z)  # hashes whose draw (with a zero row key) is z
    assert np.array_equal(kb.splitmix64(pre), z)
    got = poisson_draws(pre, np.zeros(1, dtype=np.uint64), kb._TABLE, kb._THRESHOLDS)[0]
    assert np.array_equal(got, kb.poisson_from_uniform(z))


def _splitmix64_inverse(z: np.ndarray) -> np.ndarray:
    """The pre-image under splitmix64 (the xor-shifts and odd multiplications invert)."""
    def unshift(x: np.ndarray, k: int) -> np.ndarray:
        out = x.copy()
        for _ in range(64 // k + 1):
            out = x ^ (out >> np.uint64(k))
        return out

    inv2 = np.uint64(pow(0x94D049BB133111EB, -1, 2**64))
    inv1 = np.uint64(pow(0xBF58476D1CE4E5B9, -1, 2**64))
    with np.errstate(over="ignore"):
        x = unshift(z.astype(np.uint64), 31) * inv2
        x = unshift(x, 27) * inv1
        x = unshift(x, 30)
        return x - np.uint64(0x9E3779B97F4A7C15)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(0, 40), st.integers(0, 8))
def test_prefix_sums_equal_the_cumulative_sums(seed: int, rows: int, n: int, k: int) -> None:
    """Threshold counts of the replicates: the segment weights below each cut, and totals."""
    rng = np.random.default_rng(seed)
    seg = rng.integers(0, 2**40, (rows, n)).astype(np.int64)
    cuts = rng.integers(0, n + 1, k).astype(np.int64)
    below, total = _prefix_sums(np.ascontiguousarray(seg.T), cuts)  # (segments, rows)
    cum = np.concatenate((np.zeros((rows, 1), np.int64), np.cumsum(seg, axis=1)), axis=1)
    assert below.dtype == total.dtype == np.int64
    assert np.array_equal(below, cum[:, cuts]) and np.array_equal(total, cum[:, -1])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 120), st.booleans(), st.booleans())
def test_unit_multiplicities_are_the_transposed_draws(seed: int, n: int, jackknife: bool,
                                                      tail: bool) -> None:
    """(units, rows) for the per-trial loop: the same integers as (rows, units).

    With or without jackknife rows among the rows asked for.
    """
    rng = np.random.default_rng(seed)
    spec = Replicates(("model", "segment"), seed, 7, jackknife, ())
    h = rng.integers(0, 2**63, n, dtype=np.uint64)
    rows = np.arange(spec.n_rows, dtype=np.int64)
    rows = rows[int(rng.integers(0, spec.n_rows)):] if tail else rows[:7]
    for column in (0, 1):
        by_row = spec.multiplicities(column, h, rows)
        got = spec.unit_multiplicities(column, h, rows)
        assert got.flags.c_contiguous and np.array_equal(got, by_row.T)


@pytest.mark.parametrize("rows", [1, 3, 8, 13, 40])
def test_replicate_blocks_of_many_rows_are_each_rows_blocks(rows: int) -> None:
    """Rows of one call share the work space and the output arrays (grown past their first
    size when the blocks outnumber it): each row's blocks are those of ``_blocks`` alone."""
    rng = np.random.default_rng(rows)
    n_t, n_n = 150, 150
    order = np.empty(n_t + n_n, np.int64)  # alternating labels, scores ascending: many blocks
    order[0::2], order[1::2] = np.arange(n_t), n_t + np.arange(n_n)
    lab = order < n_t
    lo = np.arange(n_t + n_n, dtype=float)
    # the target fraction rises along the scores (noisy): PAV keeps many blocks
    w_t = (np.arange(n_t) + rng.integers(0, 2, (rows, n_t))).astype(np.int64)
    w_n = (np.arange(n_n)[::-1] + rng.integers(0, 2, (rows, n_n))).astype(np.int64)
    w_t[:, ::7] = w_n[:, ::7] = 0  # and zero-weight segments vanish
    got = replicate_blocks(w_t.T, w_n.T, order, lab, lo, lo)  # (segments, rows)
    assert len(got) == rows
    assert sum(g[0].shape[0] for g in got) > 64  # past the first size of the outputs
    for r in range(rows):
        want = _blocks(np.concatenate((w_t[r], w_n[r]))[order], lab, lo, lo)
        for g, w in zip(got[r], (want.n_tar, want.n_non, want.start, want.lo, want.hi,
                                 want.tar_pos_sum, want.tar_pos_sq), strict=True):
            assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 5000), st.integers(1, 3000))
def test_unit_codes_number_the_distinct_hashes(seed: int, n: int, units: int) -> None:
    """The hash table's codes give the hashes back, its units are distinct and in order of
    first appearance, and they are those of ``np.unique`` (past several table growths)."""
    from scoreframe.kernels.replicates import unit_codes

    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 2**64, units, dtype=np.uint64)
    pool[: units // 3] &= np.uint64(0xFF)  # small values: many collide in the low bits
    h = pool[rng.integers(0, units, n)]
    codes, uniq = unit_codes(h)
    assert codes.dtype == np.int32
    assert np.array_equal(uniq[codes], h)
    assert np.array_equal(np.sort(uniq), np.unique(h))
    first = np.unique(h, return_index=True)[1]
    assert np.array_equal(uniq, h[np.sort(first)])
