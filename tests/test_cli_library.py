"""Library functions behind the thin CLI: dataset_info, convert_trials, the demo, multiclass
before/after tables; and the demo command end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import BOSARIS

from scoreframe.cli import main
from scoreframe.demo import dev_eval_split, run_demo
from scoreframe.errors import ScoreframeError
from scoreframe.io import convert as conv
from scoreframe.io import read_any, scan_trials
from scoreframe.io.info import condition_columns, dataset_info
from scoreframe.results.multiclass_before_after import multiclass_before_after, multiclass_stages

RU2009 = Path(__file__).parent / "data" / "real" / "ru2009_evalita"


# --- dataset_info ------------------------------------------------------------------------------
def test_dataset_info_matches_the_published_counts_of_ru2009():
    # stats.json was computed from the raw ROCAnalysis.jl table when the fixture was added
    stats = json.loads((RU2009 / "stats.json").read_text())
    info = dataset_info(pl.scan_parquet(RU2009 / "ru2009_evalita.parquet"))
    assert (info.rows, info.targets, info.non_targets, info.unknown) == (
        stats["rows"], stats["targets"], stats["nontargets"], 0)
    for col in ("gender", "channel"):
        got = {r[0]: (r[1], r[2]) for r in info.conditions[col].rows()}
        assert got == {r[col]: (r["targets"], r["nontargets"]) for r in stats[f"by_{col}"]}
    assert "score" not in info.conditions and "model" not in info.conditions


def test_dataset_info_against_a_brute_force_count():
    rng = np.random.default_rng(1)
    n = 5000
    cond = rng.integers(0, 7, n)
    label = rng.random(n) < 0.2
    unknown = rng.random(n) < 0.05
    label_or_null = pl.Series([None if u else bool(v) for u, v in zip(unknown, label,
                                                                       strict=True)],
                              dtype=pl.Boolean)
    df = pl.DataFrame({"model": [f"m{i}" for i in range(n)], "segment": "s",
                       "score": rng.normal(size=n), "label": label_or_null,
                       "cond": cond.astype(np.int32), "many": np.arange(n).astype(str)})
    info = dataset_info(df, max_values=10)
    lab = df["label"].to_list()
    assert info.targets == sum(v is True for v in lab)
    assert info.non_targets == sum(v is False for v in lab)
    assert info.unknown == sum(v is None for v in lab)
    table = info.conditions["cond"]
    for c in range(7):
        idx = np.flatnonzero(cond == c)
        row = table.filter(pl.col("cond") == c).row(0)
        assert row[1:] == (sum(lab[i] is True for i in idx), sum(lab[i] is False for i in idx),
                           sum(lab[i] is None for i in idx))
    assert info.too_many_values == {"many": n} and "many" not in info.conditions
    assert dataset_info(df, where="cond = 3").rows == int((cond == 3).sum())
    assert not dataset_info(df.drop("label")).has_labels
    with pytest.raises(ScoreframeError, match="max_values"):
        dataset_info(df, max_values=-1)


def test_condition_columns_keep_discrete_non_id_columns():
    schema = pl.Schema({"model": pl.String, "segment": pl.String, "score": pl.Float64,
                        "label": pl.Boolean, "gender": pl.Categorical(), "snr": pl.Float32,
                        "dec": pl.Boolean, "year": pl.Int16})
    assert condition_columns(schema) == ["gender", "dec", "year"]


# --- convert_trials ----------------------------------------------------------------------------
def _kns(tmp_path: Path) -> Path:
    ds = tmp_path / "kns.parquet"
    assert main(["convert", "--key", str(BOSARIS / "kns" / "key.txt"), "--scores",
                 str(BOSARIS / "kns" / "scores.txt"), "-o", str(ds)]) == 0
    return ds


def test_convert_streams_parquet_to_a_partitioned_dataset(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    n = 3000
    src = pl.DataFrame({"model": [f"m{i % 50}" for i in range(n)],
                        "segment": [f"s{i}" for i in range(n)], "score": rng.normal(size=n),
                        "label": rng.random(n) < 0.3, "gender": rng.choice(["f", "m"], n)})
    src.write_parquet(tmp_path / "in.parquet")
    seen = []
    real = conv.write_trials

    def spy(data, *args, **kwargs):
        seen.append(type(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(conv, "write_trials", spy)
    res = conv.convert_trials(scan_trials(tmp_path / "in.parquet"), tmp_path / "out",
                              partition_by=["gender"], inputs=[tmp_path / "in.parquet"])
    assert seen == [pl.LazyFrame]  # handed over lazily: write_trials streams it in batches
    assert res.rows == n and res.kind == "trials"
    back = scan_trials(tmp_path / "out").collect()
    key = ["model", "segment"]
    assert back.select(src.columns).sort(key).equals(src.sort(key))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["gender=f", "gender=m"]


def test_plan_outputs_of_paired_formats():
    plan = conv.plan_outputs("x/out.h5", to="bosaris-h5", kind="trials")
    assert [(k, str(p)) for k, p in plan] == [("key", "x/out_key.h5"),
                                              ("scores", "x/out_scores.h5")]
    plan = conv.plan_outputs("o", to="nist", kind="trials", scores_out="s.tsv")
    assert [(k, str(p)) for k, p in plan] == [("key", "o_key.tsv"), ("scores", "s.tsv")]
    assert [k for k, _ in conv.plan_outputs("o.txt", to="kaldi", kind="scores")] == ["scores"]
    with pytest.raises(ScoreframeError, match="nothing to write"):
        conv.plan_outputs("o.tsv", to="nist", kind="ndx")


def test_convert_paired_writes_all_or_nothing(tmp_path):
    ds = _kns(tmp_path)
    df = scan_trials(ds)
    (tmp_path / "out_scores.txt").write_text("old\n")
    with pytest.raises(ScoreframeError, match="out_scores.txt"):
        conv.convert_trials(df, tmp_path / "out.txt", to="bosaris-txt")
    assert not (tmp_path / "out_key.txt").exists()
    assert (tmp_path / "out_scores.txt").read_text() == "old\n"
    res = conv.convert_trials(df, tmp_path / "out.txt", to="bosaris-txt", overwrite=True)
    assert res.rows == 9 and [p.name for p in res.paths] == ["out_key.txt", "out_scores.txt"]
    back = read_any(tmp_path / "out_scores.txt", kind="scores").sort("model", "segment")
    assert back.equals(read_any(BOSARIS / "kns" / "scores.txt", kind="scores")
                       .sort("model", "segment"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kns.parquet", "out_key.txt",
                                                          "out_scores.txt"]


def test_convert_refuses_several_systems_in_a_one_system_format(tmp_path):
    df = pl.DataFrame({"model": ["a", "a"], "segment": ["x", "x"], "system": ["s1", "s2"],
                       "score": [1.0, 2.0], "label": [True, True]})
    with pytest.raises(ScoreframeError, match="one system"):
        conv.convert_trials(df, tmp_path / "o.txt", to="bosaris-txt")
    assert list(tmp_path.iterdir()) == []


# --- the demo --------------------------------------------------------------------------------
def test_dev_eval_split_is_a_partition_by_model():
    lf = pl.LazyFrame({"model": ["m00", "m01", "m02", "m13", "m13", "m40"],
                       "score": np.arange(6.0)})
    dev, ev = (x.collect() for x in dev_eval_split(lf))
    assert dev["model"].to_list() == ["m00", "m02", "m40"]
    assert ev["model"].to_list() == ["m01", "m13", "m13"]


def test_run_demo_steps(tmp_path):
    steps = list(run_demo(tmp_path, trials=2000, seed=1))
    assert [s.title[:3] for s in steps] == ["1/5", "2/5", "3/5", "4/5", "5/5"]
    for s in steps:
        assert all(p.exists() for p in s.paths)
    res = steps[1].table
    assert set(res["system"]) == {"sys1", "sys2", "sys3"}
    assert res["n_tar"].sum() > 0 and res["eer"].is_between(0, 0.5).all()
    fusion = steps[2].table
    after = fusion.filter(pl.col("stage") == "after")
    before = fusion.filter(pl.col("stage") == "before")
    # the fused system is never worse than the best input in minCllr on the eval half
    assert after["min_cllr"].min() <= before["min_cllr"].min() + 0.02
    cal = steps[3].table
    assert cal.filter(pl.col("stage") == "after")["cllr"].max() <= cal.filter(
        pl.col("stage") == "before")["cllr"].max()


def test_demo_command_end_to_end(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "--trials", "2000"]) == 0
    out = capsys.readouterr().out
    for name in ("demo_trials", "demo_results.json", "demo_fusion.json", "demo_fused_eval",
                 "demo_calibration_sys1.json", "demo_report.html"):
        assert (tmp_path / "d" / name).exists(), name
    for step in ("1/5", "2/5", "3/5", "4/5", "5/5"):
        assert step in out
    # the printed tables have numbers: a sys1 results row (EER in %) and a fused row
    rows = [line for line in out.splitlines() if "sys1" in line and "│" in line]
    assert rows and all(re.search(r"\d+\.\d{2,4}", r) for r in rows)
    fused = [line for line in out.splitlines() if " fused " in line]
    assert fused and re.search(r"\d\.\d{4}", fused[0])
    doc = json.loads((tmp_path / "d" / "demo_results.json").read_text())
    assert {g["system"] for g in doc} == {"sys1", "sys2", "sys3"}
    assert main(["demo", "--out", str(tmp_path / "e"), "--trials", "0"]) == 2
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "d").rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["demo", "--out", str(tmp_path / "d"), "--trials", "2000"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "d").rglob("*") if p.is_file()} \
        == before  # an earlier demo is kept unless --overwrite


# --- multiclass before/after -------------------------------------------------------------------
def test_multiclass_before_after_evaluates_each_input(tmp_path):
    from scoreframe.multiclass import MulticlassFusion, evaluate_multiclass

    rng = np.random.default_rng(3)
    n, k = 500, 3
    y = rng.integers(0, k, n)
    ll = rng.normal(0, 1, (n, k))
    ll[np.arange(n), y] += 2.0
    seg = [f"t{i}" for i in range(n) for _ in range(k)]
    classes = ["a", "b", "c"]
    truth = pl.DataFrame({"segment": [f"t{i}" for i in range(n)],
                          "class": [classes[j] for j in y]})
    systems = {name: pl.DataFrame({"segment": seg, "class": classes * n,
                                   "score": (ll + rng.normal(0, s, (n, k))).ravel()})
               for name, s in (("x", 0.5), ("y", 1.5))}
    out = MulticlassFusion().fit(systems, truth).transform(systems).collect()
    stages = multiclass_stages(out)
    assert set(stages["before"].collect()["system"]) == {"x", "y"}
    table = multiclass_before_after(out, truth)
    for name, sc in systems.items():
        direct = evaluate_multiclass(sc, truth)["cmxe"][0]
        got = table.filter(pl.col("stage") == "before", pl.col("system") == name)["cmxe"][0]
        assert got == pytest.approx(direct, rel=1e-12)
    after = table.filter(pl.col("stage") == "after")["cmxe"][0]
    assert after < table.filter(pl.col("stage") == "before")["cmxe"].min()
