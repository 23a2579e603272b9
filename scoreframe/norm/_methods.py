"""Normalization methods and the conventions of other toolkits (what to compute, by name)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scoreframe.checks import check_choice, check_positive_int
from scoreframe.errors import ScoreframeError, message

__all__ = ["CONVENTIONS", "METHODS", "SIDES", "Convention", "Method", "Normalization",
           "NormalizationLike", "as_normalization", "needed", "resolve_ddof", "resolve_methods"]

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
    Normalization : Takes its name as ``convention=``.
    scoreframe.normalize : Applies it.

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
                                      + ", ".join(METHODS), got="nothing"), parameter="method")
    out: list[Method] = []
    for name in names:
        m = _PATTERN.fullmatch(name) if isinstance(name, str) else None
        if m is None:
            raise ScoreframeError(message(
                "unknown `method`", expected=" | ".join(METHODS) + " (optionally with k, "
                "e.g. asnorm300)", got=repr(name)), parameter="method")
        base, suffix = m.group(1), m.group(2)
        k: int | None = int(suffix) if suffix else None
        if k is not None and k < 1:
            raise ScoreframeError(message("bad `method`", expected="a k >= 1", got=repr(name)),
                                  parameter="method")
        if k is None and base == "asnorm":
            k = top_k if top_k is not None else conv.top_k
            if k is None:
                raise ScoreframeError(message(
                    "`asnorm` needs `top_k`", got="none",
                    hint="Pass top_k (CLI: --top-k), e.g. 300 as in WeSpeaker."),
                    parameter="top_k")
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
                                      "(sample std)", got=repr(ddof)), parameter="ddof")
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


@dataclass(frozen=True)
class Normalization:
    """Score normalization: the methods, their cohort size and standard deviation, the guard.

    Passed as ``method=`` to :func:`scoreframe.normalize` and
    :func:`scoreframe.cohort_statistics` (which also take a method name or a list of names:
    the same methods with the defaults below); checked when created.

    Parameters
    ----------
    method
        ``"znorm"`` (enrolment side), ``"tnorm"`` (test side), ``"snorm"`` (both),
        ``"asnorm"`` (both, each over its top-k cohort scores) or a list of them; a name may
        carry its cohort size (``asnorm300``, ``snorm20000``). Stored as a tuple.
    top_k
        Cohort size of AS-norm, and of every method under ``convention="speechbrain"``
        (SpeechBrain's ``cohort_size``); default: the convention's (WeSpeaker: 300).
    ddof
        0 (population std, WeSpeaker) or 1 (sample std, SpeechBrain); default: the
        convention's.
    convention
        ``"wespeaker"`` (ddof 0, AS-norm k = 300, z/t/s-norm on the whole cohort) or
        ``"speechbrain"`` (ddof 1, ``top_k`` for z/t/s-norm too); see :data:`CONVENTIONS`.
    exclude_same_id
        Leakage guard: cohort entries of the same id as the side normalized (of the same
        ``speaker`` when both embeddings tables label speakers) are left out of its
        statistics.

    See Also
    --------
    scoreframe.normalize : Takes ``method=Normalization(...)``.
    scoreframe.cohort_statistics : The statistics the methods need.
    Convention : The defaults a convention sets.

    Examples
    --------
    >>> n = Normalization(["snorm", "asnorm"], top_k=100, exclude_same_id=True)
    >>> n.method, n.top_k, n.convention
    (('snorm', 'asnorm'), 100, 'wespeaker')
    >>> Normalization("asnorm", top_k=0)
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: bad `top_k`: expected an integer >= 1; got 0
    """

    method: str | Sequence[str] = "snorm"
    top_k: int | None = None
    ddof: int | None = None
    convention: str = "wespeaker"
    exclude_same_id: bool = False

    def __post_init__(self) -> None:
        """Check every option; ``method`` is stored as a tuple, ``top_k`` as an int."""
        if isinstance(self.method, str):
            method: tuple[str, ...] = (self.method,)
        elif isinstance(self.method, Sequence):
            method = tuple(self.method)
        else:
            raise ScoreframeError(message(
                "bad `method`", expected="a method name or a list of names (" + ", ".join(
                    METHODS) + ")", got=repr(self.method)[:80]), parameter="method")
        object.__setattr__(self, "method", method)
        if self.top_k is not None:
            object.__setattr__(self, "top_k", check_positive_int(self.top_k, name="top_k"))
        resolve_methods(method, top_k=self.top_k, convention=self.convention)
        resolve_ddof(self.ddof, convention=self.convention)
        if not isinstance(self.exclude_same_id, bool):
            raise ScoreframeError(message("bad `exclude_same_id`", expected="True or False",
                                          got=repr(self.exclude_same_id)[:80]),
                                  parameter="exclude_same_id")

    def methods(self) -> list[Method]:
        """The methods to apply, each with its cohort size (names carrying a k keep it)."""
        return resolve_methods(self.method, top_k=self.top_k, convention=self.convention)

    def resolved_ddof(self) -> int:
        """``ddof`` as given, else the convention's."""
        return resolve_ddof(self.ddof, convention=self.convention)


#: What ``method=`` accepts: a :class:`Normalization`, or method names with its defaults.
NormalizationLike = Normalization | str | Sequence[str]


def as_normalization(value: NormalizationLike) -> Normalization:
    """A :class:`Normalization` from ``method=`` (names get the default options).

    >>> as_normalization(["znorm", "asnorm300"]).method
    ('znorm', 'asnorm300')
    """
    return value if isinstance(value, Normalization) else Normalization(value)
