"""Normalization methods and the conventions of other toolkits (what to compute, by name)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scoreframe.checks import check_choice, check_positive_int
from scoreframe.errors import ScoreframeError, message

__all__ = ["CONVENTIONS", "METHODS", "SIDES", "Convention", "Method", "needed",
           "resolve_ddof", "resolve_methods"]

#: The normalization methods: enrolment side, test side, both (s-norm), both on top-k (AS-norm).
METHODS = ("znorm", "tnorm", "snorm", "asnorm")
#: The two sides of a trial, named as in the statistics table.
SIDES = ("enroll", "test")
_SIDES_OF = {"znorm": ("enroll",), "tnorm": ("test",), "snorm": SIDES, "asnorm": SIDES}


@dataclass(frozen=True)
class Convention:
    """Defaults that reproduce a toolkit.

    Attributes
    ----------
    ddof
        Delta degrees of freedom of the cohort standard deviation (0: population, 1: sample).
    top_k
        Default k of AS-norm.
    top_k_for_all
        Whether ``top_k`` also selects the cohort of z-, t- and s-norm (SpeechBrain's
        ``cohort_size``) instead of only AS-norm's.

    See Also
    --------
    scoreframe.normalize : Takes it as ``convention=``.
    scoreframe.cohort_statistics : Computed under it.

    Examples
    --------
    >>> from scoreframe.norm import CONVENTIONS
    >>> CONVENTIONS["speechbrain"]
    Convention(ddof=1, top_k=None, top_k_for_all=True)
    >>> CONVENTIONS["wespeaker"].top_k
    300
    """

    ddof: int
    top_k: int | None
    top_k_for_all: bool


#: ``wespeaker``: population std, AS-norm k = 300 (its VoxCeleb recipe), s-norm on the whole
#: cohort. ``speechbrain``: sample std, ``top_k`` (``cohort_size``) applied to every method.
CONVENTIONS = {"wespeaker": Convention(ddof=0, top_k=300, top_k_for_all=False),
               "speechbrain": Convention(ddof=1, top_k=None, top_k_for_all=True)}


@dataclass(frozen=True)
class Method:
    """One normalization to apply: its name and its cohort size (``None``: the whole cohort)."""

    name: str
    k: int | None

    @property
    def label(self) -> str:
        """``snorm``, ``asnorm300``: the suffix of the output column / system name."""
        return self.name + (str(self.k) if self.k is not None else "")

    @property
    def column(self) -> str:
        """The output column: ``score_`` + :attr:`label`."""
        return "score_" + self.label

    @property
    def sides(self) -> tuple[str, ...]:
        """The trial sides whose cohort statistics the method uses."""
        return _SIDES_OF[self.name]


_PATTERN = re.compile(r"(znorm|tnorm|snorm|asnorm)(\d+)?")


def resolve_methods(method: str | Sequence[str], *, top_k: int | None,
                    convention: str) -> list[Method]:
    """The methods named by ``method`` (``"snorm"``, ``["snorm", "asnorm300"]``).

    A name may carry its k (``asnorm300``); else AS-norm takes ``top_k`` (or the convention's
    default) and z/t/s-norm take ``top_k`` only under a convention that applies it to every
    method (SpeechBrain), the whole cohort otherwise.

    >>> [m.column for m in resolve_methods(["snorm", "asnorm"], top_k=None,
    ...                                    convention="wespeaker")]
    ['score_snorm', 'score_asnorm300']
    """
    conv = CONVENTIONS[check_choice(convention, name="convention", choices=tuple(CONVENTIONS))]
    if top_k is not None:
        top_k = check_positive_int(top_k, name="top_k")
    names = [method] if isinstance(method, str) else list(method)
    if not names:
        raise ScoreframeError(message("bad `method`", expected="at least one of "
                                      + ", ".join(METHODS), got="nothing"))
    out: list[Method] = []
    for name in names:
        m = _PATTERN.fullmatch(name) if isinstance(name, str) else None
        if m is None:
            raise ScoreframeError(message(
                "unknown `method`", expected=" | ".join(METHODS) + " (optionally with k, "
                "e.g. asnorm300)", got=repr(name)))
        base, suffix = m.group(1), m.group(2)
        k: int | None = int(suffix) if suffix else None
        if k is not None and k < 1:
            raise ScoreframeError(message("bad `method`", expected="a k >= 1", got=repr(name)))
        if k is None and base == "asnorm":
            k = top_k if top_k is not None else conv.top_k
            if k is None:
                raise ScoreframeError(message(
                    "`asnorm` needs `top_k`", got="none",
                    hint="Pass top_k (CLI: --top-k), e.g. 300 as in WeSpeaker."))
        elif k is None and conv.top_k_for_all:
            k = top_k
        meth = Method(base, k)
        if meth not in out:
            out.append(meth)
    return out


def resolve_ddof(ddof: int | None, *, convention: str) -> int:
    """``ddof`` as given (0 or 1), else the convention's.

    >>> resolve_ddof(None, convention="speechbrain")
    1
    """
    if ddof is None:
        return CONVENTIONS[check_choice(convention, name="convention",
                                        choices=tuple(CONVENTIONS))].ddof
    if isinstance(ddof, bool) or ddof not in (0, 1):
        raise ScoreframeError(message("bad `ddof`", expected="0 (population std) or 1 "
                                      "(sample std)", got=repr(ddof)))
    return int(ddof)


def needed(methods: Sequence[Method]) -> dict[str, list[int | None]]:
    """The cohort sizes each side needs (``None`` = whole cohort), in a fixed order.

    >>> needed([Method("znorm", None), Method("asnorm", 300)])
    {'enroll': [None, 300], 'test': [300]}
    """
    out: dict[str, list[int | None]] = {}
    for m in methods:
        for side in m.sides:
            ks = out.setdefault(side, [])
            if m.k not in ks:
                ks.append(m.k)
    return {s: sorted(ks, key=lambda k: -1 if k is None else k) for s, ks in out.items()}
