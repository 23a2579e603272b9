"""1:N identification (ISO/IEC 19795-1, NIST FRTE 1:N): per-probe mergeable state and its rates.

numpy only. A *search* is one probe compared with every gallery candidate; at most one
candidate is the probe's *mate*. What the metrics need of a search, mergeable over any split
of its candidate rows (the reduction grouped by probe):

* the mate's score and input position (if the mate was seen), the number of mates seen;
* the best non-mate score (``-inf`` when none), the number of candidates;
* the ``R`` non-mates that come first in the *tie rule's* order (score descending, then the
  rule's tie break): the mate is within rank ``R`` exactly when fewer than ``R`` non-mates
  precede it, and the top ``R`` of a union is the top ``R`` of the parts' tops.

Tie rules between the mate and non-mates of equal score: ``"pessimistic"`` (the non-mate
first, as bob.measure), ``"optimistic"`` (the mate first), ``"stable"`` (input order, as
pyeer). Rates are integer counts divided once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["TIE_RULES", "SearchState", "cmc_counts", "merge_states", "mate_ranks",
           "search_state"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: Tie rules between a mate and non-mates of equal score.
TIE_RULES = ("pessimistic", "optimistic", "stable")


@dataclass(frozen=True, eq=False)
class SearchState:
    """Mergeable per-probe state of ``n`` searches (probe codes ``0 .. n-1``).

    Attributes
    ----------
    n_mates, n_cand
        Mates and candidates seen per probe.
    mate_score, mate_pos
        The mate's score (NaN when not seen) and input position (-1).
    best_non
        Highest non-mate score (``-inf`` when none).
    top_probe, top_score, top_pos
        The kept non-mates: at most ``r`` per probe, the first in (score descending, input
        position ascending) order (in no particular order overall).
    r
        How many non-mates are kept per probe.
    """

    n_mates: I64
    n_cand: I64
    mate_score: F64
    mate_pos: I64
    best_non: F64
    top_probe: I64
    top_score: F64
    top_pos: I64
    r: int


def _top(probe: I64, score: F64, pos: I64, r: int) -> tuple[I64, F64, I64]:
    """The first ``r`` rows of each probe in (score descending, position ascending) order.

    Rows must come with their tied ``(probe, score)`` entries in ascending position (rows in
    input order do, and so does a kept state followed by a later batch's): two stable sorts
    (score, then probe) then give the full order without sorting the positions.
    """
    if probe.shape[0] == 0:
        return probe, score, pos
    by_score = np.argsort(-score, kind="stable")
    small = probe.astype(np.uint16 if probe.max() < 65536 else np.uint32)  # radix sort
    order = by_score[np.argsort(small[by_score], kind="stable")]
    probe, score, pos = probe[order], score[order], pos[order]
    start = np.ones(probe.shape[0], dtype=bool)
    start[1:] = probe[1:] != probe[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(probe.shape[0]), 0))
    keep = np.arange(probe.shape[0]) - first < r
    return probe[keep], score[keep], pos[keep]


def search_state(probe: I64, score: F64, mate: NDArray[np.bool_], pos: I64, *, n: int, r: int
                 ) -> SearchState:
    """The state of ``n`` searches from candidate rows (probe code, score, mate, position).

    >>> st = search_state(np.array([0, 0, 0]), np.array([0.9, 0.5, 0.7]),
    ...                   np.array([False, True, False]), np.arange(3), n=1, r=2)
    >>> st.mate_score.tolist(), st.top_score.tolist(), st.best_non.tolist()
    ([0.5], [0.9, 0.7], [0.9])
    """
    n_mates = np.bincount(probe[mate], minlength=n).astype(np.int64)
    n_cand = np.bincount(probe, minlength=n).astype(np.int64)
    mate_score = np.full(n, np.nan)
    mate_pos = np.full(n, -1, dtype=np.int64)
    mate_score[probe[mate]] = score[mate]
    mate_pos[probe[mate]] = pos[mate]
    best_non = np.full(n, -np.inf)
    np.maximum.at(best_non, probe[~mate], score[~mate])
    if pos.shape[0] > 1 and not (np.diff(pos) > 0).all():  # not in input order: put it back
        o = np.argsort(pos, kind="stable")
        probe, score, mate, pos = probe[o], score[o], mate[o], pos[o]
    tp, ts, tq = _top(probe[~mate], score[~mate], pos[~mate], r)
    return SearchState(n_mates, n_cand, mate_score, mate_pos, best_non, tp, ts, tq, r)


def merge_states(a: SearchState, b: SearchState) -> SearchState:
    """The state of the union of two sets of candidate rows of the same searches (exact)."""
    seen = ~np.isnan(b.mate_score)
    mate_score = np.where(seen, b.mate_score, a.mate_score)
    mate_pos = np.where(seen, b.mate_pos, a.mate_pos)
    touched = np.zeros(a.n_mates.shape[0], dtype=bool)  # probes with kept rows in b
    touched[b.top_probe] = True
    mine = touched[a.top_probe]  # only those probes are selected again
    tp, ts, tq = _top(np.concatenate((a.top_probe[mine], b.top_probe)),
                      np.concatenate((a.top_score[mine], b.top_score)),
                      np.concatenate((a.top_pos[mine], b.top_pos)), a.r)
    keep = ~mine
    return SearchState(a.n_mates + b.n_mates, a.n_cand + b.n_cand, mate_score, mate_pos,
                       np.maximum(a.best_non, b.best_non),
                       np.concatenate((a.top_probe[keep], tp)),
                       np.concatenate((a.top_score[keep], ts)),
                       np.concatenate((a.top_pos[keep], tq)), a.r)


def mate_ranks(st: SearchState, *, tie: str = "pessimistic") -> I64:
    """Rank of each probe's mate (1-based), ``r + 1`` when beyond ``r`` or not in the gallery.

    >>> st = search_state(np.array([0, 0, 0]), np.array([0.7, 0.5, 0.7]),
    ...                   np.array([False, False, True]), np.arange(3), n=1, r=2)
    >>> mate_ranks(st).tolist()  # the mate (last row, 0.7) ties the first non-mate
    [2]
    """
    ms = st.mate_score[st.top_probe]
    mp = st.mate_pos[st.top_probe]
    if tie == "pessimistic":
        before = st.top_score >= ms
    elif tie == "optimistic":
        before = st.top_score > ms
    else:
        before = (st.top_score > ms) | ((st.top_score == ms) & (st.top_pos < mp))
    n = st.n_mates.shape[0]
    count = np.bincount(st.top_probe[before], minlength=n)
    rank = 1 + count
    rank[np.isnan(st.mate_score)] = st.r + 1
    return np.minimum(rank, st.r + 1).astype(np.int64)


def cmc_counts(rank: I64, r: int) -> I64:
    """Mated searches whose mate is within rank ``k``, for ``k = 1 .. r`` (cumulative)."""
    hist = np.bincount(np.minimum(rank, r + 1), minlength=r + 2)[1:r + 1]
    return np.cumsum(hist).astype(np.int64)
