"""Kernels against brute-force twins, and the properties the math guarantees (STYLE.md 13)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from scoreframe import metrics
from scoreframe.errors import DegenerateError, ScoreframeError
from scoreframe.kernels import pav_blocks, sort_scores
from scoreframe.kernels import sorted_scores as sorted_scores_module
from scoreframe.kernels.elementary import sigmoid

# small integer-valued scores make ties frequent
scores = st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=25)
priors = np.array([0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99])


def brute_dcf(tar, non, p):
    """Direct definitions: every threshold at a score and above all scores (docs/math.md §2)."""
    tar, non = np.asarray(tar), np.asarray(non)
    thr = np.r_[np.unique(np.r_[tar, non]), np.inf]
    pm = (tar[None, :] < thr[:, None]).mean(axis=1)
    pf = (non[None, :] >= thr[:, None]).mean(axis=1)
    return np.array([np.min(pi * pm + (1 - pi) * pf) for pi in np.atleast_1d(p)])


def brute_act(tar, non, p):
    t = -np.log(p / (1 - p))
    return p * np.mean(np.asarray(tar) < t) + (1 - p) * np.mean(np.asarray(non) >= t)


def brute_pav_llrs(tar, non):
    """PAV by SciPy on the merged labels, targets first on ties (docs/math.md §4)."""
    s = np.r_[tar, non]
    y = np.r_[np.ones(len(tar)), np.zeros(len(non))]
    order = np.lexsort((-y, s))
    fit = isotonic_regression(y[order]).x
    with np.errstate(divide="ignore"):
        llr = np.log(fit) - np.log1p(-fit) - np.log(len(tar) / len(non))
    out = np.empty_like(llr)
    out[order] = llr
    return out[: len(tar)], out[len(tar):]


def brute_cllr(tar, non):
    t = np.mean([np.logaddexp(0, -x) for x in tar])
    n = np.mean([np.logaddexp(0, x) for x in non])
    return (t + n) / (2 * np.log(2))


@settings(max_examples=200, deadline=None)
@given(scores, scores)
def test_min_dcf_equals_threshold_scan(tar, non):
    np.testing.assert_allclose(metrics.min_dcf(tar, non, p_target=priors, normalize=False),
                               brute_dcf(tar, non, priors), rtol=1e-12, atol=1e-15)


@settings(max_examples=200, deadline=None)
@given(scores, scores, st.sampled_from(priors.tolist()))
def test_act_dcf_equals_direct_count(tar, non, p):
    assert metrics.act_dcf(tar, non, p_target=p, normalize=False) == pytest.approx(
        brute_act(tar, non, p), rel=1e-12, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(scores, scores)
def test_pav_llrs_and_min_cllr_match_scipy_twin(tar, non):
    tl, nl = metrics.pav_llrs(tar, non)
    bt, bn = brute_pav_llrs(tar, non)
    np.testing.assert_allclose(tl, bt, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nl, bn, rtol=1e-12, atol=1e-12)
    t_terms = np.logaddexp(0, -bt)
    n_terms = np.logaddexp(0, bn)
    direct = (t_terms.mean() + n_terms.mean()) / (2 * np.log(2))
    assert metrics.min_cllr(tar, non, ramp=False) == pytest.approx(direct, rel=1e-12, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(scores, scores)
def test_properties(tar, non):
    e = metrics.eer(tar, non)
    assert 0.0 <= e <= 0.5
    # EER = max over priors of minDCF(p, 1, 1) ([BdV11] 2.6.2): no prior of a dense grid
    # exceeds it, and it is attained (to rounding) at a prior where a ROCCH segment's slope
    # equals the prior odds (the max of the concave minDCF(p) is at such a breakpoint)
    grid = sigmoid(np.linspace(-12, 12, 4001))
    assert np.max(metrics.min_dcf(tar, non, p_target=grid, normalize=False)) <= e + 1e-12
    pm, pf = metrics.rocch(tar, non)
    dpf, dpm = np.diff(pf), np.diff(pm)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = dpf / (dpf - dpm)
    slopes = slopes[(slopes > 0) & (slopes < 1)]
    at_slopes = brute_dcf(tar, non, slopes).max() if slopes.size else 0.0
    assert at_slopes == pytest.approx(e, rel=1e-12, abs=1e-15)
    mins = metrics.min_dcf(tar, non, p_target=priors, normalize=True)
    acts = metrics.act_dcf(tar, non, p_target=priors, normalize=True)
    assert np.all(mins <= acts + 1e-12)
    assert np.all(mins <= 1 + 1e-12)
    assert metrics.min_cllr(tar, non, ramp=False) <= metrics.cllr(tar, non) + 1e-12
    assert 0 <= metrics.min_cllr(tar, non, ramp=False) <= 1 + 1e-12
    assert metrics.cllr(tar, non) == pytest.approx(brute_cllr(tar, non), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(scores, scores, st.randoms(use_true_random=False))
def test_invariances(tar, non, rnd):
    base = (metrics.eer(tar, non), metrics.min_cllr(tar, non),
            metrics.prbep(tar, non), *metrics.min_dcf(tar, non, p_target=priors))
    t2, n2 = list(tar), list(non)
    rnd.shuffle(t2)
    rnd.shuffle(n2)
    perm = (metrics.eer(t2, n2), metrics.min_cllr(t2, n2), metrics.prbep(t2, n2),
            *metrics.min_dcf(t2, n2, p_target=priors))
    assert perm == pytest.approx(base, rel=1e-12, abs=1e-15)

    def f(x):
        return np.exp(np.asarray(x) / 3.0) * 2.0 - 7.0  # strictly increasing

    mono = (metrics.eer(f(tar), f(non)), metrics.min_cllr(f(tar), f(non)),
            metrics.prbep(f(tar), f(non)), *metrics.min_dcf(f(tar), f(non), p_target=priors))
    assert mono == pytest.approx(base, rel=1e-12, abs=1e-15)


def test_worked_examples_from_math_spec():
    # docs/math.md examples A and B
    a_t, a_n = [1, 2, 5, 7], [-7, -5, -2, -1]
    b_t, b_n = [-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4]
    plo = np.arange(-6, 7)
    np.testing.assert_allclose(
        metrics.act_dcf(a_t, a_n, prior_log_odds=plo, normalize=False),
        [.001854, .003346, .008993, .023713, .029801, 0, 0, .067235, .059601, .023713,
         .008993, .005020, .001854], atol=5e-7)
    assert metrics.eer(b_t, b_n) == pytest.approx(3 / 11, rel=1e-14)
    assert metrics.prbep(b_t, b_n) == pytest.approx(1.5, rel=1e-14)
    assert metrics.uer(b_t, b_n, r=2) == pytest.approx(0.363636, abs=1e-6)
    assert metrics.uer(b_t, b_n, r=0.5) == pytest.approx(0.1875, abs=1e-12)
    assert metrics.area_under_rocch(b_t, b_n) == pytest.approx(1 / 6, rel=1e-14)
    assert metrics.cllr(b_t, b_n) == pytest.approx(1.407859, abs=1e-6)
    assert metrics.min_cllr(b_t, b_n, ramp=False) == pytest.approx(0.618993, abs=1e-6)
    assert metrics.cross_entropy(a_t, a_n, p_target=0.1) == pytest.approx(0.101975, abs=1e-6)
    assert metrics.min_dcf(b_t, b_n, p_target=[0.5, 0.1, 0.9], normalize=True) == pytest.approx(
        [0.533333, 0.6, 0.666667], abs=1e-6)
    assert metrics.act_dcf([0], [0], prior_log_odds=0.0, normalize=False) == 0.5
    assert metrics.min_cllr([0], [0], ramp=False) == pytest.approx(1.0)


def test_eer_conventions_on_a_hand_example():
    tar, non = [1.0, 2.0, 3.0, 4.0], [0.0, 1.5, 2.5, 5.0]
    assert metrics.eer(tar, non, method="rocch") == pytest.approx(0.375)
    # per-trial ROC: (fnr,fpr) = ... (.25,.5) -> (.5,.5): crossing at 0.5 exactly
    assert metrics.eer(tar, non, method="nist") == pytest.approx(0.5)
    # Kaldi: i=0: non[3]=5 >= 1; i=1: non[2]=2.5 >= 2; i=2: non[1]=1.5 < 3 -> 2/4
    assert metrics.eer(tar, non, method="kaldi") == pytest.approx(0.5)
    with pytest.raises(ScoreframeError, match="unknown EER method"):
        metrics.eer(tar, non, method="sklearn")  # type: ignore[arg-type]


def test_infinite_llrs_and_degenerate_input():
    inf = np.inf
    assert metrics.cllr([inf, 1.0], [-inf, -1.0]) == pytest.approx(
        (np.logaddexp(0, -1) / 2 + np.logaddexp(0, -1) / 2) / (2 * np.log(2)))
    assert metrics.cllr([-inf], [0.0]) == inf
    # sorted n t n t -> ROCCH (0,1) (0,.5) (.5,0) (1,0): EER on pmiss + pfa = 1/2
    assert metrics.eer([inf, 1.0], [-inf, 2.0]) == pytest.approx(0.25)
    assert metrics.eer([3.0] * 4, [3.0] * 5) == 0.5
    with pytest.raises(DegenerateError, match="0 target"):
        metrics.eer([], [1.0])
    with pytest.raises(ScoreframeError, match=r"NaN.*index 1"):
        metrics.cllr([1.0, np.nan], [0.0])
    with pytest.raises(ScoreframeError, match="p_target"):
        metrics.min_dcf([1.0], [0.0], p_target=1.5)


def test_sorted_scores_shared_between_metrics(monkeypatch):
    calls = []

    def counting(s):
        calls.append(s)
        return pav_blocks(s)

    monkeypatch.setattr(sorted_scores_module, "pav_blocks", counting)
    s = metrics.sorted_scores([3.0, 1.0], [0.0, 2.0])
    # sorted n t n t: blocks (0t,1n) (1t,1n) (1t,0n); ROCCH (0,1) (0,.5) (.5,0) (1,0)
    assert metrics.eer(s) == pytest.approx(0.25, abs=1e-15)
    assert metrics.eer([3.0, 1.0], [0.0, 2.0]) == pytest.approx(0.25, abs=1e-15)
    assert metrics.prbep(s) == pytest.approx(0.5, abs=1e-15)
    assert metrics.min_dcf(s, p_target=0.5, normalize=False) == pytest.approx(0.25, abs=1e-15)
    metrics.min_cllr(s)
    assert len([c for c in calls if c is s]) == 1  # PAV ran once for four metrics of `s`
    assert sort_scores([2.0, 1.0], [0.0]).tar.tolist() == [1.0, 2.0]
