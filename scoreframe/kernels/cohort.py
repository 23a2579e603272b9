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

__all__ = ["MAX_ABS", "GroupMoments", "group_topk", "merge_topk", "moments_of_rows",
           "row_topk"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: Largest magnitude accepted by :class:`GroupMoments` (squares stay finite and exact).
MAX_ABS = 2.0**500
_SCALE = 1126  # sums are integers in units of 2**-1126 (as elementary.exact_sum)
_MASK = (1 << 32) - 1
_CHUNK = 1 << 16  # values per bincount call: bins of 32-bit chunks stay below 2**53
_STRIDE = 8  # column stride of the top-k screen
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitter for float64


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

    def merge(self, other: _Limbs, rows: I64 | None = None) -> None:
        """Add ``other`` (whose group ``i`` is this one's ``rows[i]``, all if ``None``)."""
        if other.acc.shape[1] == 0:
            return
        self._widen(other.lo, other.lo + other.acc.shape[1] - 2)
        start = other.lo - self.lo
        cols = slice(start, start + other.acc.shape[1])
        if rows is None:
            self.acc[:, cols] += other.acc
            self._carry()
        else:
            part = self.acc[rows]
            part[:, cols] += other.acc
            self._carry(part)
            self.acc[rows] = part

    def take(self, rows: I64) -> _Limbs:
        """The limbs of groups ``rows`` only (renumbered ``0..len(rows)-1``)."""
        out = _Limbs(rows.shape[0])
        out.lo, out.acc = self.lo, self.acc[rows]
        return out

    def values(self) -> list[int]:
        """The exact sum of every group in units of ``2**-1126``.

        The carries are propagated limb by limb (on a copy) so that every limb but the top
        one (which holds the sign) is a digit in ``[0, 2**32)``; each row below the top is
        then read as one little-endian integer.
        """
        w = self.acc.shape[1]
        if w == 0:
            return [0] * self.n_groups
        a = self.acc.copy()
        for j in range(w - 1):
            carry = a[:, j] >> 32
            a[:, j] -= carry << 32
            a[:, j + 1] += carry
        data = a[:, :-1].astype("<u4").tobytes()
        size = 4 * (w - 1)
        top_shift, shift = 32 * (w - 1), 32 * self.lo
        return [(int.from_bytes(data[i * size:(i + 1) * size], "little") + (t << top_shift))
                << shift for i, t in enumerate(a[:, -1].tolist())]


#: Bits per piece of :class:`_Binned`: up to 2**21 pieces of magnitude <= 2**32 grid units
#: sum exactly in float64 (2**53).
_WINDOW = 32
_BIN_LIMIT = 1 << 21  # values per group and bin between two flushes
_BIN_CHUNK = 1 << 16  # values per bincount call (in cache)


class _Binned:
    """Exact per-group sums in float64 bins on a fixed grid, flushed into :class:`_Limbs`.

    While the values stay below ``2**top``, each value ``x`` is split exactly into pieces on
    fixed grids (``q1 = round(x, 2**(top-32))``, ``q2 = round(x - q1, 2**(top-64))``, ...;
    Rump, Ogita and Oishi's ExtractScalar, ``q = (x + c) - c``): every piece is an integer of
    at most 32 bits times its grid unit, so up to :data:`_BIN_LIMIT` of them sum exactly in a
    float64 bin (``np.bincount`` adds them in any order, exactly). A value with bits left
    below the last grid (much smaller than the largest) goes to the limbs directly. The bins
    are flushed into the limbs (exact) before the grid changes (a larger value) or a bin
    could hold too many values, and when the sums are read.
    """

    def __init__(self, limbs: _Limbs, pieces: int) -> None:
        self.limbs = limbs
        self.pieces = pieces
        self.top: int | None = None  # every binned value is below 2**top
        self.bins: F64 = np.zeros((pieces, limbs.n_groups))
        self.pending: I64 = np.zeros(limbs.n_groups, dtype=np.int64)  # values per group

    def flush(self) -> None:
        """Move the bins into the limbs (exact) and forget the grid."""
        used = np.flatnonzero(self.pending)
        if used.shape[0]:
            vals = self.bins[:, used]
            self.limbs.add(vals.ravel(), np.tile(used, self.pieces))
            self.bins[:, used] = 0.0
            self.pending[used] = 0
        self.top = None

    def begin(self, top: int, counts: I64) -> bool:
        """Prepare for values below ``2**top``, ``counts`` per group; False: bins unusable.

        Flushes first if the grid must grow or a bin would exceed :data:`_BIN_LIMIT` values.
        Grids below the smallest subnormal cannot be used (the values then go to the limbs).
        """
        if top - _WINDOW * self.pieces < -1074:
            return False
        if self.top is None or top > self.top or int((self.pending + counts).max()) > _BIN_LIMIT:
            self.flush()
            self.top = top
        self.pending += counts
        return True

    def add(self, x: F64, groups: I64, local: I64, lo: int) -> None:
        """Add values below ``2**top`` of :meth:`begin` (whose counts included them).

        ``local = groups - lo``: the values' bins counted from group ``lo`` (0 for all).
        """
        assert self.top is not None
        bins = self.bins[:, lo:lo + int(local.max()) + 1]
        q = np.empty_like(x)
        r = x
        for j in range(self.pieces):
            c = 1.5 * 2.0 ** (self.top - _WINDOW * (j + 1) + 52)
            np.add(r, c, out=q)
            q -= c  # r rounded to the grid 2**(top - 32 (j + 1)), exactly
            r = r - q if j == 0 else np.subtract(r, q, out=r)  # exact
            bins[j] += np.bincount(local, weights=q, minlength=bins.shape[1])
        rest = np.flatnonzero(r)
        if rest.shape[0]:  # bits below the last grid: exact limbs
            self.limbs.add(r[rest], groups[rest])


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
        # values, squares and the squares' rounding errors, binned
        self._bins = (_Binned(self._s1, 2), _Binned(self._s2, 2), _Binned(self._s2, 3))

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
        for i in range(0, x.shape[0], _BIN_LIMIT):  # a group gets <= _BIN_LIMIT per call
            self._add(x[i:i + _BIN_LIMIT], g[i:i + _BIN_LIMIT])

    def _add(self, x: F64, g: I64) -> None:
        counts = np.bincount(g, minlength=self.n_groups)
        self.count += counts
        big = float(np.abs(x).max())
        if big == 0.0:
            return
        top_x = math.frexp(big)[1]  # |x| < 2**top_x
        top_p = math.frexp(big * big)[1]  # x*x rounds to at most fl(big*big) < 2**top_p
        # the squares' rounding errors are at most half an ulp of 2**top_p: below 2**(top_p-53)
        binned = [b.begin(t, counts) for b, t in zip(self._bins, (top_x, top_p, top_p - 53),
                                                     strict=True)]
        grouped = x.shape[0] < 2 or bool((g[1:] >= g[:-1]).all())
        # chunks stay in cache; scattered groups: chunks as wide as the groups' bins
        step = _BIN_CHUNK if grouped else max(4 * _BIN_CHUNK, self.n_groups)
        for i in range(0, x.shape[0], step):
            xs, gs = x[i:i + step], g[i:i + step]
            p = xs * xs  # Dekker's TwoProduct: x*x = p + e exactly
            hi = xs * _SPLIT
            hi -= hi - xs
            lo = xs - hi
            e = hi * hi
            e -= p
            e += 2.0 * hi * lo
            lo *= lo
            e += lo
            gmin = int(gs.min())
            base = gmin if int(gs.max()) - gmin < 2 * gs.shape[0] else 0  # a range of groups?
            local = gs - base if base else gs
            for b, ok, v in zip(self._bins, binned, (xs, p, e), strict=True):
                if ok:
                    b.add(v, gs, local, base)
                else:
                    b.limbs.add(v, gs)

    def _flush(self) -> None:
        for b in self._bins:
            b.flush()

    def merge(self, other: GroupMoments, rows: ArrayLike | None = None) -> GroupMoments:
        """Add another accumulator into this one (exact); return self.

        Without ``rows``, ``other`` has the same groups; with ``rows``, its group ``i`` is
        this one's group ``rows[i]`` (distinct), as made by :meth:`take`.
        """
        idx = None if rows is None else np.asarray(rows, dtype=np.int64)
        want = self.n_groups if idx is None else idx.shape[0]
        if other.n_groups != want:
            raise ValueError(f"cannot merge moments of {other.n_groups} groups into {want}")
        self._flush()
        other._flush()
        if idx is None:
            self.count += other.count
        else:
            self.count[idx] += other.count
        self._s1.merge(other._s1, idx)
        self._s2.merge(other._s2, idx)
        return self

    def take(self, rows: ArrayLike) -> GroupMoments:
        """A new accumulator of groups ``rows`` only (renumbered ``0..len(rows)-1``).

        >>> m = GroupMoments(3)
        >>> m.add(np.array([1.0, 2.0, 4.0]), np.array([0, 2, 2]))
        >>> part = m.take([2])
        >>> float(part.finalize()[0][0])
        3.0
        >>> float(GroupMoments(3).merge(part, rows=[1]).finalize()[0][1])
        3.0
        """
        idx = np.asarray(rows, dtype=np.int64)
        self._flush()
        out = GroupMoments(idx.shape[0])
        out.count = self.count[idx]
        out._s1, out._s2 = self._s1.take(idx), self._s2.take(idx)
        out._bins = (_Binned(out._s1, 2), _Binned(out._s2, 2), _Binned(out._s2, 3))
        return out

    def finalize(self, *, ddof: int = 0) -> tuple[F64, F64]:
        """Mean and standard deviation per group, each rounded once from the exact sums.

        ``mean = S1 / n`` and ``var = (n S2 - S1**2) / (n (n - ddof))`` are formed in exact
        integer arithmetic and rounded correctly; ``std = sqrt(var)``. Groups with fewer than
        ``ddof + 1`` values get NaN.
        """
        self._flush()
        mean = np.full(self.n_groups, np.nan)
        std = np.full(self.n_groups, np.nan)
        scale = 1 << _SCALE
        sums1, sums2 = self._s1.values(), self._s2.values()
        for g, n in enumerate(self.count.tolist()):
            if n == 0:
                continue
            s1, s2 = sums1[g], sums2[g]
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


#: A batch is laid out as a dense (groups x longest run) matrix when that holds at most this
#: many times its values; else its values are sorted (by group, then descending).
_PAD_FACTOR = 4
#: Batches with at most this many runs of groups select each run's top k on its own.
_FEW_RUNS = 64


def group_topk(values: ArrayLike, groups: ArrayLike, k: int) -> tuple[I64, F64]:
    """The ``k`` largest values of every group present: ``(groups, rows)``.

    ``groups`` are the distinct group codes present, ascending; row ``i`` of ``rows`` holds
    the largest values of ``groups[i]``, sorted descending, padded with ``-inf`` when the
    group has fewer than ``k``. The values are gathered by group with one stable sort of the
    codes (linear on data already grouped), laid out as a dense matrix padded with ``-inf``,
    and each row's k largest are selected by partitioning (:func:`row_topk`); a batch whose
    groups are too uneven for a dense matrix is sorted instead. The result is the same
    multiset of values per group whatever the order of the input.

    >>> g, top = group_topk(np.array([1.0, 5.0, 3.0, 2.0]), np.array([7, 3, 7, 7]), 2)
    >>> g.tolist(), top.tolist()
    ([3, 7], [[5.0, -inf], [3.0, 2.0]])
    """
    x = np.ascontiguousarray(values, dtype=np.float64).ravel()
    c = np.ascontiguousarray(groups, dtype=np.int64).ravel()
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    if x.shape[0] == 0:
        return np.empty(0, dtype=np.int64), np.empty((0, k))
    if c.shape[0] > 1 and not bool((c[1:] >= c[:-1]).all()):
        order = np.argsort(c, kind="stable")
        c, x = c[order], x[order]
    n = c.shape[0]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    lengths = np.diff(np.r_[starts, n])
    if starts.shape[0] <= _FEW_RUNS:  # a few long runs: partition each in place
        top = np.full((starts.shape[0], k), -np.inf)
        for i, (s, m) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
            run = x[s:s + m]
            part = run if m <= k else np.partition(run, m - k)[m - k:]
            top[i, :part.shape[0]] = np.sort(part)[::-1]
        return c[starts], top
    width = int(lengths.max())
    rank = np.arange(n) - np.repeat(starts, lengths)
    row = np.repeat(np.arange(starts.shape[0]), lengths)
    if starts.shape[0] * max(width, k) <= _PAD_FACTOR * n + 64 * k:
        dense = np.full((starts.shape[0], max(width, k)), -np.inf)
        dense[row, rank] = x
        top = row_topk(dense, k)
    else:  # very uneven runs: sort each run descending, keep the first k
        order = np.lexsort((-x, c))
        keep = rank < k
        top = np.full((starts.shape[0], k), -np.inf)
        top[row[keep], rank[keep]] = x[order][keep]
    return c[starts], top


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
