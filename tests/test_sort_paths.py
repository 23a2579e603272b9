"""One group in memory is sorted by numpy or by Polars, whichever is faster here: same bits.

numpy's sort is vectorized on some CPUs (faster than Polars' multi-threaded sort there) and a
plain quicksort on others (three times slower than Polars' on the AMD EPYC of the eighth
session); ``polars_sorts_faster`` times both once per process. Whatever it finds, every
number must be the same: these tests force each path on the same data (ties, infinite
scores, ``-0.0`` beside ``0.0``, NaN) and compare bit for bit.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from scoreframe import Intervals, evaluate
from scoreframe.kernels.sorted_scores import SortedScores, sort_scores
from scoreframe.stats import reduce
from scoreframe.stats.reduce import sorted_groups


def data(n: int, seed: int = 0, *, zeros: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.3
    sc = np.round(rng.normal(size=n) + 1.5 * lab, 1)  # heavy ties
    sc[:6] = [np.inf, -np.inf, -np.inf, np.inf, np.nan, 2.0]
    if zeros:  # -0.0 and 0.0 are one score
        z = rng.random(n) < 0.02
        sc[z] = np.where(rng.random(int(z.sum())) < 0.5, -0.0, 0.0)
    return pl.DataFrame({"score": sc, "label": lab})


def forced(monkeypatch: pytest.MonkeyPatch, polars: bool) -> None:
    monkeypatch.setattr(reduce, "POLARS_SORT_MIN", 1)
    monkeypatch.setattr(reduce, "polars_sorts_faster", lambda: polars)
    monkeypatch.setattr(reduce, "PARALLEL_MIN", 1)  # numpy's two-thread path too
    monkeypatch.setattr(reduce, "usable_cores", lambda: 2)


def groups(df: pl.DataFrame) -> SortedScores:
    _, g, _ = sorted_groups(df.lazy(), ())
    assert len(g) == 1
    return g[0]


@pytest.mark.parametrize("n", [50, 5_000, 200_000])
def test_both_paths_give_the_same_sorted_classes_sums_and_positions(n, monkeypatch):
    df = data(n, seed=n)
    out = {}
    for polars in (False, True):
        with monkeypatch.context() as m:
            forced(m, polars)
            out[polars] = groups(df)
    a, b = out[False], out[True]
    for x, y in ((a.tar, b.tar), (a.non, b.non)):
        assert x.tobytes() == y.tobytes()  # bits, the sign of zero included
    assert a.cllr_sums == b.cllr_sums
    assert np.array_equal(a.tar_positions, b.tar_positions)
    ref = sort_scores(df.filter(pl.col("label") & pl.col("score").is_not_nan())["score"],
                      df.filter(~pl.col("label") & pl.col("score").is_not_nan())["score"])
    assert ref.tar.tobytes() == a.tar.tobytes() and ref.non.tobytes() == a.non.tobytes()
    assert ref.cllr_sums == a.cllr_sums
    assert np.array_equal(ref.tar_positions, a.tar_positions)


def test_both_paths_give_the_same_evaluation(monkeypatch):
    df = data(30_000, seed=4).filter(pl.col("score").is_not_nan())  # evaluate rejects NaN
    res = {}
    for polars in (False, True):
        with monkeypatch.context() as m:
            forced(m, polars)
            res[polars] = evaluate(df, operating_points=[0.01, 0.1, 0.5], engine="memory",
                                   validate=False)
    assert res[False].equals(res[True])
    with monkeypatch.context() as m:  # and out of core (numpy per range), and with intervals
        forced(m, True)
        ooc = evaluate(df, operating_points=[0.01, 0.1, 0.5], engine="streaming",
                       validate=False)
        iv = Intervals(bootstrap=20)
        a = evaluate(df, intervals=iv, engine="memory", validate=False)
        b = evaluate(df, intervals=iv, engine="streaming", validate=False)
    assert res[True].equals(ooc) and a.equals(b)


def test_zeros_are_made_positive_without_touching_the_input():
    tar = np.array([-1.0, -0.0, 0.0, -0.0, 3.0])
    non = np.array([-0.0, 0.0])
    before = tar.tobytes(), non.tobytes()
    s = SortedScores(tar, non)
    assert not np.signbit(s.tar[1:4]).any() and not np.signbit(s.non).any()
    assert s.tar[0] == -1.0 and s.tar[4] == 3.0
    assert (tar.tobytes(), non.tobytes()) == before  # a copy was fixed, not the caller's array
    clean = np.array([-2.0, 0.0, 1.0])
    assert SortedScores(clean, clean).tar is clean  # nothing to fix: no copy


def test_polars_path_sums_in_the_background_and_waits_for_them(monkeypatch):
    """The Polars path returns once the targets are located; the Cllr sums finish in two
    threads meanwhile, and reading them waits: the integers of the numpy path."""
    import threading

    from scoreframe.kernels import sorted_scores as kss

    df = data(200_000, seed=9)
    gate = threading.Event()
    slow = kss.nontarget_cost_sum

    def held(x):  # the non-targets' sums cannot finish before the positions are read
        gate.wait(30)
        return slow(x)

    with monkeypatch.context() as m:
        forced(m, True)
        m.setattr(reduce, "nontarget_cost_sum", held)
        try:
            g = groups(df)
            pending = "cllr_sums" not in vars(g) and not g.__dict__["_sums"][1].done()
            positions = g.tar_positions.copy()  # known before the sums
        finally:
            gate.set()
        sums = g.cllr_sums
    assert pending
    with monkeypatch.context() as m:
        forced(m, False)
        ref = groups(df)
    assert sums == ref.cllr_sums and np.array_equal(positions, ref.tar_positions)
    # a pickle is the plain sorted classes with their sums; a replaced copy sums its own
    import dataclasses
    import pickle

    back = pickle.loads(pickle.dumps(g))
    assert type(back) is SortedScores and back.cllr_sums == sums
    assert np.array_equal(back.tar_positions, positions)
    half = dataclasses.replace(g, non=g.non[: g.n_non // 2])
    assert half.cllr_sums == sort_scores(g.tar, g.non[: g.n_non // 2]).cllr_sums
