"""Biometric verification metrics: brute-force twins, the peers' own values, engines, bad input.

Reference values come from bob.measure 6.1.1 and pyeer 0.5.6 run on generated scores
(tests/data/biometrics_reference/README.md).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe import evaluate
from scoreframe.errors import (
    DegenerateError,
    DegenerateGroupWarning,
    ScoreframeError,
    UnresolvedTargetWarning,
)
from scoreframe.kernels import biometric as kb
from scoreframe.kernels import sort_scores
from scoreframe.metrics import (
    Biometric,
    explode_targets,
    fmr_at_fnmr,
    fmr_fnmr,
    fnmr_at_fmr,
    min_hter,
    mw_auc,
    verification_summary,
    zero_fmr,
    zero_fnmr,
)
from scoreframe.results.evaluate import group_statistics
from scoreframe.stats import Engine
from scoreframe.stats.summary import (
    VerificationRequest,
    merge_verification,
    reduce_verification,
)

REF = json.loads((Path(__file__).parent / "data" / "biometrics_reference" / "cases.json")
                 .read_text())
CASES = {c["name"]: c for c in REF["cases"]}
TARGETS = [0.001, 0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.9]


# --- brute force: scan every threshold -------------------------------------------------------


def brute_curve(tar, non, strict=False):
    """``(threshold, n_fnm, n_fm)`` at every distinct score and beyond both ends (loops)."""
    cands = sorted(set(tar) | set(non))
    cands = [-math.inf, *cands, math.inf] if not strict else [-math.inf, *cands, math.inf]
    out = []
    for t in cands:
        if strict:
            fnm = sum(1 for x in tar if x <= t)
            fm = sum(1 for x in non if x > t)
        else:
            fnm = sum(1 for x in tar if x < t)
            fm = sum(1 for x in non if x >= t)
        out.append((t, fnm, fm))
    return out


def allowed(rate, total):
    return max(k for k in range(total + 1) if k / total <= rate)


def brute_fnmr_at_fmr(tar, non, a):
    k = allowed(a, len(non))
    feas = [(fnm, -fm, t) for t, fnm, fm in brute_curve(tar, non) if fm <= k]
    fnm, mfm, t = min(feas)
    return fnm, -mfm, t, k


def brute_fmr_at_fnmr(tar, non, b):
    k = allowed(b, len(tar))
    feas = [(fm, -fnm, -t) for t, fnm, fm in brute_curve(tar, non) if fnm <= k]
    fm, mfnm, mt = min(feas)
    return fm, -mfnm, -mt, k


def datasets():
    rng = np.random.default_rng(7)
    out = [("single genuine", [1.0], [0.0, 1.0, 2.0, 0.5]),
           ("single impostor", [0.0, 1.0, 2.0], [1.0]),
           ("tied minimum genuine", [1.0, 1.0, 2.0, 3.0], [0.0, 1.0, 1.0, 3.0, 0.5]),
           ("all tied", [1.0, 1.0], [1.0, 1.0, 1.0]),
           ("ties across classes", [0.0, 0.5, 0.5, 1.0, 2.0], [0.5, 0.5, 1.0, 1.0, 2.0, -1.0])]
    for i in range(12):
        t, n = int(rng.integers(1, 30)), int(rng.integers(1, 120))
        step = [0.5, 0.25, 0.0][i % 3]
        tar, non = rng.normal(1.0, 1.0, t), rng.normal(0.0, 1.0, n)
        if step:
            tar, non = np.round(tar / step) * step, np.round(non / step) * step
        out.append((f"random {i}", tar.tolist(), non.tolist()))
    return out


DATASETS = datasets()


@pytest.mark.parametrize(("name", "tar", "non"), DATASETS, ids=[d[0] for d in DATASETS])
def test_exact_values_equal_the_threshold_scan(name, tar, non):
    rates = [0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        v = verification_summary(tar, non, fmr=rates, fnmr=rates)
        vs = verification_summary(tar, non, fmr=rates, fnmr=rates, strict=True)
    s = sort_scores(tar, non)
    for row, row_s, a in zip(v["fnmr_at_fmr"], vs["fnmr_at_fmr"], rates, strict=True):
        fnm, fm, t, k = brute_fnmr_at_fmr(tar, non, a)
        if k == 0:
            assert row["fnmr"] is None and row_s["fnmr"] is None
            continue
        assert (row["n_fnm"], row["n_fm"]) == (fnm, fm) == (row_s["n_fnm"], row_s["n_fm"])
        assert row["fmr"] <= a
        if math.isfinite(t):
            assert row["threshold"] == t
        for thr, strict in ((row["threshold"], False), (row_s["threshold"], True)):
            got = kb.error_counts(s.tar, s.non, [thr], strict=strict)
            assert (int(got[0][0]), int(got[1][0])) == (fnm, fm)
    for row, row_s, b in zip(v["fmr_at_fnmr"], vs["fmr_at_fnmr"], rates, strict=True):
        fm, fnm, t, k = brute_fmr_at_fnmr(tar, non, b)
        if k == 0:
            assert row["fmr"] is None
            continue
        assert (row["n_fm"], row["n_fnm"]) == (fm, fnm) == (row_s["n_fm"], row_s["n_fnm"])
        assert row["fnmr"] <= b and row["threshold"] == t
        got = kb.error_counts(s.tar, s.non, [row_s["threshold"]], strict=True)
        assert (int(got[0][0]), int(got[1][0])) == (fnm, fm)
    curve = brute_curve(tar, non)
    t_n, n_n = len(tar), len(non)
    assert v["zero_fmr"] == min(fnm for _, fnm, fm in curve if fm == 0) / t_n
    assert v["zero_fnmr"] == min(fm for _, fnm, fm in curve if fnm == 0) / n_n
    best = min(fnm * n_n + fm * t_n for _, fnm, fm in curve)
    assert v["min_hter"] == pytest.approx(best / (2 * t_n * n_n), rel=1e-15)
    for thr, strict in ((v["min_hter_threshold"], False), (vs["min_hter_threshold"], True)):
        fnm, fm = kb.error_counts(s.tar, s.non, [thr], strict=strict)
        assert int(fnm[0]) * n_n + int(fm[0]) * t_n == best
    pairs = sum(2 * (x > y) + (x == y) for x in tar for y in non)
    assert v["auc_mw"] == pairs / (2 * t_n * n_n)
    assert mw_auc(tar, non) == v["auc_mw"]
    assert min_hter(tar, non) == v["min_hter"]
    assert zero_fmr(tar, non) == v["zero_fmr"] and zero_fnmr(tar, non) == v["zero_fnmr"]


def test_fixed_thresholds_by_the_accept_rule():
    tar, non = [1.0, 2.0, 2.0, 3.0], [0.0, 2.0, 1.0]
    fmr, fnmr = fmr_fnmr(tar, non, [2.0, 0.0])
    assert fmr.tolist() == [1 / 3, 1.0] and fnmr.tolist() == [0.25, 0.0]
    fmr, fnmr = fmr_fnmr(tar, non, [2.0], strict=True)
    assert fmr.tolist() == [0.0] and fnmr.tolist() == [0.75]


def test_rate_targets_use_the_float_quotient():
    assert kb.count_within([0.7], 10).tolist() == [7]  # 7/10 == 0.7 as floats
    for n in (3, 7, 10, 1000, 12345):
        for a in (0.1, 0.3, 0.7, 1 / 3, 0.999):
            assert int(kb.count_within([a], n)[0]) == allowed(a, n)


def test_merged_ranges_equal_the_whole_group():
    rng = np.random.default_rng(3)
    tar = np.sort(np.round(rng.normal(1, 1, 300), 1))
    non = np.sort(np.round(rng.normal(0, 1, 2000), 1))
    req = VerificationRequest(fmr=(0.001, 0.01, 0.1), fnmr=(0.01, 0.2), thresholds=(0.3, 1.0))
    whole = reduce_verification(sort_scores(tar, non), req, total_tar=300, total_non=2000)
    for strict in (False, True):
        req2 = VerificationRequest(req.fmr, req.fnmr, req.thresholds, strict)
        whole = reduce_verification(sort_scores(tar, non), req2, total_tar=300, total_non=2000)
        cuts = np.unique(np.concatenate((tar, non)))
        bounds = np.sort(rng.choice(cuts, 6, replace=False))
        edges = [-np.inf, *bounds, np.inf]
        merged = None
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            t = tar[(tar >= lo) & (tar < hi)]
            n = non[(non >= lo) & (non < hi)]
            part = reduce_verification(
                sort_scores(t, n), req2, total_tar=300, total_non=2000,
                offset_tar=int((tar < lo).sum()), offset_non=int((non < lo).sum()))
            merged = merge_verification(merged, part)
        for f in ("found", "fnm", "fm", "ge", "gt"):
            for side in ("at_fmr", "at_fnmr"):
                np.testing.assert_array_equal(getattr(getattr(merged, side), f),
                                              getattr(getattr(whole, side), f))
        assert merged.twice_u == whole.twice_u
        assert merged.fnm.tolist() == whole.fnm.tolist() == \
            kb.error_counts(tar, non, req.thresholds, strict=strict)[0].tolist()


# --- the peers' own values ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_bob_convention_reproduces_bob_measure(name):
    c = CASES[name]
    ref = c["bob"]
    targets = [r["target"] for r in ref["far"] if 0 < r["target"] < 1]
    v = verification_summary(c["tar"], c["non"], fmr=targets, fnmr=targets,
                             convention="bob")
    far = [r for r in ref["far"] if 0 < r["target"] < 1]
    for mine, theirs in zip(v["fnmr_at_fmr"], far, strict=True):
        assert (mine["threshold"], mine["fmr"], mine["fnmr"]) == \
            (theirs["threshold"], theirs["fmr"], theirs["fnmr"])
    frr = [r for r in ref["frr"] if 0 < r["target"] < 1]
    for mine, theirs in zip(v["fmr_at_fnmr"], frr, strict=True):
        assert (mine["threshold"], mine["fmr"], mine["fnmr"]) == \
            (theirs["threshold"], theirs["fmr"], theirs["fnmr"])
    assert (v["zero_fmr_threshold"], v["zero_fmr"]) == \
        (ref["far"][0]["threshold"], ref["far"][0]["fnmr"])
    assert (v["zero_fnmr_threshold"], v["zero_fnmr"]) == \
        (ref["frr"][0]["threshold"], ref["frr"][0]["fmr"])
    assert v["eer_peer"] == ref["eer"]["eer"]
    assert (v["min_hter"], v["min_hter_threshold"]) == \
        (ref["min_hter"]["hter"], ref["min_hter"]["threshold"])


@pytest.mark.parametrize("name", list(CASES))
def test_pyeer_convention_reproduces_pyeer(name):
    c = CASES[name]
    ref = c["pyeer"]
    targets = [r["target"] for r in ref["fmr_op"] if 0 < r["target"] < 1]
    v = verification_summary(c["tar"], c["non"], fmr=targets, fnmr=targets,
                             convention="pyeer")
    ops = [r for r in ref["fmr_op"] if 0 < r["target"] < 1]
    for mine, theirs in zip(v["fnmr_at_fmr"], ops, strict=True):
        assert (mine["threshold"], mine["fmr"], mine["fnmr"]) == \
            (theirs["threshold"], theirs["fmr"], theirs["fnmr"])
    ops = [r for r in ref["fnmr_op"] if 0 < r["target"] < 1]
    for mine, theirs in zip(v["fmr_at_fnmr"], ops, strict=True):
        assert (mine["threshold"], mine["fmr"], mine["fnmr"]) == \
            (theirs["threshold"], theirs["fmr"], theirs["fnmr"])
    assert v["zero_fmr"] == ref["fmr_op"][0]["fnmr"] == ref["stats"]["fmr0"]
    assert v["zero_fnmr"] == ref["fnmr_op"][0]["fmr"] == ref["stats"]["fnmr0"]
    assert v["eer_peer"] == ref["eer"] == ref["stats"]["eer"]
    assert v["auc_mw"] == ref["auc"] == ref["stats"]["auc"]


def test_where_the_peers_contradict_their_own_definitions():
    c = CASES["example_ties"]  # bob: the lowest *impostor* score with FMR <= 0.2
    bob = next(r for r in c["bob"]["far"] if r["target"] == 0.2)
    exact = fnmr_at_fmr(c["tar"], c["non"], 0.2)
    assert bob["fnmr"] == 0.8 and exact.fnmr[0] == 0.6  # bob's is not the minimum FNMR
    assert exact.fmr[0] <= 0.2
    c = CASES["tied_min_genuine"]  # bob: "FNR at most 0" but FNMR 2/3 at its threshold
    bob0 = c["bob"]["frr"][0]
    assert bob0["target"] == 0.0 and bob0["fnmr"] > 0
    assert zero_fnmr(c["tar"], c["non"]) == 0.75
    c = CASES["tie_spike"]  # pyeer: "FMR = 0.1" reported with an FMR above 0.1
    p = next(r for r in c["pyeer"]["fmr_op"] if r["target"] == 0.1)
    assert p["fmr"] == 1 / 7  # the impostor spike: FMR 0.14 reported "at FMR = 0.1"
    with pytest.warns(UnresolvedTargetWarning, match="7 impostor comparisons"):
        assert math.isnan(fnmr_at_fmr(c["tar"], c["non"], 0.1).fnmr[0])  # needs >= 10
    assert fnmr_at_fmr(c["tar"], c["non"], 0.2).fmr[0] <= 0.2
    assert REF["meta"]["bob.measure"] == "6.1.1" and REF["meta"]["pyeer"] == "0.5.6"


def test_bob_auc_is_an_approximation_and_ours_is_mann_whitney():
    diffs = []
    for c in CASES.values():
        t, n = c["tar"], c["non"]
        pairs = sum(2 * (x > y) + (x == y) for x in t for y in n) / (2 * len(t) * len(n))
        assert mw_auc(t, n) == pairs
        diffs.append(abs(c["bob"]["roc_auc_score"] - pairs))
    assert max(diffs) > 1e-6  # bob's 2,000-point ROC is not the exact area


# --- evaluate: per condition, pooled rows, engines ------------------------------------------


def trials(n=30_000, seed=11):
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.2
    g = rng.choice(["f", "m", "x"], n)
    score = np.where(lab, rng.normal(2.0, 1.0, n), rng.normal(0.0, 1.0, n))
    return pl.DataFrame({"score": np.round(score, 2), "label": lab, "sex": g})


KW = {"by": "sex", "metrics": [Biometric(fmr=[1e-3, 1e-2, 0.1], fnmr=[0.01, 0.1],
                                         at_threshold=[0.5, 1.0])]}
BIO_COLS = ["sex", "n_tar", "n_non", "zero_fmr", "zero_fmr_threshold", "zero_fnmr",
            "zero_fnmr_threshold", "min_hter", "min_hter_threshold", "auc_mw", "fnmr_at_fmr",
            "fmr_at_fnmr", "at_threshold"]


def test_evaluate_rows_equal_the_scalar_api_per_group_and_pooled():
    df = trials()
    res = evaluate(df, **KW)
    assert res["sex"].to_list() == ["f", "m", "x", "all"]
    for row in res.iter_rows(named=True):
        sub = df if row["sex"] == "all" else df.filter(pl.col("sex") == row["sex"])
        tar = sub.filter(pl.col("label"))["score"].to_numpy()
        non = sub.filter(~pl.col("label"))["score"].to_numpy()
        bm = KW["metrics"][0]
        v = verification_summary(tar, non, fmr=bm.fmr, fnmr=bm.fnmr, thresholds=bm.at_threshold)
        for k in ("zero_fmr", "zero_fnmr", "min_hter", "auc_mw", "min_hter_threshold",
                  "fnmr_at_fmr", "fmr_at_fnmr", "at_threshold"):
            assert row[k] == v[k], k
    ex = explode_targets(res, "fnmr_at_fmr")
    assert ex.height == 12 and ex.columns[:4] == ["sex", "n_tar", "n_non", "fmr_target"]


def test_engines_give_identical_biometric_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = trials()
    path = tmp_path / "ds.parquet"
    df.write_parquet(path)
    memory = evaluate(df, **KW).select(BIO_COLS)
    stats, _ = group_statistics(path, by="sex", engine=Engine(memory_limit="64KiB"),
                                verification=VerificationRequest(fmr=(0.01,)))
    assert stats.engine == "out-of-core" and stats.n_ranges > 4
    ooc = evaluate(path, engine=Engine(memory_limit="64KiB"), **KW).select(BIO_COLS)
    assert ooc.equals(memory)
    pytest.importorskip("dask.distributed")
    on_dask = evaluate(path, engine=Engine("dask", memory_limit="64KiB", workers=2), **KW)
    assert on_dask.select(BIO_COLS).equals(memory)


def test_peer_conventions_in_evaluate_match_the_scalar_api():
    df = trials(4000)
    for conv in ("bob", "pyeer"):
        res = evaluate(df, by="sex", metrics=[Biometric(fmr=[0.01, 0.1], convention=conv)])
        assert "eer_peer" in res.columns
        row = res.filter(pl.col("sex") == "all").row(0, named=True)
        tar = df.filter(pl.col("label"))["score"].to_numpy()
        non = df.filter(~pl.col("label"))["score"].to_numpy()
        v = verification_summary(tar, non, fmr=[0.01, 0.1], convention=conv)
        assert row["fnmr_at_fmr"] == v["fnmr_at_fmr"] and row["eer_peer"] == v["eer_peer"]
    assert "eer_peer" not in evaluate(df, metrics=[Biometric()]).columns


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2.0, "x", float("nan"), True])
def test_fmr_target_outside_the_open_interval_is_an_error(bad):
    with pytest.raises(ScoreframeError, match="bad `fmr` target.*strictly between 0 and 1"):
        fnmr_at_fmr([1.0, 2.0], [0.0, 1.0], [bad])
    with pytest.raises(ScoreframeError, match="bad `fnmr` target"):
        evaluate(trials(200), metrics=[Biometric(fnmr=[bad])])


def test_unknown_convention_lists_the_known_ones():
    with pytest.raises(ScoreframeError, match="exact \\| bob \\| pyeer"):
        fnmr_at_fmr([1.0, 2.0], [0.0, 1.0], 0.1, convention="sklearn")
    with pytest.raises(ScoreframeError, match="exact \\| bob \\| pyeer"):
        evaluate(trials(200), metrics=[Biometric(convention="nist")])


def test_target_below_one_over_n_cannot_be_resolved():
    with pytest.warns(UnresolvedTargetWarning, match="cannot be resolved with 4 impostor "
                                                     "comparisons \\(needs at least 1000\\)"):
        r = fnmr_at_fmr([1.0, 2.0], [0.0, 1.0, 0.5, 3.0], [1e-3, 0.5])
    assert math.isnan(r.fnmr[0]) and r.fnmr[1] == 0.0 and r.threshold[1] == 1.0
    with pytest.warns(UnresolvedTargetWarning, match="FNMR 0.1 in the scores"):
        fmr_at_fnmr([1.0, 2.0], [0.0, 1.0], [0.1])


def test_group_without_impostors_is_null_with_a_named_warning():
    df = pl.DataFrame({"score": [1.0, 2.0, 0.5, 0.0, 1.5, 3.0],
                       "label": [True, False, False, True, True, True],
                       "g": ["a", "a", "a", "b", "b", "b"]})
    with pytest.warns(DegenerateGroupWarning, match="g=b"):
        res = evaluate(df, by="g", metrics=[Biometric(fmr=[0.5])])
    b = res.filter(pl.col("g") == "b").row(0, named=True)
    assert b["zero_fmr"] is None and b["fnmr_at_fmr"] is None and b["n_non"] == 0


def test_peer_conventions_refuse_what_the_peers_refuse():
    with pytest.raises(DegenerateError, match="at least two genuine"):
        zero_fmr([1.0], [0.0, 0.5], convention="bob")
    with pytest.raises(ScoreframeError, match="no strict accept rule"):
        fnmr_at_fmr([1.0, 2.0], [0.0, 1.0], 0.5, convention="pyeer", strict=True)


def test_bob_convention_in_evaluate_nulls_groups_bob_refuses():
    df = pl.DataFrame({"score": [2.0, 0.0, 1.0, 3.0, 2.5, 0.5, 0.2],
                       "label": [True, False, False, True, True, False, False],
                       "g": ["a", "a", "a", "b", "b", "b", "b"]})
    with pytest.warns(DegenerateGroupWarning, match="g=a \\(convention `bob` needs"):
        res = evaluate(df, by="g", metrics=[Biometric(convention="bob")])
    rows = {r["g"]: r for r in res.iter_rows(named=True)}
    assert rows["a"]["zero_fmr"] is None and rows["b"]["zero_fmr"] is not None
