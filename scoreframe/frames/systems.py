"""Choosing the systems of a multi-system table: shared by binary and multiclass fusion.

Frames layer; no dependency on any estimator, so fusers and evaluators may both import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from scoreframe.errors import ScoreframeError, listing, message

__all__ = ["pick_systems"]

T = TypeVar("T")


def pick_systems(frames: Mapping[str, T], systems: Sequence[str] | None = None, *,
                 minimum: int = 2) -> dict[str, T]:
    """The frames of ``systems`` in that order (all of them when None); at least ``minimum``.

    Parameters
    ----------
    frames
        One table (or anything) per system name.
    systems
        The names wanted, e.g. those a fitted fusion model combines; each must be present.
    minimum
        How many systems are needed (2 for fusion).

    Raises
    ------
    ScoreframeError
        A wanted system is absent, or fewer than ``minimum`` systems remain.

    Examples
    --------
    >>> list(pick_systems({"a": 1, "b": 2, "c": 3}, ["c", "a"]))
    ['c', 'a']
    >>> pick_systems({"a": 1}, None)
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: fusion needs at least two systems: got ['a']
    """
    chosen = dict(frames)
    if systems is not None:
        absent = [s for s in systems if s not in chosen]
        if absent:
            raise ScoreframeError(message(
                "the data lack systems the model fuses",
                expected=listing(systems, quoted=True), got=listing(sorted(chosen), quoted=True),
                hint=f"Missing ({len(absent)}): {listing(absent, quoted=True)}."))
        chosen = {s: chosen[s] for s in systems}
    if len(chosen) < minimum:
        need = "two" if minimum == 2 else str(minimum)
        raise ScoreframeError(message(f"fusion needs at least {need} systems",
                                      got=f"{list(chosen) or 'none'}"))
    return chosen
