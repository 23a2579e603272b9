"""The estimator base: one shape for every calibrator and fuser, and the registry of methods.

Every estimator (binary calibration, fusion, multiclass calibration and fusion) is a subclass
of :class:`Estimator`:

* parameters are the keyword-only arguments of ``__init__``, stored under the same names
  (:meth:`Estimator.get_params`, used by ``__repr__``);
* ``fit(...)`` returns ``self``; what it learns is stored in attributes with a trailing
  underscore (scikit-learn's convention): ``training_`` for every estimator, plus ``scale_``,
  ``offset_``, ``weights_``, ``knots_score_``/``knots_llr_``, ``classes_``, ``system_``,
  ``where_``, the same name wherever the meaning is the same;
* ``transform(...)`` applies the model lazily (Polars expressions from ``to_expr``);
* ``to_dict()`` / ``from_dict()`` / ``save()`` go through the model file
  (:mod:`scoreframe.estimators.modelfile`), and a class's ``schema`` validates its documents;
* using an unfitted estimator raises :class:`~scoreframe.errors.NotFittedError`.

Subclasses register themselves by their ``method`` (``__init_subclass__``), so
:func:`estimator_class` (behind :func:`scoreframe.estimators.models.load_model`) dispatches on the
document's ``"method"`` without naming any estimator class: the import graph stays a tree.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from scoreframe.errors import FormatError, NotFittedError, ScoreframeError, message
from scoreframe.estimators import modelfile

__all__ = ["ESTIMATORS", "Estimator", "NotFittedError", "estimator_class"]

#: ``method`` -> estimator class, filled by the classes themselves when their module is imported.
ESTIMATORS: dict[str, type[Estimator]] = {}


def _discover() -> None:
    """Import every module of :mod:`scoreframe.estimators` (their classes register)."""
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{package}.{info.name}")


def estimator_class(method: str, *, where: str = "the model document") -> type[Estimator]:
    """The estimator class registered for ``method``.

    >>> estimator_class("linear").__name__
    'LinearCalibration'
    """
    if method not in ESTIMATORS:
        _discover()
    if method not in ESTIMATORS:
        raise FormatError(message("unknown model method", where=where,
                                  expected=" | ".join(sorted(ESTIMATORS)), got=repr(method)))
    return ESTIMATORS[method]


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        items = list(v.items())
        text = ", ".join(f"{k!r}: {_short(x)}" for k, x in items[:4])
        return "{" + text + (", ..." if len(items) > 4 else "") + "}"
    if isinstance(v, list | tuple) and len(v) > 4:
        return "[" + ", ".join(_short(x) for x in v[:4]) + f", ... ({len(v)} items)]"
    if hasattr(v, "shape") and getattr(v, "size", 0) > 4:
        return f"<array of shape {v.shape}>"
    if hasattr(v, "tolist"):
        return _short(v.tolist())
    return repr(v)


class Estimator:
    """Base of every calibrator and fuser (see the module docstring).

    Subclasses set ``method`` (the model file's ``"method"``), ``schema`` (the JSON Schema of
    their documents) and ``fitted`` (the names of their fitted attributes, for ``__repr__``),
    and implement ``fit``, ``to_expr``, ``transform``, ``to_dict`` and ``from_dict``.

    See Also
    --------
    scoreframe.load_model : Dispatch on a model file's ``method``.
    scoreframe.LinearCalibration, scoreframe.LinearFusion : Estimators built on it.

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe import LinearCalibration, load_model
    >>> cal = LinearCalibration(p_target=0.5)
    >>> isinstance(cal, Estimator), cal.method
    (True, 'linear')
    >>> df = pl.DataFrame({"score": [-2.0, -1.0, 0.5, 1.0, 2.0, 3.0],
    ...                    "label": [False, False, True, False, True, True]})
    >>> cal.fit(df)
    LinearCalibration(p_target=0.5, objective='log', max_iter=100)  # fitted: scale_=1.66931, ...
    >>> type(load_model(cal.to_dict())).__name__  # the registry finds the class by ``method``
    'LinearCalibration'
    """

    method: ClassVar[str] = ""
    schema: ClassVar[dict[str, Any]] = {}
    fitted: ClassVar[tuple[str, ...]] = ()
    #: Old attribute names, read-only: ``name -> fitted attribute`` (besides the generic rule:
    #: ``scale`` reads ``scale_``, ``training`` reads ``training_``, ...).
    aliases: ClassVar[dict[str, str]] = {}

    training_: dict[str, Any]
    system_: str | None
    where_: str | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        method = cls.__dict__.get("method")
        if method:
            other = ESTIMATORS.get(method)
            if other is not None and other.__qualname__ != cls.__qualname__:
                raise TypeError(f"method {method!r} is registered twice: "
                                f"{other.__qualname__} and {cls.__qualname__}")
            ESTIMATORS[method] = cls

    # --- parameters and state ----------------------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        """The keyword-only parameters of ``__init__``."""
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]

    def get_params(self) -> dict[str, Any]:
        """The parameters given to ``__init__`` (after validation)."""
        return {name: getattr(self, name) for name in self.param_names()}

    @property
    def is_fitted(self) -> bool:
        """True after :meth:`fit` or loading."""
        return bool(getattr(self, "training_", None))

    def check_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless fitted."""
        if not self.is_fitted:
            raise NotFittedError(message(f"this {type(self).__name__} is not fitted",
                                         hint="Call fit() first, or load a model file."))

    def reset(self) -> None:
        """Forget the fitted state (``training_`` empty, no system)."""
        self.training_ = {}
        self.system_ = None
        self.where_ = None

    def __getattr__(self, name: str) -> Any:
        # only called for missing attributes: the old names of fitted attributes
        target = type(self).aliases.get(name)
        if target is None and not name.startswith("_") and not name.endswith("_") \
                and name + "_" in self.__dict__:
            target = name + "_"
        if target is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self, target)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.get_params().items())
        text = f"{type(self).__name__}({params})"
        if not self.is_fitted:
            return text + "  # not fitted"
        state = ", ".join(f"{k}={_short(getattr(self, k))}" for k in self.fitted)
        tr = self.training_
        if "converged" in tr:
            state += ", converged" if tr["converged"] else ", NOT converged"
        if self.system_ is not None:
            state += f"; trained on system {self.system_!r}"
        if self.where_:
            state += f" where {self.where_!r}"
        return f"{text}  # fitted: {state}"

    # --- the model file ------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        """``system`` and ``where`` of the training data, for the model document."""
        return {"system": self.system_, "where": self.where_}

    def load_provenance(self, doc: Mapping[str, Any]) -> None:
        """Set ``system_``, ``where_`` and ``training_`` from a validated document."""
        self.system_ = doc.get("system")
        self.where_ = doc.get("where")
        self.training_ = dict(doc.get("training") or {}) or {"loaded": True}

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """The JSON document of the fitted model."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, doc: dict[str, Any], *, where: str = "the model document"
                  ) -> Self:  # pragma: no cover - abstract
        """Rebuild from :meth:`to_dict` output (already validated against ``schema``)."""
        raise NotImplementedError

    @classmethod
    def from_document(cls, doc: dict[str, Any], *, where: str = "the model document") -> Self:
        """Validate ``doc`` against the class's schema, then :meth:`from_dict`."""
        modelfile.validate_document(doc, cls.schema, where=where)
        try:
            return cls.from_dict(doc, where=where)
        except FormatError:
            raise
        except ScoreframeError as exc:  # a parameter check: say which file
            raise FormatError(message("bad parameter", where=where,
                                      got=str(exc).split("\n")[0])) from None

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the fitted model as JSON, atomically (refuses to overwrite by default)."""
        self.check_fitted()
        return modelfile.write_document(self.to_dict(), path, overwrite=overwrite)
