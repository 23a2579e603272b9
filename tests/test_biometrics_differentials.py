"""Demographic differentials: per-group rates at one global threshold, FDR, GARBE, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

from scoreframe import differentials
from scoreframe.cli import main
from scoreframe.errors import DegenerateGroupWarning, ScoreframeError
from scoreframe.metrics import fnmr_at_fmr
from scoreframe.stats import Engine
from scoreframe.views.plots import differentials_plot


def trials(n=20_000, seed=9):
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.2
    sex = rng.choice(["f", "m"], n)
    age = rng.choice(["18-30", "31-50", "51+"], n)
    ref = rng.choice(["f", "m"], n)
    shift = np.where(sex == "f", 0.3, 0.0)
    score = np.where(lab, rng.normal(2.0, 1.0, n), rng.normal(shift, 1.0, n))
    return pl.DataFrame({"score": np.round(score, 2), "label": lab, "sex": sex,
                         "age_band": age, "ref_sex": ref})


def test_rates_at_the_global_threshold_and_the_summaries():
    df = trials()
    d = differentials(df, by=["sex", "age_band"], fmr=1e-2)
    tar = df.filter(pl.col("label"))["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    assert d.threshold == fnmr_at_fmr(tar, non, 1e-2).threshold[0]
    fm_l, fn_l = [], []
    for (s, a), part in df.group_by(["sex", "age_band"]):
        g = part.filter(pl.col("label"))["score"]
        i = part.filter(~pl.col("label"))["score"]
        fnmr = float((g < d.threshold).sum() / g.len())
        fmr = float((i >= d.threshold).sum() / i.len())
        rows = d.groups.filter((pl.col("sex") == s) & (pl.col("age_band") == a))
        assert rows.filter(pl.col("kind") == "genuine")["rate"][0] == fnmr
        assert rows.filter(pl.col("kind") == "impostor")["rate"][0] == fmr
        fm_l.append(fmr)
        fn_l.append(fnmr)
    summ = dict(d.summary.select("measure", "value").iter_rows())
    assert summ["fmr_max_min"] == pytest.approx(max(fm_l) / min(fm_l), rel=1e-12)
    geo = math.exp(np.mean(np.log(fn_l)))
    assert summ["fnmr_max_geomean"] == pytest.approx(max(fn_l) / geo, rel=1e-12)
    assert summ["fdr"] == pytest.approx(1 - 0.5 * (max(fm_l) - min(fm_l))
                                        - 0.5 * (max(fn_l) - min(fn_l)), rel=1e-12)

    def gini(x):  # the definition, by pairs
        n = len(x)
        return n / (n - 1) * sum(abs(p - q) for p, q in itertools.product(x, x)) \
            / (2 * n * n * np.mean(x))
    assert summ["garbe"] == pytest.approx(0.5 * gini(fm_l) + 0.5 * gini(fn_l), rel=1e-12)
    assert differentials_plot(d.groups).to_dict()["layer"][0]["mark"]["type"] == "point"


def test_impostor_pairs_and_engines(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = trials()
    d = differentials(df, by="sex", pair_with="ref_sex", threshold=1.5)
    imp = d.groups.filter(pl.col("kind") == "impostor")
    assert imp.height == 4  # f/f, f/m, m/f, m/m
    part = df.filter(~pl.col("label") & (pl.col("sex") == "f") & (pl.col("ref_sex") == "m"))
    row = imp.filter((pl.col("sex") == "f") & (pl.col("ref_sex") == "m")).row(0, named=True)
    assert row["rate"] == float((part["score"] >= 1.5).sum() / part.height)
    path = tmp_path / "t.parquet"
    df.write_parquet(path)
    ooc = differentials(path, by="sex", pair_with="ref_sex", threshold=1.5,
                        engine=Engine(memory_limit="64KiB"))
    assert ooc.groups.equals(d.groups) and ooc.summary.equals(d.summary)


def test_degenerate_groups_and_bad_input(tmp_path, capsys):
    df = pl.DataFrame({"score": [2.0, 1.0, 0.5, 0.0, 3.0, 1.5], "label": [True, True, False,
                       False, True, True], "sex": ["f", "f", "f", "f", "x", "x"]})
    with pytest.warns(DegenerateGroupWarning, match="sex=x \\(no impostor trials\\)"):
        d = differentials(df, by="sex", threshold=1.2)
    x = d.groups.filter((pl.col("sex") == "x") & (pl.col("kind") == "impostor")).row(
        0, named=True)
    assert x["rate"] is None and x["reason"] == "no impostor trials"
    assert d.summary.filter(pl.col("measure") == "fdr")["reason"][0].startswith("fewer")
    with pytest.raises(ScoreframeError, match="one of them"):
        differentials(df, by="sex", fmr=0.1, threshold=1.0)
    with pytest.raises(ScoreframeError, match="bad `fmr` target"):
        differentials(df, by="sex", fmr=0.0)
    with pytest.raises(ScoreframeError, match="cannot be resolved with 2 impostor"):
        differentials(df, by="sex", fmr=0.1)
    with pytest.raises(ScoreframeError, match="demographic columns"):
        differentials(df, by=[], threshold=1.0)
    path = tmp_path / "d.parquet"
    trials(2000).write_parquet(path)
    out = tmp_path / "o.json"
    assert main(["differentials", str(path), "--by", "sex", "--fmr", "2", "-o", str(out)]) == 2
    assert main(["differentials", str(path), "--fmr", "0.01", "-o", str(out)]) == 2
    assert not out.exists()
    assert main(["differentials", str(path), "--by", "sex", "age_band", "--fmr", "0.05"]) == 0
    assert "garbe" in capsys.readouterr().out
