"""Binary metrics: the scalar API on arrays and the per-group metric registry.

``scoreframe.metrics.eer(tar, non)`` and friends validate arrays and call the kernels (the
BOSARIS-style scalar API, :mod:`scoreframe.metrics.scalar`); :mod:`scoreframe.metrics.registry`
declares every per-group metric of ``evaluate`` once (:mod:`scoreframe.metrics.binary`).
"""

from scoreframe.forensic import auc
from scoreframe.metrics import binary as binary  # registers the binary metrics
from scoreframe.metrics import families as families  # registers --spoof / --forensic metrics
from scoreframe.metrics._intervals import (
    INTERVALS,
    MAX_BOOTSTRAP,
    IntervalOptions,
    Intervals,
    interval_metrics,
    metric_intervals,
    replicate_values,
)
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
    "EER_METHODS",
    "INTERVALS",
    "MAX_BOOTSTRAP",
    "GroupStats",
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
    "interval_metrics",
    "lookup",
    "metric_intervals",
    "min_cllr",
    "min_dcf",
    "pav_llrs",
    "prbep",
    "psr",
    "replicate_values",
    "rocch",
    "sorted_scores",
    "uer",
]
