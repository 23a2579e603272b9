"""Parquet datasets, atomic writes, validation, alignment, SQL slicing, synth, real data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import DATA

from scoreframe import align, alignment_report, query, scan_trials, synth_chunks, write_trials
from scoreframe.errors import AlignmentError, SchemaError, ScoreframeError
from scoreframe.frames.schema import validate_trials
from scoreframe.io import read_table, read_trials

QUERIES = Path(__file__).parents[1] / "queries"
REAL = DATA / "real"


@pytest.fixture(scope="module")
def synth_ds(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ds") / "synth"
    write_trials(synth_chunks(20_000, seed=7, chunk_trials=6_000), path,
                 partition_by=["system", "gender"])
    return path


def test_partitioned_dataset_layout_and_scan(synth_ds):
    dirs = sorted(p.relative_to(synth_ds).as_posix() for p in synth_ds.glob("*/*"))
    assert dirs == [f"system=sys{k}/gender={g}" for k in (1, 2, 3) for g in ("f", "m")]
    assert len(list((synth_ds / "system=sys1" / "gender=f").glob("part-*.parquet"))) == 4
    lf = scan_trials(synth_ds)
    assert isinstance(lf, pl.LazyFrame)
    df = lf.collect()
    assert df.height == 60_000
    assert df.schema["score"] == pl.Float64 and df.schema["label"] == pl.Boolean
    only = scan_trials(synth_ds, where="system = 'sys2' AND gender = 'm'").collect()
    assert set(only["system"]) == {"sys2"} and set(only["gender"]) == {"m"}
    assert only.height == df.filter(system="sys2", gender="m").height


def test_synth_deterministic_and_realistic():
    a = pl.concat(synth_chunks(5_000, seed=3, chunk_trials=2_000))
    b = pl.concat(synth_chunks(5_000, seed=3, chunk_trials=2_000))
    c = pl.concat(synth_chunks(5_000, seed=4, chunk_trials=2_000))
    assert a.equals(b) and not a.equals(c)
    assert a.height == 15_000
    assert a.select("model", "segment", "system").is_unique().all()
    rate = a.filter(system="sys1")["label"].mean()
    assert 0.08 < rate < 0.12
    # systems are correlated but not identical
    s1 = a.filter(system="sys1")["score"].to_numpy()
    s2 = a.filter(system="sys2")["score"].to_numpy()
    assert 0.5 < np.corrcoef(s1, s2)[0, 1] < 0.99
    with pytest.raises(ValueError, match="n_trials"):
        next(synth_chunks(0))


def test_write_is_atomic_on_failure(tmp_path):
    def chunks():
        yield pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0], "label": [True]})
        raise RuntimeError("disk on fire")

    target = tmp_path / "out"
    with pytest.raises(RuntimeError):
        write_trials(chunks(), target, partition_by=[])
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_write_refuses_to_overwrite_and_replaces_with_flag(tmp_path):
    df = pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0], "label": [True]})
    f = tmp_path / "t.parquet"
    write_trials(df, f)
    with pytest.raises(ScoreframeError, match="already exists"):
        write_trials(df, f)
    write_trials(df.with_columns(score=pl.lit(2.0)), f, overwrite=True)
    assert read_trials(f)["score"].to_list() == [2.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def test_lazy_input_is_streamed_in_batches(tmp_path, synth_ds):
    out = tmp_path / "copy"
    write_trials(scan_trials(synth_ds).filter(pl.col("score") > 0), out, chunk_rows=5_000)
    assert scan_trials(out).select(pl.len()).collect().item() == (
        scan_trials(synth_ds).filter(pl.col("score") > 0).select(pl.len()).collect().item())


@pytest.mark.parametrize("frame,match", [
    (pl.DataFrame({"model": ["a"], "segment": ["x"], "score": ["1.0"], "label": [True]}),
     r"`score` must be numeric.*got String"),
    (pl.DataFrame({"model": ["a"], "score": [1.0], "label": [True]}),
     r"missing column\(s\) `segment`"),
    (pl.DataFrame({"model": [None, "b"], "segment": ["x", "y"], "score": [1.0, 2.0],
                   "label": [True, False]}), r"`model` has missing values"),
    (pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0], "label": [[1]]}),
     r"unsupported type"),
])
def test_validation_errors(frame, match):
    with pytest.raises(SchemaError, match=match):
        validate_trials(frame).collect()


def test_validation_accepts_spellings_and_null_labels():
    df = pl.DataFrame({"model": ["a"] * 7, "segment": list("abcdefg"), "score": [0.0] * 7,
                       "label": ["target", "NONTARGET", "1", "0", "True", " false ", None]})
    out = validate_trials(df).collect()
    assert out["label"].to_list() == [True, False, True, False, True, False, None]
    ints = df.with_columns(label=pl.Series([1, 0, 1, 0, 1, 0, None]))
    assert validate_trials(ints).collect()["label"].null_count() == 1
    dup = pl.DataFrame({"model": ["a", "a"], "segment": ["x", "x"], "score": [1.0, 2.0],
                        "label": [True, True], "cond": ["c1", "c2"]})
    with pytest.raises(SchemaError, match="duplicate"):
        validate_trials(dup).collect()
    assert validate_trials(dup, trial_id=["model", "cond", "segment"]).collect().height == 2


def _key_scores():
    key = pl.DataFrame({"model": ["a", "a", "b", "b"], "segment": ["x", "y", "x", "z"],
                        "label": [True, False, False, True], "gender": ["f", "f", "m", "m"]})
    scores = pl.DataFrame({"model": ["a", "a", "b", "c"], "segment": ["x", "y", "x", "q"],
                           "score": [1.0, -1.0, 0.5, 9.0]})
    return key, scores


def test_alignment_report_and_policies():
    key, scores = _key_scores()
    rep = alignment_report(key, scores)
    assert (rep.n_missing, rep.n_extra, rep.n_dup_key, rep.n_dup_scores) == (1, 1, 0, 0)
    assert rep.examples["missing"] == ["b/z"] and rep.examples["extra"] == ["c/q"]
    with pytest.raises(AlignmentError, match=r"1 key trial\(s\) with no score \(e.g. b/z\)"):
        align(key, scores)
    with pytest.raises(AlignmentError, match="no key trial"):
        align(key, scores, missing="drop")
    dropped = align(key, scores, missing="drop", extra="drop").collect()
    assert dropped.height == 3 and "gender" in dropped.columns
    filled = align(key, scores, missing=-5.0, extra="drop").collect().sort("model", "segment")
    assert filled["score"].to_list() == [1.0, -1.0, 0.5, -5.0]
    dup_scores = pl.concat([scores, scores.head(1)])
    with pytest.raises(AlignmentError, match="duplicated score"):
        align(key, dup_scores, missing="drop", extra="drop")


def test_alignment_with_systems():
    key, scores = _key_scores()
    multi = pl.concat([scores.with_columns(system=pl.lit("s1")),
                       scores.head(2).with_columns(system=pl.lit("s2"))])
    rep = alignment_report(key, multi)
    assert rep.n_missing == 3  # b/z for s1; b/x and b/z for s2 (per system)
    assert rep.examples["missing"] == ["b/x/s2", "b/z/s1", "b/z/s2"]
    out = align(key, multi, missing="drop", extra="drop").collect()
    assert sorted(out["system"].unique()) == ["s1", "s2"]


def test_alignment_scales_lazily():
    n = 200_000
    ids = pl.int_range(n, eager=True).cast(pl.String)
    key = pl.LazyFrame({"model": ids, "segment": ids, "label": np.arange(n) % 10 == 0})
    sc = pl.LazyFrame({"model": ids, "segment": ids, "score": np.zeros(n)})
    out = align(key, sc)
    assert isinstance(out, pl.LazyFrame) and out.select(pl.len()).collect().item() == n


@pytest.mark.parametrize("sql_file", sorted(p.name for p in QUERIES.glob("*.sql")))
def test_example_queries_run(sql_file, synth_ds):
    dataset = (REAL / "ru2009_evalita" / "ru2009_evalita.parquet"
               if "evalita" in sql_file else synth_ds)
    df = query((QUERIES / sql_file).read_text(), dataset)
    assert df.height > 0
    if sql_file == "per_gender_counts.sql":
        truth = scan_trials(synth_ds).group_by("system", "gender").agg(
            pl.col("label").sum()).sort("system", "gender").collect()
        assert df["n_tar"].to_list() == truth["label"].to_list()
    if sql_file == "evalita_partitions.sql":
        stats = json.loads((REAL / "ru2009_evalita" / "stats.json").read_text())
        assert df["n_tar"].to_list() == [r["targets"] for r in stats["by_condition"]]
        assert df["n_non"].to_list() == [r["nontargets"] for r in stats["by_condition"]]
    if sql_file == "top_nontargets.sql":
        assert (~df["score"].is_null()).all() and df.height == 60


@pytest.mark.parametrize("predicate", [
    "gender = 'f' AND channel = 'tel' AND system = 'sys1'",
    "duration IN ('short', 'long') AND score > 0.5",
    "NOT label AND score > 3",
    "(channel = 'mic' OR gender = 'm') AND system <> 'sys3'",
])
def test_polars_and_duckdb_slices_agree(predicate, synth_ds):
    cols = "model, segment, system, score, label, gender, channel, duration"
    duck = query(f"select {cols} from trials where {predicate} order by system, model, segment",
                 synth_ds)
    pol = (scan_trials(synth_ds, where=predicate).select([c.strip() for c in cols.split(",")])
           .sort("system", "model", "segment").collect())
    assert duck.height > 0
    assert duck.equals(pol)


def test_bad_where_predicate(synth_ds):
    with pytest.raises(ScoreframeError, match="--where"):
        scan_trials(synth_ds, where="nosuchcolumn = 1")


def _stats(name: str) -> dict:
    return json.loads((REAL / name / "stats.json").read_text())


def test_real_ru2009_raw_import_matches_parquet_and_readme():
    st = _stats("ru2009_evalita")
    raw = read_table(REAL / "ru2009_evalita" / "raw" / "ru.2009.table.gz",
                     columns={"model": "model", "segment": "test", "score": "score",
                              "label": "target"},
                     trial_id=["model", "mcond", "segment"])
    assert raw.height == st["rows"]
    assert raw["label"].sum() == st["targets"]
    norm = pl.read_parquet(REAL / "ru2009_evalita" / "ru2009_evalita.parquet")
    assert raw["score"].to_list() == norm["score"].to_list()
    assert raw["label"].to_list() == norm["label"].to_list()
    with pytest.raises(SchemaError, match="duplicate trials"):
        read_table(REAL / "ru2009_evalita" / "raw" / "ru.2009.table.gz",
                   columns={"segment": "test", "label": "target"})
    counts = (raw.group_by("mcond", "tcond").agg(pl.col("label").sum().alias("t"),
                                                 (~pl.col("label")).sum().alias("n"))
              .sort("mcond", "tcond"))
    assert counts["t"].to_list() == [r["targets"] for r in st["by_condition"]]


@pytest.mark.parametrize("name", ["fvcaus_plda", "asvspoof5_fusion_dev"])
def test_real_parquet_counts(name):
    st = _stats(name)
    df = scan_trials(REAL / name / f"{name}.parquet", check_data=True).collect()
    assert df.height == st["rows"]
    if name == "fvcaus_plda":
        assert df["label"].sum() == st["targets"]
        assert (~df["label"]).sum() == st["nontargets"]
    else:
        got = (df.group_by("system", "condition").agg(pl.col("label").sum().alias("t"),
                                                      (~pl.col("label")).sum().alias("n"))
               .sort("system", "condition"))
        exp = st["by_system_condition"]
        assert got["t"].to_list() == [r["targets"] for r in exp]
        assert got["n"].to_list() == [r["nontargets"] for r in exp]


# ---------------------------------------------------------------- invariances ----------------

def test_partitioned_and_single_file_read_the_same(tmp_path, synth_ds):
    """The same trials as one file, as a hive dataset and in shuffled order read identically."""
    df = scan_trials(synth_ds).collect()
    cols = df.columns
    write_trials(df, tmp_path / "one.parquet")
    write_trials(df.sample(fraction=1.0, shuffle=True, seed=1), tmp_path / "shuffled",
                 partition_by=["gender"], chunk_rows=7_000)
    key = ["system", "model", "segment"]
    a = read_trials(tmp_path / "one.parquet").select(cols).sort(key)
    b = read_trials(tmp_path / "shuffled").select(cols).sort(key)
    assert a.equals(df.sort(key)) and b.equals(df.sort(key))
    assert query("select count(*) as n from trials", tmp_path / "shuffled")["n"][0] == df.height


@pytest.mark.parametrize("fmt,suffix", [("bosaris-txt", ".txt"), ("kaldi", ".trials"),
                                        ("csv", ".csv"), ("tsv", ".tsv"), ("nist", ".tsv"),
                                        ("bosaris-h5", ".h5")])
def test_text_and_hdf5_readers_are_order_invariant(tmp_path, fmt, suffix):
    """A file and the same file with its trials shuffled hold the same trials."""
    from scoreframe import io as sio

    df = pl.concat(synth_chunks(3_000, n_systems=1, seed=5)).select(
        "model", "segment", "score", "label")
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=2)
    for kind in ("key", "scores"):
        sio.write_any(df, tmp_path / f"a_{kind}{suffix}", fmt=fmt, kind=kind)
        sio.write_any(shuffled, tmp_path / f"b_{kind}{suffix}", fmt=fmt, kind=kind)
        a = sio.read_any(tmp_path / f"a_{kind}{suffix}", fmt=fmt, kind=kind)
        b = sio.read_any(tmp_path / f"b_{kind}{suffix}", fmt=fmt, kind=kind)
        cols = ["model", "segment", "label" if kind == "key" else "score"]
        assert a.select(cols).sort(cols[:2]).equals(b.select(cols).sort(cols[:2]))
        assert a.select(cols).sort(cols[:2]).equals(df.select(cols).sort(cols[:2]))
