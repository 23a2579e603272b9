"""The binary metric bundle of one group, from one :class:`SortedScores` (numpy only)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import cllr as kc
from scoreframe.kernels import dcf as kd
from scoreframe.kernels import eer_conventions as ke
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.sorted_scores import SortedScores

__all__ = ["binary_summary", "equalized_summary"]

F64 = NDArray[np.float64]


def _eer(s: SortedScores, method: str) -> float:
    if method == "rocch":
        return kr.rocch_eer(s.blocks)
    if method == "nist":
        return ke.steppy_eer(s)
    return ke.kaldi_eer(s)


def binary_summary(s: SortedScores, p: F64, q: F64, threshold: F64, *,
                   eer_method: str = "rocch") -> dict[str, object]:
    """EER, Cllr, minCllr, PRBEP and actual/minimum DCF (with error counts) at ``p``."""
    act, a_miss, a_fa = kd.act_dcf(s, p, q, threshold)
    mn, m_miss, m_fa = kr.min_dcf(s.blocks, p, q)
    return {
        "eer": _eer(s, eer_method),
        "cllr": kc.cllr(s.tar, s.non),
        "min_cllr": kc.min_cllr(s.blocks),
        "prbep": kr.prbep(s.blocks),
        "act_dcf": act, "n_miss_act": a_miss, "n_fa_act": a_fa,
        "min_dcf": mn, "n_miss_min": m_miss, "n_fa_min": m_fa,
    }


def equalized_summary(parts: list[SortedScores], p: F64, q: F64,
                      threshold: F64) -> dict[str, object]:
    """Partition-equalized DCF and EER (NIST SRE16 scorer style).

    Every partition with targets weighs equally in the miss rate, every partition with
    non-targets equally in the false-alarm rate (trial weights ``1/(P_T * T_p)`` and
    ``1/(P_N * N_p)``). Actual DCF uses the Bayes threshold; minimum DCF is the minimum over
    thresholds of the weighted rates; the EER interpolates the weighted per-trial ROC.
    """
    with_t = [s for s in parts if s.n_tar]
    with_n = [s for s in parts if s.n_non]
    pm = np.mean([kd.error_counts(s, threshold)[0] / s.n_tar for s in with_t], axis=0)
    pf = np.mean([kd.error_counts(s, threshold)[1] / s.n_non for s in with_n], axis=0)
    scores = np.concatenate([np.concatenate((s.tar, s.non)) for s in parts])
    labels = np.concatenate([np.r_[np.ones(s.n_tar, bool), np.zeros(s.n_non, bool)]
                             for s in parts])
    weights = np.concatenate([
        np.r_[np.full(s.n_tar, 1.0 / (len(with_t) * max(s.n_tar, 1))),
              np.full(s.n_non, 1.0 / (len(with_n) * max(s.n_non, 1)))] for s in parts])
    fnr, fpr = ke.weighted_steppy(scores, labels, weights)
    mn = np.array([np.min(pi * fnr + qi * fpr) for pi, qi in zip(p, q, strict=True)])
    return {"eq_eer": ke.interpolated_crossing(fnr, fpr),
            "eq_act_dcf": p * pm + q * pf, "eq_min_dcf": mn}
