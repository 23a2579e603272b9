"""The biometrics on the command line: evaluate's verification options and ``identify``."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from scoreframe.cli import main
from scoreframe.identification import identify
from scoreframe.metrics import verification_summary


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 8000
    lab = rng.random(n) < 0.2
    df = pl.DataFrame({"score": np.round(np.where(lab, rng.normal(2, 1, n),
                                                  rng.normal(0, 1, n)), 2),
                       "label": lab, "sex": rng.choice(["f", "m"], n),
                       "split": rng.choice(["dev", "eval"], n)})
    path = tmp_path_factory.mktemp("bio") / "trials.parquet"
    df.write_parquet(path)
    return path, df


@pytest.fixture(scope="module")
def searches(tmp_path_factory):
    rng = np.random.default_rng(4)
    rows = []
    for p in range(200):
        m = -1 if rng.random() < 0.3 else int(rng.integers(0, 15))
        for g in range(15):
            rows.append((f"p{p}", f"g{g}", float(np.round(rng.normal(2 if g == m else 0), 1)),
                         g == m, "f" if p % 2 else "m"))
    df = pl.DataFrame(rows, schema=["probe", "candidate", "score", "mate", "sex"],
                      orient="row")
    path = tmp_path_factory.mktemp("ident") / "searches.parquet"
    df.write_parquet(path)
    return path, df


def test_evaluate_json_has_the_verification_values(trials, tmp_path):
    path, df = trials
    out = tmp_path / "r.json"
    assert main(["evaluate", str(path), "--by", "sex", "--fmr", "0.001", "0.01", "--biometric",
                 "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    pooled = next(g for g in doc["groups"] if g["sex"] == "all")
    v = verification_summary(df.filter(pl.col("label"))["score"].to_numpy(),
                             df.filter(~pl.col("label"))["score"].to_numpy(),
                             fmr=[0.001, 0.01])
    assert pooled["fnmr_at_fmr"] == v["fnmr_at_fmr"] and pooled["zero_fmr"] == v["zero_fmr"]


def test_evaluate_table_and_csv(trials, tmp_path, capsys):
    path, _ = trials
    assert main(["evaluate", str(path), "--fmr", "0.01", "--threshold-from",
                 "split = 'dev'"]) == 0
    text = capsys.readouterr().out
    assert "FNMR at FMR targets" in text and "fmr=0.01" in text and "min_hter" in text
    csv = tmp_path / "r.csv"
    assert main(["evaluate", str(path), "--fmr", "0.01", "-o", str(csv)]) == 0
    row = pl.read_csv(csv).row(0, named=True)
    assert json.loads(row["fnmr_at_fmr"])[0]["fmr_target"] == 0.01


def test_evaluate_bad_targets_exit_2_and_write_nothing(trials, tmp_path, capsys):
    path, _ = trials
    out = tmp_path / "bad.json"
    for argv in (["--fmr", "0"], ["--fnmr", "1.5"], ["--convention", "sklearn"]):
        assert main(["evaluate", str(path), *argv, "-o", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "argument --fmr: expected an FMR target in (0, 1)" in err
    assert "argument --fnmr: expected an FNMR target in (0, 1)" in err
    assert "choose from 'exact', 'bob', 'pyeer'" in err


def test_identify_command(searches, tmp_path, capsys):
    path, df = searches
    assert main(["identify", str(path), "--rank", "1", "5", "--fpir", "0.1", "--by",
                 "sex"]) == 0
    text = capsys.readouterr().out
    assert "rank-5 identification rate" in text and "FNIR at FPIR 0.1, rank 1" in text
    out = tmp_path / "i.json"
    assert main(["identify", str(path), "--rank", "1", "5", "--fpir", "0.1", "-o",
                 str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["groups"] == identify(df, rank=[1, 5], fpir=[0.1]).to_dicts()
    bad = tmp_path / "two.parquet"
    df.with_columns(pl.lit(True).alias("mate")).write_parquet(bad)
    assert main(["identify", str(bad), "-o", str(tmp_path / "x.json")]) == 2
    assert "more than one mate" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
