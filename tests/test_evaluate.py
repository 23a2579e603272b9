"""Per-condition evaluation: groups equal the scalar metrics, pooled rows, degenerate groups."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import DATA

from scoreframe import evaluate, explode_dcf, metrics, synth_chunks, write_trials
from scoreframe.evaluate import DegenerateGroupWarning
from scoreframe.kernels import sort_scores
from scoreframe.kernels.elementary import operating_points
from scoreframe.kernels.summary import equalized_summary

P = [0.01, 0.1, 0.5]


@pytest.fixture(scope="module")
def synth() -> pl.DataFrame:
    return pl.concat(synth_chunks(30_000, seed=11))


def _scalar(df: pl.DataFrame) -> dict:
    tar = df.filter("label")["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    return {"n_tar": len(tar), "n_non": len(non), "eer": metrics.eer(tar, non),
            "cllr": metrics.cllr(tar, non), "min_cllr": metrics.min_cllr(tar, non),
            "prbep": metrics.prbep(tar, non),
            "act": metrics.act_dcf(tar, non, p_target=P),
            "min": metrics.min_dcf(tar, non, p_target=P)}


def test_groups_and_pooled_rows_equal_scalar_metrics(synth):
    res = evaluate(synth, by=["gender", "channel"], p_target=P)
    assert res.columns[:5] == ["system", "gender", "channel", "n_tar", "n_non"]
    assert res.height == 3 * (4 + 1)
    for row in res.iter_rows(named=True):
        sub = synth.filter(system=row["system"])
        if row["gender"] != "all":
            sub = sub.filter(gender=row["gender"], channel=row["channel"])
        exp = _scalar(sub)
        for k in ("n_tar", "n_non"):
            assert row[k] == exp[k]
        for k in ("eer", "cllr", "min_cllr", "prbep"):
            assert row[k] == pytest.approx(exp[k], rel=1e-12)
        assert [d["act_dcf_norm"] for d in row["dcf"]] == pytest.approx(exp["act"], rel=1e-12)
        assert [d["min_dcf_norm"] for d in row["dcf"]] == pytest.approx(exp["min"], rel=1e-12)
        assert row["c_primary"] == pytest.approx(np.mean(exp["act"]), rel=1e-12)


def test_partitioned_dataset_gives_identical_results(synth, tmp_path):
    write_trials(synth, tmp_path / "ds", partition_by=["system", "channel"], chunk_rows=7_000)
    a = evaluate(synth, by=["duration"], p_target=P)
    b = evaluate(tmp_path / "ds", by=["duration"], p_target=P)
    assert a.equals(b)
    c = evaluate(tmp_path / "ds", by=["duration"], p_target=P, where="channel = 'tel'")
    d = evaluate(synth.filter(channel="tel"), by=["duration"], p_target=P)
    assert c.equals(d)


def test_flat_table_and_costs(synth):
    res = evaluate(synth.filter(system="sys1"), p_target=[0.01], c_miss=10, c_fa=1)
    flat = explode_dcf(res)
    assert flat.height == 1
    row = flat.row(0, named=True)
    assert row["effective_prior"] == pytest.approx(0.0917431, abs=1e-7)
    sub = _scalar(synth.filter(system="sys1"))
    tar = synth.filter(system="sys1", label=True)["score"].to_numpy()
    non = synth.filter(system="sys1", label=False)["score"].to_numpy()
    assert row["min_dcf_norm"] == pytest.approx(
        metrics.min_dcf(tar, non, p_target=0.01, c_miss=10, c_fa=1), rel=1e-12)
    assert row["n_miss_min"] + row["n_fa_min"] > 0 and sub["n_tar"] == res["n_tar"][0]
    assert row["dr30_ok"] == (row["n_miss_min"] >= 30 and row["n_fa_min"] >= 30)


def test_degenerate_groups_warn_once_with_null_metrics():
    df = pl.DataFrame({"score": [1.0, 0.0, 2.0, 3.0], "label": [True, False, True, True],
                       "cond": ["a", "a", "b", "b"]})
    with pytest.warns(DegenerateGroupWarning, match="cond=b") as rec:
        res = evaluate(df, by="cond", p_target=0.5)
    assert len(rec) == 1
    b = res.filter(cond="b").row(0, named=True)
    assert (b["n_tar"], b["n_non"], b["eer"], b["cllr"]) == (2, 0, None, None)
    assert res.filter(cond="all")["n_tar"][0] == 3


def test_unknown_labels_are_left_out():
    df = pl.DataFrame({"score": [1.0, 0.0, 5.0], "label": [True, False, None]})
    res = evaluate(df, p_target=0.5)
    assert (res["n_tar"][0], res["n_non"][0]) == (1, 1)


def test_equalized_summary_brute_force():
    rng = np.random.default_rng(0)
    parts = [sort_scores(rng.normal(1 + k, 1, 30 + 20 * k), rng.normal(0, 1, 200 - 50 * k))
             for k in range(3)]
    p, q, thr = operating_points(p_target=np.array(P))
    eq = equalized_summary(parts, p, q, thr)
    # brute force: mean of per-partition rates at every candidate threshold
    cands = np.r_[np.unique(np.concatenate([np.r_[s.tar, s.non] for s in parts])), np.inf]
    pm = np.mean([(s.tar[None, :] < cands[:, None]).mean(1) for s in parts], axis=0)
    pf = np.mean([(s.non[None, :] >= cands[:, None]).mean(1) for s in parts], axis=0)
    brute_min = [np.min(pi * pm + (1 - pi) * pf) for pi in P]
    np.testing.assert_allclose(eq["eq_min_dcf"], brute_min, rtol=1e-12)
    act_pm = np.mean([np.mean(s.tar < t) for s in parts for t in [thr[0]]])
    assert eq["eq_act_dcf"][0] == pytest.approx(
        P[0] * act_pm + (1 - P[0]) * np.mean([np.mean(s.non >= thr[0]) for s in parts]))
    # equal-size partitions: equalized EER close to pooled steppy EER
    assert 0 < eq["eq_eer"] < 0.5


def test_equalize_by_columns(synth):
    res = evaluate(synth.filter(system="sys1"), equalize_by="duration", p_target=P)
    assert {"eq_eer"} <= set(res.columns)
    assert {"eq_act_dcf_norm", "eq_min_dcf_norm"} <= set(explode_dcf(res).columns)


@pytest.mark.parametrize("method", ["rocch", "nist", "kaldi"])
def test_eer_methods_on_real_data(method):
    df = pl.read_parquet(DATA / "real" / "fvcaus_plda" / "fvcaus_plda.parquet")
    res = evaluate(df, p_target=0.01, eer_method=method)
    tar = df.filter("label")["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    assert res["eer"][0] == pytest.approx(metrics.eer(tar, non, method=method), rel=1e-12)
    assert 0 < res["eer"][0] < 0.01  # README of the set: ROCCH-EER about 0.1 %


def test_rocch_eer_bounds_other_conventions_on_real_data():
    """ROCCH-EER <= the steppy conventions (the hull lies below the staircase)."""
    df = pl.read_parquet(DATA / "real" / "ru2009_evalita" / "ru2009_evalita.parquet")
    tar = df.filter("label")["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    r = metrics.eer(tar, non)
    assert r <= metrics.eer(tar, non, method="nist") + 1e-12
    assert abs(metrics.eer(tar, non, method="kaldi") - r) < 0.01
