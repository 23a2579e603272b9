"""The metric registry: every per-group metric is declared once, here or beside its kernel.

A :class:`Metric` names its column, display name and unit, the statistics it needs and the
function that computes it from a group's final :class:`GroupStats`. ``evaluate`` rows, JSON,
CLI tables, the report's summary table and before/after tables are all generated from the
declarations (:func:`declared`, :func:`display_columns`), so a new metric is one declaration
plus one kernel (see ``docs/architecture.md``).

No dataframe library is imported here: declarations compute on numpy statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe._cached_property import cached_property
from scoreframe.checks import check_choice, check_p_targets, check_positive
from scoreframe.kernels.elementary import effective_prior, operating_points
from scoreframe.kernels.sorted_scores import BlockStack
from scoreframe.stats.summary import (
    AsvspoofEer,
    KaldiEer,
    NistEer,
    Request,
    ScoreStats,
    Statistic,
    Verification,
    VerificationRequest,
)

__all__ = ["EER_METHODS", "GroupStack", "GroupStats", "Metric", "OperatingPoints", "declare",
           "declared", "display_columns", "lookup", "request_for", "table_metrics"]

F64 = NDArray[np.float64]

#: EER conventions that ``evaluate`` computes from the statistics layer.
EER_METHODS = ("rocch", "nist", "kaldi", "asvspoof")
#: Families whose float metrics get bootstrap intervals unless declared otherwise.
INTERVAL_FAMILIES = ("binary", "spoof", "forensic")
#: The located statistic each EER convention needs beyond the PAV blocks.
EER_STATISTICS: dict[str, Statistic] = {"nist": NistEer(), "kaldi": KaldiEer(),
                                         "asvspoof": AsvspoofEer()}


@dataclass(frozen=True)
class OperatingPoints:
    """Application operating points ``(p_target, c_miss, c_fa)`` and their effective priors.

    Passed as ``operating_points=`` to the entry points that read trials (a number or a list
    of numbers there means target priors with unit costs).

    Parameters
    ----------
    p_target
        One or more target priors, in ``(0, 1)``.
    c_miss, c_fa
        The costs of a miss and of a false alarm, shared by every prior.

    See Also
    --------
    scoreframe.evaluate : takes ``operating_points=OperatingPoints(...)``.

    Examples
    --------
    >>> OperatingPoints((0.01, 0.5)).p.round(4).tolist()
    [0.01, 0.5]
    >>> OperatingPoints(0.01, c_miss=10).p.round(4).tolist()  # the effective prior
    [0.0917]
    """

    p_target: tuple[float, ...]
    c_miss: float = 1.0
    c_fa: float = 1.0

    def __post_init__(self) -> None:
        p = check_p_targets(self.p_target)
        object.__setattr__(self, "p_target", tuple(float(v) for v in p))
        object.__setattr__(self, "c_miss", check_positive(self.c_miss, name="c_miss"))
        object.__setattr__(self, "c_fa", check_positive(self.c_fa, name="c_fa"))

    @cached_property
    def _arrays(self) -> tuple[F64, F64, F64]:
        eff = effective_prior(np.asarray(self.p_target), self.c_miss, self.c_fa)
        return operating_points(p_target=eff)

    @property
    def p(self) -> F64:
        """Effective target priors."""
        return self._arrays[0]

    @property
    def q(self) -> F64:
        """Their complements."""
        return self._arrays[1]

    @property
    def threshold(self) -> F64:
        """Bayes thresholds on llrs, ``-logit(p)``."""
        return self._arrays[2]

    @property
    def default_dcf(self) -> F64:
        """DCF of the default system, ``min(p, 1 - p)``: the normalizer."""
        return np.minimum(self.p, self.q)


@dataclass(frozen=True, eq=False)
class GroupStats:
    """A group's final statistics (its whole score range) with the evaluation's settings.

    A declared metric's ``compute`` receives one per group (and one per bootstrap replicate).

    See Also
    --------
    Metric : Declarations that compute from it.
    declare : Register a metric.

    Examples
    --------
    >>> import numpy as np
    >>> from scoreframe.kernels import sort_scores
    >>> from scoreframe.stats import Request, reduce_sorted
    >>> ops = OperatingPoints((0.01,))
    >>> s = sort_scores(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.5, -1.0]))
    >>> g = GroupStats(reduce_sorted(s, Request(thresholds=ops.threshold)), ops)
    >>> g.n_tar, g.n_non, round(g.min_cllr, 6), lookup("eer").compute(g)
    (3, 3, 0.333333, 0.16666666666666666)
    """

    stats: ScoreStats
    ops: OperatingPoints
    eer_method: str = "rocch"
    extras: dict[str, Any] = field(default_factory=dict)  # values of optional families

    @property
    def n_tar(self) -> int:
        """Targets in the group."""
        return self.stats.n_tar

    @property
    def n_non(self) -> int:
        """Non-targets in the group."""
        return self.stats.n_non

    @property
    def ok(self) -> bool:
        """True when the group has targets and non-targets (metrics are defined)."""
        return self.stats.n_tar > 0 and self.stats.n_non > 0

    def act_counts(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Misses and false alarms at the operating points' Bayes thresholds."""
        k = len(self.ops.p_target)
        return self.stats.n_miss[:k], self.stats.n_fa[:k]

    @cached_property
    def min_cllr(self) -> float:
        """The group's minCllr (PAV blocks, BOSARIS' ramp), computed once per group."""
        from scoreframe.kernels.cllr import min_cllr

        return min_cllr(self.stats.blocks)

    @cached_property
    def min_dcf(self) -> tuple[F64, NDArray[np.int64], NDArray[np.int64]]:
        """Unnormalized min DCF and the miss/false-alarm counts at the minimizing vertex."""
        from scoreframe.kernels.rocch import min_dcf

        return min_dcf(self.stats.blocks, self.ops.p, self.ops.q)


@dataclass(frozen=True, eq=False)
class GroupStack:
    """The final statistics of several replicates of one group, stacked.

    What a declaration's :attr:`Metric.compute_stack` reads: the values of :class:`GroupStats`
    with a leading replicate axis, computed for every replicate at once by the kernels'
    ``*_stack`` forms (the one-group kernels are their stack of one, so each replicate gets
    the bits its own :class:`GroupStats` would give). Every member has targets and
    non-targets.

    See Also
    --------
    GroupStats : One group (or replicate).
    Metric : ``compute_stack`` reads this.

    Examples
    --------
    >>> from scoreframe.kernels import sort_scores
    >>> from scoreframe.stats import Request, reduce_sorted
    >>> ops = OperatingPoints((0.01,))
    >>> req = Request(thresholds=ops.threshold)
    >>> a = reduce_sorted(sort_scores([1.0, 2.0, 3.0], [0.0, 1.5, -1.0]), req)
    >>> b = reduce_sorted(sort_scores([0.5, 2.5], [0.0, 1.0, 3.0]), req)
    >>> st = GroupStack((a, b), ops)
    >>> st.n_tar.tolist(), st.min_cllr.tolist() == [GroupStats(a, ops).min_cllr,
    ...                                             GroupStats(b, ops).min_cllr]
    ([3, 2], True)
    """

    stats: tuple[ScoreStats, ...]
    ops: OperatingPoints

    @cached_property
    def n_tar(self) -> NDArray[np.int64]:
        """Targets of each replicate."""
        return np.array([s.n_tar for s in self.stats], dtype=np.int64)

    @cached_property
    def n_non(self) -> NDArray[np.int64]:
        """Non-targets of each replicate."""
        return np.array([s.n_non for s in self.stats], dtype=np.int64)

    @cached_property
    def blocks(self) -> BlockStack:
        """The replicates' PAV blocks, stacked."""
        return BlockStack.of([s.blocks for s in self.stats])

    def act_counts(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Misses and false alarms at the operating points' Bayes thresholds, ``(R, K)``."""
        k = len(self.ops.p_target)
        shape = (len(self.stats), k)
        miss = np.array([s.n_miss[:k] for s in self.stats], dtype=np.int64).reshape(shape)
        fa = np.array([s.n_fa[:k] for s in self.stats], dtype=np.int64).reshape(shape)
        return miss, fa

    @cached_property
    def min_cllr(self) -> F64:
        """The minCllr of each replicate."""
        from scoreframe.kernels.cllr import min_cllr_stack

        return min_cllr_stack(self.blocks)

    @cached_property
    def min_dcf(self) -> tuple[F64, NDArray[np.int64], NDArray[np.int64]]:
        """:attr:`GroupStats.min_dcf` of each replicate, ``(R, K)`` each."""
        from scoreframe.kernels.rocch import min_dcf_stack

        return min_dcf_stack(self.blocks, self.ops.p, self.ops.q)


@dataclass(frozen=True)
class Metric:
    """One declared metric.

    Attributes
    ----------
    name
        Column name in results and JSON (``eer``, ``min_dcf_norm``...).
    display
        Header in tables and reports (``EER``).
    unit
        ``"%"``, ``"bits"``, ``"trials"`` or ``""``; tables show ``value * scale``.
    compute
        ``compute(group_stats) -> value``: a float (or int/bool) for group-level metrics, an
        array over the operating points when ``per_operating_point``.
    per_operating_point
        The metric has one value per operating point (it goes into the ``dcf`` structs).
    needs
        Typed statistic declarations beyond blocks, sums and the operating points'
        threshold counts (:class:`~scoreframe.stats.summary.Statistic` instances, e.g.
        ``DetCorners(0.03)``): the reduction's :class:`Request` computes them, and
        ``compute`` reads their values with ``group_stats.stats.get(statistic)``. A metric
        that reads classes (``Statistic.classes``) names the column that splits them in
        ``class_column``.
    dtype
        ``"float"``, ``"int"`` or ``"bool"``.
    family
        ``"binary"`` (always computed) or an optional family (``"spoof"``, ``"forensic"``).
    table
        Shown in the CLI and report summary tables.
    intervals
        Bootstrap intervals (``_lo``/``_hi``) when replicates are asked for: ``compute`` then
        runs on every replicate's statistics (the same kernel as the point value; the
        replicates carry the values of ``needs`` by the statistics' own kernels). ``None``
        (the default) means on for float metrics of the ``binary``, ``spoof`` and
        ``forensic`` families; a declaration whose ``compute`` reads ``GroupStats.extras``
        or located results of the binary statistics (``nist``, ``kaldi``) must leave it off.
    class_column
        The column whose values split each group into classes for the statistics in
        ``needs`` that read classes (``trial_type`` for the anti-spoofing metrics).
    compute_stack
        Optional: ``compute_stack(group_stack) -> values`` for every replicate of a group at
        once (a :class:`GroupStack`; the values gain a leading replicate axis). Intervals
        then call it instead of ``compute`` once per replicate. It must give ``compute``'s
        values bit for bit: build it from the kernels' ``*_stack`` forms, of which the
        one-group kernels are the stack of one (``tests/test_replicate_metrics.py`` checks
        the declarations of scoreframe).

    See Also
    --------
    declare : Register one.
    declared, lookup : Read the registry.
    scoreframe.evaluate : Computes every declared metric.

    Examples
    --------
    >>> m = lookup("eer")
    >>> m.name, m.header, m.scale, m.per_operating_point, m.has_intervals
    ('eer', 'EER (%)', 100.0, False, True)
    """

    name: str
    display: str
    unit: str
    compute: Callable[[GroupStats], Any]
    per_operating_point: bool = False
    needs: tuple[Statistic, ...] = ()
    scale: float = 1.0
    dtype: str = "float"
    family: str = "binary"
    table: bool = True
    description: str = ""
    intervals: bool | None = None
    class_column: str | None = None
    compute_stack: Callable[[GroupStack], Any] | None = None

    @property
    def has_intervals(self) -> bool:
        """Whether the metric gets bootstrap intervals (see ``intervals``)."""
        if self.intervals is not None:
            return self.intervals
        return self.family in INTERVAL_FAMILIES and self.dtype == "float"

    @property
    def header(self) -> str:
        """Table header with the unit: ``EER (%)``."""
        return f"{self.display} ({self.unit})" if self.unit else self.display


_REGISTRY: dict[tuple[str, bool], Metric] = {}


def declare(metric: Metric) -> Metric:
    """Add a metric to the registry and return it.

    Names are unique among group-level metrics and among per-operating-point metrics (a
    group-level summary may share its name with the per-point value, e.g. ``dr30_ok``).

    Parameters
    ----------
    metric
        The declaration; its name must be new among metrics of its kind.

    Returns
    -------
    Metric
        ``metric``, so a module can keep it.

    See Also
    --------
    Metric : What is declared.
    declared, lookup : Read the registry.

    Examples
    --------
    A name is declared once (a new metric is one call, at import of its module; see the
    how-to in ``docs/architecture.md``):

    >>> declare(lookup("eer"))
    Traceback (most recent call last):
    ...
    ValueError: metric 'eer' is declared twice
    """
    key = (metric.name, metric.per_operating_point)
    if key in _REGISTRY:
        raise ValueError(f"metric {metric.name!r} is declared twice")
    _REGISTRY[key] = metric
    return metric


def declared(*, family: str | Sequence[str] | None = "binary",
             per_operating_point: bool | None = None) -> list[Metric]:
    """Declared metrics in declaration order, filtered by family and kind.

    Parameters
    ----------
    family
        A family, several, or None for all (default: the always-computed ``binary``).
    per_operating_point
        Keep only per-operating-point (True) or group-level (False) metrics.

    Returns
    -------
    list of Metric
        In declaration order.

    See Also
    --------
    declare : Add to it.
    lookup : One declaration by name.

    Examples
    --------
    >>> [m.name for m in declared()][:5]
    ['eer', 'cllr', 'min_cllr', 'cal_loss', 'prbep']
    >>> [m.name for m in declared(per_operating_point=True)][:4]
    ['act_dcf', 'act_dcf_norm', 'min_dcf', 'min_dcf_norm']
    """
    fams = None if family is None else ({family} if isinstance(family, str) else set(family))
    return [m for m in _REGISTRY.values()
            if (fams is None or m.family in fams)
            and (per_operating_point is None or m.per_operating_point == per_operating_point)]


def lookup(name: str) -> Metric:
    """The declaration of one metric, by column name.

    Parameters
    ----------
    name
        A metric's column name.

    Returns
    -------
    Metric
        Its declaration (a group-level one first).

    See Also
    --------
    declared : Every declaration.
    declare : Add one.

    Examples
    --------
    >>> lookup("min_dcf_norm").display, lookup("min_dcf_norm").per_operating_point
    ('minDCF', True)
    """
    for per_point in (False, True):
        if (name, per_point) in _REGISTRY:
            return _REGISTRY[(name, per_point)]
    raise KeyError(f"no metric {name!r} is declared")


def request_for(metrics: Sequence[Metric], ops: OperatingPoints, *, eer_method: str = "rocch",
                extra_thresholds: F64 | None = None, det_resolution: float | None = None,
                verification: VerificationRequest | None = None,
                statistics: Sequence[Statistic] = ()) -> Request:
    """The reduction request that computes ``metrics`` at ``ops`` (plus curve thresholds).

    The metrics' ``needs``, the EER convention's statistic, DET corners at
    ``det_resolution``, the biometric verification statistics of ``verification`` (FNMR at
    FMR targets...) and any further ``statistics`` (e.g. a view's curves), in one request.

    >>> req = request_for([lookup("eer")], OperatingPoints((0.01,)), eer_method="nist")
    >>> req.statistics
    (NistEer(),)
    """
    from scoreframe.stats.summary import DetCorners

    check_choice(eer_method, name="eer_method", choices=EER_METHODS)
    needs: list[Statistic] = []
    for m in metrics:
        needs += m.needs
    if any(m.name == "eer" for m in metrics) and eer_method in EER_STATISTICS:
        needs.append(EER_STATISTICS[eer_method])
    if det_resolution is not None:
        needs.append(DetCorners(det_resolution))
    if verification is not None:
        needs.append(Verification(verification))
    needs += statistics
    columns = {m.class_column for m in metrics if m.class_column is not None}
    if len(columns) > 1:
        raise ValueError(f"metrics split classes by different columns: {sorted(columns)}")
    thr = ops.threshold if extra_thresholds is None else np.concatenate(
        (ops.threshold, np.asarray(extra_thresholds, dtype=np.float64)))
    return Request(thresholds=thr, statistics=tuple(needs),
                   class_column=next(iter(columns), None))


def display_columns(columns: Sequence[str]) -> list[tuple[str, Metric]]:
    """The declared table metrics present in ``columns``, in declaration order."""
    present = set(columns)
    return [(m.name, m) for m in _REGISTRY.values() if m.table and m.name in present]


def table_metrics(*, family: str | Sequence[str] = "binary") -> tuple[list[Metric], list[Metric]]:
    """The metrics tables show: ``(group-level, per-operating-point)``, declaration order.

    >>> [m.name for m in table_metrics()[1]]
    ['act_dcf_norm', 'min_dcf_norm']
    """
    chosen = [m for m in declared(family=family) if m.table]
    return ([m for m in chosen if not m.per_operating_point],
            [m for m in chosen if m.per_operating_point])
