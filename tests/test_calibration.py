"""Calibration and fusion: scoring-rule family, logistic regression, PAV map, fusion, JSON models.

Reference values: tests/data/bosaris (BOSARIS Toolkit outputs, see its README) and the worked
numbers of docs/math.md sections 8-10 (cited per test).
"""


import json
import math

import numpy as np
import polars as pl
import pytest
from conftest import BOSARIS, assert_close
from scipy import integrate, optimize, special

from scoreframe import metrics
from scoreframe.errors import AlignmentError, ScoreframeError
from scoreframe.estimators.calibration import LinearCalibration, PavCalibration
from scoreframe.estimators.fusion import LinearFusion
from scoreframe.estimators.models import load_model
from scoreframe.kernels.logreg import fit_linear
from scoreframe.kernels.pav_map import apply_pav_map, pav_map
from scoreframe.kernels.psr import BetaRule, from_buja, psr_beta, psr_objective
from scoreframe.kernels.sorted_scores import sort_scores

EX_A = (np.array([1.0, 2, 5, 7]), np.array([-7.0, -5, -2, -1]))
EX_B = (np.array([-3.0, 1, 2, 5, 7]), np.array([-7.0, -5, -2, -1, 3, 4]))
RULE_NAMES = ["boost", "log", "brier", "asym"]


def trials(tar, non, **extra) -> pl.DataFrame:
    n = len(tar) + len(non)
    return pl.DataFrame({"model": ["m"] * n, "segment": [f"s{i}" for i in range(n)],
                         "score": np.r_[tar, non].astype(float),
                         "label": np.r_[np.ones(len(tar), bool), np.zeros(len(non), bool)],
                         **extra})


# --- proper scoring rules (docs/math.md 9) --------------------------------------------------------
@pytest.mark.parametrize(("q", "values"), [
    (0.1, [(1.909859, 0.212207), (2.302585, 0.105361), (2.43, 0.03), (1.8, 0.010721)]),
    (0.5, [(0.636620, 0.636620), (0.693147, 0.693147), (0.75, 0.75), (1.0, 0.386294)]),
    (0.8, [(0.318310, 1.273240), (0.223144, 1.609438), (0.12, 1.92), (0.4, 1.618876)]),
])
def test_beta_family_closed_forms(q, values):
    """docs/math.md 9.2 numerical check table."""
    x = math.log(q / (1 - q))
    for name, (h1, h2) in zip(RULE_NAMES, values, strict=True):
        rule = psr_beta(name)
        assert_close(rule.cost_tar(x), h1, rtol=0, atol=1e-6, what=name)
        assert_close(rule.cost_non(x), h2, rtol=0, atol=1e-6, what=name)


@pytest.mark.parametrize(("alpha", "beta"), [(0.7, 1.5), (1.0, 2.5), (1.0, 0.6), (1.5, 0.8),
                                              (3.0, 2.0), (0.5, 0.5)])
def test_general_beta_rule_matches_quadrature(alpha, beta):
    """C(q,H1) = int_q^1 w(c)/c dc, C(q,H2) = int_0^q w(c)/(1-c) dc with Beta weights (9.1)."""
    rule = BetaRule(alpha, beta)
    b = special.beta(alpha, beta)
    for q in (0.01, 0.3, 0.5, 0.9, 0.99):
        h1 = integrate.quad(lambda c: c ** (alpha - 2) * (1 - c) ** (beta - 1) / b, q, 1,
                            limit=200)[0]
        h2 = integrate.quad(lambda c: c ** (alpha - 1) * (1 - c) ** (beta - 2) / b, 0, q,
                            limit=200)[0]
        x = math.log(q / (1 - q))
        assert_close(rule.cost_tar(x), h1, rtol=1e-7)
        assert_close(rule.cost_non(x), h2, rtol=1e-7)


@pytest.mark.parametrize("name", RULE_NAMES)
def test_rules_are_proper(name):
    """docs/math.md 9.2: for p = 0.3 the expected cost is minimized at q = 0.3."""
    rule = psr_beta(name)
    q = np.linspace(0.01, 0.99, 9801)
    x = np.log(q / (1 - q))
    cost = 0.3 * rule.cost_tar(x) + 0.7 * rule.cost_non(x)
    assert abs(q[np.argmin(cost)] - 0.3) < 1e-3


@pytest.mark.parametrize(("name", "value", "ref", "norm"), [
    ("boost", .103771, .381972, .271673), ("log", .070684, .325083, .217433),
    ("brier", .068297, .270000, .252952), ("asym", .069531, .189649, .366630)])
def test_prior_weighted_objective_example_a(name, value, ref, norm):
    """docs/math.md 9.4, example A at pi = 0.1 (objective; default system; normalized)."""
    rule = psr_beta(name)
    assert_close(psr_objective(*EX_A, 0.1, rule), value, rtol=0, atol=1e-6)
    assert_close(rule.reference(0.1), ref, rtol=0, atol=1e-6)
    assert_close(psr_objective(*EX_A, 0.1, rule, normalize=True), norm, rtol=0, atol=1e-6)
    assert_close(metrics.psr(*EX_A, p_target=0.1, rule=name), value, rtol=0, atol=1e-6)


def test_log_rule_is_cllr_at_half():
    """docs/math.md 9.4: log rule, pi = 1/2: C = ln2 * Cllr (0.111954 = ln2 * 0.161516)."""
    value = psr_objective(*EX_A, 0.5, psr_beta("log"))
    assert_close(value, 0.111954, rtol=0, atol=1e-6)
    assert_close(value, math.log(2) * metrics.cllr(*EX_A), rtol=1e-12)


def test_buja_convention_and_bad_rules():
    assert from_buja(0, 0) == psr_beta("log")
    assert from_buja(1, 1) == psr_beta("brier")
    assert from_buja(-0.5, -0.5) == psr_beta("boost")
    with pytest.raises(ValueError, match="alpha must be"):
        psr_beta(0.0, 1.0)
    with pytest.raises(ValueError, match="unknown scoring rule"):
        psr_beta("hinge")


@pytest.mark.parametrize("rule", [psr_beta(n) for n in RULE_NAMES] + [BetaRule(0.7, 1.5)])
def test_rule_derivatives_match_finite_differences(rule):
    x = np.linspace(-12, 12, 25)
    h = 1e-5
    for target in (True, False):
        cost = rule.cost_tar if target else rule.cost_non
        g, hess = rule.derivatives(x, target=target)
        assert_close(g, (cost(x + h) - cost(x - h)) / (2 * h), rtol=1e-6, atol=1e-8)
        g_p = rule.derivatives(x + h, target=target)[0]
        g_m = rule.derivatives(x - h, target=target)[0]
        assert_close(hess, (g_p - g_m) / (2 * h), rtol=1e-6, atol=1e-8)


# --- linear calibration (docs/math.md 10; BOSARIS train_linear_calibration) -----------------------
def test_linear_calibration_matches_converged_reference(case):
    name, tar, non, exp = case
    dev = trials(tar, non)
    for cal_ref in exp["linear_calibration"].values():
        cal = LinearCalibration(p_target=cal_ref["prior"]).fit(dev)
        tr = cal.training_
        # never worse than BOSARIS' own (early-stopped) optimum
        assert tr["objective_value"] <= cal_ref["nxe_train"] + 1e-12
        if "converged_scale" in cal_ref:
            assert tr["converged"], tr["message"]
            assert_close(cal.scale_, cal_ref["converged_scale"], rtol=1e-6, atol=1e-12)
            assert_close(cal.offset_, cal_ref["converged_offset"], rtol=1e-6, atol=1e-12)
            assert_close(tr["objective_value"], cal_ref["converged_nxe"], rtol=1e-9)
            # BOSARIS' parameters are within ~1e-3 of the optimum
            assert_close(cal.scale_, cal_ref["scale"], rtol=1e-3, atol=1e-9)
            llr_t, llr_n = cal(tar), cal(non)
            if cal_ref["prior"] == 0.5:  # the normalized objective at 1/2 is Cllr
                assert_close(metrics.cllr(llr_t, llr_n), tr["objective_value"], rtol=1e-12)
            # BOSARIS' cllr_after is of its own (early-stopped) parameters: exact with those
            bt = (cal_ref["scale"] * tar + cal_ref["offset"], cal_ref["scale"] * non
                  + cal_ref["offset"])
            assert_close(metrics.cllr(*bt), cal_ref["cllr_after"], rtol=1e-12)
            assert_close(metrics.cllr(llr_t, llr_n), cal_ref["cllr_after"], rtol=1e-4)
        elif name in ("tiny", "separable"):
            assert not tr["converged"]
            assert "separates" in tr["message"]
            assert tr["objective_value"] < 1e-8


def test_linear_calibration_example_b():
    """docs/math.md 10.2 example B at pi = 0.5 and 0.1."""
    for p, b, a, o in ((0.5, 0.254935, -0.152622, 0.842058), (0.1, 0.277150, -0.193415,
                                                              0.870994)):
        cal = LinearCalibration(p_target=p).fit(trials(*EX_B))
        assert_close([cal.scale_, cal.offset_, cal.training_["objective_value"]], [b, a, o],
                     rtol=0, atol=1e-6)
        assert cal.training_["initial_objective"] == pytest.approx(1.0)


def test_optimizer_matches_a_generic_twin():
    """The trust-region fit equals BFGS on the same objective (brute-force twin), every rule."""
    rng = np.random.default_rng(5)
    tar, non = rng.normal(1.5, 1.3, 300), rng.normal(-0.5, 1.0, 900)
    xt = np.column_stack([tar, np.ones_like(tar)])
    xn = np.column_stack([non, np.ones_like(non)])
    for name in ("log", "brier", "boost", "asym"):
        rule = psr_beta(name)
        fit = fit_linear(xt, xn, p_target=0.2, rule=rule, w0=np.zeros(2))

        def obj(w, rule=rule):
            return psr_objective(xt @ w, xn @ w, 0.2, rule, normalize=True)

        twin = optimize.minimize(obj, np.zeros(2), method="Nelder-Mead",
                                 options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})
        assert fit.converged, (name, fit.message)
        assert fit.objective <= twin.fun + 1e-12
        assert_close(fit.params, twin.x, rtol=1e-4, atol=1e-6, what=name)


def test_separable_data_stop_and_say_so():
    """Example A is separable (every target above every non-target): for every rule the
    optimum is at infinity, so the run ends within ``max_iter`` and reports that it did not
    converge and why. Example B is not separable: every rule converges (so a fit that always
    reports non-convergence fails here)."""
    for rule in RULE_NAMES:
        cal = LinearCalibration(p_target=0.5, objective=rule, max_iter=30).fit(trials(*EX_A))
        assert not cal.training_["converged"], rule
        assert cal.training_["n_iter"] <= 30, rule
        assert "separates" in cal.training_["message"], rule
        assert cal.scale_ > 0, rule  # heading to infinity in the right direction
        ok = LinearCalibration(p_target=0.5, objective=rule, max_iter=30).fit(trials(*EX_B))
        assert ok.training_["converged"], (rule, ok.training_["message"])


def test_calibration_errors():
    with pytest.raises(ScoreframeError, match="p_target"):
        LinearCalibration(p_target=1.0)
    with pytest.raises(ScoreframeError, match="targets and non-targets"):
        LinearCalibration().fit(trials([1.0, 2.0], []))
    two = pl.concat([trials(*EX_B).with_columns(system=pl.lit(s)) for s in ("a", "b")])
    with pytest.raises(ScoreframeError, match="one system at a time"):
        LinearCalibration().fit(two)
    with pytest.raises(ScoreframeError, match="not fitted"):
        LinearCalibration().transform(two)
    unlabelled = trials(*EX_B).with_columns(label=pl.lit(None, dtype=pl.Boolean))
    with pytest.raises(ScoreframeError, match="null `label`"):
        LinearCalibration().fit(unlabelled)


# --- PAV calibration (docs/math.md 8; BOSARIS pav_calibration) ------------------------------------
def test_pav_calibration_matches_reference(case):
    _, tar, non, exp = case
    ref = exp["pav_calibration"]
    new = np.asarray(ref["new_scores"], dtype=float)
    for key in ("small_val_0", "small_val_0p001"):
        r = ref[key]
        x, y = pav_map(sort_scores(tar, non), eps=r["small_val"])
        assert_close(x, r["score_bounds"], rtol=1e-15, atol=0)
        assert_close(y, r["llr_bounds"], rtol=1e-12, atol=1e-15)
        pav = PavCalibration(eps=r["small_val"]).fit(trials(tar, non))
        assert_close(pav(new), r["new_scores_llr"], rtol=1e-12, atol=1e-15)
        assert_close(pav(tar), r["train_tar_llr"], rtol=1e-12, atol=1e-15)
        assert_close(pav(non), r["train_non_llr"], rtol=1e-12, atol=1e-15)


def test_pav_map_example_b():
    """docs/math.md 8 example B."""
    x, y = pav_map(sort_scores(*EX_B))
    assert_close(x, [-1e6, -1, 1, 4, 5, 1e6])
    f = apply_pav_map([-10, 0, 2.5, 4.5, 10], x, y)
    assert_close(f, [-0.538997, -0.192423, 0.154151, 0.500725, 0.847298], rtol=0, atol=1e-6)
    x, y = pav_map(sort_scores(*EX_B), eps=1e-3)
    assert_close(apply_pav_map([-10.0], x, y), [-0.537997], rtol=0, atol=1e-6)


def test_pav_raw_variant_has_infinite_ends():
    """Raw PAV: the separable example A maps to -inf / +inf outside the gap; llrs = PAV llrs."""
    pav = PavCalibration(variant="raw").fit(trials(*EX_A))
    out = pav([-100.0, -1.0, 0.0, 1.0, 100.0])
    assert out.tolist() == [-math.inf, -math.inf, 0.0, math.inf, math.inf]
    tar, non = EX_B
    raw = PavCalibration(variant="raw").fit(trials(tar, non))
    t_llr, n_llr = metrics.pav_llrs(tar, non)
    assert_close(np.sort(raw(tar)), np.sort(t_llr))
    assert_close(np.sort(raw(non)), np.sort(n_llr))
    mapped = raw(np.linspace(-20, 20, 401))
    assert np.all(mapped[1:] >= mapped[:-1])


@pytest.mark.parametrize("variant", ["raw", "bosaris"])
def test_pav_calibration_equals_scipy_isotonic_regression(variant):
    """Training llrs = logit of SciPy's isotonic regression of the labels - the prior log-odds.

    Continuous scores (no ties, which SciPy would not pool); the BOSARIS variant adds its two
    dummy trials (a target at -1e6, a non-target at +1e6) to the regression.
    """
    rng = np.random.default_rng(11)
    tar, non = rng.normal(1.0, 1.0, 300), rng.normal(-1.0, 1.5, 700)
    s = np.r_[tar, non]
    y = np.r_[np.ones(tar.size), np.zeros(non.size)]
    if variant == "bosaris":
        s, y = np.r_[s, -1e6, 1e6], np.r_[y, 1.0, 0.0]
    order = np.argsort(s)
    p = np.empty_like(y)
    p[order] = optimize.isotonic_regression(y[order]).x
    n_t, n_n = y.sum(), (1 - y).sum()
    with np.errstate(divide="ignore"):
        llr = np.log(p) - np.log1p(-p) - math.log(n_t / n_n)
    pav = PavCalibration(variant=variant).fit(trials(tar, non))
    keep = slice(0, tar.size + non.size)  # the real trials
    assert_close(pav(s[keep]), llr[keep], rtol=1e-12, atol=1e-12)


# --- fusion (BOSARIS train_linear_fuser; tests/data/bosaris/fusion) -------------------------------
def fusion_frame(split: str) -> pl.DataFrame:
    t = np.loadtxt(BOSARIS / "fusion" / f"{split}_tar.txt")
    n = np.loadtxt(BOSARIS / "fusion" / f"{split}_non.txt")
    s = np.vstack([t, n])
    label = np.r_[np.ones(len(t), bool), np.zeros(len(n), bool)]
    seg = [f"{split}{i}" for i in range(len(s))]
    return pl.concat([pl.DataFrame({"model": "m", "segment": seg, "label": label,
                                    "score": s[:, k], "system": f"sys{k + 1}"})
                      for k in range(3)])


@pytest.fixture(scope="module")
def fusion_ref():
    return json.loads((BOSARIS / "fusion" / "expected.json").read_text())


@pytest.mark.parametrize("prior", ["0p5", "0p01"])
def test_linear_fusion_matches_reference(fusion_ref, prior):
    ref = fusion_ref["linear_fusion"][f"prior_{prior}_exact"]
    fuser = LinearFusion(p_target=ref["prior"]).fit(fusion_frame("dev"))
    assert fuser.training_["converged"]
    assert_close(list(fuser.weights_.values()), ref["converged_weights"], rtol=1e-6)
    assert_close(fuser.offset_, ref["converged_offset"], rtol=1e-6)
    assert fuser.training_["objective_value"] <= ref["nxe_train"] + 1e-12
    assert_close(fuser.training_["objective_value"], ref["converged_nxe"], rtol=1e-9)
    for variant in ("cstep", "exact"):  # BOSARIS' own results agree to ~1e-3 only
        assert_close(list(fuser.weights_.values()),
                     fusion_ref["linear_fusion"][f"prior_{prior}_{variant}"]["weights"],
                     rtol=2e-3)
    out = fuser.transform(fusion_frame("eval")).collect()
    tar = out.filter("label")["score"].to_numpy()
    non = out.filter(~pl.col("label"))["score"].to_numpy()
    ev = ref["eval_fused"]
    assert_close(metrics.cllr(tar, non), ev["cllr"], rtol=1e-6)
    assert_close(metrics.min_cllr(tar, non), ev["min_cllr"], rtol=1e-5)
    # EER is a ranking statistic: the tiny weight differences move it by a few trials at most
    assert_close(metrics.eer(tar, non), ev["eer"], rtol=1e-4)


def test_subsystem_calibration_matches_reference(fusion_ref):
    dev, ev = fusion_frame("dev"), fusion_frame("eval")
    for i, sub in enumerate(fusion_ref["subsystems"]):
        ref = sub["calibration_prior_0p5"]
        sel = f"system = 'sys{i + 1}'"
        cal = LinearCalibration(p_target=0.5).fit(dev, where=sel)
        assert cal.training_["objective_value"] <= ref["nxe_train"] + 1e-12
        assert_close([cal.scale_, cal.offset_], [ref["scale"], ref["offset"]], rtol=1e-3)
        out = cal.transform(ev, where=sel).collect()
        got = metrics.cllr(out.filter("label")["score"].to_numpy(),
                           out.filter(~pl.col("label"))["score"].to_numpy())
        assert_close(got, ref["eval_cllr_after"], rtol=1e-5)


def test_fusion_from_separate_datasets_and_missing_policy():
    full = fusion_frame("dev")
    parts = {s: full.filter(pl.col("system") == s).drop("system") for s in ("sys1", "sys2")}
    one = LinearFusion().fit(full.filter(pl.col("system") != "sys3"))
    two = LinearFusion().fit(parts)
    assert_close(list(one.weights_.values()), list(two.weights_.values()), rtol=1e-12)
    holed = {"sys1": parts["sys1"].slice(5), "sys2": parts["sys2"]}
    with pytest.raises(AlignmentError, match="5 trials are not scored by every system"):
        LinearFusion().fit(holed)
    dropped = LinearFusion(missing="drop").fit(holed)
    assert dropped.training_["n_tar"] + dropped.training_["n_non"] == full.height // 3 - 5
    filled = LinearFusion(missing=0.0).transform  # not fitted yet
    with pytest.raises(ScoreframeError, match="not fitted"):
        filled(holed)
    out = LinearFusion(missing=0.0).fit(holed).transform(holed).collect()
    assert out.height == full.height // 3
    assert out["score_raw_sys1"].null_count() == 0
    with pytest.raises(ScoreframeError, match="at least two systems"):
        LinearFusion().fit(parts["sys1"])


def test_quality_fusion_formula_and_training():
    """docs/math.md 10.1 example (l = 1.384); a synthetic set where quality shifts the scores."""
    fuser = LinearFusion()
    fuser.weights_, fuser.offset_ = {"a": 1.2, "b": 0.8}, 0.5
    fuser.quality_columns_ = ["snr"]
    y = np.array([[0.2, 0.0], [-0.1, 0.05]])
    fuser.quality_w_ = y + y.T
    fuser.training_ = {"loaded": True}
    wide = pl.DataFrame({"score_raw_a": [1.0], "score_raw_b": [-0.5], "q_snr": [0.3],
                         "r_snr": [0.7]})
    assert_close(wide.select(fuser.to_expr()).item(), 1.384, rtol=1e-12)

    rng = np.random.default_rng(0)
    n_model, n_seg = 40, 500
    q_model = rng.uniform(0, 1, n_model)
    q_seg = rng.uniform(0, 1, n_seg)
    mi = rng.integers(0, n_model, 20000)
    si = rng.integers(0, n_seg, 20000)
    label = rng.random(20000) < 0.3
    # both classes are shifted by the product of the two qualities (what qa'W ra can undo)
    shift = 3.0 * q_model[mi] * q_seg[si]
    base = np.where(label, 1.0, -1.0) + shift + rng.normal(0, 1, 20000)
    rows = {"model": [f"m{i}" for i in mi], "segment": [f"s{j}_{k}" for k, j in enumerate(si)],
            "label": label}
    seg_ids = rows["segment"]
    a = pl.DataFrame({**rows, "score": base + rng.normal(0, 0.3, 20000)})
    b = pl.DataFrame({**rows, "score": base + rng.normal(0, 0.3, 20000)})
    qm = pl.DataFrame({"id": [f"m{i}" for i in range(n_model)], "quality": q_model})
    qs = pl.DataFrame({"id": seg_ids, "quality": q_seg[si]})
    linear = LinearFusion().fit({"a": a, "b": b})
    quality = LinearFusion().fit({"a": a, "b": b}, quality_model=qm, quality_segment=qs)
    assert quality.training_["converged"]
    assert quality.training_["objective_value"] < linear.training_["objective_value"] - 0.01
    assert quality.training_["linear_objective_value"] == pytest.approx(
        linear.training_["objective_value"], rel=1e-9)
    w = quality.quality_w_
    assert w.shape == (2, 2) and w[0, 0] < 0 and w[1, 1] == 0.0  # undoes the shift
    out = quality.transform({"a": a, "b": b}, quality_model=qm, quality_segment=qs).collect(
    ).sort("segment")
    assert out.columns[-1] == "score" and "q_quality" not in out.columns
    llr = out["score"].to_numpy()
    lab = out["label"].to_numpy()
    assert_close(metrics.cllr(llr[lab], llr[~lab]), quality.training_["objective_value"],
                 rtol=1e-9)  # normalized log objective at 1/2 = Cllr
    back = load_model(quality.to_dict())
    again = back.transform({"a": a, "b": b}, quality_model=qm, quality_segment=qs).collect(
    ).sort("segment")
    assert_close(again["score"].to_numpy(), llr, rtol=1e-12)
    with pytest.raises(ScoreframeError, match="quality"):
        quality.transform({"a": a, "b": b})


# --- JSON models and lazy application -------------------------------------------------------------
def test_models_round_trip_through_json(tmp_path):
    dev = trials(*EX_B)
    models = [LinearCalibration(p_target=0.3, objective="brier").fit(dev),
              PavCalibration(eps=1e-3).fit(dev), PavCalibration(variant="raw").fit(dev),
              LinearFusion().fit({"a": dev, "b": dev.with_columns(pl.col("score") ** 3)})]
    for i, m in enumerate(models):
        path = m.save(tmp_path / f"m{i}.json")
        doc = json.loads(path.read_text())  # strict JSON (no bare Infinity)
        assert doc["format"] == "scoreframe-model" and doc["method"] == m.method
        back = load_model(path)
        if m.method == "linear_fusion":
            data = {"a": dev, "b": dev.with_columns(pl.col("score") ** 3)}
            assert set(doc["weights"]) == {"a", "b"} and "offset" in doc and "p_target" in doc
        else:
            data = dev
        assert_close(back.transform(data).collect().sort("segment")["score"].to_numpy(),
                     m.transform(data).collect().sort("segment")["score"].to_numpy(),
                     rtol=1e-15)
    lin = json.loads((tmp_path / "m0.json").read_text())
    assert {"method", "scale", "offset", "p_target"} <= set(lin)
    assert lin["objective"] == {"rule": "brier", "alpha": 2.0, "beta": 2.0}
    assert lin["training"]["n_tar"] == 5 and lin["training"]["n_non"] == 6
    with pytest.raises(ScoreframeError, match="already exists"):
        models[0].save(tmp_path / "m0.json")


def test_transform_is_lazy_and_streams(tmp_path):
    """Streaming application equals an independent evaluation of the fitted maps."""
    from scoreframe.io.parquet import write_trials

    rng = np.random.default_rng(1)
    n = 200_000
    df = pl.DataFrame({"model": "m", "segment": [f"s{i}" for i in range(n)],
                       "score": rng.normal(0, 2, n), "label": rng.random(n) < 0.2})
    write_trials(df, tmp_path / "data", chunk_rows=50_000)
    ordered = df.sort("segment")
    x = ordered["score"].to_numpy()
    lin, pav = LinearCalibration().fit(df), PavCalibration().fit(df)
    # the maps by other means: the affine formula, and linear interpolation on the knots
    independent = {"linear": lin.scale_ * x + lin.offset_,
                   "pav": np.interp(x, pav.knots_score_, pav.knots_llr_)}
    for model in (lin, pav):
        lf = model.transform(str(tmp_path / "data"))
        assert isinstance(lf, pl.LazyFrame)
        streamed = lf.collect(engine="streaming").sort("segment")
        assert "score_raw" in streamed.columns
        assert_close(streamed["score_raw"].to_numpy(), x, rtol=0, atol=0)
        assert_close(streamed["score"].to_numpy(), independent[model.method], rtol=1e-12,
                     atol=1e-12)
