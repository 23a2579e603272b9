"""What an evaluation computes: the ``metrics=`` option of the entry points that read trials.

``metrics=`` takes family names (``"binary"``, always computed, ``"spoof"``, ``"forensic"``,
``"biometric"``) and option objects of a family: :class:`Binary` (the EER convention),
:class:`Biometric` (ISO/IEC 19795-1 targets, thresholds and conventions, and the report's
biometrics section) and :class:`Tandem` (the t-DCF of a CM system in front of an ASV system).
:func:`metric_options` resolves them, once, into :class:`MetricOptions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from scoreframe.checks import check_choice
from scoreframe.errors import ScoreframeError, message
from scoreframe.metrics.registry import OperatingPoints
from scoreframe.metrics.scalar import EER_METHODS

if TYPE_CHECKING:
    from scoreframe.stats.summary import VerificationRequest

__all__ = ["DEFAULT_OPERATING_POINTS", "FAMILIES", "Binary", "Biometric", "MetricOptions",
           "MetricsLike", "OperatingPointsLike", "Tandem", "as_operating_points",
           "metric_options"]

#: The default ``operating_points=``: a target prior of 0.01 with unit costs.
DEFAULT_OPERATING_POINTS = OperatingPoints((0.01,))
#: What ``operating_points=`` accepts: an object, or target priors with unit costs.
OperatingPointsLike = OperatingPoints | Sequence[float] | float


def as_operating_points(value: OperatingPointsLike) -> OperatingPoints:
    """An :class:`OperatingPoints` from ``operating_points=`` (numbers are target priors).

    >>> as_operating_points([0.01, 0.1]).p_target
    (0.01, 0.1)
    """
    if isinstance(value, OperatingPoints):
        return value
    return OperatingPoints(value)  # type: ignore[arg-type]  # checked there

#: The metric families ``metrics=`` names.
FAMILIES = ("binary", "spoof", "forensic", "biometric")


def _floats(values: ArrayLike | float | None) -> tuple[float, ...]:
    if values is None:
        return ()
    return tuple(float(v) for v in np.atleast_1d(np.asarray(values, dtype=np.float64)))


@dataclass(frozen=True)
class Binary:
    """Options of the binary family (always computed): the EER convention.

    Parameters
    ----------
    eer_method
        ``"rocch"`` (default, BOSARIS), ``"nist"``, ``"kaldi"`` or ``"asvspoof"`` (see
        :func:`scoreframe.eer`; each is a statistic of the one reduction, on every engine).

    See Also
    --------
    Biometric : options of the biometric family.

    Examples
    --------
    >>> Binary(eer_method="kaldi").eer_method
    'kaldi'
    """

    eer_method: str = "rocch"

    def __post_init__(self) -> None:
        """Check the EER convention."""
        check_choice(self.eer_method, name="eer_method", choices=EER_METHODS)


@dataclass(frozen=True)
class Biometric:
    """Biometric verification metrics (ISO/IEC 19795-1; ``docs/biometrics.md``).

    Naming ``"biometric"`` (or this object) in ``metrics=`` adds ``zero_fmr``, ``zero_fnmr``,
    ``min_hter`` (each with its ``*_threshold``), ``auc_mw``, ``eer_peer`` and the
    list-of-struct columns ``fnmr_at_fmr``, ``fmr_at_fnmr`` and ``at_threshold`` (unnest
    them with :func:`scoreframe.metrics.explode_targets`). In
    :func:`scoreframe.views.report.build_report` the same object adds the biometrics
    section (FNMR against FMR on log axes, the tables of ``fmr`` / ``fnmr`` targets, ZeroFMR,
    min HTER, AUC) and, when their inputs are given, the EPC, the identification charts and
    the demographic differentials; :func:`scoreframe.evaluate` ignores the report-only
    fields (``epc_eval`` and the last eight).

    Parameters
    ----------
    fmr, fnmr
        Error-rate targets in ``(0, 1)``: FNMR at each FMR target, FMR at each FNMR target.
    at_threshold
        Fixed thresholds: FMR, FNMR and HTER at each.
    strict
        Accept ``score > threshold`` instead of ``score >= threshold``.
    convention
        ``"exact"`` (default; the statistics layer, every engine), ``"bob"`` or ``"pyeer"``
        (reproduce bob.measure 6.1.1 / pyeer 0.5.6 from each group's sorted scores, in
        memory). The report's section always shows the exact values.
    threshold_from
        SQL predicate selecting development trials: each group's thresholds are chosen there
        (``min_hter`` and one per ``fmr`` / ``fnmr`` target) and applied to the evaluated
        trials (``where``, default: the others), in the list-of-struct column ``fixed``. In
        the report: the development trials of the EPC (thresholds chosen there, errors on
        ``epc_eval``).
    thresholds
        Instead of ``threshold_from``: a table of given thresholds (grouping columns, a
        subset of ``by`` compared as text, ``threshold`` and optional ``criterion``).
    epc_eval
        Report only: SQL predicate of the EPC's evaluation trials (default: every trial not
        in ``threshold_from``).
    identification
        Report only: identification data, candidate rows (``probe``, ``score``, ``mate``; a
        path or a frame) or a probe x gallery score matrix (``.npz`` / HDF5): CMC and
        FNIR/FPIR charts and an identification table.
    rank, fpir, max_rank, tie
        Report only: ranks and FPIR targets of the identification table, the CMC's last
        rank, the rank tie rule (``"pessimistic"``, ``"optimistic"`` or ``"stable"``).
    demographics, pair_with, differentials_fmr
        Report only: demographic columns (differentials at one global threshold), the other
        side's columns (impostor pairs), and the global FMR target of that threshold
        (default: the first of ``fmr``).

    See Also
    --------
    Binary : options of the binary family.
    Tandem : the t-DCF of two systems in tandem.

    Examples
    --------
    >>> Biometric(fmr=[1e-3, 1e-2]).fmr
    (0.001, 0.01)
    >>> Biometric(fmr=1e-3, demographics="sex").differentials_target
    0.001
    """

    fmr: Sequence[float] | float = ()
    fnmr: Sequence[float] | float = ()
    at_threshold: Sequence[float] | float = ()
    strict: bool = False
    convention: str = "exact"
    threshold_from: str | None = None
    thresholds: object = field(default=None, repr=False)
    epc_eval: str | None = None
    identification: object = field(default=None, repr=False)
    rank: Sequence[int] | int = (1, 5, 10)
    fpir: Sequence[float] | float = (0.01,)
    max_rank: int = 20
    tie: str = "pessimistic"
    demographics: Sequence[str] | str = ()
    pair_with: Sequence[str] | str = ()
    differentials_fmr: float | None = None

    def __post_init__(self) -> None:
        """Store the targets and columns as tuples and check the choices."""
        from scoreframe.metrics._biometric import check_convention, check_rate_targets

        for name in ("fmr", "fnmr", "fpir"):
            value = getattr(self, name)
            object.__setattr__(self, name, check_rate_targets(
                None if isinstance(value, tuple) and not value else value, name=name))
        for name in ("at_threshold",):
            try:
                object.__setattr__(self, name, _floats(getattr(self, name)))
            except (TypeError, ValueError):
                raise ScoreframeError(message(f"bad `{name}`", expected="numbers",
                                              got=repr(getattr(self, name))[:80]),
                                      parameter=name) from None
        check_convention(self.convention)
        if not isinstance(self.strict, bool):
            raise ScoreframeError(message("bad `strict`", expected="True or False",
                                          got=repr(self.strict)), parameter="strict")
        rank = (self.rank,) if isinstance(self.rank, int) else tuple(self.rank)
        if not rank or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                               for r in rank):
            raise ScoreframeError(message("bad `rank`", expected="ranks from 1",
                                          got=repr(self.rank)[:80]), parameter="rank")
        object.__setattr__(self, "rank", rank)
        check_choice(self.tie, name="tie", choices=("pessimistic", "optimistic", "stable"))
        for name in ("demographics", "pair_with"):
            v = getattr(self, name)
            object.__setattr__(self, name, (v,) if isinstance(v, str) else tuple(v))
        if self.epc_eval is not None and self.threshold_from is None:
            raise ScoreframeError(message(
                "`epc_eval` needs `threshold_from`", expected="the EPC's development trials "
                "in threshold_from= (CLI --epc-dev)", got="none"), parameter="epc_eval")
        if self.demographics and self.differentials_target is None:
            raise ScoreframeError(message(
                "differentials need a global FMR target", expected="differentials_fmr= "
                "(CLI --differentials-fmr) or an FMR target in fmr=", got="none"),
                parameter="differentials_fmr")

    @property
    def differentials_target(self) -> float | None:
        """The global FMR target of the differentials' threshold (report only)."""
        if self.differentials_fmr is not None:
            return float(self.differentials_fmr)
        return self.fmr[0] if self.fmr else None  # type: ignore[index]  # a tuple after __post_init__

    def request(self) -> VerificationRequest:
        """The verification statistics of the report's biometrics section."""
        from scoreframe.stats.summary import VerificationRequest

        return VerificationRequest(fmr=self.fmr, fnmr=self.fnmr)  # type: ignore[arg-type]  # tuples after __post_init__


@dataclass(frozen=True)
class Tandem:
    """The t-DCF of a countermeasure (CM) system in front of an ASV system (ASVspoof).

    Named in ``metrics=`` of :func:`scoreframe.views.report.build_report`: the t-DCF curve
    over the CM thresholds and its minimum (:func:`scoreframe.tandem_t_dcf` gives the
    numbers). Both systems score the same trials of one SASV table (``system``, ``model``,
    ``segment``, ``score``, ``trial_type``). :func:`scoreframe.evaluate` refuses it (a
    tandem pairs two systems, not one row per group).

    Parameters
    ----------
    asv, cm
        Names of the ASV and CM systems (values of the ``system`` column).
    variant
        ``"2021"`` (default) or ``"2019"`` (see :func:`scoreframe.metrics.spoof.t_dcf`).
    unpaired
        Trials scored by only one of the systems: ``"error"`` (default) or ``"drop"`` (with
        a warning giving their number).

    See Also
    --------
    Biometric : options of the biometric family.
    scoreframe.tandem_t_dcf : the minimum t-DCF of a tandem.

    Examples
    --------
    >>> Tandem(asv="asv", cm="cm", variant="2019").variant
    '2019'
    >>> Tandem(asv="a", cm="a")
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: bad `Tandem`: expected two systems; got asv = cm = 'a'
    """

    asv: str
    cm: str
    variant: str = "2021"
    unpaired: str = "error"

    def __post_init__(self) -> None:
        """Check the systems and the choices."""
        for name in ("asv", "cm"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ScoreframeError(message(f"bad `{name}`", expected="a system name",
                                              got=repr(v)[:80]), parameter=name)
        if self.asv == self.cm:
            raise ScoreframeError(message("bad `Tandem`", expected="two systems",
                                          got=f"asv = cm = {self.asv!r}"), parameter="cm")
        check_choice(self.variant, name="variant", choices=("2021", "2019"))
        check_choice(self.unpaired, name="unpaired", choices=("error", "drop"))


#: What ``metrics=`` accepts: ``None`` (the binary family), or names and option objects.
MetricsLike = (Sequence[str | Binary | Biometric | Tandem] | str | Binary | Biometric | Tandem
               | None)


@dataclass(frozen=True)
class MetricOptions:
    """``metrics=`` resolved: the families asked for and their options."""

    binary: Binary = Binary()
    spoof: bool = False
    forensic: bool = False
    biometric: Biometric | None = None
    tandem: Tandem | None = None


def metric_options(metrics: MetricsLike) -> MetricOptions:
    """Resolve a ``metrics=`` value (names of :data:`FAMILIES` and option objects).

    Examples
    --------
    >>> o = metric_options(["spoof", Binary(eer_method="nist")])
    >>> o.spoof, o.forensic, o.binary.eer_method
    (True, False, 'nist')
    """
    if metrics is None:
        return MetricOptions()
    items = [metrics] if isinstance(metrics, str | Binary | Biometric | Tandem) else \
        list(metrics)
    binary, biometric, tandem, names = Binary(), None, None, set()
    for item in items:
        if isinstance(item, Binary):
            binary = item
        elif isinstance(item, Biometric):
            biometric = item
        elif isinstance(item, Tandem):
            tandem = item
        elif isinstance(item, str) and item in FAMILIES:
            names.add(item)
        else:
            raise ScoreframeError(message(
                "unknown entry in `metrics`",
                expected=" | ".join(FAMILIES) + ", a Binary(...), a Biometric(...) or a "
                "Tandem(...)",
                got=repr(item)[:80]), parameter="metrics")
    if "biometric" in names and biometric is None:
        biometric = Biometric()
    return MetricOptions(binary, "spoof" in names, "forensic" in names, biometric, tandem)
