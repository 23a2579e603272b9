"""Verification statistics of bootstrap replicates (FNMR at FMR, ZeroFMR, AUC, fixed thresholds).

numpy only. A replicate re-weights the trials (:mod:`scoreframe.stats._replicates`); its
:class:`~scoreframe.stats._biometric.VerificationStats` are exactly those
:func:`~scoreframe.stats._biometric.reduce_verification` gives for the range with every
trial repeated as often as its weight, computed from the cumulative weights of the sorted
scores (integer gathers, no repetition):

* a rate target allows ``k_r`` errors out of the replicate's *weighted* total (the same
  :func:`~scoreframe.kernels.biometric.count_within` rule on each replicate's own total), so
  the threshold is chosen again in every replicate;
* FNMR at FMR is read at the ``(k_r + 1)``-th highest impostor of the repeated scores (the
  impostor whose cumulative weight straddles that rank), FMR at FNMR at the ``(k_r + 1)``-th
  lowest genuine score; only the range holding that rank reports it, as for the point
  statistics. A range therefore needs the replicate's weighted totals and the weighted counts
  below it (a :class:`ReplicateContext`): in memory a unit is one range (offsets 0); out of
  core a light first task per range (:func:`weighted_counts`) sums the weights of its
  groups, and the driver forms the offsets;
* ``2U`` of the Mann-Whitney AUC and the error counts at fixed thresholds are integer sums of
  weight times cumulative weight, summed in pieces short enough to stay exact in int64.

Thresholds are not located for replicates (their ``ge``/``gt`` are NaN): intervals are formed
for the rates, whose threshold each replicate chooses on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.sorted_scores import SortedScores
from scoreframe.stats._biometric import Located, VerificationRequest, VerificationStats
from scoreframe.stats._resampling import Replicates

__all__ = ["ReplicateContext", "count_within_totals", "distinct_units",
           "replicate_verification", "trial_weights", "weighted_counts"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]


@dataclass(frozen=True, eq=False)
class ReplicateContext:
    """Weighted totals of a unit and weighted counts below one range, per replicate row.

    Arrays of shape ``(n_rows,)`` (all replicate rows of the :class:`Replicates`);
    ``class_totals``/``class_offsets`` the same per class value of the request's class
    column (both labels), for the replicated statistics that read classes.
    """

    total_tar: I64
    total_non: I64
    offset_tar: I64
    offset_non: I64
    class_totals: Mapping[str | None, I64] = field(default_factory=dict)
    class_offsets: Mapping[str | None, I64] = field(default_factory=dict)

    def rows(self, rows: I64) -> ReplicateContext:
        """The context of some replicate rows."""
        return ReplicateContext(self.total_tar[rows], self.total_non[rows],
                                self.offset_tar[rows], self.offset_non[rows],
                                {c: v[rows] for c, v in self.class_totals.items()},
                                {c: v[rows] for c, v in self.class_offsets.items()})


def count_within_totals(rates: Sequence[float], totals: I64) -> I64:
    """:func:`~scoreframe.kernels.biometric.count_within` for many totals: ``(len(totals), J)``.

    The same float operations elementwise, so each entry equals ``count_within(rate, total)``.

    >>> count_within_totals([0.1, 0.7], np.array([10, 0])).tolist()
    [[1, 7], [0, 0]]
    """
    r = np.asarray(rates, dtype=np.float64)[None, :]
    t = np.asarray(totals, dtype=np.int64)[:, None]
    tf = np.maximum(t, 1).astype(np.float64)
    k = np.clip(np.floor(r * t), 0, t).astype(np.int64)
    for _ in range(2):
        up = (k < t) & ((k + 1) / tf <= r)
        k = k + up
        down = (k > 0) & (k / tf > r)
        k = k - down
    return np.where(t > 0, k, 0).astype(np.int64)


def distinct_units(spec: Replicates, hashes: Sequence[U64]) -> list[tuple[U64, I64 | None]]:
    """Per unit column: the distinct unit hashes and each trial's index among them."""
    out: list[tuple[U64, I64 | None]] = []
    for h in hashes:
        if spec.trial:
            out.append((np.ascontiguousarray(h, dtype=np.uint64), None))
        else:
            u, inv = np.unique(h, return_inverse=True)
            out.append((u, inv.reshape(-1).astype(np.int64)))
    return out


def trial_weights(spec: Replicates, hashes: Sequence[U64], rows: I64, *,
                  units: list[tuple[U64, I64 | None]] | None = None) -> NDArray[np.integer]:
    """Each trial's weight in ``rows``: the product of its units' multiplicities ``(R, n)``.

    The same values as the replicate statistics use (the multiplicity of a unit is a pure
    function of its hash, the replicate row and the seed). ``units``: the distinct units of
    ``hashes``, when computed once for several calls.
    """
    dtype = np.uint16 if spec.max_weight() < 2**16 else np.uint32
    n = hashes[0].shape[0] if hashes else 0
    w: NDArray[np.integer] = np.ones((rows.shape[0], n), dtype=dtype)
    for k, (u, inv) in enumerate(units if units is not None else distinct_units(spec, hashes)):
        m = spec.multiplicities(k, u, rows)
        w *= m if inv is None else np.take(m, inv, axis=1)
    return w


def _cum(w: NDArray[np.integer]) -> I64:
    """Exclusive cumulative weights ``(R, n + 1)`` (column 0 is 0)."""
    out = np.zeros((w.shape[0], w.shape[1] + 1), dtype=np.int64)
    np.cumsum(w, axis=1, dtype=np.int64, out=out[:, 1:])
    return out


def _rowwise_search(cum: I64, idx: I64) -> I64:
    """Per row ``r``: the trial ``p`` with ``cum[r, p] <= idx[r, j] < cum[r, p + 1]``.

    ``cum`` is exclusive and non-decreasing per row; rows are made disjoint by an offset, so
    one flat binary search serves every row.
    """
    rws, width = cum.shape
    step = int(cum[:, -1].max(initial=0)) + 1
    base = (np.arange(rws, dtype=np.int64) * step)[:, None]
    flat = (cum[:, 1:] + base).ravel()  # inclusive sums
    pos = np.searchsorted(flat, (np.clip(idx, 0, step - 1) + base).ravel(), side="right")
    out: NDArray[np.int64] = (pos.reshape(idx.shape)
                              - np.arange(rws, dtype=np.int64)[:, None] * (width - 1))
    return out


def _exact_dot(w: NDArray[np.integer], g: I64, bound: int) -> list[int]:
    """``sum_i w[r, i] * g[r, i]`` per row, exactly (pieces whose int64 sums cannot overflow)."""
    n = w.shape[1]
    if n == 0:
        return [0] * w.shape[0]
    piece = max(1, (2**62) // max(bound, 1))
    starts = np.arange(0, n, piece)
    prod = np.multiply(w, g, dtype=np.int64)
    parts = np.add.reduceat(prod, starts, axis=1)
    return [int(x) for x in parts.astype(object).sum(axis=1)]


def replicate_verification(s: SortedScores, wt: NDArray[np.integer], wn: NDArray[np.integer],
                           request: VerificationRequest, ctx: ReplicateContext | None
                           ) -> list[VerificationStats]:
    """The verification statistics of replicates of one range (see the module docstring).

    ``wt``/``wn`` are the weights of the range's sorted genuine and impostor scores in the
    replicates ``(R, n)``; ``ctx`` the replicates' weighted totals and the weighted counts
    below the range (``None``: the range is the whole unit).

    Examples
    --------
    >>> from scoreframe.kernels import sort_scores
    >>> s = sort_scores([0.5, 2.0, 3.0], [0.0, 1.0, 2.5])
    >>> one = np.ones((1, 3), np.uint16)
    >>> v = replicate_verification(s, one, one, VerificationRequest(fmr=(0.4,)), None)[0]
    >>> v.at_fmr.fnm.tolist(), v.twice_u
    ([1, 2], 12)
    """
    tar, non = s.tar, s.non
    rws = wt.shape[0]
    ct, cn = _cum(wt), _cum(wn)
    loc_t, loc_n = ct[:, -1], cn[:, -1]
    if ctx is None:
        z = np.zeros(rws, np.int64)
        ctx = ReplicateContext(loc_t, loc_n, z, z)
    tot_t, tot_n = ctx.total_tar, ctx.total_non
    off_t, off_n = ctx.offset_tar, ctx.offset_non
    r_idx = np.arange(rws)[:, None]

    k_fmr = np.concatenate((count_within_totals(request.fmr, tot_n),
                            np.zeros((rws, 1), np.int64)), axis=1)
    k_fnmr = np.concatenate((count_within_totals(request.fnmr, tot_t),
                             np.zeros((rws, 1), np.int64)), axis=1)
    # FNMR at FMR: the (k+1)-th highest impostor of the repeated scores, ascending rank
    idx = (tot_n - 1 - off_n)[:, None] - k_fmr
    f1 = (idx >= 0) & (idx < loc_n[:, None]) & (non.shape[0] > 0)
    p = np.clip(_rowwise_search(cn, idx), 0, max(non.shape[0] - 1, 0))
    v = non[p] if non.shape[0] else np.zeros(idx.shape)
    it = np.searchsorted(tar, v, side="right")
    inn = np.searchsorted(non, v, side="right")
    fnm1 = off_t[:, None] + ct[r_idx, it]
    fm1 = tot_n[:, None] - (off_n[:, None] + cn[r_idx, inn])
    # FMR at FNMR: the (k+1)-th lowest genuine score
    idx2 = k_fnmr - off_t[:, None]
    f2 = (idx2 >= 0) & (idx2 < loc_t[:, None]) & (tar.shape[0] > 0)
    p2 = np.clip(_rowwise_search(ct, idx2), 0, max(tar.shape[0] - 1, 0))
    u = tar[p2] if tar.shape[0] else np.zeros(idx2.shape)
    it2 = np.searchsorted(tar, u, side="left")
    inn2 = np.searchsorted(non, u, side="left")
    fnm2 = off_t[:, None] + ct[r_idx, it2]
    fm2 = tot_n[:, None] - (off_n[:, None] + cn[r_idx, inn2])
    # fixed thresholds: counts of this range (they add)
    side: Literal["left", "right"] = "right" if request.strict else "left"
    thr = request.threshold_array
    fnm_t = ct[:, np.searchsorted(tar, thr, side=side)]
    fm_t = loc_n[:, None] - cn[:, np.searchsorted(non, thr, side=side)]
    # 2U: every genuine weight times (2 * impostors below + impostors tied), offsets included
    lo = np.searchsorted(non, tar, side="left")
    hi = np.searchsorted(non, tar, side="right")
    g = cn[:, lo] + cn[:, hi]
    bound = 2 * (int(loc_n.max(initial=0)) + 1) * (int(wt.max(initial=0)) + 1)
    twice = _exact_dot(wt, g, bound)
    n = tar.shape[0] + non.shape[0]
    lo_s = float(min(tar[0] if tar.shape[0] else np.inf,
                     non[0] if non.shape[0] else np.inf)) if n else np.nan
    hi_s = float(max(tar[-1] if tar.shape[0] else -np.inf,
                     non[-1] if non.shape[0] else -np.inf)) if n else np.nan
    nan1 = np.full(k_fmr.shape[1], np.nan)
    nan2 = np.full(k_fnmr.shape[1], np.nan)
    out = []
    for r in range(rws):
        out.append(VerificationStats(
            lo_s, hi_s,
            Located(k_fmr[r], f1[r], fnm1[r].astype(np.int64), fm1[r].astype(np.int64),
                    nan1, nan1),
            Located(k_fnmr[r], f2[r] & (tot_t[r] > 0), fnm2[r].astype(np.int64),
                    fm2[r].astype(np.int64), nan2, nan2),
            fnm_t[r].astype(np.int64), fm_t[r].astype(np.int64),
            twice[r] + 2 * int(off_n[r]) * int(loc_t[r])))
    return out


# --- out of core: the weighted counts of every range, before the reduction -------------------


def weighted_counts(key: NDArray[np.integer], hashes: Sequence[U64], spec: Replicates,
                    n_groups: int, *, chunk_bytes: int = 16 * 2**20) -> I64:
    """Weighted counts ``(n_groups, 2, n_rows)`` of trials with keys ``group * 2 + label``."""
    rows_all = np.arange(spec.n_rows, dtype=np.int64)
    n = key.shape[0]
    out = np.zeros((n_groups * 2, spec.n_rows), np.int64)
    if n == 0:
        return out.reshape(n_groups, 2, spec.n_rows)
    order = np.argsort(key, kind="stable")
    key_s = key[order]
    hs = [h[order] for h in hashes]
    starts = np.flatnonzero(np.concatenate(([True], key_s[1:] != key_s[:-1])))
    keys_present = key_s[starts].astype(np.int64)
    chunk = max(1, chunk_bytes // (8 * n))
    units = distinct_units(spec, hs)
    for a in range(0, spec.n_rows, chunk):
        rows = rows_all[a:a + chunk]
        w = trial_weights(spec, hs, rows, units=units)
        out[keys_present, a:a + rows.shape[0]] = np.add.reduceat(w, starts, axis=1,
                                                                 dtype=np.int64).T
    return out.reshape(n_groups, 2, spec.n_rows)
