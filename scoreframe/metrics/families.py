"""Optional metric families of ``evaluate``: anti-spoofing (``--spoof``), forensic (``--forensic``).

Declarations on the statistics layer: each metric names the typed statistics it needs
(:mod:`scoreframe.stats.families`: per-class counts along one sorted score, the a-DCF's
located minimum, the SASV EERs' located ROC vertices, Mann-Whitney pair counts, ELUB counts)
and computes its value from a group's merged statistics, so these columns come from the same
one reduction as the binary suite, on every engine, and pooled rows merge their groups'
statistics. The spoof metrics split each group by ``trial_type``
(:attr:`~scoreframe.metrics.registry.Metric.class_column`); :func:`check_spoof_classes`
checks its values and labels from the reduction's class counts.

Every float metric here except ``a_dcf_threshold`` gets bootstrap intervals (``_lo``/``_hi``)
when replicates are asked for: the replicates carry the replicate values of the same
statistics, computed by the same kernels on the resampled trials
(:mod:`scoreframe.stats._replicate_families`), and the same ``compute`` reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from scoreframe.errors import ValidationError, message, warn_degenerate_groups
from scoreframe.frames.class_scores import trial_type_problem
from scoreframe.metrics.registry import GroupStats, Metric, declare
from scoreframe.metrics.spoof import A_DCF_DEFAULTS
from scoreframe.stats import summary as fs
from scoreframe.stats.summary import Statistic

__all__ = ["FAMILIES", "check_spoof_classes"]

#: Optional families and the metric columns each adds.
FAMILIES = {
    "spoof": ("a_dcf", "a_dcf_threshold", "sasv_eer", "sv_eer", "spf_eer", "n_spoof"),
    "forensic": ("auc", "rmep", "rmed", "elub_lower_log10", "elub_upper_log10"),
}


#: The statistics of the families (typed declarations, :mod:`scoreframe.stats.families`).
#: Forensic metrics read the label classes (spoofs are labelled non-target); the spoof metrics
#: read the classes of ``trial_type``.
CLASS_COUNTS = fs.ClassCounts()
A_DCF = fs.ADcf(**A_DCF_DEFAULTS)  # type: ignore[arg-type]  # the six float costs
SASV_EER = fs.InterpolatedEer(("target",), ("nontarget", "spoof"))
SV_EER = fs.InterpolatedEer(("target",), ("nontarget",))
SPF_EER = fs.InterpolatedEer(("target",), ("spoof",))
PAIRS = fs.PairCount()
MISLEADING = fs.Misleading()
ELUB = fs.ElubCounts()


def _class_total(g: GroupStats, *names: str) -> int:
    counts = g.stats.get(CLASS_COUNTS) or {}
    return sum(counts.get(c, (0, 0))[0] for c in names)


def _spoof_ok(g: GroupStats) -> bool:
    return all(_class_total(g, c) for c in fs.SPOOF_CLASSES)


def _a_dcf(i: int) -> Callable[[GroupStats], object]:
    def compute(g: GroupStats) -> object:
        v = g.stats.get(A_DCF)
        return None if v is None or not _spoof_ok(g) else v[i]
    return compute


def _eer(stat: fs.InterpolatedEer) -> Callable[[GroupStats], object]:
    def compute(g: GroupStats) -> object:
        v = g.stats.get(stat)
        if v is None or not _spoof_ok(g):
            return None
        return fs.interpolated_eer_value(v, _class_total(g, *stat.pos or ()),
                                         _class_total(g, *stat.neg or ()))
    return compute


def _elub(i: int) -> Callable[[GroupStats], object]:
    def compute(g: GroupStats) -> object:
        v = g.stats.get(ELUB)
        return None if v is None else fs.elub_bounds(v, g.n_tar, g.n_non)[i]
    return compute


_SPOOF = (CLASS_COUNTS,)
# intervals: on by default for these float metrics (every statistic above has a replicate by
# its own kernel); off for the a-DCF threshold (a score, not a rate) and the spoof count
for _name, _display, _unit, _scale, _dtype, _table, _compute, _needs, _iv in (
        ("a_dcf", "a-DCF", "", 1.0, "float", True, _a_dcf(0), (A_DCF,), None),
        ("a_dcf_threshold", "a-DCF threshold", "", 1.0, "float", False, _a_dcf(1), (A_DCF,),
         False),
        ("sasv_eer", "SASV-EER", "%", 100.0, "float", True, _eer(SASV_EER), (SASV_EER,), None),
        ("sv_eer", "SV-EER", "%", 100.0, "float", True, _eer(SV_EER), (SV_EER,), None),
        ("spf_eer", "SPF-EER", "%", 100.0, "float", True, _eer(SPF_EER), (SPF_EER,), None),
        ("n_spoof", "spoofs", "trials", 1.0, "int", False,
         lambda g: _class_total(g, "spoof"), (), False)):
    declare(Metric(_name, _display, _unit, _compute, scale=_scale, dtype=_dtype,
                   family="spoof", table=_table, needs=(*_SPOOF, *_needs),
                   class_column="trial_type", intervals=_iv))
_forensic: tuple[tuple[str, str, str, float, bool, Callable[[GroupStats], object],
                       tuple[Statistic, ...]], ...] = (
        ("auc", "AUC", "", 1.0, True,
         lambda g: g.stats.get(PAIRS) / (2.0 * g.n_tar * g.n_non), (PAIRS,)),
        ("rmep", "RMEP", "%", 100.0, True, lambda g: g.stats.get(MISLEADING)[0] / g.n_tar,
         (MISLEADING,)),
        ("rmed", "RMED", "%", 100.0, True, lambda g: g.stats.get(MISLEADING)[1] / g.n_non,
         (MISLEADING,)),
        ("elub_lower_log10", "ELUB low (log10)", "", 1.0, True, _elub(0), (ELUB,)),
        ("elub_upper_log10", "ELUB high (log10)", "", 1.0, True, _elub(1), (ELUB,)))
for _name, _display, _unit, _scale, _table, _compute, _fneeds in _forensic:
    declare(Metric(_name, _display, _unit, _compute, scale=_scale, family="forensic",
                   table=_table, needs=_fneeds))  # intervals: on by default


def check_spoof_classes(units: Sequence[Any], lf: pl.LazyFrame, *, where: str) -> None:
    """Check ``trial_type`` values and labels from the class counts of a reduction.

    ``units`` are :class:`~scoreframe.stats.reduce.UnitStats` of a request with the spoof
    statistics. Values outside target / nontarget / spoof, a spoof labelled target, a target
    labelled non-target, or non-targets labelled both ways within a system raise
    :class:`~scoreframe.errors.ValidationError`; the message (with example rows) is built by
    reading the trials again only then. Groups without every class get one warning.
    """
    from scoreframe.metrics.spoof import label_trial_type_problem

    values: set[str | None] = set()
    per_system: dict[object, dict[str | None, tuple[int, int]]] = {}
    degenerate: list[tuple[dict[str, object], int, int]] = []
    for us in units:
        counts = us.stats.get(CLASS_COUNTS) or {}
        values |= set(counts)
        if not all(counts.get(c, (0, 0))[0] for c in fs.SPOOF_CLASSES):
            degenerate.append((dict(us.unit.key), us.stats.n_tar, us.stats.n_non))
        if us.unit.pooled:
            continue
        acc = per_system.setdefault(us.unit.key.get("system"), {})
        for c, (n, nt) in counts.items():
            n0, t0 = acc.get(c, (0, 0))
            acc[c] = (n0 + n, t0 + nt)
    problem = trial_type_problem(pl.Series("trial_type", sorted(values, key=str),
                                           dtype=pl.String), where=where)
    if problem:
        raise ValidationError(problem)
    bad = any(acc.get("spoof", (0, 0))[1] or acc.get("target", (0, 0))[0]
              != acc.get("target", (0, 0))[1] or 0 < acc.get("nontarget", (0, 0))[1]
              < acc.get("nontarget", (0, 0))[0] for acc in per_system.values())
    if bad:
        raise ValidationError(label_trial_type_problem(lf, where=where) or message(
            "column `label` contradicts `trial_type`", where=where,
            expected="label target on 'target' trials and non-target on 'spoof' trials"))
    if degenerate:
        warn_degenerate_groups(degenerate, [m for m in FAMILIES["spoof"] if m != "n_spoof"],
                               what="spoofing metrics", needs="targets, non-targets and spoofs",
                               stacklevel=4)
