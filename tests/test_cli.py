"""The command line end to end: convert, info, query, synth, evaluate, errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import BOSARIS

from scoreframe.cli import main
from scoreframe.io import read_any, scan_trials

KNS = BOSARIS / "kns"
QUERIES = Path(__file__).parents[1] / "queries"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "synth"
    assert main(["synth", str(out), "--trials", "20000", "--seed", "5",
                 "--partition-by", "system", "gender"]) == 0
    return out


def test_synth_and_info(dataset, capsys):
    assert scan_trials(dataset).select(pl.len()).collect().item() == 60_000
    assert main(["info", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert "60000 rows" in out and "by gender" in out and "targets: 6000" in out


def test_convert_text_to_parquet_to_h5_and_back(tmp_path, capsys):
    ds = tmp_path / "kns.parquet"
    assert main(["convert", "--key", str(KNS / "key.txt"), "--scores", str(KNS / "scores.txt"),
                 "-o", str(ds)]) == 0
    trials = pl.read_parquet(ds)
    assert trials.columns == ["model", "segment", "label", "score"] and trials.height == 9
    assert main(["convert", str(ds), "--to", "bosaris-h5", "-o", str(tmp_path / "kns.h5")]) == 0
    key = read_any(tmp_path / "kns_key.h5")
    scores = read_any(tmp_path / "kns_scores.h5")
    assert key.height == 9 and scores.height == 9
    assert main(["convert", "--key", str(tmp_path / "kns_key.h5"), "--scores",
                 str(tmp_path / "kns_scores.h5"), "--to", "bosaris-txt",
                 "-o", str(tmp_path / "back.txt")]) == 0
    back = read_any(tmp_path / "back_scores.txt", kind="scores").sort("model", "segment")
    orig = read_any(KNS / "scores.txt", kind="scores").sort("model", "segment")
    assert back.equals(orig)
    assert "wrote 9 trials rows" in capsys.readouterr().out


def test_convert_partitioned_and_kaldi(tmp_path, dataset):
    out = tmp_path / "tel"
    assert main(["convert", str(dataset), "--where", "channel = 'tel'", "--partition-by",
                 "channel", "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["channel=tel"]
    assert main(["convert", str(dataset), "--where", "system = 'sys1' and duration = 'short'",
                 "--to", "kaldi", "-o", str(tmp_path / "k.txt")]) == 0
    assert read_any(tmp_path / "k_key.txt", fmt="kaldi", kind="key")["label"].sum() > 0


def test_convert_reports_misalignment(tmp_path, capsys):
    scores = tmp_path / "s.txt"
    scores.write_text("m1 s1 2.5\nm9 s9 1.0\n")
    code = main(["convert", "--key", str(KNS / "key.txt"), "--scores", str(scores),
                 "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "8 key trial(s) with no score" in err and "1 score(s) with no key trial" in err
    assert not (tmp_path / "x.parquet").exists()
    assert main(["convert", "--key", str(KNS / "key.txt"), "--scores", str(scores),
                 "--missing", "drop", "--extra", "drop", "-o", str(tmp_path / "x.parquet")]) == 0
    assert pl.read_parquet(tmp_path / "x.parquet").height == 1


def test_convert_never_writes_into_its_input(dataset, capsys):
    assert main(["convert", str(dataset), "-o", str(dataset / "inside.parquet")]) == 2
    assert "would overwrite or sit inside an input" in capsys.readouterr().err


def test_query_command(dataset, tmp_path, capsys):
    assert main(["query", str(QUERIES / "per_gender_counts.sql"), str(dataset),
                 "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "system,gender,n_tar,n_non" and len(lines) == 7
    out = tmp_path / "q.parquet"
    assert main(["query", str(QUERIES / "top_nontargets.sql"), str(dataset), "--format",
                 "parquet", "-o", str(out)]) == 0
    assert pl.read_parquet(out).height == 60


def test_evaluate_json_shape(dataset, capsys):
    assert main(["evaluate", str(dataset), "--by", "gender", "--p-target", "0.01", "0.1",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["eer_method"] == "rocch" and doc["by"] == ["system", "gender"]
    g = doc["groups"][0]
    for k in ("gender", "n_tar", "n_non", "eer", "cllr", "min_cllr", "prbep", "dcf"):
        assert k in g
    d = g["dcf"][0]
    for k in ("p_target", "c_miss", "c_fa", "act_dcf", "act_dcf_norm", "min_dcf",
              "min_dcf_norm", "n_miss_min", "n_fa_min"):
        assert k in d
    assert [x["p_target"] for x in g["dcf"]] == [0.01, 0.1]
    assert {x["gender"] for x in doc["groups"]} == {"f", "m", "all"}


def test_evaluate_table_and_csv(dataset, tmp_path, capsys):
    assert main(["evaluate", str(dataset), "--by", "channel", "--eer-method", "nist",
                 "--equalize-by", "duration"]) == 0
    out = capsys.readouterr().out
    assert "EER method: nist" in out and "eq_eer" in out
    assert main(["evaluate", str(dataset), "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    assert pl.read_csv(tmp_path / "r.csv").height == 3


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "/no/such/dataset"], "no such file or directory"),
    (["evaluate", "{ds}", "--where", "bogus = 1"], "--where"),
    (["evaluate", "{ds}", "--p-target", "1.5"], "--p-target"),
    (["evaluate", "{ds}", "--by", "nosuch"], "`nosuch` named in by= / --by not found"),
    (["query", "/no/such.sql", "{ds}"], "no such SQL file"),
    (["convert", "-o", "x.parquet"], "nothing to convert"),
])
def test_user_errors_exit_2_with_one_line(argv, needle, dataset, capsys):
    argv = [a.replace("{ds}", str(dataset)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_no_traceback_in_a_real_process(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("m1 s1 target\nm1\n")
    proc = subprocess.run([sys.executable, "-m", "scoreframe", "convert", "--key", str(bad),
                           "-o", str(tmp_path / "o.parquet")], capture_output=True, text=True)
    assert proc.returncode == 2
    # the file and line first (the error's attributes), then the message
    assert re.match(r"scoreframe: error: `[^`]*bad\.txt` line 2: ragged BOSARIS text key line",
                    proc.stderr), proc.stderr
    assert proc.stderr.count("line 2") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_the_process_entry_leaves_out_full_collections_and_freezes_at_exit(tmp_path):
    """``run`` (``python -m scoreframe``, the console script) returns main's status with
    the full collections off and every object frozen for the exit; ``main`` leaves the
    collector alone (notebooks and tests call it)."""
    code = (
        "import gc, json, sys\n"
        "from scoreframe.cli import main, run\n"
        "before = gc.get_threshold()\n"
        "m = main(['--version'])\n"
        "after_main = (gc.get_threshold(), gc.get_freeze_count())\n"
        "r = run(['convert', '--key', sys.argv[1], '-o', sys.argv[2]])\n"
        "print(json.dumps([before, m, after_main, r, gc.get_threshold(),"
        " gc.get_freeze_count()]))\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("m1 s1 target\nm1\n")
    proc = subprocess.run([sys.executable, "-c", code, str(bad), str(tmp_path / "o.parquet")],
                          capture_output=True, text=True, check=True)
    before, m, (thr_main, frozen_main), r, thr_run, frozen_run = json.loads(
        proc.stdout.strip().splitlines()[-1])
    assert m == 0 and thr_main == before and frozen_main == 0
    assert r == 2 and "ragged" in proc.stderr  # the user error's status, as main gives it
    assert thr_run[:2] == before[:2] and thr_run[2] >= 1 << 30 and frozen_run > 1000
