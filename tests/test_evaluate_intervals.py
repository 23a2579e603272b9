"""evaluate(..., bootstrap=B): intervals joined into the results, JSON and the CLI table."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from scoreframe import evaluate, explode_dcf
from scoreframe.bootstrap import bootstrap_evaluate


def data(n: int = 6000) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    lab = rng.random(n) < 0.3
    return pl.DataFrame({"score": rng.normal(size=n) + 2 * lab, "label": lab,
                         "g": rng.choice(["a", "b"], n),
                         "model": [f"m{i % 60}" for i in range(n)],
                         "segment": [f"s{i // 60}" for i in range(n)]})


def test_intervals_equal_the_bootstrap_module_and_bracket_the_value():
    df = data()
    kw = {"by": "g", "p_target": [0.1, 0.5], "bootstrap": 80, "seed": 3,
          "resample": ["model", "segment"]}
    res = evaluate(df, **kw)
    ref = bootstrap_evaluate(df, **kw)
    for m in ("eer", "cllr", "min_cllr"):
        assert res[f"{m}_lo"].to_list() == ref[f"{m}_lo"].to_list()
        assert (res[f"{m}_lo"] <= res[m]).all() and (res[m] <= res[f"{m}_hi"]).all()
    flat = explode_dcf(res)
    ref_flat = ref.explode("dcf").unnest("dcf")
    assert flat["min_dcf_norm_hi"].to_list() == ref_flat["min_dcf_norm_hi"].to_list()
    assert (flat["act_dcf_norm_lo"] <= flat["act_dcf_norm_hi"]).all()


def test_no_eer_interval_for_other_conventions():
    res = evaluate(data(2000), bootstrap=20, eer_method="nist")
    assert "eer_lo" not in res.columns and "cllr_lo" in res.columns


def test_cli_bootstrap_json_and_table(tmp_path):
    path = tmp_path / "d.parquet"
    data(3000).write_parquet(path)
    cmd = [sys.executable, "-m", "scoreframe", "evaluate", str(path), "--by", "g",
           "--bootstrap", "30", "--resample", "model", "segment", "--seed", "1"]
    doc = json.loads(subprocess.run([*cmd, "--format", "json"], capture_output=True,
                                    text=True, check=True).stdout)
    g = doc["groups"][0]
    assert g["eer_lo"] <= g["eer"] <= g["eer_hi"]
    assert "min_dcf_norm_lo" in g["dcf"][0]
    table = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert " [" in table and "]" in table
    bad = subprocess.run([*cmd[:-2], "--ci", "1.5"], capture_output=True, text=True)
    assert bad.returncode == 2 and "ci" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.mark.parametrize("limit", ["2GB", "64KiB"])
def test_same_intervals_on_both_engines(limit):
    df = data(3000)
    res = evaluate(df, bootstrap=25, memory_limit=limit)
    assert res["cllr_lo"][0] == evaluate(df, bootstrap=25)["cllr_lo"][0]
