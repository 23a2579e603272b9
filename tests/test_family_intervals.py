"""Bootstrap intervals of the spoof and forensic metrics against explicit resampling.

Twins: every replicate value of every spoof and forensic metric declared with intervals
(the statistics' own kernels on the range with every trial repeated by its weight, merged
across ranges) equals the value ``scoreframe.evaluate`` gives for the materialized replicate
(each trial repeated ``multiplicity`` times with ``np.repeat``; multiplicities from the
documented recipe, computed here independently of polars), and the ``_lo``/``_hi`` columns
are the percentiles of those values. Bit-identity across engines, workers, memory limits,
file splits and row order; the CLI and the report carry the bounds.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import polars as pl
import pytest
from conftest import row_weights
from polars.testing import assert_frame_equal
from test_families_stats import sasv_table

import scoreframe as sf
from scoreframe.errors import DegenerateGroupWarning
from scoreframe.kernels import bootstrap as kb
from scoreframe.metrics import declared, interval_metrics, replicate_values
from scoreframe.results.evaluate import group_statistics

B = 12
FAMILIES = ["spoof", "forensic"]
WITH_IV = ["a_dcf", "sasv_eer", "sv_eer", "spf_eer", "auc", "rmep", "rmed",
           "elub_lower_log10", "elub_upper_log10"]




def _row_weights(df: pl.DataFrame, resample: tuple[str, ...], seed: int) -> np.ndarray:
    return row_weights(df, resample, np.arange(B), seed)


def _quiet(fn, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
    with warnings.catch_warnings():  # a replicate may lose a class of a condition
        warnings.simplefilter("ignore", DegenerateGroupWarning)
        return fn(*a, **kw)


def _nan(v: object) -> float:
    return np.nan if v is None else float(v)  # type: ignore[arg-type]


def test_the_declarations() -> None:
    got = [m.name for m in interval_metrics(declared(family=FAMILIES))]
    assert got == WITH_IV  # not the a-DCF threshold (a score) nor the spoof count


@pytest.mark.parametrize("resample", [("trial",), ("model", "segment")])
def test_replicates_equal_explicit_resampling(resample: tuple[str, ...]) -> None:
    df = sasv_table(21, 360)
    opts = sf.Intervals(bootstrap=B, seed=4, resample=list(resample))
    metrics = interval_metrics(declared(family=FAMILIES))
    stats, ops = group_statistics(df, by="condition", intervals=opts,
                                  metrics=declared(family=["binary", *FAMILIES]))
    res = _quiet(sf.evaluate, df, by="condition", metrics=FAMILIES, intervals=opts)
    weights = _row_weights(df, resample, 4)
    got = {us.unit.key["condition"]: replicate_values(us.stats, ops, metrics)
           for us in stats.units}
    ref: dict[tuple[str, str], list[float]] = {}
    for r in range(B):
        rep = df[np.repeat(np.arange(df.height), weights[r])]
        out = _quiet(sf.evaluate, rep, by="condition", metrics=FAMILIES, validate=False)
        for cond in ("a", "b", "c", "all"):
            row = out.filter(pl.col("condition") == cond)
            ok = row.height == 1 and row["n_tar"][0] > 0 and row["n_non"][0] > 0
            for m in WITH_IV:
                ref.setdefault((cond, m), []).append(_nan(row[m][0]) if ok else np.nan)
    checked = 0
    for cond in ("a", "b", "c", "all"):
        row = res.filter(pl.col("condition") == cond)
        for m in WITH_IV:
            want = np.array(ref[(cond, m)])
            np.testing.assert_array_equal(got[cond][(m, False)], want, err_msg=f"{m} {cond}")
            checked += int(np.isfinite(want).sum())
            lo, hi = kb.percentile_interval(want, 0.95)
            np.testing.assert_array_equal([_nan(row[f"{m}_lo"][0]), _nan(row[f"{m}_hi"][0])],
                                          [np.ravel(lo)[0], np.ravel(hi)[0]], err_msg=f"{m} {cond}")
    assert checked > 0.9 * B * 4 * len(WITH_IV)  # nearly every replicate is defined


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return sasv_table(8, 2400)


KW = {"by": "condition", "metrics": FAMILIES,
      "intervals": sf.Intervals(bootstrap=B, seed=2, resample=("model", "segment"))}


@pytest.mark.parametrize(("limit", "workers", "shuffle", "files"),
                         [("48KB", 1, False, 0), ("48KB", 2, True, 0), ("96KB", 2, True, 3),
                          ("2GB", 1, True, 0)])
def test_bit_identical_across_engines(tmp_path, table, limit, workers, shuffle, files) -> None:  # noqa: ANN001
    base = _quiet(sf.evaluate, table, **KW)
    assert {f"{m}_{e}" for m in WITH_IV for e in ("lo", "hi")} <= set(base.columns)
    data: pl.DataFrame | str = table.sample(fraction=1.0, shuffle=True, seed=workers) \
        if shuffle else table
    if files:
        ds = tmp_path / "ds"
        ds.mkdir()
        assert isinstance(data, pl.DataFrame)
        for i, part in enumerate(data.iter_slices(-(-data.height // files))):
            part.write_parquet(ds / f"part{i}.parquet")
        data = str(ds)
    eng = sf.Engine(memory_limit=limit, workers=workers)
    assert_frame_equal(base, _quiet(sf.evaluate, data, engine=eng, **KW))
    if limit != "2GB":  # the out-of-core engine ran over several score ranges
        stats, _ = group_statistics(data, by="condition", engine=eng,
                                    metrics=declared(family=["binary", *FAMILIES]),
                                    intervals=KW["intervals"])
        assert stats.engine == "out-of-core" and stats.n_ranges > 2


def test_forensic_alone_and_bca_out_of_core(table) -> None:  # noqa: ANN001
    """Without a class column the forensic statistics read the label classes."""
    kw = {"by": "condition", "metrics": ["forensic"],
          "intervals": sf.Intervals(bootstrap=B, seed=1, method="bca")}
    mem = _quiet(sf.evaluate, table, **kw)
    ooc = _quiet(sf.evaluate, table, engine=sf.Engine(memory_limit="48KB", workers=2), **kw)
    assert_frame_equal(mem, ooc)
    assert "auc_lo" in mem.columns and "a_dcf_lo" not in mem.columns
    assert (mem["auc_lo"] <= mem["auc"]).all() and (mem["auc"] <= mem["auc_hi"]).all()


def test_replicates_carry_only_the_statistics_of_metrics_with_intervals(table) -> None:  # noqa: ANN001
    from scoreframe.metrics.families import A_DCF, PAIRS
    from scoreframe.stats.summary import ScoreHistogram

    h = ScoreHistogram()
    stats, _ = group_statistics(table, metrics=declared(family=["binary", *FAMILIES]),
                                statistics=(h,), intervals=sf.Intervals(bootstrap=3))
    rep = stats.units[0].stats.replicates[0]
    assert A_DCF in rep.extra and PAIRS in rep.extra and h not in rep.extra
    assert h in stats.units[0].stats.extra


def test_cli_json_and_table_carry_the_bounds(tmp_path, capsys) -> None:  # noqa: ANN001
    from scoreframe.cli import main

    p = tmp_path / "t.parquet"
    sasv_table(2, 1500).write_parquet(p)
    assert main(["evaluate", str(p), "--spoof", "--forensic", "--bootstrap", "20",
                 "--format", "json"]) == 0
    group = json.loads(capsys.readouterr().out)["groups"][0]
    for m in WITH_IV:
        assert group[f"{m}_lo"] <= group[m] <= group[f"{m}_hi"], m
    assert "a_dcf_threshold_lo" not in group and "n_spoof_lo" not in group
    assert main(["evaluate", str(p), "--spoof", "--forensic", "--bootstrap", "20"]) == 0
    text = capsys.readouterr().out
    assert f"{group['a_dcf']:.4f} [{group['a_dcf_lo']:.4f}, {group['a_dcf_hi']:.4f}]" in text


def test_compare_and_report(table) -> None:  # noqa: ANN001
    from scoreframe.views.report import build_report

    opts = sf.Intervals(bootstrap=10)
    two = pl.concat([table.with_columns(system=pl.lit("s1")),
                     table.with_columns(system=pl.lit("s2"), score=pl.col("score") * 0.5)])
    rep = _quiet(build_report, two, by="system", metrics=FAMILIES, intervals=opts,
                 compare=("s1", "s2"))
    res = _quiet(sf.evaluate, two, by="system", metrics=FAMILIES, intervals=opts)
    for m in ("a_dcf", "sasv_eer", "auc", "elub_upper_log10"):
        assert_frame_equal(rep.summary.select(f"{m}_lo", f"{m}_hi"),
                           res.select(f"{m}_lo", f"{m}_hi"))
    cmp = rep.comparison
    assert cmp is not None
    a_dcf = cmp.filter(pl.col("metric") == "a_dcf")
    assert a_dcf.height == 1 and a_dcf["diff_lo"][0] <= a_dcf["diff"][0] <= a_dcf["diff_hi"][0]
    assert "auc" in cmp["metric"].to_list()


@pytest.mark.parametrize("seed", range(12))
def test_weighted_a_dcf_kernel_equals_the_kernel_on_repeated_trials(seed) -> None:  # noqa: ANN001
    """ADcf.reduce_weighted (no repetition) against ADcf.reduce on the repeated trials."""
    from scoreframe.kernels import spoof as ks
    from scoreframe.kernels.sorted_scores import sort_scores
    from scoreframe.stats._families import ADcf
    from scoreframe.stats._statistics import ClassData, Context, RangeData
    from scoreframe.stats.summary import Request, empty_stats

    rng = np.random.default_rng(seed)
    names = ("target", "nontarget", "spoof")
    x = {c: np.sort(np.round(rng.normal(m, 1.0, int(rng.integers(3, 60))), int(seed % 2)))
         for c, m in zip(names, (1.0, -1.0, 0.3), strict=True)}
    w = {c: rng.integers(0, 4, v.shape[0]) for c, v in x.items()}  # zeros too
    allv = np.unique(np.concatenate(list(x.values())))
    cuts = np.concatenate(([-np.inf], np.sort(rng.choice(allv, size=min(allv.size, 4),
                                                         replace=False)), [np.inf]))
    # cheap false alarms make the all-accepted point the minimum (its threshold: below the
    # lowest trial of positive weight)
    stat = ADcf() if seed % 3 else ADcf(c_fa_nontarget=0.01, c_fa_spoof=0.01)
    blocks = empty_stats(Request()).blocks
    totals = {c: int(w[c].sum()) for c in names}
    off = dict.fromkeys(names, 0)
    got = want = None
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        sel = {c: (v >= lo) & ((v < hi) | (hi == np.inf)) for c, v in x.items()}
        rep = {c: np.repeat(x[c][sel[c]], w[c][sel[c]]) for c in names}
        s = sort_scores(rep["target"], np.concatenate((rep["nontarget"], rep["spoof"])))
        ctx = Context(1, 1)  # unused by the a-DCF
        plain = RangeData(s, ctx, blocks, {c: ClassData(rep[c], totals[c], off[c])
                                           for c in names})
        unrep = RangeData(s, ctx, blocks, {c: ClassData(x[c][sel[c]], totals[c], off[c])
                                           for c in names})
        want = stat.merge(want, stat.reduce(plain) if s.n_tar + s.n_non else None)
        got = stat.merge(got, stat.reduce_weighted(unrep, {c: w[c][sel[c]] for c in names},
                                                   stat.prepare(unrep)))
        for c in names:
            off[c] += rep[c].shape[0]
    assert got == want
    if all(totals.values()):
        full = ks.a_dcf(*(np.repeat(x[c], w[c]) for c in names), **stat_costs(stat))
        assert want == (full["min_a_dcf"], full["threshold"])


def stat_costs(stat) -> dict[str, float]:  # noqa: ANN001
    return {k: getattr(stat, k) for k in ("p_target", "p_nontarget", "p_spoof", "c_miss",
                                          "c_fa_nontarget", "c_fa_spoof")}


@pytest.mark.slow
def test_dask_gives_the_same_intervals(tmp_path, table) -> None:  # noqa: ANN001
    pytest.importorskip("distributed")
    ds = tmp_path / "ds"
    ds.mkdir()
    for i, part in enumerate(table.iter_slices(900)):
        part.write_parquet(ds / f"part{i}.parquet")
    base = _quiet(sf.evaluate, table, **KW)
    got = _quiet(sf.evaluate, str(ds), engine=sf.Engine("dask", workers=2, memory_limit="64KB"),
                 **KW)
    assert_frame_equal(base, got)
