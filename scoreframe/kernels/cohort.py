"""Cohort statistics kernels for score normalization: exact grouped moments and top-k.

numpy only. Two pieces:

* :class:`GroupMoments` -- per-group count, sum and sum of squares of float64 values, held
  *exactly* as integers in units of ``2**-1126`` (the unit of
  :func:`~scoreframe.kernels.elementary.exact_sum`), in 32-bit limbs accumulated with
  vectorized integer arithmetic. Merging two accumulators adds limbs, so the result does not
  depend on how the values were split into batches, blocks or workers, nor on their order;
  the mean and the variance are then computed from the exact sums and rounded once.
  Squares are split exactly (Dekker's TwoProduct: ``x*x = p + e`` with ``p = fl(x*x)`` and
  ``e`` its exact rounding error), so sums of squares are exact too for
  ``2**-510 < |x| < 2**500``.
* top-k selection per row or per group (:func:`row_topk`, :func:`merge_topk`): the k largest
  values, sorted descending, and their moments (:func:`moments_of_rows`). The k largest
  values of a set form a unique multiset whatever the order or grouping of the input, so
  top-k statistics are deterministic; among equal values the kept copy is irrelevant.

References: T. J. Dekker, "A floating-point technique for extending the available precision",
Numer. Math. 18 (1971) -- the exact splitting of products.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MAX_ABS", "GroupMoments", "merge_topk", "moments_of_rows", "row_topk"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: Largest magnitude accepted by :class:`GroupMoments` (squares stay finite and exact).
MAX_ABS = 2.0**500
_SCALE = 1126  # sums are integers in units of 2**-1126 (as elementary.exact_sum)
_MASK = (1 << 32) - 1
_CHUNK = 1 << 16  # values per bincount call: bins of 32-bit chunks stay below 2**53
_STRIDE = 8  # column stride of the top-k screen
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


def _square_terms(x: F64) -> F64:
    """``x*x`` as two floats whose exact sum is ``x*x`` (Dekker's TwoProduct: ``p, e``)."""
    c = x * _SPLIT
    hi = c - (c - x)
    lo = x - hi
    p = x * x
    e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    return np.concatenate([p, e])


class _Limbs:
    """Exact per-group sums as signed 32-bit limbs (int64 storage, lazily widened)."""

    def __init__(self, n_groups: int) -> None:
        self.n_groups = n_groups
        self.lo = 0  # index of the first limb held
        self.acc: I64 = np.zeros((n_groups, 0), dtype=np.int64)

    def _widen(self, lo: int, hi: int) -> None:
        """Hold limbs ``lo..hi-1`` at least (plus two carry limbs on top)."""
        hi += 2
        if self.acc.shape[1] == 0:
            self.lo, self.acc = lo, np.zeros((self.n_groups, hi - lo), dtype=np.int64)
            return
        cur_hi = self.lo + self.acc.shape[1]
        new_lo, new_hi = min(lo, self.lo), max(hi, cur_hi)
        if (new_lo, new_hi) == (self.lo, cur_hi):
            return
        acc = np.zeros((self.n_groups, new_hi - new_lo), dtype=np.int64)
        acc[:, self.lo - new_lo:self.lo - new_lo + self.acc.shape[1]] = self.acc
        self.lo, self.acc = new_lo, acc

    def _carry(self, a: I64 | None = None) -> None:
        """Move every limb's bits above 32 into the next limb (in place)."""
        a = self.acc if a is None else a
        carry = a[:, :-1] >> 32  # arithmetic shift: floor division by 2**32
        a[:, :-1] -= carry << 32
        a[:, 1:] += carry

    def add(self, x: F64, groups: I64) -> None:
        nz = x != 0.0  # zeros add nothing (and would widen the limb range)
        if not nz.all():
            x, groups = x[nz], groups[nz]
        for i in range(0, x.shape[0], _CHUNK):
            self._add(x[i:i + _CHUNK], groups[i:i + _CHUNK])

    def _add(self, x: F64, groups: I64) -> None:
        bits = x.view(np.int64)
        field = (bits >> 52) & 0x7FF
        mant = bits & 0xFFFFFFFFFFFFF
        mant |= (field > 0).astype(np.int64) << 52
        pos = np.maximum(field, 1) + (_SCALE - 1075)  # value = mant * 2**(pos - 1126)
        limb = pos >> 5
        off = pos & 31
        np.negative(mant, out=mant, where=bits < 0)  # signed mantissa: the chunks below are
        c0 = (mant & ((np.int64(1) << (32 - off)) - 1)) << off  # two's complement digits,
        c1 = (mant >> (32 - off)) & _MASK  # the top one (c2) carries the sign
        c2 = mant >> (64 - off)
        lo, hi = int(limb.min()), int(limb.max()) + 3
        self._widen(lo, hi)
        width = hi - lo  # only the limbs this chunk touches
        gmin, gmax = int(groups.min()), int(groups.max())
        present: I64 | None = None
        if gmax - gmin + 1 <= 2 * groups.shape[0]:  # a range of groups (grouped data)
            local = groups - gmin
            n_local = gmax - gmin + 1
        else:  # scattered groups: number those present
            present = np.flatnonzero(np.bincount(groups, minlength=self.n_groups))
            lut = np.zeros(self.n_groups, dtype=np.int64)
            lut[present] = np.arange(present.shape[0])
            local = lut[groups]
            n_local = present.shape[0]
        base = local * width + (limb - lo)
        size = n_local * width
        total = np.zeros(size, dtype=np.int64)
        for j, c in enumerate((c0, c1, c2)):
            total += np.rint(np.bincount(base + j, weights=c.astype(np.float64),
                                         minlength=size)).astype(np.int64)
        cols = slice(lo - self.lo, hi - self.lo)
        if present is None:
            rows = self.acc[gmin:gmax + 1]  # a view
            rows[:, cols] += total.reshape(n_local, width)
            self._carry(rows)
        else:
            rows = self.acc[present]
            rows[:, cols] += total.reshape(n_local, width)
            self._carry(rows)
            self.acc[present] = rows

    def merge(self, other: _Limbs) -> None:
        if other.acc.shape[1] == 0:
            return
        self._widen(other.lo, other.lo + other.acc.shape[1] - 2)
        start = other.lo - self.lo
        self.acc[:, start:start + other.acc.shape[1]] += other.acc
        self._carry()

    def value(self, g: int) -> int:
        """The exact sum of group ``g`` in units of ``2**-1126``."""
        row = self.acc[g]
        if row.shape[0] == 0:
            return 0
        total: int = sum(v << (32 * j) for j, v in enumerate(row.tolist()))
        return total << (32 * self.lo)


class GroupMoments:
    """Exact, mergeable count, sum and sum of squares of float64 values per group.

    Parameters
    ----------
    n_groups
        Number of groups; values are added with integer group codes in ``[0, n_groups)``.

    Examples
    --------
    >>> m = GroupMoments(2)
    >>> m.add(np.array([0.1] * 10 + [1.0, 3.0]), np.array([0] * 10 + [1, 1]))
    >>> mean, std = m.finalize(ddof=0)
    >>> float(mean[0]), float(mean[1]), float(std[1])
    (0.1, 2.0, 1.0)
    """

    def __init__(self, n_groups: int) -> None:
        self.n_groups = int(n_groups)
        self.count: I64 = np.zeros(self.n_groups, dtype=np.int64)
        self._s1 = _Limbs(self.n_groups)
        self._s2 = _Limbs(self.n_groups)

    def add(self, values: ArrayLike, groups: ArrayLike) -> None:
        """Add finite values of magnitude below :data:`MAX_ABS` to their groups."""
        x = np.ascontiguousarray(values, dtype=np.float64).ravel()
        g = np.ascontiguousarray(groups, dtype=np.int64).ravel()
        if x.shape != g.shape:
            raise ValueError(f"values and groups differ in length: {x.shape[0]} != {g.shape[0]}")
        if x.shape[0] == 0:
            return
        if not np.all(np.abs(x) < MAX_ABS):  # also rejects NaN and infinities
            raise ValueError("values must be finite and of magnitude below 2**500")
        self.count += np.bincount(g, minlength=self.n_groups)
        for i in range(0, x.shape[0], _CHUNK):  # chunks stay in cache
            xs, gs = x[i:i + _CHUNK], g[i:i + _CHUNK]
            self._s1.add(xs, gs)
            self._s2.add(_square_terms(xs), np.concatenate([gs, gs]))

    def merge(self, other: GroupMoments) -> GroupMoments:
        """Add another accumulator of the same groups into this one (exact); return self."""
        if other.n_groups != self.n_groups:
            raise ValueError("cannot merge moments of different group counts")
        self.count += other.count
        self._s1.merge(other._s1)
        self._s2.merge(other._s2)
        return self

    def finalize(self, *, ddof: int = 0) -> tuple[F64, F64]:
        """Mean and standard deviation per group, each rounded once from the exact sums.

        ``mean = S1 / n`` and ``var = (n S2 - S1**2) / (n (n - ddof))`` are formed in exact
        integer arithmetic and rounded correctly; ``std = sqrt(var)``. Groups with fewer than
        ``ddof + 1`` values get NaN.
        """
        mean = np.full(self.n_groups, np.nan)
        std = np.full(self.n_groups, np.nan)
        scale = 1 << _SCALE
        for g in range(self.n_groups):
            n = int(self.count[g])
            if n == 0:
                continue
            s1, s2 = self._s1.value(g), self._s2.value(g)
            mean[g] = s1 / (n * scale)
            if n > ddof:
                num = n * s2 * scale - s1 * s1
                std[g] = math.sqrt(max(num, 0) / (n * (n - ddof) * scale * scale))
        return mean, std


def row_topk(block: ArrayLike, k: int) -> F64:
    """The ``k`` largest values of every row, sorted descending (shape ``(rows, k)``).

    Wide rows are first screened: the k-th largest value ``t`` of every 8th column is a
    threshold that at least k values of the row reach, so the row's k largest are among its
    values ``>= t`` (all of them, ties included), and only those are partitioned.

    >>> row_topk(np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]]), 2).tolist()
    [[3.0, 2.0], [5.0, 5.0]]
    """
    a = np.asarray(block, dtype=np.float64)
    rows, n = a.shape
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}]; got {k}")
    if n >= 32 * k and rows > 0:
        sub = a[:, ::_STRIDE]
        t = np.partition(sub, sub.shape[1] - k, axis=1)[:, sub.shape[1] - k]
        keep = a >= t[:, None]
        counts = keep.sum(axis=1)
        width = int(counts.max())
        if width < n // 2:
            vals = a[keep]  # row-major: each row's candidates together
            cand = np.full((rows, width), -np.inf)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            col = np.arange(vals.shape[0]) - np.repeat(starts, counts)
            cand[np.repeat(np.arange(rows), counts), col] = vals
            a = cand
            n = width
    part = a if k == n else np.partition(a, n - k, axis=1)[:, n - k:]
    return np.sort(part, axis=1)[:, ::-1].copy()


def merge_topk(a: F64, b: F64, k: int) -> F64:
    """Top-k rows of two top-k states (``-inf`` pads missing values).

    >>> merge_topk(np.array([[3.0, 1.0]]), np.array([[2.0, -np.inf]]), 2).tolist()
    [[3.0, 2.0]]
    """
    return row_topk(np.concatenate([a, b], axis=1), k)


def moments_of_rows(values: F64, *, ddof: int) -> tuple[F64, F64]:
    """Mean and standard deviation of every row of a 2-D array, in two passes.

    Each row is summed on its own (the result depends on the row's values and their order
    only, never on the other rows), then the squared deviations from the row mean. Applied to
    sorted top-k rows, which are the same whatever the blocking, it is deterministic.

    >>> mean, std = moments_of_rows(np.array([[1.0, 3.0], [2.0, 2.0]]), ddof=0)
    >>> mean.tolist(), std.tolist()
    ([2.0, 2.0], [1.0, 0.0])
    """
    v = np.ascontiguousarray(values, dtype=np.float64)
    k = v.shape[1]
    mean = v.sum(axis=1) / k
    dev = v - mean[:, None]
    np.square(dev, out=dev)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = dev.sum(axis=1) / (k - ddof)
    return mean, np.sqrt(var) if k > ddof else np.full(v.shape[0], np.nan)
