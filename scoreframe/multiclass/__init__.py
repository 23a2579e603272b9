"""Multiclass (N-class) evaluation, calibration and fusion: Cmxe, Bayes decisions, LRE Cavg.

Frames layer over :mod:`scoreframe.kernels.multiclass`: long score tables (``segment``,
``class``, ``score`` = log-likelihood, optional ``system``) and truth tables (``segment``,
``class``) become per-group ``(N, K)`` matrices, one pivot per group.
"""

from scoreframe.multiclass.calibration import MulticlassCalibration, MulticlassFusion
from scoreframe.multiclass.data import read_scores, read_truth, score_matrices
from scoreframe.multiclass.evaluate import cavg_sweep, evaluate_multiclass

__all__ = ["MulticlassCalibration", "MulticlassFusion", "cavg_sweep", "evaluate_multiclass",
           "read_scores", "read_truth", "score_matrices"]
