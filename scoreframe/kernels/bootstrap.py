"""Bootstrap replicates as re-weightings of one sorted order (numpy/scipy only).

A replicate never re-sorts anything. The trials of a group are sorted once (scores ascending,
ties targets first, as in :mod:`scoreframe.kernels.sorted_scores`); a replicate gives every
trial an integer multiplicity, and every metric is read from the weighted sequence in that
fixed order:

* multiplicities come from a counter-based generator: ``splitmix64`` of (seed, column,
  replicate index, hash of the unit's id value), mapped to Poisson(1) by its inverse CDF. A
  unit's multiplicity in replicate ``r`` depends on nothing else, so results do not depend on
  the number of workers, the engine, the row order or how the data is split into files or
  groups (the Poisson bootstrap of Hanley & MacGibbon 2006 and Chamandy et al. 2012; a
  multinomial draw would couple all units of a replicate and break that independence);
* for several resampling columns (the two-way "subjects" bootstrap over models and segments)
  a trial's multiplicity is the product of its units' multiplicities;
* weights are summed per *segment* (a run of equal labels in the sorted order, cut at the
  actual-DCF thresholds) with ``np.add.reduceat``; PAV (``scipy.optimize.isotonic_regression``)
  runs on the weighted segments; Cllr sums are per-replicate row sums of the weights times
  per-trial softplus terms computed once, in numpy's fixed pairwise order (never a BLAS
  product, whose order follows threads and chunk shape); actual-DCF error counts are integer
  products, exact in any order.

Counts stay integer-valued: multiplicities are small integers stored in float64, and every sum
of them is exact (below 2**53).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import isotonic_regression
from scipy.special import ndtr, ndtri

from scoreframe.kernels.elementary import softplus
from scoreframe.kernels.rocch import crossing

__all__ = [
    "Units",
    "ReplicateTable",
    "SortedGroup",
    "bca_interval",
    "block_metrics",
    "combine_hashes",
    "hash_strings",
    "percentile_interval",
    "poisson_from_uniform",
    "poisson_multiplicities",
    "pooled_cells",
    "replicate_metrics",
    "replicate_table",
    "splitmix64",
    "stream_key",
    "trial_cells",
    "trial_weights",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
BOOL = NDArray[np.bool_]
LOG2 = math.log(2.0)

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
    k = _TABLE[u >> _CELL]
    amb = np.nonzero(k == 255)
    if amb[0].size:
        k[amb] = np.searchsorted(_THRESHOLDS, u[amb], side="right")
    return k


def poisson_multiplicities(unit_hashes: U64, replicates: I64, *, key: np.uint64
                           ) -> NDArray[np.uint8]:
    """Poisson(1) multiplicity of every unit in every replicate: shape ``(len(replicates), U)``.

    The draw of unit ``h`` in replicate ``r`` is
    ``poisson(splitmix64(h ^ splitmix64(key + r * golden)))``: a pure function of the stream
    key (seed and column), the replicate index and the unit's id hash.

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
    out = np.empty((r.shape[0], h.shape[0]), dtype=np.uint8)
    z = np.empty(h.shape[0], dtype=np.uint64)
    tmp = np.empty(h.shape[0], dtype=np.uint64)
    for i in range(r.shape[0]):  # row by row into two reused buffers: no large temporaries
        np.bitwise_xor(h, rk[i], out=z)
        _splitmix64_inplace(z, tmp)
        np.right_shift(z, _CELL, out=tmp)
        np.take(_TABLE, tmp, out=out[i])
        amb = np.flatnonzero(out[i] == 255)
        if amb.size:
            out[i, amb] = np.searchsorted(_THRESHOLDS, z[amb], side="right")
    return out


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


@dataclass(frozen=True, eq=False)
class Units:
    """Resampling units of one column: a unit code per trial and a hash per unit."""

    codes: I64
    hashes: U64

    @property
    def n_units(self) -> int:
        """Number of units."""
        return int(self.hashes.shape[0])

    @cached_property
    def run(self) -> slice | None:
        """``slice(a, a + n)`` when the codes are exactly ``a, a + 1, ...`` (no gather needed)."""
        c = self.codes
        if c.shape[0] and c[-1] - c[0] == c.shape[0] - 1 and bool(np.all(np.diff(c) == 1)):
            return slice(int(c[0]), int(c[-1]) + 1)
        return None


@dataclass(frozen=True, eq=False)
class SortedGroup:
    """One group as the bootstrap needs it: sorted scores, labels and resampling units.

    ``score`` ascending with ties targets first, ``label`` in that order, and for every
    resampling column (``"trial"``, ``"model"``, ``"segment"``, ...) the unit code of every
    trial and the id hash of every unit. Several groups may share one ``hashes`` array (codes
    then index into it); multiplicities depend only on the hashes, never on the codes.
    """

    score: F64
    label: BOOL
    units: Mapping[str, Units]

    @property
    def n_tar(self) -> int:
        """Number of targets."""
        return int(np.count_nonzero(self.label))

    @property
    def n_non(self) -> int:
        """Number of non-targets."""
        return int(self.label.shape[0] - np.count_nonzero(self.label))


@dataclass(frozen=True, eq=False)
class ReplicateTable:
    """The fixed structure of one ordered item sequence (a group's trials or pooled cells).

    Items are sorted by score ascending, targets first at ties. Segments are runs of equal
    labels, additionally cut where a threshold falls (so each segment is wholly on one side of
    every actual-DCF threshold).

    Attributes
    ----------
    n
        Number of items.
    seg_starts
        First item of every segment.
    seg_label
        Label of every segment (True = target).
    terms
        ``(n, 3)``: the finite Cllr term of each target (``softplus(-s)``), of each non-target
        (``softplus(s)``), and 1 where that term is infinite.
    act_masks
        ``(segments, 2K)``: target segments below threshold ``k`` (misses), then non-target
        segments at or above it (false alarms).
    """

    n: int
    seg_starts: I64
    seg_label: BOOL
    terms: F64
    act_masks: F64

    @property
    def identity(self) -> bool:
        """True when every item is its own segment (no ``reduceat`` needed)."""
        return self.seg_starts.shape[0] == self.n


def replicate_table(score: F64, label: BOOL, threshold: F64) -> ReplicateTable:
    """Precompute the fixed structure of sorted ``score``/``label`` for weighted replicates.

    Examples
    --------
    >>> t = replicate_table(np.array([-1.0, 0.5, 1.0, 2.0]), np.array([False, False, True, True]),
    ...                     np.array([0.0]))
    >>> t.seg_starts.tolist(), t.seg_label.tolist()
    ([0, 1, 2], [False, False, True])
    """
    score = np.asarray(score, dtype=np.float64)
    label = np.asarray(label, dtype=bool)
    thr = np.atleast_1d(np.asarray(threshold, dtype=np.float64))
    n = score.shape[0]
    cuts = np.searchsorted(score, thr, side="left")
    change = np.flatnonzero(label[1:] != label[:-1]) + 1
    starts = np.unique(np.concatenate(([0], change, cuts[(cuts > 0) & (cuts < n)])))
    starts = starts.astype(np.int64)
    seg_label = label[starts]
    with np.errstate(over="ignore"):
        t_term = np.where(label, softplus(-score), 0.0)
        n_term = np.where(label, 0.0, softplus(score))
    inf = np.isinf(t_term) | np.isinf(n_term)
    terms = np.column_stack((np.where(inf, 0.0, t_term), np.where(inf, 0.0, n_term),
                             inf.astype(np.float64)))
    before = starts[:, None] < cuts[None, :]
    act_masks = np.concatenate((seg_label[:, None] & before, ~seg_label[:, None] & ~before),
                               axis=1).astype(np.float64)
    return ReplicateTable(n, starts, seg_label, terms, act_masks)


def trial_cells(score: F64, label: BOOL) -> I64:
    """First position of each distinct ``(score, label)`` cell of a sorted group."""
    score = np.asarray(score, dtype=np.float64)
    label = np.asarray(label, dtype=bool)
    new = np.ones(score.shape[0], dtype=bool)
    new[1:] = (score[1:] != score[:-1]) | (label[1:] != label[:-1])
    return np.flatnonzero(new).astype(np.int64)


def pooled_cells(cells: Sequence[tuple[F64, BOOL]]) -> tuple[F64, BOOL, list[I64]]:
    """Merge the distinct ``(score, label)`` cells of several sorted groups into one order.

    Returns the pooled cells' scores and labels (ascending, targets first at ties) and, for
    every group, the pooled index of each of its cells (unique within a group). The groups'
    cells are sorted runs: a stable (run-merging) sort merges them; nothing is re-sorted per
    replicate.

    Examples
    --------
    >>> s, lab, idx = pooled_cells([(np.array([0.0, 1.0]), np.array([True, False])),
    ...                             (np.array([0.0, 2.0]), np.array([False, True]))])
    >>> s.tolist(), lab.tolist(), [i.tolist() for i in idx]
    ([0.0, 0.0, 1.0, 2.0], [True, False, False, True], [[0, 2], [1, 3]])
    """
    def distinct(lab: bool) -> F64:
        parts = [np.asarray(s, dtype=np.float64)[np.asarray(b, dtype=bool) == lab]
                 for s, b in cells]
        merged = np.sort(np.concatenate(parts), kind="stable")
        keep = np.ones(merged.shape[0], dtype=bool)
        keep[1:] = merged[1:] != merged[:-1]
        return merged[keep]

    tar_u, non_u = distinct(True), distinct(False)
    tar_pos = np.arange(tar_u.shape[0]) + np.searchsorted(non_u, tar_u, side="left")
    non_pos = np.arange(non_u.shape[0]) + np.searchsorted(tar_u, non_u, side="right")
    total = tar_u.shape[0] + non_u.shape[0]
    score = np.empty(total)
    lab = np.zeros(total, dtype=bool)
    score[tar_pos] = tar_u
    score[non_pos] = non_u
    lab[tar_pos] = True
    index = []
    for s, b in cells:
        s = np.asarray(s, dtype=np.float64)
        b = np.asarray(b, dtype=bool)
        i = np.empty(s.shape[0], dtype=np.int64)
        i[b] = tar_pos[np.searchsorted(tar_u, s[b])]
        i[~b] = non_pos[np.searchsorted(non_u, s[~b])]
        index.append(i)
    return score, lab, index


def block_metrics(t_b: F64, n_b: F64, p: F64, q: F64) -> dict[str, F64 | float]:
    """EER, minDCF (normalized), the min point's rates and exact-PAV minCllr from PAV blocks.

    ``t_b``, ``n_b`` are the (weighted) target and non-target counts of the PAV blocks in
    score order. Same formulas as :mod:`scoreframe.kernels.rocch` and
    :func:`scoreframe.kernels.cllr.min_cllr` with ``ramp=False``.
    """
    cum_t = np.concatenate(([0.0], np.cumsum(t_b)))
    cum_n = np.concatenate(([0.0], np.cumsum(n_b)))
    big_t, big_n = cum_t[-1], cum_n[-1]
    pmiss = cum_t / big_t
    pfa = (big_n - cum_n) / big_n
    cost = p[:, None] * pmiss[None, :] + q[:, None] * pfa[None, :]
    j = np.argmin(cost, axis=1)
    has_t, has_n = t_b > 0, n_b > 0
    with np.errstate(divide="ignore"):
        llr = (np.log(t_b) - np.log(n_b)) - (math.log(big_t) - math.log(big_n))
    tar_sum = float(np.sum(t_b[has_t] * softplus(-llr[has_t])))
    non_sum = float(np.sum(n_b[has_n] * softplus(llr[has_n])))
    return {"eer": crossing(pfa, pmiss),
            "min_dcf_norm": cost[np.arange(j.shape[0]), j] / np.minimum(p, q),
            "pmiss_min": pmiss[j], "pfa_min": pfa[j],
            "min_cllr": (tar_sum / big_t + non_sum / big_n) / (2.0 * LOG2)}


def _pav(w: F64, lab: BOOL) -> tuple[F64, F64]:
    """Weighted PAV blocks (target and non-target weight per block) of labelled segments."""
    keep = w > 0
    w, lab = w[keep], lab[keep]
    change = np.flatnonzero(lab[1:] != lab[:-1]) + 1
    starts = np.concatenate(([0], change))
    rw = np.add.reduceat(w, starts)
    rl = lab[starts]
    if rw.shape[0] == 1:
        bstarts = np.array([0])
    else:
        bstarts = np.asarray(isotonic_regression(rl.astype(np.float64), weights=rw).blocks[:-1])
    t_b = np.add.reduceat(np.where(rl, rw, 0.0), bstarts)
    return t_b, np.add.reduceat(rw, bstarts) - t_b


#: Names of the per-replicate outputs: scalars, then arrays with one value per operating point.
SCALARS = ("eer", "cllr", "min_cllr")
PER_POINT = ("act_dcf_norm", "min_dcf_norm", "pmiss_min", "pfa_min")


def replicate_metrics(table: ReplicateTable, weights: F64, p: F64, q: F64
                      ) -> dict[str, F64]:
    """All metrics of every replicate: ``weights`` is ``(b, n)``, one row per replicate.

    Returns ``eer``, ``cllr``, ``min_cllr`` of shape ``(b,)`` and ``act_dcf_norm``,
    ``min_dcf_norm``, ``pmiss_min``, ``pfa_min`` of shape ``(b, K)``; NaN where a replicate has
    no target or no non-target weight. ``min_cllr`` is the exact PAV value (no BOSARIS ramp).

    Examples
    --------
    >>> t = replicate_table(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([False, True, False, True]),
    ...                     np.array([0.0]))
    >>> m = replicate_metrics(t, np.ones((1, 4)), np.array([0.5]), np.array([0.5]))
    >>> float(m["eer"][0]), float(m["act_dcf_norm"][0, 0])  # as scoreframe.eer, act_dcf
    (0.25, 1.0)
    """
    w = np.asarray(weights, dtype=np.float64)
    b = w.shape[0]
    k = p.shape[0]
    seg_w = w if table.identity else np.add.reduceat(w, table.seg_starts, axis=1)
    # Row by row in a fixed (pairwise) order: a BLAS product's summation order follows the
    # number of rows and threads, which made results depend on chunking and workers.
    sums = np.stack([np.multiply(w, t).sum(axis=1) for t in table.terms.T], axis=1)
    big_t = seg_w @ table.seg_label.astype(np.float64)
    big_n = seg_w.sum(axis=1) - big_t
    act = seg_w @ table.act_masks
    ok = (big_t > 0) & (big_n > 0)
    out = {name: np.full(b, np.nan) for name in SCALARS}
    out |= {name: np.full((b, k), np.nan) for name in PER_POINT}
    with np.errstate(divide="ignore", invalid="ignore"):
        cllr = (sums[:, 0] / big_t + sums[:, 1] / big_n) / (2.0 * LOG2)
        out["cllr"] = np.where(ok, np.where(sums[:, 2] > 0, np.inf, cllr), np.nan)
        act_dcf = (p[None, :] * act[:, :k] / big_t[:, None]
                   + q[None, :] * act[:, k:] / big_n[:, None]) / np.minimum(p, q)[None, :]
        out["act_dcf_norm"] = np.where(ok[:, None], act_dcf, np.nan)
    for r in np.flatnonzero(ok):
        t_b, n_b = _pav(seg_w[r], table.seg_label)
        m = block_metrics(t_b, n_b, p, q)
        out["eer"][r] = m["eer"]
        out["min_cllr"][r] = m["min_cllr"]
        out["min_dcf_norm"][r] = m["min_dcf_norm"]
        out["pmiss_min"][r] = m["pmiss_min"]
        out["pfa_min"][r] = m["pfa_min"]
    return out


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


def trial_weights(mult: Mapping[str, NDArray[np.uint8]], units: Mapping[str, Units]) -> F64:
    """Per-trial weights ``(b, n)``: the product over columns of each trial's unit multiplicity."""
    names = list(mult)
    out: F64 | None = None
    for name in names:
        u = units[name]
        m = mult[name][:, u.run] if u.run is not None else mult[name][:, u.codes]
        if out is None:
            out = m.astype(np.float64)
        else:
            out *= m
    return out if out is not None else np.ones((0, 0))
