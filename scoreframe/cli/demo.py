"""``scoreframe demo``: synthesize the demo evaluation and run the whole pipeline on it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

from scoreframe.cli.before_after import fit_summary, report_sets
from scoreframe.cli.console import json_safe
from scoreframe.cli.evaluate import print_results, run_evaluate
from scoreframe.cli.options import add_command
from scoreframe.io.parquet import scan_trials, write_trials
from scoreframe.synth import synth_chunks

__all__ = ["cmd_demo", "register"]


def cmd_demo(a: argparse.Namespace) -> int:
    """Run ``scoreframe demo``."""
    from scoreframe.calibration import LinearCalibration
    from scoreframe.fusion import LinearFusion

    out = Path(a.out)
    data = out / "demo_trials"
    print(f"1/5 synthesizing a demo evaluation: {a.trials} trials x 3 systems -> {data}")
    chunks = synth_chunks(a.trials, n_systems=3, seed=a.seed, chunk_trials=500_000)
    write_trials(chunks, data, partition_by=["system"], overwrite=True)
    print("2/5 evaluating per condition (by system, gender and channel)")
    res = run_evaluate(str(data), by=["gender", "channel"], where=None,
                       p_target=[0.01, 0.1], c_miss=1.0, c_fa=1.0, eer_method="rocch",
                       equalize_by=[])
    print_results(res, title="demo: per-condition results (EER method: rocch)")
    res_path = out / "demo_results.json"
    res_path.write_text(json.dumps(json_safe(res.to_dicts()), indent=1))
    print(f"results written to {res_path}")
    trials = scan_trials(data)
    even = pl.col("model").str.slice(1).cast(pl.Int64) % 2 == 0
    dev, ev = trials.filter(even), trials.filter(~even)
    print("3/5 fusion of the 3 systems, trained on the dev half (even models), applied to eval")
    fuser = LinearFusion(p_target=0.01).fit(dev)
    fuser.save(out / "demo_fusion.json", overwrite=True)
    print(f"  {fit_summary(fuser)}")
    fused = fuser.transform(ev)
    write_trials(fused, out / "demo_fused_eval", overwrite=True)
    report_sets([("eval", scan_trials(out / "demo_fused_eval"))], [0.01, 0.1],
                "demo: fusion, before (each system) / after (fused) on eval")
    print("4/5 linear calibration of sys1, trained on dev, applied to eval")
    sys1 = pl.col("system") == "sys1"
    cal = LinearCalibration(p_target=0.01).fit(dev.filter(sys1))
    cal.save(out / "demo_calibration_sys1.json", overwrite=True)
    print(f"  llr = {cal.scale:.6g} * score + {cal.offset:.6g}; {fit_summary(cal)}")
    report_sets([("eval", cal.transform(ev.filter(sys1)))], [0.01, 0.1],
                "demo: calibration of sys1 on eval")
    print(f"models written to {out}/demo_fusion.json and {out}/demo_calibration_sys1.json")
    from scoreframe.report import build_report, write_report

    print("5/5 writing the HTML report (by system and channel)")
    rep = build_report(str(data), by=["channel"], p_target=[0.01, 0.1],
                       title="scoreframe demo report")
    path = write_report(rep, out / "demo_report.html", overwrite=True)
    print(f"report: {path.resolve()}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``demo`` to the command line."""
    d = add_command(sub, "demo", func=cmd_demo,
                    help_text="synthesize the demo evaluation and run the pipeline on it")
    d.add_argument("--out", default="demo_out", help="output directory")
    d.add_argument("--trials", type=int, default=1_000_000, help="trials per system")
    d.add_argument("--seed", type=int, default=0, help="random seed")
