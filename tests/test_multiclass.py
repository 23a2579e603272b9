"""Multiclass: Cmxe, Cavg, calibration and fusion (docs/math.md §11-12 examples, real data)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from conftest import DATA, assert_close
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from scoreframe.errors import AlignmentError, FormatError, ScoreframeError, ValidationError
from scoreframe.estimators.models import load_model
from scoreframe.io.multiclass import (
    read_lre22_key,
    read_lre22_scores,
    read_multiclass_scores,
    read_multiclass_truth,
)
from scoreframe.kernels import logreg
from scoreframe.kernels import multiclass as km
from scoreframe.multiclass import (
    MulticlassCalibration,
    MulticlassFusion,
    cavg_sweep,
    evaluate_multiclass,
    read_scores,
    read_truth,
    score_matrices,
)
from scoreframe.multiclass import data as legacy_data
from scoreframe.views.plots import cavg_sweep_plot

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


# --- kernels: example M (docs/math.md §11.1, 12.2) ------------------------------------------------
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
        assert got == best  # both are the correctly rounded values of their counts
        assert km.cavg(s, y, p, threshold=thr) == got


def fraction_cavg(s, y, p, thr):
    """Exact Cavg by its definition (docs/math.md §12.1), one (trial, detector) pair at a time."""
    n, k = s.shape
    counts = np.bincount(y, minlength=k)
    p = Fraction(p)
    total = Fraction(0)
    for t in range(n):
        for j in range(k):
            accept = s[t, j] >= thr
            if y[t] == j and not accept:
                total += p / k / int(counts[y[t]])
            elif y[t] != j and accept:
                total += (1 - p) / (k * (k - 1)) / int(counts[y[t]])
    return total


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 5), st.integers(0, 12),
       st.sampled_from([0.5, 0.1, 1 / 3, 0.9, 0.01, 0.73]))
def test_cavg_is_the_exact_rational_of_the_counts(seed, k, extra, p):
    """Twin with ``fractions.Fraction``: actual and minimum Cavg equal the exact value of their
    counts rounded once (``==``, to the last bit), on unbalanced classes with tied scores."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.arange(k), rng.integers(0, k, extra)]
    w = np.round(rng.normal(0, 1, (y.size, k)) * 2) / 2  # coarse: many ties
    w[np.arange(y.size), y] += 1.0
    s = km.detection_llrs(w)
    thresholds = np.r_[np.unique(s), np.inf]
    exact = [fraction_cavg(s, y, p, t) for t in thresholds]
    best = min(exact)
    curve = km.cavg_curve(s, y, [p])
    assert curve.minimum[0] == float(best)
    assert fraction_cavg(s, y, p, curve.threshold[0]) == best
    assert curve.actual[0] == float(fraction_cavg(s, y, p, -math.log(p / (1 - p))))
    assert km.cavg(s, y, p, threshold=0.25) == float(fraction_cavg(s, y, p, 0.25))


def test_cavg_exact_where_representable():
    """Two classes of 4 trials: every Cavg is a multiple of 1/32, exactly representable."""
    s = np.array([[3.0, -3.0], [1.0, -1.0], [-0.5, 0.5], [-2.0, 2.0],
                  [-3.0, 3.0], [0.5, -0.5], [-1.0, 1.0], [2.0, -2.0]])
    y = np.repeat([0, 1], 4)
    c = km.cavg_curve(s, y, [0.5, 0.25])
    for i, p in enumerate((0.5, 0.25)):
        exact = [fraction_cavg(s, y, p, t) for t in np.r_[np.unique(s), np.inf]]
        assert c.minimum[i] == float(min(exact))
        assert c.actual[i] == float(fraction_cavg(s, y, p, -math.log(p / (1 - p))))
    # by hand: every error weighs 1/16 at p = 0.5; 8 errors at the Bayes threshold 0, 6 at
    # the best threshold (-2 or 1); at p = 0.25 a miss weighs 1/32 and a false alarm 3/32
    assert c.actual.tolist() == [0.5, 0.375] and c.minimum.tolist() == [0.375, 0.1875]
    # example M: min Cavg at p = 0.5 is 5/18 (threshold scan above; docs/math.md §12.2 actual 1/3)
    assert km.min_cavg(km.detection_llrs(W_M), Y_M, 0.5)[0] == float(Fraction(5, 18))
    assert km.cavg(km.detection_llrs(W_M), Y_M, 0.5) == float(Fraction(1, 3))


@pytest.mark.parametrize("system", ["resnet-20", "repvgg_a2", "vgg19_bn"])
def test_min_cavg_on_cifar10_is_a_ratio_of_counts(system):
    """cifar10: 1000 images per class, K = 10, so at p = 0.5 every Cavg is (9 M + F) / 180000
    for integer miss and false-alarm counts M, F; the value must be that ratio rounded once
    (the old ``total - running sum`` gave 0.027088888889549648 for resnet-20)."""
    sc = pl.read_parquet(REAL / "cifar10" / "cifar10_scores.parquet").filter(
        pl.col("system") == system).drop("log_posterior")
    tr = pl.read_parquet(REAL / "cifar10" / "cifar10_truth.parquet").filter(
        pl.col("system") == system)
    g = score_matrices(read_scores(sc), read_truth(tr))[0]
    assert np.bincount(g.y).tolist() == [1000] * 10
    s = km.detection_llrs(g.w)
    c = km.cavg_curve(s, g.y, [0.5, 0.1])
    for v in (c.minimum[0], c.actual[0]):
        counts = round(v * 180000)
        assert v == float(Fraction(counts, 180000)), v
    # p = 0.1 = 1/K: equal weights per miss and per false alarm, many exact ties
    assert c.minimum[1] == km.min_cavg(s, g.y, 0.1)[0] <= c.actual[1]
    assert c.minimum[0] == km.min_cavg(s, g.y, 0.5)[0]
    # the threshold reached gives the minimum
    assert km.cavg(s, g.y, 0.5, threshold=c.threshold[0]) == c.minimum[0]


def test_detection_llrs_match_the_column_by_column_definition():
    rng = np.random.default_rng(11)
    for w in (rng.normal(0, 1, (300, 7)), rng.normal(0, 40, (300, 3)),
              np.array([[800.0, 0, -800], [30.0, 0, 0], [0.0, 0, 0], [1.0, 1, -np.inf]])):
        k = w.shape[1]
        twin = np.column_stack([w[:, j] - (logsumexp(np.delete(w, j, axis=1), axis=1)
                                           - math.log(k - 1)) for j in range(k)])
        assert_close(km.detection_llrs(w), twin, rtol=1e-13, atol=1e-12)


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
    from scoreframe.cli import main

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
    assert sc.columns == ["segment", "class", "score"]  # the long schema, nothing else
    want = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
                         "class": ["eng", "fra", "zul"] * 9, "score": W_M.ravel()})
    assert sc.sort("segment", "class").equals(want)  # one row per segment x class column
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
    from scoreframe.cli import main

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


# --- readers: every problem names the file and the line (or row) ----------------------------------
HEAD = "segment\tclass\tscore\n"


@pytest.mark.parametrize(("text", "error", "where", "what"), [
    (HEAD + "s1\ta\t1\ns1\tb\t2\ns1\ta\t3\n", ValidationError, "line 4", "first at line 2"),
    (HEAD + "s1\ta\t1\ns1\tb\t2\ns2\ta\t3\n", ValidationError, "line 4", "missing b"),
    (HEAD + "s1\ta\t1\ns1\tb\tNaN\n", ValidationError, "line 3", "NaN"),
    (HEAD + "s1\ta\t1\ns1\tb\t\n", ValidationError, "line 3", "missing score"),
    (HEAD + "s1\ta\t1\ns1\tb\tx1\n", FormatError, "line 3", "'x1'"),
    (HEAD + "s1\ta\t1\ns1\t-0.4\n", FormatError, "line 3", "wrong number of fields"),
    (HEAD + "s1\ta\t1\ns1\tb\t2\t7\n", FormatError, "line 3", "wrong number of fields"),
    (HEAD + "s1\ta\t1\n\ns1\tb\tNaN\n", ValidationError, "line 4", "NaN"),  # blank line 3
    ("segmentid\teng\tfra\ns1\t1\t2\ns2\t1\tz\n", FormatError, "line 3", "`fra`"),
    ("segmentid\teng\tfra\ns1\t1\t2\ns1\t1\t3\n", ValidationError, "line 3", "first at line 2"),
    ("language\tscore\nx\t1\n", ScoreframeError, "", "segment id"),
])
def test_score_reader_names_file_and_line(tmp_path, text, error, where, what):
    path = tmp_path / "sys.tsv"
    path.write_text(text)
    with pytest.raises(error) as err:
        read_multiclass_scores(path)
    msg = str(err.value)
    assert f"`{path}`" in msg and where in msg and what in msg, msg


@pytest.mark.parametrize(("text", "where", "what"), [
    ("segmentid\tlanguage_code\ns1\teng\ns2\tfra\ns1\tfra\n", "line 4", "first at line 2"),
    ("segmentid\tlanguage_code\ns1\teng\ns2\t\n", "line 3", "`class` has missing"),
    ("segmentid\tlanguage_code\ns1\teng\ns2\tzul\n", "line 3", "'zul'"),
])
def test_truth_reader_names_file_and_line(tmp_path, text, where, what):
    path = tmp_path / "key.tsv"
    path.write_text(text)
    with pytest.raises(ValidationError) as err:
        read_lre22_key(path, classes=["eng", "fra"])
    msg = str(err.value)
    assert f"`{path}`" in msg and where in msg and what in msg, msg


def test_readers_name_rows_of_parquet_and_frames(tmp_path):
    sc = pl.DataFrame({"segment": ["s1", "s1", "s2", "s2", "s2"],
                       "class": ["a", "b", "a", "b", "a"], "score": [1.0, 2, 3, 4, 5]})
    sc.write_parquet(tmp_path / "s.parquet")
    with pytest.raises(ValidationError, match=r"s\.parquet`: .* in row 4.*first at row 2"):
        read_scores(tmp_path / "s.parquet")
    with pytest.raises(ValidationError, match="the scores table row 4"):
        read_scores(sc)
    with pytest.raises(ValidationError, match="the scores table row 4"):
        read_scores(sc.to_arrow())
    with pytest.raises(ValidationError, match="row 1"):
        read_scores(sc.with_columns(score=pl.Series([1.0, float("nan"), 3, 4, 5])).head(4))
    with pytest.raises(ValidationError, match="outside the known classes in the scores table "
                                              "row 1"):
        read_multiclass_scores(sc.head(4), classes=["a", "c", "b"][:1])
    with pytest.raises(FormatError, match="nothere"):
        read_scores(tmp_path / "nothere.parquet")


def test_readers_accept_every_input_kind_alike(tmp_path):
    sc, tr = long(W_M, Y_M)
    sc.write_csv(tmp_path / "s.csv")
    tr.write_csv(tmp_path / "t.tsv", separator="\t")
    sc.write_parquet(tmp_path / "s.parquet")
    want = read_scores(sc).sort("segment", "class")
    for src in (tmp_path / "s.csv", str(tmp_path / "s.parquet"), sc.lazy(), sc.to_arrow()):
        assert read_scores(src).sort("segment", "class").equals(want)
    assert read_truth(tmp_path / "t.tsv").equals(read_truth(tr.to_arrow()))
    # the compatibility module keeps the old names
    assert legacy_data.read_scores is read_scores and legacy_data.score_matrices is score_matrices
    # the LRE22 wide TSV: segmentid + one column per language
    wide = pl.DataFrame({"segmentid": [f"t{i}" for i in range(9)], "eng": W_M[:, 0],
                         "fra": W_M[:, 1], "zul": W_M[:, 2]})
    wide.write_csv(tmp_path / "lre.tsv", separator="\t")
    got = read_lre22_scores(tmp_path / "lre.tsv").sort("segment", "class")
    assert got["score"].to_list() == W_M.ravel().tolist()
    with pytest.raises(ScoreframeError, match="segmentid"):
        read_lre22_scores(tmp_path / "s.csv")
    assert read_multiclass_truth(tr)["class"].to_list() == tr["class"].to_list()


# --- the pivot: one sort per system, groups without another sort ----------------------------------
def test_score_matrices_ignore_row_order_and_split_by_condition():
    rng = np.random.default_rng(2)
    w = rng.normal(0, 1, (40, 3))
    y = rng.integers(0, 3, 40)
    y[:3] = [0, 1, 2]
    sc, tr = long(w, y, prefix="s")
    tr = tr.with_columns(cond=pl.Series(rng.choice(["x", "y"], 40)))
    ref = score_matrices(read_scores(sc), read_truth(tr))[0]
    order = np.argsort([f"s{i}" for i in range(40)])  # segment ids sort as strings
    assert_close(ref.w, w[order], rtol=0, atol=0)
    assert ref.y.tolist() == y[order].tolist()
    shuffled = sc.sample(fraction=1.0, shuffle=True, seed=1)
    again = score_matrices(read_scores(shuffled), read_truth(tr.reverse()))[0]
    assert np.array_equal(again.w, ref.w) and np.array_equal(again.y, ref.y)
    groups = score_matrices(read_scores(shuffled), read_truth(tr), by=["cond"])
    assert [g.key for g in groups] == [{"cond": "x"}, {"cond": "y"}]
    for g in groups:
        keep = tr.filter(pl.col("cond") == g.key["cond"])["segment"].to_list()
        sub = score_matrices(sc.filter(pl.col("segment").is_in(keep)),
                             tr.filter(pl.col("segment").is_in(keep)))[0]
        assert g.segments == sub.segments and np.array_equal(g.w, sub.w)
    # a class order given by the caller is the column order
    cba = score_matrices(read_scores(sc), read_truth(tr), classes=["c", "b", "a"])[0]
    assert np.array_equal(cba.w, ref.w[:, ::-1]) and np.array_equal(cba.y, 2 - ref.y)


def test_score_matrices_check_frames_given_directly():
    sc, tr = long(W_M, Y_M)
    with pytest.raises(ValidationError, match="duplicate"):
        score_matrices(pl.concat([sc, sc.head(1)]), tr)
    with pytest.raises(ValidationError, match="every class"):
        score_matrices(sc.slice(1), tr)
    with pytest.raises(AlignmentError, match=r"no truth.*'t0'"):
        score_matrices(sc, tr.slice(1), where="`s.tsv`")


# --- cavg_sweep: one sort, the same numbers as one prior at a time --------------------------------
def test_cavg_sweep_equals_per_prior_min_and_actual_cavg():
    sc = pl.read_parquet(REAL / "iemocap_w2v2" / "iemocap_w2v2_scores.parquet").drop(
        "log_posterior")
    tr = pl.read_parquet(REAL / "iemocap_w2v2" / "iemocap_w2v2_truth.parquet")
    grid = np.linspace(-4, 4, 17)
    sw = cavg_sweep(sc, tr, prior_log_odds=grid)
    g = score_matrices(read_scores(sc), read_truth(tr))[0]
    s = km.detection_llrs(g.w)
    p = sw["p_target"].to_numpy()
    norm = np.minimum(p, 1 - p)
    pairs = list(zip(p, norm, strict=True))
    assert sw["minimum"].to_list() == [km.min_cavg(s, g.y, q)[0] / m for q, m in pairs]
    assert sw["actual"].to_list() == [km.cavg(s, g.y, q) / m for q, m in pairs]
    assert (sw["minimum"] <= sw["actual"]).all()
    # evaluate_multiclass gives the same numbers at its priors
    ev = evaluate_multiclass(sc, tr, p_target=p[[0, 8, 16]].tolist())
    by_p = ev["cavg_by_p"][0]
    assert [b["min_cavg_norm"] for b in by_p] == sw["minimum"].gather([0, 8, 16]).to_list()


def test_argument_checks():
    sc, tr = long(W_M, Y_M)
    with pytest.raises(ScoreframeError, match="bad `p_target`"):
        evaluate_multiclass(sc, tr, p_target=[0.5, 1.0])
    with pytest.raises(ScoreframeError, match="bad class `prior`"):
        evaluate_multiclass(sc, tr, prior=[0.5, 0.5])
    with pytest.raises(ScoreframeError, match="bad class `prior`"):
        evaluate_multiclass(sc, tr, prior={"a": 0.5, "b": 0.5})
    with pytest.raises(ScoreframeError, match="bad `cost`"):
        evaluate_multiclass(sc, tr, cost=np.ones((2, 2)))
    with pytest.raises(ScoreframeError, match="prior_log_odds"):
        cavg_sweep(sc, tr, prior_log_odds=[0.0, float("nan")])
    ok = evaluate_multiclass(sc, tr, prior={"a": 0.5, "b": 0.3, "c": 0.2})
    assert_close(ok["cmxe"][0], 1.192504, rtol=0, atol=1e-6)  # docs/math.md §11.1, example M


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_mutated_files_parse_or_raise_a_scoreframe_error(tmp_path_factory, data):
    """Mutation fuzzing of the text readers: byte flips, truncation, deleted, duplicated and
    shuffled lines give either a table or a ScoreframeError, never another exception."""
    sc, tr = long(W_M[:4], Y_M[:4])
    files = {"scores.tsv": sc.write_csv(separator="\t"), "truth.csv": tr.write_csv(),
             "wide.tsv": "segmentid\teng\tfra\ns1\t1\t2\ns2\t0.5\t-1\n"}
    name = data.draw(st.sampled_from(sorted(files)))
    raw = bytearray(files[name].encode())
    op = data.draw(st.sampled_from(["flip", "cut", "drop", "dup", "shuffle"]))
    if op == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    elif op == "cut":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    else:
        lines = bytes(raw).split(b"\n")
        i = data.draw(st.integers(0, len(lines) - 1))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        else:
            lines = data.draw(st.permutations(lines))
        raw = bytearray(b"\n".join(lines))
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(bytes(raw))
    reader = read_truth if name.startswith("truth") else read_scores
    try:
        out = reader(path)
    except ScoreframeError:
        return
    assert out.height > 0 and {"segment", "class"} <= set(out.columns)


def test_gzip_text_and_its_truncation(tmp_path):
    import gzip

    sc, _ = long(W_M, Y_M)
    blob = gzip.compress(sc.write_csv(separator="\t").encode())
    (tmp_path / "s.tsv.gz").write_bytes(blob)
    assert read_scores(tmp_path / "s.tsv.gz").equals(read_scores(sc))
    (tmp_path / "cut.tsv.gz").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(FormatError, match=r"cut\.tsv\.gz`: truncated gzip file"):
        read_scores(tmp_path / "cut.tsv.gz")
    (tmp_path / "ctl.tsv").write_text(HEAD + "s1\ta\t1\ns\x01\tb\t2\n")
    with pytest.raises(FormatError, match=r"ctl\.tsv` line 3"):
        read_scores(tmp_path / "ctl.tsv")


def test_alignment_errors_name_both_files(tmp_path):
    sc, tr = long(W_M, Y_M)
    sc.write_csv(tmp_path / "s.tsv", separator="\t")
    tr.slice(1).write_csv(tmp_path / "t.tsv", separator="\t")
    with pytest.raises(AlignmentError,
                       match=r"(?s)s\.tsv`: scored segments have no truth.*'t0'.*t\.tsv"):
        evaluate_multiclass(tmp_path / "s.tsv", tmp_path / "t.tsv")
    tr.with_columns(pl.lit("zzz").alias("class")).write_csv(tmp_path / "z.tsv", separator="\t")
    with pytest.raises(ValidationError, match=r"z\.tsv`: truth classes outside the scored classes"):
        evaluate_multiclass(tmp_path / "s.tsv", tmp_path / "z.tsv")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.integers(0, 40))
def test_min_cavg_properties(seed, k, extra):
    """Min Cavg depends only on the order of the scores (a strictly increasing map and a
    permutation of the trials keep it exactly), never exceeds the actual Cavg, and is 0 on
    separable scores."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.arange(k), rng.integers(0, k, extra)]
    s = km.detection_llrs(rng.normal(0, 1, (y.size, k)) + 2.0 * np.eye(k)[y])
    ps = [0.05, 0.3, 0.5, 0.9]
    c = km.cavg_curve(s, y, ps)
    assert np.all(c.minimum <= c.actual)
    assert np.array_equal(km.cavg_curve(np.exp(s / 4) * 3 - 1, y, ps, minimum=True).minimum,
                          c.minimum)
    perm = rng.permutation(y.size)
    assert np.array_equal(km.cavg_curve(s[perm], y[perm], ps).minimum, c.minimum)
    sep = np.where(np.eye(k, dtype=bool)[y], 5.0, -5.0)
    assert np.all(km.cavg_curve(sep, y, ps).minimum == 0.0)


def test_cavg_at_many_priors_sorts_once(monkeypatch):
    calls = []
    real = np.argsort

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(km.np, "argsort", counting)
    monkeypatch.setattr(km.np, "sort", lambda *a, **k: pytest.fail("np.sort in cavg_curve"))
    monkeypatch.setattr(km.np, "unique", lambda *a, **k: pytest.fail("np.unique in cavg_curve"))
    s = km.detection_llrs(W_M)
    c = km.cavg_curve(s, Y_M, np.linspace(0.05, 0.95, 81))
    assert len(calls) == 1 and c.minimum.shape == (81,)


def test_pivot_sorts_once_per_system(monkeypatch):
    rng = np.random.default_rng(4)
    sc_a, tr = long(rng.normal(0, 1, (30, 3)), np.arange(30) % 3, prefix="s")
    sc_b, _ = long(rng.normal(0, 1, (30, 3)), np.arange(30) % 3, prefix="s")
    sc = pl.concat([sc_a.with_columns(system=pl.lit("a")), sc_b.with_columns(system=pl.lit("b"))])
    tr = tr.with_columns(cond=pl.Series(["x", "y", "z"] * 10))
    sc, tr = read_scores(sc), read_truth(tr)
    calls = []
    real = pl.DataFrame.sort

    def counting(self, *args, **kwargs):
        calls.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "sort", counting)
    groups = score_matrices(sc, tr, by=["cond"])
    assert len(groups) == 6 and len(calls) == 2  # two systems x three conditions, two sorts
