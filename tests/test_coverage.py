"""Coverage of the bootstrap intervals by simulation, where the population values are known.

Scores that are true llrs: targets ~ N(mu, 2 mu), non-targets ~ N(-mu, 2 mu) (then
``log N(x; mu, 2mu) / N(x; -mu, 2mu) = x``). Population values:

* EER: by symmetry the Bayes threshold 0 equalizes the errors, ``EER = Phi(-mu / sqrt(2 mu))
  = Phi(-sqrt(mu / 2))``; the ROC of a continuous llr is concave, so this is also the
  ROCCH-EER;
* DCF at prior p (threshold ``t = -logit(p)``, optimal for llrs, so actual = minimum):
  ``p Phi((t - mu)/s) + (1 - p) (1 - Phi((t + mu)/s))`` normalized by ``min(p, 1 - p)``;
* Cllr: ``E softplus(-x) / log 2`` for ``x ~ N(mu, 2 mu)`` (both halves equal by symmetry), by
  numerical integration (``scipy.integrate.quad``).

With speaker effects (random model and segment offsets ``a_m + b_s``, each of variance ``v``,
drawn separately for target and non-target trials) the marginal score distributions are
``N(+-mu, 2 mu + 2 v)``; the population EER and Cllr are those of the marginals (scores are
then no longer llrs).

The default-suite versions are small (wide tolerances); ``-m slow`` runs the full ones.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import integrate, stats
from scipy.special import ndtr

import scoreframe as sf
from scoreframe.metrics import Intervals
from scoreframe.results.bootstrap import bootstrap_evaluate

MU = 2.0


def population(mu: float, extra: float = 0.0, p: float = 0.1) -> dict[str, float]:
    sd = math.sqrt(2 * mu + extra)
    t = -math.log(p / (1 - p))
    dcf = (p * ndtr((t - mu) / sd) + (1 - p) * (1 - ndtr((t + mu) / sd))) / min(p, 1 - p)
    cllr = integrate.quad(lambda x: np.logaddexp(0.0, -x) * stats.norm.pdf(x, mu, sd),
                          -np.inf, np.inf)[0] / math.log(2)
    return {"eer": float(ndtr(-mu / sd)), "cllr": cllr, "dcf": float(dcf)}


def iid_group(rng: np.random.Generator, n_tar: int, n_non: int) -> pl.DataFrame:
    sd = math.sqrt(2 * MU)
    s = np.concatenate((rng.normal(MU, sd, n_tar), rng.normal(-MU, sd, n_non)))
    lab = np.repeat([True, False], [n_tar, n_non])
    return pl.DataFrame({"score": s, "label": lab, "model": "m",
                         "segment": [f"s{i}" for i in range(n_tar + n_non)]})


def crossed_group(rng: np.random.Generator, n_models: int, n_segments: int, v: float
                  ) -> pl.DataFrame:
    """Every model against every segment, 20 % targets, speaker effects of variance ``v``.

    Each model and each segment has one offset for its target trials and another for its
    non-target trials (a Doddington "zoo": goats, lambs), so a trial's score is
    ``+-mu + e + a_m + b_s`` with ``a``, ``b`` drawn per (unit, class).
    """
    sd = math.sqrt(2 * MU)
    m = np.repeat(np.arange(n_models), n_segments)
    seg = np.tile(np.arange(n_segments), n_models)
    lab = rng.random(m.shape[0]) < 0.2
    sv = math.sqrt(v)
    a_tar, a_non = rng.normal(0, sv, n_models), rng.normal(0, sv, n_models)
    b_tar, b_non = rng.normal(0, sv, n_segments), rng.normal(0, sv, n_segments)
    offset = np.where(lab, a_tar[m] + b_tar[seg], a_non[m] + b_non[seg])
    s = np.where(lab, MU, -MU) + rng.normal(0, sd, m.shape[0]) + offset
    return pl.DataFrame({"score": s, "label": lab, "model": [f"m{i}" for i in m],
                         "segment": [f"s{i}" for i in seg]})


def intervals(df: pl.DataFrame, **kw: object) -> dict[str, object]:
    """The interval row of one group (DCF bounds as one-element lists, as before)."""
    r = bootstrap_evaluate(df, operating_points=0.1, validate=False,
                           intervals=Intervals(**kw)).row(0, named=True)
    for name in ("act_dcf_norm", "min_dcf_norm"):
        for e in ("_lo", "_hi"):
            r[name + e] = [r["dcf"][0][name + e]]
    return r


def test_population_values_match_integrals_and_large_samples() -> None:
    pop = population(MU)
    sd = math.sqrt(2 * MU)
    # EER: both error integrals at the threshold 0 equal Phi(-sqrt(mu/2))
    miss = integrate.quad(lambda x: stats.norm.pdf(x, MU, sd), -np.inf, 0.0)[0]
    fa = integrate.quad(lambda x: stats.norm.pdf(x, -MU, sd), 0.0, np.inf)[0]
    assert miss == pytest.approx(pop["eer"], abs=1e-10) and fa == pytest.approx(pop["eer"],
                                                                                 abs=1e-10)
    assert pop["eer"] == pytest.approx(float(ndtr(-math.sqrt(MU / 2))), abs=1e-15)
    rng = np.random.default_rng(0)
    tar, non = rng.normal(MU, sd, 400_000), rng.normal(-MU, sd, 400_000)
    assert sf.eer(tar, non) == pytest.approx(pop["eer"], abs=3e-3)
    assert sf.cllr(tar, non) == pytest.approx(pop["cllr"], abs=4e-3)
    assert sf.min_dcf(tar, non, p_target=0.1, normalize=True) == pytest.approx(pop["dcf"], abs=6e-3)
    assert sf.act_dcf(tar, non, p_target=0.1, normalize=True) == pytest.approx(pop["dcf"], abs=6e-3)


def iid_coverage(n_sets: int, bootstrap: int, n_tar: int, n_non: int,
                 interval: str = "percentile") -> dict[str, float]:
    pop = population(MU)
    rng = np.random.default_rng(2024)
    hits = dict.fromkeys(("eer", "cllr", "act_dcf_norm", "min_dcf_norm"), 0)
    for d in range(n_sets):
        r = intervals(iid_group(rng, n_tar, n_non), bootstrap=bootstrap, seed=d,
                      method=interval)
        hits["eer"] += r["eer_lo"] <= pop["eer"] <= r["eer_hi"]
        hits["cllr"] += r["cllr_lo"] <= pop["cllr"] <= r["cllr_hi"]
        for name in ("act_dcf_norm", "min_dcf_norm"):
            hits[name] += r[f"{name}_lo"][0] <= pop["dcf"] <= r[f"{name}_hi"][0]
    return {k: v / n_sets for k, v in hits.items()}


def speaker_coverage(n_sets: int, bootstrap: int) -> dict[str, float]:
    v = 2 * MU  # speaker offsets as strong as the within-trial noise
    pop = population(MU, 2 * v)
    rng = np.random.default_rng(7)
    hits = {"trial": 0, "two_way": 0, "trial_cllr": 0, "two_way_cllr": 0}
    for d in range(n_sets):
        g = crossed_group(rng, 20, 50, v)
        for units, name in (("trial", "trial"), (["model", "segment"], "two_way")):
            r = intervals(g, resample=units, bootstrap=bootstrap, seed=d)
            hits[name] += r["eer_lo"] <= pop["eer"] <= r["eer_hi"]
            hits[name + "_cllr"] += r["cllr_lo"] <= pop["cllr"] <= r["cllr_hi"]
    return {k: h / n_sets for k, h in hits.items()}


def test_iid_coverage_short() -> None:
    # 80 data sets: binomial sd of a 95 % coverage is 0.024; percentile intervals at these
    # sizes undercover slightly (a plain numpy multinomial bootstrap of Cllr gives 0.93).
    cov = iid_coverage(80, 100, 300, 1500)
    for name in ("eer", "cllr", "act_dcf_norm"):
        assert 0.82 <= cov[name] <= 1.0, (name, cov)


def test_speaker_effects_short() -> None:
    cov = speaker_coverage(40, 100)
    assert cov["two_way"] >= 0.8 and cov["two_way_cllr"] >= 0.8, cov
    assert cov["trial"] <= cov["two_way"] - 0.2, cov
    assert cov["trial_cllr"] <= cov["two_way_cllr"] - 0.2, cov


@pytest.mark.slow
def test_iid_coverage_full() -> None:
    # 300 data sets: sd 0.0126 at 0.95; tolerance 0.04 (3 sd plus the small-sample bias of
    # percentile intervals, measured ~0.01-0.02 at 1,000 targets).
    cov = iid_coverage(300, 300, 1000, 5000)
    for name in ("eer", "cllr", "act_dcf_norm"):
        assert abs(cov[name] - 0.95) <= 0.04, (name, cov)
    # minDCF is a minimum over thresholds (optimistically biased: percentile 0.90 measured);
    # BCa corrects part of the bias (0.92 measured). Measured BCa EER coverage: 0.91.
    bca = iid_coverage(300, 300, 1000, 5000, "bca")
    assert abs(bca["min_dcf_norm"] - 0.95) <= 0.05, bca
    assert abs(bca["eer"] - 0.95) <= 0.05, bca


@pytest.mark.slow
def test_speaker_effects_full() -> None:
    cov = speaker_coverage(200, 300)
    assert cov["two_way"] >= 0.88 and cov["two_way_cllr"] >= 0.88, cov
    assert cov["trial"] <= 0.75 and cov["trial_cllr"] <= 0.75, cov
