"""What an evaluation computes: the ``metrics=`` option of the entry points that read trials.

``metrics=`` takes family names (``"binary"``, always computed, ``"spoof"``, ``"forensic"``,
``"biometric"``) and option objects of a family: :class:`Binary` (the EER convention) and
:class:`Biometric` (ISO/IEC 19795-1 targets, thresholds and conventions).
:func:`metric_options` resolves them, once, into :class:`MetricOptions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from scoreframe.checks import check_choice
from scoreframe.errors import ScoreframeError, message
from scoreframe.metrics.registry import OperatingPoints
from scoreframe.metrics.scalar import EER_METHODS

__all__ = ["DEFAULT_OPERATING_POINTS", "FAMILIES", "Binary", "Biometric", "MetricOptions",
           "MetricsLike", "OperatingPointsLike", "as_operating_points", "metric_options"]

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
    them with :func:`scoreframe.metrics.explode_targets`).

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
        memory).
    threshold_from
        SQL predicate selecting development trials: each group's thresholds are chosen there
        (``min_hter`` and one per ``fmr`` / ``fnmr`` target) and applied to the evaluated
        trials (``where``, default: the others), in the list-of-struct column ``fixed``.
    thresholds
        Instead of ``threshold_from``: a table of given thresholds (grouping columns, a
        subset of ``by`` compared as text, ``threshold`` and optional ``criterion``).

    See Also
    --------
    Binary : options of the binary family.

    Examples
    --------
    >>> Biometric(fmr=[1e-3, 1e-2]).fmr
    (0.001, 0.01)
    """

    fmr: Sequence[float] | float = ()
    fnmr: Sequence[float] | float = ()
    at_threshold: Sequence[float] | float = ()
    strict: bool = False
    convention: str = "exact"
    threshold_from: str | None = None
    thresholds: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """Store the targets as tuples of floats and check the convention."""
        from scoreframe.metrics._biometric import check_convention, check_rate_targets

        for name in ("fmr", "fnmr"):
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


#: What ``metrics=`` accepts: ``None`` (the binary family), or names and option objects.
MetricsLike = Sequence[str | Binary | Biometric] | str | Binary | Biometric | None


@dataclass(frozen=True)
class MetricOptions:
    """``metrics=`` resolved: the families asked for and their options."""

    binary: Binary = Binary()
    spoof: bool = False
    forensic: bool = False
    biometric: Biometric | None = None


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
    items = [metrics] if isinstance(metrics, str | Binary | Biometric) else list(metrics)
    binary, biometric, names = Binary(), None, set()
    for item in items:
        if isinstance(item, Binary):
            binary = item
        elif isinstance(item, Biometric):
            biometric = item
        elif isinstance(item, str) and item in FAMILIES:
            names.add(item)
        else:
            raise ScoreframeError(message(
                "unknown entry in `metrics`",
                expected=" | ".join(FAMILIES) + ", a Binary(...) or a Biometric(...)",
                got=repr(item)[:80]), parameter="metrics")
    if "biometric" in names and biometric is None:
        biometric = Biometric()
    return MetricOptions(binary, "spoof" in names, "forensic" in names, biometric)
