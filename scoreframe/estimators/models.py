"""Fitted models as JSON files (no pickle): loading any of them, saving, the file helpers.

:func:`load_model` reads a model file (or a parsed document), validates it against the JSON
Schema of its ``method`` and returns the fitted estimator. Dispatch goes through the registry
that the estimator classes fill themselves (:data:`scoreframe.estimators.base.ESTIMATORS`), so
this module names no estimator class. The file format itself is
:mod:`scoreframe.estimators.modelfile`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from scoreframe.estimators.base import Estimator, estimator_class
from scoreframe.estimators.modelfile import (
    FORMAT,
    VERSION,
    check_names,
    decode_float,
    decode_floats,
    encode_float,
    field,
    header,
    read_document,
    write_document,
)

__all__ = ["FORMAT", "VERSION", "Model", "check_names", "decode_float", "decode_floats",
           "encode_float", "field", "header", "load_model", "save_model"]


class Model(Protocol):
    """What every fitted calibrator or fuser provides."""

    method: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the fitted model."""
        ...


def save_model(model: Model, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a fitted model as JSON, atomically; returns the path written."""
    return write_document(model.to_dict(), path, overwrite=overwrite)


def load_model(source: str | Path | Mapping[str, Any]) -> Estimator:
    """Read and validate a model file (or an already parsed document).

    Returns the fitted estimator its ``method`` names (``LinearCalibration``,
    ``PavCalibration``, ``LinearFusion``, ``MulticlassCalibration``, ``MulticlassFusion``).

    Parameters
    ----------
    source
        A model file written by ``save`` or ``to_dict``'s document.

    Raises
    ------
    FormatError
        Not JSON, not a scoreframe model, an unknown method, or a missing or bad field (the
        message names the file and the field).

    See Also
    --------
    scoreframe.LinearCalibration, scoreframe.PavCalibration : Calibrators it returns.
    scoreframe.LinearFusion : The fuser it returns.
    scoreframe.estimators.Estimator : Their common base (``save``, ``to_dict``).

    Examples
    --------
    >>> m = load_model({"format": "scoreframe-model", "version": 1, "method": "linear",
    ...                 "scale": 2.0, "offset": -1.0, "p_target": 0.5, "training": {}})
    >>> float(m(3.0))
    5.0
    >>> load_model({"format": "scoreframe-model", "version": 1, "method": "linear",
    ...             "scale": 2.0, "offset": -1.0, "p_target": 0.5, "training": {},
    ...             "objective": {"alpha": -0.0, "beta": 1}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scoreframe.errors.FormatError: bad field `objective.alpha` ...: expected a number > 0; got -0.0
    """
    doc, where = read_document(source)
    cls = estimator_class(doc["method"], where=where)
    return cls.from_document(doc, where=where)
