"""scoreframe: evaluate, calibrate and fuse detector scores, exactly as BOSARIS, at scale.

The public API: metrics on arrays (``eer``, ``min_dcf``, ``act_dcf``, ``cllr``, ``min_cllr``,
``auc``, ...), per-condition evaluation of trial tables (``evaluate``, with confidence
intervals, ``bootstrap_evaluate``, and paired comparisons, ``compare``), anti-spoofing and
forensic metrics (:mod:`scoreframe.metrics.spoof`, :mod:`scoreframe.metrics.forensic`), the trial
data layer
(``scan_trials``, ``write_trials``, ``align``, ``validate_trials``, ``query``), the readers
and writers of :mod:`scoreframe.io`, calibration and fusion (``LinearCalibration``,
``PavCalibration``, ``LinearFusion``, ``load_model``); plots live in :mod:`scoreframe.views.plots`,
reports in :mod:`scoreframe.views.report`, multiclass tools in :mod:`scoreframe.multiclass`.
Every error is a :class:`ScoreframeError` (a ``ValueError``) and every warning a
:class:`ScoreframeWarning`; the specific classes live in :mod:`scoreframe.errors`.
"""

from scoreframe.errors import ScoreframeError, ScoreframeWarning
from scoreframe.estimators.calibration import LinearCalibration, PavCalibration
from scoreframe.estimators.fusion import LinearFusion
from scoreframe.estimators.models import load_model
from scoreframe.frames.align import AlignmentReport, align, alignment_report
from scoreframe.frames.schema import validate_trials
from scoreframe.frames.sql import connect, query, scan_query
from scoreframe.frames.synth import synth_chunks
from scoreframe.io import read_any, read_trials, scan_trials, write_any, write_trials
from scoreframe.kernels.elementary import effective_prior, logit, probit, sigmoid
from scoreframe.metrics import (
    Binary,
    Biometric,
    Intervals,
    OperatingPoints,
    Tandem,
    act_dcf,
    area_under_rocch,
    auc,
    cllr,
    cross_entropy,
    eer,
    forensic,
    min_cllr,
    min_dcf,
    pav_llrs,
    prbep,
    rocch,
    sorted_scores,
    spoof,
    uer,
)
from scoreframe.norm import Normalization, cohort_statistics, normalize
from scoreframe.results._differentials import Differentials, differentials
from scoreframe.results._epc import epc_curve
from scoreframe.results.bootstrap import bootstrap_evaluate, trials_needed
from scoreframe.results.compare import compare
from scoreframe.results.curves import ape_curve, dcf_points, det_curve, nber_curve
from scoreframe.results.evaluate import evaluate, explode_dcf
from scoreframe.results.tandem import tandem_t_dcf
from scoreframe.stats import Engine

__all__ = [
    "AlignmentReport",
    "Binary",
    "Biometric",
    "Differentials",
    "Engine",
    "Intervals",
    "LinearCalibration",
    "LinearFusion",
    "Normalization",
    "OperatingPoints",
    "PavCalibration",
    "ScoreframeError",
    "ScoreframeWarning",
    "Tandem",
    "act_dcf",
    "align",
    "ape_curve",
    "alignment_report",
    "area_under_rocch",
    "auc",
    "bootstrap_evaluate",
    "cllr",
    "cohort_statistics",
    "compare",
    "connect",
    "cross_entropy",
    "dcf_points",
    "det_curve",
    "differentials",
    "eer",
    "effective_prior",
    "epc_curve",
    "evaluate",
    "explode_dcf",
    "forensic",
    "load_model",
    "logit",
    "min_cllr",
    "min_dcf",
    "nber_curve",
    "normalize",
    "pav_llrs",
    "prbep",
    "probit",
    "query",
    "read_any",
    "read_trials",
    "rocch",
    "scan_query",
    "scan_trials",
    "sigmoid",
    "sorted_scores",
    "spoof",
    "synth_chunks",
    "tandem_t_dcf",
    "trials_needed",
    "uer",
    "validate_trials",
    "write_any",
    "write_trials",
]

__version__ = "0.1.0"
