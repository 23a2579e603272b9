"""``--join FILE --on COL`` on every command that reads trials (issue 21 item 6).

Each command is run on a dataset whose grouping column comes only from the joined metadata
table, and its output must show that column's values; a metadata table that misses a key, or
repeats one, must stop each command with exit 2, one line naming the row, and nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scoreframe as sf
from scoreframe.cli import main

ROOT = Path(__file__).parent
SASV = ROOT / "data" / "real" / "asvspoof5_fusion_dev" / "asvspoof5_fusion_dev.parquet"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("joins")
    df = pl.concat(sf.synth_chunks(3000, n_systems=2, seed=7))
    sf.write_trials(df, root / "ds")
    models = df.select("model").unique().sort("model").with_row_index("i").select(
        "model", age=pl.when(pl.col("i") % 2 == 0).then(pl.lit("old")).otherwise(pl.lit("young")))
    models.write_csv(root / "models.csv")
    models.slice(1).write_csv(root / "short.csv")  # misses the first model
    pl.concat([models, models.head(1).with_columns(age=pl.lit("other"))]).write_csv(
        root / "dup.csv")
    rng = np.random.default_rng(4)
    rows = []
    for p in range(60):
        m = -1 if p % 4 == 0 else int(rng.integers(0, 8))
        rows += [(f"p{p}", f"g{g}", float(np.round(rng.normal(2 if g == m else 0), 1)), g == m)
                 for g in range(8)]
    pl.DataFrame(rows, schema=["probe", "candidate", "score", "mate"], orient="row") \
        .write_parquet(root / "searches.parquet")
    probes = pl.DataFrame({"probe": [f"p{p}" for p in range(60)],
                           "age": ["old" if p % 2 else "young" for p in range(60)]})
    probes.write_csv(root / "probes.csv")
    probes.slice(1).write_csv(root / "probes_short.csv")
    pl.concat([probes, probes.head(1)]).write_csv(root / "probes_dup.csv")
    return {"root": root, "first_model": models["model"][0]}


def _commands(root: Path) -> dict[str, tuple[list[str], str, str]]:
    """name -> (argv before --join, output file, the check on it)."""
    ds = str(root / "ds")
    return {
        "evaluate": (["evaluate", ds, "--by", "age", "-o", "{out}.csv"], "csv", "age"),
        "compare": (["compare", ds, "--systems", "sys1", "sys2", "--by", "age", "-o",
                     "{out}.json"], "json", "age"),
        "report": (["report", ds, "--by", "age", "-o", "{out}.html"], "html", "age"),
        "differentials": (["differentials", ds, "--by", "age", "--fmr", "0.1", "-o",
                           "{out}.json"], "json", "age"),
        "info": (["info", ds], "stdout", "age"),
    }


def _run(argv: list[str], out: Path, capsys) -> tuple[int, str, str]:
    code = main([a.replace("{out}", str(out)) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("command", sorted(_commands(Path("."))))
def test_join_adds_the_metadata_columns(command, world, tmp_path, capsys):
    root = world["root"]
    argv, kind, column = _commands(root)[command]
    out = tmp_path / "out"
    code, text, err = _run([*argv, "--join", str(root / "models.csv"), "--on", "model"], out,
                           capsys)
    assert code == 0, err
    if kind == "stdout":
        assert column in text
        return
    written = out.with_suffix(f".{kind}").read_text()
    assert column in written and "young" in written and "old" in written


@pytest.mark.parametrize("command", sorted(_commands(Path("."))))
@pytest.mark.parametrize("table,match", [("short.csv", "trials without metadata"),
                                         ("dup.csv", "metadata keys are not unique")])
def test_a_missing_or_repeated_key_is_one_line_naming_it(command, table, match, world,
                                                        tmp_path, capsys):
    root = world["root"]
    argv, kind, _ = _commands(root)[command]
    out = tmp_path / "out"
    code, _, err = _run([*argv, "--join", str(root / table), "--on", "model"], out, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert match in lines[0] and world["first_model"] in lines[0] and table in lines[0]
    assert "Traceback" not in err and list(tmp_path.iterdir()) == []


def test_identify_joins_the_probes(world, tmp_path, capsys):
    root = world["root"]
    out = tmp_path / "i.json"
    argv = ["identify", str(root / "searches.parquet"), "--rank", "1", "--by", "age"]
    assert main([*argv, "--join", str(root / "probes.csv"), "--on", "probe", "-o",
                 str(out)]) == 0
    ages = {g["age"] for g in json.loads(out.read_text())["groups"]}
    assert {"old", "young"} <= ages
    for table, match in (("probes_short.csv", "trials without metadata"),
                         ("probes_dup.csv", "not unique")):
        capsys.readouterr()
        assert main([*argv, "--join", str(root / table), "--on", "probe", "-o",
                     str(tmp_path / "x.json")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and match in err[0] and "p0" in err[0], err
        assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(not SASV.exists(), reason="the ASVspoof 5 fusion set is not in tests/data")
def test_tandem_reads_the_joined_trials(tmp_path, capsys):
    df = pl.read_parquet(SASV).rename({"condition": "trial_type"})
    path = tmp_path / "sasv.parquet"
    df.write_parquet(path)
    models = df.select("model").unique().sort("model").with_columns(
        half=(pl.col("model").str.slice(1).cast(pl.Int64) % 2).cast(pl.String))
    models.write_csv(tmp_path / "models.csv")
    out = tmp_path / "t.json"
    assert main(["evaluate", str(path), "--spoof", "--tandem", "asv", "cm", "--by", "half",
                 "--join", str(tmp_path / "models.csv"), "--on", "model", "-o",
                 str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {g["half"] for g in doc["groups"]} == {"0", "1", "all"}
    assert doc["t_dcf"]["n_trials"] == df.filter(pl.col("system") == "asv").height
    models.slice(1).write_csv(tmp_path / "short.csv")
    capsys.readouterr()
    assert main(["evaluate", str(path), "--tandem", "asv", "cm", "--join",
                 str(tmp_path / "short.csv"), "--on", "model", "-o",
                 str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and models["model"][0] in err[0], err


def test_calibrate_and_fuse_join_metadata(world, tmp_path, capsys):
    """Train on a slice selected by a joined column; apply keeps the joined columns."""
    root = world["root"]
    join = ["--join", str(root / "models.csv"), "--on", "model"]
    model = tmp_path / "cal.json"
    assert main(["calibrate", "train", str(root / "ds"), "--system", "sys1", *join,
                 "--where", "age = 'old'", "-o", str(model)]) == 0
    trials = pl.read_parquet(root / "ds" / "**" / "*.parquet", hive_partitioning=True).join(
        pl.read_csv(root / "models.csv"), on="model")
    old = trials.filter((pl.col("age") == "old") & (pl.col("system") == "sys1"))
    training = json.loads(model.read_text())["training"]
    assert (training["n_tar"], training["n_non"]) == (old["label"].sum(),
                                                      old.height - old["label"].sum())
    out = tmp_path / "cal.parquet"
    assert main(["calibrate", "apply", str(model), str(root / "ds"), *join, "--where",
                 "system = 'sys1'", "-o", str(out)]) == 0
    assert set(pl.read_parquet(out)["age"]) == {"old", "young"}
    fused = tmp_path / "fuse.json"
    assert main(["fuse", "train", str(root / "ds"), *join, "--where", "age = 'young'",
                 "-o", str(fused)]) == 0
    assert json.loads(fused.read_text())["training"]["n_tar"] == trials.filter(
        (pl.col("age") == "young") & (pl.col("system") == "sys1"))["label"].sum()
    out = tmp_path / "fused.parquet"
    assert main(["fuse", "apply", str(fused), str(root / "ds"), *join, "-o", str(out)]) == 0
    assert "age" in pl.read_parquet(out).columns
    capsys.readouterr()
    bad = ["--join", str(root / "short.csv"), "--on", "model"]
    for argv in (["calibrate", "train", str(root / "ds"), "--system", "sys1", *bad, "-o",
                  str(tmp_path / "x.json")],
                 ["fuse", "apply", str(fused), str(root / "ds"), *bad, "-o",
                  str(tmp_path / "x.parquet")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and world["first_model"] in err[0] and "short.csv" in err[0], err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.parquet").exists()


def test_identify_reads_candidate_rows_from_a_query(world, tmp_path):
    root = world["root"]
    sql = tmp_path / "q.sql"
    sql.write_text("select t.*, p.age from trials t join probes p using (probe)")
    out = tmp_path / "i.json"
    assert main(["identify", str(root / "searches.parquet"), "--sql", str(sql), "--table",
                 f"probes={root / 'probes.csv'}", "--rank", "1", "--by", "age", "-o",
                 str(out)]) == 0
    direct = tmp_path / "d.json"
    assert main(["identify", str(root / "searches.parquet"), "--join", str(root / "probes.csv"),
                 "--on", "probe", "--rank", "1", "--by", "age", "-o", str(direct)]) == 0
    assert json.loads(out.read_text())["groups"] == json.loads(direct.read_text())["groups"]
