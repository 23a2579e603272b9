"""Run the OFFICIAL implementations on fixed inputs and write their outputs as JSON.

Run in a throwaway venv with lir==1.3.1, scikit-learn, scipy, numpy; the official scripts are read
from the directory given as argv[1] (a_dcf_asv5.py = asvspoof5@fe23d30 evaluation-package/a_dcf.py,
eval_metrics_2021.py = asvspoof-challenge/2021@9b33f5e eval-package/eval_metrics.py,
sasv_metrics.py = SASVC2022_Baseline@1545f2b metrics.py). argv[2]: real.npz; argv[3]: output.
"""

# Importing this file (pytest --doctest-modules does) runs nothing: the work is in main().
# ruff: noqa: D103
import json
import math
import sys
import types

import numpy as np

INF = math.inf
LN10 = math.log(10.0)


def load_official(directory):
    """Import the official scripts and libraries (global names used by the functions below)."""
    sys.path.insert(0, directory)
    sys.modules["torch"] = types.SimpleNamespace(Tensor=object)  # only used in a type hint
    global a_dcf_asv5, em, lir, sasv_metrics, sklearn, elub, IsotonicCalibrator, LLRData
    global tippett, calculate_ece, mannwhitneyu, roc_auc_score
    import a_dcf_asv5
    import eval_metrics_2021 as em
    import lir
    import sasv_metrics
    import sklearn
    from lir.algorithms.bayeserror import elub
    from lir.algorithms.isotonic_regression import IsotonicCalibrator
    from lir.data.models import LLRData
    from lir.plotting import tippett
    from lir.plotting.expected_calibration_error import calculate_ece
    from scipy.stats import mannwhitneyu
    from sklearn.metrics import roc_auc_score


def enc(x):
    if isinstance(x, (list, tuple, np.ndarray)):
        return [enc(v) for v in x]
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def small_cases():
    rng = np.random.default_rng(20261123)
    return {
        "ties": {
            "target": [0.5, 1.0, 1.0, 2.0, 3.0, -1.0],
            "nontarget": [1.0, 0.5, -2.0, 0.0, 1.0, 2.5, -0.5],
            "spoof": [1.0, 2.0, 0.5, 3.0, -3.0, 1.0],
        },
        "inf": {
            "target": [-INF, 0.2, 1.5, INF, 1.5],
            "nontarget": [-INF, -1.0, 0.2, 2.0],
            "spoof": [INF, 0.2, -0.4, -INF],
        },
        "rounded": {
            "target": list(np.round(rng.normal(1.5, 1.0, 40) * 2) / 2),
            "nontarget": list(np.round(rng.normal(-0.5, 1.0, 60) * 2) / 2),
            "spoof": list(np.round(rng.normal(0.5, 1.5, 50) * 2) / 2),
        },
        "integers": {
            "target": list(rng.integers(-3, 6, 25).astype(float)),
            "nontarget": list(rng.integers(-6, 3, 31).astype(float)),
            "spoof": list(rng.integers(-5, 5, 18).astype(float)),
        },
    }


COSTS = {
    "default": dict(p_target=0.9, p_nontarget=0.05, p_spoof=0.05, c_miss=1.0,
                    c_fa_nontarget=10.0, c_fa_spoof=20.0),
    "asvspoof5": dict(p_target=0.9405, p_nontarget=0.0095, p_spoof=0.05, c_miss=1.0,
                      c_fa_nontarget=10.0, c_fa_spoof=10.0),
    "no_spoof_cost": dict(p_target=0.9, p_nontarget=0.05, p_spoof=0.05, c_miss=1.0,
                          c_fa_nontarget=10.0, c_fa_spoof=0.0),
}


def official_a_dcf(t, n, s, c):
    cm = a_dcf_asv5.CostModel(Pspf=c["p_spoof"], Pnontrg=c["p_nontarget"], Ptrg=c["p_target"],
                              Cmiss=c["c_miss"], Cfa_asv=c["c_fa_nontarget"],
                              Cfa_cm=c["c_fa_spoof"])
    r = a_dcf_asv5._calculate_a_dcf(np.asarray(t), np.asarray(n), np.asarray(s), cm, False)
    return {"min_a_dcf": enc(np.asarray(r["min_a_dcf"]).item()),
            "threshold": enc(r["min_a_dcf_thresh"])}


def official_t_dcf(at, an, asp, cb, cs, variant):
    at, an, asp, cb, cs = (np.asarray(x, dtype=float) for x in (at, an, asp, cb, cs))
    thr = em.compute_eer(at, an)[1]
    pfa, pmiss, pmiss_spf, pfa_spf = em.obtain_asv_error_rates(at, an, asp, thr)
    if variant == "2021":
        cost = {"Pspoof": 0.05, "Ptar": (1 - 0.05) * 0.99, "Pnon": (1 - 0.05) * 0.01,
                "Cmiss": 1, "Cfa": 10, "Cfa_spoof": 10}
        curve, thrs = em.compute_tDCF(cb, cs, pfa, pmiss, pfa_spf, cost, False)
    else:
        cost = {"Pspoof": 0.05, "Ptar": (1 - 0.05) * 0.99, "Pnon": (1 - 0.05) * 0.01,
                "Cmiss_asv": 1, "Cfa_asv": 10, "Cmiss_cm": 1, "Cfa_cm": 10}
        curve, thrs = em.compute_tDCF_legacy(cb, cs, pfa, pmiss, pmiss_spf, cost, False)
    k = int(np.argmin(curve))
    return {"min_t_dcf": enc(curve[k]), "cm_threshold": enc(thrs[k]), "asv_threshold": enc(thr),
            "p_miss_asv": enc(pmiss), "p_fa_asv": enc(pfa), "p_fa_spoof_asv": enc(pfa_spf),
            "argmin": k, "curve_head": enc(curve[:5])}


def official_eer(t, n):
    e, thr = em.compute_eer(np.asarray(t, dtype=float), np.asarray(n, dtype=float))
    return {"eer": enc(e), "threshold": enc(thr)}


def official_sasv(t, n, s):
    preds = list(t) + list(n) + list(s)
    keys = ["target"] * len(t) + ["nontarget"] * len(n) + ["spoof"] * len(s)
    a, b, c = sasv_metrics.get_all_EERs(preds, keys)
    return {"sasv_eer": float(a), "sv_eer": float(b), "spf_eer": float(c)}


PLO10 = [-2.5, -1.0, -0.3, 0.0, 0.7, 2.0]


def lir_forensic(tar, non, with_tippett=True):
    tar = np.asarray(tar, dtype=float)
    non = np.asarray(non, dtype=float)
    llr10 = np.concatenate((tar, non)) / LN10
    y = np.concatenate((np.ones(tar.size, dtype=int), np.zeros(non.size, dtype=int)))
    plo = np.array(PLO10) * LN10
    priors = 1 / (1 + np.exp(-plo))
    lrs = 10 ** llr10
    out = {"prior_log_odds": enc(plo),
           "ece": enc(calculate_ece(lrs, y, priors)),
           "ece_ref": enc(calculate_ece(np.ones_like(lrs), y, priors))}
    pav10 = IsotonicCalibrator().fit_transform(llr10.copy(), y)
    out["ece_min_lir_pav"] = enc(calculate_ece(10 ** pav10, y, priors))
    for am in (1, 0, 2):
        lo, hi = elub(llr10.copy(), y.copy(), add_misleading=am)
        out[f"elub_add{am}"] = [enc(lo), enc(hi)]
    lo, hi = elub(llr10.copy(), y.copy(), add_misleading=1, step_size=0.05,
                  substitute_extremes=(-2.0, 2.0))
    out["elub_step005_ext2"] = [enc(lo), enc(hi)]
    if with_tippett:
        rec = []

        class Ax:
            def plot(self, x, yv, **kw):
                rec.append((np.asarray(x).tolist(), (np.asarray(yv) / 100).tolist()))

            def __getattr__(self, name):
                return lambda *a, **k: None

        tippett(LLRData(features=llr10, labels=y), plot_type=1, ax=Ax())
        # first plot call: H1 (targets), second: H2 (non-targets)
        out["tippett_tar"] = {"thresholds_log10": enc(rec[0][0]), "p_ge": enc(rec[0][1])}
        out["tippett_non"] = {"thresholds_log10": enc(rec[1][0]), "p_ge": enc(rec[1][1])}
    finite = np.isfinite(tar).all() and np.isfinite(non).all()
    if finite:
        out["sklearn_auc"] = float(roc_auc_score(y, np.concatenate((tar, non))))
    u = mannwhitneyu(tar, non, alternative="two-sided").statistic
    out["mannwhitney_auc"] = float(u / (tar.size * non.size))
    return out


def main():
    load_official(sys.argv[1])
    real = np.load(sys.argv[2])
    res = {"provenance": {
        "a_dcf": "asvspoof-challenge/asvspoof5@fe23d3053a0889b305d98c9e4cadf418c213d972 "
                 "evaluation-package/a_dcf.py _calculate_a_dcf(trg, nontrg, spf, CostModel(...), "
                 "False)",
        "eer": "asvspoof-challenge/2021@9b33f5eca887bd3bf629e3fb79428cd9bb7ac972 "
               "eval-package/eval_metrics.py compute_eer(tar, non)",
        "t_dcf": "same eval_metrics.py: thr = compute_eer(asv_tar, asv_non)[1]; "
                 "obtain_asv_error_rates; compute_tDCF (2021) / compute_tDCF_legacy (2019) with "
                 "Pspoof=0.05, Ptar=(1-0.05)*0.99, Pnon=(1-0.05)*0.01, Cmiss=1, Cfa=10, "
                 "Cfa_spoof=10 (2019: Cmiss_asv=1, Cfa_asv=10, Cmiss_cm=1, Cfa_cm=10); np.argmin",
        "sasv": "sasv-challenge/SASVC2022_Baseline@1545f2bbc5860504cd24003e864fa06adcfdd26e "
                "metrics.get_all_EERs(preds, keys) (torch stubbed: type hint only), "
                f"scikit-learn {sklearn.__version__}, scipy brentq",
        "forensic": f"lir {lir.__version__ if hasattr(lir, '__version__') else '1.3.1'}: "
                    "plotting.expected_calibration_error.calculate_ece(10**(llr/ln10), y, "
                    "sigmoid(plo)); ece_ref with lrs=1; ece_min_lir_pav = calculate_ece of "
                    "IsotonicCalibrator().fit_transform(llr/ln10, y) (lir's own PAV, for "
                    "comparison only); lir.algorithms.bayeserror.elub(llr/ln10, y, ...); "
                    "plotting.tippett(LLRData(llr/ln10, y), plot_type=1) with a recording Axes "
                    "(percent / 100); sklearn roc_auc_score; scipy mannwhitneyu U/(nt nn)",
    }, "small": {}, "real": {}}

    small = small_cases()
    for name, c in small.items():
        t, n, s = c["target"], c["nontarget"], c["spoof"]
        entry = {"inputs": {k: enc(v) for k, v in c.items()}}
        entry["a_dcf"] = {k: official_a_dcf(t, n, s, cc) for k, cc in COSTS.items()}
        entry["eer"] = official_eer(t, n)
        if all(np.isfinite(np.concatenate((t, n, s)))):
            entry["sasv"] = official_sasv(t, n, s)
        entry["forensic"] = lir_forensic(t, n)
        res["small"][name] = entry

    # tandem small case: ASV = "ties" case, CM = "rounded" bona fide (target + nontarget) vs spoof
    tc = small["ties"]
    cmc = small["rounded"]
    res["small_tandem"] = {
        "inputs": {"asv_target": tc["target"], "asv_nontarget": tc["nontarget"],
                   "asv_spoof": tc["spoof"],
                   "cm_bonafide": enc(cmc["target"] + cmc["nontarget"]),
                   "cm_spoof": enc(cmc["spoof"])},
    }
    for v in ("2021", "2019"):
        ti = res["small_tandem"]["inputs"]
        res["small_tandem"][v] = official_t_dcf(
            ti["asv_target"], ti["asv_nontarget"], ti["asv_spoof"], ti["cm_bonafide"],
            ti["cm_spoof"], v)

    # real data
    R = res["real"]
    at, an, asp = real["asv_target"], real["asv_nontarget"], real["asv_spoof"]
    ct, cn, cs = real["cm_target"], real["cm_nontarget"], real["cm_spoof"]
    R["asv_a_dcf"] = {k: official_a_dcf(at, an, asp, cc) for k, cc in COSTS.items()}
    R["cm_a_dcf"] = {k: official_a_dcf(ct, cn, cs, cc) for k, cc in COSTS.items()}
    R["asv_eer"] = official_eer(at, an)
    R["cm_eer"] = official_eer(np.concatenate((ct, cn)), cs)
    R["asv_sasv"] = official_sasv(at, an, asp)
    R["cm_sasv"] = official_sasv(ct, cn, cs)
    for v in ("2021", "2019"):
        R[f"t_dcf_{v}"] = official_t_dcf(at, an, asp, np.concatenate((ct, cn)), cs, v)
    R["cm_forensic"] = lir_forensic(np.concatenate((ct, cn)), cs)
    json.dump(res, open(sys.argv[3], "w"), indent=1)
    print("ok")


if __name__ == "__main__":
    main()
