"""Log-likelihood-ratio cost: Cllr, minCllr, prior-weighted cross-entropy, PAV llrs.

numpy/scipy only (docs/math.md sections 4 and 6; [BdV11] eq 18, [vLB07] eqs 9-10).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from scoreframe.kernels.elementary import softplus
from scoreframe.kernels.sorted_scores import (
    Blocks,
    BlockStack,
    SortedScores,
    pav_blocks,
    sort_scores,
)

__all__ = ["cllr", "cross_entropy", "min_cllr", "min_cllr_stack", "pav_llrs"]

F64 = NDArray[np.float64]
LOG2 = math.log(2.0)
RAMP = 1e-6  # BOSARIS opt_loglr adds k * RAMP / n to the k-th sorted llr


def cllr(tar: F64, non: F64) -> float:
    """Cllr in bits of llrs ``tar``, ``non`` (order irrelevant)."""
    t = float(np.mean(softplus(-tar)))
    n = float(np.mean(softplus(non)))
    return (t + n) / (2.0 * LOG2)


def cross_entropy(tar: F64, non: F64, p: float) -> float:
    """Prior-weighted cross-entropy ``ECE(p)`` in bits (docs/math.md §6); ``ECE(1/2) = Cllr``."""
    tau = math.log(p) - math.log1p(-p)
    t = float(np.mean(softplus(-(tar + tau))))
    n = float(np.mean(softplus(non + tau)))
    return (p * t + (1.0 - p) * n) / LOG2


def min_cllr(b: Blocks, *, ramp: bool = False) -> float:
    """Cllr of the PAV llrs, from the blocks alone ([vLB07] eq. 10; docs/math.md §6).

    The exact value: between 0 and 1, at most Cllr, and exactly 1 when the scores carry no
    information (all tied: one block, llr 0). Each side is a weighted mean of the block terms
    with weights ``n_b / N`` (a single block has weight exactly 1, so no rounding of
    ``N log 2 / N`` moves the result off 1).

    ``ramp=True`` reproduces BOSARIS ``min_cllr`` exactly instead: it adds ``k*1e-6/n`` to the
    llr of the k-th sorted trial (so constant scores give 1.00000018, above the exact 1, and
    the value depends on how tied targets and non-targets are ordered). The ramp's effect is
    summed per block from position sums, with a second-order expansion whose remainder is
    below 1e-18 per trial.

    Examples
    --------
    >>> from scoreframe.kernels.sorted_scores import pav_blocks, sort_scores
    >>> b = pav_blocks(sort_scores([0.5, 0.5, 0.5], [0.5] * 47))
    >>> min_cllr(b), round(min_cllr(b, ramp=True), 8)
    (1.0, 1.00000018)
    """
    stack = BlockStack.of([b])
    if not ramp:
        return float(min_cllr_stack(stack)[0])
    big_t, big_n = b.total_tar, b.total_non
    tm, nm = _block_means(stack)
    tar_mean, non_mean = float(tm[0]), float(nm[0])
    llr = b.llr()
    has_t = b.n_tar > 0
    has_n = b.n_non > 0
    delta = RAMP / (big_t + big_n)
    size = b.size.astype(np.float64)
    first = b.start.astype(np.float64) + 1.0
    last = first + size - 1.0
    all_sum = (first + last) * size / 2.0
    all_sq = (last * (last + 1) * (2 * last + 1) - (first - 1) * first * (2 * first - 1)) / 6.0
    non_pos_sum = all_sum - b.tar_pos_sum
    non_pos_sq = all_sq - b.tar_pos_sq
    sp = expit(llr)
    sn = expit(-llr)
    curv = sp * sn
    tar_mean += float(np.sum((-sn * delta * b.tar_pos_sum
                              + 0.5 * curv * delta**2 * b.tar_pos_sq)[has_t])) / big_t
    non_mean += float(np.sum((sp * delta * non_pos_sum
                              + 0.5 * curv * delta**2 * non_pos_sq)[has_n])) / big_n
    return (tar_mean + non_mean) / (2.0 * LOG2)


def min_cllr_stack(b: BlockStack) -> F64:
    """:func:`min_cllr` (without the ramp) of every member of a stack, ``(R,)``.

    Members need targets and non-targets. Each member's weighted means are summed as numpy
    sums them for one group (its own slice), so the values are those of :func:`min_cllr`.
    """
    tar_mean, non_mean = _block_means(b)
    out: F64 = (tar_mean + non_mean) / (2.0 * LOG2)
    return out


def _block_means(b: BlockStack) -> tuple[F64, F64]:
    """Per member, the target and non-target means of the PAV cost terms (weights ``n_b/N``)."""
    own = b.owner
    w_t = b.n_tar / b.total_tar[own]  # share of the targets (non-targets) in each block
    w_n = b.n_non / b.total_non[own]
    llr = b.llr()
    has_t = b.n_tar > 0
    has_n = b.n_non > 0
    terms_t = w_t[has_t] * softplus(-llr[has_t])
    terms_n = w_n[has_n] * softplus(llr[has_n])
    return _member_sums(terms_t, has_t, b.offsets), _member_sums(terms_n, has_n, b.offsets)


def _member_sums(terms: F64, kept: NDArray[np.bool_], offsets: NDArray[np.int64]) -> F64:
    """The sum of each member's kept terms (one ``np.add.reduceat`` for all the members).

    A member's sum is the same whether it is alone or in a stack: each member is one slice
    of ``terms``, reduced on its own.
    """
    at = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(kept, out=at[1:])
    cut = at[offsets]
    out = np.zeros(cut.shape[0] - 1, dtype=np.float64)
    full = cut[1:] > cut[:-1]  # members with a term; the empty ones stay 0
    if full.any():  # the next non-empty member starts where an empty one ends
        out[full] = np.add.reduceat(terms[:int(cut[-1])], cut[:-1][full])
    return out


def pav_llrs(tar: F64, non: F64, *, laplace: bool = False,
             ramp: bool = False) -> tuple[F64, F64]:
    """PAV-optimal llr of every trial, in input order (BOSARIS ``opt_loglr``).

    ``laplace=True`` adds a target and a non-target at ``-inf`` and at ``+inf`` before PAV (rule
    of succession) and drops them after; ``log(T/N)`` always uses the real counts. ``ramp=True``
    adds ``k*1e-6/n`` to the k-th sorted trial as BOSARIS does.
    """
    tar = np.asarray(tar, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    t_order = np.argsort(tar, kind="stable")
    n_order = np.argsort(non, kind="stable")
    ts, ns = tar[t_order], non[n_order]
    if laplace:
        inf = np.array([np.inf])
        s = SortedScores(np.concatenate((-inf, ts, inf)), np.concatenate((-inf, ns, inf)))
    else:
        s = sort_scores(ts, ns)
    b = pav_blocks(s)
    t_b = b.n_tar.astype(np.float64)
    m_b = b.n_non.astype(np.float64)
    with np.errstate(divide="ignore"):
        llr_b = np.log(t_b) - np.log(m_b) - (math.log(tar.shape[0]) - math.log(non.shape[0]))
    ends = np.cumsum(b.size)
    tpos = s.tar_positions
    npos = np.arange(s.n_non, dtype=np.int64) + np.searchsorted(s.tar, s.non, side="right")
    tl = llr_b[np.searchsorted(ends, tpos, side="right")]
    nl = llr_b[np.searchsorted(ends, npos, side="right")]
    if laplace:
        tl, nl, tpos, npos = tl[1:-1], nl[1:-1], tpos[1:-1], npos[1:-1]
        # positions among the real trials: the two dummies at -inf sort first
        tpos, npos = tpos - 2, npos - 2
    if ramp:
        n = tar.shape[0] + non.shape[0]
        tl = tl + (tpos + 1) * (RAMP / n)
        nl = nl + (npos + 1) * (RAMP / n)
    out_t = np.empty_like(tl)
    out_n = np.empty_like(nl)
    out_t[t_order] = tl
    out_n[n_order] = nl
    return out_t, out_n
