"""The tandem t-DCF on the statistics layer against its in-memory twin (paired arrays).

The brute-force twin is the former implementation: :func:`tandem_arrays` (the paired scores
as arrays) then :func:`scoreframe.metrics.spoof.t_dcf` / ``t_dcf_curve`` (per-trial sweep).
Every number must be bit-identical (``==``), on every engine, worker count, memory limit and
row order.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

from scoreframe.errors import AlignmentError
from scoreframe.metrics import spoof
from scoreframe.results import tandem as T
from scoreframe.stats import Engine


def _table(n: int, *, seed: int, ties: bool = False, cm_every: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    tt = rng.choice(np.array(["target", "nontarget", "spoof"]), n, p=[0.3, 0.3, 0.4])
    a = rng.normal(size=n) + 2.0 * (tt == "target") + rng.uniform(-1, 2) * (tt == "spoof")
    c = rng.normal(size=n) - rng.uniform(0.5, 3) * (tt == "spoof")
    if ties:  # few distinct scores: long tie groups across classes
        a, c = np.round(a * 2) / 2, np.round(c * 2) / 2
    base = pl.DataFrame({"model": [f"m{i % 17}" for i in range(n)],
                         "segment": [f"s{i}" for i in range(n)], "trial_type": tt})
    asv = base.with_columns(system=pl.lit("asv"), score=pl.Series(a))
    keep = np.arange(n) % cm_every == 0
    cm = base.filter(pl.Series(keep)).with_columns(system=pl.lit("cm"),
                                                   score=pl.Series(c[keep]))
    return pl.concat([asv, cm]).select("system", "model", "segment", "score", "trial_type")


def _brute(df: pl.DataFrame, **kw: Any) -> tuple[dict[str, float], pl.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arrays, _ = T.tandem_arrays(df, asv="asv", cm="cm",
                                    unpaired=kw.pop("unpaired", "error"))
    return spoof.t_dcf(*arrays, **kw), spoof.t_dcf_curve(*arrays, **kw)


def _assert_corners_of(corners: pl.DataFrame, full: pl.DataFrame) -> None:
    """Every corner row is a row of the per-trial curve (in order), bit for bit; the
    minimum row is the per-trial curve's first minimum."""
    rows = full.select("cm_threshold", "t_dcf", "p_miss_cm", "p_fa_cm").rows()
    j = 0
    for r in corners.select("cm_threshold", "t_dcf", "p_miss_cm", "p_fa_cm").rows():
        while rows[j] != r:
            j += 1  # IndexError: the corner is not on the per-trial curve
        j += 1
    assert corners.filter("is_min").rows() == full.filter("is_min").rows()
    assert corners["t_dcf"].min() == full["t_dcf"].min()


@pytest.mark.parametrize("seed", range(24))
def test_bit_identical_to_the_per_trial_twin(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    df = _table(int(rng.integers(20, 400)), seed=seed, ties=seed % 2 == 0)
    variant = "2019" if seed % 3 == 0 else "2021"
    kw: dict[str, Any] = {"variant": variant}
    if seed % 4 == 1:
        kw["asv_threshold"] = float(rng.normal())
    if seed % 5 == 2:
        kw.update(p_target=0.8, p_nontarget=0.1, p_spoof=0.1, c_fa_spoof=3.0)
    try:
        ref, full = _brute(df, **kw)
    except Exception as exc:  # the same error from both
        with pytest.raises(type(exc)):
            T.tandem_t_dcf(df, asv="asv", cm="cm", **kw)
        return
    got = T.tandem_t_dcf(df, asv="asv", cm="cm", **kw)
    assert {k: got[k] for k in ref} == ref
    assert got["n_trials"] == df.height // 2
    corners, n = T.tandem_curve(df, asv="asv", cm="cm", **kw)
    assert n == df.height // 2
    _assert_corners_of(corners, full)


def test_first_minimum_inside_a_flat_run_of_spoofs() -> None:
    """Rounding flattens the curve inside a run of spoofs: the first minimum is not a corner
    (C1 = 0 with a tiny C2), and its CM threshold is read back from the paired rows."""
    n = 60
    tt = np.array(["target", "nontarget", "spoof"])[np.arange(n) % 3]
    asv = np.where(tt == "spoof", 5.0 + np.arange(n), -1.0 - np.arange(n) / n)
    cm = np.where(tt == "spoof", -10.0 - np.arange(n) % 7, np.arange(n) % 5)  # one spoof run
    base = pl.DataFrame({"model": ["m"] * n, "segment": [f"s{i}" for i in range(n)],
                         "trial_type": tt})
    df = pl.concat([base.with_columns(system=pl.lit("asv"), score=pl.Series(asv)),
                    base.with_columns(system=pl.lit("cm"), score=pl.Series(cm))]
                   ).select("system", "model", "segment", "score", "trial_type")
    kw: dict[str, Any] = {"asv_threshold": 0.0, "c_fa_spoof": 4e-15}
    ref, full = _brute(df, **kw)
    assert ref["c1"] == 0.0 and ref["c2"] > 0.0
    calls: list[int] = []
    original = T._spoof_score

    def spy(*args: Any, **kwargs: Any) -> float:
        calls.append(kwargs["rank"])
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(T, "_spoof_score", spy)
        got = T.tandem_t_dcf(df, asv="asv", cm="cm", **kw)
        corners, _ = T.tandem_curve(df, asv="asv", cm="cm", **kw)
    assert calls, "the first minimum should lie inside a run"
    assert {k: got[k] for k in ref} == ref
    _assert_corners_of(corners, full)


ENGINES = [  # (kind, workers, memory limit, shuffled rows); Dask once per setting (slow start)
    (kind, workers, limit, shuffle)
    for kind, workers, limit in [("memory", None, None), ("streaming", 1, "1MB"),
                                 ("streaming", 2, "1MB"), ("streaming", 1, "64MB"),
                                 ("streaming", 2, "64MB"), ("auto", 2, "1MB"),
                                 ("dask", 1, "1MB"), ("dask", 2, "64MB")]
    for shuffle in ((False, True) if kind != "dask" else (workers == 2,))
]


@pytest.fixture(scope="module")
def engine_data() -> tuple[pl.DataFrame, dict[str, float], pl.DataFrame]:
    df = _table(6000, seed=7, ties=True)  # several score ranges at 1 MB (>= 1024 rows each)
    ref, full = _brute(df)
    return df, ref, full


@pytest.mark.parametrize(("kind", "workers", "limit", "shuffle"), ENGINES)
def test_identical_across_engines_workers_limits_and_row_order(
        engine_data: tuple[pl.DataFrame, dict[str, float], pl.DataFrame], kind: str,
        workers: int | None, limit: str | None, shuffle: bool, tmp_path: Any) -> None:
    if kind == "dask":
        pytest.importorskip("dask.distributed")
    df, ref, full = engine_data
    if shuffle:
        df = df.sample(fraction=1.0, shuffle=True, seed=3)
    eng = Engine(kind, workers=workers, memory_limit=limit, spill_dir=str(tmp_path))
    got = T.tandem_t_dcf(df, asv="asv", cm="cm", engine=eng)
    assert {k: got[k] for k in ref} == ref
    corners, n = T.tandem_curve(df, asv="asv", cm="cm", engine=eng)
    assert n == df.height // 2
    _assert_corners_of(corners, full)
    assert list(tmp_path.iterdir()) == []  # spills and the Parquet sink removed


def test_curve_is_the_same_on_every_engine_and_path(tmp_path: Any) -> None:
    df = _table(3000, seed=11)
    path = tmp_path / "sasv"
    path.mkdir()
    for i, part in enumerate(df.sample(fraction=1.0, shuffle=True, seed=1)
                             .iter_slices(1700)):
        part.write_parquet(path / f"p{i}.parquet")
    ref, _ = T.tandem_curve(df, asv="asv", cm="cm", engine="memory")
    for data in (df, str(path), pl.scan_parquet(path / "*.parquet")):
        for eng in ("memory", Engine("streaming", memory_limit="1MB", workers=2)):
            got, _ = T.tandem_curve(data, asv="asv", cm="cm", engine=eng)
            assert got.equals(ref)


def test_drop_unpaired_equals_the_twin_and_counts_without_collecting() -> None:
    df = _table(300, seed=5, cm_every=3)
    with pytest.raises(AlignmentError, match=r"200 of 300 ASV trial\(s\) have no `cm` score"):
        T.tandem_t_dcf(df, asv="asv", cm="cm")
    ref, full = _brute(df, unpaired="drop")
    for eng in ("memory", Engine("streaming", memory_limit="1MB")):
        with pytest.warns(match=r"dropped 200 of 300 ASV trial\(s\)"):
            got = T.tandem_t_dcf(df, asv="asv", cm="cm", unpaired="drop", engine=eng)
        assert {k: got[k] for k in ref} == ref
        assert got["n_trials"] == 100


def test_rows_disagreeing_on_trial_type_are_an_error_on_every_engine() -> None:
    df = _table(200, seed=2)
    bad = df.with_columns(trial_type=pl.when((pl.col("system") == "cm")
                                             & (pl.col("segment") == "s3"))
                          .then(pl.lit("spoof")).otherwise(pl.col("trial_type")))
    if bad.filter(pl.col("segment") == "s3")["trial_type"].n_unique() == 1:
        bad = bad.with_columns(trial_type=pl.when((pl.col("system") == "cm")
                                                  & (pl.col("segment") == "s3"))
                               .then(pl.lit("target")).otherwise(pl.col("trial_type")))
    for eng in ("memory", "streaming"):
        with pytest.raises(AlignmentError, match=r"disagree on `trial_type`: got 1 trial"):
            T.tandem_t_dcf(bad, asv="asv", cm="cm", engine=eng)


@pytest.mark.parametrize("engine", ["memory", Engine("streaming", memory_limit="1MB",
                                                     workers=2)], ids=["memory", "streaming"])
def test_asvspoof_eer_method_is_a_statistic_on_every_engine(engine: Any) -> None:
    """``eer_method="asvspoof"`` per group (and pooled) equals the per-trial kernel on the
    group's arrays, also when the groups span several score ranges."""
    from scoreframe import evaluate
    from scoreframe.metrics import Binary

    rng = np.random.default_rng(4)
    n = 8000
    label = rng.random(n) < 0.3
    score = np.round(rng.normal(size=n) + 1.5 * label, 1)  # ties across labels
    df = pl.DataFrame({"score": score, "label": label,
                       "cond": rng.choice(["a", "b", "c"], n)}).sample(fraction=1.0,
                                                                      shuffle=True, seed=2)
    res = evaluate(df, by="cond", metrics=[Binary(eer_method="asvspoof")], engine=engine)
    for row in res.iter_rows(named=True):
        g = df if row["cond"] == "all" else df.filter(pl.col("cond") == row["cond"])
        ref = spoof.asvspoof_eer(g.filter(pl.col("label"))["score"].to_numpy(),
                                 g.filter(~pl.col("label"))["score"].to_numpy())["eer"]
        assert row["eer"] == ref
