"""Before/after tables and fit summaries printed by ``calibrate``, ``fuse`` and ``demo``."""

from __future__ import annotations

import polars as pl

from scoreframe.cli.console import percent, print_frame, say, shown
from scoreframe.metrics.registry import declared
from scoreframe.results.before_after import before_after, columns, raw_stages

__all__ = ["fit_summary", "print_before_after", "report_sets"]


def print_before_after(table: pl.DataFrame, *, title: str) -> None:
    """Print a before/after table (stage x system x prior); rates in % as in ``evaluate``."""
    rates = [m.name for m in declared(family=None) if m.unit == "%" and m.name in table.columns]
    shown = table.select(columns()).with_columns(
        [pl.Series(c, [percent(v) for v in table[c]], dtype=pl.String) for c in rates]) \
        .rename({c: f"{c} (%)" for c in rates})
    print_frame(shown, title, left=("set", "stage", "system"),
                right=tuple(f"{c} (%)" for c in rates))


def report_sets(outputs: list[tuple[str, pl.LazyFrame]], p_target: list[float],
                title: str) -> None:
    """Print one before/after table over several applied sets (unlabelled sets are skipped)."""
    frames = []
    for name, out in outputs:
        if "label" not in out.collect_schema().names():
            say(f"{shown(name)}: no labels, no before/after table")
            continue
        frames.append(before_after({"before": raw_stages(out), "after": out},
                                   operating_points=p_target, set_name=name))
    if frames:
        print_before_after(pl.concat(frames), title=title)


def fit_summary(model: object) -> str:
    """One line on how a calibration or fusion was trained."""
    tr = model.training_  # type: ignore[attr-defined]  # every fitted estimator records training_
    if "objective_value" not in tr:
        return f"{tr['n_tar']} targets, {tr['n_non']} non-targets, {tr.get('n_blocks')} blocks"
    state = "converged" if tr["converged"] else "NOT converged: " + shown(tr["message"])
    return (f"{tr['n_tar']} targets, {tr['n_non']} non-targets; objective "
            f"{tr['objective']['rule']} at p_target={tr['p_target']:g}: "
            f"{tr['initial_objective']:.6g} -> {tr['objective_value']:.6g} "
            f"({tr['n_iter']} iterations, {state})")
