"""Fitted models as JSON files (no pickle): writing, reading and validating them.

Results/views layer helper: knows the JSON document shape shared by every calibrator and fuser
(``format``, ``version``, ``method``, parameters, ``training``) and dispatches loading on
``method``. Non-finite numbers are written as the strings ``"Infinity"``/``"-Infinity"`` so the
files are strict JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from scoreframe.errors import FormatError, message
from scoreframe.io._atomic import atomic_output

__all__ = ["FORMAT", "VERSION", "Model", "load_model", "save_model"]

FORMAT = "scoreframe-model"
VERSION = 1


class Model(Protocol):
    """What every fitted calibrator or fuser provides."""

    method: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of the fitted model."""
        ...


def encode_float(v: float) -> float | str:
    """A float for strict JSON: non-finite values become strings."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def decode_float(v: object, *, where: str) -> float:
    """Inverse of :func:`encode_float`, with a clear error on anything else."""
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise FormatError(message("bad number in the model file", expected="a number",
                                  got=repr(v), where=where))
    if isinstance(v, str):
        if v not in ("Infinity", "-Infinity", "NaN"):
            raise FormatError(message("bad number in the model file", expected="a number",
                                      got=repr(v), where=where))
        return float(v.replace("Infinity", "inf"))
    return float(v)


def decode_floats(v: object, *, where: str, finite: bool = False) -> list[float]:
    """A list of numbers from the model file."""
    if not isinstance(v, list):
        raise FormatError(message("bad field in the model file", expected="a list of numbers",
                                  got=type(v).__name__, where=where))
    out = [decode_float(x, where=where) for x in v]
    if finite and not all(math.isfinite(x) for x in out):
        raise FormatError(message("non-finite number in the model file",
                                  expected="finite numbers", where=where))
    return out


def field(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, where: str) -> Any:
    """``doc[key]`` checked for presence and type."""
    if key not in doc:
        raise FormatError(message(f"model file has no `{key}`", where=where))
    v = doc[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(v, int | str) and not isinstance(v, bool):
        return decode_float(v, where=f"{where}, field `{key}`")
    if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
        raise FormatError(message(f"bad `{key}` in the model file",
                                  expected=" or ".join(k.__name__ for k in kinds),
                                  got=repr(v)[:60], where=where))
    return v


def header(method: str) -> dict[str, Any]:
    """The common first keys of a model document."""
    return {"format": FORMAT, "version": VERSION, "method": method}


def _methods() -> dict[str, Any]:
    from scoreframe.calibration import LinearCalibration, PavCalibration
    from scoreframe.fusion import LinearFusion
    from scoreframe.multiclass.calibration import MulticlassCalibration, MulticlassFusion

    return {c.method: c for c in (LinearCalibration, PavCalibration, LinearFusion,
                                  MulticlassCalibration, MulticlassFusion)}


def save_model(model: Model, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a fitted model as JSON, atomically.

    Returns the path written.
    """
    text = json.dumps(model.to_dict(), indent=1, allow_nan=False)
    with atomic_output(path, overwrite=overwrite) as tmp:
        tmp.write_text(text + "\n")
    return Path(path)


def load_model(source: str | Path | Mapping[str, Any]) -> Any:
    """Read and validate a model file (or an already parsed document).

    Returns the fitted calibrator or fuser (``LinearCalibration``, ``PavCalibration``,
    ``LinearFusion``, ``MulticlassCalibration``, ``MulticlassFusion``).

    Raises
    ------
    FormatError
        Not JSON, not a scoreframe model, an unknown method, or a missing/bad field.
    """
    where = "the model document"
    if isinstance(source, Mapping):
        doc = dict(source)
    else:
        where = f"file {source}"
        try:
            doc = json.loads(Path(source).read_text())
        except json.JSONDecodeError as exc:
            raise FormatError(message("model file is not valid JSON", where=where,
                                      got=f"{exc.msg} at line {exc.lineno}")) from None
        except UnicodeDecodeError:
            raise FormatError(message("model file is not text JSON", where=where)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(message("not a scoreframe model file", where=where,
                                  expected=f'a JSON object with "format": "{FORMAT}"'))
    if doc.get("version") != VERSION:
        raise FormatError(message("unsupported model file version", where=where,
                                  expected=str(VERSION), got=repr(doc.get("version"))))
    methods = _methods()
    method = doc.get("method")
    if method not in methods:
        raise FormatError(message("unknown model method", where=where,
                                  expected=" | ".join(sorted(methods)), got=repr(method)))
    return methods[method].from_dict(doc, where=where)


def check_names(v: object, *, where: str) -> list[str]:
    """A list of distinct strings."""
    if not isinstance(v, Sequence) or isinstance(v, str) or \
            not all(isinstance(x, str) for x in v) or len(set(v)) != len(v):
        raise FormatError(message("bad name list in the model file",
                                  expected="distinct strings", got=repr(v)[:60], where=where))
    return list(v)
