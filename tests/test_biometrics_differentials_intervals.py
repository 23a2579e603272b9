"""Differentials with intervals: the subject-level two-way bootstrap against explicit resampling."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from conftest import id_hashes
from test_biometrics_intervals import _quiet

from scoreframe import Engine, Intervals, differentials
from scoreframe.cli import main
from scoreframe.kernels import bootstrap as kb
from scoreframe.results._differentials import fdr, garbe
from scoreframe.views.plots import differentials_plot

B = 20


def trials(n: int = 3000, seed: int = 2) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.3
    sex = rng.choice(["f", "m"], n)
    score = np.where(lab, rng.normal(2.0, 1.0, n), rng.normal(np.where(sex == "f", 0.4, 0), 1, n))
    return pl.DataFrame({"score": np.round(score, 2), "label": lab, "sex": sex,
                         "model": [f"m{i}" for i in rng.integers(0, 60, n)],
                         "segment": [f"s{i}" for i in rng.integers(0, 800, n)]}
                        ).unique(["model", "segment"], keep="first", maintain_order=True)


def _weights(df: pl.DataFrame, seed: int) -> np.ndarray:
    w = np.ones((B, df.height), dtype=int)
    for c in ("model", "segment"):
        hc = id_hashes(df[c].to_list())
        h = np.array([hc[v] for v in df[c]], dtype=np.uint64)
        w *= kb.poisson_multiplicities(h, np.arange(B), key=kb.stream_key(seed, c)).astype(int)
    return w


def test_two_way_bootstrap_equals_explicit_resampling() -> None:
    df = trials()
    d = _quiet(differentials, df, by="sex", threshold=1.5,
               intervals=Intervals(bootstrap=B, seed=4, resample=("model", "segment")))
    w = _weights(df, 4)
    s, lab, sex = df["score"].to_numpy(), df["label"].to_numpy(), df["sex"].to_numpy()
    rates = {}
    summ = []
    for r in range(B):
        per = {}
        for g in ("f", "m"):
            rep_t = np.repeat(s[lab & (sex == g)], w[r][lab & (sex == g)])
            rep_n = np.repeat(s[~lab & (sex == g)], w[r][~lab & (sex == g)])
            per[("genuine", g)] = float(np.mean(rep_t < 1.5))
            per[("impostor", g)] = float(np.mean(rep_n >= 1.5))
        for k, v in per.items():
            rates.setdefault(k, []).append(v)
        fm_l = [per[("impostor", g)] for g in ("f", "m")]
        fn_l = [per[("genuine", g)] for g in ("f", "m")]
        geo = math.exp(np.mean(np.log(fm_l)))
        summ.append([max(fm_l) / min(fm_l), max(fm_l) / geo, fdr(fm_l, fn_l),
                     garbe(fm_l, fn_l)])
    for row in d.groups.iter_rows(named=True):
        lo, hi = kb.percentile_interval(np.array(rates[(row["kind"], row["sex"])])[:, None],
                                        0.95)
        assert row["rate_lo"] == pytest.approx(lo[0], rel=1e-12)
        assert row["rate_hi"] == pytest.approx(hi[0], rel=1e-12)
        assert row["rate_lo"] <= row["rate"] <= row["rate_hi"]
    summary = {r["measure"]: r for r in d.summary.iter_rows(named=True)}
    lo, hi = kb.percentile_interval(np.array(summ), 0.95)
    for j, m in enumerate(("fmr_max_min", "fmr_max_geomean", "fdr", "garbe")):
        assert summary[m]["value_lo"] == pytest.approx(lo[j], rel=1e-12), m
        assert summary[m]["value_hi"] == pytest.approx(hi[j], rel=1e-12), m


def test_same_intervals_out_of_core(tmp_path) -> None:  # noqa: ANN001
    df = trials(6000, seed=3)
    mem = _quiet(differentials, df, by="sex", fmr=0.05, intervals=B)
    path = tmp_path / "ds"
    path.mkdir()
    for i, part in enumerate(np.array_split(np.arange(df.height), 3)):
        df[part].write_parquet(path / f"p{i}.parquet")
    ooc = _quiet(differentials, str(path), by="sex", fmr=0.05, intervals=B,
                 engine=Engine(memory_limit="64KiB", workers=2))
    assert ooc.threshold == mem.threshold
    assert ooc.groups.equals(mem.groups) and ooc.summary.equals(mem.summary)


def test_chart_draws_intervals_on_a_log_axis() -> None:
    d = _quiet(differentials, trials(), by="sex", threshold=2.5, intervals=B)
    spec = differentials_plot(d.groups).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["point", "rule"]
    rule = spec["layer"][1]["encoding"]
    assert rule["y"]["scale"]["type"] == "log" and rule["y2"]["field"] == "rate_hi"


def test_cli_bootstrap(tmp_path, capsys) -> None:  # noqa: ANN001
    p = tmp_path / "t.parquet"
    trials().write_parquet(p)
    assert main(["differentials", str(p), "--by", "sex", "--fmr", "0.05", "--bootstrap",
                 "10", "--format", "json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert all("rate_lo" in g for g in doc["groups"])
    assert main(["differentials", str(p), "--by", "sex", "--fmr", "0.05", "--ci",
                 "0.9"]) == 2
