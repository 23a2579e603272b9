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
from scoreframe.metrics._biometric import CONVENTIONS as CONVENTIONS  # shared with cli/
from scoreframe.metrics._biometric import (
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
from scoreframe.metrics._intervals import INTERVALS as INTERVALS  # shared with results/
from scoreframe.metrics._intervals import MAX_BOOTSTRAP as MAX_BOOTSTRAP  # shared with results/
from scoreframe.metrics._intervals import IntervalBounds as IntervalBounds  # shared with results/
from scoreframe.metrics._intervals import IntervalOptions as IntervalOptions  # the old name
from scoreframe.metrics._intervals import Intervals as Intervals  # public as scoreframe.Intervals
from scoreframe.metrics._intervals import (  # shared with results/, not public
    interval_metrics as interval_metrics,
)
from scoreframe.metrics._intervals import (  # shared with results/, not public
    metric_intervals as metric_intervals,
)
from scoreframe.metrics._intervals import (  # shared with results/, not public
    replicate_values as replicate_values,
)
from scoreframe.metrics._options import Binary as Binary  # public at the top level
from scoreframe.metrics._options import Biometric as Biometric  # public at the top level
from scoreframe.metrics._options import Tandem as Tandem  # public at the top level
from scoreframe.metrics.forensic import auc
from scoreframe.metrics.registry import (
    GroupStack,
    GroupStats,
    Metric,
    declare,
    declared,
    lookup,
)
from scoreframe.metrics.registry import (
    OperatingPoints as OperatingPoints,  # public at the top level
)
from scoreframe.metrics.scalar import (
    act_dcf,
    area_under_rocch,
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
    "RatesAt",
    "GroupStack",
    "GroupStats",
    "Metric",
    "act_dcf",
    "area_under_rocch",
    "auc",
    "cllr",
    "cross_entropy",
    "declare",
    "declared",
    "eer",
    "explode_targets",
    "fmr_at_fnmr",
    "fmr_fnmr",
    "fnmr_at_fmr",
    "lookup",
    "min_cllr",
    "min_dcf",
    "min_hter",
    "mw_auc",
    "pav_llrs",
    "prbep",
    "psr",
    "rocch",
    "sorted_scores",
    "uer",
    "verification_summary",
    "zero_fmr",
    "zero_fnmr",
]
