"""The one sorted-statistics kernel: sorted scores, merged label runs and PAV blocks.

numpy/scipy only. Everything binary (ROCCH, minDCF, EER, PRBEP, minCllr, PAV llrs, DET) is read
from the :class:`Blocks` computed here, and actual DCF from the sorted arrays themselves, so one
group costs one sort (docs/math.md sections 4-5; [BdV11] section 3.2).

Order convention: scores ascending, and among equal scores targets before non-targets (the
pessimistic order of BOSARIS' stable sort of ``[tar non]``). A tie group is never split by PAV.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoreframe._cached_property import cached_property
from scoreframe.kernels.elementary import exact_sum, softplus

__all__ = ["BlockStack", "Blocks", "SortedScores", "concat_blocks", "end_labels", "label_runs",
           "nontarget_cost_sum", "pav_blocks", "pav_runs", "sort_scores", "target_cost_sum"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class SortedScores:
    """Target and non-target scores of one group, each sorted ascending.

    Build it with :func:`sort_scores` (or directly from arrays already sorted, e.g. by a
    dataframe engine). The PAV blocks are computed on first use and cached.
    """

    tar: F64
    non: F64

    def __post_init__(self) -> None:
        # zeros made positive: -0.0 and 0.0 are one score, and sorts leave the two in any
        # order among equal values; with one sign, every sort gives the same bits
        for name in ("tar", "non"):
            x = getattr(self, name)
            lo = np.searchsorted(x, 0.0, side="left")
            hi = np.searchsorted(x, 0.0, side="right")
            if hi > lo and np.signbit(x[lo:hi]).any():
                x = x.copy()  # never in place: the array may be the caller's, or read-only
                x[lo:hi] = 0.0
                object.__setattr__(self, name, x)

    @property
    def n_tar(self) -> int:
        """Number of target trials."""
        return int(self.tar.shape[0])

    @property
    def n_non(self) -> int:
        """Number of non-target trials."""
        return int(self.non.shape[0])

    @cached_property
    def blocks(self) -> Blocks:
        """PAV blocks of the merged, labelled scores (see :func:`pav_blocks`)."""
        return pav_blocks(self)

    @cached_property
    def cllr_sums(self) -> tuple[int, int]:
        """Exact sums of ``softplus(-tar)`` and ``softplus(non)`` over the finite-cost trials.

        Integers in units of ``2**-1126`` (:func:`~scoreframe.kernels.elementary.exact_sum`):
        the Cllr of the scores up to its constant factors, mergeable by integer addition.
        :meth:`seeded` sets it when the sums were computed with the sort.
        """
        return target_cost_sum(self.tar), nontarget_cost_sum(self.non)

    @classmethod
    def seeded(cls, tar: F64, non: F64, cllr_sums: tuple[int, int]) -> SortedScores:
        """Sorted scores whose :attr:`cllr_sums` are already known (summed piece by piece)."""
        s = cls(tar, non)
        s.__dict__["cllr_sums"] = cllr_sums  # the cached_property's own slot
        return s

    @cached_property
    def tar_positions(self) -> I64:
        """0-based position of every sorted target in the merged order."""
        return np.arange(self.n_tar, dtype=np.int64) + np.searchsorted(
            self.non, self.tar, side="left"
        ).astype(np.int64)

    def merged_labels(self) -> NDArray[np.bool_]:
        """Labels of all trials in merged order (True = target); O(n) memory."""
        lab = np.zeros(self.n_tar + self.n_non, dtype=bool)
        lab[self.tar_positions] = True
        return lab

    def score_at(self, positions: I64) -> F64:
        """Score at the given 0-based merged positions, without building the merged array."""
        positions = np.asarray(positions, dtype=np.int64)
        k = np.searchsorted(self.tar_positions, positions, side="left")  # targets before
        is_tar = np.zeros(positions.shape, dtype=bool)
        inside = k < self.n_tar
        is_tar[inside] = self.tar_positions[k[inside]] == positions[inside]
        out = np.empty(positions.shape, dtype=np.float64)
        out[is_tar] = self.tar[k[is_tar]]
        out[~is_tar] = self.non[positions[~is_tar] - k[~is_tar]]
        return out


def target_cost_sum(tar: F64) -> int:
    """Exact sum of ``softplus(-x)`` over sorted target scores, leaving out ``-inf`` (cost inf).

    Sums of pieces of a sorted array add up to the sum of the whole, exactly.

    >>> from scoreframe.kernels.elementary import exact_to_float
    >>> exact_to_float(target_cost_sum(np.array([-np.inf, 0.0, np.inf])))
    0.6931471805599453
    """
    lo = int(np.searchsorted(tar, -np.inf, side="right"))
    return exact_sum(softplus(-tar[lo:])[::-1], ascending=True)


def nontarget_cost_sum(non: F64) -> int:
    """Exact sum of ``softplus(x)`` over sorted non-target scores, the ``+inf`` left out.

    >>> from scoreframe.kernels.elementary import exact_to_float
    >>> exact_to_float(nontarget_cost_sum(np.array([-np.inf, 0.0, np.inf])))
    0.6931471805599453
    """
    hi = int(np.searchsorted(non, np.inf, side="left"))
    return exact_sum(softplus(non[:hi]), ascending=True)


def sort_scores(tar: ArrayLike, non: ArrayLike) -> SortedScores:
    """Sort target and non-target scores (one sort of the group's scores).

    Parameters
    ----------
    tar, non
        Scores of target and non-target trials; larger favours target. Not validated here:
        the public functions of :mod:`scoreframe.metrics` reject NaN and empty inputs.

    Examples
    --------
    >>> s = sort_scores([2.0, 1.0], [0.5, 3.0])
    >>> s.tar.tolist(), s.non.tolist()
    ([1.0, 2.0], [0.5, 3.0])
    """
    return SortedScores(np.sort(np.asarray(tar, dtype=np.float64)),
                        np.sort(np.asarray(non, dtype=np.float64)))


@dataclass(frozen=True, eq=False)
class Blocks:
    """PAV blocks: maximal runs of the merged order pooled by isotonic regression.

    Block means (target fractions) are strictly increasing. These few numbers are the
    sufficient statistics of ROCCH, minDCF at any prior, EER, PRBEP and minCllr.

    Attributes
    ----------
    n_tar, n_non
        Targets and non-targets in each block.
    start
        0-based merged position of each block's first trial.
    lo, hi
        Lowest and highest score in each block.
    tar_pos_sum, tar_pos_sq
        Sum and sum of squares of the 1-based merged positions of the block's targets (used
        only to reproduce BOSARIS' monotonicity ramp in minCllr exactly).
    """

    n_tar: I64
    n_non: I64
    start: I64
    lo: F64
    hi: F64
    tar_pos_sum: F64
    tar_pos_sq: F64

    @property
    def total_tar(self) -> int:
        """All targets."""
        return int(self.n_tar.sum())

    @property
    def total_non(self) -> int:
        """All non-targets."""
        return int(self.n_non.sum())

    @property
    def size(self) -> I64:
        """Trials per block."""
        return self.n_tar + self.n_non

    def llr(self) -> F64:
        """PAV llr of each block: ``logit(p_b) - log(T/N)`` (docs/math.md §4.3); may be +-inf."""
        return BlockStack.of([self]).llr()


@dataclass(frozen=True, eq=False)
class BlockStack:
    """The PAV blocks of several replicates (or groups), one after the other.

    What the kernels vectorized over replicates read (:func:`~scoreframe.kernels.rocch.min_dcf`
    and the other ``*_stack`` kernels): the point value of one group is the stack of its one
    :class:`Blocks` (:meth:`of`), so both come from the same code, bit for bit.

    Attributes
    ----------
    n_tar, n_non
        Targets and non-targets in each block, the blocks of every member concatenated.
    offsets
        ``R + 1`` indices: member ``r`` holds blocks ``offsets[r]:offsets[r + 1]``.

    Examples
    --------
    >>> a = pav_blocks(sort_scores([1.0, 2.0], [0.0]))
    >>> b = pav_blocks(sort_scores([0.0], [1.0, 2.0]))
    >>> st = BlockStack.of([a, b])
    >>> st.offsets.tolist(), st.total_tar.tolist(), st.total_non.tolist()
    ([0, 2, 3], [2, 1], [1, 2])
    """

    n_tar: I64
    n_non: I64
    offsets: I64

    @classmethod
    def of(cls, blocks: Sequence[Blocks]) -> BlockStack:
        """The stack of ``blocks``, in order."""
        sizes = [b.n_tar.shape[0] for b in blocks]
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        if len(blocks) == 1:
            return cls(blocks[0].n_tar, blocks[0].n_non, offsets)
        z = np.zeros(0, dtype=np.int64)
        return cls(np.concatenate([b.n_tar for b in blocks] or [z]),
                   np.concatenate([b.n_non for b in blocks] or [z]), offsets)

    @property
    def count(self) -> int:
        """Members ``R``."""
        return int(self.offsets.shape[0]) - 1

    @cached_property
    def owner(self) -> I64:
        """The member of each block."""
        return np.repeat(np.arange(self.count, dtype=np.int64), np.diff(self.offsets))

    @cached_property
    def vertices(self) -> I64:
        """``R + 1`` offsets of the members' ROCCH vertices (each member's blocks plus one)."""
        return self.offsets + np.arange(self.count + 1, dtype=np.int64)

    @cached_property
    def vertex_owner(self) -> I64:
        """The member of each ROCCH vertex."""
        return np.repeat(np.arange(self.count, dtype=np.int64), np.diff(self.vertices))

    def member_sums(self, x: NDArray[np.integer]) -> I64:
        """Per member, the integer sum of ``x`` (one value per block): exact."""
        c = np.zeros(x.shape[0] + 1, dtype=np.int64)
        np.cumsum(x, out=c[1:])
        return c[self.offsets[1:]] - c[self.offsets[:-1]]

    @cached_property
    def total_tar(self) -> I64:
        """All targets of each member."""
        return self.member_sums(self.n_tar)

    @cached_property
    def total_non(self) -> I64:
        """All non-targets of each member."""
        return self.member_sums(self.n_non)

    def llr(self) -> F64:
        """PAV llr of each block, ``logit(p_b) - log(T/N)`` with its member's ``T``, ``N``."""
        t = self.n_tar.astype(np.float64)
        m = self.n_non.astype(np.float64)
        own = self.owner
        with np.errstate(divide="ignore"):
            prior = np.log(self.total_tar.astype(np.float64)) - \
                np.log(self.total_non.astype(np.float64))
            out: F64 = (np.log(t) - np.log(m)) - prior[own]
        return out


def end_labels(s: SortedScores) -> tuple[bool, bool]:
    """The labels of the first and the last run of :func:`label_runs`, without the runs.

    >>> s = SortedScores(np.array([1.0, 3.0]), np.array([0.0, 2.0]))
    >>> end_labels(s), label_runs(s)[1][[0, -1]].tolist()
    ((False, True), [False, True])
    """
    t, n = s.n_tar, s.n_non
    if t == 0 or n == 0:
        return t > 0, t > 0
    pos = s.tar_positions  # ties: targets first
    return bool(pos[0] == 0), bool(pos[-1] == t + n - 1)


def label_runs(s: SortedScores) -> tuple[I64, NDArray[np.bool_]]:
    """Run-length encode the merged label sequence: run lengths and run labels."""
    t, n = s.n_tar, s.n_non
    if t == 0 or n == 0:
        return np.array([t + n], dtype=np.int64), np.array([t > 0])
    below = s.tar_positions - np.arange(t, dtype=np.int64)  # non-targets before each target
    gap = np.diff(below, prepend=0)  # non-targets between consecutive targets
    new_run = np.empty(t, dtype=bool)
    new_run[0] = True
    new_run[1:] = gap[1:] > 0
    ones_start = np.flatnonzero(new_run)
    ones_len = np.diff(np.append(ones_start, t))
    r = ones_start.shape[0]
    run_len = np.empty(2 * r + 1, dtype=np.int64)
    run_len[0:-1:2] = gap[ones_start]
    run_len[1::2] = ones_len
    run_len[-1] = n - below[-1]
    run_lab = np.zeros(2 * r + 1, dtype=bool)
    run_lab[1::2] = True
    keep = run_len > 0
    return run_len[keep], run_lab[keep]


def strictly_increasing(t: I64, n: I64) -> tuple[I64, I64]:
    """Pool adjacent blocks until target fractions ``t/n`` strictly increase, exactly.

    The input is the output of a floating-point isotonic regression: fractions that are equal
    (or, through rounding, one unit in the last place out of order) are pooled using integer
    cross-products, so the blocks never depend on float rounding. Pooling adjacent violators in
    any order yields the unique isotonic solution, so repeated vectorized passes are exact.

    >>> t, n = strictly_increasing(np.array([0, 1, 2, 3]), np.array([2, 3, 6, 3]))
    >>> t.tolist(), n.tolist()
    ([0, 3, 3], [2, 9, 3])
    """
    while t.shape[0] > 1:
        bad = t[:-1] * n[1:] >= t[1:] * n[:-1]  # fraction i >= fraction i+1
        if not bad.any():
            break
        start = np.ones(t.shape[0], dtype=bool)
        start[1:] = ~bad  # a violating pair continues the previous pool
        idx = np.flatnonzero(start)
        t = np.add.reduceat(t, idx)
        n = np.add.reduceat(n, idx)
    return t, n


def concat_blocks(a: Blocks, b: Blocks) -> Blocks:
    """PAV blocks of two adjacent score ranges (``a`` entirely below ``b``), merged exactly.

    ``b``'s positions are shifted by the number of trials in ``a``; then blocks at the boundary
    are pooled while a block's target fraction is not below its right neighbour's, compared
    with exact integer arithmetic (PAV over the blocks of contiguous ranges is the global PAV).
    Only the pooled blocks are visited: the loop runs over blocks, never over trials.

    >>> x = pav_blocks(sort_scores([1.0], [0.0, 2.0]))
    >>> y = pav_blocks(sort_scores([5.0, 6.0], [4.0]))
    >>> m = concat_blocks(x, y)
    >>> m.n_tar.tolist(), m.n_non.tolist(), m.start.tolist()
    ([0, 1, 2], [1, 2, 0], [0, 1, 4])
    """
    if a.n_tar.shape[0] == 0:
        return b
    if b.n_tar.shape[0] == 0:
        return a
    off = int(a.size.sum())
    b_sum = b.tar_pos_sum + off * b.n_tar
    b_sq = b.tar_pos_sq + 2.0 * off * b.tar_pos_sum + float(off) ** 2 * b.n_tar
    i = a.n_tar.shape[0] - 1  # last kept block of a is i - 1 once a[i] is pooled
    j = 0  # first kept block of b is j + 1 once b[j] is pooled
    t, m = int(a.n_tar[i]), int(a.n_non[i])
    ps, pq = float(a.tar_pos_sum[i]), float(a.tar_pos_sq[i])
    bt, bm = int(b.n_tar[0]), int(b.n_non[0])
    if t * (bt + bm) < bt * (t + m):  # already increasing at the boundary: plain concatenation
        return Blocks(np.concatenate((a.n_tar, b.n_tar)), np.concatenate((a.n_non, b.n_non)),
                      np.concatenate((a.start, b.start + off)), np.concatenate((a.lo, b.lo)),
                      np.concatenate((a.hi, b.hi)), np.concatenate((a.tar_pos_sum, b_sum)),
                      np.concatenate((a.tar_pos_sq, b_sq)))
    t, m, ps, pq = t + bt, m + bm, ps + float(b_sum[0]), pq + float(b_sq[0])
    nb = b.n_tar.shape[0]
    while True:
        if i > 0 and int(a.n_tar[i - 1]) * (t + m) >= t * int(a.size[i - 1]):
            i -= 1
            t, m = t + int(a.n_tar[i]), m + int(a.n_non[i])
            ps, pq = ps + float(a.tar_pos_sum[i]), pq + float(a.tar_pos_sq[i])
        elif j + 1 < nb and t * int(b.size[j + 1]) >= int(b.n_tar[j + 1]) * (t + m):
            j += 1
            t, m = t + int(b.n_tar[j]), m + int(b.n_non[j])
            ps, pq = ps + float(b_sum[j]), pq + float(b_sq[j])
        else:
            break
    return Blocks(
        np.concatenate((a.n_tar[:i], [t], b.n_tar[j + 1:])).astype(np.int64),
        np.concatenate((a.n_non[:i], [m], b.n_non[j + 1:])).astype(np.int64),
        np.concatenate((a.start[:i], [a.start[i]], b.start[j + 1:] + off)).astype(np.int64),
        np.concatenate((a.lo[:i], [a.lo[i]], b.lo[j + 1:])),
        np.concatenate((a.hi[:i], [b.hi[j]], b.hi[j + 1:])),
        np.concatenate((a.tar_pos_sum[:i], [ps], b_sum[j + 1:])),
        np.concatenate((a.tar_pos_sq[:i], [pq], b_sq[j + 1:])))


def pav_runs(run_len: I64, run_lab: NDArray[np.bool_]) -> tuple[I64, I64]:
    """PAV over labelled runs: the targets and the trials of each block, exactly.

    ``run_len`` are the (integer, possibly weighted) sizes of runs of equal labels in score
    order, ``run_lab`` their labels. SciPy's isotonic regression pools the runs, then
    :func:`strictly_increasing` pools exactly equal fractions with integer arithmetic. The
    kernel of :func:`pav_blocks` and of every bootstrap replicate.

    >>> t, n = pav_runs(np.array([2, 1, 1, 2]), np.array([False, True, False, True]))
    >>> t.tolist(), n.tolist()
    ([0, 1, 2], [2, 2, 2])
    """
    run_len = np.asarray(run_len, dtype=np.int64)
    if run_len.shape[0] == 1:
        starts = np.array([0], dtype=np.int64)
    else:  # scipy.optimize takes ~0.5 s to import: loaded on first use
        from scipy.optimize import isotonic_regression

        fit = isotonic_regression(run_lab.astype(np.float64), weights=run_len.astype(np.float64))
        starts = np.asarray(fit.blocks[:-1], dtype=np.int64)
    run_t = np.where(run_lab, run_len, 0)
    return strictly_increasing(np.add.reduceat(run_t, starts), np.add.reduceat(run_len, starts))


def pav_blocks(s: SortedScores) -> Blocks:
    """Pool adjacent violators over the merged labels of ``s`` (docs/math.md section 4).

    Runs of equal labels are pooled first (PAV never splits them), then SciPy's isotonic
    regression pools the alternating runs; adjacent blocks with exactly equal target fractions
    are merged using integer arithmetic, so the blocks do not depend on float rounding.

    Examples
    --------
    >>> b = pav_blocks(sort_scores([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4]))
    >>> b.n_tar.tolist(), b.n_non.tolist()
    ([0, 1, 2, 2], [2, 2, 2, 0])
    """
    t_b, n_b = pav_runs(*label_runs(s))
    m_b = n_b - t_b
    end = np.cumsum(n_b)
    start = end - n_b
    lo = s.score_at(start)
    hi = s.score_at(end - 1)
    # position sums of targets per block (1-based positions)
    pos1 = s.tar_positions + 1
    tcum = np.concatenate(([0], np.cumsum(t_b)))
    csum = np.concatenate(([0], np.cumsum(pos1)))
    csq = np.concatenate(([0.0], np.cumsum(pos1.astype(np.float64) ** 2)))
    tar_pos_sum = (csum[tcum[1:]] - csum[tcum[:-1]]).astype(np.float64)
    tar_pos_sq = csq[tcum[1:]] - csq[tcum[:-1]]
    return Blocks(t_b.astype(np.int64), m_b.astype(np.int64), start.astype(np.int64),
                  lo, hi, tar_pos_sum, tar_pos_sq)
