"""``scoreframe report``: one offline HTML report with summary table and DET/NBER/APE charts."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import polars as pl

from scoreframe.cli._biometric import add_report_biometric_options, report_biometric
from scoreframe.cli.compare import add_interval_options, intervals_of
from scoreframe.cli.console import progress, say, shown
from scoreframe.cli.inputs import (
    dataset_label,
    dataset_source,
    guard_outputs,
    input_paths,
    load_model_kind,
)
from scoreframe.cli.options import (
    Distinct,
    add_command,
    by_options,
    dataset_options,
    engine_of,
    engine_options,
    name_arg,
    operating_point_options,
    output_options,
    path_arg,
    reading_options,
    text_arg,
)
from scoreframe.errors import ScoreframeError, UsageError, message
from scoreframe.metrics import Biometric, Tandem

__all__ = ["EXPORT_FORMATS", "check_export_dir", "cmd_report", "register", "report_metrics"]

#: Chart file formats of ``--export-format``.
EXPORT_FORMATS = ("png", "svg", "pdf", "html")


def check_export_dir(export_dir: str, *, formats: list[str], inputs: list[str | None],
                     overwrite: bool) -> None:
    """Before any work: the chart directory is no input, and holds no charts to overwrite.

    The chart names depend on the groups found, so without ``--overwrite`` a directory that
    already holds files of an export format is refused as a whole (all or nothing).
    """
    d = Path(export_dir).resolve()
    for i in inputs:
        if i and (d == Path(i).resolve() or Path(i).resolve() in d.parents):
            raise UsageError(message(f"--export-dir `{export_dir}` is or sits inside the "
                                     f"input `{i}`",
                                     hint="Inputs are never modified: export elsewhere."))
    if d.exists() and not d.is_dir():
        raise UsageError(message("the --export-dir is a file", path=export_dir))
    if d.is_dir() and not overwrite:
        existing = sorted(p.name for f in formats for p in d.glob(f"*.{f}"))
        if existing:
            raise ScoreframeError(message(
                f"--export-dir `{export_dir}` already holds charts",
                got=f"{len(existing)} file(s) such as `{existing[0]}`",
                hint="Pass --overwrite to replace them, or export to an empty directory."))


def report_metrics(a: argparse.Namespace, source: str | pl.LazyFrame
                   ) -> list[str | Biometric | Tandem] | None:
    """``metrics=`` of the report from ``--spoof``, ``--forensic``, ``--tandem``, biometrics.

    ``None`` when none is given: the library's default, spoofing metrics when the data have a
    ``trial_type`` column; that default also holds beside the other options.
    """
    bio = report_biometric(a)
    tandem = None if not a.tandem else Tandem(asv=a.tandem[0], cm=a.tandem[1],
                                              variant=a.t_dcf_variant,
                                              unpaired=a.tandem_unpaired)
    named: list[str | Biometric | Tandem] = [*(["forensic"] if a.forensic else [])]
    named += [x for x in (bio, tandem) if x is not None]
    if not a.spoof and not named:
        return None
    from scoreframe.frames.lazy import as_lazy

    spoof = a.spoof or "trial_type" in as_lazy(source).collect_schema().names()
    return [*(["spoof"] if spoof else []), *named]


def cmd_report(a: argparse.Namespace) -> int:
    """Run ``scoreframe report``."""
    from scoreframe.views.report import build_report, write_report

    inputs = [*input_paths(a), a.calibration]
    guard_outputs(inputs, [a.output], overwrite=a.overwrite)
    if a.export_dir:
        check_export_dir(a.export_dir, formats=a.export_format, inputs=inputs,
                         overwrite=a.overwrite)
    cal = load_model_kind(a.calibration, ("linear", "pav")) if a.calibration else None
    if cal is not None and a.allow_other_system:
        cal = copy.copy(cal)  # the library's check skips a model that names no system
        cal.system_ = None
    source = dataset_source(a, library_trial_id=True)
    metrics = report_metrics(a, source)
    with progress() as prog:
        task = prog.add_task("evaluating groups", total=None)
        rep = build_report(source, by=a.by, where=a.where, metrics=metrics,
                           operating_points=a.p_target, intervals=intervals_of(a),
                           calibration=cal, compare=a.compare, engine=engine_of(a),
                           validate=a.trial_id or True,
                           progress=lambda d, t: prog.update(task, completed=d, total=t))
        chart_task = prog.add_task("rendering charts", total=None)
        write_report(rep, a.output, title=a.title or
                     f"scoreframe report: {Path(dataset_label(a)).name}",
                     overwrite=a.overwrite, export_dir=a.export_dir,
                     export_formats=a.export_format,
                     progress=lambda d, t: prog.update(chart_task, completed=d, total=t))
    say(f"report written to {shown(a.output)} ({rep.summary.height} groups)")
    if a.export_dir:
        say(f"charts exported to {shown(a.export_dir)} ({', '.join(a.export_format)})")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` to the command line."""
    r = add_command(sub, "report", func=cmd_report, first="DATASET",
                    help_text="one offline HTML report: summary table, DET/NBER/APE",
                    parents=[dataset_options(), reading_options(), by_options(),
                             operating_point_options(costs=False),
                             output_options(required=True, help_text="report.html"),
                             engine_options()])
    r.add_argument("--calibration", type=path_arg(),
                   help="calibrate with MODEL.json before evaluating")
    r.add_argument("--allow-other-system", action="store_true",
                   help="apply --calibration to systems other than the one it was trained on")
    r.add_argument("--title", type=text_arg("a title"),
                   help="report title (default: from the dataset name)")
    r.add_argument("--export-dir", type=path_arg("a directory"), help="also write every chart here")
    r.add_argument("--export-format", nargs="+", choices=EXPORT_FORMATS, default=["png"],
                   help="formats of the exported charts")
    add_interval_options(r)
    add_report_biometric_options(r)
    r.add_argument("--compare", nargs=2, action=Distinct, type=name_arg(),
                   metavar=("SYSTEM_A", "SYSTEM_B"),
                   help="forest plot of the paired-bootstrap differences of two systems")
    s = r.add_argument_group("anti-spoofing and forensic metrics")
    s.add_argument("--spoof", action="store_true",
                   help="spoofing metrics per group (on by default when the data have a "
                        "trial_type column)")
    s.add_argument("--forensic", action="store_true",
                   help="AUC, misleading evidence, ELUB per group, Tippett and ECE plots")
    s.add_argument("--tandem", nargs=2, action=Distinct, type=name_arg(),
                   metavar=("ASV_SYSTEM", "CM_SYSTEM"),
                   help="t-DCF curve of CM_SYSTEM in front of ASV_SYSTEM")
    s.add_argument("--t-dcf-variant", choices=("2021", "2019"), default="2021",
                   help="t-DCF definition")
    s.add_argument("--tandem-unpaired", choices=("error", "drop"), default="error",
                   help="trials that only one of the two --tandem systems scored: an error "
                        "(default) or dropped with a warning giving their number")
