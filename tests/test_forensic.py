"""Tests of scoreframe.metrics.forensic: ECE, ELUB, misleading evidence, Tippett, AUC.

Reference values: lir 1.3.1, scikit-learn and scipy outputs (provenance in
tests/data/official_spoof_forensic/README.md); twins written from the definitions; properties
(ECE(0) = Cllr, ECE_min(0) = minCllr without ramp, AUC = 1 - area under the steppy ROC).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

import scoreframe as sf
from scoreframe.errors import DegenerateError, ScoreframeError
from scoreframe.metrics import forensic

DATA = Path(__file__).parent / "data"
REF = json.loads((DATA / "official_spoof_forensic" / "official_reference.json").read_text())
REAL = DATA / "real" / "asvspoof5_fusion_dev" / "asvspoof5_fusion_dev.parquet"
LN10 = math.log(10.0)


def dec(v):
    """Decode the JSON encoding of +-inf."""
    if isinstance(v, list):
        return np.array([dec(x) for x in v], dtype=float)
    return {"inf": math.inf, "-inf": -math.inf}.get(v, v) if isinstance(v, str) else v


def cases():
    out = {k: (dec(e["inputs"]["target"]), dec(e["inputs"]["nontarget"]), e["forensic"])
           for k, e in REF["small"].items()}
    return out


@pytest.fixture(scope="module")
def real_cm():
    df = pl.read_parquet(REAL).filter(pl.col("system") == "cm")
    bona = df.filter(pl.col("condition") != "spoof")
    # bona fide = target rows then nontarget rows, in file order (as the reference script)
    t = np.concatenate([bona.filter(pl.col("condition") == c)["score"].to_numpy()
                        for c in ("target", "nontarget")])
    n = df.filter(pl.col("condition") == "spoof")["score"].to_numpy()
    return t, n, REF["real"]["cm_forensic"]


def all_cases(real_cm):
    return {**cases(), "real": real_cm}


llr_lists = st.lists(st.integers(-8, 8).map(lambda v: v / 2), min_size=1, max_size=15)


# ---------------------------------------------------------------- lir 1.3.1 and friends
@pytest.mark.parametrize("name", [*sorted(REF["small"]), "real"])
def test_ece_equals_lir(real_cm, name):
    t, n, ref = all_cases(real_cm)[name]
    plo = dec(ref["prior_log_odds"])
    r = forensic.ece(t, n, prior_log_odds=plo)
    np.testing.assert_array_equal(r["prior_log_odds"], plo)
    want = dec(ref["ece"])  # lir calculate_ece(exp(llr), y, sigmoid(plo))
    if np.isinf(want).any():
        np.testing.assert_array_equal(r["ece"], want)  # misleading +-inf llrs
    else:
        np.testing.assert_allclose(r["ece"], want, rtol=1e-12)
    np.testing.assert_allclose(r["ece_ref"], dec(ref["ece_ref"]), rtol=1e-12)
    # lir's own PAV (IsotonicCalibrator, via probabilities) agrees with the exact PAV
    np.testing.assert_allclose(r["ece_min"], dec(ref["ece_min_lir_pav"]), rtol=1e-12)


@pytest.mark.parametrize("name", [*sorted(REF["small"]), "real"])
def test_elub_equals_lir(real_cm, name):
    t, n, ref = all_cases(real_cm)[name]
    for am in (0, 1, 2):  # lir.algorithms.bayeserror.elub(llr / ln 10, y, add_misleading=am)
        r = forensic.elub(t, n, add_misleading=am)
        assert [r["lower_log10"], r["upper_log10"]] == ref[f"elub_add{am}"]
        assert r["lower"] == r["lower_log10"] * LN10 and r["upper"] == r["upper_log10"] * LN10
    r = forensic.elub(t, n, step_log10=0.05, substitute_extremes_log10=(-2.0, 2.0))
    assert [r["lower_log10"], r["upper_log10"]] == ref["elub_step005_ext2"]


@pytest.mark.parametrize("name", [*sorted(REF["small"]), "real"])
def test_tippett_equals_lir(real_cm, name):
    t, n, ref = all_cases(real_cm)[name]
    for cls, col in (("tar", "p_tar_ge"), ("non", "p_non_ge")):
        thr = dec(ref[f"tippett_{cls}"]["thresholds_log10"])
        if np.isnan(thr).any():  # lir's linspace(min, max) is NaN with infinite llrs
            continue
        r = forensic.tippett(t, n, thresholds=thr, log10=True)
        np.testing.assert_array_equal(r["threshold"].to_numpy(), thr)
        # lir returns percent; /100 costs one rounding
        np.testing.assert_allclose(r[col].to_numpy(), dec(ref[f"tippett_{cls}"]["p_ge"]),
                                   rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", [*sorted(REF["small"]), "real"])
def test_auc_equals_sklearn_and_mann_whitney(real_cm, name):
    t, n, ref = all_cases(real_cm)[name]
    a = forensic.auc(t, n)
    assert a == pytest.approx(ref["mannwhitney_auc"], abs=1e-14)
    if "sklearn_auc" in ref:
        assert a == pytest.approx(ref["sklearn_auc"], abs=1e-14)


def test_auc_equals_sklearn_live():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    t = np.round(rng.normal(1, 1, 300), 1)
    n = np.round(rng.normal(0, 1, 500), 1)
    y = np.r_[np.ones(300), np.zeros(500)]
    assert forensic.auc(t, n) == pytest.approx(metrics.roc_auc_score(y, np.r_[t, n]), abs=1e-14)


# ---------------------------------------------------------------- twins and properties
def area_under_steppy_roc(t, n):
    """Area under the grouped ROC in (Pfa, Pmiss) space, trapezoids between its vertices."""
    xs, ys = [1.0], [0.0]  # threshold below everything: Pfa = 1, Pmiss = 0
    for v in sorted(set(t) | set(n)):
        xs.append(sum(x > v for x in n) / len(n))
        ys.append(sum(x <= v for x in t) / len(t))
    return -float(np.trapezoid(ys, xs))


@settings(max_examples=150, deadline=None)
@given(llr_lists, llr_lists)
def test_auc_twins(t, n):
    pairs = sum(Fraction(1) if a > b else Fraction(1, 2) if a == b else Fraction(0)
                for a in t for b in n) / (len(t) * len(n))
    a = forensic.auc(t, n)
    assert a == float(pairs)
    assert a == pytest.approx(1 - area_under_steppy_roc(t, n), abs=1e-12)
    u = mannwhitneyu(t, n, alternative="two-sided").statistic
    assert a == pytest.approx(u / (len(t) * len(n)), abs=1e-14)


def test_auc_with_infinities():
    assert forensic.auc([math.inf, 0.0], [-math.inf, math.inf]) == 0.625  # (1 + .5 + 1 + 0) / 4


def ece_twin(t, n, plo):
    """Direct per-trial ECE from posteriors (Brummer 2010, ch. 7)."""
    p = 1 / (1 + math.exp(-plo))
    post_t = [1 / (1 + math.exp(-(x + plo))) for x in t]
    post_n = [1 / (1 + math.exp(-(x + plo))) for x in n]
    return (-p * np.mean([math.log2(q) for q in post_t])
            - (1 - p) * np.mean([math.log2(1 - q) for q in post_n]))


@settings(max_examples=100, deadline=None)
@given(llr_lists, llr_lists, st.floats(-4, 4))
def test_ece_twin_and_bounds(t, n, plo):
    r = forensic.ece(t, n, prior_log_odds=[plo])
    assert r["ece"][0] == pytest.approx(ece_twin(t, n, plo), rel=1e-12, abs=1e-15)
    assert r["ece_min"][0] <= r["ece"][0] + 1e-12
    assert r["ece_min"][0] <= r["ece_ref"][0] + 1e-12  # PAV is never worse than LR = 1
    p = 1 / (1 + math.exp(-plo))
    assert r["ece_ref"][0] == pytest.approx(-p * math.log2(p) - (1 - p) * math.log2(1 - p),
                                            rel=1e-13)


@settings(max_examples=100, deadline=None)
@given(llr_lists, llr_lists)
def test_ece_at_zero_is_cllr_and_min_cllr(t, n):
    r = forensic.ece(t, n, prior_log_odds=[0.0, 1.0])
    assert r["ece"][0] == pytest.approx(sf.cllr(t, n), rel=1e-13)
    assert r["ece_min"][0] == pytest.approx(sf.min_cllr(t, n, ramp=False), rel=1e-12, abs=1e-15)


def test_ece_real_at_zero(real_cm):
    t, n, _ = real_cm
    r = forensic.ece(t, n, prior_log_odds=0.0)
    assert r["ece"][0] == pytest.approx(sf.cllr(t, n), rel=1e-13)
    assert r["ece_min"][0] == pytest.approx(sf.min_cllr(t, n, ramp=False), rel=1e-12)


def test_ece_infinite_llrs():
    plo = [-1.0, 0.0, 2.0]
    # correct infinities cost nothing, misleading ones are infinitely costly
    ok = forensic.ece([math.inf, 1.0], [-math.inf, -1.0], prior_log_odds=plo)
    fin = forensic.ece([1.0], [-1.0], prior_log_odds=plo)
    np.testing.assert_allclose(ok["ece"], fin["ece"] / 2, rtol=1e-13)
    bad = forensic.ece([-math.inf, 1.0], [-1.0], prior_log_odds=plo)
    assert np.isinf(bad["ece"]).all() and np.isfinite(bad["ece_min"]).all()


def elub_twin(t, n, add_misleading=1, step=0.01, ext=(-9.0, 9.0)):
    """Vergeer et al. (2016) with lir's grid, one threshold and one trial at a time."""
    t10 = [min(max(x / LN10, ext[0]), ext[1]) for x in t]
    n10 = [min(max(x / LN10, ext[0]), ext[1]) for x in n]
    lo = max(min(t10 + n10), -np.log10(len(t) + 1))
    hi = min(max(t10 + n10), np.log10(len(n) + 1))
    k0 = min(0, int(np.floor_divide(lo, step)))
    k1 = max(0, int(np.floor_divide(hi, step) + 1))
    grid = np.linspace(k0 * step, k1 * step, k1 - k0 + 1)
    lower, upper = float(np.min(grid)), float(np.max(grid))
    left, right = [], []
    for g in grid:
        thr = 10 ** g
        acc_t = sum(10 ** x > thr for x in t10)  # misleading targets are rejected
        acc_n = sum(10 ** x > thr for x in n10) + add_misleading
        eu = 1 - acc_t / (len(t) + add_misleading) + thr * (acc_n / (len(n) + add_misleading))
        neutral = 1 - float(1 > thr) + thr * float(1 > thr)
        with np.errstate(divide="ignore", invalid="ignore"):
            if np.float64(neutral) / np.float64(eu) < 1:
                (left if g <= 0 else right).append(g)
                if g == 0:
                    right.append(g)
    if left:
        lower = max(g + step for g in left)
    if right:
        upper = min(g - step for g in right)
    return min(lower, 0.0), max(upper, 0.0)


@settings(max_examples=100, deadline=None)
@given(llr_lists, llr_lists, st.integers(0, 2))
def test_elub_twin(t, n, am):
    r = forensic.elub(t, n, add_misleading=am)
    assert (r["lower_log10"], r["upper_log10"]) == elub_twin(t, n, am)
    assert r["lower_log10"] <= 0 <= r["upper_log10"]


@settings(max_examples=100, deadline=None)
@given(llr_lists, llr_lists)
def test_misleading_and_tippett_twins(t, n):
    m = forensic.misleading_evidence(t, n)
    assert m["n_misleading_tar"] == sum(x < 0 for x in t)
    assert m["n_misleading_non"] == sum(x > 0 for x in n)
    assert m["rmep"] == m["n_misleading_tar"] / len(t)
    assert m["rmed"] == m["n_misleading_non"] / len(n)
    tp = forensic.tippett(t, n)
    assert tp["threshold"].to_list() == sorted(set(t) | set(n))
    for thr, pt, pn in tp.iter_rows():
        assert pt == sum(x >= thr for x in t) / len(t)
        assert pn == sum(x >= thr for x in n) / len(n)
    t10 = forensic.tippett(t, n, log10=True)
    np.testing.assert_allclose(t10["threshold"].to_numpy() * LN10, tp["threshold"].to_numpy(),
                               rtol=1e-15)
    assert t10["p_tar_ge"].to_list() == tp["p_tar_ge"].to_list()


def test_forensic_summary_sorted_matches_public(real_cm):
    t, n, _ = real_cm
    r = forensic.forensic_summary_sorted(np.sort(t), np.sort(n))
    e = forensic.elub(t, n)
    m = forensic.misleading_evidence(t, n)
    assert r == {"auc": forensic.auc(t, n), "rmep": m["rmep"], "rmed": m["rmed"],
                 "elub_lower_log10": e["lower_log10"], "elub_upper_log10": e["upper_log10"]}


def test_inputs_not_modified():
    t = np.array([3.0, -math.inf, 1.0])
    n = np.array([math.inf, -1.0])
    t0, n0 = t.copy(), n.copy()
    forensic.elub(t, n)  # lir clips its input in place; scoreframe must not
    forensic.ece(t, n, prior_log_odds=[0.0])
    np.testing.assert_array_equal(t, t0)
    np.testing.assert_array_equal(n, n0)


def test_errors():
    with pytest.raises(ScoreframeError) as e:
        forensic.ece([1.0, math.nan], [0.0], prior_log_odds=[0.0])
    assert "\n" not in str(e.value) and "`tar_llr`" in str(e.value)
    with pytest.raises(DegenerateError, match="`non_llr` is empty"):
        forensic.elub([1.0], [])
    with pytest.raises(ScoreframeError, match="prior_log_odds"):
        forensic.ece([1.0], [0.0], prior_log_odds=[math.inf])
    with pytest.raises(ScoreframeError, match="add_misleading"):
        forensic.elub([1.0], [0.0], add_misleading=-1)
    with pytest.raises(ScoreframeError, match="ELUB grid"):
        forensic.elub([1.0], [0.0], step_log10=0.0)
    with pytest.raises(ScoreframeError, match="thresholds"):
        forensic.tippett([1.0], [0.0], thresholds=[math.nan])
    with pytest.raises(DegenerateError):
        forensic.auc([], [0.0])


# ---------------------------------------------------------------- views
def test_tippett_and_ece_plots(real_cm):
    from scoreframe.views.plots.forensic import ece_plot, thin_rows, tippett_plot

    t, n, _ = real_cm
    tp = forensic.tippett(t, n)
    spec = tippett_plot(tp, log10=True, max_points=500).to_dict()
    rows = spec["layer"][0]["data"]["values"]
    assert len(rows) <= 501 and rows[-1]["threshold"] == pytest.approx(tp["threshold"][-1] / LN10,
                                                                       rel=1e-4)
    assert spec["layer"][0]["encoding"]["x"]["title"] == "log10(LR)"
    thin = thin_rows(tp.with_columns(series=pl.lit("a")), max_points=500)
    assert thin["threshold"][0] == tp["threshold"][0] and thin.height <= 501
    both = pl.concat([forensic.ece_curve(t, n).with_columns(system=pl.lit("cm")),
                      forensic.ece_curve(t / 4, n / 4).with_columns(system=pl.lit("cm/4"))])
    spec = ece_plot(both, series=["system"]).to_dict()
    vals = spec["layer"][0]["data"]["values"]
    at0 = [v for v in vals if v["prior_log_odds"] == 0.0 and v["series"] == "cm"]
    assert at0[0]["LRs"] == pytest.approx(sf.cllr(t, n), rel=1e-4)  # 5 significant digits
    assert len(spec["layer"][1]["data"]["values"]) == 281  # the reference, drawn once
    assert {spec["layer"][i]["mark"]["interpolate"] for i in (0, 1)} == {"natural"}
    uneven = forensic.ece_curve(t, n, prior_log_odds=[-2.0, 0.0, 0.5, 3.0])
    assert ece_plot(uneven).to_dict()["layer"][0]["mark"]["interpolate"] == "linear"


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_report_ece_grid_draws_the_exact_curve(real_cm, scale):
    """The report's coarse ECE grid, drawn as the chart draws it, stays under a pixel.

    The chart draws a natural cubic spline through the grid's exact points (Vega-Lite's
    ``interpolate="natural"``: d3's natural spline, parametrized by the point index, which on a
    uniform grid is SciPy's natural ``CubicSpline`` in the prior log odds). Measured against the
    exact ECE on a grid 16 times finer, in pixels of the chart's height (300 px from 0 to the
    highest curve): far below one pixel, where straight segments between the same points would
    be off by several (the reason the grid can be this coarse).
    """
    from scipy.interpolate import CubicSpline

    from scoreframe.results.curves import ECE_GRID
    from scoreframe.views.plots.style import HEIGHT

    t, n, _ = real_cm
    t, n = t * scale, n * scale
    lo, hi, k = ECE_GRID
    coarse = forensic.ece_curve(t, n, prior_log_odds=np.linspace(lo, hi, k))
    fine = forensic.ece_curve(t, n, prior_log_odds=np.linspace(lo, hi, 16 * (k - 1) + 1))
    measures = ("ece", "ece_min", "ece_ref")
    pixel = max(fine[c].max() for c in measures) / HEIGHT
    x, xf = coarse["prior_log_odds"].to_numpy(), fine["prior_log_odds"].to_numpy()
    for c in measures:
        drawn = CubicSpline(x, coarse[c].to_numpy(), bc_type="natural")(xf)
        assert np.max(np.abs(drawn - fine[c].to_numpy())) < 0.2 * pixel, c
    straight = np.interp(xf, x, coarse["ece_ref"].to_numpy())
    assert np.max(np.abs(straight - fine["ece_ref"].to_numpy())) > pixel


@settings(max_examples=100, deadline=None)
@given(llr_lists, llr_lists, st.integers(0, 2))
def test_mergeable_forms(t, n, am):
    """AUC pair counts and ELUB counts add over score ranges (for the statistics layer)."""
    from scoreframe.kernels import forensic as kf

    ts, ns = np.sort(t), np.sort(n)
    cut = 0.25  # split every class at the same score: A = scores < cut, B = scores >= cut
    ta, tb = ts[ts < cut], ts[ts >= cut]
    na, nb = ns[ns < cut], ns[ns >= cut]
    merged = (kf.auc_pair_count(ta, na) + kf.auc_pair_count(tb, nb)
              + 2 * tb.shape[0] * na.shape[0])
    assert merged == kf.auc_pair_count(ts, ns)
    t10, n10 = ts / LN10, ns / LN10
    grid = kf.elub_grid(float(min(t10[0], n10[0])), float(max(t10[-1], n10[-1])), len(t), len(n),
                        0.01)
    thr = 10 ** grid

    def above(x):
        return x.shape[0] - np.searchsorted(10 ** (x / LN10), thr, side="right")

    acc_t = above(ta) + above(tb)
    acc_n = above(na) + above(nb)
    assert kf.elub_from_counts(grid, acc_t, acc_n, len(t), len(n), add_misleading=am,
                               step=0.01) == kf.elub(t10, n10, add_misleading=am, step=0.01,
                                                     extremes=(-9.0, 9.0))


def test_auc_pair_count_below_is_the_pair_count_with_ties() -> None:
    """From the left positions, the count equals the two-search count (ties, infinities)."""
    from scoreframe.kernels.forensic import auc_pair_count, auc_pair_count_below

    rng = np.random.default_rng(11)
    for n_tar, n_non in ((0, 3), (3, 0), (1, 1), (50, 80), (400, 300)):
        tar = np.sort(np.concatenate([rng.integers(-5, 6, n_tar) / 2.0,
                                      [-np.inf, np.inf][: min(n_tar, 2)]]))
        non = np.sort(np.concatenate([rng.integers(-5, 6, n_non) / 2.0,
                                      [-np.inf, np.inf][: min(n_non, 2)]]))
        below = np.searchsorted(non, tar, side="left")
        assert auc_pair_count_below(tar, non, below) == auc_pair_count(tar, non)
