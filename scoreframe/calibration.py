"""Calibration of one system's scores (old import path of :mod:`scoreframe.estimators.calibration`).

Kept so that ``from scoreframe.calibration import LinearCalibration`` goes on working.
"""

from scoreframe.checks import check_p_target
from scoreframe.errors import NotFittedError
from scoreframe.estimators.calibration import (
    LinearCalibration,
    PavCalibration,
    calibration_map,
    check_system,
    fit_report,
    objective_rule,
    one_system,
    rule_doc,
    rule_from_doc,
    training_frame,
    with_llr,
)
from scoreframe.frames import Data

__all__ = ["Data", "LinearCalibration", "NotFittedError", "PavCalibration", "calibration_map",
           "check_p_target", "check_system", "fit_report", "objective_rule", "one_system",
           "rule_doc", "rule_from_doc", "training_frame", "with_llr"]
