"""Argument checks shared by every public function: one place for each kind of check.

Each check returns the validated value (as the type the callers need) or raises
:class:`~scoreframe.errors.ScoreframeError` with a message in the house format. Nothing here
touches data frames.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import ScoreframeError, message, quote

__all__ = ["check_choice", "check_p_target", "check_p_targets", "check_positive",
           "check_positive_int", "check_probability"]


def check_probability(value: object, *, name: str, closed: bool = False) -> float:
    """A probability in ``(0, 1)`` (or ``[0, 1]`` with ``closed=True``), as a float.

    Examples
    --------
    >>> check_probability(0.25, name="ci")
    0.25
    >>> check_probability(1.5, name="ci")
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: bad `ci`: expected a number in (0, 1); got 1.5
    """
    interval = "[0, 1]" if closed else "(0, 1)"
    try:
        v = float(value)  # type: ignore[arg-type]  # any value is tried; float() raising is the check
    except (TypeError, ValueError):
        v = math.nan
    ok = (0.0 <= v <= 1.0) if closed else (0.0 < v < 1.0)
    if isinstance(value, bool) or not ok:
        raise ScoreframeError(message(f"bad `{name}`", expected=f"a number in {interval}",
                                      got=quote(value)), parameter=name)
    return v


def check_p_target(value: object, *, name: str = "p_target") -> float:
    """One target prior in ``(0, 1)``.

    >>> check_p_target(0.01)
    0.01
    """
    return check_probability(value, name=name)


def check_p_targets(value: ArrayLike | Sequence[float] | float, *, name: str = "p_target"
                    ) -> NDArray[np.float64]:
    """One or more target priors, each in ``(0, 1)``, as a 1-D float array (order kept).

    >>> check_p_targets([0.01, 0.5]).tolist()
    [0.01, 0.5]
    """
    try:
        p = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise ScoreframeError(message(f"bad `{name}`", expected="priors in (0, 1)",
                                      got=quote(value)), parameter=name) from None
    if p.ndim != 1 or p.size == 0 or not np.all((p > 0) & (p < 1)):
        raise ScoreframeError(message(f"bad `{name}`", expected="priors in (0, 1)",
                                      got=quote(value)), parameter=name)
    return p


def check_positive(value: object, *, name: str, allow_zero: bool = False) -> float:
    """A finite number ``> 0`` (or ``>= 0``).

    >>> check_positive(10, name="c_fa")
    10.0
    """
    try:
        v = float(value)  # type: ignore[arg-type]  # any value is tried; float() raising is the check
    except (TypeError, ValueError, OverflowError):
        v = math.nan
    ok = math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if isinstance(value, bool) or not ok:
        raise ScoreframeError(message(f"bad `{name}`",
                                      expected="a finite number " + (">= 0" if allow_zero
                                                                     else "> 0"),
                                      got=quote(value)), parameter=name)
    return v


def check_positive_int(value: object, *, name: str, minimum: int = 1,
                       maximum: int | None = None) -> int:
    """An integer in ``[minimum, maximum]``.

    >>> check_positive_int(3, name="workers")
    3
    """
    ok = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if ok:
        v = int(cast("int | np.integer", value))
        ok = v >= minimum and (maximum is None or v <= maximum)
    if not ok:
        rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ScoreframeError(message(f"bad `{name}`", expected=f"an integer {rng}",
                                      got=quote(value)), parameter=name)
    return v


def check_choice(value: object, *, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of names.

    >>> check_choice("nist", name="eer_method", choices=("rocch", "nist"))
    'nist'
    """
    if not isinstance(value, str) or value not in choices:
        raise ScoreframeError(message(f"unknown `{name}`", expected=" | ".join(choices),
                                      got=quote(value)), parameter=name)
    return value
