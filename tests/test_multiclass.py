"""Multiclass: Cmxe, Cavg, calibration and fusion (MATH.md 11-12 worked numbers, real data)."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from conftest import DATA, assert_close

from scoreframe.cli import main
from scoreframe.errors import ScoreframeError
from scoreframe.kernels import logreg
from scoreframe.kernels import multiclass as km
from scoreframe.models import load_model
from scoreframe.multiclass import (
    MulticlassCalibration,
    MulticlassFusion,
    cavg_sweep,
    evaluate_multiclass,
    read_scores,
)
from scoreframe.plots import cavg_sweep_plot

REAL = DATA / "real" / "multiclass"
W_M = np.array([[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
                [-1, 0, 1], [1, 0, 0]], dtype=float)
Y_M = np.repeat([0, 1, 2], 3)


def long(w: np.ndarray, y: np.ndarray, classes=("a", "b", "c"), prefix="t", **extra):
    n, k = w.shape
    sc = pl.DataFrame({"segment": [f"{prefix}{i}" for i in range(n) for _ in range(k)],
                       "class": list(classes) * n, "score": w.ravel(), **extra})
    tr = pl.DataFrame({"segment": [f"{prefix}{i}" for i in range(n)],
                       "class": [classes[j] for j in y]})
    return sc, tr


# --- kernels: example M (MATH.md 11.1, 12.2) ------------------------------------------------------
def test_cmxe_example_m():
    bits = -km.log_posteriors(W_M, np.full(3, 1 / 3))[np.arange(9), Y_M] / math.log(2)
    assert_close(bits, [.3456, 1.2436, 2.6863, .3456, 2.2383, 1.0945, .3456, .5881, 2.2383],
                 rtol=0, atol=1e-4)
    assert_close(km.cmxe(W_M, Y_M), 1.236188, rtol=0, atol=1e-6)
    p = np.array([.5, .3, .2])
    assert_close(km.cmxe(W_M, Y_M, p), 1.192504, rtol=0, atol=1e-6)
    assert_close(km.prior_entropy(p), 1.485475, rtol=0, atol=1e-6)
    # shift invariance; K = 2 with w = [l, 0] is Cllr (example A: 0.161516)
    assert_close(km.cmxe(W_M + 7.0, Y_M), km.cmxe(W_M, Y_M), rtol=1e-12)
    tar, non = np.array([1.0, 2, 5, 7]), np.array([-7.0, -5, -2, -1])
    llr = np.r_[tar, non]
    assert_close(km.cmxe(np.column_stack([llr, np.zeros(8)]), np.r_[np.zeros(4), np.ones(4)]
                         .astype(int)), 0.161516, rtol=0, atol=1e-6)
    # default system: log2 K
    assert_close(km.cmxe(np.zeros((9, 3)), Y_M), math.log2(3), rtol=1e-12)


def test_detection_llrs_and_cavg_example_m():
    s = km.detection_llrs(W_M)
    assert_close(s[0], [2, -1.433781, -1.433781], rtol=0, atol=1e-6)
    r = km.log_posteriors(W_M, np.full(3, 1 / 3))
    assert_close(r[0], [-0.239545, -2.239545, -2.239545], rtol=0, atol=1e-6)
    # s_k = logit(exp(r_k)) + log(K-1)
    assert_close(s, np.log(np.exp(r) / (1 - np.exp(r))) + math.log(2), rtol=1e-10)
    for p, value, norm in ((0.5, 1 / 3, 2 / 3), (0.2, 0.133333, 2 / 3), (0.8, 0.111111,
                                                                        0.555556)):
        c = km.cavg(s, Y_M, p)
        assert_close(c, value, rtol=0, atol=1e-6)
        assert_close(c / min(p, 1 - p), norm, rtol=0, atol=1e-6)
        assert km.min_cavg(s, Y_M, p)[0] <= c + 1e-15


def test_min_cavg_matches_a_threshold_scan():
    rng = np.random.default_rng(3)
    w = rng.normal(0, 1, (200, 4))
    y = rng.integers(0, 4, 200)
    w[np.arange(200), y] += 1.5
    s = km.detection_llrs(w)
    for p in (0.1, 0.5, 0.9):
        best = min(km.cavg(s, y, p, threshold=t) for t in np.r_[np.unique(s), np.inf])
        got, thr = km.min_cavg(s, y, p)
        assert_close(got, best, rtol=1e-12)
        assert_close(km.cavg(s, y, p, threshold=thr), got, rtol=1e-12)


def test_calibration_example_m_and_separable():
    fit = logreg.fit_affine([W_M], Y_M)
    assert fit.converged
    assert_close(fit.alpha, [0.995945], rtol=0, atol=1e-6)
    assert_close(fit.beta, [0.120138, 0.065432, 0.0], rtol=0, atol=1e-6)
    assert_close(fit.objective * math.log2(3), 1.234964, rtol=0, atol=1e-6)
    w2 = fit.alpha[0] * W_M + fit.beta
    s2 = km.detection_llrs(w2)
    for p, v in ((0.5, 0.333333), (0.2, 0.133333), (0.8, 0.144444)):
        assert_close(km.cavg(s2, Y_M, p), v, rtol=0, atol=1e-6)
    sep = np.tile(np.eye(3) * 5, (3, 1))
    fit = logreg.fit_affine([sep], np.tile([0, 1, 2], 3), max_iter=40)
    assert not fit.converged and fit.n_iter <= 40 and "infinity" in fit.message


def test_bayes_decisions_and_cost():
    p = np.full(3, 1 / 3)
    d = km.bayes_decisions(W_M, p)
    assert d.tolist() == np.argmax(W_M, axis=1).tolist()
    cost = np.array([[0, 1, 10], [1, 0, 1], [1, 1, 0]], dtype=float)
    dc = km.bayes_decisions(W_M, p, cost)
    post = np.exp(km.log_posteriors(W_M, p))
    brute = np.array([np.argmin([post[t] @ cost[:, j] for j in range(3)]) for t in range(9)])
    assert dc.tolist() == brute.tolist()
    v = km.expected_cost(Y_M, dc, p, cost)
    assert_close(v, np.mean([np.mean(cost[i, dc[Y_M == i]]) for i in range(3)]), rtol=1e-12)


# --- frames: evaluate, validation, calibration, fusion --------------------------------------------
def test_evaluate_multiclass_per_condition_and_json(tmp_path, capsys):
    sc, tr = long(W_M, Y_M)
    tr = tr.with_columns(half=pl.Series(["x", "y"] * 4 + ["x"]))
    res = evaluate_multiclass(sc, tr)
    row = res.row(0, named=True)
    assert_close(row["cmxe"], 1.236188, rtol=0, atol=1e-6)
    assert_close(row["info_bits"], math.log2(3) - row["cmxe"], rtol=1e-12)
    assert_close(row["error_rate"], km.expected_cost(Y_M, np.argmax(W_M, 1), np.full(3, 1 / 3)),
                 rtol=1e-12)
    by = evaluate_multiclass(sc, tr, by="half", p_target=[0.5, 0.1])
    assert by["half"].to_list() == ["x", "y"] and by["n_segments"].sum() == 9
    assert len(by["cavg_by_p"][0]) == 2
    sc.write_parquet(tmp_path / "s.parquet")
    tr.write_parquet(tmp_path / "t.parquet")
    assert main(["multiclass", "evaluate", str(tmp_path / "s.parquet"), "--truth",
                 str(tmp_path / "t.parquet"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    g = doc["groups"][0]
    assert {"cmxe", "cavg", "error_rate"} <= set(g)


def test_lre22_and_wide_readers(tmp_path):
    wide = pl.DataFrame({"segmentid": [f"t{i}" for i in range(9)], "eng": W_M[:, 0],
                         "fra": W_M[:, 1], "zul": W_M[:, 2]})
    wide.write_csv(tmp_path / "sys.tsv", separator="\t")
    truth = pl.DataFrame({"segmentid": [f"t{i}" for i in range(9)],
                          "language_code": [("eng", "fra", "zul")[j] for j in Y_M]})
    truth.write_csv(tmp_path / "key.tsv", separator="\t")
    sc = read_scores(tmp_path / "sys.tsv")
    assert sc.columns[:4] == ["segment", "class", "score"] or set(sc.columns) >= {
        "segment", "class", "score"}
    res = evaluate_multiclass(tmp_path / "sys.tsv", tmp_path / "key.tsv")
    assert_close(res["cmxe"][0], 1.236188, rtol=0, atol=1e-6)


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda sc, tr: (sc.slice(1), tr), "every class"),
    (lambda sc, tr: (pl.concat([sc, sc.head(1)]), tr), "duplicate"),
    (lambda sc, tr: (sc, tr.slice(1)), "no truth"),
    (lambda sc, tr: (sc, pl.concat([tr, tr.head(1)])), "more than once"),
    (lambda sc, tr: (sc, tr.with_columns(pl.lit("zzz").alias("class"))), "outside"),
])
def test_multiclass_validation_errors(mutate, match):
    sc, tr = mutate(*long(W_M, Y_M))
    with pytest.raises(ScoreframeError, match=match):
        evaluate_multiclass(sc, tr)


def halves(name: str, system: str | None = None):
    sc = pl.read_parquet(REAL / name / f"{name}_scores.parquet").drop("log_posterior")
    tr = pl.read_parquet(REAL / name / f"{name}_truth.parquet")
    if system is not None:
        sc = sc.filter(pl.col("system") == system)
        tr = tr.filter(pl.col("system") == system)
    segs = tr["segment"].to_list()
    rng = np.random.default_rng(0)
    first = set(rng.permutation(segs)[: len(segs) // 2].tolist())
    a = pl.col("segment").is_in(list(first))
    return (sc.filter(a), tr.filter(a)), (sc.filter(~a), tr.filter(~a))


@pytest.mark.parametrize(("name", "system"), [("iemocap_w2v2", None), ("agnews_gpt2", None),
                                               ("cifar10", "resnet-20"),
                                               ("cifar10", "repvgg_a2"),
                                               ("cifar10", "vgg19_bn")])
def test_calibration_on_one_half_lowers_cmxe_on_the_other(name, system):
    (dev_s, dev_t), (ev_s, ev_t) = halves(name, system)
    cal = MulticlassCalibration().fit(dev_s, dev_t)
    assert cal.training["converged"]
    before = evaluate_multiclass(ev_s, ev_t)["cmxe"][0]
    after = evaluate_multiclass(cal.transform(ev_s).collect().drop("score_raw"), ev_t)
    assert after["cmxe"][0] < before, (name, system, before, after["cmxe"][0])
    back = load_model(cal.to_dict())
    assert_close(back.transform(ev_s).collect()["score"].to_numpy(),
                 cal.transform(ev_s).collect()["score"].to_numpy(), rtol=1e-15)


def test_fusion_recovers_the_known_best_combination():
    """Two systems = true log-likelihoods plus independent noise: the optimal fusion weighs
    them by their precisions; scoreframe's fit gets close and beats both systems."""
    rng = np.random.default_rng(7)
    n, k = 6000, 4
    y = rng.integers(0, k, n)
    truth_ll = rng.normal(0, 1, (n, k))
    truth_ll[np.arange(n), y] += 2.0
    a = truth_ll + rng.normal(0, 0.5, (n, k))
    b = truth_ll + rng.normal(0, 1.0, (n, k))
    classes = ("c0", "c1", "c2", "c3")
    sa, tr = long(a, y, classes)
    sb, _ = long(b, y, classes)
    fus = MulticlassFusion().fit({"a": sa, "b": sb}, tr)
    assert fus.training["converged"]
    wa, wb = fus.weights["a"], fus.weights["b"]
    assert wa > wb > 0 and 2.5 < wa / wb < 6  # precision ratio 1/0.25 : 1/1 = 4
    fused = fus.transform({"a": sa, "b": sb}).collect()
    res = evaluate_multiclass(fused.select("segment", "class", "score"), tr)["cmxe"][0]
    assert res < min(evaluate_multiclass(sa, tr)["cmxe"][0],
                     evaluate_multiclass(sb, tr)["cmxe"][0])
    with pytest.raises(ScoreframeError, match="same"):
        MulticlassFusion().fit({"a": sa, "b": sb.slice(4)}, tr)


def test_cavg_sweep_and_chart():
    sc, tr = long(W_M, Y_M)
    sw = cavg_sweep(sc, tr, prior_log_odds=[-1.0, 0.0, 1.0])
    assert sw.columns[-3:] == ["actual", "calibrated", "minimum"]
    assert_close(sw.filter(pl.col("prior_log_odds") == 0.0)["actual"][0], 2 / 3, rtol=1e-12)
    assert (sw["minimum"] <= sw["actual"] + 1e-12).all()
    spec = cavg_sweep_plot(sw).to_dict()
    assert spec["mark"]["type"] == "line"


def test_multiclass_cli_train_apply(tmp_path, capsys):
    (dev_s, dev_t), (ev_s, ev_t) = halves("iemocap_w2v2")
    for n, f in (("dev_s", dev_s), ("dev_t", dev_t), ("ev_s", ev_s), ("ev_t", ev_t)):
        f.write_parquet(tmp_path / f"{n}.parquet")
    model = tmp_path / "m.json"
    assert main(["multiclass", "calibrate", "train", str(tmp_path / "dev_s.parquet"),
                 "--truth", str(tmp_path / "dev_t.parquet"), "-o", str(model)]) == 0
    assert json.loads(model.read_text())["method"] == "multiclass_affine"
    out = tmp_path / "cal.parquet"
    assert main(["multiclass", "calibrate", "apply", str(model), str(tmp_path / "ev_s.parquet"),
                 "--truth", str(tmp_path / "ev_t.parquet"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "before" in text and "after" in text
    assert {"score", "score_raw"} <= set(pl.read_parquet(out).columns)
    # fusion of two aligned copies with different noise, through the CLI
    rng = np.random.default_rng(1)
    noisy = dev_s.with_columns(pl.col("score") + rng.normal(0, 1, dev_s.height))
    noisy.write_parquet(tmp_path / "noisy.parquet")
    fm = tmp_path / "f.json"
    assert main(["multiclass", "fuse", "train", str(tmp_path / "dev_s.parquet"),
                 str(tmp_path / "noisy.parquet"), "--truth", str(tmp_path / "dev_t.parquet"),
                 "-o", str(fm)]) == 0
    assert set(json.loads(fm.read_text())["weights"]) == {"dev_s", "noisy"}
    assert main(["multiclass", "evaluate", str(tmp_path / "dev_s.parquet"), "--truth",
                 str(tmp_path / "nothere.parquet")]) == 2
    assert "nothere" in capsys.readouterr().err
