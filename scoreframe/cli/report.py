"""``scoreframe report``: one offline HTML report with summary table and DET/NBER/APE charts."""

from __future__ import annotations

import argparse
from pathlib import Path

from scoreframe.cli.console import progress
from scoreframe.cli.inputs import guard_outputs, load_model_kind
from scoreframe.cli.options import (
    add_command,
    by_options,
    dataset_options,
    operating_point_options,
    output_options,
)

__all__ = ["cmd_report", "register"]


def cmd_report(a: argparse.Namespace) -> int:
    """Run ``scoreframe report``."""
    from scoreframe.report import build_report, write_report

    guard_outputs([a.dataset, a.calibration], [a.output], overwrite=a.overwrite)
    cal = load_model_kind(a.calibration, ("linear", "pav")) if a.calibration else None
    with progress() as prog:
        task = prog.add_task("evaluating groups", total=None)
        rep = build_report(a.dataset, by=a.by, where=a.where, p_target=a.p_target,
                           calibration=cal,
                           title=a.title or f"scoreframe report: {Path(a.dataset).name}",
                           progress=lambda d, t: prog.update(task, completed=d, total=t))
        prog.update(task, description="rendering charts")
        write_report(rep, a.output, overwrite=a.overwrite, export_dir=a.export_dir,
                     export_formats=a.export_format)
    print(f"report written to {a.output} ({rep.summary.height} groups)")
    if a.export_dir:
        print(f"charts exported to {a.export_dir} ({', '.join(a.export_format)})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``report`` to the command line."""
    r = add_command(sub, "report", func=cmd_report, first="DATASET",
                    help_text="one offline HTML report: summary table, DET/NBER/APE",
                    parents=[dataset_options(), by_options(),
                             operating_point_options(costs=False),
                             output_options(required=True, help_text="report.html")])
    r.add_argument("--calibration", help="calibrate with MODEL.json before evaluating")
    r.add_argument("--title", help="report title (default: from the dataset name)")
    r.add_argument("--export-dir", help="also write every chart here")
    r.add_argument("--export-format", nargs="+", choices=("png", "svg", "html"),
                   default=["png"], help="formats of the exported charts")
