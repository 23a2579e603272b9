"""Multiclass (N-class) evaluation, calibration and fusion: Cmxe, Bayes decisions, LRE Cavg.

Frames layer over :mod:`scoreframe.kernels.multiclass`: long score tables (``segment``,
``class``, ``score`` = log-likelihood, optional ``system``) and truth tables (``segment``,
``class``), read and checked by :mod:`scoreframe.io.multiclass`, become per-group ``(N, K)``
matrices, one sort per system.

May import: errors, checks, kernels, io, frames, stats, estimators.
"""

from scoreframe.multiclass.calibration import MulticlassCalibration, MulticlassFusion
from scoreframe.multiclass.evaluate import cavg_sweep, evaluate_multiclass
from scoreframe.multiclass.tables import read_scores, read_truth, score_matrices

__all__ = ["MulticlassCalibration", "MulticlassFusion", "cavg_sweep", "evaluate_multiclass",
           "read_scores", "read_truth", "score_matrices"]
