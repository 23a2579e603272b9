"""Multiclass calibration and fusion estimators.

Defined in :mod:`scoreframe.multiclass.calibration`, beside the multiclass tables they read,
so that importing modules in any order keeps the import graph a tree; this module makes them
part of the estimator package (and so of the registry behind
:func:`scoreframe.estimators.models.load_model`).
"""

from scoreframe.multiclass.calibration import (
    MulticlassCalibration,
    MulticlassFusion,
    fit_multiclass,
)

__all__ = ["MulticlassCalibration", "MulticlassFusion", "fit_multiclass"]
