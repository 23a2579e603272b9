"""1:N identification (ISO/IEC 19795-1, NIST FRTE 1:N): per-probe counting state and its rates.

numpy only. A *search* is one probe compared with every gallery candidate; at most one
candidate is the probe's *mate*. The mate's rank is one plus the number of non-mates that
precede it, so once the mate's score and input position are known (a first pass over the
mate rows), each search reduces to counts over any split of its candidate rows, added up:

* the mate's score and input position (if there is a mate), the number of mates seen;
* the best non-mate score (``-inf`` when none), the number of candidates;
* the non-mates scoring above the mate, tied with it, and tied with it and earlier in the
  input.

Memory is a few numbers per probe, whatever the rank asked and the row order.

Tie rules between the mate and non-mates of equal score: ``"pessimistic"`` (the non-mate
first, as bob.measure), ``"optimistic"`` (the mate first), ``"stable"`` (input order, as
pyeer). Rates are integer counts divided once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["TIE_RULES", "SearchState", "add_rows", "cmc_counts", "empty_state", "locate_mates",
           "mate_ranks", "merge_states", "search_state"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: Tie rules between a mate and non-mates of equal score.
TIE_RULES = ("pessimistic", "optimistic", "stable")


@dataclass(frozen=True, eq=False)
class SearchState:
    """Per-probe counting state of ``n`` searches (probe codes ``0 .. n-1``).

    The count arrays are added to in place by :func:`add_rows`.

    Attributes
    ----------
    mate_score, mate_pos
        The mate's score (NaN when the probe has none) and input position (-1), known
        before the rows are counted (:func:`locate_mates`).
    n_mates, n_cand
        Mates and candidates seen per probe.
    best_non
        Highest non-mate score (``-inf`` when none).
    n_above, n_tied, n_tied_before
        Non-mates scoring above the mate, equal to it, and equal to it at an earlier input
        position.
    r
        The deepest rank asked: ranks beyond it are reported as ``r + 1``.
    """

    mate_score: F64
    mate_pos: I64
    n_mates: I64
    n_cand: I64
    best_non: F64
    n_above: I64
    n_tied: I64
    n_tied_before: I64
    r: int


def locate_mates(probe: I64, score: F64, mate: NDArray[np.bool_], pos: I64, *, n: int
                 ) -> tuple[F64, I64]:
    """Each probe's mate score (NaN: none) and input position (-1) from its candidate rows.

    With several mates, the highest score and the first position (an error for the caller).

    >>> locate_mates(np.array([0, 0, 1]), np.array([0.9, 0.5, 0.7]),
    ...              np.array([False, True, False]), np.arange(3), n=2)
    (array([0.5, nan]), array([ 1, -1]))
    """
    ms = np.full(n, -np.inf)
    np.maximum.at(ms, probe[mate], score[mate])
    mp = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(mp, probe[mate], pos[mate])
    none = np.bincount(probe[mate], minlength=n) == 0
    ms[none], mp[none] = np.nan, -1
    return ms, mp


def empty_state(mate_score: F64, mate_pos: I64, *, r: int) -> SearchState:
    """The state of searches with these mates before any candidate row is counted."""
    n = mate_score.shape[0]
    return SearchState(np.asarray(mate_score, dtype=np.float64),
                       np.asarray(mate_pos, dtype=np.int64), np.zeros(n, np.int64),
                       np.zeros(n, np.int64), np.full(n, -np.inf), np.zeros(n, np.int64),
                       np.zeros(n, np.int64), np.zeros(n, np.int64), r)


def _add_counts(out: I64, probe: NDArray[np.integer], lo: int) -> None:
    if probe.shape[0]:
        c = np.bincount(probe - lo if lo else probe)
        out[lo:lo + c.shape[0]] += c


def add_rows(st: SearchState, probe: NDArray[np.integer], score: F64, mate: NDArray[np.bool_],
             pos: I64) -> None:
    """Count candidate rows (probe code, score, mate, input position) into ``st`` in place.

    Linear in the rows; the order of the rows and their split into calls do not matter.
    """
    if probe.shape[0] == 0:
        return
    lo = int(probe.min())  # batches of rows sorted by probe touch a narrow range
    _add_counts(st.n_cand, probe, lo)
    _add_counts(st.n_mates, probe[mate], lo)
    np.maximum.at(st.best_non, probe, np.where(mate, -np.inf, score))
    ms = st.mate_score[probe]
    above = score > ms  # False where the probe has no mate (NaN), and for the mate itself
    _add_counts(st.n_above, probe[above], lo)
    tied = score == ms
    tied &= ~mate  # the mate ties itself
    if tied.any():
        pt = probe[tied]
        _add_counts(st.n_tied, pt, lo)
        _add_counts(st.n_tied_before, pt[pos[tied] < st.mate_pos[pt]], lo)


def search_state(probe: I64, score: F64, mate: NDArray[np.bool_], pos: I64, *, n: int, r: int
                 ) -> SearchState:
    """The state of ``n`` searches from all their candidate rows (both passes in memory).

    >>> st = search_state(np.array([0, 0, 0]), np.array([0.9, 0.5, 0.7]),
    ...                   np.array([False, True, False]), np.arange(3), n=1, r=2)
    >>> st.mate_score.tolist(), st.n_above.tolist(), st.best_non.tolist()
    ([0.5], [2], [0.9])
    """
    st = empty_state(*locate_mates(probe, score, mate, pos, n=n), r=r)
    add_rows(st, probe, score, mate, pos)
    return st


def merge_states(a: SearchState, b: SearchState) -> SearchState:
    """The state of the union of two sets of candidate rows of the same searches (exact).

    Both must have been counted against the same mates (:func:`empty_state`).
    """
    if not (np.array_equal(a.mate_score, b.mate_score, equal_nan=True)
            and np.array_equal(a.mate_pos, b.mate_pos)):
        raise ValueError("merge_states: the states were counted against different mates")
    return SearchState(a.mate_score, a.mate_pos, a.n_mates + b.n_mates, a.n_cand + b.n_cand,
                       np.maximum(a.best_non, b.best_non), a.n_above + b.n_above,
                       a.n_tied + b.n_tied, a.n_tied_before + b.n_tied_before, a.r)


def mate_ranks(st: SearchState, *, tie: str = "pessimistic") -> I64:
    """Rank of each probe's mate (1-based), ``r + 1`` when beyond ``r`` or not in the gallery.

    >>> st = search_state(np.array([0, 0, 0]), np.array([0.7, 0.5, 0.7]),
    ...                   np.array([False, False, True]), np.arange(3), n=1, r=2)
    >>> mate_ranks(st).tolist()  # the mate (last row, 0.7) ties the first non-mate
    [2]
    >>> mate_ranks(st, tie="optimistic").tolist(), mate_ranks(st, tie="stable").tolist()
    ([1], [2])
    """
    if tie == "pessimistic":
        before = st.n_above + st.n_tied
    elif tie == "optimistic":
        before = st.n_above
    else:
        before = st.n_above + st.n_tied_before
    rank: I64 = np.minimum(before + 1, st.r + 1)  # a new array: the state is not changed
    rank[np.isnan(st.mate_score) | (st.n_mates == 0)] = st.r + 1
    return rank


def cmc_counts(rank: I64, r: int) -> I64:
    """Mated searches whose mate is within rank ``k``, for ``k = 1 .. r`` (cumulative)."""
    hist = np.bincount(np.minimum(rank, r + 1), minlength=r + 2)[1:r + 1]
    return np.cumsum(hist).astype(np.int64)
