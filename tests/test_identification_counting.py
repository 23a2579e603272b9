"""The counting state of 1:N identification against the former top-R state (kept here as a twin).

The former kernel kept, per probe, the ``R`` non-mates first in (score descending, input
position ascending) order and merged them batch by batch; it is copied below unchanged and
must give the same ranks, best non-mate scores and counts as the counting state for every
tie rule, batch size, row order and rank depth, on data with many ties.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from scoreframe.identification import identify
from scoreframe.identification._search import search_statistics
from scoreframe.kernels import identification as ki


# ---- the former kernel (scoreframe/kernels/identification.py before the counting state) ----
def _old_top(probe, score, pos, r):
    if probe.shape[0] == 0:
        return probe, score, pos
    by_score = np.argsort(-score, kind="stable")
    small = probe.astype(np.uint16 if probe.max() < 65536 else np.uint32)
    order = by_score[np.argsort(small[by_score], kind="stable")]
    probe, score, pos = probe[order], score[order], pos[order]
    start = np.ones(probe.shape[0], dtype=bool)
    start[1:] = probe[1:] != probe[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(probe.shape[0]), 0))
    keep = np.arange(probe.shape[0]) - first < r
    return probe[keep], score[keep], pos[keep]


def _old_state(probe, score, mate, pos, *, n, r):
    n_mates = np.bincount(probe[mate], minlength=n).astype(np.int64)
    n_cand = np.bincount(probe, minlength=n).astype(np.int64)
    mate_score = np.full(n, np.nan)
    mate_pos = np.full(n, -1, dtype=np.int64)
    mate_score[probe[mate]] = score[mate]
    mate_pos[probe[mate]] = pos[mate]
    best_non = np.full(n, -np.inf)
    np.maximum.at(best_non, probe[~mate], score[~mate])
    if pos.shape[0] > 1 and not (np.diff(pos) > 0).all():
        o = np.argsort(pos, kind="stable")
        probe, score, mate, pos = probe[o], score[o], mate[o], pos[o]
    tp, ts, tq = _old_top(probe[~mate], score[~mate], pos[~mate], r)
    return dict(n_mates=n_mates, n_cand=n_cand, mate_score=mate_score, mate_pos=mate_pos,
                best_non=best_non, top_probe=tp, top_score=ts, top_pos=tq, r=r)


def _old_merge(a, b):
    seen = ~np.isnan(b["mate_score"])
    mate_score = np.where(seen, b["mate_score"], a["mate_score"])
    mate_pos = np.where(seen, b["mate_pos"], a["mate_pos"])
    touched = np.zeros(a["n_mates"].shape[0], dtype=bool)
    touched[b["top_probe"]] = True
    mine = touched[a["top_probe"]]
    tp, ts, tq = _old_top(np.concatenate((a["top_probe"][mine], b["top_probe"])),
                          np.concatenate((a["top_score"][mine], b["top_score"])),
                          np.concatenate((a["top_pos"][mine], b["top_pos"])), a["r"])
    keep = ~mine
    return dict(n_mates=a["n_mates"] + b["n_mates"], n_cand=a["n_cand"] + b["n_cand"],
                mate_score=mate_score, mate_pos=mate_pos,
                best_non=np.maximum(a["best_non"], b["best_non"]),
                top_probe=np.concatenate((a["top_probe"][keep], tp)),
                top_score=np.concatenate((a["top_score"][keep], ts)),
                top_pos=np.concatenate((a["top_pos"][keep], tq)), r=a["r"])


def _old_ranks(st, tie):
    ms = st["mate_score"][st["top_probe"]]
    mp = st["mate_pos"][st["top_probe"]]
    if tie == "pessimistic":
        before = st["top_score"] >= ms
    elif tie == "optimistic":
        before = st["top_score"] > ms
    else:
        before = (st["top_score"] > ms) | ((st["top_score"] == ms) & (st["top_pos"] < mp))
    n = st["n_mates"].shape[0]
    rank = 1 + np.bincount(st["top_probe"][before], minlength=n)
    rank[np.isnan(st["mate_score"])] = st["r"] + 1
    return np.minimum(rank, st["r"] + 1).astype(np.int64)
# ---- end of the former kernel ----


def _old_reduce(probe, score, mate, *, n, r, batch):
    """The former streaming reduction: batches in input order, merged one by one."""
    pos = np.arange(probe.shape[0], dtype=np.int64)
    state = None
    for i in range(0, probe.shape[0], batch):
        s = slice(i, i + batch)
        part = _old_state(probe[s], score[s], mate[s], pos[s], n=n, r=r)
        state = part if state is None else _old_merge(state, part)
    return state


def _random_searches(rng, n_probe, n_gal, levels):
    """Candidate rows with many ties (``levels`` distinct scores), ragged candidate lists,
    probes without a mate and probes without non-mates, rows shuffled."""
    rows = []
    for p in range(n_probe):
        k = int(rng.integers(1, n_gal + 1))
        mate = -1 if rng.random() < 0.3 else int(rng.integers(0, k))
        for g in range(k):
            rows.append((f"p{p:03d}", int(rng.integers(0, levels)) / 2 + (g == mate) * 0.5,
                         g == mate))
    df = pl.DataFrame(rows, schema=["probe", "score", "mate"], orient="row")
    return df.sample(fraction=1.0, shuffle=True, seed=int(rng.integers(0, 2**31)))


@pytest.mark.parametrize("seed", range(8))
def test_counting_state_equals_the_former_top_r_merge(seed):
    rng = np.random.default_rng(seed)
    df = _random_searches(rng, n_probe=int(rng.integers(1, 40)), n_gal=int(rng.integers(1, 30)),
                          levels=int(rng.integers(1, 6)))
    keys = sorted(set(df["probe"].to_list()))
    code = {k: i for i, k in enumerate(keys)}
    probe = np.array([code[k] for k in df["probe"].to_list()], dtype=np.int64)
    score, mate = df["score"].to_numpy(), df["mate"].to_numpy()
    n = len(keys)
    for r in (1, 3, 40):
        for batch in (1, 7, 10**6):
            old = _old_reduce(probe, score, mate, n=n, r=r, batch=batch)
            new = search_statistics(df, max_rank=r, batch_rows=batch).state
            for f in ("n_mates", "n_cand", "mate_pos"):
                assert np.array_equal(getattr(new, f), old[f]), f
            for f in ("mate_score", "best_non"):
                assert np.array_equal(getattr(new, f), old[f], equal_nan=True), f
            for tie in ki.TIE_RULES:
                assert np.array_equal(ki.mate_ranks(new, tie=tie), _old_ranks(old, tie)), \
                    (r, batch, tie)


def test_results_do_not_depend_on_batches_and_the_kernel_states_merge():
    rng = np.random.default_rng(7)
    df = _random_searches(rng, n_probe=50, n_gal=20, levels=3)
    for tie in ki.TIE_RULES:
        ref = identify(df, rank=[1, 2, 3, 10], fpir=[0.2, 0.5], tie=tie, batch_rows=10**6)
        for b in (1, 5, 64):
            assert identify(df, rank=[1, 2, 3, 10], fpir=[0.2, 0.5], tie=tie,
                            batch_rows=b).equals(ref)
    # any split of the rows, counted against the same mates, merges to the whole
    probe = rng.integers(0, 9, 300)
    score = rng.integers(0, 3, 300).astype(float)
    mate = np.zeros(300, bool)
    mate[rng.choice(300, 6, replace=False)] = True
    probe[mate] = np.arange(6)  # probes 0-5 have one mate, 6-8 none
    pos = np.arange(300)
    whole = ki.search_state(probe, score, mate, pos, n=9, r=4)
    mates = ki.locate_mates(probe, score, mate, pos, n=9)
    a, b = ki.empty_state(*mates, r=4), ki.empty_state(*mates, r=4)
    cut = rng.random(300) < 0.5
    ki.add_rows(a, probe[cut], score[cut], mate[cut], pos[cut])
    ki.add_rows(b, probe[~cut], score[~cut], mate[~cut], pos[~cut])
    m = ki.merge_states(a, b)
    for f in ("n_mates", "n_cand", "best_non", "n_above", "n_tied", "n_tied_before"):
        assert np.array_equal(getattr(m, f), getattr(whole, f)), f
    for tie in ki.TIE_RULES:
        assert np.array_equal(ki.mate_ranks(m, tie=tie), ki.mate_ranks(whole, tie=tie))
    assert (ki.mate_ranks(whole)[6:] == 5).all()
    with pytest.raises(ValueError, match="different mates"):
        ki.merge_states(a, ki.empty_state(np.zeros(9), np.zeros(9, np.int64), r=4))
