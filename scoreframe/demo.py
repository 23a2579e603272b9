"""The demo pipeline: synthesize an evaluation, evaluate it, fuse, calibrate, write a report.

Top of the layer stack (it drives the library end to end). :func:`run_demo` yields one
:class:`DemoStep` per stage, so a caller (the ``scoreframe demo`` command, a notebook) prints
or shows each step as it finishes. :func:`dev_eval_split` is the split the demo trains on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from scoreframe.checks import check_positive_int
from scoreframe.errors import Place, ScoreframeError, message
from scoreframe.frames.synth import synth_chunks
from scoreframe.io.atomic import check_outputs
from scoreframe.io.parquet import scan_trials, write_trials
from scoreframe.results.before_after import before_after, raw_stages
from scoreframe.results.evaluate import evaluate

__all__ = ["DemoStep", "dev_eval_split", "run_demo"]

P_TARGETS = (0.01, 0.1)


@dataclass(frozen=True)
class DemoStep:
    """One finished stage of the demo.

    Attributes
    ----------
    title
        What the stage did (``"2/5 evaluating per condition ..."``).
    lines
        Further lines to show (fit summaries, where files were written).
    table
        The stage's table, if any: per-condition results (``kind="results"``) or a
        before/after table (``kind="before_after"``).
    kind
        ``"results"``, ``"before_after"`` or ``None``.
    table_title
        A title for the table.
    paths
        Files and directories the stage wrote.
    """

    title: str
    lines: tuple[str, ...] = ()
    table: pl.DataFrame | None = None
    kind: str | None = None
    table_title: str = ""
    paths: tuple[Path, ...] = field(default_factory=tuple)


def dev_eval_split(trials: pl.LazyFrame, *, column: str = "model"
                   ) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Split trials into dev (even model number) and eval (odd), so no model is in both.

    The number is the trailing digits of ``column`` (``m12`` -> 12): the synthetic data names
    models ``m0, m1, ...``. Rows whose id has no trailing digits go to neither half.

    Examples
    --------
    >>> lf = pl.LazyFrame({"model": ["m0", "m1", "m2", "m3"], "score": [1.0, 2, 3, 4]})
    >>> dev, ev = dev_eval_split(lf)
    >>> dev.collect()["model"].to_list(), ev.collect()["model"].to_list()
    (['m0', 'm2'], ['m1', 'm3'])
    """
    number = pl.col(column).cast(pl.String).str.extract(r"(\d+)$").cast(pl.Int64)
    return trials.filter(number % 2 == 0), trials.filter(number % 2 == 1)


def _json_safe(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


def run_demo(out: str | Path, *, trials: int = 1_000_000, seed: int = 0,
             p_target: Sequence[float] = P_TARGETS, overwrite: bool = False,
             progress: Callable[[int, int], None] | None = None) -> Iterator[DemoStep]:
    """Run the demo into directory ``out``, yielding each stage when it is done.

    The stages: (1) synthesize ``trials`` trials for 3 systems as a dataset partitioned by
    system; (2) evaluate per system x gender x channel; (3) train a linear fusion of the 3
    systems on the dev half (:func:`dev_eval_split`) and apply it to the eval half; (4) train a
    linear calibration of ``sys1`` on dev and apply it to eval; (5) write the HTML report.
    ``out`` must be new or empty unless ``overwrite=True`` (then the demo's files in it are
    replaced).

    Parameters
    ----------
    out
        Output directory (created).
    trials
        Trials per system.
    seed
        Seed of the synthetic data.
    p_target
        Operating points of the tables.
    overwrite
        Replace the files of an earlier demo in ``out``; otherwise a non-empty ``out`` is an
        error raised before any work.
    progress
        Optional ``progress(done, total)`` over evaluated groups, then rendered charts.

    Examples
    --------
    >>> import tempfile
    >>> steps = list(run_demo(tempfile.mkdtemp(), trials=3000))  # doctest: +SKIP
    >>> [s.title[:3] for s in steps]  # doctest: +SKIP
    ['1/5', '2/5', '3/5', '4/5', '5/5']
    """
    from scoreframe.estimators.calibration import LinearCalibration
    from scoreframe.estimators.fusion import LinearFusion
    from scoreframe.views.report import build_report, write_report

    trials = check_positive_int(trials, name="trials", minimum=100)
    p = list(p_target)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise ScoreframeError(message(
            "the demo's output directory is not empty", where=Place(out),
            expected="a new or empty directory",
            hint="Pass overwrite=True (CLI --overwrite) to replace an earlier demo's files."))
    if not out.exists():
        check_outputs([out])  # a new output directory: its parent must exist
        out.mkdir()
    data = out / "demo_trials"
    chunks = synth_chunks(trials, n_systems=3, seed=seed, chunk_trials=500_000)
    write_trials(chunks, data, partition_by=["system"], overwrite=True)
    yield DemoStep(f"1/5 synthesized a demo evaluation: {trials} trials x 3 systems -> {data}",
                   paths=(data,))

    res = evaluate(str(data), by=["gender", "channel"], operating_points=p, progress=progress)
    res_path = out / "demo_results.json"
    from scoreframe.io.atomic import atomic_output

    with atomic_output(res_path, overwrite=True) as tmp:
        tmp.write_text(json.dumps(_json_safe(res.to_dicts()), indent=1))
    yield DemoStep("2/5 evaluated per condition (by system, gender and channel)",
                   lines=(f"results written to {res_path}",), table=res, kind="results",
                   table_title="demo: per-condition results (EER method: rocch)",
                   paths=(res_path,))

    dev, ev = dev_eval_split(scan_trials(data))
    fuser = LinearFusion(p_target=p[0]).fit(dev)
    fusion_path = out / "demo_fusion.json"
    fuser.save(fusion_path, overwrite=True)
    fused_path = out / "demo_fused_eval"
    write_trials(fuser.transform(ev), fused_path, overwrite=True)
    fused = scan_trials(fused_path)
    table = before_after({"before": raw_stages(fused), "after": fused}, operating_points=p,
                         set_name="eval")
    yield DemoStep("3/5 fusion of the 3 systems, trained on the dev half (even models), "
                   "applied to eval", lines=(f"  {fuser!r}",), table=table,
                   kind="before_after", paths=(fusion_path, fused_path),
                   table_title="demo: fusion, before (each system) / after (fused) on eval")

    sys1 = pl.col("system") == "sys1"
    cal = LinearCalibration(p_target=p[0]).fit(dev.filter(sys1))
    cal_path = out / "demo_calibration_sys1.json"
    cal.save(cal_path, overwrite=True)
    calibrated = cal.transform(ev.filter(sys1))
    table = before_after({"before": raw_stages(calibrated), "after": calibrated},
                         operating_points=p,
                         set_name="eval")
    yield DemoStep("4/5 linear calibration of sys1, trained on dev, applied to eval",
                   lines=(f"  llr = {cal.scale_:.6g} * score + {cal.offset_:.6g}",
                          f"  {cal!r}",
                          f"models written to {fusion_path} and {cal_path}"),
                   table=table, kind="before_after", paths=(cal_path,),
                   table_title="demo: calibration of sys1 on eval")

    rep = build_report(str(data), by=["channel"], operating_points=p, progress=progress)
    path = write_report(rep, out / "demo_report.html", title="scoreframe demo report",
                        overwrite=True, progress=progress)
    yield DemoStep("5/5 wrote the HTML report (by system and channel)",
                   lines=(f"report: {Path(path).resolve()}",), paths=(Path(path),))
