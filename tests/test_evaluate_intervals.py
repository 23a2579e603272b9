"""evaluate(..., bootstrap=B): intervals joined into the results, JSON and the CLI table."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from scoreframe import evaluate, explode_dcf
from scoreframe.metrics import Binary, Intervals
from scoreframe.results.bootstrap import bootstrap_evaluate
from scoreframe.results.compare import compare as sf_compare
from scoreframe.stats import Engine


def data(n: int = 6000) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    lab = rng.random(n) < 0.3
    return pl.DataFrame({"score": rng.normal(size=n) + 2 * lab, "label": lab,
                         "g": rng.choice(["a", "b"], n),
                         "model": [f"m{i % 60}" for i in range(n)],
                         "segment": [f"s{i // 60}" for i in range(n)]})


def test_intervals_equal_the_bootstrap_module_and_bracket_the_value():
    df = data()
    kw = {"by": "g", "operating_points": [0.1, 0.5],
          "intervals": Intervals(bootstrap=80, seed=3, resample=["model", "segment"])}
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
    res = evaluate(data(2000), intervals=Intervals(bootstrap=20),
                   metrics=[Binary(eer_method="nist")])
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
    res = evaluate(df, intervals=Intervals(bootstrap=25), engine=Engine(memory_limit=limit))
    assert res["cllr_lo"][0] == evaluate(df, intervals=Intervals(bootstrap=25))["cllr_lo"][0]


# --- a metric declared once, with the interval flag, appears with intervals everywhere ---------
@pytest.fixture
def declared_metric():
    """``tar_share``: the fraction of targets among the trials (a new, mergeable metric)."""
    from scoreframe.metrics import registry

    m = registry.declare(registry.Metric(
        "tar_share", "target share", "%", lambda g: g.n_tar / (g.n_tar + g.n_non),
        scale=100.0, intervals=True, description="fraction of target trials"))
    yield m
    del registry._REGISTRY[(m.name, False)]


@pytest.mark.parametrize("engine", ["memory", "streaming", pytest.param(
    "dask", marks=pytest.mark.slow)])
def test_a_declared_metric_gets_intervals_everywhere(declared_metric, tmp_path, capsys,
                                                     monkeypatch, engine) -> None:
    if engine == "dask":
        pytest.importorskip("distributed")
    from scoreframe.cli.main import main

    df = data(3000)
    two = pl.concat([df.with_columns(system=pl.lit("A")),
                     df.with_columns(system=pl.lit("B"), score=pl.col("score") * 0.5)])
    path = tmp_path / "ds.parquet"
    two.write_parquet(path)
    eng = {"engine": {"memory": Engine("memory"), "streaming": Engine("streaming"),
                      "dask": Engine("dask", workers=2)}[engine]}
    kw = {"by": "g", "intervals": Intervals(bootstrap=30, seed=2, resample=["model", "segment"])}
    res = evaluate(str(path), **kw, **eng)
    assert {"tar_share", "tar_share_lo", "tar_share_hi"} <= set(res.columns)
    cols = res.columns
    assert cols.index("tar_share_lo") == cols.index("tar_share") + 1
    # the replicate value is the share of the replicate's weighted targets: the interval is
    # a real one around the point value
    assert (res["tar_share_lo"] < res["tar_share"]).all()
    assert (res["tar_share"] < res["tar_share_hi"]).all()
    cmp = sf_compare(str(path), "A", "B", **kw, **eng)
    row = cmp.filter(pl.col("metric") == "tar_share")
    assert row.height == 3 and (row["diff"] == 0).all()  # the same trials in both systems
    assert (row["diff_lo"] == 0).all() and (row["diff_hi"] == 0).all()
    if engine == "memory":  # the CLI: table (wide enough for every column) and JSON
        monkeypatch.setenv("COLUMNS", "400")
        argv = ["evaluate", str(path), "--by", "g", "--bootstrap", "30", "--resample", "model",
                "segment"]
        assert main([*argv, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        g = doc["groups"][0]
        assert g["tar_share_lo"] <= g["tar_share"] <= g["tar_share_hi"]
        assert main(argv) == 0
        table = capsys.readouterr().out
        lines = table.splitlines()
        head = next(i for i, ln in enumerate(lines) if "tar_share" in ln)
        cells = [c.strip() for c in lines[head].split("┃")]
        col = next(i for i, c in enumerate(cells) if c.startswith("tar_share"))
        row = [c.strip() for c in lines[head + 2].split("│")]  # first row under the rule
        assert "[" in row[col] and row[col].endswith("]")
        assert main(["compare", str(path), "--systems", "A", "B", "--bootstrap", "30",
                     "--format", "json"]) == 0
        out = capsys.readouterr().out
        assert "tar_share" in out
