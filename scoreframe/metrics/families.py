"""Optional metric families of ``evaluate``: anti-spoofing (``--spoof``), forensic (``--forensic``).

Declarations plus their per-group reduction. These metrics need every score of a group by class
(target / non-target / spoof), so :func:`family_values` sorts each group's scores once per class
in memory (Polars) and merges sorted runs for pooled rows; the kernels are those of
:mod:`scoreframe.metrics.spoof` and :mod:`scoreframe.metrics.forensic`. The declarations read the
values from
``GroupStats.extras``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from scoreframe.errors import ValidationError, message, warn_degenerate_groups
from scoreframe.frames.class_scores import TRIAL_TYPES, trial_type_problem
from scoreframe.metrics.registry import GroupStats, Metric, declare
from scoreframe.stats.groups import Unit
from scoreframe.stats.reduce import label_columns

__all__ = ["FAMILIES", "family_values"]

#: Optional families and the metric columns each adds.
FAMILIES = {
    "spoof": ("a_dcf", "a_dcf_threshold", "sasv_eer", "sv_eer", "spf_eer", "n_spoof"),
    "forensic": ("auc", "rmep", "rmed", "elub_lower_log10", "elub_upper_log10"),
}


def _extra(name: str) -> Callable[[GroupStats], object]:
    def compute(g: GroupStats) -> object:
        return g.extras.get(name)
    return compute


for _name, _display, _unit, _scale, _dtype, _table in (
        ("a_dcf", "a-DCF", "", 1.0, "float", True),
        ("a_dcf_threshold", "a-DCF threshold", "", 1.0, "float", False),
        ("sasv_eer", "SASV-EER", "%", 100.0, "float", True),
        ("sv_eer", "SV-EER", "%", 100.0, "float", True),
        ("spf_eer", "SPF-EER", "%", 100.0, "float", True),
        ("n_spoof", "spoofs", "trials", 1.0, "int", False)):
    declare(Metric(_name, _display, _unit, _extra(_name), scale=_scale, dtype=_dtype,
                   family="spoof", table=_table))
for _name, _display, _unit, _scale, _table in (
        ("auc", "AUC", "", 1.0, True), ("rmep", "RMEP", "%", 100.0, True),
        ("rmed", "RMED", "%", 100.0, True),
        ("elub_lower_log10", "ELUB low (log10)", "", 1.0, True),
        ("elub_upper_log10", "ELUB high (log10)", "", 1.0, True)):
    declare(Metric(_name, _display, _unit, _extra(_name), scale=_scale, family="forensic",
                   table=_table))


def _merge_runs(parts: Sequence[np.ndarray]) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    return np.sort(np.concatenate(parts), kind="stable")  # merges the sorted runs


def family_values(lf: pl.LazyFrame, units: Sequence[Unit], row_cols: Sequence[str],
                  system_cols: Sequence[str], *, families: Sequence[str], where: str
                  ) -> list[dict[str, object]]:
    """Per unit, the values of the requested families (empty where a class is empty)."""
    from scoreframe.metrics.forensic import forensic_summary_sorted
    from scoreframe.metrics.spoof import (
        asvspoof_eer_sorted,
        label_trial_type_problem,
        spoof_summary_sorted,
    )

    row_cols = list(row_cols)
    schema = lf.collect_schema()
    label, _ = label_columns(schema)
    keys = [pl.col(c).cast(pl.String).alias(c) for c in row_cols]
    score = pl.col("score").cast(pl.Float64)
    if "spoof" in families:
        if "trial_type" not in schema:
            raise ValidationError(message(
                "--spoof needs a `trial_type` column", where=where,
                expected="trial_type with values target / nontarget / spoof",
                got=", ".join(schema.names())))
        problem = trial_type_problem(lf.select("trial_type").unique().collect()
                                     .to_series(), where=where)
        if problem:
            raise ValidationError(problem)
        problem = label_trial_type_problem(lf, where=where)
        if problem:
            raise ValidationError(problem)
        cls = pl.col("trial_type").cast(pl.String)
    else:
        cls = pl.when(label).then(pl.lit("target")).otherwise(pl.lit("nontarget"))
    frame = (lf.select(*keys, score, label, cls.alias("__class"))
             .filter(pl.col("label").is_not_null())
             .group_by([*row_cols, "__class"]).agg(score.sort().alias("s"))
             .collect(engine="streaming"))
    base: dict[tuple[object, ...], dict[str, np.ndarray]] = {}
    for row in frame.iter_rows(named=True):
        k = tuple(row[c] for c in row_cols)
        base.setdefault(k, {})[row["__class"]] = np.asarray(row["s"], dtype=np.float64)
    empty = np.empty(0)
    out: list[dict[str, object]] = []
    degenerate: list[tuple[dict[str, object], int, int]] = []
    for u in units:
        match = system_cols if u.pooled else row_cols
        members = [k for k in base
                   if all(k[row_cols.index(c)] == u.key[c] for c in match)]
        arrays = {c: _merge_runs([base[m].get(c, empty) for m in members] or [empty])
                  for c in TRIAL_TYPES}
        values: dict[str, object] = {}
        tar, non, spf = arrays["target"], arrays["nontarget"], arrays["spoof"]
        if "spoof" in families:
            if tar.size and non.size and spf.size:
                values.update(spoof_summary_sorted(tar, non, spf))
            else:
                degenerate.append((dict(u.key), int(tar.size), int(non.size)))
                values["n_spoof"] = int(spf.size)
        non_all = _merge_runs([non, spf]) if spf.size else non  # spoofs are non-targets
        if "forensic" in families and tar.size and non_all.size:
            values.update(forensic_summary_sorted(tar, non_all))
        if "asvspoof_eer" in families and tar.size and non_all.size:
            values["eer_asvspoof"] = asvspoof_eer_sorted(tar, non_all)["eer"]
        out.append(values)
    if degenerate:
        warn_degenerate_groups(degenerate, [m for m in FAMILIES["spoof"] if m != "n_spoof"],
                               what="spoofing metrics", needs="targets, non-targets and spoofs",
                               stacklevel=4)
    return out
