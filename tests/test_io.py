"""Readers and writers: round trips, BOSARIS fixtures, malformed files."""

from __future__ import annotations

import gzip
import json

import h5py
import numpy as np
import polars as pl
import pytest
from conftest import BOSARIS

from scoreframe import io as sio
from scoreframe.errors import FormatError, SchemaError, ScoreframeError

KNS = BOSARIS / "kns"
KNS_EXPECTED = json.loads((KNS / "expected.json").read_text())


def _sorted(df: pl.DataFrame) -> pl.DataFrame:
    return df.sort("model", "segment")


def _dense(df: pl.DataFrame, value: str) -> np.ndarray:
    """Long table -> model x segment matrix over the kns name sets."""
    models, segs = KNS_EXPECTED["key"]["modelset"], KNS_EXPECTED["key"]["segset"]
    out = np.full((len(models), len(segs)), np.nan if value == "score" else 0.0)
    for row in df.iter_rows(named=True):
        i, j = models.index(row["model"]), segs.index(row["segment"])
        out[i, j] = row[value] if value == "score" else (1.0 if row.get(value, True) else -1.0)
    return out


def test_kns_text_matches_bosaris_read():
    key = sio.read_key_txt(KNS / "key.txt")
    e = KNS_EXPECTED["key"]
    dense = _dense(key, "label")
    assert ((dense == 1) == np.array(e["tar"])).all()
    assert ((dense == -1) == np.array(e["non"])).all()
    ndx = sio.read_ndx_txt(KNS / "ndx.txt")
    mask = ~np.isnan(np.where(_dense(ndx.with_columns(label=pl.lit(True)), "label") == 0,
                              np.nan, 1))
    assert (mask == np.array(KNS_EXPECTED["ndx"]["trialmask"])).all()
    scores = sio.read_scores_txt(KNS / "scores.txt")
    sm = _dense(scores, "score")
    exp = np.array(KNS_EXPECTED["scores"]["scoremat"], dtype=float)
    present = np.array(KNS_EXPECTED["scores"]["scoremask"])
    np.testing.assert_allclose(sm[present], exp[present], rtol=1e-15)
    assert (~np.isnan(sm) == present).all()


def test_kns_get_tar_non():
    from scoreframe.frames.align import align

    trials = align(sio.read_key_txt(KNS / "key.txt"), sio.read_scores_txt(KNS / "scores.txt"))
    df = trials.collect()
    tar = sorted(df.filter("label")["score"].to_list())
    non = sorted(df.filter(~pl.col("label"))["score"].to_list())
    np.testing.assert_allclose(tar, sorted(KNS_EXPECTED["get_tar_non"]["tar"]), rtol=1e-15)
    np.testing.assert_allclose(non, sorted(KNS_EXPECTED["get_tar_non"]["non"]), rtol=1e-15)


def test_bosaris_saved_text_files_read_back_equal():
    """What BOSARIS save_txt wrote (other order, 6 decimals) reads as the same trials."""
    assert _sorted(sio.read_key_txt(KNS / "saved_key.txt")).equals(
        _sorted(sio.read_key_txt(KNS / "key.txt")))
    assert _sorted(sio.read_ndx_txt(KNS / "saved_ndx.txt")).equals(
        _sorted(sio.read_ndx_txt(KNS / "ndx.txt")))
    a = _sorted(sio.read_scores_txt(KNS / "saved_scores.txt"))
    b = _sorted(sio.read_scores_txt(KNS / "scores.txt"))
    np.testing.assert_allclose(a["score"], b["score"], atol=5e-7)


@pytest.mark.parametrize("kind,name", [("key", "key.txt"), ("ndx", "ndx.txt"),
                                       ("scores", "scores.txt")])
@pytest.mark.parametrize("fmt", ["bosaris-txt", "bosaris-h5", "kaldi", "parquet", "csv", "nist"])
def test_round_trip(tmp_path, kind, name, fmt):
    df = sio.read_text_trials(KNS / name, kind)
    if fmt == "nist" and kind == "ndx":
        pytest.skip("NIST files hold keys and system outputs, not bare trial lists")
    ext = {"bosaris-h5": ".h5", "parquet": ".parquet", "csv": ".csv", "nist": ".tsv"}.get(
        fmt, ".txt")
    path = tmp_path / f"out{ext}"
    sio.write_any(df, path, fmt=fmt, kind=kind)
    back = sio.read_any(path, fmt=fmt, kind=kind)
    assert _sorted(back.select(df.columns)).equals(_sorted(df))


def test_hdf5_layout_matches_bosaris_save_inputs(tmp_path):
    key = sio.read_key_txt(KNS / "key.txt")
    sio.write_bosaris_hdf5(key, tmp_path / "k.h5", "key")
    ndx = sio.read_ndx_txt(KNS / "ndx.txt")
    sio.write_bosaris_hdf5(ndx, tmp_path / "n.h5", "ndx")
    sc = sio.read_scores_txt(KNS / "scores.txt")
    sio.write_bosaris_hdf5(sc, tmp_path / "s.h5", "scores")
    e = KNS_EXPECTED["save_hdf5_inputs"]
    with h5py.File(tmp_path / "k.h5") as f:
        assert f["trial_mask"].dtype == np.int8
        assert f["trial_mask"][()].tolist() == e["key_trial_mask_int8"]
        assert f["file_format"][()][0] == b"2.0"
        assert [x.decode() for x in f["ID/row_ids"][()]] == KNS_EXPECTED["key"]["modelset"]
        assert [x.decode() for x in f["ID/column_ids"][()]] == KNS_EXPECTED["key"]["segset"]
    with h5py.File(tmp_path / "n.h5") as f:
        assert f["trial_mask"].dtype == np.uint8
        assert f["trial_mask"][()].tolist() == e["ndx_trial_mask_uint8"]
    with h5py.File(tmp_path / "s.h5") as f:
        assert f["score_mask"][()].tolist() == e["scores_score_mask_uint8"]
        assert f["scores"].dtype == np.float64


def _write_h5(path, **datasets):
    with h5py.File(path, "w") as f:
        for name, value in datasets.items():
            f.create_dataset(name.replace("__", "/"), data=value)


def test_hdf5_old_key_layout_and_string_shapes(tmp_path):
    vlen = h5py.string_dtype()
    models = np.array([["m1"], ["m2"]], dtype=object)  # (n, 1) variable-length strings
    segs = np.array([[b"s1", b"s2", b"s3"]], dtype="S2")  # (1, n) fixed-length
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("target_mask", data=np.array([[1, 0, 0], [0, 1, 0]], dtype=np.uint8))
        f.create_dataset("nontarget_mask", data=np.array([[0, 1, 1], [1, 0, 0]], np.uint8))
        f.create_dataset("ID/row_ids", data=models, dtype=vlen)
        f.create_dataset("ID/column_ids", data=segs)
    df = sio.read_bosaris_hdf5(path)
    assert df.height == 5
    assert _sorted(df).rows() == [("m1", "s1", True), ("m1", "s2", False), ("m1", "s3", False),
                                  ("m2", "s1", False), ("m2", "s2", True)]


def test_hdf5_mismatched_mask_shape(tmp_path):
    path = tmp_path / "bad.h5"
    _write_h5(path, trial_mask=np.ones((2, 2), dtype=np.int8),
              ID__row_ids=np.array([b"a", b"b", b"c"]), ID__column_ids=np.array([b"x", b"y"]))
    with pytest.raises(FormatError, match=r"does not match the name lists.*\(3, 2\).*\(2, 2\)"):
        sio.read_bosaris_hdf5(path)


def test_hdf5_truncated_file(tmp_path):
    key = sio.read_key_txt(KNS / "key.txt")
    good = tmp_path / "k.h5"
    sio.write_bosaris_hdf5(key, good, "key")
    bad = tmp_path / "trunc.h5"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(FormatError, match="trunc.h5"):
        sio.read_bosaris_hdf5(bad)
    noth5 = tmp_path / "x.h5"
    noth5.write_text("hello")
    with pytest.raises(FormatError, match="cannot open HDF5"):
        sio.read_bosaris_hdf5(noth5)


def test_hdf5_missing_dataset(tmp_path):
    path = tmp_path / "m.h5"
    _write_h5(path, trial_mask=np.ones((1, 1), dtype=np.uint8), ID__row_ids=np.array([b"a"]))
    with pytest.raises(FormatError, match="missing dataset `/ID/column_ids`"):
        sio.read_bosaris_hdf5(path)


@pytest.mark.parametrize("content,match", [
    ("m1 s1 target\nm1 s2\n", r"line 2: ragged .*: expected 3 fields"),
    ("m1 s1 target\nm1 s2 target extra\n", r"line 2"),
    ("m1 s1 maybe\n", r"label.*'maybe'"),
    ("", r"no key rows"),
])
def test_malformed_text_key(tmp_path, content, match):
    p = tmp_path / "k.txt"
    p.write_text(content)
    with pytest.raises(ScoreframeError, match=match):
        sio.read_key_txt(p)


def test_malformed_text_scores(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("m1 s1 0.5\nm1 s2 nan\n")
    with pytest.raises(SchemaError, match=r"s\.txt`: .*NaN.*line\(s\) 2"):
        sio.read_scores_txt(p)
    p.write_text("m1 s1 0.5\nm1 s2 abc\n")
    with pytest.raises(FormatError,
                       match=r"s\.txt` line 2: bad score.*: expected a number; got 'abc'"):
        sio.read_scores_txt(p)
    p.write_text("m1 s1 0.5\nm1 s1 0.7\n")
    with pytest.raises(SchemaError, match="duplicate trials"):
        sio.read_scores_txt(p)


def test_text_labels_case_and_whitespace(tmp_path):
    p = tmp_path / "k.txt"
    p.write_text("m1\ts1   TARGET\n\n  m1 s2 NonTarget  \n")
    assert sio.read_key_txt(p).rows() == [("m1", "s1", True), ("m1", "s2", False)]


def test_nist_key_and_scores(tmp_path):
    key = tmp_path / "key.tsv"
    key.write_text("modelid\tsegmentid\tside\ttargettype\tgender\tphone_num_match\n"
                   "1001\tseg_a\ta\ttarget\tf\tY\n1001\tseg_b\ta\tnontarget\tf\tN\n")
    out = tmp_path / "sys.tsv"
    out.write_text("modelid\tsegmentid\tside\tLLR\n1001\tseg_a\ta\t2.5\n1001\tseg_b\ta\t-1\n")
    k = sio.read_nist_key(key)
    assert k.columns[:2] == ["model", "segment"] and "phone_num_match" in k.columns
    assert k["model"].dtype == pl.String and k["label"].to_list() == [True, False]
    s = sio.read_nist_scores(out)
    assert s["score"].to_list() == [2.5, -1.0]
    assert sio.read_any(out, fmt="nist")["score"].to_list() == [2.5, -1.0]
    sio.write_nist_scores(s, tmp_path / "w.tsv")
    assert sio.read_nist_scores(tmp_path / "w.tsv").equals(s)
    assert (tmp_path / "w.tsv").read_text().splitlines()[0] == "modelid\tsegmentid\tside\tLLR"
    bad = tmp_path / "bad.tsv"
    bad.write_text("model\tsegment\tLLR\nx\ty\t1\n")
    with pytest.raises(FormatError, match="missing NIST scores column"):
        sio.read_nist_scores(bad)


def test_kaldi_trials_and_scores(tmp_path):
    t = tmp_path / "trials"
    t.write_text("spk1-utt1 spk1-utt2 target\nspk1-utt1 spk2-utt1 nontarget\n")
    s = tmp_path / "scores"
    s.write_text("spk1-utt1 spk1-utt2 12.5\nspk1-utt1 spk2-utt1 -3.25\n")
    assert sio.guess_format(t) == "kaldi"
    assert sio.read_kaldi_trials(t)["label"].to_list() == [True, False]
    assert sio.read_kaldi_scores(s)["score"].to_list() == [12.5, -3.25]
    assert sio.read_any(s, fmt="kaldi")["score"].to_list() == [12.5, -3.25]


def test_generic_csv_with_mapping(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("enroll,test,llr,is_target,cond\na,x,1.5,1,c1\na,y,-2,0,c2\n")
    df = sio.read_table(p, columns={"model": "enroll", "segment": "test", "score": "llr",
                                    "label": "is_target"})
    assert df.columns == ["model", "segment", "score", "label", "cond"]
    assert df["label"].to_list() == [True, False]
    with pytest.raises(FormatError, match="missing mapped column"):
        sio.read_table(p, columns={"model": "nope", "segment": "test"})
    p2 = tmp_path / "t2.csv"
    p2.write_text("model,segment,score,label\na,x,1.5,2\n")
    with pytest.raises(SchemaError, match=r"t2\.csv`: .*label.*2 \(line 2\)"):
        sio.read_table(p2)


def test_gzip_tsv(tmp_path):
    p = tmp_path / "t.tsv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("model\tsegment\tscore\tlabel\na\tx\t1.0\ttrue\n")
    assert sio.read_table(p).height == 1


def test_guess_format_errors(tmp_path):
    with pytest.raises(FormatError, match="cannot tell the format"):
        sio.guess_format(tmp_path / "file.xyz")


# ---------------------------------------------------------------- writes ---------------------

def test_write_all_is_all_or_nothing(tmp_path):
    """An existing second target is refused before any work: the first is not written."""
    from scoreframe.io.atomic import is_temp_name

    df = sio.read_text_trials(KNS / "key.txt", "key").join(
        sio.read_text_trials(KNS / "scores.txt", "scores"), on=["model", "segment"])
    (tmp_path / "s.txt").write_text("precious\n")
    jobs = [(df, tmp_path / "k.txt", "bosaris-txt", "key"),
            (df, tmp_path / "s.txt", "bosaris-txt", "scores")]
    with pytest.raises(ScoreframeError, match=r"s\.txt`: the output already exists"):
        sio.write_all(jobs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]
    assert (tmp_path / "s.txt").read_text() == "precious\n"
    # a failure in the middle of the second write: neither target appears, no temporary left
    bad = [(df, tmp_path / "k.txt", "bosaris-txt", "key"),
           (df.drop("score"), tmp_path / "s2.txt", "bosaris-txt", "scores")]
    with pytest.raises(FormatError, match=r"s2\.txt`: cannot write a scores file"):
        sio.write_all(bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]
    assert not any(is_temp_name(p.name) for p in tmp_path.iterdir())
    sio.write_all(jobs, overwrite=True)
    assert _sorted(sio.read_scores_txt(tmp_path / "s.txt")).equals(
        _sorted(sio.read_scores_txt(KNS / "scores.txt")))
    assert _sorted(sio.read_key_txt(tmp_path / "k.txt")).equals(
        _sorted(sio.read_key_txt(KNS / "key.txt")))


def test_outputs_inside_inputs_are_refused(tmp_path):
    from scoreframe.errors import UsageError
    from scoreframe.io.atomic import atomic_output

    ds = tmp_path / "ds"
    sio.write_trials(sio.read_key_txt(KNS / "key.txt"), ds)
    with pytest.raises(UsageError, match="inside an input"):
        with atomic_output(ds / "chart.png", inputs=[ds]):
            pass
    with pytest.raises(UsageError, match="inside an input"):
        with atomic_output(ds, inputs=[ds], overwrite=True):
            pass
    assert sorted(p.name for p in ds.iterdir()) == ["part-00000.parquet"]


def test_write_trials_validates_and_marks(tmp_path):
    from scoreframe.io.parquet import MARK_KEY, dataset_validated, validation_mark

    df = pl.DataFrame({"model": ["a", "a", "b"], "segment": ["x", "y", "x"],
                       "score": [1, 2, 3], "label": ["target", "nontarget", "1"]})
    sio.write_trials(df, tmp_path / "t.parquet")
    back = pl.read_parquet(tmp_path / "t.parquet")
    assert back.schema["label"] == pl.Boolean and back.schema["score"] == pl.Float64
    assert dataset_validated(tmp_path / "t.parquet")
    import pyarrow.parquet as pq

    mark = json.loads(pq.read_metadata(tmp_path / "t.parquet").metadata[MARK_KEY.encode()])
    assert mark["validated"] is True and mark["version"] == 1
    assert mark["id_columns"] == ["model", "segment"]
    # duplicates (eager), across chunks (streamed) and across partitions are refused
    dup = pl.concat([df, df.head(1)])
    for kwargs in ({}, {"chunk_rows": 2}, {"partition_by": ["model"]}):
        with pytest.raises(SchemaError, match="duplicate trials"):
            sio.write_trials(dup, tmp_path / "dup", **kwargs)
        assert not (tmp_path / "dup").exists()
    with pytest.raises(SchemaError, match="duplicate trials"):
        sio.write_trials(iter([df, df.head(1)]), tmp_path / "dup.parquet")
    with pytest.raises(SchemaError, match="outside the accepted spellings"):
        sio.write_trials(df.with_columns(label=pl.lit("yes")), tmp_path / "bad.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]
    # validate=False writes as given, without the mark
    sio.write_trials(dup, tmp_path / "raw.parquet", validate=False)
    assert not dataset_validated(tmp_path / "raw.parquet")
    # a partitioned dataset is validated only while every file carries the same write's mark
    sio.write_trials(df, tmp_path / "ds", partition_by=["model"])
    assert dataset_validated(tmp_path / "ds")
    assert validation_mark(tmp_path / "ds")["id_columns"] == ["model", "segment"]
    df.head(1).with_columns(segment=pl.lit("z")).drop("model").write_parquet(
        tmp_path / "ds" / "model=a" / "extra.parquet")
    assert not dataset_validated(tmp_path / "ds")
    assert not dataset_validated(tmp_path / "nothing-here")


def test_marked_dataset_is_not_rechecked_unmarked_is(tmp_path):
    df = pl.DataFrame({"model": ["a", "a"], "segment": ["x", "x"], "score": [1.0, 2.0],
                       "label": [True, False]})
    sio.write_trials(df, tmp_path / "raw.parquet", validate=False)
    with pytest.raises(SchemaError, match="duplicate trials"):
        sio.read_trials(tmp_path / "raw.parquet")


def test_hdf5_export_is_chunked_compressed_and_sparse(tmp_path):
    """400 models, each scored on its own 50 segments (20000 in all): deflate chunks, and the
    chunks holding no trial are never stored (they read back as the fill value)."""
    rng = np.random.default_rng(3)
    n_models, per_model = 400, 50
    m = np.repeat(np.arange(n_models), per_model)
    seg = m * per_model + np.tile(np.arange(per_model), n_models)
    df = pl.DataFrame({"model": [f"m{i:03d}" for i in m], "segment": [f"s{j:05d}" for j in seg],
                       "score": rng.normal(size=m.size)})
    path = tmp_path / "s.h5"
    sio.write_bosaris_hdf5(df, path, "scores")
    n_cols = df["segment"].n_unique()
    with h5py.File(path) as f:
        for name in ("scores", "score_mask"):
            ds = f[name]
            assert ds.chunks is not None and ds.compression == "gzip"
            assert ds.compression_opts == 4
            assert ds.shape == (n_models, n_cols)
            total = -(-ds.shape[0] // ds.chunks[0]) * -(-ds.shape[1] // ds.chunks[1])
            assert 0 < ds.id.get_num_chunks() < total
        dense = f["scores"].size * 8
        assert f["scores"].id.get_storage_size() < dense / 4
    back = sio.read_bosaris_hdf5(path)
    assert _sorted(back).equals(_sorted(df))


def test_hdf5_export_states_and_limits_the_dense_size(tmp_path, caplog):
    df = pl.DataFrame({"model": ["m1", "m2"], "segment": ["s1", "s2"], "label": [True, False]})
    with caplog.at_level("INFO", logger="scoreframe.io.bosaris_hdf5"):
        sio.write_bosaris_hdf5(df, tmp_path / "k.h5", "key")
    assert "dense 2 models x 2 segments matrix of 4 B" in caplog.text
    with pytest.raises(ScoreframeError, match=r"too large.*2 models x 2 segments = 36 B"):
        sio.write_bosaris_hdf5(df.rename({"label": "score"}).with_columns(score=pl.lit(1.0)),
                               tmp_path / "s.h5", "scores", max_dense_bytes=10)
    assert not (tmp_path / "s.h5").exists()
    with pytest.raises(SchemaError, match="duplicate trials"):
        sio.write_bosaris_hdf5(pl.concat([df, df]), tmp_path / "d.h5", "key")


@pytest.mark.parametrize(("shape", "density"), [((7, 13), 0.02), ((40, 1001), 0.004),
                                                ((33, 65), 0.9), ((5, 3), 0.5), ((64, 800), 0.0)])
def test_hdf5_dense_masks_read_every_marked_cell(tmp_path, shape, density):
    """Twin of the word-at-a-time mask scan: the cells np.nonzero finds, with their scores,
    for sparse and dense one-byte masks holding any nonzero value, any row length."""
    rng = np.random.default_rng(shape[0] * shape[1])
    mask = np.where(rng.random(shape) < density, rng.choice([1, 2, 255], size=shape), 0)
    mask[-1, -1] = 2  # the last cell: past the last whole 8-byte word when the size is odd
    scores = rng.normal(size=shape)
    models = np.array([f"m{i}" for i in range(shape[0])], dtype="S")
    segs = np.array([f"s{j}" for j in range(shape[1])], dtype="S")
    path = tmp_path / "dense.h5"
    _write_h5(path, scores=scores, score_mask=mask.astype(np.uint8), ID__row_ids=models,
              ID__column_ids=segs)
    got = sio.read_bosaris_hdf5(path)
    i, j = np.nonzero(mask)
    assert got["model"].to_list() == [f"m{k}" for k in i]
    assert got["segment"].to_list() == [f"s{k}" for k in j]
    assert np.array_equal(got["score"].to_numpy(), scores[i, j])
    key = tmp_path / "key.h5"
    tar = (mask == 1).astype(np.uint8)
    _write_h5(key, target_mask=tar, nontarget_mask=((mask > 1).astype(np.uint8)),
              ID__row_ids=models, ID__column_ids=segs)
    got = sio.read_bosaris_hdf5(key)
    assert got["label"].to_list() == (mask[i, j] == 1).tolist()


def test_tables_infer_types_past_the_first_rows(tmp_path):
    """A score column of integers for 150 rows and then a fraction is read as numbers (types
    are inferred from the first rows, then from every row when a later value disagrees)."""
    lines = ["modelid\tsegmentid\tside\tLLR"]
    lines += [f"m{i}\ts{i}\ta\t{i % 7 - 3}" for i in range(150)] + ["m150\ts150\ta\t1.5"]
    path = tmp_path / "sys.tsv"
    path.write_text("\n".join(lines) + "\n")
    got = sio.read_nist_scores(path)
    assert got["score"].dtype == pl.Float64 and got["score"][-1] == 1.5
    assert got["score"].head(150).to_list() == [float(i % 7 - 3) for i in range(150)]
    csv = tmp_path / "t.csv"
    csv.write_text("model,segment,label,score,snr\n" + "".join(
        f"m{i},s{i},{'target' if i % 2 else 'nontarget'},{i},{i}\n" for i in range(150))
        + "m150,s150,target,0.25,high\n")
    got = sio.read_table(csv)
    assert got["score"][-1] == 0.25 and got["snr"][-1] == "high"


def test_tables_column_empty_at_first_then_numeric(tmp_path):
    """A column empty in the first rows and numeric later is read as numbers, not text."""
    csv = tmp_path / "t.csv"
    csv.write_text("model,segment,label,score,snr\n" + "".join(
        f"m{i},s{i},{'target' if i % 2 else 'nontarget'},{i},{'' if i < 150 else i}\n"
        for i in range(200)))
    got = sio.read_table(csv)
    assert got["snr"].dtype == pl.Int64 and got["snr"].null_count() == 150


def test_mapped_id_columns_keep_leading_zeros(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("enroll,test,llr\n0012,007,1.5\n0013,008,-1\n")
    got = sio.read_table(csv, columns={"model": "enroll", "segment": "test", "score": "llr"})
    assert got["model"].to_list() == ["0012", "0013"] and got["segment"][0] == "007"


def test_reader_messages_do_not_show_internal_columns(tmp_path):
    path = tmp_path / "k.tsv"
    path.write_text("modelid\tsegmentid\tLLRx\nm1\ts1\t1\n")
    with pytest.raises(FormatError) as err:
        sio.read_nist_key(path)
    assert "__" not in str(err.value) and "LLRx" in str(err.value)
    csv = tmp_path / "t.csv"
    csv.write_text("model,segment,score\nm1,s1,1\n")
    with pytest.raises(SchemaError) as err:
        sio.read_table(csv, trial_id=["model", "trial"])
    assert "__" not in str(err.value)


def test_nist_key_of_several_systems_is_refused(tmp_path):
    df = pl.DataFrame({"model": ["m", "m"], "segment": ["s", "s"], "label": [True, True],
                       "system": ["A", "B"]})
    with pytest.raises(FormatError, match="one system"):
        sio.write_nist_key(df, tmp_path / "k.tsv")
    assert not (tmp_path / "k.tsv").exists()


@pytest.mark.parametrize("gz", [False, True])
def test_nist_tsv_with_labels_and_scores_reads_as_trials(tmp_path, gz):
    text = "modelid\tsegmentid\ttargettype\tLLR\nm1\ts1\ttarget\t2.5\nm1\ts2\tnontarget\t-1\n"
    path = tmp_path / ("t.tsv.gz" if gz else "t.tsv")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    got = sio.read_any(path)
    assert got.select("model", "segment", "label", "score").rows() == [
        ("m1", "s1", True, 2.5), ("m1", "s2", False, -1.0)]


def test_header_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"model,segment,\x80score,label\nm0,s0,-0.8,0\nm0,s1,1.2,1\n")
    with pytest.raises(FormatError, match=r"t\.csv` line 1: invalid UTF-8"):
        sio.read_table(path)
