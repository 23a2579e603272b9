"""Tests of scoreframe.metrics.spoof: a-DCF, t-DCF, ASVspoof EER, SASV EERs, trial_type checks.

Reference values come from the official implementations (provenance in
tests/data/official_spoof_forensic/README.md); twins are direct per-threshold loops written from
the published definitions; properties from the papers.
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

import scoreframe as sf
from scoreframe.errors import DegenerateError, ScoreframeError, UsageError, ValidationError
from scoreframe.metrics import spoof

DATA = Path(__file__).parent / "data"
REF = json.loads((DATA / "official_spoof_forensic" / "official_reference.json").read_text())
REAL = DATA / "real" / "asvspoof5_fusion_dev" / "asvspoof5_fusion_dev.parquet"
COSTS = {"default": {}, "asvspoof5": {"preset": "asvspoof5"}, "no_spoof_cost": {"c_fa_spoof": 0.0}}


def dec(v):
    """Decode the JSON encoding of +-inf."""
    if isinstance(v, list):
        return np.array([dec(x) for x in v], dtype=float)
    return {"inf": math.inf, "-inf": -math.inf}.get(v, v) if isinstance(v, str) else v


@pytest.fixture(scope="module")
def real() -> dict[str, np.ndarray]:
    df = pl.read_parquet(REAL)
    return {f"{s}_{c}": df.filter((pl.col("system") == s) & (pl.col("condition") == c))["score"]
            .to_numpy() for s in ("asv", "cm") for c in ("target", "nontarget", "spoof")}


# ---------------------------------------------------------------- twins (from the definitions)
def merged(*classes):
    """Trials in ascending score order, ties broken by class order (a stable sort)."""
    items = [(float(x), c) for c, arr in enumerate(classes) for x in arr]
    return sorted(items, key=lambda p: (p[0], p[1]))


def twin_a_dcf(t, n, s, pt=0.9, pn=0.05, ps=0.05, cm=1.0, cn=10.0, cs=20.0):
    """Per-trial sweep, one threshold at a time, FIRST minimum (Shim et al. 2024, eqs 1-2)."""
    items = merged(t, n, s)
    norm = min(cn * pn + cs * ps, cm * pt)
    best, thr = math.inf, None
    for k in range(len(items) + 1):
        rej = [c for _, c in items[:k]]
        pmiss = rej.count(0) / len(t)
        pfn = (len(n) - rej.count(1)) / len(n)
        pfs = (len(s) - rej.count(2)) / len(s)
        v = ((cm * pt) * pmiss + (cn * pn) * pfn + (cs * ps) * pfs) / norm
        if v < best:
            best = v
            thr = items[0][0] - 1e-8 if k == 0 else items[k - 1][0]
    return best, thr


def twin_det(pos, neg):
    """Per-trial (Pmiss, Pfa, threshold) lists, positives first at ties, first point min - 0.001."""
    items = merged(pos, neg)
    out = []
    for k in range(len(items) + 1):
        rej = [c for _, c in items[:k]]
        thr = items[0][0] - 0.001 if k == 0 else items[k - 1][0]
        out.append((rej.count(0) / len(pos), (len(neg) - rej.count(1)) / len(neg), thr))
    return out


def twin_eer(t, n):
    best, res = math.inf, None
    for pm, pf, thr in twin_det(t, n):
        if abs(pm - pf) < best:
            best, res = abs(pm - pf), ((pm + pf) / 2, thr)
    return res


def twin_sasv(pos, neg):
    """Grouped ROC vertices with exact fractions, polyline crossing of Pmiss = Pfa."""
    verts = [(Fraction(0), Fraction(0))]  # (pfa, tpr), thresholds from high to low
    for v in sorted(set(pos) | set(neg), reverse=True):
        verts.append((Fraction(sum(x >= v for x in neg), len(neg)),
                      Fraction(sum(x >= v for x in pos), len(pos))))
    for (x0, y0), (x1, y1) in zip(verts, verts[1:], strict=False):
        g0, g1 = 1 - x0 - y0, 1 - x1 - y1
        if g0 > 0 >= g1:
            if x0 == x1:
                return float(x0)
            return float(x0 + g0 / (g0 - g1) * (x1 - x0))
    raise AssertionError("no crossing")


def twin_t_dcf(asv_t, asv_n, asv_s, bona, spf, variant="2021"):
    """ASV at the ASVspoof EER threshold, then the per-trial CM sweep (Kinnunen et al. 2020)."""
    pt, pn, ps, cm, cfa, cfs, cmcm = 0.9405, 0.0095, 0.05, 1.0, 10.0, 10.0, 1.0
    thr = twin_eer(asv_t, asv_n)[1]
    pmiss = sum(x < thr for x in asv_t) / len(asv_t)
    pfa = sum(x >= thr for x in asv_n) / len(asv_n)
    pfs = sum(x >= thr for x in asv_s) / len(asv_s)
    if variant == "2021":
        c0 = pt * cm * pmiss + pn * cfa * pfa
        c1, c2 = pt * cm - c0, ps * cfs * pfs
    else:
        c0, c1 = 0.0, pt * (cmcm - cm * pmiss) - pn * cfa * pfa
        c2 = cfs * ps * (1 - sum(x < thr for x in asv_s) / len(asv_s))
    best, res = math.inf, None
    for pm, pf, t in twin_det(bona, spf):
        v = (c0 + c1 * pm + c2 * pf) / (c0 + min(c1, c2))
        if v < best:
            best, res = v, (v, t)
    return res


small_scores = st.lists(st.integers(-4, 4).map(float), min_size=1, max_size=12)


# ---------------------------------------------------------------- official reference values
@pytest.mark.parametrize("case", sorted(REF["small"]))
@pytest.mark.parametrize("costs", sorted(COSTS))
def test_a_dcf_equals_official_small(case, costs):
    e = REF["small"][case]
    t, n, s = (dec(e["inputs"][k]) for k in ("target", "nontarget", "spoof"))
    r = spoof.a_dcf(t, n, s, **COSTS[costs])
    ref = e["a_dcf"][costs]  # asvspoof5@fe23d30 a_dcf._calculate_a_dcf
    assert r["min_a_dcf"] == ref["min_a_dcf"]
    assert r["threshold"] == dec(ref["threshold"])


@pytest.mark.parametrize("system", ["asv", "cm"])
@pytest.mark.parametrize("costs", sorted(COSTS))
def test_a_dcf_equals_official_real(real, system, costs):
    r = spoof.a_dcf(real[f"{system}_target"], real[f"{system}_nontarget"],
                    real[f"{system}_spoof"], **COSTS[costs])
    ref = REF["real"][f"{system}_a_dcf"][costs]
    assert r["min_a_dcf"] == ref["min_a_dcf"]
    assert r["threshold"] == ref["threshold"]


@pytest.mark.parametrize("case", sorted(REF["small"]))
def test_asvspoof_eer_equals_official_small(case):
    e = REF["small"][case]
    r = spoof.asvspoof_eer(dec(e["inputs"]["target"]), dec(e["inputs"]["nontarget"]))
    assert r == {"eer": e["eer"]["eer"], "threshold": dec(e["eer"]["threshold"])}


def test_asvspoof_eer_equals_official_real(real):
    r = spoof.asvspoof_eer(real["asv_target"], real["asv_nontarget"])
    assert r == REF["real"]["asv_eer"]
    bona = np.concatenate((real["cm_target"], real["cm_nontarget"]))
    assert spoof.asvspoof_eer(bona, real["cm_spoof"]) == REF["real"]["cm_eer"]


@pytest.mark.parametrize("case", [c for c in sorted(REF["small"]) if "sasv" in REF["small"][c]])
def test_sasv_eer_equals_official_small(case):
    e = REF["small"][case]
    r = spoof.sasv_eer(*(dec(e["inputs"][k]) for k in ("target", "nontarget", "spoof")))
    for k, v in e["sasv"].items():  # SASVC2022 get_all_EERs: brentq, xtol 2e-12
        assert r[k] == pytest.approx(v, abs=1e-11)


@pytest.mark.parametrize("system", ["asv", "cm"])
def test_sasv_eer_equals_official_real(real, system):
    r = spoof.sasv_eer(real[f"{system}_target"], real[f"{system}_nontarget"],
                       real[f"{system}_spoof"])
    for k, v in REF["real"][f"{system}_sasv"].items():
        assert r[k] == pytest.approx(v, abs=1e-11)


KEYS = ("min_t_dcf", "cm_threshold", "asv_threshold", "p_miss_asv", "p_fa_asv",
        "p_fa_spoof_asv")


@pytest.mark.parametrize("variant", ["2021", "2019"])
def test_t_dcf_equals_official(real, variant):
    ti = REF["small_tandem"]["inputs"]
    r = spoof.t_dcf(*(dec(ti[k]) for k in ("asv_target", "asv_nontarget", "asv_spoof",
                                           "cm_bonafide", "cm_spoof")), variant=variant)
    ref = REF["small_tandem"][variant]  # 2021@9b33f5e compute_tDCF / compute_tDCF_legacy
    assert {k: r[k] for k in KEYS} == {k: ref[k] for k in KEYS}
    bona = np.concatenate((real["cm_target"], real["cm_nontarget"]))
    r = spoof.t_dcf(real["asv_target"], real["asv_nontarget"], real["asv_spoof"], bona,
                    real["cm_spoof"], variant=variant)
    ref = REF["real"][f"t_dcf_{variant}"]
    assert {k: r[k] for k in KEYS} == {k: ref[k] for k in KEYS}
    curve = spoof.t_dcf_curve(real["asv_target"], real["asv_nontarget"], real["asv_spoof"],
                              bona, real["cm_spoof"], variant=variant)
    assert curve["t_dcf"].head(5).to_list() == ref["curve_head"]
    assert int(curve["is_min"].arg_true()[0]) == ref["argmin"]
    assert curve.height == bona.shape[0] + real["cm_spoof"].shape[0] + 1


# ---------------------------------------------------------------- brute-force twins
@settings(max_examples=150, deadline=None)
@given(small_scores, small_scores, small_scores,
       st.sampled_from([(0.9, 0.05, 0.05, 1.0, 10.0, 20.0), (0.9405, 0.0095, 0.05, 1, 10, 10),
                        (0.5, 0.3, 0.2, 2.0, 1.0, 0.0)]))
def test_a_dcf_matches_per_threshold_loop(t, n, s, costs):
    pt, pn, ps, cm, cn, cs = costs
    r = spoof.a_dcf(t, n, s, p_target=pt, p_nontarget=pn, p_spoof=ps, c_miss=cm,
                    c_fa_nontarget=cn, c_fa_spoof=cs)
    assert (r["min_a_dcf"], r["threshold"]) == twin_a_dcf(t, n, s, pt, pn, ps, cm, cn, cs)
    # the rates reported belong to the minimum
    norm = min(cn * pn + cs * ps, cm * pt)
    v = (cm * pt * r["p_miss"] + cn * pn * r["p_fa_nontarget"] + cs * ps * r["p_fa_spoof"])
    assert v / norm == pytest.approx(r["min_a_dcf"], rel=1e-12, abs=1e-15)


@settings(max_examples=150, deadline=None)
@given(small_scores, small_scores)
def test_asvspoof_eer_matches_per_threshold_loop(t, n):
    e, thr = twin_eer(t, n)
    assert spoof.asvspoof_eer(t, n) == {"eer": e, "threshold": thr}


@settings(max_examples=150, deadline=None)
@given(small_scores, small_scores, small_scores)
def test_sasv_eer_matches_exact_polyline(t, n, s):
    r = spoof.sasv_eer(t, n, s)
    assert r["sasv_eer"] == pytest.approx(twin_sasv(t, n + s), abs=1e-15)
    assert r["sv_eer"] == pytest.approx(twin_sasv(t, n), abs=1e-15)
    assert r["spf_eer"] == pytest.approx(twin_sasv(t, s), abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(small_scores, small_scores, small_scores,
       st.lists(st.integers(-6, 6).map(float), min_size=3, max_size=14, unique=True),
       st.sampled_from(["2021", "2019"]))
def test_t_dcf_matches_per_threshold_loop(at, an, asp, cm, variant):
    bona, spf = cm[: len(cm) // 2], cm[len(cm) // 2:]
    try:
        r = spoof.t_dcf(at, an, asp, bona, spf, variant=variant)
    except ScoreframeError:  # C1/C2 negative or normaliser 0: checked by the twin below
        thr = twin_eer(at, an)[1]
        pfs = sum(x >= thr for x in asp) / len(asp)
        pmiss = sum(x < thr for x in at) / len(at)
        pfa = sum(x >= thr for x in an) / len(an)
        c1 = 0.9405 * (1 - pmiss) - 0.0095 * 10 * pfa
        assert pfs == 0 or c1 <= 1e-12  # (C1 == 0 exactly is possible, e.g. 10/11, 9/10)
        return
    v, thr = twin_t_dcf(at, an, asp, bona, spf, variant)
    assert (r["min_t_dcf"], r["cm_threshold"]) == (v, thr)


# ---------------------------------------------------------------- properties
@settings(max_examples=100, deadline=None)
@given(small_scores, small_scores, small_scores, st.sampled_from([(0.9, 0.05, 1.0, 10.0),
                                                                   (0.3, 0.65, 2.0, 1.0)]))
def test_a_dcf_without_spoof_cost_is_normalized_dcf(t, n, s, costs):
    """c_fa_spoof = 0: a-DCF is the normalized DCF at the effective prior.

    a-DCF(t) = (cm pt Pmiss + cn pn Pfa) / min(cm pt, cn pn) = normalized DCF at
    p_eff = cm pt / (cm pt + cn pn). Its sweep is per-trial (inside a tie group it visits
    the points where only the group's targets are rejected), but with targets first those
    extra points are dominated by the tie group's end points for any linear cost, so the
    per-trial minimum equals the minimum over real thresholds = the ROCCH minimum of
    ``scoreframe.min_dcf``. (The threshold may differ: it is not compared.)
    """
    pt, pn, cm, cn = costs
    r = spoof.a_dcf(t, n, s, p_target=pt, p_nontarget=pn, p_spoof=1 - pt - pn, c_miss=cm,
                    c_fa_nontarget=cn, c_fa_spoof=0.0)
    p_eff = cm * pt / (cm * pt + cn * pn)
    # the per-trial minimum of the normalized DCF at p_eff (targets first at ties) ...
    per_trial = min((p_eff * pm + (1 - p_eff) * pf) / min(p_eff, 1 - p_eff)
                    for pm, pf, _ in twin_det(t, n))
    assert r["min_a_dcf"] == pytest.approx(per_trial, rel=1e-12, abs=1e-14)
    # ... equals the minimum over real thresholds, i.e. scoreframe's ROCCH minDCF
    assert r["min_a_dcf"] == pytest.approx(sf.min_dcf(t, n, p_target=p_eff, normalize=True),
                                           rel=1e-12,
                                           abs=1e-14)


def test_a_dcf_without_spoof_cost_real(real):
    r = spoof.a_dcf(real["asv_target"], real["asv_nontarget"], real["asv_spoof"], c_fa_spoof=0)
    p_eff = 0.9 / (0.9 + 0.5)
    assert r["min_a_dcf"] == pytest.approx(
        sf.min_dcf(real["asv_target"], real["asv_nontarget"], p_target=p_eff, normalize=True),
        rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=15, unique=True),
       st.lists(st.floats(-5, 5), min_size=2, max_size=15, unique=True))
def test_sv_eer_without_ties_is_nist_steppy_eer(t, n):
    """Without ties the grouped ROC is the per-trial steppy ROC: SASV EER = NIST's."""
    if set(t) & set(n):
        return
    assert spoof.sasv_eer(t, n, [0.0])["sv_eer"] == pytest.approx(
        sf.eer(t, n, method="nist"), abs=1e-12)


def test_invariance_to_increasing_maps(real):
    t, n, s = real["asv_target"], real["asv_nontarget"], real["asv_spoof"]
    a = spoof.a_dcf(t, n, s)
    b = spoof.a_dcf(np.exp(3 * t), np.exp(3 * n), np.exp(3 * s))
    assert a["min_a_dcf"] == b["min_a_dcf"]
    assert spoof.sasv_eer(t, n, s) == pytest.approx(spoof.sasv_eer(t * 7 + 1, n * 7 + 1,
                                                                   s * 7 + 1), abs=1e-15)
    perm = np.random.default_rng(0).permutation(s.shape[0])
    assert spoof.a_dcf(t[::-1], n, s[perm]) == a


def test_spoof_summary_sorted_matches_public(real):
    t, n, s = (np.sort(real[f"asv_{c}"]) for c in ("target", "nontarget", "spoof"))
    r = spoof.spoof_summary_sorted(t, n, s)
    assert r["a_dcf"] == spoof.a_dcf(t, n, s)["min_a_dcf"]
    assert r["a_dcf_threshold"] == spoof.a_dcf(t, n, s)["threshold"]
    assert {k: r[k] for k in ("sasv_eer", "sv_eer", "spf_eer")} == spoof.sasv_eer(t, n, s)
    assert r["n_spoof"] == 22296


def test_asvspoof5_preset_equals_explicit_costs():
    t, n, s = [1.0, 2.0, 0.5], [0.0, 1.0], [-1.0, 1.5, 0.2]
    assert spoof.a_dcf(t, n, s, preset="asvspoof5") == spoof.a_dcf(
        t, n, s, p_target=0.9405, p_nontarget=0.0095, p_spoof=0.05, c_fa_spoof=10.0)


# ---------------------------------------------------------------- errors
def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_nan_and_empty_rejected():
    with pytest.raises(ScoreframeError) as e:
        spoof.a_dcf([1.0, math.nan], [0.0], [0.0])
    assert "`target`" in one_line(e) and "NaN" in str(e.value) and "index 1" in str(e.value)
    with pytest.raises(DegenerateError) as e:
        spoof.sasv_eer([1.0], [0.0], [])
    assert "`spoof` is empty" in one_line(e)
    with pytest.raises(ScoreframeError):
        spoof.asvspoof_eer([[1.0, 2.0], [3.0, 4.0]], [0.0])


def test_t_dcf_errors():
    at, an, asp = [2.0, 3.0], [0.0, 1.0], [2.5, 0.5]
    bona, spf = [1.0, 2.0, 3.0], [-1.0, 0.5]
    with pytest.raises(ScoreframeError, match="sum to 1") as e:
        spoof.t_dcf(at, an, asp, bona, spf, p_target=0.9)
    one_line(e)
    with pytest.raises(ScoreframeError, match="negative t-DCF weights"):
        spoof.t_dcf(at, an, asp, bona, spf, p_target=0.5, p_nontarget=0.45, asv_threshold=-100)
    with pytest.raises(ScoreframeError, match="negative t-DCF weights"):
        spoof.t_dcf(at, an, asp, bona, spf, variant="2019", c_miss_cm=0.5, asv_threshold=100)
    with pytest.raises(ScoreframeError, match="non-finite") as e:
        spoof.t_dcf(at, an, asp, [1.0, math.inf, 2.0], spf)
    assert "`cm_bonafide`" in one_line(e)
    with pytest.raises(ScoreframeError, match="at least 3 distinct CM scores"):
        spoof.t_dcf(at, an, asp, [1.0, 1.0], [0.0, 0.0])
    with pytest.raises(ScoreframeError, match="variant"):
        spoof.t_dcf(at, an, asp, bona, spf, variant="2017")
    with pytest.raises(DegenerateError, match="normaliser"):  # no spoof passes the ASV: C2 = 0
        spoof.t_dcf(at, an, [-5.0], bona, spf, variant="2019")


def test_a_dcf_argument_errors():
    with pytest.raises(UsageError):
        spoof.a_dcf([1.0], [0.0], [0.0], preset="asvspoof5", c_fa_spoof=3.0)
    with pytest.raises(ScoreframeError, match="preset"):
        spoof.a_dcf([1.0], [0.0], [0.0], preset="asvspoof2019")
    with pytest.raises(ScoreframeError, match="`c_miss`"):
        spoof.a_dcf([1.0], [0.0], [0.0], c_miss=-1.0)
    with pytest.raises(ScoreframeError, match="sum to 1"):
        spoof.a_dcf([1.0], [0.0], [0.0], p_target=0.5)


# ---------------------------------------------------------------- trial_type
def test_trial_type_helpers():
    assert spoof.check_trial_types(pl.Series(["target", "spoof", "nontarget"])).tolist() == [0, 2,
                                                                                             1]
    tar, non, spf = spoof.split_trial_types([0.5, 1.0, 2.0, 3.0],
                                            ["spoof", "target", "nontarget", "target"])
    assert (tar.tolist(), non.tolist(), spf.tolist()) == ([1.0, 3.0], [2.0], [0.5])
    assert spoof.trial_type_problem(["target", "nontarget", "spoof"]) is None
    msg = spoof.trial_type_problem(["target", "Spoof", None], where="file x.parquet")
    assert "`trial_type`" in msg and "'Spoof'" in msg and "row 1" in msg and "x.parquet" in msg
    assert "2 bad value(s)" in msg
    with pytest.raises(ValidationError, match="trial_type"):
        spoof.check_trial_types(["target", "bonafide"])
    assert "wrong type" in spoof.trial_type_problem(pl.Series([1, 2]))


# ---------------------------------------------------------------- views
def test_t_dcf_plot_marks_the_minimum(real, tmp_path):
    from scoreframe.views.plots.save import save_chart
    from scoreframe.views.plots.spoof import t_dcf_plot

    bona = np.concatenate((real["cm_target"], real["cm_nontarget"]))
    args = (real["asv_target"], real["asv_nontarget"], real["asv_spoof"], bona, real["cm_spoof"])
    curve = spoof.t_dcf_curve(*args)
    r = spoof.t_dcf(*args)
    chart = t_dcf_plot(curve, max_points=300)
    spec = chart.to_dict()
    assert len(spec["layer"][0]["data"]["values"]) <= 302
    (mark,) = spec["layer"][2]["data"]["values"]
    assert mark["t_dcf"] == pytest.approx(r["min_t_dcf"], rel=1e-4)
    assert mark["cm_threshold"] == pytest.approx(r["cm_threshold"], rel=1e-4)
    out = save_chart(chart, tmp_path / "t_dcf.svg")
    assert out.read_text().lstrip().startswith("<svg")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([-np.inf, -1.5, -0.0, 0.0, 0.5, 2.0, np.inf]),
                         max_size=12), min_size=1, max_size=4))
def test_per_trial_sweep_is_the_merge_with_ties_in_argument_order(values: list[list[float]]
                                                                   ) -> None:
    """Brute-force twin: sort (score, class, position) triples; ties (-0.0 == 0.0 included)
    go by class, then by position, and each class's rejections count its trials so far."""
    from scoreframe.kernels.spoof import per_trial_sweep

    classes = [np.sort(np.array(v, dtype=np.float64)) for v in values]
    sw = per_trial_sweep(*classes)
    triples = sorted((float(x), i, j) for i, c in enumerate(classes) for j, x in enumerate(c))
    assert sw.labels.tolist() == [i for _, i, _ in triples]
    for i in range(len(classes)):
        want = np.concatenate(([0], np.cumsum([t[1] == i for t in triples]))).astype(np.int64)
        assert sw.rejected[i].tolist() == want.tolist()
