"""Bootstrap intervals of the biometric verification metrics against explicit resampling.

Twins: the weighted replicates of the statistics layer (FNMR at FMR located again in every
replicate, ZeroFMR/ZeroFNMR, min HTER, the Mann-Whitney AUC, rates at fixed thresholds)
give, replicate by replicate, the values ``scoreframe.evaluate`` gives for the materialized
replicate (each trial repeated ``multiplicity`` times with ``np.repeat``; multiplicities from
the documented recipe, computed here independently of polars), and the intervals are the
percentiles of those values. Bit-identity across engines, workers, memory limits, file
splits and row order.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from conftest import row_weights

import scoreframe as sf
from scoreframe.errors import DegenerateGroupWarning, UnresolvedTargetWarning
from scoreframe.kernels import bootstrap as kb
from scoreframe.metrics import explode_targets, fmr_fnmr
from scoreframe.results.evaluate import group_statistics
from scoreframe.stats.summary import VerificationRequest

FMR = [0.02, 0.1]
FNMR = [0.05, 0.3]
THR = [0.0, 1.0]
B = 16
SCALARS = ("zero_fmr", "zero_fnmr", "min_hter", "auc_mw")
BIO = sf.Biometric(fmr=FMR, fnmr=FNMR, at_threshold=THR)


def _trials(n: int = 240, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.4
    score = np.round(np.where(label, rng.normal(1.2, 1.0, n), rng.normal(-0.8, 1.0, n)), 1)
    return pl.DataFrame({
        "model": [f"m{i}" for i in rng.integers(0, 10, n)],
        "segment": [f"seg-{i}" for i in rng.integers(0, max(40, n // 4), n)],
        "score": score, "label": label,  # heavy ties within and across classes
        "cond": np.where(rng.random(n) < 0.5, "a", "b"),
        "split": np.where(rng.random(n) < 0.4, "dev", "eval"),
    }).unique(["model", "segment"], keep="first", maintain_order=True)




def _row_weights(df: pl.DataFrame, resample: tuple[str, ...], seed: int) -> np.ndarray:
    return row_weights(df, resample, np.arange(B), seed)


def _quiet(fn, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
    with warnings.catch_warnings():  # a replicate may lose a class or a resolvable target
        warnings.simplefilter("ignore", DegenerateGroupWarning)
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        return fn(*a, **kw)


def _nan(v: object) -> float:
    return np.nan if v is None else float(v)  # type: ignore[arg-type]


def _reference(df: pl.DataFrame, weights: np.ndarray, cond: str) -> dict[str, np.ndarray]:
    """Every replicate's values, from ``evaluate`` on the repeated trials: ``(B, ...)``."""
    out: dict[str, list[list[float]]] = {}
    for r in range(B):
        rep = df[np.repeat(np.arange(df.height), weights[r])]
        res = _quiet(sf.evaluate, rep, by="cond", metrics=[BIO], validate=False, pooled=False)
        row = res.filter(pl.col("cond") == cond)
        ok = row.height == 1 and row["n_tar"][0] > 0 and row["n_non"][0] > 0
        vals: dict[str, list[float]] = {}
        for m in SCALARS:
            vals[m] = [_nan(row[m][0]) if ok else np.nan]
        for kind, fields in (("fnmr_at_fmr", ("fnmr",)), ("fmr_at_fnmr", ("fmr",)),
                             ("at_threshold", ("fmr", "fnmr", "hter"))):
            items = row[kind][0] if ok else None
            for f in fields:
                vals[f"{kind}.{f}"] = [_nan(it[f]) for it in items] if items is not None \
                    else [np.nan] * (len(THR) if kind == "at_threshold" else 2)
        for k, v in vals.items():
            out.setdefault(k, []).append(v)
    return {k: np.array(v, dtype=float) for k, v in out.items()}


@pytest.mark.parametrize("resample", [("trial",), ("model", "segment"), ("model",)])
def test_intervals_equal_explicit_resampling(resample: tuple[str, ...]) -> None:
    df = _trials()
    res = _quiet(sf.evaluate, df, by="cond", metrics=[BIO],
                 intervals=sf.Intervals(bootstrap=B, seed=3, resample=list(resample)))
    weights = _row_weights(df, resample, 3)
    for cond in ("a", "b", "all"):
        sub = df if cond == "all" else df.filter(pl.col("cond") == cond)
        w = weights if cond == "all" else weights[:, (df["cond"] == cond).to_numpy()]
        ref = _reference(sub.with_columns(cond=pl.lit(cond)), w, cond)
        row = res.filter(pl.col("cond") == cond)
        for m in SCALARS:
            lo, hi = kb.percentile_interval(ref[m], 0.95)
            np.testing.assert_array_equal([_nan(row[f"{m}_lo"][0]), _nan(row[f"{m}_hi"][0])],
                                          [lo[0], hi[0]], err_msg=f"{m} {cond}")
        for kind, fields in (("fnmr_at_fmr", ("fnmr",)), ("fmr_at_fnmr", ("fmr",)),
                             ("at_threshold", ("fmr", "fnmr", "hter"))):
            items = row[kind][0]
            for f in fields:
                lo, hi = kb.percentile_interval(ref[f"{kind}.{f}"], 0.95)
                got_lo = [_nan(it[f"{f}_lo"]) for it in items]
                got_hi = [_nan(it[f"{f}_hi"]) for it in items]
                np.testing.assert_array_equal(got_lo, lo, err_msg=f"{kind}.{f} {cond}")
                np.testing.assert_array_equal(got_hi, hi, err_msg=f"{kind}.{f} {cond}")


def test_each_replicate_locates_its_own_threshold() -> None:
    """Replicate statistics equal the point statistics of the repeated scores, field by field."""
    from scoreframe.kernels import sort_scores
    from scoreframe.stats.summary import reduce_verification

    df = _trials(200, seed=4)
    req = VerificationRequest(fmr=tuple(FMR), fnmr=tuple(FNMR), thresholds=tuple(THR))
    stats, _ = group_statistics(df, verification=req,
                                intervals=sf.Intervals(bootstrap=B, seed=9,
                                                       resample=("model", "segment")))
    weights = _row_weights(df, ("model", "segment"), 9)
    s, lab = df["score"].to_numpy(), df["label"].to_numpy()
    reps = stats.units[0].stats.replicates
    for r in range(B):
        ss = sort_scores(np.repeat(s[lab], weights[r][lab]), np.repeat(s[~lab], weights[r][~lab]))
        want = reduce_verification(ss, req, total_tar=ss.n_tar, total_non=ss.n_non)
        have = reps[r].verification
        assert have is not None and have.twice_u == want.twice_u
        for a, b in ((have.at_fmr, want.at_fmr), (have.at_fnmr, want.at_fnmr)):
            np.testing.assert_array_equal(a.k, b.k)
            np.testing.assert_array_equal(a.found, b.found)
            np.testing.assert_array_equal(a.fnm[a.found], b.fnm[b.found])
            np.testing.assert_array_equal(a.fm[a.found], b.fm[b.found])
        np.testing.assert_array_equal(have.fnm, want.fnm)
        np.testing.assert_array_equal(have.fm, want.fm)


def test_fixed_threshold_intervals_equal_explicit_resampling() -> None:
    df = _trials(300, seed=6)
    res = _quiet(sf.evaluate, df, metrics=[sf.Biometric(threshold_from="split = 'dev'", fmr=[0.1])],
                 intervals=sf.Intervals(bootstrap=B, seed=2, resample=["model", "segment"]),
                 pooled=False)
    fixed = res["fixed"][0]
    ev = df.filter(pl.col("split") != "dev")
    weights = _row_weights(ev, ("model", "segment"), 2)
    s, lab = ev["score"].to_numpy(), ev["label"].to_numpy()
    for item in fixed:
        t = item["threshold"]
        if t is None:
            continue
        vals = []
        for r in range(B):
            fmr, fnmr = fmr_fnmr(np.repeat(s[lab], weights[r][lab]),
                                 np.repeat(s[~lab], weights[r][~lab]), [t])
            vals.append([fmr[0], fnmr[0], (fmr[0] + fnmr[0]) / 2.0])
        lo, hi = kb.percentile_interval(np.array(vals), 0.95)
        np.testing.assert_array_equal([item["fmr_lo"], item["fnmr_lo"], item["hter_lo"]], lo)
        np.testing.assert_array_equal([item["fmr_hi"], item["fnmr_hi"], item["hter_hi"]], hi)
        assert item["fmr_lo"] <= item["fmr"] <= item["fmr_hi"]


def _split(df: pl.DataFrame, root, files: int, seed: int) -> str:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    shuffled = df[rng.permutation(df.height)]
    root.mkdir()
    for i, part in enumerate(np.array_split(np.arange(df.height), files)):
        shuffled[part].write_parquet(root / f"part-{i}.parquet")
    return str(root)


KW = {"by": "cond", "metrics": [BIO],
      "intervals": sf.Intervals(bootstrap=24, seed=5, resample=["model", "segment"])}


@pytest.fixture(scope="module")
def reference() -> pl.DataFrame:
    return _quiet(sf.evaluate, _trials(2000, seed=8),
                  engine=sf.Engine(workers=1, memory_limit="2GB"), **KW)


@pytest.mark.parametrize(("workers", "limit", "files"),
                         [(1, "64KiB", 1), (2, "64KiB", 3), (3, "1MiB", 2), (2, "2GB", 4)])
def test_bit_identical_across_engines(tmp_path, reference, workers, limit, files) -> None:  # noqa: ANN001
    df = _trials(2000, seed=8)
    path = _split(df, tmp_path / "ds", files, seed=workers + files)
    got = _quiet(sf.evaluate, path, engine=sf.Engine(workers=workers, memory_limit=limit), **KW)
    assert got.equals(reference)
    if limit == "64KiB":  # the out-of-core engine ran over several score ranges
        opts = sf.Intervals(bootstrap=24, seed=5, resample=("model", "segment"))
        stats, _ = group_statistics(path, by="cond",
                                    engine=sf.Engine(memory_limit=limit, workers=workers),
                                    verification=VerificationRequest(fmr=tuple(FMR)),
                                    intervals=opts)
        assert stats.engine == "out-of-core" and stats.n_ranges > 1


def test_bca_and_peer_conventions() -> None:
    df = _trials(400, seed=1)
    res = _quiet(sf.evaluate, df, metrics=[sf.Biometric(fmr=FMR)],
                 intervals=sf.Intervals(bootstrap=40, method="bca"), pooled=False)
    flat = explode_targets(res)
    ok = flat.drop_nulls("fnmr_lo")
    assert ok.height and (ok["fnmr_lo"] <= ok["fnmr_hi"]).all()
    assert (res["min_hter_lo"] <= res["min_hter_hi"]).all()
    peer = _quiet(sf.evaluate, df, metrics=[sf.Biometric(fmr=FMR, convention="bob")],
                  intervals=sf.Intervals(bootstrap=20))
    assert "zero_fmr_lo" not in peer.columns and "eer_lo" in peer.columns
    assert "fnmr_lo" not in explode_targets(peer).columns


@pytest.mark.slow
def test_dask_gives_the_same_intervals(tmp_path, reference) -> None:  # noqa: ANN001
    pytest.importorskip("distributed")
    path = _split(_trials(2000, seed=8), tmp_path / "ds", 3, seed=1)
    got = _quiet(sf.evaluate, path, engine=sf.Engine("dask", workers=2, memory_limit="64KiB"),
                 **KW)
    assert got.equals(reference)


def test_cli_json_and_table_carry_the_bounds(tmp_path, capsys) -> None:  # noqa: ANN001
    import json

    from scoreframe.cli import main

    p = tmp_path / "t.parquet"
    _trials(400, seed=2).write_parquet(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        assert main(["evaluate", str(p), "--fmr", "0.1", "--biometric", "--bootstrap", "10",
                     "--resample", "model", "segment", "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        text = json.dumps(doc)
        assert "fnmr_lo" in text and "min_hter_lo" in text
        assert main(["evaluate", str(p), "--fmr", "0.1", "--bootstrap", "10"]) == 0
    assert "fnmr (%) [lo, hi]" in capsys.readouterr().out


def test_strict_rule_fixed_threshold_intervals() -> None:
    """With ``strict=True`` a score equal to the threshold is rejected in every replicate."""
    df = _trials(300, seed=12)
    thr = [0.0, 0.5]  # scores are rounded to 0.1: ties at the thresholds
    res = _quiet(sf.evaluate, df, metrics=[sf.Biometric(at_threshold=thr, strict=True)],
                 intervals=sf.Intervals(bootstrap=B, seed=4, resample=["model", "segment"]),
                 pooled=False)
    w = _row_weights(df, ("model", "segment"), 4)
    s, lab = df["score"].to_numpy(), df["label"].to_numpy()
    vals = []
    for r in range(B):
        fmr, fnmr = fmr_fnmr(np.repeat(s[lab], w[r][lab]), np.repeat(s[~lab], w[r][~lab]), thr,
                             strict=True)
        vals.append(np.concatenate((fmr, fnmr)))
    lo, hi = kb.percentile_interval(np.array(vals), 0.95)
    items = res["at_threshold"][0]
    np.testing.assert_array_equal([it["fmr_lo"] for it in items] + [it["fnmr_lo"] for it in items],
                                  lo)
    np.testing.assert_array_equal([it["fmr_hi"] for it in items] + [it["fnmr_hi"] for it in items],
                                  hi)
