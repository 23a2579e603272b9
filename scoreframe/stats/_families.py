"""Mergeable statistics of the anti-spoofing (SASV) and forensic metric families.

numpy only, like :mod:`scoreframe.stats.summary`. Each statistic is a typed declaration
(:class:`~scoreframe.stats._statistics.Statistic`) with a range kernel and an exact merge, so
``evaluate(..., spoof=True, forensic=True)`` rides the same one reduction as the binary suite
on every engine (in memory, out of core, Dask), and pooled rows merge their groups' statistics.

A statistic reads either the label classes (``pos``/``neg`` = ``None``) or classes of the
request's ``class_column`` (``trial_type``: ``target``, ``nontarget``, ``spoof``): the range
kernel sees each class's sorted scores in the range, the class's total in the unit and the
count below the range (:class:`~scoreframe.stats._statistics.ClassData`). Everything is an
integer count, a minimum with its first argument, a located result or a score copied from the
data, so results do not depend on how the trials were split into ranges:

* :class:`ClassCounts`: trials per class and label (``n_spoof``, the label checks);
* :class:`PairCount`: ``2U`` of the Mann-Whitney statistic (``auc``), adding
  ``2 n_tar(range) n_non(below)`` per range;
* :class:`Misleading`: misleading llrs (``rmep``, ``rmed``);
* :class:`ElubCounts`: counts above the ELUB threshold grid (lir 1.3.1's grid depends on the
  extreme llrs, known only at the end: counts are kept at every grid point between the range's
  extreme llrs, at most ``2 * 9 / step + 5`` of them whatever the trials, with the few distinct
  llrs within ``1e-9`` (log10) of a point kept as values with their counts so the exact grid
  threshold can be compared at the end), and the extreme llrs;
* :class:`ADcf`: the a-DCF's minimum over the per-trial sweep and its first argmin (each
  range evaluates its own sweep points with the global counts below it);
* :class:`InterpolatedEer`: the located vertices of the SASV-2022 ROC around the EER crossing;
* :class:`EceSums`: exact sums of the ECE's log terms over a prior grid (the ECE plot);
* :class:`ScoreHistogram`: counts per bucket of a power-of-two grid, at most 2,048 buckets over
  the scores (the score histograms).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import forensic as kf
from scoreframe.kernels import spoof as ks
from scoreframe.kernels.elementary import exact_to_float, softplus_sums
from scoreframe.stats._statistics import RangeData, Statistic

__all__ = ["SPOOF_CLASSES", "ADcf", "ClassCounts", "EceSums", "ElubCounts", "InterpolatedEer",
           "Misleading", "PairCount", "ScoreHistogram", "ece_values", "elub_bounds",
           "histogram_bins", "interpolated_eer_value", "search_mapped"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
#: The classes of a SASV trial table (values of ``trial_type``).
SPOOF_CLASSES = ("target", "nontarget", "spoof")
#: Trials per piece of the a-DCF sweep (bounds its temporaries, ~80 bytes per trial).
SWEEP_PIECE = 1 << 18
#: From this many sweep points up, the a-DCF is evaluated at the valleys only (ADcf._minimum).
VALLEY_MIN = 64
#: Half-width (log10 units) of the window kept around each candidate ELUB grid point.
ELUB_WINDOW = 1e-9



def sweep_pieces(arrays: list[F64]) -> Iterator[tuple[list[F64], list[int]]]:
    """Consecutive pieces of at most ~``SWEEP_PIECE`` trials (equal scores in one piece).

    Yields each piece's arrays and the trials of each array before the piece.
    """
    n = sum(x.shape[0] for x in arrays)
    big = max(arrays, key=lambda x: x.shape[0])
    k = -(-n // SWEEP_PIECE)
    pivots = np.unique(big[[big.shape[0] * i // k for i in range(1, k)]]) if k > 1 \
        else np.zeros(0)
    cuts = [np.concatenate(([0], np.searchsorted(x, pivots, side="left"), [x.shape[0]]))
            for x in arrays]
    for j in range(pivots.shape[0] + 1):
        yield ([x[c[j]:c[j + 1]] for x, c in zip(arrays, cuts, strict=True)],
               [int(c[j]) for c in cuts])


@dataclass(frozen=True)
class ClassCounts(Statistic):
    """Trials per class value, and those labelled target: ``{class: (n, n_labelled_target)}``."""

    additive = True

    def reduce(self, r: RangeData) -> dict[str | None, tuple[int, int]]:
        """The counts of this range."""
        return {k: (c.n, c.n_tar) for k, c in r.classes.items() if c.n}

    def merge(self, a: dict[str | None, tuple[int, int]], b: dict[str | None, tuple[int, int]]
              ) -> dict[str | None, tuple[int, int]]:
        """Counts add."""
        out = dict(a)
        for k, (n, t) in b.items():
            n0, t0 = out.get(k, (0, 0))
            out[k] = (n0 + n, t0 + t)
        return out

    def empty(self) -> dict[str | None, tuple[int, int]]:
        """No trials."""
        return {}


@dataclass(frozen=True)
class _TwoSided(Statistic):
    """A statistic of positives against negatives (label classes, or unions of classes)."""

    pos: tuple[str, ...] | None = None
    neg: tuple[str, ...] | None = None

    @property
    def classes(self) -> tuple[str, ...]:  # type: ignore[override]  # a property narrowing the base's attribute
        """The class values read (none for label classes)."""
        return (*(self.pos or ()), *(self.neg or ()))

    def sides(self, r: RangeData) -> tuple[Any, Any]:
        """Positives and negatives of the range."""
        return r.side(self.pos, target=True), r.side(self.neg, target=False)


@dataclass(frozen=True)
class PairCount(_TwoSided):
    """``2 #(pos > neg) + #(pos = neg)`` over all pairs: twice the Mann-Whitney ``U`` (exact).

    Equal scores never straddle two ranges, so a range adds its own pairs plus
    ``2 n_pos(range) n_neg(below)``.
    """

    bytes_per_trial = 8  # temporaries per trial of the range

    def reduce(self, r: RangeData) -> int:
        """The pairs of this range's positives."""
        p, n = self.sides(r)
        if self.pos is None and self.neg is None:  # label classes: the merge's positions
            below = r.s.tar_positions - np.arange(r.s.n_tar, dtype=np.int64)
            pairs = kf.auc_pair_count_below(p.scores, n.scores, below)
        else:
            pairs = kf.auc_pair_count(p.scores, n.scores)
        return int(pairs) + 2 * int(p.n) * int(n.offset)

    def merge(self, a: int, b: int) -> int:
        """Pair counts add."""
        return a + b

    def empty(self) -> int:
        """No pairs."""
        return 0


@dataclass(frozen=True)
class Misleading(_TwoSided):
    """``(#pos < 0, #neg > 0)``: misleading llrs (0 is not misleading)."""

    additive = True

    def reduce(self, r: RangeData) -> tuple[int, int]:
        """The misleading llrs of this range."""
        p, n = self.sides(r)
        return kf.misleading_counts(p.scores, n.scores)

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        """Counts add."""
        return a[0] + b[0], a[1] + b[1]

    def empty(self) -> tuple[int, int]:
        """None."""
        return 0, 0


@dataclass(frozen=True, eq=False)
class ElubState:
    """ELUB counts of a range: see :class:`ElubCounts`.

    ``above`` holds the counts of the candidate grid points ``k0, k0 + 1, ...`` between the
    range's lowest and highest llr; at the points below them every llr of the range is above
    (``n``), at the points beyond them none is. At most ``2 * 9 / step + 5`` points whatever
    the number of trials (the llrs are clipped to the extremes).
    """

    lo: float  # lowest clipped log10 llr (NaN: none)
    hi: float
    k0: int  # first stored grid index (multiples of the step)
    n: I64  # (2,): positives / negatives of the range
    above: I64  # (2, K): positives / negatives above each point's window
    near_k: I64  # grid index of each distinct llr near a point
    near_v: F64  # its 10 ** llr10
    near_pos: NDArray[np.bool_]  # from the positives
    near_n: I64  # how many llrs of the range have this value

    def counts(self, k: I64) -> I64:
        """``(2, len(k))``: the counts above the windows of the grid points ``k``."""
        j = np.asarray(k, dtype=np.int64) - self.k0
        inside = (j >= 0) & (j < self.above.shape[1])
        out = np.where(j < 0, self.n[:, None], 0).astype(np.int64)
        out[:, inside] = self.above[:, j[inside]]
        return out


def _trimmed(lo: float, hi: float, k0: int, n: I64, above: I64, near: tuple[I64, F64,
             NDArray[np.bool_], I64]) -> ElubState:
    """The state without its leading and trailing points that :meth:`ElubState.counts` restores.

    Those are the points, with no llr near them, above which are all the range's llrs
    (leading) or none (trailing).
    """
    quiet = ~np.isin(k0 + np.arange(above.shape[1]), near[0])
    full = quiet & (above == n[:, None]).all(axis=0)
    lead = int(np.argmin(full)) if not full.all() else full.shape[0]
    none = quiet[lead:] & (above[:, lead:] == 0).all(axis=0)
    trail = int(np.argmin(none[::-1])) if not none.all() else none.shape[0]
    return ElubState(lo, hi, k0 + lead, n, above[:, lead:above.shape[1] - trail], *near)


def search_mapped(x: F64, v: F64, f: Callable[[F64], F64], *, side: Literal["left", "right"]
                  ) -> I64:
    """``np.searchsorted(f(x), v, side=side)`` for sorted ``x`` and a non-decreasing ``f``.

    ``f`` is evaluated elementwise at ``len(v) * log2(len(x))`` points (a bisection per value,
    vectorized over ``v``) instead of at every element of ``x``.

    Examples
    --------
    >>> x = np.array([-3.0, -1.0, 0.0, 2.0, 5.0])
    >>> f = lambda y: np.clip(y / 2, -1.0, 1.0)
    >>> v = np.array([-1.0, 0.0, 0.5, 1.0])
    >>> search_mapped(x, v, f, side="left").tolist(), np.searchsorted(f(x), v).tolist()
    ([0, 2, 3, 3], [0, 2, 3, 3])
    """
    n = x.shape[0]
    lo = np.zeros(v.shape[0], np.int64)
    hi = np.full(v.shape[0], n, np.int64)
    active = lo < hi
    while active.any():
        mid = (lo + hi) // 2
        fm = f(x[np.minimum(mid, max(n - 1, 0))])
        right = active & ((fm < v) if side == "left" else (fm <= v))
        lo = np.where(right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)
        active = lo < hi
    return lo


@dataclass(frozen=True)
class ElubCounts(_TwoSided):
    """What lir 1.3.1's ELUB needs, mergeable (see the module docstring)."""

    bytes_per_trial = 16  # temporaries per trial of the range

    step: float = 0.01
    extremes: tuple[float, float] = (-9.0, 9.0)

    def reduce(self, r: RangeData) -> ElubState | None:
        """Counts of this range at the grid points between its lowest and highest llr."""
        p, n = self.sides(r)
        if not (p.total and n.total):
            return None
        def llr10(x: F64) -> F64:  # the clipped log10 llrs, computed where they are read
            return np.clip(x / kf.LN10, *self.extremes)

        ts = [side.scores if side.n else np.zeros(0) for side in (p, n)]
        lo = min((float(llr10(t[:1])[0]) for t in ts if t.shape[0]), default=np.nan)
        hi = max((float(llr10(t[-1:])[0]) for t in ts if t.shape[0]), default=np.nan)
        # every point below k_lo is far below every llr, every point above k_hi far above
        k_lo = int(np.floor((lo - 2 * ELUB_WINDOW) / self.step)) - 1 if not np.isnan(lo) else 0
        k_hi = int(np.floor((hi + 2 * ELUB_WINDOW) / self.step)) + 1 if not np.isnan(hi) else -1
        ks_ = np.arange(k_lo, k_hi + 1)
        centre: F64 = (ks_ * self.step).astype(np.float64)
        above = np.zeros((2, ks_.shape[0]), np.int64)
        nk, nv, npos, nn = [], [], [], []
        for i, t in enumerate(ts):
            if not t.shape[0]:
                continue
            # far from a grid point, t > point decides 10**t > 10**point: no pow needed
            b = search_mapped(t, centre + 2 * ELUB_WINDOW, llr10, side="right")
            above[i] = t.shape[0] - b
            a = search_mapped(t, centre - 2 * ELUB_WINDOW, llr10, side="left")
            for j in np.flatnonzero(b > a):  # the few llrs near a grid point, once per value
                v, c = np.unique(10 ** llr10(t[a[j]:b[j]]), return_counts=True)
                nk.append(np.full(v.shape[0], j + k_lo, np.int64))
                nv.append(v)
                npos.append(np.full(v.shape[0], i == 0))
                nn.append(c.astype(np.int64))
        near = (np.concatenate(nk) if nk else np.zeros(0, np.int64),
                np.concatenate(nv) if nv else np.zeros(0),
                np.concatenate(npos) if npos else np.zeros(0, bool),
                np.concatenate(nn) if nn else np.zeros(0, np.int64))
        return _trimmed(lo, hi, k_lo, np.array([t.shape[0] for t in ts], np.int64), above,
                        near)

    def merge(self, a: ElubState | None, b: ElubState | None) -> ElubState | None:
        """Counts add, near llrs are kept, extremes are the minimum and maximum."""
        if a is None:
            return b
        if b is None:
            return a
        k0 = min(a.k0, b.k0)
        ks_ = np.arange(k0, max(a.k0 + a.above.shape[1], b.k0 + b.above.shape[1]))
        return _trimmed(_lowest(a.lo, b.lo), -_lowest(-a.hi, -b.hi), k0, a.n + b.n,
                        a.counts(ks_) + b.counts(ks_),
                        (np.concatenate((a.near_k, b.near_k)),
                         np.concatenate((a.near_v, b.near_v)),
                         np.concatenate((a.near_pos, b.near_pos)),
                         np.concatenate((a.near_n, b.near_n))))


def _lowest(a: float, b: float) -> float:
    """The lower of two values, NaN meaning none."""
    if np.isnan(a):
        return b
    return a if np.isnan(b) else min(a, b)


def elub_bounds(st: ElubState, n_pos: int, n_neg: int, *, step: float = 0.01,
                add_misleading: int = 1) -> tuple[float, float]:
    """ELUB bounds (log10) from merged :class:`ElubCounts` statistics.

    Equals :func:`scoreframe.kernels.forensic.elub` on the unit's llrs (the same grid and
    the same comparisons ``10 ** llr > 10 ** grid``).
    """
    grid = kf.elub_grid(st.lo, st.hi, n_pos, n_neg, step)
    thr = 10 ** grid
    k = np.rint(grid / step).astype(np.int64)
    acc = st.counts(k)
    for i in np.flatnonzero(np.isin(k, st.near_k)):  # few points
        here = st.near_k == k[i]
        gt = st.near_v > thr[i]
        acc[0, i] += int(st.near_n[here & gt & st.near_pos].sum())
        acc[1, i] += int(st.near_n[here & gt & ~st.near_pos].sum())
    return kf.elub_from_counts(grid, acc[0], acc[1], n_pos, n_neg,
                               add_misleading=add_misleading, step=step)


@dataclass(frozen=True)
class ADcf(Statistic):
    """Minimum normalised a-DCF over the per-trial sweep and its threshold (first argmin).

    Each range evaluates the sweep points after each of its trials with the global
    rejection counts (the counts below the range plus its own), with the same float
    operations as :func:`scoreframe.kernels.spoof.a_dcf`; the all-accepted point belongs to
    the lowest range. The value is ``(min_a_dcf, threshold)`` of the range, merged by a
    strict minimum (ties keep the lower range: the first argmin).
    """

    bytes_per_trial = 8  # temporaries per trial of the range

    p_target: float = 0.9
    p_nontarget: float = 0.05
    p_spoof: float = 0.05
    c_miss: float = 1.0
    c_fa_nontarget: float = 10.0
    c_fa_spoof: float = 20.0
    classes: tuple[str, ...] = SPOOF_CLASSES

    def reduce(self, r: RangeData) -> tuple[float, float] | None:
        """The range's minimum and its threshold (in pieces of at most ``SWEEP_PIECE``)."""
        cs = [r.cls(c) for c in self.classes]
        totals = [c.total for c in cs]
        if not all(totals) or not sum(c.n for c in cs):
            return None
        out: tuple[float, float] | None = None
        for piece, before in sweep_pieces([c.scores for c in cs]):
            if sum(x.shape[0] for x in piece):
                offsets = [c.offset + b for c, b in zip(cs, before, strict=True)]
                out = self.merge(out, self._piece(piece, offsets, totals))
        return out

    def prepare(self, r: RangeData) -> list[tuple[list[F64], NDArray[np.int8], list[int]]]:
        """The range's pieces with their merged class labels (the same in every replicate).

        Per piece: its class arrays, the class of each trial in the sweep's merged order and
        the trials of each class before the piece. Used by :meth:`reduce_weighted`.
        """
        out = []
        cs = [r.cls(c).scores for c in self.classes]
        if sum(x.shape[0] for x in cs):
            for piece, before in sweep_pieces(cs):
                if sum(x.shape[0] for x in piece):
                    out.append((piece, ks.per_trial_sweep(*piece).labels, before))
        return out

    def reduce_weighted(self, r: RangeData, weights: Mapping[str | None, NDArray[np.integer]],
                        prepared: list[tuple[list[F64], NDArray[np.int8], list[int]]]
                        ) -> tuple[float, float] | None:
        """:meth:`reduce` of the range with each trial repeated ``weights[class][i]`` times.

        ``r`` holds the range's classes unrepeated, with the weighted totals and offsets;
        ``prepared`` is :meth:`prepare` of the range. Along a trial's copies only its class's
        count moves, so the cost is monotone there (rising for a target, falling otherwise):
        the sweep evaluated after each trial, with cumulative weights as counts, has the same
        minimum (the same float operations on the same counts) and the same first argmin's
        threshold (a tie inside a falling run of copies has the same score; the point after a
        trial of weight 0 repeats the point before it, which comes first). Nothing is
        repeated and the sweep's merge is computed once per range.
        """
        cs = [r.cls(c) for c in self.classes]
        ws = [np.asarray(weights[c], dtype=np.int64) if c in weights
              else np.zeros(cl.n, np.int64) for c, cl in zip(self.classes, cs, strict=True)]
        totals = [c.total for c in cs]
        if not all(totals) or not sum(int(w.sum()) for w in ws):
            return None
        cum = [np.concatenate(([0], np.cumsum(w))) for w in ws]
        out: tuple[float, float] | None = None
        for arrays, labels, before in prepared:
            pw = [w[b:b + x.shape[0]] for w, b, x in zip(ws, before, arrays, strict=True)]
            if not sum(int(p.sum()) for p in pw):
                continue  # no trial of the piece in this replicate
            offsets = [c.offset + int(cw[b]) for c, cw, b in zip(cs, cum, before, strict=True)]
            first = all(o == 0 for o in offsets)
            rej = _weighted_rejections(labels, pw) + \
                np.array([[o] for o in offsets], dtype=np.int64)
            value, k = self._minimum(rej if first else rej[:, 1:], totals)
            if first and k == 0:  # all accepted: below the lowest trial of positive weight
                thr = min(float(x[np.flatnonzero(p)[0]]) for x, p in
                          zip(arrays, pw, strict=True) if p.any()) - ks.A_DCF_FIRST_OFFSET
            else:  # the last rejected trial (the k-th of the merged order)
                k = k if first else k + 1
                c = int(labels[k - 1])
                thr = float(arrays[c][int(np.count_nonzero(labels[:k] == c)) - 1])
            out = self.merge(out, (value, thr))
        return out

    def _minimum(self, rej: I64, totals: list[int]) -> tuple[float, int]:
        """The minimum normalised cost at the points of ``rej`` and its first argmin.

        Consecutive points differ by one trial (or one trial's copies). A step that rejects
        a target raises the cost and any other step lowers it or leaves it (each term is a
        rounded monotone function of one count, and rounding is monotone), so the minimum
        is at a *valley*: a point whose next step rejects a target and whose previous step
        does not. The cost is evaluated at the valleys, then along the one falling run that
        ends at the first lowest valley, whose first point at that value is the first argmin:
        the same float operations on the same counts as evaluating every point.
        """
        a = self.c_miss * self.p_target
        b = self.c_fa_nontarget * self.p_nontarget
        c = self.c_fa_spoof * self.p_spoof
        norm = min(self.c_fa_nontarget * self.p_nontarget + self.c_fa_spoof * self.p_spoof,
                   self.c_miss * self.p_target)

        def normed(at: slice | NDArray[np.int64]) -> F64:
            return self._normed(rej[0, at], rej[1, at], rej[2, at], totals)

        m = rej.shape[1]
        if m < VALLEY_MIN or min(a, b, c) < 0 or norm <= 0:  # few points, or not monotone
            every = normed(slice(None))
            k = int(np.argmin(every))
            return float(every[k]), k
        rises = rej[0, 1:] != rej[0, :-1]  # the step into point k + 1 rejects a target
        valley = np.ones(m, dtype=bool)
        valley[:-1] = rises
        valley[1:] &= ~rises
        at = np.flatnonzero(valley)
        values = normed(at)
        j = int(np.argmin(values))
        end = int(at[j])
        before = np.flatnonzero(rises[:end])
        start = int(before[-1]) + 1 if before.shape[0] else 0
        k = start + int(np.argmin(normed(slice(start, end + 1))))
        return float(values[j]), k

    def _normed(self, r0: I64, r1: I64, r2: I64, totals: list[int]) -> F64:
        """The normalised cost at the points with these rejection counts (ASVspoof's order)."""
        nt, nn, ns = totals
        cost = ((self.c_miss * self.p_target) * (r0 / nt)
                + (self.c_fa_nontarget * self.p_nontarget) * ((nn - r1) / nn)
                + (self.c_fa_spoof * self.p_spoof) * ((ns - r2) / ns))
        norm = min(self.c_fa_nontarget * self.p_nontarget + self.c_fa_spoof * self.p_spoof,
                   self.c_miss * self.p_target)
        out: F64 = cost / norm
        return out

    def _piece(self, arrays: list[F64], offsets: list[int], totals: list[int]
               ) -> tuple[float, float]:
        """The piece's minimum and threshold, from its targets' positions (no full merge).

        The lowest points of the sweep are just before a target is rejected, or the last
        point (:meth:`_minimum`): those are located by binary search of the targets in the
        other two classes and evaluated; only the non-targets and spoofs of the one falling
        run that ends at the first lowest of them are merged, to find the first point at that
        value. Same counts, same float operations, same first argmin as the full sweep
        (:meth:`_piece_every_point`, kept for costs that are not monotone).
        """
        weights = (self.c_miss * self.p_target, self.c_fa_nontarget * self.p_nontarget,
                   self.c_fa_spoof * self.p_spoof)
        if min(weights) < 0 or min(weights[1] + weights[2], weights[0]) <= 0:
            return self._piece_every_point(arrays, offsets, totals)
        tar, non, spf = arrays
        o0, o1, o2 = offsets
        first = not (o0 or o1 or o2)  # else point 0 is the previous piece's last point
        n_tar = tar.shape[0]
        # candidates: the point just before each target is rejected, and the last point
        c1 = np.append(np.searchsorted(non, tar, side="left"), non.shape[0])
        c2 = np.append(np.searchsorted(spf, tar, side="left"), spf.shape[0])
        values = self._normed(np.arange(n_tar + 1, dtype=np.int64) + o0, c1 + o1, c2 + o2,
                              totals)
        lo = 0 if first or c1[0] or c2[0] or not n_tar else 1
        j = lo + int(np.argmin(values[lo:]))
        # the falling run ending there: the non-targets and spoofs after target j - 1
        s1, s2 = (int(c1[j - 1]), int(c2[j - 1])) if j else (0, 0)
        e1, e2 = int(c1[j]), int(c2[j])
        labels = np.repeat(np.array([1, 2], dtype=np.int8), [e1 - s1, e2 - s2])
        if labels.shape[0] > 1:
            labels = labels[np.argsort(np.concatenate((non[s1:e1], spf[s2:e2])),
                                       kind="stable")]
        r1 = s1 + np.concatenate(([0], np.cumsum(labels == 1)))
        r2 = s2 + np.concatenate(([0], np.cumsum(labels == 2)))
        along = self._normed(np.full(r1.shape[0], j + o0, dtype=np.int64), r1 + o1, r2 + o2,
                             totals)
        skip = 0 if first or j + s1 + s2 else 1  # the run starts at the excluded point 0
        r = skip + int(np.argmin(along[skip:]))
        if r:  # the last rejected trial: the run's r-th
            threshold = float(non[r1[r] - 1] if labels[r - 1] == 1 else spf[r2[r] - 1])
        elif j:  # the run's start: just after target j - 1
            threshold = float(tar[j - 1])
        else:  # point 0 of the lowest piece: everything accepted
            threshold = min(float(x[0]) for x in arrays if x.shape[0]) - ks.A_DCF_FIRST_OFFSET
        return float(along[r]), threshold

    def _piece_every_point(self, arrays: list[F64], offsets: list[int], totals: list[int]
                           ) -> tuple[float, float]:
        """:meth:`_piece` by the full per-trial sweep of the piece."""
        sw = ks.per_trial_sweep(*arrays)
        first = all(o == 0 for o in offsets)
        rej = sw.rejected + np.array([[o] for o in offsets], dtype=np.int64)
        value, k = self._minimum(rej if first else rej[:, 1:], totals)
        return value, sw.threshold(k if first else k + 1, offset=ks.A_DCF_FIRST_OFFSET)

    def merge(self, a: tuple[float, float] | None, b: tuple[float, float] | None
              ) -> tuple[float, float] | None:
        """The strict minimum (ties: the lower range)."""
        if a is None:
            return b
        if b is None:
            return a
        return b if b[0] < a[0] else a


def _weighted_rejections(labels: NDArray[np.int8], weights: list[I64]) -> I64:
    """Cumulative weights of each class at every point of a per-trial sweep ``(C, n + 1)``.

    The trials of class ``i`` take the positions ``labels == i`` in their sorted order.
    """
    out = np.zeros((len(weights), labels.shape[0] + 1), dtype=np.int64)
    for i, w in enumerate(weights):
        inc = np.zeros(labels.shape[0], dtype=np.int64)
        inc[labels == i] = w
        np.cumsum(inc, out=out[i, 1:])
    return out


@dataclass(frozen=True, eq=False)
class EerVertices:
    """Located ROC vertices of :class:`InterpolatedEer` (``(score, a, b)`` triples)."""

    first: tuple[float, int, int] | None  # the range's lowest score
    best: tuple[float, int, int] | None  # the highest score with g <= 0
    above: tuple[float, int, int] | None  # the lowest score above ``best``


@dataclass(frozen=True)
class InterpolatedEer(_TwoSided):
    """The SASV-2022 interpolated EER of ``pos`` against ``neg`` (located vertices).

    At a score ``v`` used as an accept-if-``>=`` threshold, ``a(v)`` negatives and ``b(v)``
    positives are accepted; ``g = n_neg n_pos - a n_pos - b n_neg`` is non-decreasing in
    ``v``. The EER interpolates between the highest score with ``g <= 0`` and the next score
    (:func:`scoreframe.kernels.spoof.interpolated_eer`); each range locates those among its
    distinct scores with global counts.
    """

    def _arrays(self, r: RangeData, names: tuple[str, ...] | None, *, target: bool
                ) -> tuple[list[F64], int, int]:
        if names is None:
            c = r.side(None, target=target)
            return [c.scores], c.total, c.offset
        cs = [r.cls(c) for c in names]
        return [c.scores for c in cs], sum(c.total for c in cs), sum(c.offset for c in cs)

    def reduce(self, r: RangeData) -> EerVertices | None:
        """The range's vertices, by bisection over each sorted class (no pass over trials)."""
        pos, nt, off_p = self._arrays(r, self.pos, target=True)
        neg, nn, off_n = self._arrays(r, self.neg, target=False)
        arrays = [x for x in (*pos, *neg) if x.shape[0]]
        if not (nt and nn) or not arrays:
            return None

        def at(v: float) -> tuple[float, int, int]:  # accepted negatives / positives at v
            b = nt - off_p - sum(int(np.searchsorted(x, v, side="left")) for x in pos)
            a = nn - off_n - sum(int(np.searchsorted(x, v, side="left")) for x in neg)
            return v, a, b

        def g(v: float) -> int:
            _, a, b = at(v)
            return nn * nt - a * nt - b * nn

        best = -np.inf
        found = False
        for x in arrays:  # g is non-decreasing: the largest score with g <= 0, per class
            lo, hi = -1, x.shape[0]
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if g(float(x[mid])) <= 0:
                    lo = mid
                else:
                    hi = mid
            if lo >= 0 and (not found or float(x[lo]) > best):
                best, found = float(x[lo]), True
        first = at(min(float(x[0]) for x in arrays))
        if not found:
            return EerVertices(first, None, None)
        nxt = [x[np.searchsorted(x, best, side="right")] for x in arrays
               if np.searchsorted(x, best, side="right") < x.shape[0]]
        return EerVertices(first, at(best), at(float(min(nxt))) if nxt else None)

    def merge(self, a: EerVertices | None, b: EerVertices | None) -> EerVertices | None:
        """The higher range's crossing when it has one (``g`` is monotone)."""
        if a is None:
            return b
        if b is None:
            return a
        if b.best is not None:
            return EerVertices(a.first, b.best, b.above)
        return EerVertices(a.first, a.best, a.above if a.above is not None else b.first)


def interpolated_eer_value(st: EerVertices, n_pos: int, n_neg: int) -> float:
    """The EER from merged :class:`InterpolatedEer` vertices (the kernel's float operations)."""
    nt, nn = n_pos, n_neg

    def g(a: int, b: int) -> int:
        return nn * nt - a * nt - b * nn

    if st.best is None:  # no score with g <= 0: every trial accepted
        a_lo, b_lo = nn, nt
        above = st.first
    else:
        _, a_lo, b_lo = st.best
        above = st.above
    g_lo = g(a_lo, b_lo)
    if g_lo == 0:
        return a_lo / nn
    a_hi, b_hi = (above[1], above[2]) if above is not None else (0, 0)
    g_hi = g(a_hi, b_hi)
    if a_hi == a_lo:
        return a_lo / nn
    t = g_hi / (g_hi - g_lo)
    return (a_hi + t * (a_lo - a_hi)) / nn


@dataclass(frozen=True)
class EceSums(_TwoSided):
    """Exact sums of the ECE's log terms at each prior log odds (natural log).

    Per prior ``tau``: ``sum softplus(-(l + tau))`` over the positives and
    ``sum softplus(l + tau)`` over the negatives, each an exact integer
    (:func:`~scoreframe.kernels.elementary.exact_sum`: the sum does not depend on how the
    trials were split), and the number of infinite terms (a misleading infinite llr).
    """

    bytes_per_trial = 16  # temporaries per trial of the range
    additive = True
    compiled = True  # the exact sums of the log terms (kernels.elementary.softplus_sums)

    prior_log_odds: tuple[float, ...] = ()

    def reduce(self, r: RangeData) -> tuple[list[int], list[int], int, int]:
        """The range's sums."""
        p, n = self.sides(r)
        inf_p = int(np.searchsorted(p.scores, -np.inf, side="right"))
        inf_n = n.n - int(np.searchsorted(n.scores, np.inf, side="left"))
        taus = np.asarray(self.prior_log_odds, dtype=np.float64)
        # softplus(-(l + tau)) = softplus(-l - tau): the positives' -l ascend when read backwards
        sp = softplus_sums(-p.scores[inf_p:][::-1], -taus)
        sn = softplus_sums(n.scores[:n.n - inf_n], taus)
        return sp, sn, inf_p, inf_n

    def merge(self, a: tuple[list[int], list[int], int, int] | None,
              b: tuple[list[int], list[int], int, int] | None
              ) -> tuple[list[int], list[int], int, int] | None:
        """Sums and counts add."""
        if a is None:
            return b
        if b is None:
            return a
        return ([x + y for x, y in zip(a[0], b[0], strict=True)],
                [x + y for x, y in zip(a[1], b[1], strict=True)], a[2] + b[2], a[3] + b[3])


def ece_values(st: tuple[list[int], list[int], int, int], prior_log_odds: F64, n_pos: int,
               n_neg: int) -> F64:
    """ECE in bits at each prior from merged :class:`EceSums` (``inf``: a misleading ``inf``)."""
    from scipy.special import expit

    sp = np.array([exact_to_float(v) for v in st[0]]) if st[0] else np.zeros(0)
    sn = np.array([exact_to_float(v) for v in st[1]]) if st[1] else np.zeros(0)
    prior = expit(np.asarray(prior_log_odds, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        t = np.where(st[2] > 0, np.inf, sp / n_pos)
        n = np.where(st[3] > 0, np.inf, sn / n_neg)
        out: F64 = (prior * t + (1.0 - prior) * n) / kf.LN2
        return out


#: Most buckets a :class:`ScoreHistogram` value holds: its bucket width is the least power of
#: two that spans the scores with at most this many buckets, so a histogram of 50 bins over
#: the scores' range has 20 buckets or more per bin.
HISTOGRAM_BUCKETS = 2048
#: :func:`histogram_scale` of scores that are all 0 (below every float's).
NO_SCALE = -1100


def histogram_scale(x: F64) -> int:
    """The least ``E`` with ``|x| < 2**E`` for every finite ``x`` (:data:`NO_SCALE` if all 0)."""
    top = float(np.max(np.abs(x), initial=0.0))
    return int(np.frexp(top)[1]) if top > 0 else NO_SCALE


#: The least grid exponent at which every bucket edge ``k * 2**scale`` (``|k| < 2**53``) is a
#: normal float, exact: edges on finer grids would be subnormal.
EXACT_EDGE_SCALE = -1022


def score_buckets(x: F64, scale: int) -> NDArray[np.int64]:
    """Bucket of each finite score: ``floor(x / 2**scale)`` (exact).

    ``ldexp`` scales by a power of two, exact unless the result is subnormal, where the floor
    is 0 or, for a negative score, -1 (a product rounded to -0.0 is set to -1).
    """
    y = np.floor(np.ldexp(np.asarray(x, dtype=np.float64), -scale))
    y[(y == 0) & (np.asarray(x) < 0)] = -1.0
    return y.astype(np.int64)


def bucket_edges(b: NDArray[np.int64], scale: int) -> F64:
    """The lower edge of each bucket: ``b * 2**scale``."""
    return np.ldexp(np.asarray(b, dtype=np.float64), scale)


def _compact(c: NDArray[np.integer[Any]]) -> NDArray[np.integer[Any]]:
    """Counts as 4-byte integers when they fit (what travels), else as they are."""
    return c.astype(np.uint32) if c.max(initial=0) < 1 << 32 else c


@dataclass(frozen=True, eq=False)
class HistogramState:
    """Target and non-target counts of the buckets ``k0, k0 + 1, ...`` of width ``2**scale``."""

    scale: int
    k0: int
    tar: NDArray[np.integer[Any]]
    non: NDArray[np.integer[Any]]

    def at(self, scale: int) -> HistogramState:
        """The same counts on the coarser grid of ``scale`` (``>= self.scale``): buckets nest."""
        if scale == self.scale:
            return self
        shift = min(scale - self.scale, 63)  # |k| < 2**53: a shift of 63 gives 0 or -1
        keys = (self.k0 + np.arange(self.tar.shape[0], dtype=np.int64)) >> shift
        k0 = int(keys[0]) if keys.shape[0] else 0
        n = int(keys[-1]) - k0 + 1 if keys.shape[0] else 0
        tar, non = np.zeros(n, np.int64), np.zeros(n, np.int64)
        np.add.at(tar, keys - k0, self.tar.astype(np.int64))  # integer sums: exact
        np.add.at(non, keys - k0, self.non.astype(np.int64))
        return HistogramState(scale, k0, tar, non)

    def capped(self) -> HistogramState:
        """On the finest grid from ``scale`` up with at most ``HISTOGRAM_BUCKETS`` buckets."""
        k1, s = self.k0 + self.tar.shape[0] - 1, 0
        while (k1 >> s) - (self.k0 >> s) >= HISTOGRAM_BUCKETS:
            s += 1
        out = self.at(self.scale + s)
        return HistogramState(out.scale, out.k0, _compact(out.tar), _compact(out.non))


@dataclass(frozen=True)
class ScoreHistogram(Statistic):
    """Counts of finite target and non-target scores per bucket of a power-of-two grid.

    The value (:class:`HistogramState`) is on the grid of width ``2**s``, ``s`` the least
    integer with ``s >= E - 52`` (``2**E`` the power of two above the largest ``|score|``)
    such that the scores span at most :data:`HISTOGRAM_BUCKETS` buckets; it holds the counts
    of the buckets from the lowest score's to the highest's. Grids nest and both conditions
    only grow with the scores, so merging two values on the coarser grid and coarsening while
    the span exceeds the cap gives the value of the union, whatever the split: a histogram on
    any bins drawn at the end is the same on every engine, and a value never holds more than
    :data:`HISTOGRAM_BUCKETS` pairs of counts whatever the number of trials.
    """

    def reduce(self, r: RangeData) -> HistogramState | None:
        """The range's buckets, counted from the sorted scores by the buckets' edges.

        The finite scores of each class are a slice of its sorted array, and a bucket's count
        is the number of scores between its edges (a binary search per edge): no per-trial
        array. Where an edge would not be an exact float (subnormal), the buckets of the
        scores are computed one by one instead (:func:`score_buckets`); both give the counts
        of ``floor(x / 2**scale)``.
        """
        sides = [x[int(np.searchsorted(x, -np.inf, side="right")):
                   int(np.searchsorted(x, np.inf, side="left"))] for x in (r.s.tar, r.s.non)]
        if not sum(x.shape[0] for x in sides):
            return None
        ends = np.concatenate([x[[0, -1]] for x in sides if x.shape[0]])
        scale = histogram_scale(ends) - 52  # every bucket index below 2**53 in magnitude
        k0, k1 = (int(k) for k in score_buckets(np.array([ends.min(), ends.max()]), scale))
        s = 0
        while (k1 >> s) - (k0 >> s) >= HISTOGRAM_BUCKETS:
            s += 1
        k0, n = k0 >> s, (k1 >> s) - (k0 >> s) + 1
        if scale + s >= EXACT_EDGE_SCALE:  # every edge k * 2**(scale + s) is a normal float
            edges = bucket_edges(np.arange(k0 + 1, k0 + n, dtype=np.int64), scale + s)
            tar, non = (np.diff(np.searchsorted(x, edges, side="left"), prepend=0,
                                append=x.shape[0]).astype(np.int64) for x in sides)
        else:
            tar, non = (np.bincount((score_buckets(x, scale) >> s) - k0, minlength=n)
                        .astype(np.int64) for x in sides)
        return HistogramState(scale + s, k0, _compact(tar), _compact(non))

    def merge(self, a: HistogramState | None, b: HistogramState | None) -> HistogramState | None:
        """Both on the coarser grid, counts add per bucket, coarsened to the cap."""
        if a is None:
            return b
        if b is None:
            return a
        scale = max(a.scale, b.scale)
        a, b = a.at(scale), b.at(scale)
        k0 = min(a.k0, b.k0)
        n = max(a.k0 + a.tar.shape[0], b.k0 + b.tar.shape[0]) - k0
        tar, non = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for part in (a, b):
            tar[part.k0 - k0:part.k0 - k0 + part.tar.shape[0]] += part.tar
            non[part.k0 - k0:part.k0 - k0 + part.non.shape[0]] += part.non
        return HistogramState(scale, k0, tar, non).capped()


def histogram_bins(st: HistogramState, bins: int) -> tuple[F64, I64, I64] | None:
    """``(edges, targets, non-targets)`` on ``bins`` bins over the scores' range.

    Nominal edges ``linspace(lo, hi, bins + 1)`` between the lowest and the highest non-empty
    bucket's lower edge; each bucket is counted in the bin holding its lower edge. ``None``
    without finite scores.
    """
    full = np.flatnonzero((st.tar > 0) | (st.non > 0))
    if full.shape[0] == 0:
        return None
    low = bucket_edges(st.k0 + full, st.scale)
    ct, cn = st.tar[full].astype(np.int64), st.non[full].astype(np.int64)
    lo, hi = float(low[0]), float(low[-1])
    hi = hi if hi > lo else lo + 1.0
    width = (hi - lo) / bins
    b = np.clip(np.floor((low - lo) / width), 0, bins - 1).astype(np.int64)
    return (np.linspace(lo, hi, bins + 1), np.bincount(b, weights=ct, minlength=bins)
            .astype(np.int64), np.bincount(b, weights=cn, minlength=bins).astype(np.int64))
