"""Estimators: calibrators and fusers on one base, registered by their ``method``.

* :mod:`scoreframe.estimators.base`: :class:`Estimator` (``fit`` -> self, ``transform``,
  ``to_dict``/``from_dict``, ``save``, ``__repr__``), the registry ``ESTIMATORS`` and
  ``estimator_class`` (used by ``load_model``);
* :mod:`scoreframe.estimators.modelfile`: the JSON model file and its schema validation;
* :mod:`scoreframe.estimators.calibration`: :class:`LinearCalibration`, :class:`PavCalibration`;
* :mod:`scoreframe.estimators.fusion`: :class:`LinearFusion`;
* :mod:`scoreframe.estimators.multiclass`: ``MulticlassCalibration``, ``MulticlassFusion``.

Loading a model (:func:`scoreframe.estimators.models.load_model`) dispatches on the document's
``"method"`` through the registry; the modules of this package are imported on demand, so no
module has to name every estimator and the import graph stays a tree.

May import: errors, checks, kernels, io, frames, stats, multiclass.
"""

from scoreframe.estimators.base import Estimator
from scoreframe.estimators.calibration import LinearCalibration, PavCalibration
from scoreframe.estimators.fusion import LinearFusion

__all__ = ["Estimator", "LinearCalibration", "LinearFusion", "PavCalibration"]
