"""Bootstrap intervals: weighted replicates on the statistics layer against explicit resampling.

Twins: every replicate's value of every metric declared with intervals equals the value
``scoreframe.evaluate`` gives for the materialized replicate (each trial repeated
``multiplicity`` times with ``np.repeat``, multiplicities from the documented recipe computed
directly here); the replicate statistics equal those of the repeated trials field by field.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from conftest import row_weights
from scipy import stats

import scoreframe as sf
from scoreframe.errors import DegenerateGroupWarning, ScoreframeError
from scoreframe.kernels import bootstrap as kb
from scoreframe.kernels import sort_scores
from scoreframe.metrics import (
    Intervals,
    declared,
    interval_metrics,
    replicate_values,
)
from scoreframe.results.bootstrap import bootstrap_evaluate, interval_long, trials_needed
from scoreframe.results.evaluate import group_statistics
from scoreframe.stats import Engine, Request, reduce_sorted

P_TARGET = (0.01, 0.2, 0.5)


def _trials(n: int = 160, seed: int = 0, *, ties: bool = True, inf: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.35
    score = np.where(label, rng.normal(1.5, 1.5, n), rng.normal(-1.0, 1.5, n))
    if ties:
        score = np.round(score, 1)  # heavy ties, across labels too
    if inf:
        score[:3] = [np.inf, -np.inf, np.inf]
        label[:3] = [True, False, False]
    models = rng.integers(0, 12, n)
    segments = rng.integers(0, 30, n)
    return pl.DataFrame({
        "model": [f"m{i}" for i in models],
        "segment": [f"seg-{i}" for i in segments],
        "score": score, "label": label,
        "cond": np.where(rng.random(n) < 0.5, "a", "b"),
    }).unique(["model", "segment"], keep="first", maintain_order=True)





def _units(stats, key: dict[str, str]):
    return next(u.stats for u in stats.units if u.unit.key == key)


@pytest.mark.parametrize("resample", [("trial",), ("model", "segment"), ("model",)])
def test_weighted_replicates_equal_explicit_resampling(resample: tuple[str, ...]) -> None:
    df = _trials()
    opts = Intervals(bootstrap=12, seed=7, resample=resample)
    stats, ops = group_statistics(df, by="cond", p_target=P_TARGET, intervals=opts)
    metrics = interval_metrics(declared())
    assert {"eer", "cllr", "min_cllr", "act_dcf_norm", "min_dcf_norm", "prbep"} <= {
        m.name for m in metrics}
    rows = np.arange(12)
    weights = row_weights(df, resample, rows, 7)
    lab, s, cond = df["label"].to_numpy(), df["score"].to_numpy(), df["cond"].to_numpy()
    got = {c: replicate_values(_units(stats, {"cond": c}), ops, metrics) for c in ("a", "b",
                                                                                   "all")}
    for r in rows:
        rep_df = df[np.repeat(np.arange(df.height), weights[r])]
        with warnings.catch_warnings():  # a replicate may lose a class of a condition
            warnings.simplefilter("ignore", DegenerateGroupWarning)
            ref = sf.evaluate(rep_df, by="cond", operating_points=P_TARGET, validate=False)
        flat = sf.explode_dcf(ref)
        for c in ("a", "b", "all"):
            # the replicate's statistics are those of the repeated trials, field by field
            sel = np.ones(df.height, bool) if c == "all" else cond == c
            w = weights[r][sel]
            want = reduce_sorted(sort_scores(np.repeat(s[sel][lab[sel]], w[lab[sel]]),
                                             np.repeat(s[sel][~lab[sel]], w[~lab[sel]])),
                                 Request(ops.threshold))
            have = _units(stats, {"cond": c}).replicates[r]
            assert (have.n_tar, have.n_non, have.cllr_tar, have.cllr_non, have.cllr_inf) == (
                want.n_tar, want.n_non, want.cllr_tar, want.cllr_non, want.cllr_inf)
            np.testing.assert_array_equal(have.n_miss, want.n_miss)
            np.testing.assert_array_equal(have.blocks.n_tar, want.blocks.n_tar)
            np.testing.assert_array_equal(have.blocks.n_non, want.blocks.n_non)
            np.testing.assert_array_equal(have.blocks.start, want.blocks.start)
            row = ref.filter(pl.col("cond") == c)
            pts = flat.filter(pl.col("cond") == c)
            for m in metrics:
                v = got[c][(m.name, m.per_operating_point)][r]
                if row.height == 0 or row["n_tar"][0] == 0 or row["n_non"][0] == 0:
                    assert np.all(np.isnan(v)), (m.name, c, r)
                    continue
                want_v = (pts[m.name].to_numpy() if m.per_operating_point
                          else row[m.name][0])
                np.testing.assert_allclose(v, want_v, rtol=1e-13, atol=1e-15,
                                           err_msg=f"{m.name}, cond {c}, replicate {r}")


def test_point_values_equal_evaluate() -> None:
    df = _trials(400, seed=3, inf=False)
    got = bootstrap_evaluate(df, by="cond", operating_points=P_TARGET,
                             intervals=Intervals(bootstrap=20))
    ref = sf.evaluate(df, by="cond", operating_points=P_TARGET)
    for name in ("eer", "cllr", "min_cllr", "prbep"):
        np.testing.assert_array_equal(got[name].to_numpy(), ref[name].to_numpy())
    flat = got.select("cond", "dcf").explode("dcf").unnest("dcf")
    ref_flat = sf.explode_dcf(ref)
    for name in ("act_dcf_norm", "min_dcf_norm", "n_miss_min", "n_fa_min"):
        np.testing.assert_array_equal(flat[name].to_numpy(), ref_flat[name].to_numpy())
    np.testing.assert_array_equal(flat["pmiss_min"].to_numpy(),
                                  (flat["n_miss_min"] / got.explode("dcf")["n_tar"]).to_numpy())


def _shuffled_files(df: pl.DataFrame, tmp_path, seed: int) -> str:
    rng = np.random.default_rng(seed)
    shuffled = df[rng.permutation(df.height)]
    for i, part in enumerate(np.array_split(np.arange(df.height), 4)):
        shuffled[part].write_parquet(tmp_path / f"part-{i}.parquet")
    return str(tmp_path / "*.parquet")


@pytest.mark.parametrize("resample", ["trial", ["model", "segment"]])
def test_seed_reproducible_across_workers_files_and_row_order(tmp_path, resample) -> None:
    df = _trials(300, seed=5, ties=False, inf=False)
    kw = {"by": "cond", "operating_points": (0.1, 0.5)}
    iv = Intervals(bootstrap=60, seed=11, resample=resample)
    kw["intervals"] = iv
    one = bootstrap_evaluate(df, engine=Engine(workers=1), **kw)
    again = bootstrap_evaluate(df, engine=Engine(workers=1), **kw)
    two = bootstrap_evaluate(df, engine=Engine(memory_limit=1 << 16, workers=2), **kw)
    files = bootstrap_evaluate(_shuffled_files(df, tmp_path, 1), engine=Engine(workers=2), **kw)
    assert one.equals(again)
    assert one.equals(two)
    assert one.equals(files)
    other = bootstrap_evaluate(df, **(kw | {"intervals": Intervals(bootstrap=60, seed=12,
                                                                   resample=resample)}))
    assert not one["eer_lo"].equals(other["eer_lo"])


def test_two_systems_share_weights() -> None:
    df = _trials(200, seed=2, ties=False, inf=False)
    both = pl.concat([df.with_columns(system=pl.lit("s1")),
                      df.with_columns(system=pl.lit("s2"))])
    res = bootstrap_evaluate(both, operating_points=0.2, intervals=Intervals(bootstrap=40, seed=1))
    assert res["system"].to_list() == ["s1", "s2"]
    row = res.drop("system")
    assert row[0].equals(row[1])  # identical scores and weights give identical intervals


def test_poisson_multiplicities_are_poisson_and_independent() -> None:
    h = kb.hash_strings(*_bytes([f"unit-{i}" for i in range(20000)]))
    m = kb.poisson_multiplicities(h, np.arange(10), key=kb.stream_key(3, "trial"))
    counts = np.bincount(m.ravel(), minlength=8)[:7].astype(float)
    expected = stats.poisson.pmf(np.arange(7), 1.0) * m.size
    expected[-1] += stats.poisson.sf(6, 1.0) * m.size
    counts[-1] += np.count_nonzero(m >= 7)
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < stats.chi2.ppf(0.999, 6)
    corr = np.corrcoef(m.astype(float))
    assert np.max(np.abs(corr[np.triu_indices(10, 1)])) < 0.05  # 4 sd at n = 20000
    other = kb.poisson_multiplicities(h, np.arange(10), key=kb.stream_key(3, "model"))
    assert abs(np.corrcoef(m.ravel().astype(float), other.ravel().astype(float))[0, 1]) < 0.02


def _bytes(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = [v.encode() for v in values]
    offsets = np.concatenate(([0], np.cumsum([len(b) for b in raw]))).astype(np.int64)
    return np.frombuffer(b"".join(raw), dtype=np.uint8), offsets


def test_string_hashes_depend_on_value_only() -> None:
    values = ["", "a", "ab", "ba", "abc", "é", "a" * 300, "seg-1", "seg-10", "seg-01"]
    h = kb.hash_strings(*_bytes(values))
    assert len(set(h.tolist())) == len(values)
    h_batched = kb.hash_strings(*_bytes(values), batch=3)
    np.testing.assert_array_equal(h, h_batched)
    h_rev = kb.hash_strings(*_bytes(values[::-1]))
    np.testing.assert_array_equal(h, h_rev[::-1])
    many = kb.hash_strings(*_bytes([f"id{i}" for i in range(200000)]))
    assert np.unique(many).shape[0] == 200000


def test_intervals_bracket_estimates_and_bca_runs() -> None:
    df = _trials(600, seed=9, ties=False, inf=False)
    pct = bootstrap_evaluate(df, operating_points=0.2, intervals=Intervals(bootstrap=300, seed=0))
    bca = bootstrap_evaluate(df, operating_points=0.2,
                             intervals=Intervals(bootstrap=300, resample=["model", "segment"],
                                                 seed=0, method="bca"))
    for res in (pct, bca):
        for name in ("eer", "cllr", "min_cllr"):
            assert res[f"{name}_lo"][0] < res[name][0] < res[f"{name}_hi"][0]
    long = interval_long(pct)
    assert set(long["metric"]) == {m.name for m in interval_metrics(declared()) if m.table}
    # two-way intervals are wider than trial-level ones when the units are shared
    assert (bca["eer_hi"][0] - bca["eer_lo"][0]) > 0.8 * (pct["eer_hi"][0] - pct["eer_lo"][0])


def test_bca_equals_percentile_for_a_symmetric_unbiased_statistic() -> None:
    rng = np.random.default_rng(1)
    v = rng.normal(size=(20000, 1))
    jack = np.linspace(-1.0, 1.0, 101)[:, None]  # symmetric: no acceleration
    lo, hi = kb.bca_interval(v, np.array([np.median(v)]), jack, 0.9)
    plo, phi = kb.percentile_interval(v, 0.9)
    assert lo[0] == pytest.approx(plo[0], abs=0.02) and hi[0] == pytest.approx(phi[0], abs=0.02)


def test_degenerate_group_is_null_with_one_warning() -> None:
    df = _trials(200, seed=6, ties=False, inf=False).with_columns(
        pl.when(pl.col("cond") == "b").then(False).otherwise(pl.col("label")).alias("label"))
    with pytest.warns(DegenerateGroupWarning, match="cond=b"):
        res = bootstrap_evaluate(df, by="cond", operating_points=0.2,
                                 intervals=Intervals(bootstrap=20))
    row = res.filter(pl.col("cond") == "b")
    assert row["eer"][0] is None and row["n_tar"][0] == 0


def test_bad_arguments_say_what() -> None:
    df = _trials(50, seed=1)
    with pytest.raises(ScoreframeError, match="`ci`"):
        bootstrap_evaluate(df, intervals=Intervals(ci=1.5))
    with pytest.raises(ScoreframeError, match="`speaker` not found"):
        bootstrap_evaluate(df, intervals=Intervals(resample=["speaker"]))
    with pytest.raises(ScoreframeError, match="`method`"):
        bootstrap_evaluate(df, intervals=Intervals(method="normal"))  # type: ignore[arg-type]
    with pytest.raises(ScoreframeError, match="`resample`"):
        bootstrap_evaluate(df, intervals=Intervals(resample=["trial", "model"]))
    for b in (0, -3, 100_001, 1.5):
        with pytest.raises(ScoreframeError, match="`bootstrap`"):
            bootstrap_evaluate(df, intervals=Intervals(bootstrap=b))  # type: ignore[arg-type]
    for ci in (0.0, 1.0, -0.1):
        with pytest.raises(ScoreframeError, match="`ci`"):
            sf.evaluate(df, intervals=Intervals(bootstrap=10, ci=ci))
    with pytest.raises(ScoreframeError, match="`speaker` not found"):
        sf.compare(pl.concat([df.with_columns(system=pl.lit("A")),
                              df.with_columns(system=pl.lit("B"))]),
                   "A", "B", intervals=Intervals(bootstrap=10, resample=["speaker"]))


def test_trials_needed_follows_the_scaling_argument() -> None:
    df = _trials(2000, seed=8, ties=False, inf=False)
    res = bootstrap_evaluate(df, operating_points=0.2, intervals=Intervals(bootstrap=200, seed=0))
    loose = trials_needed(res, rel_width=100.0)
    assert loose["more_tar"][0] == 0 and loose["more_non"][0] == 0
    g = trials_needed(res, rel_width=0.05)
    rel = g["rel_width"][0]
    t, n = g["n_tar"][0], g["n_non"][0]
    a, b = (t + g["more_tar"][0]) / t, (n + g["more_non"][0]) / n
    # the recommended growth brings the predicted width to the target (and not far below)
    flat = res.explode("dcf").unnest("dcf")
    p = 0.2
    pm, pf = flat["pmiss_min"][0], flat["pfa_min"][0]
    vm, vf = p * p * pm * (1 - pm) / t, (1 - p) ** 2 * pf * (1 - pf) / n
    s_m, s_f = vm / (vm + vf), vf / (vm + vf)
    predicted = rel * math.sqrt(s_m / a + s_f / b)
    assert predicted <= 0.05 * (1 + 1e-3)
    assert predicted >= 0.05 * 0.95
    assert g["rule30_more_tar"][0] == (0 if g["n_miss_min"][0] >= 30 else
                                       math.ceil(t * 30 / g["n_miss_min"][0]) - t)


def test_no_warning_for_infinite_scores() -> None:
    df = _trials(120, seed=0, ties=True, inf=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = bootstrap_evaluate(df, operating_points=0.5, intervals=Intervals(bootstrap=30))
    assert res["cllr"][0] == math.inf  # row 2 (kept: rows 0-2 come first) is a non-target at +inf


def test_interval_views_draw_the_frames_values() -> None:
    from scoreframe.kernels.elementary import probit
    from scoreframe.views.plots.intervals import (
        det_interval_plot,
        forest_plot,
        interval_points,
        nber_interval_plot,
    )

    df = _trials(400, seed=10, ties=False, inf=False)
    res = bootstrap_evaluate(df, by="cond", operating_points=(0.1, 0.5),
                             intervals=Intervals(bootstrap=60))
    pts = interval_points(res)
    flat = res.explode("dcf").unnest("dcf")
    np.testing.assert_allclose(pts["probit_pfa_min_lo"].to_numpy(),
                               probit(flat["pfa_min_lo"].to_numpy()))
    np.testing.assert_allclose(pts["prior_log_odds"].to_numpy(),
                               np.log(flat["p_target"] / (1 - flat["p_target"])).to_numpy())
    spec = nber_interval_plot(sf.nber_curve(df, by="cond"), res).to_dict()
    his = {round(v["hi"], 4) for layer in spec["layer"] if "rule" in str(layer.get("mark"))
           for v in layer.get("data", {}).get("values", []) if "hi" in v}
    assert {round(v, 4) for v in flat["act_dcf_norm_hi"].to_list()} <= his
    det = det_interval_plot(sf.det_curve(df, by="cond"), res).to_dict()
    assert any("rect" in str(layer.get("mark")) for layer in det["layer"])
    two = pl.concat([df.with_columns(system=pl.lit("A")),
                     df.with_columns(system=pl.lit("B"),
                                     score=pl.col("score") * 0.5)])
    forest = forest_plot(sf.compare(two, "A", "B", operating_points=0.1,
                                    intervals=Intervals(bootstrap=40))).to_dict()
    rows = [v["row"] for layer in forest["layer"] for v in layer.get("data", {}).get(
        "values", []) if "row" in v]
    assert "eer" in rows and "min_dcf_norm @ 0.1" in rows


def test_row_wise_draws_equal_the_reference_inverse_cdf() -> None:
    h = kb.hash_strings(*_bytes([f"t{i}" for i in range(5000)]))
    rows = np.array([0, 1, 7, 1000])
    key = kb.stream_key(-3, "segment")  # any integer seed
    fast = kb.poisson_multiplicities(h, rows, key=key)
    rk = kb.splitmix64(np.uint64(key) + rows.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    ref = kb.poisson_from_uniform(kb.splitmix64(h[None, :] ^ rk[:, None]))
    np.testing.assert_array_equal(fast, ref)
    # the inverse CDF itself, on both sides of every threshold floor(2^64 F(j)), F from scipy
    # (a margin of 2^14 covers last-bit differences between the two CDF computations)
    for j in range(12):
        edge = int(stats.poisson.cdf(j, 1.0) * 2.0**64)
        u = np.array([edge - 2**14, min(edge + 2**14, 2**64 - 1)], dtype=np.uint64)
        assert kb.poisson_from_uniform(u).tolist() == [j, j + 1]
    assert kb.poisson_from_uniform(np.array([0], dtype=np.uint64)).tolist() == [0]


def test_evaluate_with_bootstrap_carries_the_same_intervals() -> None:
    df = _trials(500, seed=12, ties=False, inf=False)
    two = pl.concat([df.with_columns(system=pl.lit("s1")),
                     df.with_columns(system=pl.lit("s2"), score=pl.col("score") + 1.0)])
    res = sf.evaluate(two, by="cond", operating_points=(0.05, 0.3),
                      intervals=Intervals(bootstrap=40, seed=3))
    iv = bootstrap_evaluate(two, by="cond", operating_points=(0.05, 0.3),
                            intervals=Intervals(bootstrap=40, seed=3))
    cols = ["system", "cond", "eer_lo", "eer_hi", "cllr_lo", "cllr_hi", "min_cllr_hi"]
    assert res.select(cols).equals(iv.select(cols))
    flat = sf.explode_dcf(res)
    ivf = iv.explode("dcf").unnest("dcf")
    for c in ("act_dcf_norm_lo", "min_dcf_norm_hi", "min_dcf_norm"):
        np.testing.assert_array_equal(flat[c].to_numpy(), ivf[c].to_numpy())


def test_all_tied_min_cllr_point_inside_its_interval() -> None:
    # every score equal: one PAV block; min_cllr (with BOSARIS' ramp) of every replicate and
    # of the data come from the same kernel, so the point lies inside its interval
    rng = np.random.default_rng(0)
    n = 400
    df = pl.DataFrame({"score": np.zeros(n), "label": rng.random(n) < 0.3,
                       "model": [f"m{i % 20}" for i in range(n)],
                       "segment": [f"s{i}" for i in range(n)]})
    for resample in ("trial", ["model", "segment"]):
        res = sf.evaluate(df, intervals=Intervals(bootstrap=200, resample=resample, seed=1))
        assert res["min_cllr_lo"][0] <= res["min_cllr"][0] <= res["min_cllr_hi"][0]
        assert res["eer"][0] == 0.5 and res["eer_lo"][0] == res["eer_hi"][0] == 0.5


@pytest.mark.slow  # starts a 2-process LocalCluster (~30 s on a busy machine)
def test_dask_engine_gives_the_same_intervals(tmp_path) -> None:
    pytest.importorskip("distributed")
    df = _trials(300, seed=13, ties=False, inf=False)
    kw = {"by": "cond", "operating_points": 0.2,
          "intervals": Intervals(bootstrap=30, seed=4, resample=["model", "segment"],
                                 method="bca")}
    local = bootstrap_evaluate(df, engine=Engine(workers=1), **kw)
    df.write_parquet(tmp_path / "t.parquet")  # the dask engine reads datasets by path
    remote = bootstrap_evaluate(str(tmp_path / "t.parquet"),
                                engine=Engine("dask", memory_limit=1 << 16, workers=2), **kw)
    assert local.equals(remote)


# --- bit identity: every engine, worker count, memory limit, file split and row order ---------
def _two_systems(n: int = 3000, seed: int = 21) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.25
    base = np.where(lab, rng.normal(1.5, 1.5, n), rng.normal(-1.0, 1.5, n))
    ids = {"model": [f"m{i % 40}" for i in range(n)], "segment": [f"s{i // 40}" for i in range(n)],
           "cond": rng.choice(["x", "y", "z"], n), "label": lab}
    other = base + rng.normal(0, 0.7, n)
    return pl.concat([pl.DataFrame(ids | {"system": "A", "score": np.round(base, 2)}),
                      pl.DataFrame(ids | {"system": "B", "score": np.round(other, 2)})])


KW = {"by": "cond", "operating_points": (0.05, 0.3),
      "intervals": Intervals(bootstrap=30, seed=9, resample=["model", "segment"])}


def _outputs(data: object, engine: Engine) -> tuple[pl.DataFrame, ...]:
    """Points and intervals (every family that needs no trial_type), p-values, curves."""
    ev = sf.evaluate(data, **KW, metrics=["binary", "forensic"],  # type: ignore[arg-type]
                     engine=engine)
    cmp = sf.compare(data, "A", "B", **KW, engine=engine)  # type: ignore[arg-type]
    curves = [f(data, by="cond", engine=engine)  # type: ignore[arg-type]
              for f in (sf.det_curve, sf.ape_curve, sf.nber_curve)]
    points = sf.dcf_points(data, by="cond", p_target=(0.05, 0.3),  # type: ignore[arg-type]
                           engine=engine)
    return ev, cmp, *curves, points


@pytest.fixture(scope="module")
def reference() -> tuple[pl.DataFrame, ...]:
    return _outputs(_two_systems(), Engine("memory", workers=1))


def _split(df: pl.DataFrame, root, files: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    shuffled = df[rng.permutation(df.height)]
    root.mkdir()
    for i, part in enumerate(np.array_split(np.arange(df.height), files)):
        shuffled[part].write_parquet(root / f"part-{i}.parquet")
    return str(root)


ENGINES = ([("memory", w, "2GB") for w in (1, 2, 3)]
           + [("streaming", w, lim) for w in (1, 2, 3) for lim in ("64KiB", "1MiB")]
           + [pytest.param("dask", w, lim, marks=pytest.mark.slow)
              for w in (1, 2, 3) for lim in ("64KiB", "1MiB")])


@pytest.mark.parametrize("files", [1, 4])
@pytest.mark.parametrize(("engine", "workers", "limit"), ENGINES)
def test_every_output_bit_identical_across_engines(tmp_path, reference, engine, workers, limit,
                                                   files) -> None:
    if engine == "dask":
        pytest.importorskip("distributed")
    path = _split(_two_systems(), tmp_path / "ds", files, seed=files * 10 + workers)
    got = _outputs(path, Engine(engine, workers=workers, memory_limit=limit))
    for want, have in zip(reference, got, strict=True):
        assert have.equals(want)
    if engine == "streaming":  # the out-of-core engine ran (several score ranges)
        stats, _ = group_statistics(path, by="cond",
                                    engine=Engine(memory_limit=limit, workers=workers),
                                    intervals=Intervals(bootstrap=2,
                                                              resample=["model", "segment"]))
        assert stats.engine == "out-of-core" and stats.n_ranges > 1


BLAS_SCRIPT = r"""
import hashlib, sys
import numpy as np, polars as pl
import scoreframe as sf
rng = np.random.default_rng(5)
n = 60_000
lab = rng.random(n) < 0.2
df = pl.DataFrame({"score": rng.normal(size=n) + 2 * lab, "label": lab,
                   "model": [f"m{i % 300}" for i in range(n)],
                   "segment": [f"s{i // 300}" for i in range(n)]})
res = sf.evaluate(df, intervals=sf.metrics.Intervals(bootstrap=64, resample=["model", "segment"],
                                                    seed=2))
print(hashlib.sha256(res.write_json().encode()).hexdigest())
"""


def test_same_intervals_with_one_blas_thread_and_the_default(tmp_path) -> None:
    import os
    import subprocess
    import sys

    outs = []
    for threads in ("1", None):
        env = dict(os.environ)
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.pop(var, None)
        if threads:
            env["OPENBLAS_NUM_THREADS"] = threads
        run = subprocess.run([sys.executable, "-c", BLAS_SCRIPT], capture_output=True,
                             text=True, env=env, check=True, timeout=600)
        outs.append(run.stdout.strip())
    assert outs[0] == outs[1] and len(outs[0]) == 64
