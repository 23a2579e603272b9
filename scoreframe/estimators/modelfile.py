"""The model file: strict JSON, validated against a JSON Schema, written atomically.

Every fitted calibrator or fuser is saved as one JSON object: ``format``, ``version``,
``method``, the parameters, the data it was trained on (``system``, ``where``) and a
``training`` report. Non-finite numbers (PAV knots only) are written as the strings
``"Infinity"``/``"-Infinity"`` so the files are strict JSON; the bare tokens ``NaN`` and
``Infinity`` that Python's :mod:`json` would accept are rejected on reading.

Reading validates the document with :mod:`jsonschema` (the common header, then the method's own
schema, :attr:`scoreframe.estimators.base.Estimator.schema`) and turns the first violation into a
:class:`~scoreframe.errors.FormatError` that names the file and the field (``objective.alpha``,
``weights.sys1``, ...). Semantic checks the schema cannot express (equal lengths, ordering,
symmetry) are the estimator's :meth:`from_dict`, with the same kind of message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoreframe.errors import FormatError, Place, message
from scoreframe.io.atomic import atomic_output

if TYPE_CHECKING:  # jsonschema is imported where a document is validated
    import jsonschema

__all__ = ["FORMAT", "VERSION", "check_names", "decode_float", "decode_floats", "encode_float",
           "field", "header", "read_document", "schema_error", "validate_document",
           "write_document"]

FORMAT = "scoreframe-model"
VERSION = 1

#: A finite JSON number (rejects 1e400 and integers such as 10**400, which overflow a float).
FINITE: dict[str, Any] = {"type": "number", "minimum": -1.7976931348623157e308,
                          "maximum": 1.7976931348623157e308}
#: A finite number or one of the strings "Infinity" / "-Infinity".
EXTENDED: dict[str, Any] = {"anyOf": [FINITE, {"enum": ["Infinity", "-Infinity"]}]}
#: A prior strictly between 0 and 1.
PRIOR: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
#: A Beta-family scoring rule (Brümmer's convention: alpha, beta > 0).
OBJECTIVE: dict[str, Any] = {
    "type": "object", "required": ["alpha", "beta"],
    "properties": {"rule": {"type": "string"},
                   "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6},
                   "beta": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}}}
NAMES: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1},
                         "uniqueItems": True}

HEADER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["format", "version", "method"],
    "properties": {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "method": {"type": "string"},
        "system": {"type": ["string", "null"]},
        "where": {"type": ["string", "null"]},
        "training": {"type": "object"},
    },
}


def _expected(err: jsonschema.ValidationError) -> str:
    v, kind = err.validator_value, err.validator
    if kind in ("minimum", "maximum") and abs(float(v)) >= 1e308:
        return "a finite number"
    words = {"exclusiveMinimum": f"a number > {v}", "exclusiveMaximum": f"a number < {v}",
             "minimum": f"a number >= {v}", "maximum": f"a number <= {v}",
             "type": f"a value of type {v}", "const": f"{v!r}",
             "enum": " | ".join(map(repr, v)) if isinstance(v, list) else str(v),
             "minItems": f"at least {v} items", "maxItems": f"at most {v} items",
             "minProperties": f"at least {v} entries", "uniqueItems": "distinct items",
             "minLength": "a non-empty string", "anyOf": "a finite number or "
                                                           "\"Infinity\"/\"-Infinity\""}
    return words.get(str(kind), str(err.message))


def _printable(text: str) -> str:
    """A field name for a one-line message: control characters escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def schema_error(err: jsonschema.ValidationError, *, where: str) -> FormatError:
    """A :class:`FormatError` naming the file and the field of a schema violation."""
    path = ".".join(_printable(str(p)) for p in err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        name = _printable(f"{path}.{missing}" if path else missing)
        return FormatError(message(f"missing field `{name}`", where=where))
    got = repr(err.instance)
    if len(got) > 60:
        got = got[:57] + "..."
    return FormatError(message("bad field `" + (path or "document") + "`", where=where,
                               expected=_expected(err), got=got))


def validate_document(doc: Any, schema: Mapping[str, Any], *, where: str) -> None:
    """Validate ``doc`` against ``schema``; raise the most relevant violation as FormatError."""
    import jsonschema  # ~0.15 s to import: loaded on first use
    from jsonschema.exceptions import best_match

    validator = jsonschema.Draft202012Validator(schema)
    err = best_match(validator.iter_errors(doc))
    if err is not None:
        raise schema_error(err, where=where)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _non_finite(node: Any, path: str = "") -> tuple[str, float] | None:
    """The path and value of the first NaN or infinite float in a parsed document."""
    if isinstance(node, float) and not math.isfinite(node):
        return path or "document", node
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for k, v in items:
        found = _non_finite(v, f"{path}.{k}" if path else str(k))
        if found is not None:
            return found
    return None


def read_document(source: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Parse a model file (or take a parsed document) and check its header.

    Returns the document and a ``where`` string naming it for error messages.
    """
    if isinstance(source, Mapping):
        doc: Any = dict(source)
        where = "the model document"
    else:
        where = Place(source)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FormatError(message("model file not found", where=where)) from None
        except IsADirectoryError:
            raise FormatError(message("model file is a directory", where=where)) from None
        except UnicodeDecodeError:
            raise FormatError(message("model file is not UTF-8 text JSON", where=where)
                              ) from None
        try:
            doc = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise FormatError(message("model file is not valid JSON", where=where,
                                      got=f"{exc.msg} at line {exc.lineno}")) from None
        except (ValueError, RecursionError) as exc:
            raise FormatError(message("model file is not valid JSON", where=where,
                                      got=str(exc)[:80])) from None
    try:
        bad = _non_finite(doc)
    except RecursionError:
        raise FormatError(message("model document nested too deeply", where=where)) from None
    if bad is not None:
        path, value = bad
        raise FormatError(message(f"bad field `{_printable(str(path))}`", where=where,
                                  expected="a finite number", got=repr(value)))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(message("not a scoreframe model file", where=where,
                                  expected=f'a JSON object with "format": "{FORMAT}"'))
    if doc.get("version") != VERSION or isinstance(doc.get("version"), bool):
        raise FormatError(message("unsupported model file version", where=where,
                                  expected=str(VERSION), got=repr(doc.get("version"))[:40]))
    validate_document(doc, HEADER_SCHEMA, where=where)
    return doc, where


def write_document(doc: Mapping[str, Any], path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a model document as strict JSON, atomically; returns the path written."""
    text = json.dumps(doc, indent=1, allow_nan=False)
    with atomic_output(path, overwrite=overwrite) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")
    return Path(path)


def header(method: str) -> dict[str, Any]:
    """The common first keys of a model document."""
    return {"format": FORMAT, "version": VERSION, "method": method}


def encode_float(v: float) -> float | str:
    """A float for strict JSON: non-finite values become strings.

    >>> encode_float(float("-inf")), encode_float(2.5)
    ('-Infinity', 2.5)
    """
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def within(where: str, part: str) -> str:
    """``where`` narrowed to ``part`` of it: a :class:`Place` keeps its file as an attribute.

    >>> within("the model document", "field `offset`"), within(Place("m.json"), "field `offset`")
    ('the model document, field `offset`', '`m.json` field `offset`')
    """
    return where.inside(part) if isinstance(where, Place) else f"{where}, {part}"


def decode_float(v: object, *, where: str) -> float:
    """Inverse of :func:`encode_float`, with a clear error on anything else."""
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise FormatError(message("bad number", expected="a number",
                                  got=repr(v)[:40], where=where))
    if isinstance(v, str):
        if v not in ("Infinity", "-Infinity", "NaN"):
            raise FormatError(message("bad number", expected="a number",
                                      got=repr(v)[:40], where=where))
        return float(v.replace("Infinity", "inf"))
    try:
        return float(v)
    except OverflowError:
        raise FormatError(message("bad number", expected="a finite number",
                                  got="an integer too large for a float", where=where)) from None


def decode_floats(v: object, *, where: str, finite: bool = False) -> list[float]:
    """A list of numbers from the model file."""
    if not isinstance(v, list):
        raise FormatError(message("bad field", expected="a list of numbers",
                                  got=type(v).__name__, where=where))
    out = [decode_float(x, where=where) for x in v]
    if finite and not all(math.isfinite(x) for x in out):
        raise FormatError(message("non-finite number",
                                  expected="finite numbers", where=where))
    return out


def field(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, where: str) -> Any:
    """``doc[key]`` checked for presence and type."""
    if key not in doc:
        raise FormatError(message(f"missing field `{key}`", where=where))
    v = doc[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(v, int | str) and not isinstance(v, bool):
        return decode_float(v, where=within(where, f"field `{key}`"))
    if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
        raise FormatError(message(f"bad `{key}`",
                                  expected=" or ".join(k.__name__ for k in kinds),
                                  got=repr(v)[:60], where=where))
    return v


def check_names(v: object, *, where: str) -> list[str]:
    """A list of distinct strings."""
    if not isinstance(v, Sequence) or isinstance(v, str) or \
            not all(isinstance(x, str) for x in v) or len(set(v)) != len(v):
        raise FormatError(message("bad name list",
                                  expected="distinct strings", got=repr(v)[:60], where=where))
    return list(v)
