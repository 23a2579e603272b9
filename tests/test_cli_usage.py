"""The command line as a user meets it: help, mistakes, outputs checked first, named systems.

Every user error asserts exit status 2, exactly one stderr line, no traceback and nothing
written; argparse errors quote the sub-command's usage on that line.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from importlib.metadata import version
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import BOSARIS

from scoreframe.cli import build_parser, main
from scoreframe.cli.console import LineProgress
from scoreframe.io import scan_trials

REAL = Path(__file__).parent / "data" / "real"
RU2009 = REAL / "ru2009_evalita"


@pytest.fixture(scope="module")
def ds(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("usage") / "synth"
    assert main(["synth", str(out), "--trials", "6000", "--seed", "7"]) == 0
    return out


@pytest.fixture(scope="module")
def splits(tmp_path_factory, ds) -> Path:
    root = tmp_path_factory.mktemp("usage_splits")
    lf = scan_trials(ds)
    even = pl.col("model").str.slice(1).cast(pl.Int64) % 2 == 0
    for s in ("sys1", "sys2"):
        for split, cond in (("dev", even), ("eval", ~even)):
            lf.filter(cond, pl.col("system") == s).drop("system").sink_parquet(
                root / f"{s}_{split}.parquet")
    lf.filter(even).sink_parquet(root / "dev.parquet")
    lf.filter(~even).sink_parquet(root / "eval.parquet")
    return root


def tree(root: Path) -> dict[str, int]:
    """Every file below ``root`` with its size (hidden temporaries included)."""
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def user_error(argv: list[str], capsys, watch: Path) -> str:
    """Run a command that must fail cleanly; return its one stderr line."""
    capsys.readouterr()
    before = tree(watch)
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1, cap.err
    assert re.match(r"scoreframe(?: [a-z ]+)?: error: ", cap.err) and "Traceback" not in cap.err
    assert tree(watch) == before, "a failed command wrote something"
    return cap.err


# --- version, help, usage ---------------------------------------------------------------------
def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"scoreframe {version('scoreframe')}"


def _sub_parsers(p: argparse.ArgumentParser, prefix: str = ""):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix}{name}", sub
                yield from _sub_parsers(sub, f"{prefix}{name} ")


def test_every_option_has_help_and_shows_its_default():
    parsers = list(_sub_parsers(build_parser()))
    assert {"convert", "info", "query", "synth", "evaluate", "calibrate train",
            "fuse apply", "report", "multiclass fuse train", "demo"} <= {n for n, _ in parsers}
    for name, p in parsers:
        help_text = p.format_help()
        for action in p._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help, f"{name}: {action.dest} has no help text"
            d = action.default
            if action.option_strings and d not in (None, False, []) and d is not \
                    argparse.SUPPRESS:
                shown = ",".join(map(str, d)) if isinstance(d, list) else str(d)
                assert f"(default: {shown})" in " ".join(help_text.split()), (name, action.dest)


def test_evaluate_help_puts_the_dataset_first(capsys):
    assert main(["evaluate", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: scoreframe evaluate DATASET [options]")
    assert "(default: 0.01)" in out and "(default: rocch)" in out


@pytest.mark.parametrize("argv,usage", [
    (["evaluate", "{ds}", "--bogus"], "usage: scoreframe evaluate"),
    (["calibrate", "train", "{ds}", "-o", "m.json", "--nope", "1"],
     "usage: scoreframe calibrate train"),
    (["info", "{ds}", "--p-target", "0.1"], "usage: scoreframe info"),
])
def test_unknown_options_get_the_subcommand_usage(argv, usage, ds, capsys):
    assert main([a.format(ds=ds) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unrecognized arguments" in err, err
    assert f"(usage: {usage.removeprefix('usage: ')}" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["evaluate", "{ds}", "--engine", "foo"],
                                  ["evaluate", "{ds}", "--bootstrap", "many"], ["query"], []])
def test_usage_errors_are_one_line(argv, ds, capsys):
    assert main([a.format(ds=ds) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ": error: " in err and "(usage: scoreframe" in err, err


# --- --by and the dataset ------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["evaluate", "--by", "gender,channel", "{ds}"],
    ["evaluate", "{ds}", "--by", "gender", "channel"],
    ["evaluate", "--by", "gender", "channel", "{ds}"],
    ["evaluate", "--by", "gender", "--by", "channel", "{ds}"],
    ["evaluate", "{ds}", "--by", "gender,channel", "--p-target", "0.01", "0.1"],
    ["evaluate", "--p-target", "0.01,0.1", "--by", "gender,channel", "{ds}"],
    ["evaluate", "--by", "gender,channel", "--p-target", "0.01", "0.1", "{ds}"],
])
def test_by_lists_never_swallow_the_dataset(argv, ds, capsys):
    assert main([a.format(ds=ds) for a in argv] + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["by"] == ["system", "gender", "channel"]
    groups = {(g["system"], g["gender"], g["channel"]) for g in doc["groups"]}
    assert ("sys1", "f", "tel") in groups and ("sys3", "all", "all") in groups
    assert len(doc["groups"]) == 3 * (2 * 2 + 1)


# --- outputs checked before any work ---------------------------------------------------------
def _no_evaluation(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("the evaluation ran before the outputs were checked")

    monkeypatch.setattr("scoreframe.cli.evaluate.evaluate", boom)


def test_existing_output_is_refused_before_evaluating(ds, tmp_path, capsys, monkeypatch):
    _no_evaluation(monkeypatch)
    out = tmp_path / "r.csv"
    out.write_text("keep me\n")
    err = user_error(["evaluate", str(ds), "--format", "csv", "-o", str(out)], capsys, tmp_path)
    assert "already exists" in err and "--overwrite" in err
    assert out.read_text() == "keep me\n"


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "{ds}", "--format", "parquet"], "needs -o"),
    (["evaluate", "{ds}", "--format", "table", "-o", "{tmp}/x.json"], "-o needs --format"),
    (["evaluate", "{ds}", "-o", "{tmp}/x.txt"], "cannot tell the format"),
    (["evaluate", "{ds}", "--format", "json", "-o", "{ds}/inside.json"], "inside an input"),
])
def test_format_and_output_mistakes_before_evaluating(argv, needle, ds, tmp_path, capsys,
                                                      monkeypatch):
    _no_evaluation(monkeypatch)
    err = user_error([a.format(ds=ds, tmp=tmp_path) for a in argv], capsys, tmp_path)
    assert needle in err


def test_output_format_from_the_suffix(ds, tmp_path):
    assert main(["evaluate", str(ds), "-o", str(tmp_path / "r.csv")]) == 0
    assert pl.read_csv(tmp_path / "r.csv")["system"].to_list() == ["sys1", "sys2", "sys3"]
    assert main(["evaluate", str(ds), "-o", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["eer_method"] == "rocch"


def test_query_parquet_needs_an_output(ds, tmp_path, capsys):
    sql = tmp_path / "q.sql"
    sql.write_text("select count(*) as n from trials")
    assert "needs -o" in user_error(["query", str(sql), str(ds), "--format", "parquet"],
                                    capsys, tmp_path)


def test_convert_paired_outputs_are_all_or_nothing(tmp_path, capsys):
    (tmp_path / "out_scores.txt").write_text("existing\n")
    err = user_error(["convert", "--key", str(BOSARIS / "kns" / "key.txt"), "--scores",
                      str(BOSARIS / "kns" / "scores.txt"), "--to", "bosaris-txt", "-o",
                      str(tmp_path / "out.txt")], capsys, tmp_path)
    assert "out_scores.txt" in err and "already exists" in err
    assert not (tmp_path / "out_key.txt").exists()
    # a parquet input: its kind comes from the schema, still before anything is written
    ds = tmp_path / "kns.parquet"
    assert main(["convert", "--key", str(BOSARIS / "kns" / "key.txt"), "--scores",
                 str(BOSARIS / "kns" / "scores.txt"), "-o", str(ds)]) == 0
    err = user_error(["convert", str(ds), "--to", "bosaris-txt", "-o", str(tmp_path / "out.txt")],
                     capsys, tmp_path)
    assert "out_scores.txt" in err and not (tmp_path / "out_key.txt").exists()
    assert main(["convert", str(ds), "--to", "bosaris-txt", "-o", str(tmp_path / "out.txt"),
                 "--overwrite"]) == 0
    assert (tmp_path / "out_key.txt").exists() and "existing" not in (
        tmp_path / "out_scores.txt").read_text()


def test_report_export_dir_is_checked_before_work(ds, tmp_path, capsys):
    err = user_error(["report", str(ds), "-o", str(tmp_path / "r.html"), "--export-dir",
                      str(ds / "charts")], capsys, tmp_path)
    assert "inside the input" in err and not (ds / "charts").exists()
    charts = tmp_path / "charts"
    charts.mkdir()
    (charts / "det.png").write_bytes(b"old")
    err = user_error(["report", str(ds), "-o", str(tmp_path / "r.html"), "--export-dir",
                      str(charts)], capsys, tmp_path)
    assert "already holds charts" in err and "--overwrite" in err
    assert not (tmp_path / "r.html").exists() and (charts / "det.png").read_bytes() == b"old"


# --- synth arguments ---------------------------------------------------------------------------
@pytest.mark.parametrize("args,needle", [
    (["--trials", "0"], "--trials"),
    (["--trials", "-5"], "--trials"),
    (["--systems", "0"], "--systems"),
    (["--systems", "99"], "--systems"),
    (["--chunk-trials", "0"], "--chunk-trials"),
    (["--seed", "-1"], "--seed"),
    (["--target-rate", "1.5"], "--target-rate"),
    (["--target-rate", "0"], "--target-rate"),
    (["--conditions", "0"], "--conditions"),
    (["--partition-by", "nosuch"], "--partition-by"),
])
def test_synth_argument_checks(args, needle, tmp_path, capsys):
    err = user_error(["synth", str(tmp_path / "out"), *args], capsys, tmp_path)
    assert needle in err


def test_synth_refuses_an_existing_output_first(ds, capsys):
    assert "already exists" in user_error(["synth", str(ds), "--trials", "10"], capsys,
                                          ds.parent)


# --- warnings, units, progress -----------------------------------------------------------------
def test_warnings_are_one_clean_line(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 400
    df = pl.DataFrame({"model": [f"m{i}" for i in range(n)], "segment": "s",
                       "score": rng.normal(size=n), "label": np.arange(n) % 4 == 0,
                       "cond": ["a"] * (n - 3) + ["lonely"] * 3})
    df = df.with_columns(label=pl.when(pl.col("cond") == "lonely").then(False)
                         .otherwise(pl.col("label")))
    df.write_parquet(tmp_path / "t.parquet")
    assert main(["evaluate", str(tmp_path / "t.parquet"), "--by", "cond", "--format",
                 "json"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scoreframe: warning: "), err
    assert "lonely" in err and "warnings.warn" not in err and ".py:" not in err


def test_eer_is_shown_in_percent_as_in_the_report(ds, capsys):
    assert main(["evaluate", str(ds), "--format", "json"]) == 0
    eers = {g["system"]: g["eer"] for g in json.loads(capsys.readouterr().out)["groups"]}
    assert main(["evaluate", str(ds)]) == 0
    out = capsys.readouterr().out
    assert "eer (%)" in out
    for system, eer in eers.items():
        row = next(line for line in out.splitlines() if f" {system} " in line)
        assert f" {100 * eer:.2f} " in row
    from scoreframe.views.report import build_report, summary_html

    assert "EER (%)" in summary_html(build_report(ds))  # the report's header says the same


def test_line_progress_in_logs():
    buf = io.StringIO()
    with LineProgress(interval=0, stream=buf) as prog:
        t = prog.add_task("evaluating groups", total=10)
        for i in range(1, 11):
            prog.update(t, completed=i)
    lines = buf.getvalue().splitlines()
    assert lines[-1].startswith("scoreframe: evaluating groups 100% (10/10 done")
    assert all(re.match(r"scoreframe: evaluating groups \d+% \(\d+/10 done, \d+ s\)$", x)
               for x in lines)
    quiet = io.StringIO()
    with LineProgress(interval=3600, stream=quiet) as prog:
        t = prog.add_task("x", total=10)
        for i in range(1, 11):
            prog.update(t, completed=i)
    assert quiet.getvalue() == ""  # short runs print nothing


# --- info reads like the readers ---------------------------------------------------------------
def test_info_on_ru2009_with_trial_id(capsys):
    stats = json.loads((RU2009 / "stats.json").read_text())
    err = user_error(["info", str(RU2009)], capsys, RU2009)
    assert "duplicate trials" in err and "ru2009_evalita" in err
    assert main(["info", str(RU2009), "--trial-id", "model,mcond,segment"]) == 0
    out = capsys.readouterr().out
    assert f"{stats['rows']} rows" in out
    assert f"targets: {stats['targets']}, non-targets: {stats['nontargets']}" in out
    # the raw gzip table through the text reader, with a column mapping
    assert main(["info", str(RU2009 / "raw" / "ru.2009.table.gz"), "--from", "tsv",
                 "--columns", "segment=test,label=target", "--trial-id", "model", "mcond",
                 "segment", "--where", "gender = 'f'"]) == 0
    out = capsys.readouterr().out
    by_gender = {r["gender"]: r for r in stats["by_gender"]}
    assert f"targets: {by_gender['f']['targets']}, non-targets: " \
           f"{by_gender['f']['nontargets']}" in out


# --- fusion with named systems -----------------------------------------------------------------
def test_fuse_name_equals_path(splits, tmp_path, capsys):
    model = tmp_path / "f.json"
    assert main(["fuse", "train", f"a={splits / 'sys1_dev.parquet'}",
                 f"b={splits / 'sys2_dev.parquet'}", "-o", str(model)]) == 0
    assert set(json.loads(model.read_text())["weights"]) == {"a", "b"}
    out = tmp_path / "fused.parquet"
    assert main(["fuse", "apply", str(model), f"a={splits / 'sys1_eval.parquet'}",
                 f"b={splits / 'sys2_eval.parquet'}", "-o", str(out)]) == 0
    fused = pl.read_parquet(out)
    assert {"score_raw_a", "score_raw_b"} <= set(fused.columns)
    assert fused.height == scan_trials(splits / "sys1_eval.parquet").collect().height
    err = user_error(["fuse", "apply", str(model), f"a={splits / 'sys1_eval.parquet'}",
                      f"a={splits / 'sys2_eval.parquet'}", "-o", str(tmp_path / "x.parquet")],
                     capsys, tmp_path)
    assert "given twice" in err


def test_multiclass_fuse_name_equals_path(tmp_path):
    rng = np.random.default_rng(4)
    n, k = 600, 3
    y = rng.integers(0, k, n)
    ll = rng.normal(0, 1, (n, k))
    ll[np.arange(n), y] += 2.0
    classes = ("c0", "c1", "c2")
    seg = [f"t{i}" for i in range(n) for _ in range(k)]
    for name, noise in (("one", 0.5), ("two", 1.0)):
        pl.DataFrame({"segment": seg, "class": list(classes) * n,
                      "score": (ll + rng.normal(0, noise, (n, k))).ravel()}).write_parquet(
            tmp_path / f"scores_{name}.parquet")
    pl.DataFrame({"segment": [f"t{i}" for i in range(n)],
                  "class": [classes[j] for j in y]}).write_parquet(tmp_path / "truth.parquet")
    model = tmp_path / "mf.json"
    assert main(["multiclass", "fuse", "train", f"x={tmp_path / 'scores_one.parquet'}",
                 f"y={tmp_path / 'scores_two.parquet'}", "--truth",
                 str(tmp_path / "truth.parquet"), "-o", str(model)]) == 0
    assert set(json.loads(model.read_text())["weights"]) == {"x", "y"}
    assert main(["multiclass", "fuse", "apply", str(model),
                 f"x={tmp_path / 'scores_one.parquet'}", f"y={tmp_path / 'scores_two.parquet'}",
                 "-o", str(tmp_path / "out.parquet")]) == 0
    assert {"score_raw_x", "score_raw_y"} <= set(pl.read_parquet(tmp_path / "out.parquet").columns)


def test_other_list_options_give_back_their_positional(ds, tmp_path, capsys):
    assert main(["convert", "--partition-by", "system", "gender", str(ds), "-o",
                 str(tmp_path / "re")]) == 0
    assert sorted(p.name for p in (tmp_path / "re").iterdir()) == [
        "system=sys1", "system=sys2", "system=sys3"]
    assert (tmp_path / "re" / "system=sys1" / "gender=f").is_dir()
    assert main(["synth", "--partition-by", "system,channel", str(tmp_path / "s"),
                 "--trials", "300"]) == 0
    assert (tmp_path / "s" / "system=sys2" / "channel=tel").is_dir()
    capsys.readouterr()
    assert main(["synth", "--trials", "300"]) == 2
    assert "required: OUTPUT" in capsys.readouterr().err


def test_evaluate_table_lists_each_column_once(ds, capsys):
    assert main(["evaluate", str(ds), "--by", "channel", "--equalize-by", "duration"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "n_tar" in line)
    names = [c.strip() for c in re.split(r"[┃│|]", header) if c.strip()]
    assert len(names) == len(set(names)) and "eq_eer (%)" in names and "eer (%)" in names


def test_report_export_refuses_to_overwrite_its_charts(ds, tmp_path, capsys):
    charts = tmp_path / "charts"
    assert main(["report", str(ds), "-o", str(tmp_path / "r.html"), "--export-dir",
                 str(charts), "--export-format", "svg"]) == 0
    first = {p.name: p.read_bytes() for p in charts.iterdir()}
    assert first and all(n.endswith(".svg") for n in first)
    err = user_error(["report", str(ds), "-o", str(tmp_path / "r2.html"), "--export-dir",
                      str(charts), "--export-format", "svg"], capsys, tmp_path)
    assert "already holds charts" in err
    assert main(["report", str(ds), "-o", str(tmp_path / "r.html"), "--export-dir",
                 str(charts), "--export-format", "svg", "--overwrite"]) == 0
    assert set(p.name for p in charts.iterdir()) == set(first)


def test_multiclass_calibration_keeps_to_its_system(tmp_path, capsys):
    rng = np.random.default_rng(6)
    n, k = 300, 3
    y = rng.integers(0, k, n)
    classes = ("c0", "c1", "c2")
    frames = []
    for system, gain in (("s1", 1.0), ("s2", 3.0)):
        ll = rng.normal(0, 1, (n, k))
        ll[np.arange(n), y] += 2.0
        frames.append(pl.DataFrame({"system": system,
                                    "segment": [f"t{i}" for i in range(n) for _ in range(k)],
                                    "class": list(classes) * n, "score": gain * ll.ravel()}))
    frames[0].write_parquet(tmp_path / "s1.parquet")
    pl.concat(frames).write_parquet(tmp_path / "both.parquet")
    pl.DataFrame({"segment": [f"t{i}" for i in range(n)],
                  "class": [classes[j] for j in y]}).write_parquet(tmp_path / "truth.parquet")
    model = tmp_path / "m.json"
    assert main(["multiclass", "calibrate", "train", str(tmp_path / "s1.parquet"), "--truth",
                 str(tmp_path / "truth.parquet"), "-o", str(model)]) == 0
    argv = ["multiclass", "calibrate", "apply", str(model), str(tmp_path / "both.parquet"),
            "-o", str(tmp_path / "out.parquet")]
    err = user_error(argv, capsys, tmp_path)
    assert "s1" in err and "--allow-other-system" in err
    assert main([*argv, "--allow-other-system"]) == 0
    assert set(pl.read_parquet(tmp_path / "out.parquet")["system"]) == {"s1", "s2"}


def test_evaluate_takes_the_same_trial_id_as_info(capsys):
    stats = json.loads((RU2009 / "stats.json").read_text())
    assert "duplicate trials" in user_error(["evaluate", str(RU2009)], capsys, RU2009)
    assert main(["evaluate", str(RU2009), "--trial-id", "model,mcond,segment", "--by",
                 "gender", "--format", "json"]) == 0
    groups = {g["gender"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    for row in stats["by_gender"]:
        assert (groups[row["gender"]]["n_tar"], groups[row["gender"]]["n_non"]) == (
            row["targets"], row["nontargets"])


def test_convert_with_trial_id_records_it_for_later_reads(tmp_path, capsys):
    copy = tmp_path / "ru"
    assert "duplicate trials" in user_error(["convert", str(RU2009), "-o", str(copy)], capsys,
                                            tmp_path)
    assert main(["convert", str(RU2009), "--trial-id", "model,mcond,segment", "-o",
                 str(copy)]) == 0
    capsys.readouterr()
    assert main(["info", str(copy), "--trial-id", "model,mcond,segment"]) == 0
    assert main(["evaluate", str(copy), "--format", "json"]) == 0  # checked when written
    out = capsys.readouterr().out
    stats = json.loads((RU2009 / "stats.json").read_text())
    assert json.loads(out[out.index("{"):])["groups"][0]["n_tar"] == stats["targets"]


def test_report_with_trial_id(tmp_path, capsys):
    # --trial-id is the report's validate=[id columns], as evaluate's
    argv = ["report", str(RU2009), "-o", str(tmp_path / "r.html")]
    assert "duplicate trials on (model, segment)" in user_error(argv, capsys, tmp_path)
    argv[2:2] = ["--trial-id", "model,mcond,segment"]
    assert main(argv) == 0 and (tmp_path / "r.html").stat().st_size > 0


# --- NIST files, option names, dense HDF5 limit ------------------------------------------------

def test_nist_output_converts_back_from_tsv_names(ds, tmp_path, capsys):
    """NIST key + system output written by convert read back (recognized as NIST from their
    TSV headers, no --key-from) and align into the same trials and scores."""
    stem = tmp_path / "nist"
    assert main(["convert", str(ds), "--to", "nist", "-o", str(stem),
                 "--where", "system = 'sys1'"]) == 0
    key, sys_out = tmp_path / "nist_key.tsv", tmp_path / "nist_scores.tsv"
    assert "system" not in key.read_text().splitlines()[0].split("\t")
    back = tmp_path / "back.parquet"
    assert main(["convert", "--key", str(key), "--scores", str(sys_out), "-o", str(back)]) == 0
    cols = ["model", "segment", "label", "score"]
    want = scan_trials(ds).filter(pl.col("system") == "sys1").select(cols).collect()
    got = scan_trials(back).select(cols).collect()
    assert got.sort("model", "segment").equals(want.sort("model", "segment"))
    assert main(["info", str(key)]) == 0


def test_key_with_systems_and_scores_without(ds, tmp_path, capsys):
    key = tmp_path / "key.csv"
    scan_trials(ds).select("model", "segment", "label", "system").collect().write_csv(key)
    sc = tmp_path / "scores.csv"
    scan_trials(ds).filter(pl.col("system") == "sys1").select(
        "model", "segment", "score").collect().write_csv(sc)
    err = user_error(["convert", "--key", str(key), "--scores", str(sc), "-o",
                      str(tmp_path / "o.parquet")], capsys, tmp_path)
    assert "the key has a `system` column but the scores do not" in err


def test_library_option_names_are_shown_as_flags(ds, tmp_path, capsys):
    err = user_error(["evaluate", str(ds), "--p-target", "1.5"], capsys, tmp_path)
    assert "argument --p-target:" in err and "p_target" not in err  # checked while parsing
    err = user_error(["evaluate", str(ds), "--memory-limit", "3XB"], capsys, tmp_path)
    assert "argument --memory-limit:" in err


def test_max_dense_bytes_option(ds, tmp_path, capsys):
    out = tmp_path / "x.h5"
    base = ["convert", str(ds), "--where", "system = 'sys1'", "-o", str(out)]
    err = user_error([*base, "--max-dense-bytes", "10KB"], capsys, tmp_path)
    assert "dense matrix too large" in err and "--max-dense-bytes" in err
    user_error([*base, "--max-dense-bytes", "lots"], capsys, tmp_path)
    assert main([*base, "--max-dense-bytes", "none"]) == 0
    assert (tmp_path / "x_key.h5").exists() and (tmp_path / "x_scores.h5").exists()


def test_wide_tables_are_split_in_blocks_not_cut(ds, capsys, monkeypatch):
    """On a 60-column terminal every column name and every value is printed whole: the
    columns after the keys come in blocks that repeat the key columns."""
    from rich.console import Console

    from scoreframe.cli import console as cli_console

    buf = io.StringIO()
    monkeypatch.setattr(cli_console, "console", lambda: Console(width=60, file=buf))
    assert main(["evaluate", str(ds), "--by", "gender", "--p-target", "0.01"]) == 0
    text = buf.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 60
    for name in ("n_tar", "eer (%)", "min_cllr", "act_dcf_norm", "min_dcf_norm"):
        assert name in text
    res = json.loads(_run_json(ds, capsys))
    shown = {f"{r['cllr']:.4f}" for r in res["groups"]}
    assert shown <= set(re.findall(r"\d+\.\d{4}", text))
    headers = [line for line in text.splitlines() if "system" in line and "gender" in line]
    assert len(headers) >= 2  # the key columns repeated in each block


def _run_json(ds: Path, capsys) -> str:
    capsys.readouterr()
    assert main(["evaluate", str(ds), "--by", "gender", "--p-target", "0.01", "--format",
                 "json"]) == 0
    return capsys.readouterr().out


def test_query_with_no_rows_prints_an_empty_table(ds, tmp_path, capsys):
    sql = tmp_path / "none.sql"
    sql.write_text("select * from trials where score > 1e9")
    capsys.readouterr()
    assert main(["query", str(sql), str(ds)]) == 0
    out = capsys.readouterr().out
    assert "model" in out and "score" in out


# --- second review round: trust at the edges ----------------------------------------------------

def test_key_with_a_score_column_is_refused_by_align(tmp_path, capsys):
    key = tmp_path / "k.csv"
    key.write_text("model,segment,label,score\nm1,s1,target,9\nm1,s2,nontarget,9\n")
    sc = tmp_path / "s.csv"
    sc.write_text("model,segment,score\nm1,s1,2\nm1,s2,-1\n")
    err = user_error(["convert", "--key", str(key), "--scores", str(sc), "-o",
                      str(tmp_path / "o.csv")], capsys, tmp_path)
    assert "the key already has a `score` column" in err


def test_nist_output_refuses_reserved_metadata_names(tmp_path, capsys):
    src = tmp_path / "t.csv"
    src.write_text("model,segment,score,label,LLR\nm1,s1,2,target,-3\nm1,s2,-1,nontarget,4\n")
    err = user_error(["convert", str(src), "--to", "nist", "-o", str(tmp_path / "n")], capsys,
                     tmp_path)
    assert "NIST files reserve" in err and "LLR" in err


def test_multi_member_gzip_is_sniffed_across_members(tmp_path, capsys):
    import gzip

    text = b"m1 s1 1\nm1 s2 0\nm2 s1 0\nm2 s2 1\n"
    path = tmp_path / "mm.scores.gz"
    path.write_bytes(gzip.compress(b"") + gzip.compress(text))
    capsys.readouterr()
    assert main(["info", str(path)]) == 0
    assert "score: Float64" in capsys.readouterr().out


def test_report_priors_are_checked_before_anything_is_written(ds, tmp_path, capsys):
    capsys.readouterr()
    assert main(["calibrate", "train", str(ds), "--where", "system = 'sys1'",
                 "--report-p-target", "5", "-o", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--report-p-target" in err and "(0, 1)" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("text", ["", "-- a comment only\n"])
def test_sql_file_without_a_query(ds, tmp_path, capsys, text):
    sql = tmp_path / "e.sql"
    sql.write_text(text)
    err = user_error(["query", str(sql), str(ds)], capsys, tmp_path)
    assert "returns no table" in err and "e.sql" in err


def test_missing_spill_directory(ds, tmp_path, capsys):
    err = user_error(["evaluate", str(ds), "--memory-limit", "64KB", "--spill-dir",
                      str(tmp_path / "nope")], capsys, tmp_path)
    assert "spill directory does not exist" in err


def test_conditions_read_as_text_keep_leading_zeros(tmp_path, capsys):
    """`--by sess` over a CSV whose sess values are "01" and "1": two conditions, not one."""
    rows = ["model,segment,score,label,sess"] + [
        f"m{i},s{i},{i % 5 - 2 + (i % 2) * 1.5},{'target' if i % 2 else 'nontarget'},"
        f"{'01' if i < 20 else '1'}" for i in range(40)]
    path = tmp_path / "sess.csv"
    path.write_text("\n".join(rows) + "\n")
    capsys.readouterr()
    assert main(["evaluate", str(path), "--by", "sess", "--format", "csv"]) == 0
    got = pl.read_csv(io.StringIO(capsys.readouterr().out), schema_overrides={"sess": pl.String})
    assert got["sess"].to_list() == ["01", "1", "all"] and got["n_tar"].to_list() == [10, 10, 20]


def test_a_column_named_twice(ds, capsys):
    capsys.readouterr()
    assert main(["evaluate", str(ds), "--by", "gender,gender", "--trial-id", "model", "model",
                 "segment", "system", "--format", "csv"]) == 0
    got = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert got.columns[:2] == ["system", "gender"] and got.height == 9


def test_json_output_file_is_announced(ds, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "r.json"
    assert main(["evaluate", str(ds), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out and json.loads(out.read_text())


def test_interval_options_need_bootstrap(ds, tmp_path, capsys):
    err = user_error(["evaluate", str(ds), "--ci", "0.9"], capsys, tmp_path)
    assert "--ci" in err and "--bootstrap" in err


def test_before_after_rates_in_percent_with_two_decimals(ds, tmp_path, capsys):
    capsys.readouterr()
    assert main(["calibrate", "train", str(ds), "--where", "system = 'sys1'", "-o",
                 str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "before" in line and "│" in line]
    eer = float(rows[0].split("│")[6])
    capsys.readouterr()
    assert main(["evaluate", str(ds), "--where", "system = 'sys1'", "--format", "json"]) == 0
    want = json.loads(capsys.readouterr().out)["groups"][0]["eer"]
    assert f"{eer:.2f}" == f"{100 * want:.2f}" and re.search(r"\d+\.\d\d\b", rows[0])
