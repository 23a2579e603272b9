"""Binary metrics: the scalar API on arrays and the per-group metric registry.

Biometric verification metrics (ISO/IEC 19795-1: ``fnmr_at_fmr``, ``zero_fmr``, ``min_hter``,
...) live in :mod:`scoreframe.metrics._biometric` and are re-exported here.

``scoreframe.metrics.eer(tar, non)`` and friends validate arrays and call the kernels (the
BOSARIS-style scalar API, :mod:`scoreframe.metrics.scalar`); :mod:`scoreframe.metrics.registry`
declares every per-group metric of ``evaluate`` once (:mod:`scoreframe.metrics.binary`).

May import: errors, checks, kernels, io, frames, stats.
"""

from scoreframe.metrics import binary as binary  # registers the binary metrics
from scoreframe.metrics import families as families  # registers --spoof / --forensic metrics
from scoreframe.metrics._biometric import (
    CONVENTIONS,
    RatesAt,
    explode_targets,
    fmr_at_fnmr,
    fmr_fnmr,
    fnmr_at_fmr,
    min_hter,
    mw_auc,
    verification_summary,
    zero_fmr,
    zero_fnmr,
)
from scoreframe.metrics._intervals import (
    INTERVALS,
    MAX_BOOTSTRAP,
    IntervalBounds,
    IntervalOptions,
    Intervals,
    interval_metrics,
    metric_intervals,
    replicate_values,
)
from scoreframe.metrics._options import Binary, Biometric
from scoreframe.metrics.forensic import auc
from scoreframe.metrics.registry import (
    GroupStats,
    Metric,
    OperatingPoints,
    declare,
    declared,
    display_columns,
    lookup,
)
from scoreframe.metrics.scalar import (
    EER_METHODS,
    act_dcf,
    area_under_rocch,
    check_scores,
    cllr,
    cross_entropy,
    eer,
    min_cllr,
    min_dcf,
    pav_llrs,
    prbep,
    psr,
    rocch,
    sorted_scores,
    uer,
)

__all__ = [
    "CONVENTIONS",
    "EER_METHODS",
    "RatesAt",
    "Binary",
    "Biometric",
    "INTERVALS",
    "MAX_BOOTSTRAP",
    "GroupStats",
    "IntervalBounds",
    "IntervalOptions",
    "Intervals",
    "Metric",
    "OperatingPoints",
    "act_dcf",
    "area_under_rocch",
    "auc",
    "check_scores",
    "cllr",
    "cross_entropy",
    "declare",
    "declared",
    "display_columns",
    "eer",
    "explode_targets",
    "fmr_at_fnmr",
    "fmr_fnmr",
    "fnmr_at_fmr",
    "interval_metrics",
    "lookup",
    "metric_intervals",
    "min_cllr",
    "min_dcf",
    "min_hter",
    "mw_auc",
    "pav_llrs",
    "prbep",
    "psr",
    "replicate_values",
    "rocch",
    "sorted_scores",
    "uer",
    "verification_summary",
    "zero_fmr",
    "zero_fnmr",
]
