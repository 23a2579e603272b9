"""Counter-based bootstrap draws and bootstrap intervals (numpy/scipy only).

* ``splitmix64`` and :func:`hash_strings`: stable 64-bit hashes of unit ids (by value, the
  same on every platform and in every version);
* :func:`poisson_multiplicities`: the multiplicity of unit ``h`` in replicate ``r`` is
  Poisson(1) by the inverse CDF of ``splitmix64(h ^ splitmix64(key + r * golden))``, a pure
  function of the stream key (seed and column), the replicate and the unit, so any worker
  holding any part of the data draws the same ones (the Poisson bootstrap of Hanley &
  MacGibbon 2006 and Chamandy et al. 2012; a multinomial draw would couple all units of a
  replicate and break that independence);
* :func:`percentile_interval` and :func:`bca_interval` over replicate values.

The replicates themselves are statistics-layer objects: see
:mod:`scoreframe.stats._replicates`, which re-weights the sorted statistics of each range and
hands them to the same metric kernels as the point values.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr, ndtri

__all__ = [
    "MAX_POISSON",
    "bca_interval",
    "combine_hashes",
    "hash_strings",
    "percentile_interval",
    "poisson_from_uniform",
    "poisson_multiplicities",
    "splitmix64",
    "stream_key",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_BYTE_SALT = np.uint64(0x6A09E667F3BCC908)  # sqrt(2) fraction: salts the per-byte terms
_LEN_SALT = np.uint64(0xBB67AE8584CAA73B)  # sqrt(3) fraction: salts the string length
_PAIR_SALT = np.uint64(0x3C6EF372FE94F82B)  # sqrt(5) fraction: salts the second of a pair
_MASK64 = (1 << 64) - 1


def splitmix64(x: U64) -> U64:
    """The splitmix64 output function (Steele, Lea & Flood 2014) of each uint64, wrapping.

    A bijection of 64-bit words with full avalanche: the building block of every counter-based
    draw here.

    Examples
    --------
    >>> int(splitmix64(np.array([0], dtype=np.uint64))[0])
    16294208416658607535
    """
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


def hash_strings(data: NDArray[np.uint8], offsets: I64, *, batch: int = 1 << 20) -> U64:
    """Stable 64-bit hash of each string given as UTF-8 bytes and Arrow-style offsets.

    String ``i`` is ``data[offsets[i]:offsets[i + 1]]``. The hash is
    ``splitmix64(sum_j splitmix64(byte_j | j << 8 ^ salt) ^ splitmix64(len ^ salt))`` (sums
    wrap modulo 2**64): position-aware, independent of everything but the bytes, and the same
    on every platform and in every version.

    Examples
    --------
    >>> raw = np.frombuffer(b"abba", dtype=np.uint8)
    >>> h = hash_strings(raw, np.array([0, 2, 4, 4]))  # "ab", "ba", ""
    >>> bool(h[0] != h[1]), bool(h[2] != h[0])
    (True, True)
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for a in range(0, n, batch):
        off = offsets[a:min(a + batch, n) + 1]
        lengths = np.diff(off)
        base = off[:-1] - off[0]
        b = data[off[0]:off[-1]].astype(np.uint64)
        owner = np.repeat(np.arange(lengths.shape[0]), lengths)
        pos = (np.arange(b.shape[0], dtype=np.int64) - base[owner]).astype(np.uint64)
        term = splitmix64((b | (pos << np.uint64(8))) ^ _BYTE_SALT)
        sums = np.zeros(lengths.shape[0], dtype=np.uint64)
        full = lengths > 0
        if full.any():
            sums[full] = np.add.reduceat(term, base[full])
        out[a:a + lengths.shape[0]] = splitmix64(
            sums ^ splitmix64(lengths.astype(np.uint64) ^ _LEN_SALT))
    return out


def combine_hashes(first: U64, second: U64) -> U64:
    """Hash of an ordered pair of hashes (e.g. a trial's model and segment).

    >>> a, b = np.array([1], dtype=np.uint64), np.array([2], dtype=np.uint64)
    >>> bool(combine_hashes(a, b)[0] != combine_hashes(b, a)[0])
    True
    """
    return splitmix64(np.asarray(first, dtype=np.uint64)
                      ^ splitmix64(np.asarray(second, dtype=np.uint64) ^ _PAIR_SALT))


def stream_key(seed: int, name: str) -> np.uint64:
    """The key of one random stream: a user seed (any integer) and a column name.

    >>> bool(stream_key(0, "model") != stream_key(0, "segment"))
    True
    """
    raw = np.frombuffer(name.encode(), dtype=np.uint8)
    h = hash_strings(raw, np.array([0, raw.shape[0]]))
    s = splitmix64(np.array([seed & _MASK64], dtype=np.uint64))
    return np.uint64(splitmix64(s ^ h)[0])


def _poisson_thresholds() -> U64:
    """``floor(2**64 * P(X <= k))`` for X ~ Poisson(1), k = 0, 1, ... until it reaches 2**64."""
    out, cdf, k = [], 0.0, 0
    while True:
        cdf += math.exp(-1.0) / math.factorial(k)
        v = min(int(cdf * 2.0**64), _MASK64)
        out.append(v)
        if v >= _MASK64 or k > 40:
            break
        k += 1
    return np.array(out, dtype=np.uint64)


_THRESHOLDS = _poisson_thresholds()
#: Largest multiplicity a draw can give (the number of CDF thresholds).
MAX_POISSON = int(_THRESHOLDS.shape[0])
_CELL = np.uint64(48)  # a 65,536-cell lookup table on the top 16 bits


def _lookup() -> NDArray[np.uint8]:
    lo = np.arange(1 << 16, dtype=np.uint64) << _CELL
    hi = lo | np.uint64((1 << 48) - 1)
    k_lo = np.searchsorted(_THRESHOLDS, lo, side="right")
    k_hi = np.searchsorted(_THRESHOLDS, hi, side="right")
    return np.where(k_lo == k_hi, k_lo, 255).astype(np.uint8)  # 255: a threshold inside


_TABLE = _lookup()


def poisson_from_uniform(u: U64) -> NDArray[np.uint8]:
    """Poisson(1) draws by inverse CDF from uniform 64-bit words (exact to 2**-64).

    ``k = #{j : u >= floor(2**64 P(X <= j))}``: a table lookup on the top 16 bits, refined by a
    binary search only in the few cells that contain a threshold.

    Examples
    --------
    >>> u = splitmix64(np.arange(200_000, dtype=np.uint64))
    >>> round(float(poisson_from_uniform(u).mean()), 2)
    1.0
    """
    u = np.asarray(u, dtype=np.uint64)
    k: NDArray[np.uint8] = _TABLE[u >> _CELL]
    amb = np.nonzero(k == 255)
    if amb[0].size:
        k[amb] = np.searchsorted(_THRESHOLDS, u[amb], side="right")
    return k


def poisson_multiplicities(unit_hashes: U64, replicates: I64, *, key: np.uint64,
                           compiled: bool = False, by_unit: bool = False
                           ) -> NDArray[np.uint8]:
    """Poisson(1) multiplicity of every unit in every replicate: shape ``(len(replicates), U)``.

    The draw of unit ``h`` in replicate ``r`` is
    ``poisson(splitmix64(h ^ splitmix64(key + r * golden)))``: a pure function of the stream
    key (seed and column), the replicate index and the unit's id hash. ``compiled=True``
    draws them in one compiled loop (:func:`scoreframe.kernels.replicates.poisson_draws`,
    numba), with the same result; ``by_unit=True`` gives its transpose,
    ``(U, len(replicates))`` (C-contiguous; written in that order when compiled).

    Examples
    --------
    >>> h = np.arange(5, dtype=np.uint64)
    >>> m = poisson_multiplicities(h, np.arange(3), key=stream_key(0, "trial"))
    >>> m.shape, bool((poisson_multiplicities(h[2:], np.arange(3), key=stream_key(0, "trial"))
    ...                == m[:, 2:]).all())
    ((3, 5), True)
    """
    r = np.asarray(replicates, dtype=np.uint64)
    rk = splitmix64(np.uint64(key) + r * _GOLDEN)
    h = np.asarray(unit_hashes, dtype=np.uint64)
    if compiled:  # one compiled loop (kernels.replicates), the same integers
        from scoreframe.kernels.replicates import poisson_draws

        return poisson_draws(h, rk, _TABLE, _THRESHOLDS, by_unit=by_unit)
    out = np.empty((r.shape[0], h.shape[0]), dtype=np.uint8)
    # a few rows at a time (about 2**16 words) into two reused buffers: few numpy calls for
    # few units, no large temporaries for many
    step = max(1, (1 << 16) // max(1, h.shape[0]))
    z = np.empty((min(step, r.shape[0]), h.shape[0]), dtype=np.uint64)
    tmp = np.empty_like(z)
    for a in range(0, r.shape[0], step):
        e = min(a + step, r.shape[0])
        zz, tt, blk = z[:e - a], tmp[:e - a], out[a:e]
        np.bitwise_xor(h[None, :], rk[a:e, None], out=zz)
        _splitmix64_inplace(zz, tt)
        np.right_shift(zz, _CELL, out=tt)
        np.take(_TABLE, tt, out=blk)
        amb = np.nonzero(blk == 255)
        if amb[0].size:
            blk[amb] = np.searchsorted(_THRESHOLDS, zz[amb], side="right")
    return np.ascontiguousarray(out.T) if by_unit else out


def _splitmix64_inplace(z: U64, tmp: U64) -> None:
    """:func:`splitmix64` of ``z`` in place (``tmp`` is scratch space of the same shape)."""
    np.add(z, _GOLDEN, out=z)
    np.right_shift(z, _S30, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    np.multiply(z, _M1, out=z)
    np.right_shift(z, _S27, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    np.multiply(z, _M2, out=z)
    np.right_shift(z, _S31, out=tmp)
    np.bitwise_xor(z, tmp, out=z)


def percentile_interval(values: F64, ci: float, *, min_valid: float = 0.5
                        ) -> tuple[F64, F64]:
    """Percentile interval over replicates (axis 0), ignoring NaN (undefined) replicates.

    Returns NaN where fewer than ``min_valid`` of the replicates are defined.

    Examples
    --------
    >>> lo, hi = percentile_interval(np.arange(101.0), 0.9)
    >>> round(float(lo), 9), round(float(hi), 9)
    (5.0, 95.0)
    """
    v = np.asarray(values, dtype=np.float64)
    alpha = (1.0 - ci) / 2.0
    return _quantiles(v, np.full(v.shape[1:], alpha), np.full(v.shape[1:], 1.0 - alpha),
                      min_valid)


def _quantiles(v: F64, a_lo: F64 | np.ndarray, a_hi: F64 | np.ndarray, min_valid: float
               ) -> tuple[F64, F64]:
    flat = v.reshape(v.shape[0], -1)
    lo_q = np.asarray(a_lo, dtype=np.float64).reshape(-1)
    hi_q = np.asarray(a_hi, dtype=np.float64).reshape(-1)
    lo = np.full(flat.shape[1], np.nan)
    hi = np.full(flat.shape[1], np.nan)
    for j in range(flat.shape[1]):
        col = flat[:, j]
        col = col[~np.isnan(col)]
        if col.shape[0] == 0 or col.shape[0] < min_valid * flat.shape[0]:
            continue
        if np.isnan(lo_q[j]) or np.isnan(hi_q[j]):
            continue
        qs = np.array([lo_q[j], hi_q[j]])
        with np.errstate(invalid="ignore"):  # inf - inf between two infinite replicates
            vals = np.quantile(col, qs)
        bad = np.isnan(vals)
        if bad.any():
            vals[bad] = np.quantile(col, qs[bad], method="higher")
        lo[j], hi[j] = vals
    return lo.reshape(v.shape[1:]), hi.reshape(v.shape[1:])


def bca_interval(values: F64, estimate: F64, jackknife: F64, ci: float, *,
                 min_valid: float = 0.5) -> tuple[F64, F64]:
    """Bias-corrected and accelerated interval (Efron 1987; Efron & Tibshirani 1993, 14.3).

    ``values`` are the bootstrap replicates (axis 0), ``estimate`` the full-data value,
    ``jackknife`` the leave-out values (axis 0; NaN rows ignored). Bias correction
    ``z0 = Phi^-1(#{v < est} + #{v = est}/2) / B``; acceleration
    ``a = sum d^3 / (6 (sum d^2)^1.5)`` with ``d = mean(jack) - jack``.

    Examples
    --------
    >>> v = np.random.default_rng(0).normal(size=(4000, 1))
    >>> lo, hi = bca_interval(v, np.zeros(1), np.linspace(-1, 1, 50)[:, None], 0.9)
    >>> bool(abs(lo[0] + 1.645) < 0.1 and abs(hi[0] - 1.645) < 0.1)
    True
    """
    v = np.asarray(values, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    jk = np.asarray(jackknife, dtype=np.float64)
    valid = ~np.isnan(v)
    nv = valid.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (np.sum(valid & (v < est), axis=0) + 0.5 * np.sum(valid & (v == est), axis=0)) / nv
        z0 = ndtri(frac)
        d = np.nanmean(jk, axis=0) - jk
        num = np.nansum(d**3, axis=0)
        den = 6.0 * np.nansum(d**2, axis=0) ** 1.5
        a = np.where(den > 0, num / den, 0.0)
        z = ndtri(np.array([(1.0 - ci) / 2.0, (1.0 + ci) / 2.0]))
        adj = [ndtr(z0 + (z0 + zz) / (1.0 - a * (z0 + zz))) for zz in z]
    bad = ~np.isfinite(z0) | ~np.isfinite(est)
    a_lo = np.where(bad, np.nan, adj[0])
    a_hi = np.where(bad, np.nan, adj[1])
    return _quantiles(v, a_lo, a_hi, min_valid)
