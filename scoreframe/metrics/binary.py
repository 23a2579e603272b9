"""Declarations of the binary metrics of ``evaluate`` (one :class:`Metric` each).

Each ``compute`` reads a group's final statistics (:class:`GroupStats`) and calls one kernel;
nothing here sorts or touches trials. Order of declaration = order of columns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import rocch as kr
from scoreframe.kernels.elementary import exact_to_float
from scoreframe.metrics.registry import (
    EER_STATISTICS,
    GroupStack,
    GroupStats,
    Metric,
    OperatingPoints,
    declare,
)
from scoreframe.stats.summary import ScoreStats

__all__ = ["DR30"]

#: Doddington's rule of 30: errors needed at an operating point for a reliable rate.
DR30 = 30
LOG2 = math.log(2.0)
F64 = NDArray[np.float64]


def _eer(g: GroupStats) -> float:
    s = g.stats
    if g.eer_method == "nist":
        if s.nist is None:  # the crossing is at the first corner with fnr >= fpr: cannot miss
            raise RuntimeError("NIST EER crossing not located")
        return s.nist
    if g.eer_method == "asvspoof":  # the located first minimum of the per-trial sweep
        point = s.get(EER_STATISTICS["asvspoof"])
        if point is None:
            raise RuntimeError("ASVspoof EER point not located")
        return float(point.eer)
    if g.eer_method == "kaldi":
        return (s.kaldi if s.kaldi is not None else s.n_tar - 1) / s.n_tar
    return kr.rocch_eer(s.blocks)


def _cllr_of(s: ScoreStats) -> float:
    if s.cllr_inf:
        return math.inf
    tar, non = exact_to_float(s.cllr_tar), exact_to_float(s.cllr_non)
    return (tar / s.n_tar + non / s.n_non) / (2.0 * LOG2)


def _cllr(g: GroupStats) -> float:
    return _cllr_of(g.stats)


def _cllr_stack(g: GroupStack) -> F64:
    return np.array([_cllr_of(s) for s in g.stats], dtype=np.float64)


def _act_dcf(g: GroupStats) -> np.ndarray:
    return _bayes_error(g.ops, *g.act_counts(), g.n_tar, g.n_non)


def _act_dcf_stack(g: GroupStack) -> F64:
    return _bayes_error(g.ops, *g.act_counts(), g.n_tar[:, None], g.n_non[:, None])


def _bayes_error(ops: OperatingPoints, miss: np.ndarray, fa: np.ndarray, n_tar: Any,
                 n_non: Any) -> F64:
    """``p Pmiss + q Pfa`` from error counts (one group's vector, or a stack's rows)."""
    out: F64 = ops.p * (miss / n_tar) + ops.q * (fa / n_non)
    return out


def _mean_over_points(x: F64) -> Any:
    """``np.mean`` over the operating points: of a vector, or of each row of a stack.

    A replicate's value has the rounding ``np.mean`` gives its own vector. Below 8 points
    numpy adds a vector's elements left to right, and a matrix's rows the same way, so the
    rows are summed at once; from 8 points on numpy may sum the rows of a matrix in another
    order than a vector (pairwise), so they are summed row by row (a loop over replicates,
    not trials).
    """
    if x.ndim == 1:
        return np.mean(x)
    add = np.add.reduce  # what np.mean sums with, before dividing by the count
    if x.shape[-1] < 8:
        out: F64 = add(x, axis=-1) / x.shape[-1]
        return out
    return np.array([add(row) for row in x], dtype=np.float64) / x.shape[-1]


def _dr30(g: GroupStats) -> np.ndarray:
    _, miss, fa = g.min_dcf
    return (miss >= DR30) & (fa >= DR30)


declare(Metric("eer", "EER", "%", _eer, scale=100.0,
               description="equal error rate (ROCCH by default; see eer_method)",
               compute_stack=lambda g: kr.rocch_eer_stack(g.blocks)))  # intervals: ROCCH
declare(Metric("cllr", "Cllr", "bits", _cllr, compute_stack=_cllr_stack,
               description="log-likelihood-ratio cost (calibration + discrimination)"))
declare(Metric("min_cllr", "minCllr", "bits", lambda g: g.min_cllr,
               compute_stack=lambda g: g.min_cllr,
               description="Cllr after optimal (PAV) recalibration"))
declare(Metric("cal_loss", "cal. loss", "bits",
               lambda g: _cllr(g) - g.min_cllr,
               compute_stack=lambda g: _cllr_stack(g) - g.min_cllr,
               description="Cllr - minCllr: the cost of miscalibration"))
declare(Metric("prbep", "PRBEP", "trials", lambda g: kr.prbep(g.stats.blocks),
               compute_stack=lambda g: kr.prbep_stack(g.blocks),
               description="precision-recall break-even point, as a count of errors"))
# per operating point (the `dcf` structs)
declare(Metric("act_dcf", "actDCF (raw)", "", _act_dcf, per_operating_point=True, table=False,
               compute_stack=_act_dcf_stack,
               description="actual DCF at the Bayes threshold, unnormalized"))
declare(Metric("act_dcf_norm", "actDCF", "", lambda g: _act_dcf(g) / g.ops.default_dcf,
               compute_stack=lambda g: _act_dcf_stack(g) / g.ops.default_dcf,
               per_operating_point=True, description="actual DCF / default system's DCF"))
declare(Metric("min_dcf", "minDCF (raw)", "", lambda g: g.min_dcf[0], per_operating_point=True,
               compute_stack=lambda g: g.min_dcf[0], table=False,
               description="minimum DCF over thresholds (ROCCH), unnormalized"))
declare(Metric("min_dcf_norm", "minDCF", "", lambda g: g.min_dcf[0] / g.ops.default_dcf,
               compute_stack=lambda g: g.min_dcf[0] / g.ops.default_dcf,
               per_operating_point=True, description="minimum DCF / default system's DCF"))
declare(Metric("n_miss_min", "misses at min", "trials", lambda g: g.min_dcf[1], dtype="int",
               per_operating_point=True, table=False))
declare(Metric("n_fa_min", "false alarms at min", "trials", lambda g: g.min_dcf[2], dtype="int",
               per_operating_point=True, table=False))
declare(Metric("n_miss_act", "misses at act", "trials", lambda g: g.act_counts()[0],
               dtype="int", per_operating_point=True, table=False))
declare(Metric("n_fa_act", "false alarms at act", "trials", lambda g: g.act_counts()[1],
               dtype="int", per_operating_point=True, table=False))
declare(Metric("dr30_ok", "DR30", "", _dr30, dtype="bool", per_operating_point=True,
               table=False, description="at least 30 misses and 30 false alarms at the min"))
# summaries over the operating points (group level)
declare(Metric("c_primary", "Cprimary", "",
               lambda g: float(_mean_over_points(_act_dcf(g) / g.ops.default_dcf)),
               compute_stack=lambda g: _mean_over_points(_act_dcf_stack(g) / g.ops.default_dcf),
               table=False,
               description="mean normalized actual DCF over the operating points"))
declare(Metric("min_c_primary", "min Cprimary", "",
               lambda g: float(_mean_over_points(g.min_dcf[0] / g.ops.default_dcf)),
               compute_stack=lambda g: _mean_over_points(g.min_dcf[0] / g.ops.default_dcf),
               table=False,
               description="mean normalized minimum DCF over the operating points"))
declare(Metric("dr30_ok", "DR30", "", lambda g: bool(np.all(_dr30(g))), dtype="bool",
               table=False, description="rule of 30 holds at every operating point"))
