"""The spoof and forensic families on the statistics layer: one reduction, every engine.

The columns must equal the array API of scoreframe.metrics.spoof / .forensic (itself checked
against the official implementations in test_spoof.py / test_forensic.py) on each group's
scores, and be bit-identical in memory, out of core (tiny memory limits: many score ranges),
on Dask, across worker counts, file splits and row order.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from scoreframe import Engine, OperatingPoints, evaluate
from scoreframe.kernels.sorted_scores import sort_scores
from scoreframe.metrics import forensic, spoof
from scoreframe.stats._families import (
    ADcf,
    ElubCounts,
    InterpolatedEer,
    elub_bounds,
    interpolated_eer_value,
)
from scoreframe.stats._statistics import ClassData, Context, RangeData
from scoreframe.stats.summary import Request, empty_stats, merge, reduce_sorted

FAMILY_COLS = ["a_dcf", "a_dcf_threshold", "sasv_eer", "sv_eer", "spf_eer", "n_spoof", "auc",
               "rmep", "rmed", "elub_lower_log10", "elub_upper_log10"]


def sasv_table(seed: int, n: int = 6000) -> pl.DataFrame:
    """Synthetic SASV trials with ties (scores rounded) and infinite llrs, 3 conditions."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(np.array(["target", "nontarget", "spoof"]), size=n, p=[0.3, 0.5, 0.2])
    mean = np.where(kind == "target", 2.0, np.where(kind == "nontarget", -1.5, 0.5))
    score = np.round(rng.normal(mean, 1.5), 1)
    score[rng.choice(n, 3, replace=False)] = np.inf
    score[rng.choice(n, 3, replace=False)] = -np.inf
    return pl.DataFrame({"model": [f"m{i % 97}" for i in range(n)],
                         "segment": [f"s{i}" for i in range(n)],
                         "score": score, "label": kind == "target", "trial_type": kind,
                         "condition": rng.choice(np.array(["a", "b", "c"]), size=n)})


def reference_row(part: pl.DataFrame) -> dict[str, object]:
    t, n, s = (part.filter(pl.col("trial_type") == c)["score"].to_numpy()
               for c in ("target", "nontarget", "spoof"))
    a = spoof.a_dcf(t, n, s)
    e = spoof.sasv_eer(t, n, s)
    non = np.concatenate((n, s))
    m = forensic.misleading_evidence(t, non)
    el = forensic.elub(t, non)
    return {"a_dcf": a["min_a_dcf"], "a_dcf_threshold": a["threshold"], **e,
            "n_spoof": s.size, "auc": forensic.auc(t, non), "rmep": m["rmep"],
            "rmed": m["rmed"], "elub_lower_log10": el["lower_log10"],
            "elub_upper_log10": el["upper_log10"]}


@pytest.mark.parametrize("seed", [0, 1])
def test_columns_equal_the_array_api_in_memory_and_out_of_core(seed):
    df = sasv_table(seed)
    mem = evaluate(df, by="condition", metrics=["spoof", "forensic"])
    ooc = evaluate(df, by="condition", metrics=["spoof", "forensic"],
                   engine=Engine(memory_limit="64KB"))
    for res in (mem, ooc):
        for cond in ("a", "b", "c", "all"):
            part = df if cond == "all" else df.filter(pl.col("condition") == cond)
            row = res.filter(pl.col("condition") == cond).row(0, named=True)
            ref = reference_row(part)
            assert {c: row[c] for c in FAMILY_COLS} == ref, cond
    assert_frame_equal(mem, ooc)


def test_bit_identical_across_engines_workers_splits_and_row_order(tmp_path):
    df = sasv_table(7, 9000)
    kw = {"by": "condition", "metrics": ["spoof", "forensic"],
          "operating_points": OperatingPoints([0.01, 0.3])}
    base = evaluate(df, **kw)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=3)
    ds = tmp_path / "ds"
    ds.mkdir()
    for i, part in enumerate(shuffled.iter_slices(2500)):
        part.write_parquet(ds / f"part{i}.parquet")
    for other in (evaluate(shuffled, **kw),
                  evaluate(df, engine=Engine(memory_limit="48KB", workers=1), **kw),
                  evaluate(shuffled, engine=Engine(memory_limit="96KB", workers=3), **kw),
                  evaluate(str(ds), engine=Engine(memory_limit="48KB", workers=2), **kw)):
        assert_frame_equal(base, other)
    if importlib.util.find_spec("dask.distributed") is not None:
        on_dask = evaluate(str(ds), engine=Engine("dask", workers=2, memory_limit="64KB"),
                           **kw)
        assert_frame_equal(base, on_dask)


def test_equalized_rows_unchanged_by_the_class_split():
    df = sasv_table(4).with_columns(half=(pl.col("segment").str.slice(1).cast(pl.Int64) % 2)
                                    .cast(pl.String))
    plain = evaluate(df, by="condition", equalize_by="half")
    both = evaluate(df, by="condition", equalize_by="half", metrics=["spoof", "forensic"])
    ooc = evaluate(df, by="condition", equalize_by="half", metrics=["spoof", "forensic"],
                   engine=Engine(memory_limit="64KB"))
    assert_frame_equal(plain, both.select(plain.columns))
    assert_frame_equal(both, ooc)


def test_cm_labels_and_degenerate_groups():
    df = sasv_table(5)
    cm = df.with_columns(label=pl.col("trial_type") != "spoof")  # bona fide is the positive
    res = evaluate(cm, metrics=["spoof"])
    ref = reference_row(cm)
    assert res.row(0, named=True)["a_dcf"] == ref["a_dcf"]
    no_spoof = df.filter((pl.col("trial_type") != "spoof") | (pl.col("condition") != "a"))
    with pytest.warns(Warning, match="spoof"):
        out = evaluate(no_spoof, by="condition", metrics=["spoof"])
    row = out.filter(pl.col("condition") == "a").row(0, named=True)
    assert row["a_dcf"] is None and row["n_spoof"] == 0 and row["eer"] is not None


# --- the range kernels against the whole-group kernels, over random range splits ----------


def split_reduce(classes: dict[str, np.ndarray], cuts: np.ndarray, request: Request):
    """Reduce each score range with its context and classes, then merge (lowest first)."""
    label = {"target": True, "nontarget": False, "spoof": False}
    edges = np.concatenate(([-np.inf], cuts, [np.inf]))
    totals = {c: x.size for c, x in classes.items()}
    tot_t = sum(x.size for c, x in classes.items() if label[c])
    tot_n = sum(x.size for c, x in classes.items() if not label[c])
    off = dict.fromkeys(classes, 0)
    out = empty_stats(request)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        part = {c: np.sort(x[(x >= lo) & ((x < hi) | (hi == np.inf))])
                for c, x in classes.items()}
        tar = np.sort(np.concatenate([x for c, x in part.items() if label[c]]))
        non = np.sort(np.concatenate([x for c, x in part.items() if not label[c]]))
        ctx = Context(tot_t, tot_n, sum(off[c] for c in part if label[c]),
                      sum(off[c] for c in part if not label[c]))
        cd = {c: ClassData(x, totals[c], off[c], x.size if label[c] else 0)
              for c, x in part.items()}
        out = merge(out, reduce_sorted(sort_scores(tar, non), request, ctx, classes=cd))
        for c, x in part.items():
            off[c] += x.size
    return out


@pytest.mark.parametrize("seed", range(12))
def test_range_kernels_merge_to_the_whole_group_values(seed):
    rng = np.random.default_rng(seed)
    classes = {c: np.round(rng.normal(m, 1.0, int(rng.integers(5, 80))), int(rng.integers(0, 2)))
               for c, m in (("target", 1.5), ("nontarget", -1.0), ("spoof", 0.5))}
    stats = (ADcf(), InterpolatedEer(("target",), ("nontarget", "spoof")),
             InterpolatedEer(("target",), ("spoof",)), ElubCounts())
    request = Request(statistics=stats)
    allv = np.unique(np.concatenate(list(classes.values())))
    cuts = np.sort(rng.choice(allv, size=min(allv.size, int(rng.integers(1, 8))),
                              replace=False))
    st = split_reduce(classes, cuts, request)
    t, n, s = (np.sort(classes[c]) for c in ("target", "nontarget", "spoof"))
    a = spoof.a_dcf(t, n, s)
    assert st.get(stats[0]) == (a["min_a_dcf"], a["threshold"])
    e = spoof.sasv_eer(t, n, s)
    assert interpolated_eer_value(st.get(stats[1]), t.size, n.size + s.size) == e["sasv_eer"]
    assert interpolated_eer_value(st.get(stats[2]), t.size, s.size) == e["spf_eer"]
    el = forensic.elub(t, np.concatenate((n, s)))
    assert elub_bounds(st.get(stats[3]), t.size, n.size + s.size) == (
        el["lower_log10"], el["upper_log10"])


def test_range_data_sides_merge_classes():
    r = RangeData(sort_scores([1.0], [0.0, 2.0]), Context(1, 2), empty_stats(Request()).blocks,
                  {"a": ClassData(np.array([0.0]), 3, 1), "b": ClassData(np.array([2.0]), 2, 0)})
    both = r.side(("a", "b"), target=False)
    assert both.scores.tolist() == [0.0, 2.0] and (both.total, both.offset) == (5, 1)
    assert r.side(None, target=True).scores.tolist() == [1.0]


# --- the report: one reduction, curves from the statistics ----------------------------------


def count_passes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the plan of every Polars query run (collect, collect_batches, collect_all)."""
    seen: list[str] = []
    collect, batches, collect_all = (pl.LazyFrame.collect, pl.LazyFrame.collect_batches,
                                     pl.collect_all)

    def c(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append(self.explain())
        return collect(self, *a, **k)

    def b(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append(self.explain())
        return batches(self, *a, **k)

    def al(frames, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.extend(f.explain() for f in frames)
        return collect_all(frames, *a, **k)

    monkeypatch.setattr(pl.LazyFrame, "collect", c)
    monkeypatch.setattr(pl.LazyFrame, "collect_batches", b)
    monkeypatch.setattr(pl, "collect_all", al)
    return seen


def test_report_with_every_family_and_intervals_reads_the_data_once(monkeypatch):
    from scoreframe import Intervals
    from scoreframe.views.report import build_report

    df = sasv_table(11, 3000).drop("model", "segment")  # no id columns: no duplicate check
    seen = count_passes(monkeypatch)
    rep = build_report(df, by="condition", operating_points=[0.01, 0.1],
                       intervals=Intervals(bootstrap=20), metrics=["forensic", "spoof"])
    # a query that projects no column (the row count the engine choice reads) reads no data
    passes = [q for q in seen if " 0/" not in q.split("PROJECT", 1)[-1][:40]]
    assert len(passes) == 1, passes
    assert rep.summary["a_dcf"].null_count() == 0 and "eer_lo" in rep.summary.columns
    for col in ("a_dcf_lo", "sasv_eer_hi", "auc_lo", "rmed_hi"):  # spoof, forensic intervals
        assert rep.summary[col].null_count() == 0, col
    assert (rep.summary["a_dcf_lo"] <= rep.summary["a_dcf"]).all()
    assert rep.tippett is not None and rep.tippett.height and rep.ece is not None
    assert rep.histograms.height and rep.intervals is not None


def test_report_curves_equal_the_array_api_on_every_engine():
    from scoreframe.results.curves import ForensicCurves, histogram_points
    from scoreframe.results.evaluate import group_statistics
    from scoreframe.stats.summary import ScoreHistogram

    df = sasv_table(12, 4000)
    fc = ForensicCurves(1)
    h = ScoreHistogram()
    frames = []
    for kw in ({}, {"engine": Engine(memory_limit="48KB")}):
        stats, ops = group_statistics(df, by="condition", thresholds=fc.thresholds,
                                      statistics=(fc.ece, h), **kw)
        out = []
        for us in stats.units:
            from scoreframe.metrics.registry import GroupStats

            g = GroupStats(us.stats, ops)
            out.append((fc.tippett(us.unit.key, g), fc.ece_curve(us.unit.key, g),
                        histogram_points(us.unit.key, g, h, bins=30)))
        frames.append(out)
    for (t1, e1, h1), (t2, e2, h2) in zip(*frames, strict=True):  # bit-identical
        assert_frame_equal(t1, t2)
        assert_frame_equal(e1, e2)
        assert_frame_equal(h1, h2)
    pooled = frames[0][-1]
    tar = df.filter(pl.col("label"))["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    ref = forensic.tippett(tar, non, thresholds=pooled[0]["threshold"].to_numpy())
    assert np.array_equal(ref["p_tar_ge"].to_numpy(), pooled[0]["p_tar_ge"].to_numpy())
    assert np.array_equal(ref["p_non_ge"].to_numpy(), pooled[0]["p_non_ge"].to_numpy())
    ece = forensic.ece(tar, non, prior_log_odds=fc.prior_log_odds)
    for col in ("ece", "ece_min", "ece_ref"):  # ece: exact sums vs float dot products
        np.testing.assert_allclose(pooled[1][col].to_numpy(), ece[col], rtol=1e-12)
    hist = pooled[2]
    fin = np.isfinite(tar)
    t_mass = hist.filter(pl.col("class") == "target").select(
        (pl.col("density") * (pl.col("hi") - pl.col("lo"))).sum()).item()
    assert t_mass == pytest.approx(1.0) and fin.sum() < tar.size  # infinite scores left out


@pytest.mark.parametrize("seed", range(4))
def test_a_dcf_in_small_pieces_equals_the_whole_sweep(seed, monkeypatch):
    import scoreframe.stats._families as fam

    monkeypatch.setattr(fam, "SWEEP_PIECE", 7)  # many pieces, ties at their edges
    rng = np.random.default_rng(seed)
    classes = {c: np.sort(np.round(rng.normal(m, 1.0, int(rng.integers(5, 90))), 1))
               for c, m in (("target", 1.0), ("nontarget", -1.0), ("spoof", 0.3))}
    st = split_reduce(classes, np.array([0.0]), Request(statistics=(fam.ADcf(),)))
    a = spoof.a_dcf(classes["target"], classes["nontarget"], classes["spoof"])
    assert st.get(fam.ADcf()) == (a["min_a_dcf"], a["threshold"])


def test_a_new_statistic_is_one_declaration_and_one_kernel(monkeypatch):
    """The worked example of docs/architecture.md: a statistic and a metric on every engine."""
    from dataclasses import dataclass

    from scoreframe.metrics import registry
    from scoreframe.stats.summary import Statistic

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @dataclass(frozen=True)
    class CountAbove(Statistic):
        threshold: float = 0.0

        def reduce(self, r):  # noqa: ANN001, ANN202
            return (r.s.n_tar - int(np.searchsorted(r.s.tar, self.threshold)),
                    r.s.n_non - int(np.searchsorted(r.s.non, self.threshold)))

        def merge(self, a, b):  # noqa: ANN001, ANN202
            return (a[0] + b[0], a[1] + b[1]) if a and b else a or b

    above = CountAbove(3.0)
    registry.declare(registry.Metric("tar_above_3", "targets >= 3", "%",
                                     lambda g: g.stats.get(above)[0] / g.n_tar,
                                     needs=(above,), scale=100.0))
    df = sasv_table(13)
    mem = evaluate(df, by="condition")
    ooc = evaluate(df, by="condition", engine=Engine(memory_limit="48KB"))
    assert_frame_equal(mem, ooc)
    for cond in ("a", "all"):
        part = df if cond == "all" else df.filter(pl.col("condition") == cond)
        tar = part.filter(pl.col("label"))["score"].to_numpy()
        assert mem.filter(pl.col("condition") == cond)["tar_above_3"][0] == \
            np.count_nonzero(tar >= 3.0) / tar.size


@pytest.mark.parametrize("limit", [None, "48KB"])
def test_trial_type_and_label_checks_from_the_class_counts(limit):
    from scoreframe.errors import ValidationError

    df = sasv_table(14, 3000)
    bad_spoof = df.with_columns(label=pl.when(pl.col("segment") == "s5")
                                .then(pl.lit(value=True)).otherwise(pl.col("label")))
    kind = df.filter(pl.col("segment") == "s5")["trial_type"][0]
    mixed = df.with_columns(label=pl.col("label") | ((pl.col("trial_type") == "nontarget")
                                                      & (pl.col("condition") == "a")))
    bad_value = df.with_columns(trial_type=pl.when(pl.col("segment") == "s7")
                                .then(pl.lit("bonafide")).otherwise(pl.col("trial_type")))
    cases = [(mixed, "labelled one way"), (bad_value, "bonafide")]
    if kind != "target":
        cases.append((bad_spoof, "contradicts") if kind == "spoof" else (bad_spoof, "one way"))
    for data, match in cases:
        with pytest.raises(ValidationError, match=match):
            evaluate(data, by="condition", metrics=["spoof"], engine=Engine(memory_limit=limit))
    assert evaluate(df, by="condition", metrics=["spoof"],
                    engine=Engine(memory_limit=limit)).height == 4


# --- the histogram and ELUB statistics travel a size bounded whatever the trials ------------


def bounded_scores(n: int) -> dict[str, np.ndarray]:
    """One group's scores: ``n`` trials, the same distribution whatever ``n`` (ties, an llr 0)."""
    rng = np.random.default_rng(n)
    return {"target": np.round(rng.uniform(-2.0, 4.0, n // 2), 2),
            "nontarget": np.round(rng.uniform(-4.0, 2.0, n - n // 2), 2),
            "spoof": np.zeros(0)}


def test_histogram_and_elub_results_do_not_grow_with_the_trials():
    import pickle

    from scoreframe.stats._families import HISTOGRAM_BUCKETS, ScoreHistogram

    h, e = ScoreHistogram(), ElubCounts()
    request = Request(statistics=(h, e))
    size = {}
    for n in (10**4, 10**6):
        c = bounded_scores(n)
        one = split_reduce(c, np.zeros(0), request)  # the group as one range
        size[n] = [len(pickle.dumps(one.get(s), protocol=5)) for s in (h, e)]
        # ... and in ranges, merged: the same value (a canonical form, whatever the split)
        parts = split_reduce(c, np.array([-1.5, 0.0, 0.01, 3.0]), request)
        a, b = one.get(h), parts.get(h)
        assert (a.scale, a.k0) == (b.scale, b.k0)
        assert np.array_equal(a.tar, b.tar) and np.array_equal(a.non, b.non)
        assert a.tar.sum() == c["target"].size and a.tar.shape[0] <= HISTOGRAM_BUCKETS
        ea, eb = one.get(e), parts.get(e)
        assert (ea.k0, ea.n.tolist()) == (eb.k0, eb.n.tolist())
        assert np.array_equal(ea.above, eb.above)
        assert ea.near_n.sum() == np.count_nonzero(np.concatenate(list(c.values())) == 0)
        el = forensic.elub(np.sort(c["target"]), np.sort(c["nontarget"]))
        assert elub_bounds(ea, n // 2, n - n // 2) == (el["lower_log10"], el["upper_log10"])
    assert size[10**4] == size[10**6]
    # unbounded scores: more trials reach further, the size stays under the caps
    rng = np.random.default_rng(1)
    big = reduce_sorted(sort_scores(rng.normal(2.0, 3.0, 10**6), rng.normal(0.0, 3.0, 10**6)),
                        request)
    assert big.get(h).tar.shape[0] <= HISTOGRAM_BUCKETS
    assert big.get(e).above.shape[1] <= 2 * 900 + 5


@pytest.mark.parametrize("seed", range(3))
def test_histogram_bins_show_the_scores_at_the_chart_resolution(seed):
    """Each bin counts the exact histogram's scores but those within one bucket of its edges."""
    from scoreframe.stats._families import ScoreHistogram, histogram_bins

    rng = np.random.default_rng(seed)
    tar = rng.normal(1.0 + seed, 1.0 + seed, 20000)
    non = rng.normal(-1.0, 0.5, 30000)
    h = ScoreHistogram()
    st = reduce_sorted(sort_scores(tar, non), Request(statistics=(h,))).get(h)
    edges, ct, cn = histogram_bins(st, 50)
    w = 2.0 ** st.scale
    assert (edges[1] - edges[0]) > 20 * w  # buckets far finer than the bins
    for x, got in ((tar, ct), (non, cn)):
        exact = np.histogram(np.clip(x, edges[0], edges[-1]), edges)[0]
        near = np.count_nonzero(np.min(np.abs(x[:, None] - edges[None, 1:]), axis=1) < w)
        assert got.sum() == x.size and np.abs(got - exact).sum() <= 2 * near


@pytest.mark.parametrize("kind", ["normal", "ties", "tiny", "subnormal", "huge", "one_side"])
def test_histogram_counts_each_score_in_the_bucket_of_its_exact_floor(kind):
    """Brute-force twin of the edge search: every finite score counted in ``floor(x / 2**S)``.

    The floor is taken in exact rational arithmetic (``fractions.Fraction``), per score; the
    statistic's counts come from binary searches of the bucket edges (or, on grids whose edges
    would be subnormal floats, from per-score buckets).
    """
    from fractions import Fraction

    from scoreframe.stats._families import ScoreHistogram

    rng = np.random.default_rng(len(kind))
    tar = rng.normal(1.0, 2.0, 3000)
    non = rng.normal(-1.0, 1.0, 4000)
    if kind == "ties":
        tar, non = np.round(tar, 1), np.round(non, 1)
    elif kind == "tiny":
        tar, non = tar * 1e-300, non * 1e-300
    elif kind == "subnormal":
        tar, non = tar * 1e-310, np.concatenate((non * 1e-320, [5e-324, -5e-324, 0.0]))
    elif kind == "huge":
        tar, non = tar * 1e300, np.concatenate((non, [1e300, -1e299]))
    elif kind == "one_side":
        tar = np.zeros(0)
    tar = np.concatenate((tar, [np.inf, -np.inf])) if tar.size else tar
    non = np.concatenate((non, [-np.inf]))
    h = ScoreHistogram()
    st = reduce_sorted(sort_scores(tar, non), Request(statistics=(h,))).get(h)
    width = Fraction(2) ** st.scale
    for x, got in ((tar, st.tar), (non, st.non)):
        x = x[np.isfinite(x)]
        buckets = [int((Fraction(float(v)) / width).__floor__()) - st.k0 for v in x]
        want = np.bincount(np.array(buckets, dtype=np.int64), minlength=st.tar.shape[0])
        assert min(buckets, default=0) >= 0 and want.shape[0] == st.tar.shape[0]
        assert np.array_equal(np.asarray(got, np.int64), want)
