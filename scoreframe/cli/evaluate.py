"""``scoreframe evaluate``: EER, Cllr, minCllr, PRBEP and act/min DCF per condition."""

from __future__ import annotations

import argparse
import json

import polars as pl

from scoreframe.cli._biometric import (
    add_biometric_options,
    biometric_option,
    flat_for_csv,
    print_targets,
)
from scoreframe.cli.compare import add_interval_options, intervals_of
from scoreframe.cli.console import (
    emit_frame,
    fmt,
    json_safe,
    percent,
    print_table,
    progress,
    say,
    shown,
    write_text_output,
)
from scoreframe.cli.inputs import check_output_format, dataset_source
from scoreframe.cli.options import (
    Distinct,
    ListAction,
    add_command,
    by_options,
    dataset_options,
    engine_of,
    engine_options,
    name_arg,
    operating_point_options,
    output_options,
    reading_options,
)
from scoreframe.metrics import Binary, OperatingPoints
from scoreframe.metrics.registry import declared, table_metrics
from scoreframe.metrics.scalar import EER_METHODS
from scoreframe.results.evaluate import evaluate, explode_dcf, group_columns
from scoreframe.results.tandem import tandem_t_dcf

__all__ = ["add_evaluate_options", "cmd_evaluate", "percent", "percent_columns", "print_results",
           "register", "run_evaluate"]


# --- the evaluate option group ------------------------------------------------------------------
# Options of how an evaluation runs go HERE, so that `evaluate`, `report` and `compare` share them:
# intervals (--bootstrap/--ci/--resample/--seed), spoofing/forensic metrics (--spoof/--tandem/
# --t-dcf-variant/--forensic). Add each as its own small block with a help text and a default.
# The engine options (--engine/--memory-limit/--workers/--scheduler/--spill-dir) are the parent
# parser `engine_options()` of scoreframe.cli.options, shared by every command that reads trials.
def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    """Add the options of how an evaluation is computed (EER method, equalization)."""
    g = p.add_argument_group("evaluation")
    g.add_argument("--eer-method", choices=EER_METHODS, default="rocch",
                   help="EER convention")
    g.add_argument("--equalize-by", action=ListAction, metavar="COL",
                   help="also report metrics with these conditions weighted equally")
    g.add_argument("--no-validate", dest="validate", action="store_const", const=False,
                   default=None,
                   help="skip the duplicate-trial check, which runs unless this is given "
                        "(null/NaN scores and unrecognized labels are always errors; "
                        "trials with an empty label are left out)")
    add_interval_options(p)
    s = p.add_argument_group("anti-spoofing and forensic metrics")
    s.add_argument("--spoof", action="store_true",
                   help="add a-DCF (a-DCF1 defaults), SASV-EER, SV-EER, SPF-EER and n_spoof "
                        "per group (needs a trial_type column: target/nontarget/spoof)")
    s.add_argument("--tandem", nargs=2, action=Distinct, type=name_arg(),
                   metavar=("ASV_SYSTEM", "CM_SYSTEM"),
                   help="add the tandem t-DCF of CM_SYSTEM in front of ASV_SYSTEM (rows joined "
                        "on model, segment) as a top-level `t_dcf` object")
    s.add_argument("--t-dcf-variant", choices=("2021", "2019"), default="2021",
                   help="t-DCF definition: revised (ASVspoof 2021 and 5) or ASVspoof 2019 v1")
    s.add_argument("--tandem-unpaired", choices=("error", "drop"), default="error",
                   help="trials that only one of the two --tandem systems scored: an error "
                        "(default) or dropped with a warning giving their number")
    s.add_argument("--forensic", action="store_true",
                   help="add AUC, rates of misleading evidence (rmep, rmed) and ELUB bounds "
                        "(log10) per group; scores are natural-log llrs")


def evaluate_kwargs(a: argparse.Namespace) -> dict[str, object]:
    """Keyword arguments of :func:`scoreframe.evaluate` from the evaluate options.

    The options become the library's objects: ``metrics=`` (families, a
    :class:`~scoreframe.metrics.Binary` with the EER method, a
    :class:`~scoreframe.metrics.Biometric`), ``intervals=`` and ``engine=``.
    """
    trial_id = getattr(a, "trial_id", None)
    bm = biometric_option(a) if hasattr(a, "biometric") else None
    metrics: list[object] = [Binary(eer_method=a.eer_method)]
    metrics += [f for f in ("spoof", "forensic") if getattr(a, f)]
    metrics += [bm] if bm is not None else []
    return {"metrics": metrics, "equalize_by": a.equalize_by or [], "engine": engine_of(a),
            "validate": False if a.validate is False else (trial_id or True),
            "intervals": intervals_of(a)}


# --- end of the evaluate option group -----------------------------------------------------------


def run_evaluate(dataset: str | pl.LazyFrame, *, by: list[str], where: str | None,
                 p_target: list[float], c_miss: float, c_fa: float,
                 **options: object) -> pl.DataFrame:
    """Evaluate with a progress bar over groups."""
    with progress() as prog:
        task = prog.add_task("evaluating groups", total=None)
        return evaluate(dataset, by=by, where=where,
                        operating_points=OperatingPoints(tuple(p_target), c_miss, c_fa),
                        progress=lambda d, t: prog.update(task, completed=d, total=t),
                        **options)  # type: ignore[arg-type]  # argparse options forwarded as keywords


def percent_columns() -> tuple[str, ...]:
    """Columns the table shows in percent (as the HTML report does: "EER (%)", two decimals).

    The declared metrics whose unit is "%" (read from the registry when a table is printed, so
    a metric declared after this module was imported is shown in % too), and the equalized EER.

    >>> "eer" in percent_columns()
    True
    """
    return (*(m.name for m in declared(family=None) if m.unit == "%"), "eq_eer")


def with_interval(row: dict[str, object], c: str) -> str:
    """A table cell: the value (in % for rates), and ``[lo, hi]`` when an interval exists.

    Examples
    --------
    >>> with_interval({"eer": 0.1, "eer_lo": 0.08, "eer_hi": 0.125}, "eer")
    '10.00 [8.00, 12.50]'
    """
    show = percent if c in percent_columns() else fmt
    text = show(row[c])
    lo, hi = row.get(f"{c}_lo"), row.get(f"{c}_hi")
    if lo is not None and hi is not None and row[c] is not None:
        text += f" [{show(lo)}, {show(hi)}]"
    return text


def print_results(res: pl.DataFrame, *, title: str = "") -> None:
    """Print the per-condition table: one row per group and operating point (EER in %)."""
    flat = explode_dcf(res)
    group_cols = group_columns(res)
    group_level, per_point = table_metrics(family=list({m.family for m in declared(
        family=None)}))
    cols = [*group_cols, "n_tar", "n_non",
            *(m.name for m in group_level if m.name in flat.columns), "p_target",
            *(m.name for m in per_point if m.name in flat.columns)]
    if "eq_eer" in flat.columns:
        cols += ["eq_eer", "eq_act_dcf_norm", "eq_min_dcf_norm"]
    rates = percent_columns()
    header = [f"{c} (%)" if c in rates else c for c in cols]
    warn = False
    rows = []
    for row in flat.iter_rows(named=True):
        cells = [with_interval(row, c) for c in cols]
        if row.get("dr30_ok") is False:
            cells[cols.index("min_dcf_norm")] += " *"
            warn = True
        rows.append(cells)
    key = list(range(len(group_cols)))
    print_table(header, rows, key=key, left=key, title=title)
    if warn:
        say("* fewer than 30 misses or false alarms at the minDCF point (Doddington's rule "
              "of 30): that value is not reliable")


def cmd_evaluate(a: argparse.Namespace) -> int:
    """Run ``scoreframe evaluate``."""
    check_output_format(a, machine=("json", "csv", "parquet"))
    source = dataset_source(a, library_trial_id=True)
    res = run_evaluate(source, by=a.by, where=a.where, p_target=a.p_target,
                       c_miss=a.c_miss, c_fa=a.c_fa, **evaluate_kwargs(a))
    tandem = None
    if a.tandem:
        tandem = tandem_t_dcf(source, asv=a.tandem[0], cm=a.tandem[1], where=a.where,
                              variant=a.t_dcf_variant, unpaired=a.tandem_unpaired,
                              engine=engine_of(a))
    if a.format == "table":
        print_results(res, title=f"EER method: {a.eer_method}")
        print_targets(res, group_columns(res))
        if tandem is not None:
            say(f"t-DCF ({tandem['variant']}) of {shown(tandem['cm_system'])} in front of "
                f"{shown(tandem['asv_system'])}: min {tandem['min_t_dcf']:.4f} at CM threshold "
                  f"{tandem['cm_threshold']:.4g} ({tandem['n_trials']} trials)")
        return 0
    if a.format == "json":
        doc = {"eer_method": a.eer_method, "by": group_columns(res), "p_target": a.p_target,
               "c_miss": a.c_miss, "c_fa": a.c_fa, "groups": json_safe(res.to_dicts())}
        if tandem is not None:
            doc["t_dcf"] = json_safe(tandem)
        write_text_output(json.dumps(doc, indent=1), a.output, overwrite=a.overwrite)
        return 0
    out = explode_dcf(res)
    emit_frame(flat_for_csv(out) if a.format == "csv" else out, a.format, a.output,
               a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``evaluate`` to the command line."""
    e = add_command(sub, "evaluate", func=cmd_evaluate, first="DATASET",
                    help_text="EER, Cllr, minCllr, PRBEP, act/min DCF per condition",
                    parents=[dataset_options(), reading_options(), by_options(),
                             operating_point_options(),
                             output_options(("table", "json", "csv", "parquet"),
                                            default="table"), engine_options()])
    add_evaluate_options(e)
    add_biometric_options(e)
