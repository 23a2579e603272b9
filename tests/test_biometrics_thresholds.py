"""Thresholds fixed on development trials and applied to evaluation trials; the EPC curve."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from scoreframe import epc_curve, evaluate
from scoreframe.errors import ScoreframeError, UsageError
from scoreframe.metrics import Biometric, fmr_fnmr, verification_summary
from scoreframe.results._verification import FixedThresholdWarning
from scoreframe.stats import Engine
from scoreframe.views.plots import epc_plot

DEV, EVAL = "split = 'dev'", "split = 'eval'"


def trials(n=6000, seed=5):
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.25
    score = np.where(lab, rng.normal(1.8, 1.0, n), rng.normal(0.0, 1.0, n))
    return pl.DataFrame({"score": np.round(score, 1), "label": lab,
                         "g": rng.choice(["a", "b"], n), "split": rng.choice(["dev", "eval"], n)})


def arrays(df, split, group):
    sub = df.filter(pl.col("split") == split)
    if group != "all":
        sub = sub.filter(pl.col("g") == group)
    return (sub.filter(pl.col("label"))["score"].to_numpy(),
            sub.filter(~pl.col("label"))["score"].to_numpy())


def test_dev_thresholds_applied_to_eval_per_group_and_pooled():
    df = trials()
    res = evaluate(df, by="g",
                   metrics=[Biometric(fmr=[0.01, 0.1], fnmr=[0.05], threshold_from=DEV)])
    assert res["n_tar"].sum() > 0
    for row in res.iter_rows(named=True):
        dtar, dnon = arrays(df, "dev", row["g"])
        etar, enon = arrays(df, "eval", row["g"])
        assert row["n_tar"] == etar.size  # evaluated on the other trials
        v = verification_summary(dtar, dnon, fmr=[0.01, 0.1], fnmr=[0.05])
        expect = [("min_hter", v["min_hter_threshold"])] + \
            [(f"fmr={r['fmr_target']:g}", r["threshold"]) for r in v["fnmr_at_fmr"]] + \
            [(f"fnmr={r['fnmr_target']:g}", r["threshold"]) for r in v["fmr_at_fnmr"]]
        assert [(f["criterion"], f["threshold"]) for f in row["fixed"]] == expect
        for f in row["fixed"]:
            fmr, fnmr = fmr_fnmr(etar, enon, [f["threshold"]])
            assert (f["fmr"], f["fnmr"]) == (fmr[0], fnmr[0])
            assert f["hter"] == (fmr[0] + fnmr[0]) / 2


def test_threshold_table_strict_rule_and_engines(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = trials(20_000)
    table = pl.DataFrame({"g": ["a", "b", "all"], "threshold": [0.5, 1.0, 0.7],
                          "criterion": ["x", "y", "z"]})
    for strict in (False, True):
        res = evaluate(df, by="g", where=EVAL,
                       metrics=[Biometric(strict=strict, thresholds=table)])
        for row in res.iter_rows(named=True):
            etar, enon = arrays(df, "eval", row["g"])
            (f,) = row["fixed"]
            fmr, fnmr = fmr_fnmr(etar, enon, [f["threshold"]], strict=strict)
            assert (f["fmr"], f["fnmr"]) == (fmr[0], fnmr[0])
    path = tmp_path / "t.parquet"
    df.write_parquet(path)
    kw = {"by": "g", "metrics": [Biometric(threshold_from=DEV, fmr=[0.001, 0.01])]}
    mem = evaluate(df, **kw).select("g", "fixed")
    got = evaluate(path, engine=Engine(memory_limit="64KiB"), **kw).select("g", "fixed")
    assert got.equals(mem)


def test_groups_without_a_dev_threshold_are_named():
    df = trials(2000)
    with pytest.warns(FixedThresholdWarning, match="g=all"):
        res = evaluate(df, by="g", where=EVAL,
                       metrics=[Biometric(thresholds=pl.DataFrame(
                           {"g": ["a", "b"], "threshold": [0.0, 1.0]}))])
    assert res.filter(pl.col("g") == "all")["fixed"].to_list() == [None]
    one = evaluate(df, where=EVAL,
                   metrics=[Biometric(thresholds=pl.DataFrame({"threshold": [0.5]}))])
    assert one["fixed"][0][0]["criterion"] == "given"


def brute_epc(dtar, dnon, etar, enon, alpha):
    cands = sorted(set(dtar) | set(dnon)) + [math.inf]
    best = None
    for t in cands:
        fmr, fnmr = fmr_fnmr(dtar, dnon, [t])
        c = alpha * fmr[0] + (1 - alpha) * fnmr[0]
        if best is None or c < best[0]:
            best = (c, t)
    c, t = best
    fmr, fnmr = fmr_fnmr(etar, enon, [t])
    return c, t, fmr[0], fnmr[0]


def test_epc_equals_a_threshold_scan():
    df = trials(3000)
    alphas = [0.0, 0.1, 0.3, 0.5, 0.9, 1.0]
    curve = epc_curve(df, dev=DEV, eval=EVAL, by="g", alphas=alphas)
    assert curve.height == 3 * len(alphas)
    for row in curve.iter_rows(named=True):
        dtar, dnon = arrays(df, "dev", row["g"])
        etar, enon = arrays(df, "eval", row["g"])
        c, t, fmr, fnmr = brute_epc(dtar, dnon, etar, enon, row["alpha"])
        assert row["dev_weighted_error"] == pytest.approx(c, abs=1e-15)
        if math.isfinite(t):
            assert row["threshold"] == t
        assert (row["fmr"], row["fnmr"]) == (fmr, fnmr)
        assert row["hter"] == (fmr + fnmr) / 2
    spec = epc_plot(curve, series=["g"]).to_dict()
    assert spec["layer"][0]["encoding"]["y"]["field"] == "hter"


def test_bad_fixed_threshold_input():
    df = trials(500)
    with pytest.raises(UsageError, match="not both"):
        evaluate(df,
                 metrics=[Biometric(threshold_from=DEV,
                                    thresholds=pl.DataFrame({"threshold": [1.0]}))])
    with pytest.raises(ScoreframeError, match="not grouping columns.*got split"):
        evaluate(df, by="g",
                 metrics=[Biometric(thresholds=pl.DataFrame({"split": ["x"], "threshold": [1.0]}))])
    with pytest.raises(ScoreframeError, match="numeric `threshold` column"):
        evaluate(df, metrics=[Biometric(thresholds=pl.DataFrame({"t": [1.0]}))])
    with pytest.raises(ScoreframeError, match="one threshold per group"):
        evaluate(df, by="g",
                 metrics=[Biometric(thresholds=pl.DataFrame(
                     {"g": ["a", "a"], "threshold": [1.0, 2.0]}))])
    with pytest.raises(ScoreframeError, match="bad `alphas`"):
        epc_curve(df, dev=DEV, alphas=[0.5, 1.5])
    with pytest.raises(ScoreframeError, match="bad `y`"):
        epc_plot(pl.DataFrame({"alpha": [0.5], "hter": [0.1]}), y="eer")
