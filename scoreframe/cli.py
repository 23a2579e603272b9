"""The ``scoreframe`` command line: convert, info, query, synth, evaluate, calibrate, fuse, report.

Views layer: parses arguments, calls the library, prints tables (rich) or writes files. User
errors exit with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from scoreframe import io as sio
from scoreframe.align import align
from scoreframe.before_after import COLUMNS as BA_COLUMNS
from scoreframe.before_after import before_after, raw_stages
from scoreframe.errors import ScoreframeError
from scoreframe.evaluate import evaluate, explode_dcf, group_columns
from scoreframe.io.parquet import apply_where, infer_kind, scan_trials, write_trials
from scoreframe.metrics import EER_METHODS
from scoreframe.sql import query
from scoreframe.synth import synth_chunks

__all__ = ["main"]

PAIRED = ("bosaris-h5", "bosaris-txt", "kaldi", "nist")


class UsageError(ScoreframeError):
    """A command-line usage error."""


def _console():  # noqa: ANN202 - rich is imported lazily to keep start-up fast
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def _progress():  # noqa: ANN202
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress("[progress.description]{task.description}", BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), console=_console(),
                    transient=True, disable=not sys.stderr.isatty())


def _parse_columns(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise UsageError(f"--columns takes canonical=source pairs (model=enroll,...); "
                             f"got {part!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _parse_missing(text: str) -> str | float:
    if text in ("error", "drop"):
        return text
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"--missing takes error, drop or a number; got {text!r}") from None


def _load(path: str | None, fmt: str | None, kind: str | None,
          columns: dict[str, str] | None) -> pl.LazyFrame:
    assert path is not None
    f = fmt or sio.guess_format(path)
    if f == "parquet":
        return scan_trials(path, check_data=True)
    return sio.read_any(path, fmt=f, kind=kind, columns=columns).lazy()  # type: ignore[arg-type]


def _paired_paths(out: str, fmt: str, key_out: str | None,
                  scores_out: str | None) -> tuple[Path, Path]:
    p = Path(out)
    ext = p.suffix or {"bosaris-h5": ".h5", "nist": ".tsv"}.get(fmt, ".txt")
    stem = p.with_suffix("")
    return (Path(key_out) if key_out else stem.with_name(stem.name + "_key" + ext),
            Path(scores_out) if scores_out else stem.with_name(stem.name + "_scores" + ext))


def cmd_convert(a: argparse.Namespace) -> int:
    columns = _parse_columns(a.columns)
    if a.input and (a.key or a.scores):
        raise UsageError("give either an INPUT table or --key/--scores, not both")
    if a.input:
        lf = _load(a.input, a.from_, None, columns)
        srcs = [a.input]
    elif a.key or a.scores:
        key = _load(a.key, a.key_from or a.from_, "key", columns) if a.key else None
        sc = _load(a.scores, a.scores_from or a.from_, "scores", columns) if a.scores else None
        if key is not None and sc is not None:
            lf = align(key, sc, missing=_parse_missing(a.missing), extra=a.extra)
        else:
            lf = key if key is not None else sc  # type: ignore[assignment]
        srcs = [p for p in (a.key, a.scores) if p]
    else:
        raise UsageError("nothing to convert: give an INPUT table or --key and/or --scores")
    out_paths = [Path(a.output)]
    to = a.to or ("parquet" if not Path(a.output).suffix else sio.guess_format(a.output))
    lf = apply_where(lf, a.where)
    df = lf.collect()
    kind = infer_kind(df.columns)
    if to in PAIRED:
        if "system" in df.columns and df["system"].n_unique() > 1:
            raise UsageError(f"{to} holds one system; select one with --where \"system = 'x'\"")
        jobs = []
        if kind in ("trials", "key", "ndx") and not (to == "nist" and kind == "ndx"):
            jobs.append("key" if "label" in df.columns else "ndx")
        if "score" in df.columns:
            jobs.append("scores")
        kpath, spath = _paired_paths(a.output, to, a.key_out, a.scores_out)
        if jobs == ["key"] or jobs == ["ndx"]:
            kpath = Path(a.key_out or a.output)
        if jobs == ["scores"]:
            spath = Path(a.scores_out or a.output)
        out_paths = [kpath if j != "scores" else spath for j in jobs]
        _guard(srcs, out_paths)
        for job, path in zip(jobs, out_paths, strict=True):
            sio.write_any(df, path, fmt=to, kind=job, overwrite=a.overwrite)  # type: ignore[arg-type]
    else:
        _guard(srcs, out_paths)
        sio.write_any(df, a.output, fmt=to, kind=kind, overwrite=a.overwrite,
                      partition_by=tuple(a.partition_by or ()))
    print(f"wrote {df.height} {kind} rows to {', '.join(str(p) for p in out_paths)}")
    return 0


def _guard(inputs: Sequence[str], outputs: Sequence[Path]) -> None:
    ins = {Path(p).resolve() for p in inputs}
    for o in outputs:
        r = o.resolve()
        if r in ins or any(r in i.parents or i in r.parents for i in ins):
            raise UsageError(f"output `{o}` would overwrite or sit inside an input; "
                             "inputs are never modified")


def cmd_info(a: argparse.Namespace) -> int:
    lf = _load(a.dataset, a.from_, None, None)
    lf = apply_where(lf, a.where)
    schema = lf.collect_schema()
    con = _console()
    n = lf.select(pl.len()).collect().item()
    con.print(f"[bold]{a.dataset}[/bold]: {n} rows")
    con.print("schema: " + ", ".join(f"{k}: {v}" for k, v in schema.items()))
    skip = {"model", "segment", "score", "label"}
    conds = [c for c in schema.names() if c not in skip
             and (schema[c] == pl.String or schema[c].is_integer() or schema[c] == pl.Boolean
                  or isinstance(schema[c], (pl.Categorical, pl.Enum)))]
    if "label" not in schema:
        con.print("no labels (scores or trial list only)")
        return 0
    from rich.table import Table

    for c in conds:
        stats = (lf.group_by(c).agg(pl.col("label").sum().alias("targets"),
                                    (~pl.col("label")).sum().alias("non-targets"),
                                    pl.col("label").is_null().sum().alias("unknown"))
                 .sort(c).collect())
        if stats.height > a.max_values:
            con.print(f"{c}: {stats.height} distinct values (not listed)")
            continue
        t = Table(title=f"by {c}")
        for col in stats.columns:
            t.add_column(col, justify="right" if col != c else "left")
        for row in stats.iter_rows():
            t.add_row(*(str(v) for v in row))
        con.print(t)
    tot = lf.select(pl.col("label").sum().alias("t"), (~pl.col("label")).sum().alias("n"),
                    pl.col("label").is_null().sum().alias("u")).collect().row(0)
    con.print(f"targets: {tot[0]}, non-targets: {tot[1]}, unknown: {tot[2]}")
    return 0


def cmd_query(a: argparse.Namespace) -> int:
    sql_path = Path(a.sql)
    if not sql_path.is_file():
        raise UsageError(f"no such SQL file `{sql_path}`")
    df = query(sql_path.read_text(), a.dataset)
    _emit_frame(df, a.format, a.output, a.overwrite)
    return 0


def _emit_frame(df: pl.DataFrame, fmt: str, output: str | None, overwrite: bool) -> None:
    if output:
        from scoreframe.io._atomic import atomic_output

        with atomic_output(output, overwrite=overwrite) as out:
            if fmt == "parquet" or (fmt == "table" and output.endswith(".parquet")):
                df.write_parquet(out)
            elif fmt == "json":
                out.write_text(json.dumps(df.to_dicts(), default=str, indent=1))
            else:
                df.write_csv(out)
        print(f"wrote {df.height} rows to {output}")
        return
    if fmt == "parquet":
        raise UsageError("--format parquet needs -o FILE")
    if fmt == "csv":
        sys.stdout.write(df.write_csv())
    elif fmt == "json":
        print(json.dumps(df.to_dicts(), default=str, indent=1))
    else:
        from rich.table import Table

        t = Table()
        for c in df.columns:
            t.add_column(c)
        for row in df.head(1000).iter_rows():
            t.add_row(*(_fmt(v) for v in row))
        _console().print(t)
        if df.height > 1000:
            print(f"... {df.height - 1000} more rows (use -o to write them all)")


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}"
    return "" if v is None else str(v)


def cmd_synth(a: argparse.Namespace) -> int:
    chunks = synth_chunks(a.trials, n_systems=a.systems, seed=a.seed,
                          target_rate=a.target_rate, n_conditions=a.conditions,
                          chunk_trials=a.chunk_trials)
    total_rows = a.trials * a.systems
    with _progress() as prog:
        task = prog.add_task("writing trials", total=total_rows)
        write_trials(chunks, a.output, partition_by=a.partition_by or (),
                     overwrite=a.overwrite,
                     progress=lambda n: prog.update(task, completed=n))
    print(f"wrote {total_rows} rows ({a.trials} trials x {a.systems} systems) to {a.output}")
    return 0


def _json_safe(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


def run_evaluate(dataset: str | pl.LazyFrame, *, by: list[str], where: str | None,
                 p_target: list[float], c_miss: float, c_fa: float, eer_method: str,
                 equalize_by: list[str]) -> pl.DataFrame:
    """Evaluate with a progress bar over groups."""
    with _progress() as prog:
        task = prog.add_task("evaluating groups", total=None)
        return evaluate(dataset, by=by, where=where, p_target=p_target, c_miss=c_miss,
                        c_fa=c_fa, eer_method=eer_method, equalize_by=equalize_by,
                        progress=lambda d, t: prog.update(task, completed=d, total=t))


def print_results(res: pl.DataFrame, *, title: str = "") -> None:
    """Print the per-condition table: one row per group and operating point."""
    from rich.table import Table

    flat = explode_dcf(res)
    group_cols = group_columns(res)
    cols = [*group_cols, "n_tar", "n_non", "eer", "cllr", "min_cllr", "prbep", "p_target",
            "act_dcf_norm", "min_dcf_norm"]
    if "eq_eer" in flat.columns:
        cols += ["eq_eer", "eq_act_dcf_norm", "eq_min_dcf_norm"]
    t = Table(title=title or None)
    for c in cols:
        t.add_column(c, justify="left" if c in group_cols else "right")
    warn = False
    for row in flat.iter_rows(named=True):
        cells = [_fmt(row[c]) for c in cols]
        if row.get("dr30_ok") is False:
            cells[cols.index("min_dcf_norm")] += " *"
            warn = True
        t.add_row(*cells)
    _console().print(t)
    if warn:
        print("* fewer than 30 misses or false alarms at the minDCF point (Doddington's rule "
              "of 30): that value is not reliable")


def cmd_evaluate(a: argparse.Namespace) -> int:
    p_target = a.p_target or [0.01]
    res = run_evaluate(a.dataset, by=a.by or [], where=a.where, p_target=p_target,
                       c_miss=a.c_miss, c_fa=a.c_fa, eer_method=a.eer_method,
                       equalize_by=a.equalize_by or [])
    by_cols = group_columns(res)
    if a.format == "table":
        if a.output:
            raise UsageError("-o needs --format json, csv or parquet")
        print_results(res, title=f"EER method: {a.eer_method}")
        return 0
    if a.format == "json":
        doc = {"eer_method": a.eer_method, "by": by_cols, "p_target": p_target,
               "c_miss": a.c_miss, "c_fa": a.c_fa, "groups": _json_safe(res.to_dicts())}
        text = json.dumps(doc, indent=1)
        if a.output:
            from scoreframe.io._atomic import atomic_output

            with atomic_output(a.output, overwrite=a.overwrite) as out:
                out.write_text(text)
        else:
            print(text)
        return 0
    _emit_frame(explode_dcf(res), a.format, a.output, a.overwrite)
    return 0


# --- calibration and fusion ---------------------------------------------------------------------
def _dataset(path: str, where: str | None = None) -> pl.LazyFrame:
    """A trial table from any supported file (parquet scanned lazily)."""
    return apply_where(_load(path, None, None, None), where)


def print_before_after(table: pl.DataFrame, *, title: str) -> None:
    """Print a before/after table (stage x system x prior)."""
    from rich.table import Table

    t = Table(title=title)
    for c in BA_COLUMNS:
        t.add_column(c, justify="left" if c in ("set", "stage", "system") else "right")
    for row in table.iter_rows(named=True):
        t.add_row(*[_fmt(row[c]) for c in BA_COLUMNS])
    _console().print(t)


def _quality_table(path: str | None) -> pl.LazyFrame | None:
    """A quality table (``id`` + columns): parquet, csv or tsv, not validated as trials."""
    if path is None:
        return None
    fmt = sio.guess_format(path)
    if fmt == "parquet":
        return pl.scan_parquet(path if not Path(path).is_dir() else f"{path}/**/*.parquet")
    if fmt in ("csv", "tsv"):
        return pl.read_csv(path, separator="," if fmt == "csv" else "\t").lazy()
    raise UsageError(f"quality tables are parquet, csv or tsv; got {path}")


def _report_sets(outputs: list[tuple[str, pl.LazyFrame]], p_target: list[float],
                 title: str) -> None:
    frames = []
    for name, out in outputs:
        if "label" not in out.collect_schema().names():
            print(f"{name}: no labels, no before/after table")
            continue
        frames.append(before_after({"before": raw_stages(out), "after": out},
                                   p_target=p_target, set_name=name))
    if frames:
        print_before_after(pl.concat(frames), title=title)


def _fit_summary(model: object) -> str:
    tr = model.training  # type: ignore[attr-defined]
    if "objective_value" not in tr:
        return f"{tr['n_tar']} targets, {tr['n_non']} non-targets, {tr.get('n_blocks')} blocks"
    state = "converged" if tr["converged"] else "NOT converged: " + tr["message"]
    return (f"{tr['n_tar']} targets, {tr['n_non']} non-targets; objective "
            f"{tr['objective']['rule']} at p_target={tr['p_target']:g}: "
            f"{tr['initial_objective']:.6g} -> {tr['objective_value']:.6g} "
            f"({tr['n_iter']} iterations, {state})")


def _write_scored(out: pl.LazyFrame, path: str, overwrite: bool, inputs: Sequence[str], *,
                  trials: bool = True) -> pl.LazyFrame:
    """Write an applied model's output; return a lazy view of what was written.

    ``trials=False`` (multiclass tables) writes plain Parquet, not a validated trial dataset.
    """
    _guard(inputs, [Path(path)])
    fmt = "parquet" if not Path(path).suffix else sio.guess_format(path)
    if fmt == "parquet" and not trials:
        from scoreframe.io._atomic import atomic_output

        df = out.collect()
        with atomic_output(path, overwrite=overwrite) as tmp:
            df.write_parquet(tmp)
        return df.lazy()
    if fmt == "parquet":
        write_trials(out, path, overwrite=overwrite)
        return scan_trials(path)
    if fmt not in ("csv", "tsv"):
        raise UsageError(f"apply writes parquet, csv or tsv, not {fmt}")
    df = out.collect()
    from scoreframe.io.tables import write_table

    write_table(df, path, overwrite=overwrite)
    return df.lazy()


def cmd_calibrate_train(a: argparse.Namespace) -> int:
    from scoreframe.calibration import LinearCalibration, PavCalibration

    if a.method == "linear":
        model = LinearCalibration(p_target=a.p_target, objective=a.objective,
                                  max_iter=a.max_iter)
    else:
        model = PavCalibration(variant=a.variant, eps=a.eps)
    dev = _dataset(a.dev, a.where)
    model.fit(dev)
    _guard([a.dev], [Path(a.output)])
    model.save(a.output, overwrite=a.overwrite)
    print(f"{a.method} calibration: {_fit_summary(model)}")
    if a.method == "linear":
        print(f"  llr = {model.scale:.6g} * score + {model.offset:.6g}")
    print(f"model written to {a.output}")
    _report_sets([(Path(a.dev).name, model.transform(dev))], a.report_p_target or [a.p_target],
                 "calibration on the training set")
    return 0


def _load_kind(path: str, methods: tuple[str, ...]):  # noqa: ANN202
    from scoreframe.models import load_model

    model = load_model(path)
    if model.method not in methods:
        raise UsageError(f"{path} is a {model.method} model; expected {' or '.join(methods)}")
    return model


def cmd_calibrate_apply(a: argparse.Namespace) -> int:
    model = _load_kind(a.model, ("linear", "pav"))
    out = model.transform(_dataset(a.eval, a.where))
    written = _write_scored(out, a.output, a.overwrite, [a.eval, a.model])
    print(f"calibrated scores written to {a.output} (score = llr, input kept as score_raw)")
    p = a.report_p_target or [model.p_target if model.method == "linear" else 0.5]
    _report_sets([(Path(a.eval).name, written)], p, "calibration applied")
    return 0


def _fusion_inputs(paths: list[str], where: str | None) -> object:
    if len(paths) == 1:
        return _dataset(paths[0], where)
    names = [Path(p).name.split(".")[0] for p in paths]
    if len(set(names)) == len(names):
        return {n: _dataset(p, where) for n, p in zip(names, paths, strict=True)}
    return [_dataset(p, where) for p in paths]


def cmd_fuse_train(a: argparse.Namespace) -> int:
    from scoreframe.fusion import LinearFusion

    model = LinearFusion(p_target=a.p_target, objective=a.objective, max_iter=a.max_iter,
                         missing=_parse_missing(a.missing))
    data = _fusion_inputs(a.dev, a.where)
    qm, qs = _quality_table(a.quality_model), _quality_table(a.quality_segment)
    if (qm is None) != (qs is None):
        raise UsageError("give both --quality-model and --quality-segment, or neither")
    model.fit(data, quality_model=qm, quality_segment=qs)  # type: ignore[arg-type]
    _guard([*a.dev, *(x for x in (a.quality_model, a.quality_segment) if x)], [Path(a.output)])
    model.save(a.output, overwrite=a.overwrite)
    print(f"linear fusion of {len(model.weights)} systems: {_fit_summary(model)}")
    terms = " + ".join(f"{w:.6g} * {s}" for s, w in model.weights.items())
    print(f"  llr = {terms} + {model.offset:.6g}"
          + (f" + quality term over {model.quality_columns}" if model.quality_columns else ""))
    print(f"model written to {a.output}")
    out = model.transform(data, quality_model=qm, quality_segment=qs)  # type: ignore[arg-type]
    _report_sets([("+".join(Path(p).name for p in a.dev), out)],
                 a.report_p_target or [a.p_target], "fusion on the training set")
    return 0


def cmd_fuse_apply(a: argparse.Namespace) -> int:
    model = _load_kind(a.model, ("linear_fusion",))
    if a.missing is not None:
        model.missing = _parse_missing(a.missing)
    qm, qs = _quality_table(a.quality_model), _quality_table(a.quality_segment)
    out = model.transform(_fusion_inputs(a.eval, a.where), quality_model=qm, quality_segment=qs)
    inputs = [*a.eval, a.model, *(x for x in (a.quality_model, a.quality_segment) if x)]
    written = _write_scored(out, a.output, a.overwrite, inputs)
    print(f"fused scores written to {a.output} (score = fused llr, inputs as score_raw_<system>)")
    _report_sets([("+".join(Path(p).name for p in a.eval), written)],
                 a.report_p_target or [model.p_target], "fusion applied")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    from scoreframe.report import build_report, write_report

    cal = _load_kind(a.calibration, ("linear", "pav")) if a.calibration else None
    _guard([a.dataset, *([a.calibration] if a.calibration else [])], [Path(a.output)])
    with _progress() as prog:
        task = prog.add_task("evaluating groups", total=None)
        rep = build_report(a.dataset, by=a.by or [], where=a.where,
                           p_target=a.p_target or [0.01], calibration=cal,
                           title=a.title or f"scoreframe report: {Path(a.dataset).name}",
                           progress=lambda d, t: prog.update(task, completed=d, total=t))
        prog.update(task, description="rendering charts")
        write_report(rep, a.output, overwrite=a.overwrite, export_dir=a.export_dir,
                     export_formats=a.export_format)
    print(f"report written to {a.output} ({rep.summary.height} groups)")
    if a.export_dir:
        print(f"charts exported to {a.export_dir} ({', '.join(a.export_format)})")
    return 0


def _mc_scores(paths: list[str]):  # noqa: ANN202
    from scoreframe.multiclass import read_scores

    if len(paths) == 1:
        return read_scores(paths[0])
    names = [Path(p).name.split(".")[0] for p in paths]
    if len(set(names)) != len(names):
        raise UsageError("give the multiclass systems files with distinct names")
    return {n: read_scores(p) for n, p in zip(names, paths, strict=True)}


def _print_frame(df: pl.DataFrame, title: str) -> None:
    from rich.table import Table

    t = Table(title=title)
    for c in df.columns:
        t.add_column(c, justify="right")
    for row in df.iter_rows():
        t.add_row(*[_fmt(v) for v in row])
    _console().print(t)


MC_COLUMNS = ["n_segments", "n_classes", "cmxe", "cmxe_ref", "info_bits", "error_rate",
              "cavg", "cavg_norm", "min_cavg_norm", "c_primary"]


def cmd_mc_evaluate(a: argparse.Namespace) -> int:
    from scoreframe.multiclass import evaluate_multiclass

    res = evaluate_multiclass(a.scores, a.truth, by=a.by or [],
                              p_target=a.p_target or [0.5])
    groups = [c for c in res.columns if c not in (*MC_COLUMNS, "cmxe_norm", "expected_cost",
                                                  "min_cavg", "cavg_by_p")]
    if a.format == "json":
        text = json.dumps({"p_target": a.p_target or [0.5], "by": groups,
                           "groups": _json_safe(res.to_dicts())}, indent=1)
        if a.output:
            from scoreframe.io._atomic import atomic_output

            with atomic_output(a.output, overwrite=a.overwrite) as out:
                out.write_text(text)
        else:
            print(text)
        return 0
    if a.output:
        raise UsageError("-o needs --format json")
    _print_frame(res.select(*groups, *MC_COLUMNS), "multiclass evaluation (Cmxe in bits; "
                 "Cavg at the first p_target, normalized columns divided by min(P, 1-P))")
    return 0


def _mc_before_after(out: pl.DataFrame, truth: str, title: str) -> None:
    """Evaluate a calibrated/fused multiclass table before (its ``score_raw*``) and after."""
    from scoreframe.multiclass import evaluate_multiclass

    raw = [c for c in out.columns if c.startswith("score_raw")]
    before = (out.drop("score").rename({"score_raw": "score"}) if raw == ["score_raw"] else
              pl.concat([out.select("segment", "class", pl.col(c).alias("score"),
                                    system=pl.lit(c.removeprefix("score_raw_"))) for c in raw]))
    after = out.drop(raw)
    rows = []
    for stage, sc in (("before", before), ("after", after)):
        r = evaluate_multiclass(sc, truth).with_columns(stage=pl.lit(stage))
        rows.append(r.select("stage", *[c for c in r.columns if c == "system"], "cmxe",
                             "info_bits", "error_rate", "cavg_norm", "min_cavg_norm"))
    _print_frame(pl.concat(rows, how="diagonal_relaxed"), title)


def cmd_mc_train(a: argparse.Namespace) -> int:
    from scoreframe.multiclass import MulticlassCalibration, MulticlassFusion

    fuse = a.mc_kind == "fuse"
    model = (MulticlassFusion if fuse else MulticlassCalibration)(max_iter=a.max_iter)
    scores = _mc_scores(a.scores) if fuse else _mc_scores(a.scores[:1])
    model.fit(scores, a.truth)
    _guard([*a.scores, a.truth], [Path(a.output)])
    model.save(a.output, overwrite=a.overwrite)
    tr = model.training
    state = "converged" if tr["converged"] else "NOT converged: " + tr["message"]
    print(f"{model.method}: {tr['n_segments']} segments, {tr['n_classes']} classes; normalized "
          f"Cmxe {tr['initial_objective']:.6g} -> {tr['objective_value']:.6g} "
          f"({tr['n_iter']} iterations, {state}); model written to {a.output}")
    _mc_before_after(model.transform(scores).collect(), a.truth,
                     f"{model.method} on the training set")
    return 0


def cmd_mc_apply(a: argparse.Namespace) -> int:
    model = _load_kind(a.model, ("multiclass_fusion",) if a.mc_kind == "fuse"
                       else ("multiclass_affine",))
    scores = _mc_scores(a.scores) if a.mc_kind == "fuse" else _mc_scores(a.scores[:1])
    out = model.transform(scores)
    written = _write_scored(out, a.output, a.overwrite, [*a.scores, a.model], trials=False)
    print(f"scores written to {a.output} (score = calibrated log-likelihood)")
    if a.truth:
        _mc_before_after(written.collect(), a.truth, f"{model.method} applied")
    return 0


def cmd_demo(a: argparse.Namespace) -> int:
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
    res_path.write_text(json.dumps(_json_safe(res.to_dicts()), indent=1))
    print(f"results written to {res_path}")
    trials = scan_trials(data)
    even = pl.col("model").str.slice(1).cast(pl.Int64) % 2 == 0
    dev, ev = trials.filter(even), trials.filter(~even)
    print("3/5 fusion of the 3 systems, trained on the dev half (even models), applied to eval")
    fuser = LinearFusion(p_target=0.01).fit(dev)
    fuser.save(out / "demo_fusion.json", overwrite=True)
    print(f"  {_fit_summary(fuser)}")
    fused = fuser.transform(ev)
    write_trials(fused, out / "demo_fused_eval", overwrite=True)
    _report_sets([("eval", scan_trials(out / "demo_fused_eval"))], [0.01, 0.1],
                 "demo: fusion, before (each system) / after (fused) on eval")
    print("4/5 linear calibration of sys1, trained on dev, applied to eval")
    sys1 = pl.col("system") == "sys1"
    cal = LinearCalibration(p_target=0.01).fit(dev.filter(sys1))
    cal.save(out / "demo_calibration_sys1.json", overwrite=True)
    print(f"  llr = {cal.scale:.6g} * score + {cal.offset:.6g}; {_fit_summary(cal)}")
    _report_sets([("eval", cal.transform(ev.filter(sys1)))], [0.01, 0.1],
                 "demo: calibration of sys1 on eval")
    print(f"models written to {out}/demo_fusion.json and {out}/demo_calibration_sys1.json")
    from scoreframe.report import build_report, write_report

    print("5/5 writing the HTML report (by system and channel)")
    rep = build_report(str(data), by=["channel"], p_target=[0.01, 0.1],
                       title="scoreframe demo report")
    path = write_report(rep, out / "demo_report.html", overwrite=True)
    print(f"report: {path.resolve()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``scoreframe`` command."""
    p = argparse.ArgumentParser(prog="scoreframe", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("convert", help="convert between trial formats (and align key + scores)")
    c.add_argument("input", nargs="?", help="a single table (parquet dataset, csv, tsv, ...)")
    c.add_argument("--key", help="key or trial list file")
    c.add_argument("--scores", help="scores file")
    c.add_argument("--from", dest="from_", choices=sio.FORMATS, help="input format")
    c.add_argument("--key-from", choices=sio.FORMATS)
    c.add_argument("--scores-from", choices=sio.FORMATS)
    c.add_argument("--columns", help="column mapping canonical=source,... for csv/tsv")
    c.add_argument("--missing", default="error",
                   help="key trials with no score: error, drop or a fill value")
    c.add_argument("--extra", default="error", choices=("error", "drop"),
                   help="scores with no key trial")
    c.add_argument("--where", help="SQL predicate selecting trials")
    c.add_argument("--to", choices=sio.FORMATS, help="output format (default: from -o)")
    c.add_argument("--partition-by", nargs="+", help="parquet: partition columns")
    c.add_argument("-o", "--output", required=True, help="output file, directory or stem")
    c.add_argument("--key-out", help="paired formats: key output path")
    c.add_argument("--scores-out", help="paired formats: scores output path")
    c.add_argument("--overwrite", action="store_true")
    c.set_defaults(func=cmd_convert)

    i = sub.add_parser("info", help="rows, schema, systems and targets/non-targets per condition")
    i.add_argument("dataset")
    i.add_argument("--from", dest="from_", choices=sio.FORMATS)
    i.add_argument("--where")
    i.add_argument("--max-values", type=int, default=50,
                   help="list conditions with at most this many values")
    i.set_defaults(func=cmd_info)

    q = sub.add_parser("query", help="run an SQL file on a dataset (visible as `trials`)")
    q.add_argument("sql")
    q.add_argument("dataset")
    q.add_argument("--format", choices=("table", "csv", "json", "parquet"), default="table")
    q.add_argument("-o", "--output")
    q.add_argument("--overwrite", action="store_true")
    q.set_defaults(func=cmd_query)

    s = sub.add_parser("synth", help="write a synthetic evaluation as a partitioned dataset")
    s.add_argument("output")
    s.add_argument("--trials", type=int, default=1_000_000)
    s.add_argument("--systems", type=int, default=3)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--target-rate", type=float, default=0.1)
    s.add_argument("--conditions", type=int, help="add a `condition` column with N values")
    s.add_argument("--chunk-trials", type=int, default=1_000_000)
    s.add_argument("--partition-by", nargs="+", default=["system"])
    s.add_argument("--overwrite", action="store_true")
    s.set_defaults(func=cmd_synth)

    e = sub.add_parser("evaluate", help="EER, Cllr, minCllr, PRBEP, act/min DCF per condition")
    e.add_argument("dataset")
    e.add_argument("--by", nargs="+")
    e.add_argument("--where")
    e.add_argument("--p-target", type=float, nargs="+")
    e.add_argument("--c-miss", type=float, default=1.0)
    e.add_argument("--c-fa", type=float, default=1.0)
    e.add_argument("--eer-method", choices=EER_METHODS, default="rocch")
    e.add_argument("--equalize-by", nargs="+")
    e.add_argument("--format", choices=("table", "json", "csv", "parquet"), default="table")
    e.add_argument("-o", "--output")
    e.add_argument("--overwrite", action="store_true")
    e.set_defaults(func=cmd_evaluate)

    cal = sub.add_parser("calibrate", help="train or apply a calibration (linear or PAV)")
    cal_sub = cal.add_subparsers(dest="action", required=True)
    ct = cal_sub.add_parser("train", help="train on labelled dev trials; write MODEL.json")
    ct.add_argument("dev")
    ct.add_argument("--method", choices=("linear", "pav"), default="linear")
    ct.add_argument("--p-target", type=float, default=0.5, help="training prior")
    ct.add_argument("--objective", default="log",
                    help="linear: log, brier, boost, asym or 'alpha,beta' (Beta family)")
    ct.add_argument("--max-iter", type=int, default=100)
    ct.add_argument("--variant", choices=("bosaris", "raw"), default="bosaris",
                    help="pav: with BOSARIS' two dummy trials, or raw")
    ct.add_argument("--eps", type=float, default=0.0, help="pav: BOSARIS small_val")
    ct.add_argument("--where")
    ct.add_argument("--report-p-target", type=float, nargs="+",
                    help="priors of the before/after table (default: the training prior)")
    ct.add_argument("-o", "--output", required=True)
    ct.add_argument("--overwrite", action="store_true")
    ct.set_defaults(func=cmd_calibrate_train)
    ca = cal_sub.add_parser("apply", help="calibrate a dataset with MODEL.json")
    ca.add_argument("model")
    ca.add_argument("eval")
    ca.add_argument("--where")
    ca.add_argument("--report-p-target", type=float, nargs="+")
    ca.add_argument("-o", "--output", required=True, help="parquet dataset, .parquet, .csv, .tsv")
    ca.add_argument("--overwrite", action="store_true")
    ca.set_defaults(func=cmd_calibrate_apply)

    fu = sub.add_parser("fuse", help="train or apply a linear (quality) fusion of systems")
    fu_sub = fu.add_subparsers(dest="action", required=True)
    ft = fu_sub.add_parser("train", help="train on labelled dev trials; write MODEL.json")
    ft.add_argument("dev", nargs="+", help="one dataset with a system column, or one per system")
    ft.add_argument("--quality-model", help="quality table (id + columns) joined on model")
    ft.add_argument("--quality-segment", help="quality table (id + columns) joined on segment")
    ft.add_argument("--p-target", type=float, default=0.5, help="training prior")
    ft.add_argument("--objective", default="log")
    ft.add_argument("--max-iter", type=int, default=100)
    ft.add_argument("--missing", default="error",
                    help="trials not scored by every system: error, drop or a fill value")
    ft.add_argument("--where")
    ft.add_argument("--report-p-target", type=float, nargs="+")
    ft.add_argument("-o", "--output", required=True)
    ft.add_argument("--overwrite", action="store_true")
    ft.set_defaults(func=cmd_fuse_train)
    fa = fu_sub.add_parser("apply", help="fuse datasets with MODEL.json")
    fa.add_argument("model")
    fa.add_argument("eval", nargs="+")
    fa.add_argument("--quality-model")
    fa.add_argument("--quality-segment")
    fa.add_argument("--missing", help="override the model's missing-score policy")
    fa.add_argument("--where")
    fa.add_argument("--report-p-target", type=float, nargs="+")
    fa.add_argument("-o", "--output", required=True)
    fa.add_argument("--overwrite", action="store_true")
    fa.set_defaults(func=cmd_fuse_apply)

    r = sub.add_parser("report", help="one offline HTML report: summary table, DET/NBER/APE")
    r.add_argument("dataset")
    r.add_argument("--by", nargs="+")
    r.add_argument("--where")
    r.add_argument("--p-target", type=float, nargs="+")
    r.add_argument("--calibration", help="calibrate with MODEL.json before evaluating")
    r.add_argument("--title")
    r.add_argument("--export-dir", help="also write every chart here")
    r.add_argument("--export-format", nargs="+", choices=("png", "svg", "html"),
                   default=["png"])
    r.add_argument("-o", "--output", required=True, help="report.html")
    r.add_argument("--overwrite", action="store_true")
    r.set_defaults(func=cmd_report)

    mc = sub.add_parser("multiclass", help="multiclass: Cmxe, Cavg, calibration and fusion")
    mc_sub = mc.add_subparsers(dest="mc_command", required=True)
    me = mc_sub.add_parser("evaluate", help="Cmxe, information, error rate, LRE Cavg")
    me.add_argument("scores", help="long (segment, class, score) or wide / LRE22 TSV")
    me.add_argument("--truth", required=True)
    me.add_argument("--by", nargs="+")
    me.add_argument("--p-target", type=float, nargs="+", help="Cavg target priors (0.5)")
    me.add_argument("--format", choices=("table", "json"), default="table")
    me.add_argument("-o", "--output")
    me.add_argument("--overwrite", action="store_true")
    me.set_defaults(func=cmd_mc_evaluate)
    for kind in ("calibrate", "fuse"):
        k = mc_sub.add_parser(kind, help=f"multiclass {kind}: train or apply")
        k_sub = k.add_subparsers(dest="action", required=True)
        kt = k_sub.add_parser("train")
        kt.add_argument("scores", nargs="+" if kind == "fuse" else 1)
        kt.add_argument("--truth", required=True)
        kt.add_argument("--max-iter", type=int, default=100)
        kt.add_argument("-o", "--output", required=True)
        kt.add_argument("--overwrite", action="store_true")
        kt.set_defaults(func=cmd_mc_train, mc_kind=kind)
        ka = k_sub.add_parser("apply")
        ka.add_argument("model")
        ka.add_argument("scores", nargs="+" if kind == "fuse" else 1)
        ka.add_argument("--truth", help="print a before/after table")
        ka.add_argument("-o", "--output", required=True)
        ka.add_argument("--overwrite", action="store_true")
        ka.set_defaults(func=cmd_mc_apply, mc_kind=kind)

    d = sub.add_parser("demo", help="synthesize the demo evaluation and run the pipeline on it")
    d.add_argument("--out", default="demo_out")
    d.add_argument("--trials", type=int, default=1_000_000)
    d.add_argument("--seed", type=int, default=0)
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (2 on user errors)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ScoreframeError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        print(f"scoreframe: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (pl.exceptions.PolarsError, OSError) as exc:
        print(f"scoreframe: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scoreframe: interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    parts = [p.strip() for p in text.split("\n\n") if p.strip()]
    if not parts:
        return type(exc).__name__
    line = parts[0].replace("\n", " ")
    if len(parts) > 1:
        line += " (hint: " + parts[1].replace("\n", " ") + ")"
    return line


if __name__ == "__main__":
    sys.exit(main())
