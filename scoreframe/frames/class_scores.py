"""Validation of per-class score arrays and of the SASV ``trial_type`` column.

Shared by :mod:`scoreframe.metrics.spoof` and :mod:`scoreframe.metrics.forensic` (and meant for
``validate_trials``): every check returns a clean float64 array or raises a one-line
:class:`~scoreframe.errors.ScoreframeError` naming the argument, what was expected, what was found
and where.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import DegenerateError, ScoreframeError, ValidationError, message

__all__ = ["TRIAL_TYPES", "check_class_scores", "check_trial_types", "split_trial_types",
           "trial_type_problem"]

F64 = NDArray[np.float64]
TRIAL_TYPES = ("target", "nontarget", "spoof")


def check_class_scores(x: ArrayLike, *, name: str, finite: bool = False,
                       sort: bool = False) -> F64:
    """One class's scores as a 1-D float64 array (a copy when sorted); NaN and empty rejected.

    Parameters
    ----------
    x
        Scores (or llrs) of one class.
    name
        Argument name used in messages.
    finite
        Also reject ``+-inf``.
    sort
        Return the scores sorted ascending (the input is never modified).

    Examples
    --------
    >>> check_class_scores([2, 1], name="spoof", sort=True).tolist()
    [1.0, 2.0]
    >>> check_class_scores([1.0, float("nan")], name="spoof")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: `spoof` contains NaN at index 1: expected finite or ...
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ScoreframeError(message(f"`{name}` is not numeric", expected="an array of floats",
                                      got=type(x).__name__)) from None
    if a.ndim == 0 or (a.ndim == 2 and 1 in a.shape):
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ScoreframeError(message(f"`{name}` must be one-dimensional",
                                      got=f"shape {a.shape}"))
    if a.shape[0] == 0:
        raise DegenerateError(message(f"`{name}` is empty", expected="at least one score",
                                      got="0 scores"))
    bad = np.isnan(a) if not finite else ~np.isfinite(a)
    if bad.any():
        first = int(np.argmax(bad))
        what = "NaN" if np.isnan(a[first]) else "non-finite values"
        raise ScoreframeError(message(
            f"`{name}` contains {what} at index {first}",
            expected="finite scores" if finite else "finite or infinite scores",
            got=f"{int(bad.sum())} {'NaN' if not finite else 'non-finite'} value(s)"))
    return np.sort(a) if sort else a


def trial_type_problem(values: pl.Series | ArrayLike, *, where: str | None = None
                       ) -> str | None:
    """The message of the first problem of a ``trial_type`` column, or ``None`` when it is valid.

    Valid values: ``target``, ``nontarget``, ``spoof`` (exact, lower case); null is not valid.

    Examples
    --------
    >>> trial_type_problem(["target", "spoof"]) is None
    True
    >>> print(trial_type_problem(["target", "bonafide", None], where="file t.csv"))
    ... # doctest: +NORMALIZE_WHITESPACE
    column `trial_type` has values outside target/nontarget/spoof in file t.csv:
    expected target, nontarget or spoof; got 2 bad value(s), e.g. 'bonafide' (row 1)
    """
    s = values if isinstance(values, pl.Series) else pl.Series(
        "trial_type", cast(Any, values), dtype=pl.String, strict=False)
    if s.dtype not in (pl.String, pl.Categorical, pl.Enum) and not isinstance(
            s.dtype, pl.Categorical | pl.Enum):
        return message("column `trial_type` has the wrong type", where=where, expected="str",
                       got=str(s.dtype))
    ok = s.cast(pl.String).is_in(TRIAL_TYPES).fill_null(False)
    if bool(ok.all()):
        return None
    bad = (~ok).arg_true()
    row = int(bad[0])
    return message("column `trial_type` has values outside target/nontarget/spoof", where=where,
                   expected="target, nontarget or spoof",
                   got=f"{bad.len()} bad value(s), e.g. {s[row]!r} (row {row})")


def check_trial_types(values: pl.Series | ArrayLike, *, where: str | None = None
                      ) -> NDArray[np.int8]:
    """Codes 0 (target), 1 (nontarget), 2 (spoof) of a ``trial_type`` column.

    Raises :class:`~scoreframe.errors.ValidationError` with :func:`trial_type_problem`'s message.

    Examples
    --------
    >>> check_trial_types(["spoof", "target", "nontarget"]).tolist()
    [2, 0, 1]
    """
    problem = trial_type_problem(values, where=where)
    if problem is not None:
        raise ValidationError(problem)
    s = values if isinstance(values, pl.Series) else pl.Series(
        "trial_type", cast(Any, values), dtype=pl.String)
    return s.cast(pl.String).replace_strict(
        {t: i for i, t in enumerate(TRIAL_TYPES)}, return_dtype=pl.Int8).to_numpy()


def split_trial_types(scores: ArrayLike, trial_type: pl.Series | ArrayLike
                      ) -> tuple[F64, F64, F64]:
    """Split scores into ``(target, nontarget, spoof)`` arrays by their ``trial_type``.

    Examples
    --------
    >>> [a.tolist() for a in split_trial_types([1, 2, 3], ["spoof", "target", "spoof"])]
    [[2.0], [], [1.0, 3.0]]
    """
    s = np.asarray(scores, dtype=np.float64)
    code = check_trial_types(trial_type)
    if code.shape[0] != s.shape[0]:
        raise ScoreframeError(message("`scores` and `trial_type` differ in length",
                                      got=f"{s.shape[0]} and {code.shape[0]}"))
    return s[code == 0], s[code == 1], s[code == 2]
