"""The statistics layer: exact merges, engines that agree bit for bit, checks in the pass.

Twins: brute-force threshold scans and hulls computed here without the kernels.
"""

from __future__ import annotations

import math
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

from scoreframe import evaluate, explode_dcf, write_trials
from scoreframe import rocch as metrics_rocch
from scoreframe.errors import DegenerateError, ScoreframeError, ValidationError
from scoreframe.kernels import eer_conventions as ke
from scoreframe.kernels.elementary import exact_sum, exact_to_float
from scoreframe.kernels.sorted_scores import sort_scores
from scoreframe.metrics import Binary
from scoreframe.metrics.registry import GroupStats, OperatingPoints
from scoreframe.results.evaluate import group_statistics
from scoreframe.stats import Context, Engine, Request, merge_all, parse_memory, reduce_sorted
from scoreframe.stats.outofcore import SPILL_PREFIX, clean_stale_spills
from scoreframe.stats.summary import DetCorners, KaldiEer, NistEer


def tied_data(rng: np.random.Generator, n: int, *, inf: bool = True) -> tuple[np.ndarray, ...]:
    lab = rng.random(n) < 0.35
    lab[0], lab[1] = True, False
    sc = np.round(rng.normal(size=n) + 1.5 * lab, 1)  # heavy ties
    if inf and n > 6:
        sc[2], sc[3] = np.inf, -np.inf
        sc[4], sc[5] = -np.inf, np.inf
    return sc, lab


def split_stats(sc: np.ndarray, lab: np.ndarray, cuts: np.ndarray, request: Request):
    """Statistics of the score ranges [cut_i, cut_i+1), merged in order (with contexts)."""
    edges = np.concatenate(([-np.inf], cuts))
    t_all, n_all = int(lab.sum()), int((~lab).sum())
    parts, off_t, off_n = [], 0, 0
    for i, lo in enumerate(edges):
        hi = edges[i + 1] if i + 1 < edges.shape[0] else None
        m = (sc >= lo) if hi is None else ((sc >= lo) & (sc < hi))
        if lo == -np.inf:
            m = (sc < hi) if hi is not None else np.ones_like(lab)
        s = sort_scores(sc[m & lab], sc[m & ~lab])
        parts.append(reduce_sorted(s, request, Context(t_all, n_all, off_t, off_n)))
        off_t += s.n_tar
        off_n += s.n_non
    return merge_all(parts, request)


FIELDS = ("n_tar", "n_non", "cllr_tar", "cllr_non", "cllr_inf", "nist", "kaldi")
BLOCK_FIELDS = ("n_tar", "n_non", "start", "lo", "hi", "tar_pos_sum", "tar_pos_sq")


def assert_same_stats(a, b) -> None:
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    for f in BLOCK_FIELDS:
        assert np.array_equal(getattr(a.blocks, f), getattr(b.blocks, f)), f
    for f in ("n_miss", "n_fa"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    if a.det_miss is not None:  # the same staircase (a range edge may add a point mid-run)
        assert np.array_equal(corners(a), corners(b))


def corners(s) -> np.ndarray:
    pts = np.r_[[[0, 0]], np.c_[s.det_miss, s.det_fa]]
    keep = np.ones(pts.shape[0], bool)
    for i in range(1, pts.shape[0] - 1):
        a, b, c = pts[i - 1], pts[i], pts[i + 1]
        keep[i] = not ((a[0] == b[0] == c[0]) or (a[1] == b[1] == c[1]))
    return pts[keep]


@pytest.mark.parametrize("seed", range(40))
def test_merge_of_range_splits_equals_unsplit(seed):
    rng = np.random.default_rng(seed)
    sc, lab = tied_data(rng, int(rng.integers(8, 300)))
    request = Request(np.array([-1.0, 0.0, 0.3, 2.0]), (NistEer(), KaldiEer(), DetCorners(0.0)))
    whole = reduce_sorted(sort_scores(sc[lab], sc[~lab]), request)
    finite = np.unique(sc[np.isfinite(sc)])
    cuts = np.sort(rng.choice(finite, size=min(finite.size, int(rng.integers(1, 6))),
                              replace=False))
    assert_same_stats(whole, split_stats(sc, lab, cuts, request))


def test_merge_is_associative():
    rng = np.random.default_rng(3)
    sc, lab = tied_data(rng, 400)
    request = Request(np.array([0.0]), (NistEer(),))
    cuts = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    edges = np.concatenate(([-np.inf], cuts, [np.inf]))
    parts = []
    off = [0, 0]
    ctx_tot = (int(lab.sum()), int((~lab).sum()))
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        m = (sc >= lo) & ((sc < hi) | (hi == np.inf))
        s = sort_scores(sc[m & lab], sc[m & ~lab])
        parts.append(reduce_sorted(s, request, Context(*ctx_tot, *off)))
        off = [off[0] + s.n_tar, off[1] + s.n_non]
    from scoreframe.stats import merge

    left = merge(merge(merge(parts[0], parts[1]), parts[2]), merge(parts[3], parts[4]))
    right = merge(parts[0], merge(parts[1], merge(parts[2], merge(parts[3], parts[4]))))
    assert_same_stats(left, merge(left, merge_all([], request)))
    assert_same_stats(merge(left, parts[5]), merge(right, parts[5]))


# --- brute-force twins -----------------------------------------------------------------------

def brute_rates(sc, lab):
    """(pmiss, pfa) at every threshold between distinct scores (accept iff score >= t)."""
    thr = np.concatenate((np.unique(sc), [np.inf]))
    pmiss = np.array([np.mean(sc[lab] < t) for t in thr])
    pfa = np.array([np.mean(sc[~lab] >= t) for t in thr])
    return pmiss, pfa


def brute_hull_eer(sc, lab):
    pm, pf = brute_rates(sc, lab)
    pts = np.unique(np.c_[pf, pm], axis=0)
    pts = np.r_[pts, [[1.0, 1.0]]]  # close the hull above the ROC
    hull = ConvexHull(pts)
    best = 1.0
    for a, b in hull.simplices:  # the lower hull edges crossing pmiss = pfa
        (x0, y0), (x1, y1) = pts[a], pts[b]
        d0, d1 = x0 - y0, x1 - y1
        if (d0 >= 0 >= d1) or (d1 >= 0 >= d0):
            u = 0.0 if d0 == d1 else d0 / (d0 - d1)
            best = min(best, y0 + u * (y1 - y0))
    return best


@pytest.mark.parametrize("seed", range(25))
def test_rocch_eer_and_prbep_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    sc, lab = tied_data(rng, int(rng.integers(5, 120)), inf=False)
    res = evaluate(pl.DataFrame({"score": sc, "label": lab}), operating_points=0.5)
    assert res["eer"][0] == pytest.approx(brute_hull_eer(sc, lab), abs=1e-12)
    # PRBEP: on the hull in count coordinates, #miss = #fa
    pm, pf = brute_rates(sc, lab)
    t, n = lab.sum(), (~lab).sum()
    pts = np.unique(np.c_[pf * n, pm * t], axis=0)
    pts = np.r_[pts, [[n + 1.0, t + 1.0]]]
    hull = ConvexHull(pts)
    best = np.inf
    for a, b in hull.simplices:
        (x0, y0), (x1, y1) = pts[a], pts[b]
        d0, d1 = x0 - y0, x1 - y1
        if (d0 >= 0 >= d1) or (d1 >= 0 >= d0):
            u = 0.0 if d0 == d1 else d0 / (d0 - d1)
            best = min(best, y0 + u * (y1 - y0))
    assert res["prbep"][0] == pytest.approx(best, abs=1e-9)


def brute_nist_eer(sc, lab):
    order = np.lexsort((~lab, sc))  # ties: targets first
    lab_s = lab[order]
    t, n = lab.sum(), (~lab).sum()
    fnr = np.r_[0.0, np.cumsum(lab_s) / t]
    fpr = np.r_[1.0, (n - np.cumsum(~lab_s)) / n]
    for k in range(1, fnr.shape[0]):
        if fnr[k] - fpr[k] >= 0:
            if fnr[k] == fpr[k]:
                return fnr[k]
            a = (fnr[k] - fpr[k]) / (fpr[k - 1] - fpr[k] - (fnr[k - 1] - fnr[k]))
            return fnr[k] + a * (fnr[k - 1] - fnr[k])
    raise AssertionError("no crossing")


def brute_kaldi_eer(sc, lab):
    tar, non = np.sort(sc[lab]), np.sort(sc[~lab])
    t, n = tar.shape[0], non.shape[0]
    for i in range(t - 1):
        j = max(n - 1 - (n * i) // t, 0)
        if non[j] < tar[i]:
            return i / t
    return (t - 1) / t


@pytest.mark.parametrize("seed", range(25))
def test_nist_and_kaldi_eer_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    sc, lab = tied_data(rng, int(rng.integers(5, 150)))
    df = pl.DataFrame({"score": sc, "label": lab})
    nist = evaluate(df, metrics=[Binary(eer_method="nist")])["eer"][0]
    assert nist == pytest.approx(brute_nist_eer(sc, lab), abs=1e-12)
    assert nist == pytest.approx(ke.steppy_eer(sort_scores(sc[lab], sc[~lab])), abs=1e-12)
    assert evaluate(df, metrics=[Binary(eer_method="kaldi")])["eer"][0] == brute_kaldi_eer(sc, lab)


def test_equalized_min_dcf_brute_force():
    rng = np.random.default_rng(7)
    n = 600
    sc, lab = tied_data(rng, n, inf=False)
    part = rng.choice(["x", "y", "z"], n, p=[0.6, 0.3, 0.1])
    df = pl.DataFrame({"score": sc, "label": lab, "lang": part})
    p = np.array([0.05, 0.3])
    res = explode_dcf(evaluate(df, operating_points=p, equalize_by="lang"))
    thr = np.concatenate((np.unique(sc), [np.inf]))
    parts = np.unique(part)
    pm = np.mean([[np.mean(sc[lab & (part == v)] < t) for t in thr] for v in parts], axis=0)
    pf = np.mean([[np.mean(sc[~lab & (part == v)] >= t) for t in thr] for v in parts], axis=0)
    for k, pk in enumerate(p):
        expect = np.min(pk * pm + (1 - pk) * pf) / min(pk, 1 - pk)
        assert res["eq_min_dcf_norm"][k] == pytest.approx(expect, rel=1e-12)


def test_exact_sums_are_order_independent():
    rng = np.random.default_rng(0)
    x = rng.exponential(size=10_000) * 10.0 ** rng.uniform(-8, 8, 10_000)
    parts = np.split(rng.permutation(x), [17, 400, 5000])
    assert sum(exact_sum(p) for p in parts) == exact_sum(x)
    assert exact_to_float(exact_sum(x)) == math.fsum(x)


# --- engines ---------------------------------------------------------------------------------

def frame(n: int = 30_000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sc, lab = tied_data(rng, n)
    return pl.DataFrame({
        "score": sc, "label": lab,
        "system": rng.choice(["s1", "s2"], n), "gender": rng.choice(["f", "m"], n),
        "lang": rng.choice(["en", "zh", "es"], n),
        "model": [f"m{i % 997}" for i in range(n)], "segment": [f"g{i}" for i in range(n)]})


@pytest.mark.parametrize("kw", [
    {"by": "gender"}, {"by": ["gender", "lang"], "eer_method": "nist"},
    {"by": "gender", "equalize_by": "lang", "eer_method": "kaldi"}, {}])
def test_out_of_core_equals_in_memory_bit_for_bit(kw, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = frame()
    ekw = {k: v for k, v in kw.items() if k != "eer_method"}
    if "eer_method" in kw:
        ekw["metrics"] = [Binary(eer_method=kw["eer_method"])]
    a = evaluate(df, operating_points=[0.01, 0.2], **ekw)
    stats, _ = group_statistics(df, p_target=[0.01, 0.2], engine=Engine(memory_limit="400KB"),
                                **kw)
    assert stats.engine == "out-of-core" and stats.n_ranges > 4
    b = evaluate(df, operating_points=[0.01, 0.2], engine=Engine(memory_limit="400KB"), **ekw)
    assert a.drop("dcf").equals(b.drop("dcf"))
    assert explode_dcf(a).equals(explode_dcf(b))
    assert not list(tmp_path.iterdir())  # the spill directory is gone


@pytest.mark.parametrize(("limit", "many"), [("2KiB", True), ("1MB", False)])
def test_out_of_core_any_number_of_ranges(limit, many, tmp_path, monkeypatch):
    """Scores are assigned to ranges by comparisons (few boundaries) or a binary search (many):
    both give the in-memory result exactly, ties and infinite scores included."""
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = frame(120_000, seed=5)
    df = df.with_columns(pl.when(pl.int_range(pl.len()) % 997 == 0).then(float("inf"))
                         .when(pl.int_range(pl.len()) % 991 == 0).then(float("-inf"))
                         .otherwise(pl.col("score")).alias("score"))
    stats, _ = group_statistics(df, by="gender", engine=Engine(memory_limit=limit))
    assert stats.engine == "out-of-core" and (stats.n_ranges > 48) == many
    a = evaluate(df, by="gender", operating_points=[0.01, 0.2])
    b = evaluate(df, by="gender", operating_points=[0.01, 0.2], engine=Engine(memory_limit=limit))
    assert a.drop("dcf").equals(b.drop("dcf")) and explode_dcf(a).equals(explode_dcf(b))


def test_plain_directory_with_condition_column(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path / "spill"))
    (tmp_path / "spill").mkdir()
    df = frame(20_000, seed=1)
    d = tmp_path / "ds"
    d.mkdir()
    for i, chunk in enumerate(df.iter_slices(3_000)):
        chunk.write_parquet(d / f"part-{i}.parquet")
    a = evaluate(df, by="gender")
    b = evaluate(d, by="gender", engine=Engine(memory_limit="300KB", workers=2))
    assert explode_dcf(a).equals(explode_dcf(b))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n_files=st.integers(1, 5), limit=st.sampled_from(
    ["64KB", "200KB", "2GB"]))
def test_any_partition_into_files_gives_identical_metrics(tmp_path_factory, seed, n_files, limit):
    rng = np.random.default_rng(seed)
    df = frame(3_000, seed=seed).sample(fraction=1.0, shuffle=True, seed=seed)
    d = tmp_path_factory.mktemp("parts")
    cuts = np.sort(rng.choice(np.arange(1, df.height), size=n_files - 1, replace=False))
    for i, (lo, hi) in enumerate(zip(np.r_[0, cuts], np.r_[cuts, df.height], strict=True)):
        df.slice(int(lo), int(hi - lo)).write_parquet(d / f"f{i}.parquet")
    a = explode_dcf(evaluate(frame(3_000, seed=seed), by="lang", operating_points=[0.1, 0.5]))
    b = explode_dcf(evaluate(d, by="lang", operating_points=[0.1, 0.5],
                             engine=Engine(memory_limit=limit)))
    assert a.equals(b)


def test_hive_dataset_out_of_core_equals_in_memory(tmp_path):
    df = frame(10_000, seed=5)
    write_trials(df, tmp_path / "hive", partition_by=["gender"])
    a = evaluate(df, by=["gender", "lang"])
    b = evaluate(tmp_path / "hive", by=["gender", "lang"], engine=Engine(memory_limit="256KB"),
                 where="lang <> 'es'")
    c = evaluate(df.filter(pl.col("lang") != "es"), by=["gender", "lang"])
    assert explode_dcf(b).equals(explode_dcf(c))
    assert a.height > b.height


# --- checks folded into the pass ---------------------------------------------------------------

def small() -> pl.DataFrame:
    return pl.DataFrame({"model": ["a", "a", "b", "b"], "segment": ["x", "y", "x", "y"],
                         "score": [2.0, -1.0, 0.5, 1.0], "label": [True, False, False, True]})


@pytest.mark.parametrize("limit", ["2GB", "2KiB"])
def test_duplicates_are_errors(limit):
    dup = pl.concat([small(), small().head(1)])
    with pytest.raises(ValidationError, match="duplicate trials.*model=a, segment=x"):
        evaluate(dup, engine=Engine(memory_limit=limit))
    assert evaluate(dup, validate=False, engine=Engine(memory_limit=limit))["n_tar"][0] == 3


def test_duplicates_across_hive_partitions(tmp_path):
    d = tmp_path / "ds"
    for part in ("f", "m"):
        (d / f"gender={part}").mkdir(parents=True)
        small().write_parquet(d / f"gender={part}" / "part-0.parquet")
    for limit in ("2GB", "2KiB"):
        with pytest.raises(ValidationError, match="duplicate trials"):
            evaluate(d, by="gender", engine=Engine(memory_limit=limit))


def test_same_trial_in_two_systems_is_not_a_duplicate():
    df = pl.concat([small().with_columns(system=pl.lit("s1")),
                    small().with_columns(system=pl.lit("s2"))])
    assert evaluate(df)["system"].to_list() == ["s1", "s2"]


def test_validated_dataset_skips_the_duplicate_check(tmp_path, monkeypatch):
    write_trials(small(), tmp_path / "v.parquet")
    import scoreframe.stats.engine as eng

    def boom(*a, **k):
        raise AssertionError("re-checked")

    monkeypatch.setattr(eng, "check_duplicates", boom)
    assert evaluate(tmp_path / "v.parquet")["n_tar"][0] == 2
    small().write_parquet(tmp_path / "plain.parquet")
    with pytest.raises(AssertionError, match="re-checked"):
        evaluate(tmp_path / "plain.parquet")


@pytest.mark.parametrize("limit", ["2GB", "2KiB"])
def test_unknown_label_spellings_are_errors(limit):
    df = small().with_columns(pl.Series("label", ["target", "nontarget", "maybe", "target"]))
    with pytest.raises(ValidationError, match="label.*accepted spellings.*1 trial"):
        evaluate(df, engine=Engine(memory_limit=limit))


@pytest.mark.parametrize("limit", ["2GB", "2KiB"])
@pytest.mark.parametrize("bad", [None, float("nan")])
def test_null_and_nan_scores_are_errors(limit, bad):
    df = small().with_columns(pl.Series("score", [2.0, bad, 0.5, 1.0]))
    with pytest.raises(ValidationError, match="score.*missing values"):
        evaluate(df, engine=Engine(memory_limit=limit))


def test_errors_name_the_dataset(tmp_path):
    p = tmp_path / "bad.parquet"
    small().with_columns(pl.Series("score", [2.0, float("nan"), 0.5, 1.0])).write_parquet(p)
    with pytest.raises(ValidationError, match="bad.parquet"):
        evaluate(p)


@pytest.mark.parametrize("limit", ["1GB", "2KiB"])
def test_errors_name_the_file_and_row_in_a_directory(tmp_path, limit):
    d = tmp_path / "ds"
    d.mkdir()
    small().with_columns(pl.col("label").cast(pl.String)).write_parquet(d / "a.parquet")
    small().with_columns(pl.Series("label", ["target", "nontarget", "true", "??"])) \
        .with_columns(model=pl.lit("z")).write_parquet(d / "b.parquet")
    with pytest.raises(ValidationError, match=r"b\.parquet`: .* in row 4"):
        evaluate(d, engine=Engine(memory_limit=limit))


@pytest.mark.parametrize("limit", ["1GB", "2KiB"])
def test_files_that_disagree_on_types_are_a_clear_error(tmp_path, limit):
    d = tmp_path / "ds"
    d.mkdir()
    small().write_parquet(d / "a.parquet")
    small().with_columns(pl.col("label").cast(pl.String)).write_parquet(d / "b.parquet")
    with pytest.raises(ScoreframeError, match="ds"):
        evaluate(d, engine=Engine(memory_limit=limit))


@pytest.mark.parametrize("limit", ["2GB", "2KiB"])
def test_zero_rows_is_an_error(limit):
    with pytest.raises(DegenerateError, match="nothing to evaluate"):
        evaluate(small().filter(pl.col("score") > 100), engine=Engine(memory_limit=limit))
    with pytest.raises(DegenerateError):
        evaluate(small(), where="score > 100", by="model", engine=Engine(memory_limit=limit))


def test_score_label_only_data_is_valid(tmp_path):
    df = small().select("score", "label")
    df.write_parquet(tmp_path / "s.parquet")
    assert evaluate(tmp_path / "s.parquet", engine=Engine(memory_limit="2KiB"))["eer"][0] == \
        evaluate(df)["eer"][0]


def test_bad_engine_options():
    with pytest.raises(ScoreframeError, match="memory_limit"):
        evaluate(small(), engine=Engine(memory_limit="lots"))
    with pytest.raises(ScoreframeError, match="engine"):
        evaluate(small(), engine="spark")
    assert parse_memory("1.5GiB") == int(1.5 * 1024**3)


# --- temporary files ---------------------------------------------------------------------------

def test_no_spill_survives_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    d = tmp_path / "ds"
    d.mkdir()
    frame(5_000).write_parquet(d / "a.parquet")
    bad = frame(100).with_columns(pl.lit(float("nan")).alias("score"))
    bad.write_parquet(d / "b.parquet")
    with pytest.raises(ValidationError, match="NaN"):
        evaluate(d, engine=Engine(memory_limit="64KB"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_stale_spill_of_a_killed_process_is_removed(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(proc.stdout)
    host = socket.gethostname().replace("-", "_")
    stale = tmp_path / f"{SPILL_PREFIX}{host}-{dead}-abc"
    other_host = tmp_path / f"{SPILL_PREFIX}elsewhere-{dead}-abc"
    other_host.mkdir()
    (stale / "r00000").mkdir(parents=True)
    (stale / "r00000" / "t000000.bin").write_bytes(b"x" * 100)
    live = tmp_path / f"{SPILL_PREFIX}{host}-{os.getpid()}-def"
    live.mkdir()
    clean_stale_spills(tmp_path)
    assert not stale.exists() and live.exists() and other_host.exists()


def test_group_stats_metrics_match_scalar_api():
    """The declared metrics computed from one group's statistics equal ``evaluate``'s row bit
    for bit, and brute-force twins (a direct Cllr sum, SciPy's PAV for minCllr, a threshold
    scan for minDCF, direct counts for actDCF) to rounding. Evaluate and the scalar API share
    the kernels, so only the twins can catch a wrong kernel."""
    from test_kernels_properties import brute_act, brute_cllr, brute_dcf, brute_pav_llrs

    from scoreframe.metrics.registry import declared, request_for

    rng = np.random.default_rng(11)
    sc, lab = tied_data(rng, 2_000, inf=False)
    tar, non = sc[lab], sc[~lab]
    p = 0.12
    ops = OperatingPoints((p,))
    g = GroupStats(reduce_sorted(sort_scores(tar, non), request_for(declared(), ops)), ops)
    got = {m.name: np.atleast_1d(m.compute(g))[0] for m in declared()
           if m.name in ("eer", "cllr", "min_cllr", "act_dcf_norm", "min_dcf_norm")}
    res = evaluate(pl.DataFrame({"score": sc, "label": lab}), operating_points=p)
    row = explode_dcf(res).row(0, named=True)
    assert (g.n_tar, g.n_non) == (row["n_tar"], row["n_non"]) == (lab.sum(), (~lab).sum())
    for name, value in got.items():
        assert row[name] == value, name
    bt, bn = brute_pav_llrs(tar, non)
    direct_min_cllr = (np.logaddexp(0, -bt).mean() + np.logaddexp(0, bn).mean()) / (2 * math.log(2))
    default = min(p, 1 - p)
    assert got["cllr"] == pytest.approx(brute_cllr(tar, non), rel=1e-12)
    assert got["min_cllr"] == pytest.approx(direct_min_cllr, rel=1e-12)
    assert got["min_dcf_norm"] == pytest.approx(brute_dcf(tar, non, p)[0] / default, rel=1e-12)
    assert got["act_dcf_norm"] == pytest.approx(brute_act(tar, non, p) / default, rel=1e-12)
    # EER = max over priors of minDCF(p, 1, 1), attained where a ROCCH segment's slope
    # matches the prior ([BdV11] 2.6.2): the brute-force scan at those priors
    pm, pf = metrics_rocch(tar, non)
    dpf, dpm = np.diff(pf), np.diff(pm)
    cand = dpf / (dpf - dpm)
    cand = cand[(cand > 0) & (cand < 1)]
    assert got["eer"] == pytest.approx(max(brute_dcf(tar, non, cand)), rel=1e-12)


def test_spill_root_default_is_the_temp_dir(tmp_path, monkeypatch):
    """The out-of-core engine spills under the system temp dir unless told otherwise:
    ``$SCOREFRAME_SPILL_DIR`` overrides the temp dir, ``spill_dir=`` overrides both; the
    spill directory is removed afterwards and the results do not depend on where it was."""
    import tempfile

    from scoreframe.stats import outofcore

    roots: list[Path] = []
    real_registered = outofcore.registered_temp

    def spy(path):  # every spill directory is registered (removed if its run is killed)
        if Path(path).name.startswith(SPILL_PREFIX):
            roots.append(Path(path).parent)
        return real_registered(path)

    system_tmp, env_dir, arg_dir = (tmp_path / n for n in ("system", "env", "arg"))
    for d in (system_tmp, env_dir, arg_dir):
        d.mkdir()
    monkeypatch.setattr(outofcore, "registered_temp", spy)
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    monkeypatch.delenv("SCOREFRAME_SPILL_DIR", raising=False)
    sc, lab = tied_data(np.random.default_rng(3), 6_000)
    df = pl.DataFrame({"score": sc, "label": lab})
    want = evaluate(df)  # in memory
    got = [evaluate(df, engine=Engine(memory_limit="256KB"))]
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(env_dir))
    got.append(evaluate(df, engine=Engine(memory_limit="256KB")))
    got.append(evaluate(df, engine=Engine(memory_limit="256KB", spill_dir=str(arg_dir))))
    assert roots == [system_tmp, env_dir, arg_dir]
    for d in (system_tmp, env_dir, arg_dir):
        assert list(d.iterdir()) == []  # nothing left behind
    for g in got:
        assert g.equals(want)


HEAP_CHILD = r"""
import sys, numpy as np
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) / 1024
if sys.argv[1] == "bound":
    from scoreframe.stats.outofcore import bound_heap
    bound_heap()
x = np.ones(1 << 20)
del x  # a freed 8 MiB block raises glibc's dynamic mmap threshold
before = anon()
big, small = [], []
for _ in range(40):
    big.append(np.ones(3 << 17))  # 3 MiB
    small.append(np.ones(1000))  # keeps the freed blocks apart
del big
print(anon() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists() or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mmap threshold on Linux")
def test_out_of_core_engine_gives_freed_range_arrays_back() -> None:
    """120 MB of 3 MiB arrays, freed between small ones after a freed 8 MiB block: given back
    after :func:`bound_heap` (each array is mapped on its own). Under glibc's default dynamic
    threshold they usually stay resident (120 MB measured on this machine), but that depends
    on the allocator's state, so only the bounded side is asserted here."""
    out = subprocess.run([sys.executable, "-c", HEAP_CHILD, "bound"], capture_output=True,
                         text=True, check=True)
    assert float(out.stdout.strip()) < 10


def test_bound_heap_sets_the_threshold_unless_the_user_did(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    import ctypes

    from scoreframe.stats import outofcore

    calls: list[tuple[int, int]] = []

    class Libc:
        def mallopt(self, param: int, value: int) -> int:
            calls.append((param, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda _name: Libc())
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    outofcore.bound_heap()
    assert calls == [(-3, 1 << 20)]  # M_MMAP_THRESHOLD, 1 MiB
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    outofcore.bound_heap()
    assert calls == [(-3, 1 << 20)]  # the user's setting is left alone


def test_ranges_rounded_to_whole_rounds_only_once_every_worker_has_one():
    """Fewer ranges than workers stay as they are: each range has a fixed cost (per group and
    replicate) outside the memory limit, and rounding 2 ranges up to 16 workers tripled the
    peak. More ranges than workers are rounded up to whole rounds (no idle worker at the end)."""
    df = frame(120_000, seed=5)
    few, _ = group_statistics(df, by="gender",
                              engine=Engine(kind="streaming", memory_limit="32MB", workers=8))
    assert 1 < few.n_ranges < 8
    many, _ = group_statistics(df, by="gender",
                               engine=Engine(kind="streaming", memory_limit="8MB", workers=8))
    assert many.n_ranges >= 8 and many.n_ranges % 8 == 0
    a = evaluate(df, by="gender", operating_points=[0.01, 0.2])
    for limit in ("32MB", "8MB"):
        b = evaluate(df, by="gender", operating_points=[0.01, 0.2],
                     engine=Engine(kind="streaming", memory_limit=limit, workers=8))
        assert a.drop("dcf").equals(b.drop("dcf")) and explode_dcf(a).equals(explode_dcf(b))
