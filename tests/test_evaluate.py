"""Per-condition evaluation: groups equal the scalar metrics, pooled rows, degenerate groups."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import DATA
from scipy.spatial import ConvexHull

from scoreframe import evaluate, explode_dcf, metrics, synth_chunks, write_trials
from scoreframe.kernels import sort_scores
from scoreframe.kernels.elementary import operating_points
from scoreframe.kernels.summary import equalized_summary
from scoreframe.metrics import Binary, OperatingPoints
from scoreframe.results.evaluate import DegenerateGroupWarning

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
            "act": metrics.act_dcf(tar, non, p_target=P, normalize=True),
            "min": metrics.min_dcf(tar, non, p_target=P, normalize=True)}


def test_groups_and_pooled_rows_equal_scalar_metrics(synth):
    res = evaluate(synth, by=["gender", "channel"], operating_points=P)
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
    a = evaluate(synth, by=["duration"], operating_points=P)
    b = evaluate(tmp_path / "ds", by=["duration"], operating_points=P)
    assert a.equals(b)
    c = evaluate(tmp_path / "ds", by=["duration"], operating_points=P, where="channel = 'tel'")
    d = evaluate(synth.filter(channel="tel"), by=["duration"], operating_points=P)
    assert c.equals(d)


def test_flat_table_and_costs(synth):
    res = evaluate(synth.filter(system="sys1"),
                   operating_points=OperatingPoints([0.01], c_miss=10, c_fa=1))
    flat = explode_dcf(res)
    assert flat.height == 1
    row = flat.row(0, named=True)
    assert row["effective_prior"] == pytest.approx(0.0917431, abs=1e-7)
    sub = _scalar(synth.filter(system="sys1"))
    tar = synth.filter(system="sys1", label=True)["score"].to_numpy()
    non = synth.filter(system="sys1", label=False)["score"].to_numpy()
    assert row["min_dcf_norm"] == pytest.approx(
        metrics.min_dcf(tar, non, p_target=0.01, c_miss=10, c_fa=1, normalize=True), rel=1e-12)
    assert sub["n_tar"] == res["n_tar"][0]
    # the minimizing counts give the minimum DCF (normalized by min(pe, 1 - pe))...
    pe, k_miss, k_fa = row["effective_prior"], row["n_miss_min"], row["n_fa_min"]
    assert (pe * k_miss / len(tar) + (1 - pe) * k_fa / len(non)) / min(pe, 1 - pe) == \
        pytest.approx(row["min_dcf_norm"], rel=1e-12)
    # ...and are the errors of one threshold: t in (tar[k_miss - 1], tar[k_miss]]
    ts, ns = np.sort(tar), np.sort(non)
    t_lo = ts[k_miss - 1] if k_miss > 0 else -np.inf
    t_hi = ts[k_miss] if k_miss < len(ts) else np.inf
    cands = np.r_[ns[(ns > t_lo) & (ns <= t_hi)], t_hi]
    assert k_fa in {int(np.sum(non >= c)) for c in cands}
    assert row["dr30_ok"] == (row["n_miss_min"] >= 30 and row["n_fa_min"] >= 30)


def test_degenerate_groups_warn_once_with_null_metrics():
    df = pl.DataFrame({"score": [1.0, 0.0, 2.0, 3.0], "label": [True, False, True, True],
                       "cond": ["a", "a", "b", "b"]})
    with pytest.warns(DegenerateGroupWarning, match="cond=b") as rec:
        res = evaluate(df, by="cond", operating_points=0.5)
    assert len(rec) == 1
    b = res.filter(cond="b").row(0, named=True)
    assert (b["n_tar"], b["n_non"], b["eer"], b["cllr"]) == (2, 0, None, None)
    assert res.filter(cond="all")["n_tar"][0] == 3


def test_unknown_labels_are_left_out():
    df = pl.DataFrame({"score": [1.0, 0.0, 5.0], "label": [True, False, None]})
    res = evaluate(df, operating_points=0.5)
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
    # EER: every partition weighs equally in each error rate, per-trial ROC after each trial
    # (targets first on ties), linear interpolation where fnr - fpr changes sign
    trials = sorted((x, not lab, k) for k, s in enumerate(parts)
                    for lab, xs in ((True, s.tar), (False, s.non)) for x in xs)
    fnr, fpr = [0.0], [1.0]
    for _, is_non, k in trials:
        if is_non:
            fpr.append(fpr[-1] - 1.0 / (len(parts) * parts[k].n_non))
            fnr.append(fnr[-1])
        else:
            fnr.append(fnr[-1] + 1.0 / (len(parts) * parts[k].n_tar))
            fpr.append(fpr[-1])
    d = np.array(fnr) - np.array(fpr)
    j = int(np.flatnonzero(d >= 0)[0])
    u = d[j - 1] / (d[j - 1] - d[j])
    assert eq["eq_eer"] == pytest.approx(fnr[j - 1] + u * (fnr[j] - fnr[j - 1]), abs=1e-12)


def test_equalize_by_columns(synth):
    res = evaluate(synth.filter(system="sys1"), equalize_by="duration", operating_points=P)
    assert {"eq_eer"} <= set(res.columns)
    assert {"eq_act_dcf_norm", "eq_min_dcf_norm"} <= set(explode_dcf(res).columns)


def _brute_eer(tar: np.ndarray, non: np.ndarray, method: str) -> float:
    """EER from the definitions (no tie group mixes classes in this set, README there)."""
    ts, ns = np.sort(tar), np.sort(non)
    if method == "kaldi":  # Kaldi compute-eer, one target at a time
        t, n = len(ts), len(ns)
        for i in range(t - 1):
            if ns[max(n - 1 - (n * i) // t, 0)] < ts[i]:
                return i / t
        return (t - 1) / t
    if method == "nist":  # rates after each trial of the sorted list
        lab = np.r_[np.ones(len(tar), bool), np.zeros(len(non), bool)]
        lab = lab[np.argsort(np.r_[tar, non], kind="stable")]
        fnr = np.r_[0.0, np.cumsum(lab) / len(tar)]
        fpr = np.r_[1.0, 1.0 - np.cumsum(~lab) / len(non)]
    else:  # rocch: lower convex hull of the threshold scan (SciPy), then its crossing
        thr = np.r_[np.unique(np.r_[tar, non]), np.inf]
        pts = np.unique(np.c_[len(non) - np.searchsorted(ns, thr), np.searchsorted(ts, thr)]
                        / [len(non), len(tar)], axis=0)
        pts = np.unique(np.r_[pts, [[1.0, 1.0]]], axis=0)
        v = [i for i in ConvexHull(pts).vertices if not np.all(pts[i] == 1.0)]
        v = np.array(v)[np.lexsort((pts[v, 1], -pts[v, 0]))]
        fpr, fnr = pts[v, 0], pts[v, 1]
    d = fnr - fpr
    j = int(np.flatnonzero(d >= 0)[0])
    u = d[j - 1] / (d[j - 1] - d[j])
    return float(fnr[j - 1] + u * (fnr[j] - fnr[j - 1]))


@pytest.mark.parametrize("method", ["rocch", "nist", "kaldi"])
def test_eer_methods_on_real_data(method):
    df = pl.read_parquet(DATA / "real" / "fvcaus_plda" / "fvcaus_plda.parquet")
    res = evaluate(df, operating_points=0.01, metrics=[Binary(eer_method=method)])
    tar = df.filter("label")["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    assert res["eer"][0] == pytest.approx(_brute_eer(tar, non, method), rel=1e-12, abs=1e-15)
    assert 0 < res["eer"][0] < 0.01  # README of the set: ROCCH-EER about 0.1 %


def test_rocch_eer_bounds_other_conventions_on_real_data():
    """ROCCH-EER <= the steppy conventions (the hull lies below the staircase)."""
    df = pl.read_parquet(DATA / "real" / "ru2009_evalita" / "ru2009_evalita.parquet")
    tar = df.filter("label")["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    r = metrics.eer(tar, non)
    assert r <= metrics.eer(tar, non, method="nist") + 1e-12
    assert abs(metrics.eer(tar, non, method="kaldi") - r) < 0.01
