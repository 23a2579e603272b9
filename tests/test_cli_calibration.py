"""`scoreframe calibrate` and `scoreframe fuse`: train on dev, apply to eval, tables, errors."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import assert_close

from scoreframe import metrics
from scoreframe.cli import main
from scoreframe.io import scan_trials


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    """A synthetic 3-system evaluation split into dev and eval by model."""
    root = tmp_path_factory.mktemp("calcli")
    assert main(["synth", str(root / "all"), "--trials", "30000", "--seed", "3"]) == 0
    lf = scan_trials(root / "all")
    even = pl.col("model").str.slice(1).cast(pl.Int64) % 2 == 0
    lf.filter(even).sink_parquet(root / "dev.parquet")
    lf.filter(~even).sink_parquet(root / "eval.parquet")
    for s in ("sys1", "sys2"):
        for split in ("dev", "eval"):
            lf.filter(even if split == "dev" else ~even).filter(pl.col("system") == s).drop(
                "system").sink_parquet(root / f"{s}_{split}.parquet")
    return root


def test_calibrate_linear_train_and_apply(splits, tmp_path, capsys):
    model = tmp_path / "cal.json"
    assert main(["calibrate", "train", str(splits / "dev.parquet"), "--where",
                 "system = 'sys3'", "--p-target", "0.05", "-o", str(model)]) == 0
    out = capsys.readouterr().out
    assert "converged" in out and "before" in out and "after" in out
    doc = json.loads(model.read_text())
    assert doc["method"] == "linear" and doc["p_target"] == 0.05
    assert {"scale", "offset"} <= set(doc) and doc["training"]["converged"] is True
    res = tmp_path / "eval_cal"
    assert main(["calibrate", "apply", str(model), str(splits / "eval.parquet"), "--where",
                 "system = 'sys3'", "-o", str(res)]) == 0
    table = capsys.readouterr().out
    assert "calibration applied" in table
    cal = scan_trials(res).collect()
    assert {"model", "segment", "label", "score", "score_raw", "system"} <= set(cal.columns)
    assert_close(cal["score"].to_numpy(),
                 doc["scale"] * cal["score_raw"].to_numpy() + doc["offset"], rtol=1e-14)
    lab = cal["label"].to_numpy()
    s, r = cal["score"].to_numpy(), cal["score_raw"].to_numpy()
    # sys3 is miscalibrated in the synthetic data: Cllr drops, minCllr does not move
    assert metrics.cllr(s[lab], s[~lab]) < metrics.cllr(r[lab], r[~lab])
    assert_close(metrics.min_cllr(s[lab], s[~lab]), metrics.min_cllr(r[lab], r[~lab]),
                 rtol=1e-12)


def test_calibrate_pav_with_objective_and_csv_output(splits, tmp_path, capsys):
    model = tmp_path / "pav.json"
    assert main(["calibrate", "train", str(splits / "sys1_dev.parquet"), "--method", "pav",
                 "--eps", "1e-6", "-o", str(model)]) == 0
    assert json.loads(model.read_text())["method"] == "pav"
    out = tmp_path / "out.csv"
    assert main(["calibrate", "apply", str(model), str(splits / "sys1_eval.parquet"), "-o",
                 str(out)]) == 0
    df = pl.read_csv(out)
    assert "score_raw" in df.columns and df.height == 15000
    brier = tmp_path / "brier.json"
    assert main(["calibrate", "train", str(splits / "sys1_dev.parquet"), "--objective",
                 "brier", "-o", str(brier)]) == 0
    assert json.loads(brier.read_text())["objective"]["rule"] == "brier"


def test_fuse_train_apply_one_dataset_and_several(splits, tmp_path, capsys):
    model = tmp_path / "fusion.json"
    assert main(["fuse", "train", str(splits / "dev.parquet"), "--p-target", "0.01", "-o",
                 str(model)]) == 0
    out = capsys.readouterr().out
    assert "linear fusion of 3 systems" in out and "fused" in out
    doc = json.loads(model.read_text())
    assert doc["method"] == "linear_fusion" and set(doc["weights"]) == {"sys1", "sys2", "sys3"}
    assert doc["p_target"] == 0.01 and "offset" in doc
    res = tmp_path / "fused"
    assert main(["fuse", "apply", str(model), str(splits / "eval.parquet"), "-o",
                 str(res)]) == 0
    fused = scan_trials(res).collect()
    assert {"score", "score_raw_sys1", "score_raw_sys2", "score_raw_sys3", "label"} <= set(
        fused.columns)
    assert fused.height == 15000
    lab = fused["label"].to_numpy()
    f = fused["score"].to_numpy()
    best = min(metrics.min_cllr(fused[c].to_numpy()[lab], fused[c].to_numpy()[~lab])
               for c in ("score_raw_sys1", "score_raw_sys2", "score_raw_sys3"))
    assert metrics.min_cllr(f[lab], f[~lab]) < best  # the fusion beats every system

    two = tmp_path / "two.json"
    assert main(["fuse", "train", str(splits / "sys1_dev.parquet"),
                 str(splits / "sys2_dev.parquet"), "-o", str(two)]) == 0
    assert set(json.loads(two.read_text())["weights"]) == {"sys1_dev", "sys2_dev"}
    capsys.readouterr()
    # applying needs the same system names
    code = main(["fuse", "apply", str(two), str(splits / "sys1_eval.parquet"),
                 str(splits / "sys2_eval.parquet"), "-o", str(tmp_path / "x")])
    assert code == 2 and "lack systems" in capsys.readouterr().err


def test_fuse_with_quality_tables(tmp_path, capsys):
    rng = np.random.default_rng(2)
    n = 4000
    q_m, q_s = rng.uniform(0, 1, 20), rng.uniform(0, 1, n)
    mi = rng.integers(0, 20, n)
    label = rng.random(n) < 0.3
    base = np.where(label, 1.0, -1.0) + 3 * q_m[mi] * q_s + rng.normal(0, 1, n)
    rows = {"model": [f"m{i}" for i in mi], "segment": [f"s{i}" for i in range(n)],
            "label": label}
    pl.DataFrame({**rows, "score": base + rng.normal(0, .3, n), "system": "a"}).vstack(
        pl.DataFrame({**rows, "score": base + rng.normal(0, .3, n), "system": "b"})
    ).write_parquet(tmp_path / "dev.parquet")
    pl.DataFrame({"id": [f"m{i}" for i in range(20)], "snr": q_m}).write_parquet(
        tmp_path / "qm.parquet")
    pl.DataFrame({"id": rows["segment"], "snr": q_s}).write_parquet(tmp_path / "qs.parquet")
    model = tmp_path / "q.json"
    assert main(["fuse", "train", str(tmp_path / "dev.parquet"), "--quality-model",
                 str(tmp_path / "qm.parquet"), "--quality-segment", str(tmp_path / "qs.parquet"),
                 "-o", str(model)]) == 0
    doc = json.loads(model.read_text())
    assert doc["quality"]["columns"] == ["snr"] and len(doc["quality"]["W"]) == 2
    assert main(["fuse", "apply", str(model), str(tmp_path / "dev.parquet"), "-o",
                 str(tmp_path / "out.parquet")]) == 2
    assert "quality" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "needle"), [
    (["calibrate", "apply", "{tmp}/none.json", "{splits}/eval.parquet", "-o", "{tmp}/o"],
     "none.json"),
    (["calibrate", "train", "{splits}/dev.parquet", "-o", "{tmp}/m.json"], "one system"),
    (["calibrate", "train", "{splits}/sys1_dev.parquet", "--p-target", "2", "-o",
      "{tmp}/m.json"], "--p-target"),
    (["calibrate", "train", "{splits}/sys1_dev.parquet", "--objective", "hinge", "-o",
      "{tmp}/m.json"], "objective"),
    (["fuse", "train", "{splits}/sys1_dev.parquet", "-o", "{tmp}/m.json"], "two systems"),
])
def test_calibration_user_errors(argv, needle, splits, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path, splits=splits) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_apply_refuses_a_fusion_model_for_calibration(splits, tmp_path, capsys):
    model = tmp_path / "f.json"
    assert main(["fuse", "train", str(splits / "dev.parquet"), "-o", str(model)]) == 0
    capsys.readouterr()
    assert main(["calibrate", "apply", str(model), str(splits / "eval.parquet"), "-o",
                 str(tmp_path / "o")]) == 2
    assert "linear_fusion model" in capsys.readouterr().err


def test_a_calibration_is_applied_to_its_own_system_unless_asked(splits, tmp_path, capsys):
    model = tmp_path / "sys3.json"
    assert main(["calibrate", "train", str(splits / "dev.parquet"), "--where",
                 "system = 'sys3'", "-o", str(model)]) == 0
    capsys.readouterr()
    before = sorted(tmp_path.iterdir())
    for argv in (["calibrate", "apply", str(model), str(splits / "eval.parquet"), "-o",
                  str(tmp_path / "all")],
                 ["report", str(splits / "eval.parquet"), "--calibration", str(model), "-o",
                  str(tmp_path / "r.html")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "sys3" in err and "--allow-other-system" in err
        assert sorted(tmp_path.iterdir()) == before
    assert main(["calibrate", "apply", str(model), str(splits / "eval.parquet"), "-o",
                 str(tmp_path / "all"), "--allow-other-system"]) == 0
    cal = scan_trials(tmp_path / "all").collect()
    assert set(cal["system"].unique()) == {"sys1", "sys2", "sys3"}
    doc = json.loads(model.read_text())
    scale = doc.get("scale_", doc.get("scale"))
    offset = doc.get("offset_", doc.get("offset"))
    assert_close(cal["score"].to_numpy(), scale * cal["score_raw"].to_numpy() + offset,
                 rtol=1e-14)
    assert main(["report", str(splits / "eval.parquet"), "--calibration", str(model), "-o",
                 str(tmp_path / "r.html"), "--allow-other-system"]) == 0
    assert (tmp_path / "r.html").stat().st_size > 0


def test_calibrate_train_records_system_and_where(splits, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["calibrate", "train", str(splits / "dev.parquet"), "--system", "sys2",
                 "--where", "channel = 'tel'", "-o", str(model)]) == 0
    doc = json.loads(model.read_text())
    assert doc["system"] == "sys2" and doc["where"] == "channel = 'tel'"
    dev = scan_trials(splits / "dev.parquet").filter(
        pl.col("system") == "sys2", pl.col("channel") == "tel").collect()
    n_tar = int(dev["label"].sum())
    assert f"{n_tar} targets, {dev.height - n_tar} non-targets" in capsys.readouterr().out


def test_fuse_train_records_where(splits, tmp_path):
    model = tmp_path / "f.json"
    assert main(["fuse", "train", str(splits / "dev.parquet"), "--where", "gender = 'f'",
                 "-o", str(model)]) == 0
    doc = json.loads(model.read_text())
    assert doc["where"] == "gender = 'f'"
    assert doc["training"]["n_tar"] == int(scan_trials(splits / "dev.parquet").filter(
        pl.col("system") == "sys1", pl.col("gender") == "f").collect()["label"].sum())
