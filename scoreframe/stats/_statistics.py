"""Typed statistic requests: one declaration (parameters, range kernel, exact merge) per statistic.

numpy only. A :class:`Statistic` is a frozen dataclass: its fields are its parameters (so two
requests for the same statistic with the same parameters are equal and hash alike, and the
reduction computes it once), :meth:`Statistic.reduce` is its kernel on one contiguous score
range of one unit (a :class:`RangeData`: the range's sorted scores, where the range sits in its
group, and, when the request splits units into classes, the same per class), and
:meth:`Statistic.merge` merges the values of two adjacent ranges exactly (``a`` entirely below
``b``). :meth:`Statistic.empty` is the value of an empty range, the identity of ``merge``.

A :class:`~scoreframe.stats.summary.ScoreStats` carries the value of every statistic of its
request in ``ScoreStats.extra`` (keyed by the declaration), so a new statistic is one
declaration here or beside its kernel, plus the kernel; the reduction, the out-of-core and
Dask engines and the merges need no change.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe._cached_property import cached_property
from scoreframe.kernels.sorted_scores import Blocks, SortedScores, label_runs

__all__ = ["ClassData", "Context", "RangeData", "Statistic"]

I64 = NDArray[np.int64]


@dataclass(frozen=True)
class Context:
    """Where a range sits in its group: the group's totals and the counts below the range."""

    total_tar: int
    total_non: int
    offset_tar: int = 0
    offset_non: int = 0


@dataclass(frozen=True, eq=False)
class ClassData:
    """One class of a unit in one range: its sorted scores (both labels), total and offset.

    ``scores`` holds every trial of the class in the range, sorted ascending; ``total`` the
    class's trials in the whole unit; ``offset`` those below the range.
    """

    scores: NDArray[np.float64]
    total: int
    offset: int
    n_tar: int = 0  # trials of the class labelled target in the range

    @property
    def n(self) -> int:
        """Trials of the class in the range."""
        return int(self.scores.shape[0])


@dataclass(frozen=True, eq=False)
class RangeData:
    """What a statistic's kernel sees of one range of one unit.

    Attributes
    ----------
    s
        The range's target and non-target scores, each sorted ascending.
    ctx
        The unit's totals and the counts below the range.
    blocks
        The range's PAV blocks (positions relative to its first trial).
    classes
        Per class value of the request's ``class_column`` (e.g. ``trial_type``: ``target``,
        ``nontarget``, ``spoof``), the class's scores in the range with its total and offset;
        empty when the request has no class column.
    """

    s: SortedScores
    ctx: Context
    blocks: Blocks
    classes: Mapping[str | None, ClassData] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Trials in the range."""
        return self.s.n_tar + self.s.n_non

    @cached_property
    def corners(self) -> tuple[I64, I64]:
        """Global cumulative (targets, non-targets) at the corners of the steppy ROC.

        The first entry is the point before the range; one more per run of equal labels in
        the merged order (ties: targets first). Shared by the statistics that walk the ROC.
        """
        run_len, run_lab = label_runs(self.s)
        cum_tar = self.ctx.offset_tar + np.concatenate(
            ([0], np.cumsum(np.where(run_lab, run_len, 0)))).astype(np.int64)
        cum_non = self.ctx.offset_non + np.concatenate(
            ([0], np.cumsum(np.where(run_lab, 0, run_len)))).astype(np.int64)
        return cum_tar, cum_non

    def cls(self, name: str) -> ClassData:
        """The data of one class (an empty class when the range or unit has none)."""
        got = self.classes.get(name)
        return got if got is not None else ClassData(np.empty(0), 0, 0)

    def side(self, names: tuple[str, ...] | None, *, target: bool) -> ClassData:
        """The union of some classes (``names``), or a label class (``None``).

        With ``names=None``, ``target`` picks the targets or the non-targets of the labels;
        otherwise the classes' sorted scores are merged (a stable merge of sorted runs).
        """
        if names is None:
            if target:
                return ClassData(self.s.tar, self.ctx.total_tar, self.ctx.offset_tar,
                                 self.s.n_tar)
            return ClassData(self.s.non, self.ctx.total_non, self.ctx.offset_non, 0)
        parts = [self.cls(c) for c in names]
        if len(parts) == 1:
            return parts[0]
        scores = np.sort(np.concatenate([p.scores for p in parts]), kind="stable")
        return ClassData(scores, sum(p.total for p in parts), sum(p.offset for p in parts),
                         sum(p.n_tar for p in parts))


class Statistic(ABC):
    """A typed, parameterized statistic: subclasses are frozen dataclasses (see the module).

    Subclasses implement :meth:`reduce` and :meth:`merge`, and :meth:`empty` when an empty
    range has a value other than ``None``. ``classes`` names the class values (of the
    request's class column) the kernel reads; a request with such a statistic must split its
    units by that column.
    """

    #: Class values the kernel reads (empty: it reads only targets and non-targets).
    classes: tuple[str, ...] = ()
    #: Bytes per trial of a range the kernel holds besides the range's scores (its
    #: temporaries): added to the engines' memory estimates, so ``memory_limit`` still holds.
    bytes_per_trial: int = 0
    #: The value of a union of disjoint sets of trials is the :meth:`merge` of the sets'
    #: values, whatever their scores (counts and exact sums; not located results, PAV or
    #: pair counts): a pooled unit then merges its conditions' values instead of reading its
    #: trials again (:func:`~scoreframe.stats.summary.reduce_sorted`, ``parts``).
    additive: bool = False
    #: The kernel runs compiled loops (:mod:`scoreframe.kernels.compiled`): the engines set
    #: numba up in the background before they read.
    compiled: bool = False

    @abstractmethod
    def reduce(self, r: RangeData) -> Any:
        """The statistic of one range of one unit."""

    @abstractmethod
    def merge(self, a: Any, b: Any) -> Any:
        """The statistic of two adjacent ranges, ``a`` entirely below ``b`` (exact)."""

    def empty(self) -> Any:
        """The statistic of an empty range (the identity of :meth:`merge`)."""
        return None


def first_found(a: Any, b: Any) -> Any:
    """Merge of a located result: the lower range's value when it holds one."""
    return a if a is not None else b
