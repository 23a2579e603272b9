"""A pooled unit's counts and exact sums from its conditions' (reduce_sorted's ``parts``).

The Cllr sums and the additive statistics (``Statistic.additive``: class counts, misleading
counts, the ECE sums) of a union of disjoint trial sets are the merges of the sets' values:
the same integers as a pass over the union. Checked against that pass on data with ties,
infinite llrs, -0.0 next to 0.0 and empty parts; and that the evaluation reads each trial's
ECE terms once (the pooled unit no longer sums them again).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scoreframe import Engine, evaluate
from scoreframe.kernels.sorted_scores import sort_scores
from scoreframe.results.curves import ForensicCurves
from scoreframe.stats import _families as fam
from scoreframe.stats._families import ClassCounts, EceSums, Misleading, PairCount
from scoreframe.stats.reduce import covering, merge_sorted
from scoreframe.stats.summary import Request, reduce_sorted
from scoreframe.views.report import build_report


def _groups(seed: int, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        n_t, n_n = (0, 40) if i == 1 else (int(rng.integers(5, 300)), int(rng.integers(5, 600)))
        t = np.round(rng.normal(2.0, 3.0, n_t), 1)
        n = np.round(rng.normal(-2.0, 3.0, n_n), 1)
        if n_t > 3:
            t[:3] = [np.inf, -np.inf, -0.0]
        n[:2] = [np.inf, 0.0]
        out.append((t, n))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parts_give_the_same_integers_as_a_pass_over_the_union(seed: int) -> None:
    ece = ForensicCurves(0).ece
    stats = (ece, Misleading(), PairCount(), EceSums(prior_log_odds=(-1.0, 0.0, 2.5)))
    request = Request(np.array([-1.0, 0.0, 2.0]), statistics=stats)
    groups = [sort_scores(t, n) for t, n in _groups(seed, 5)]
    parts = [reduce_sorted(s, request) for s in groups]
    union = merge_sorted(groups)
    direct = reduce_sorted(merge_sorted(groups), request)
    pooled = reduce_sorted(union, request, parts=parts)
    assert pooled.cllr_tar == direct.cllr_tar and pooled.cllr_non == direct.cllr_non
    assert pooled.cllr_inf == direct.cllr_inf
    for st in stats:
        assert pooled.get(st) == direct.get(st), st
    assert ece.additive and Misleading.additive and ClassCounts.additive
    assert not PairCount.additive  # pairs across the parts: computed on the union
    assert "cllr_sums" not in vars(union)  # the caller's sorted scores are left alone


def test_covering_takes_whole_units_only() -> None:
    done = {(0,): "a", (1,): "b", (2, 3): "c", (0, 1, 2, 3): "all"}
    assert covering((0, 1, 2, 3), done) == ["c", "a", "b"]  # never the unit itself
    assert covering((0, 1, 2), done) == []  # (2, 3) is not inside: no exact split
    assert covering((0,), done) == []


def _table(n: int = 8000) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    label = rng.random(n) < 0.3
    score = np.round(np.where(label, rng.normal(2, 2, n), rng.normal(-2, 2, n)), 2)
    return pl.DataFrame({"model": [f"m{i % 50}" for i in range(n)],
                         "segment": [f"s{i}" for i in range(n)], "score": score,
                         "label": label, "condition": rng.choice(["a", "b", "c", "d"], n)})


def test_the_evaluation_sums_each_trials_ece_terms_once(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    df = _table()
    seen: list[int] = []
    real = fam.EceSums.reduce

    def spy(self: fam.EceSums, r: object) -> object:
        seen.append(r.n)  # type: ignore[attr-defined]  # RangeData
        return real(self, r)  # type: ignore[arg-type]  # RangeData

    monkeypatch.setattr(fam.EceSums, "reduce", spy)
    rep = build_report(df, by="condition", metrics=["forensic"])
    assert sum(seen) == df.height  # the conditions only; before: twice (the pooled row too)
    monkeypatch.setattr(fam.EceSums, "reduce", real)
    whole = rep.ece.filter(pl.col("condition") == "all").drop("condition")
    alone = build_report(df, metrics=["forensic"]).ece.drop("condition", strict=False)
    assert_frame_equal(whole.select(alone.columns), alone)  # one group: summed directly


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_pooled_rows_unchanged_in_memory_and_out_of_core(workers: int) -> None:
    df = _table()
    kw = {"by": "condition", "metrics": ["forensic"]}
    mem = evaluate(df, **kw)
    ooc = evaluate(df, engine=Engine(memory_limit="64KB", workers=workers), **kw)
    assert_frame_equal(mem, ooc)
    alone = evaluate(df, metrics=["forensic"])
    assert_frame_equal(mem.filter(pl.col("condition") == "all").drop("condition"),
                       alone.drop("condition", strict=False))
