"""Exception types raised by scoreframe.

Every user-facing error subclasses :class:`ScoreframeError`, itself a ``ValueError``, so callers
may catch either. Messages follow polars' style: lowercase, identifiers in backticks, what was
expected, what was found, where, and a hint after a blank line.
"""

from __future__ import annotations


class ScoreframeError(ValueError):
    """Base class of every error scoreframe raises on bad input."""


class SchemaError(ScoreframeError):
    """A table does not have the canonical columns or types."""


class AlignmentError(ScoreframeError):
    """Scores and a key (or trial list) do not align."""


class DegenerateError(ScoreframeError):
    """A metric is undefined for this input (no targets, no non-targets, ...)."""


class FormatError(ScoreframeError):
    """A file is malformed for the format it is read as."""


def message(what: str, *, expected: str | None = None, got: str | None = None,
            where: str | None = None, hint: str | None = None) -> str:
    """Compose an error message in the house format.

    Examples
    --------
    >>> message("column `label` has bad values", expected="bool", got="Int64", where="file a.tsv")
    'column `label` has bad values in file a.tsv: expected bool; got Int64'
    """
    text = what
    if where:
        text += f" in {where}"
    parts = []
    if expected:
        parts.append(f"expected {expected}")
    if got:
        parts.append(f"got {got}")
    if parts:
        text += ": " + "; ".join(parts)
    if hint:
        text += f"\n\n{hint}"
    return text


class UsageError(ScoreframeError):
    """A command line or function call combines options that do not fit together."""


class NotFittedError(ScoreframeError):
    """A calibrator or fuser was used before :meth:`fit` (or loading)."""


class ValidationError(SchemaError):
    """Trial data failed the data checks (duplicates, unknown labels, null or NaN scores...)."""


class ScoreframeWarning(UserWarning):
    """Base class of every warning scoreframe emits."""


class DegenerateGroupWarning(ScoreframeWarning):
    """Some groups have no targets or no non-targets; their metrics are null."""


class EngineError(ScoreframeError):
    """An execution engine cannot run: Dask not installed, scheduler unreachable, no workers."""


class UnresolvedTargetWarning(ScoreframeWarning):
    """An error-rate target is finer than the data can resolve; its value is null.

    FNMR at FMR = 1e-6 needs at least 10^6 impostor comparisons: with fewer, the only FMR
    at or below the target is 0, and the value would be ZeroFMR under another name.
    """
