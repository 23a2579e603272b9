"""Curve frames against BOSARIS (rocchdet, compute_roc + filter_roc, Norm_DCF_Plot) and math."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import assert_close

from scoreframe import metrics
from scoreframe.kernels import curves as kc
from scoreframe.kernels import sort_scores
from scoreframe.kernels.elementary import probit
from scoreframe.results.curves import ape_curve, det_curve, nber_curve


def _frame(tar, non):
    return pl.DataFrame({"score": np.r_[tar, non],
                         "label": np.r_[np.ones(len(tar), bool), np.zeros(len(non), bool)]})


def test_rocch_det_matches_bosaris(case):
    _, tar, non, e = case
    r = e["det"]["rocchdet"]
    x, y = kc.rocch_det(sort_scores(tar, non), box=tuple(r["box"]),
                        points_per_segment=r["dps"])
    assert x.shape[0] == len(r["x_probit_pfa"])
    assert_close(probit(x), r["x_probit_pfa"], rtol=1e-12, atol=1e-13)
    assert_close(probit(y), r["y_probit_pmiss"], rtol=1e-12, atol=1e-13)


def test_steppy_roc_matches_bosaris(case):
    _, tar, non, e = case
    st = e["det"].get("steppy")
    if st is None:
        pytest.skip("BOSARIS steppy ROC stored only for cases up to 25,000 scores")
    pm, pf = kc.steppy_roc(sort_scores(tar, non))
    assert_close(pm, st["pmiss"])
    assert_close(pf, st["pfa"])


def test_det_frame_rule_of_30_matches_bosaris(case):
    """Doddington's rule-of-30 lines of the DET frame against BOSARIS (rates and probits)."""
    _, tar, non, e = case
    d = det_curve(_frame(tar, non)).row(0, named=True)
    assert_close(d["dr30_pfa"], e["det"]["dr30_pfa"])
    assert_close(d["dr30_pmiss"], e["det"]["dr30_pmiss"])
    for ax in ("pfa", "pmiss"):
        if e["det"][f"dr30_{ax}"] <= 1:
            assert_close(d[f"probit_dr30_{ax}"], e["det"][f"dr30_{ax}_probit"])
        else:  # fewer than 30 trials: BOSARIS gives NaN; scoreframe clips to +inf (off chart)
            assert d[f"probit_dr30_{ax}"] == np.inf


def test_nber_matches_norm_dcf_plot(case):
    _, tar, non, e = case
    n = e["norm_dcf_plot"]["axes_m10_0"]
    df = nber_curve(_frame(tar, non), prior_log_odds=n["plo"])
    assert_close(df["act_dcf_norm"], n["actDCF"])
    assert_close(df["min_dcf_norm"], n["minDCF"])
    assert_close(df["min_pmiss"], n["minPmiss"])
    assert_close(df["min_pfa"], n["minPfa"])
    assert_close(df["act_miss_norm"] + df["act_fa_norm"], df["act_dcf_norm"], rtol=1e-12)
    for axes, grid in (("axes_m10_0", np.array(n["plo"])),
                       ("axes_m10_10", np.linspace(-10, 10, 1001))):
        d = nber_curve(_frame(tar, non), prior_log_odds=grid)
        exp = e["norm_dcf_plot"][axes]
        got_fa = (np.flatnonzero(d["dr30_fa"].to_numpy()) + 1).tolist()  # MATLAB 1-based
        got_miss = (np.flatnonzero(d["dr30_miss"].to_numpy()) + 1).tolist()
        assert got_fa == exp["dr30FA_index"] and got_miss == exp["dr30Miss_index"], axes


def test_nber_worked_example_b():
    df = nber_curve(_frame([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4]),
                    prior_log_odds=[-2.0, 0.0, 2.0])
    assert df["act_dcf_norm"].to_list() == pytest.approx([2.863019, 0.533333, 2.144478],
                                                         abs=1e-6)
    assert df["min_dcf_norm"].to_list() == pytest.approx([0.6, 0.533333, 0.666667], abs=1e-6)


def test_ape_areas_and_eer():
    tar, non = [-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4]
    grid = np.linspace(-40, 40, 160001)
    df = ape_curve(_frame(tar, non), prior_log_odds=grid)
    area = np.trapezoid(df["act"].to_numpy(), grid)
    assert area == pytest.approx(2 * np.log(2) * metrics.cllr(tar, non), rel=1e-4)
    assert np.trapezoid(df["min"].to_numpy(), grid) == pytest.approx(
        2 * np.log(2) * metrics.min_cllr(tar, non, ramp=False), rel=1e-4)
    assert df["min"].max() == pytest.approx(metrics.eer(tar, non), abs=1e-3)
    assert df.filter(pl.col("prior_log_odds") == 0.0)["default"][0] == 0.5


def test_det_frame_decimates_but_keeps_hull_vertices():
    rng = np.random.default_rng(1)
    tar, non = rng.normal(2, 1, 20_000), rng.normal(0, 1, 200_000)
    full = det_curve(_frame(tar, non), resolution=None)
    dec = det_curve(_frame(tar, non), resolution=0.02)
    st_full = full.filter(curve="steppy")
    st_dec = dec.filter(curve="steppy")
    assert st_dec.height < st_full.height / 5
    pm, pf = metrics.rocch(tar, non)
    kept = set(zip(st_dec["pmiss"].to_list(), st_dec["pfa"].to_list(), strict=True))
    assert all((a, b) in kept for a, b in zip(pm.tolist(), pf.tolist(), strict=True))
    assert dec["eer"][0] == pytest.approx(metrics.eer(tar, non))
    assert dec["dr30_pmiss"][0] == pytest.approx(30 / 20_000)


def test_curves_group_by_condition():
    df = pl.DataFrame({"score": [3.0, 1.0, 2.0, 0.0, 2.5, -1.0],
                       "label": [True, True, False, False, True, False],
                       "cond": ["a", "a", "a", "a", "b", "b"]})
    nb = nber_curve(df, by="cond", prior_log_odds=[-1.0, 0.0])
    assert nb.columns[0] == "cond" and nb.height == 4
    assert ape_curve(df, by="cond")["cond"].unique().sort().to_list() == ["a", "b"]


@pytest.mark.parametrize("seed", range(6))
def test_det_curve_is_the_same_however_the_trials_are_split(tmp_path, seed):
    """Out of core a unit is reduced in score ranges: a range's end inside a run of one label
    is no corner, and a range's own hull vertices are not all the unit's; the decimated curve
    must still be the one a single range gives (with ties, infinities, several groups)."""
    from scoreframe import Engine

    rng = np.random.default_rng(seed)
    n = 6000
    lab = rng.random(n) < 0.3
    s = np.round(rng.normal(size=n) + 1.5 * lab, int(rng.integers(1, 3)))
    s[rng.random(n) < 0.01] = np.inf
    s[rng.random(n) < 0.01] = -np.inf
    df = pl.DataFrame({"score": s, "label": lab, "cond": rng.choice(["a", "b"], n)})
    path = tmp_path / "ds.parquet"
    df[rng.permutation(n)].write_parquet(path)
    for resolution in (0.005, 0.05, None):
        want = det_curve(df, by="cond", resolution=resolution, engine="memory")
        for limit in ("16KiB", "64KiB"):
            got = det_curve(str(path), by="cond", resolution=resolution,
                            engine=Engine("streaming", memory_limit=limit, workers=2))
            assert got.equals(want), (resolution, limit)
    full = det_curve(df, resolution=None, engine="memory").filter(pl.col("curve") == "steppy")
    dec = det_curve(df, resolution=0.5, engine="memory").filter(pl.col("curve") == "steppy")
    assert dec.height < full.height  # it does decimate
