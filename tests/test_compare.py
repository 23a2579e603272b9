"""Paired comparison: the same replicates for both systems, McNemar counts, alignment errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import binomtest

import scoreframe as sf
from scoreframe.errors import AlignmentError, ScoreframeError
from scoreframe.kernels import bootstrap as kb
from scoreframe.metrics import Intervals
from scoreframe.results.bootstrap import bootstrap_evaluate
from scoreframe.results.compare import compare, mcnemar_p_value, paired_p_value


def _two_systems(n: int = 400, seed: int = 0, noise: float = 0.3, shift: float = 0.0
                 ) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.3
    base = np.where(label, rng.normal(1.5, 1.5, n), rng.normal(-1.5, 1.5, n))
    other = base + rng.normal(0.0, noise, n) + shift * np.where(label, -1, 1)
    ids = {"model": [f"m{i % 37}" for i in range(n)], "segment": [f"s{i}" for i in range(n)],
           "cond": np.where(rng.random(n) < 0.5, "x", "y"), "label": label}
    a = pl.DataFrame(ids | {"system": "A", "score": base})
    b = pl.DataFrame(ids | {"system": "B", "score": other})
    return pl.concat([b, a])  # order must not matter


def _hashes(values: list[str]) -> np.ndarray:
    raw = [v.encode() for v in values]
    offsets = np.concatenate(([0], np.cumsum([len(x) for x in raw]))).astype(np.int64)
    return kb.hash_strings(np.frombuffer(b"".join(raw), dtype=np.uint8), offsets)


def test_paired_differences_equal_explicit_resampling() -> None:
    df = _two_systems(200, seed=1)
    res = compare(df, "A", "B", operating_points=0.2, intervals=Intervals(bootstrap=40, seed=5))
    a = df.filter(pl.col("system") == "A").sort("segment")
    b = df.filter(pl.col("system") == "B").sort("segment")
    h = kb.combine_hashes(_hashes(a["model"].to_list()), _hashes(a["segment"].to_list()))
    w = kb.poisson_multiplicities(h, np.arange(40), key=kb.stream_key(5, "trial")).astype(int)
    lab = a["label"].to_numpy()
    diffs = {"eer": [], "cllr": [], "min_dcf_norm": []}
    for r in range(40):
        vals = []
        for f in (a, b):
            s = f["score"].to_numpy()
            tar, non = np.repeat(s[lab], w[r][lab]), np.repeat(s[~lab], w[r][~lab])
            vals.append({"eer": sf.eer(tar, non), "cllr": sf.cllr(tar, non),
                         "min_dcf_norm": sf.min_dcf(tar, non, p_target=0.2,
                                                     normalize=True)})
        for k in diffs:
            diffs[k].append(vals[1][k] - vals[0][k])
    for k, d in diffs.items():
        row = res.filter(pl.col("metric") == k)
        lo, hi = np.quantile(d, [0.025, 0.975])
        assert row["diff_lo"][0] == pytest.approx(lo, abs=1e-12)
        assert row["diff_hi"][0] == pytest.approx(hi, abs=1e-12)
        assert row["p_value"][0] == pytest.approx(paired_p_value(np.array(d)), abs=1e-15)
    eer = res.filter(pl.col("metric") == "eer")
    sa, sb = a["score"].to_numpy(), b["score"].to_numpy()
    assert eer["a"][0] == pytest.approx(sf.eer(sa[lab], sa[~lab]), rel=1e-12)
    assert eer["diff"][0] == pytest.approx(sf.eer(sb[lab], sb[~lab]) - sf.eer(sa[lab], sa[~lab]),
                                           rel=1e-12)


def test_identical_systems_do_not_differ() -> None:
    df = _two_systems(300, seed=2, noise=0.0)
    res = compare(df, "A", "B", by="cond", operating_points=(0.1, 0.5),
                  intervals=Intervals(bootstrap=50))
    boot = res.filter(pl.col("test") == "paired bootstrap")
    for c in ("diff", "diff_lo", "diff_hi"):
        assert (boot[c] == 0).all()
    assert (res["p_value"] == 1).all()
    assert set(res["cond"]) == {"x", "y", "all"}


def test_pairing_narrows_the_interval_of_correlated_systems() -> None:
    df = _two_systems(1500, seed=3, noise=0.2, shift=0.3)
    res = compare(df, "A", "B", operating_points=0.2, intervals=Intervals(bootstrap=300))
    single = bootstrap_evaluate(df, operating_points=0.2, intervals=Intervals(bootstrap=300))
    width_a = single["eer_hi"][0] - single["eer_lo"][0]
    width_b = single["eer_hi"][1] - single["eer_lo"][1]
    row = res.filter(pl.col("metric") == "eer")
    assert row["diff_hi"][0] - row["diff_lo"][0] < 0.5 * np.hypot(width_a, width_b)
    assert row["diff"][0] > 0 and row["diff_lo"][0] > 0 and row["p_value"][0] < 0.01


def test_mcnemar_counts_and_p_values_brute_force() -> None:
    df = _two_systems(500, seed=4, noise=1.0)
    p_target = (0.05, 0.5)
    res = compare(df, "A", "B", by="cond", operating_points=p_target,
                  intervals=Intervals(bootstrap=20))
    a = df.filter(pl.col("system") == "A").sort("segment")
    b = df.filter(pl.col("system") == "B").sort("segment")
    for cond in ("x", "y", "all"):
        m = np.ones(a.height, bool) if cond == "all" else (a["cond"] == cond).to_numpy()
        lab = a["label"].to_numpy()[m]
        sa, sb = a["score"].to_numpy()[m], b["score"].to_numpy()[m]
        for p in p_target:
            t = -np.log(p / (1 - p))
            wrong_a = np.where(lab, sa < t, sa >= t)
            wrong_b = np.where(lab, sb < t, sb >= t)
            for metric, mask in (("misses", lab), ("false_alarms", ~lab)):
                row = res.filter((pl.col("cond") == cond) & (pl.col("metric") == metric)
                                 & (pl.col("p_target") == p))
                assert row["a"][0] == np.count_nonzero(wrong_a & mask)
                assert row["b"][0] == np.count_nonzero(wrong_b & mask)
                ao = int(np.count_nonzero(wrong_a & ~wrong_b & mask))
                bo = int(np.count_nonzero(~wrong_a & wrong_b & mask))
                want = 1.0 if ao + bo == 0 else binomtest(ao, ao + bo, 0.5).pvalue
                assert row["p_value"][0] == pytest.approx(want, rel=1e-12)


def test_mcnemar_textbook_value() -> None:
    # 10 vs 2 discordant pairs: two-sided exact p = 2 * P(X <= 2), X ~ Bin(12, 1/2)
    # = 2 * (1 + 12 + 66) / 4096 = 0.03857...
    assert mcnemar_p_value(10, 2) == pytest.approx(2 * 79 / 4096, rel=1e-12)
    assert mcnemar_p_value(0, 0) == 1.0


def test_systems_on_different_trials_are_an_error_with_counts() -> None:
    df = _two_systems(100, seed=5)
    short = df.filter(~((pl.col("system") == "B") & pl.col("segment").is_in(["s1", "s2", "s3"])))
    with pytest.raises(AlignmentError, match="3 trial\\(s\\) only in `A`, 0 only in `B`"):
        compare(short, "A", "B", intervals=Intervals(bootstrap=10))
    with pytest.raises(ScoreframeError, match="system `C` has no trials"):
        compare(df, "A", "C", intervals=Intervals(bootstrap=10))
    with pytest.raises(ScoreframeError, match="two different systems"):
        compare(df, "A", "A", intervals=Intervals(bootstrap=10))


def test_two_way_resampling_and_bca_run() -> None:
    df = _two_systems(600, seed=6, noise=0.5, shift=0.2)
    res = compare(df, "A", "B", operating_points=0.2,
                  intervals=Intervals(bootstrap=100, resample=["model", "segment"], method="bca"))
    boot = res.filter(pl.col("test") == "paired bootstrap")
    assert (boot["diff_lo"] <= boot["diff"]).all() and (boot["diff"] <= boot["diff_hi"]).all()


def _cli(argv: list[str]) -> int:
    """Run the compare command through its own parser (as `scoreframe compare ...`)."""
    import argparse

    from scoreframe.cli import compare as cli_compare

    parser = argparse.ArgumentParser(prog="scoreframe")
    sub = parser.add_subparsers(dest="command", required=True)
    cli_compare.register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_compare_writes_the_frame(tmp_path, capsys) -> None:
    df = _two_systems(300, seed=7, noise=0.5)
    data = tmp_path / "two.parquet"
    df.write_parquet(data)
    out = tmp_path / "cmp.csv"
    assert _cli(["compare", str(data), "--systems", "A", "B", "--by", "cond", "--p-target",
                 "0.1", "--bootstrap", "50", "--resample", "model", "segment",
                 "--format", "csv", "-o", str(out)]) == 0
    got = pl.read_csv(out)
    want = compare(df, "A", "B", by="cond", operating_points=0.1,
                   intervals=Intervals(bootstrap=50, resample=["model", "segment"]))
    assert got.select("cond", "metric", "p_value").rows() == want.select(
        "cond", "metric", "p_value").rows()
    assert _cli(["compare", str(data), "--systems", "A", "B", "--bootstrap", "20"]) == 0
    table = capsys.readouterr().out
    assert "B - A" in table and "mcnemar exact" in table and "[" in table


def test_cli_compare_needs_two_systems(tmp_path) -> None:
    from scoreframe.errors import UsageError

    data = tmp_path / "two.parquet"
    _two_systems(50, seed=8).write_parquet(data)
    with pytest.raises(UsageError, match="exactly two"):
        _cli(["compare", str(data), "--systems", "A", "--bootstrap", "20"])
