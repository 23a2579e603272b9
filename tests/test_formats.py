"""The format registry, VoxCeleb and headerless lists, and one read path for library and CLI."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import scoreframe as sf
from scoreframe import io as sio
from scoreframe.cli import main
from scoreframe.errors import AlignmentError, FormatError, ScoreframeError, UsageError


@pytest.fixture
def trials() -> pl.DataFrame:
    return pl.concat(sf.synth_chunks(1500, n_systems=1, seed=7)).select(
        "model", "segment", "score", "label")


def _cli_csv(tmp_path: Path, args: list[str], name: str) -> pl.DataFrame:
    out = tmp_path / name
    assert main([*args, "-o", str(out)]) == 0
    return pl.read_csv(out)


# ------------------------------------------------------------------- the registry
def _read_pipe(path: Path, options: sio.ReadOptions) -> pl.DataFrame:
    df = pl.read_csv(path, separator="|", has_header=False,
                     new_columns=["model", "segment", "score", "label"])
    return df.with_columns(pl.col("score").cast(pl.Float64), pl.col("label") == "T")


def _write_pipe(data: pl.DataFrame, path: Path, *, kind: str, overwrite: bool,
                **_: object) -> None:
    data.select("model", "segment", "score",
                pl.when(pl.col("label")).then(pl.lit("T")).otherwise(pl.lit("F"))).write_csv(
        path, separator="|", include_header=False)


@pytest.fixture
def pipe_format():
    fmt = sio.register_format(sio.Format("pipe-test", "model|segment|score|T/F lines",
                                         _read_pipe, _write_pipe, suffixes=(".pipetest",)))
    yield fmt
    sio._formats._REGISTRY.pop("pipe-test")  # noqa: SLF001 (the test's own entry)


def test_a_registered_format_reaches_the_library_and_the_cli(tmp_path, trials, pipe_format):
    path = tmp_path / "t.pipetest"
    sio.write_any(trials, path, fmt="pipe-test", kind="trials")
    assert "pipe-test" in sio.format_names()
    assert sio.guess_format(path) == "pipe-test"
    assert sio.read_any(path).equals(trials)
    by_path = sf.evaluate(path)  # library: by path, format guessed from the suffix
    assert by_path.equals(sf.evaluate(trials))
    cli = _cli_csv(tmp_path, ["evaluate", str(path), "--from", "pipe-test"], "r.csv")
    assert cli["eer"][0] == by_path["eer"][0]
    assert cli["cllr"][0] == by_path["cllr"][0]
    # ... and the convert command writes it (its --to choices come from the registry)
    assert main(["convert", str(path), "--to", "pipe-test", "-o",
                 str(tmp_path / "back.pipetest")]) == 0
    assert sio.read_any(tmp_path / "back.pipetest").equals(trials)


def test_registering_a_name_twice_is_an_error(pipe_format):
    with pytest.raises(ScoreframeError, match="registered already"):
        sio.register_format(pipe_format)


def test_unknown_format_lists_the_registered_ones(tmp_path):
    with pytest.raises(FormatError, match="bosaris-txt") as exc:
        sio.read_any(tmp_path / "x.txt", fmt="nope")
    assert "voxceleb" in str(exc.value)


# ------------------------------------------------------------------- VoxCeleb lists
def test_voxceleb_list_is_sniffed_read_and_written(tmp_path, trials):
    path = tmp_path / "veri_test2.txt"
    path.write_text("1 id10270/x.wav id10270/y.wav\n0 id10270/x.wav id10300/z.wav\n")
    assert sio.guess_format(path) == "voxceleb"
    df = sio.read_any(path)
    assert df.columns == ["model", "segment", "label"]
    assert df["label"].to_list() == [True, False]
    assert df["segment"].to_list() == ["id10270/y.wav", "id10300/z.wav"]
    out = tmp_path / "list.txt"
    sio.write_any(trials, out, fmt="voxceleb", kind="key")
    first = out.read_text().splitlines()[0].split(" ")
    assert first[0] in ("0", "1") and len(first) == 3
    back = sio.read_any(out)
    assert back.equals(trials.select("model", "segment", "label"))


def test_a_bosaris_key_with_numeric_model_names_is_not_voxceleb(tmp_path):
    path = tmp_path / "key.txt"
    path.write_text("1 seg1 target\n0 seg2 nontarget\n")
    assert sio.guess_format(path) == "bosaris-txt"
    assert sio.read_any(path)["model"].to_list() == ["1", "0"]


def test_voxceleb_list_with_a_bad_label_names_the_line(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("1 a b\n0 a c\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 a b\n2 a c\n")
    with pytest.raises(ScoreframeError, match="line 2"):
        sio.read_any(bad, fmt="voxceleb")


# ------------------------------------------------------------------- headerless lists
def test_headerless_list_in_any_order(tmp_path, trials):
    path = tmp_path / "l.lst"
    trials.select("score", "label", "segment", "model").with_columns(
        pl.col("label").cast(pl.Int8)).write_csv(path, separator=" ", include_header=False)
    df = sio.read_any(path, fmt="list", order=["score", "label", "segment", "model"])
    assert df.select(trials.columns).equals(trials)
    lazy = sio.load_trials(path, fmt="list", order=["score", "label", "segment", "model"])
    assert sf.evaluate(lazy).equals(sf.evaluate(trials))
    cli = _cli_csv(tmp_path, ["evaluate", str(path), "--from", "list", "--column-order",
                              "score", "label", "segment", "model"], "r.csv")
    assert cli["eer"][0] == sf.evaluate(trials)["eer"][0]


@pytest.mark.parametrize("order,match", [(None, "column order"),
                                         (["score", "label"], "bad column order"),
                                         (["model", "model", "segment"], "bad column order")])
def test_headerless_list_needs_a_valid_order(tmp_path, order, match):
    path = tmp_path / "l.lst"
    path.write_text("a b 1\n")
    with pytest.raises(ScoreframeError, match=match):
        sio.read_any(path, fmt="list", order=order)


def test_headerless_list_without_order_is_one_cli_line(tmp_path, capsys):
    path = tmp_path / "l.lst"
    path.write_text("a b 1\n")
    assert main(["info", str(path), "--from", "list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--column-order" in err[0] and "l.lst" in err[0]


# ------------------------------------------------------------------- one read path
def test_library_reads_every_format_by_path_as_the_cli_does(tmp_path, trials):
    tsv = tmp_path / "t.tsv"
    trials.write_csv(tsv, separator="\t")
    lib = sf.evaluate(str(tsv))
    assert lib.equals(sf.evaluate(trials))
    cli = _cli_csv(tmp_path, ["evaluate", str(tsv)], "r.csv")
    assert cli["min_cllr"][0] == lib["min_cllr"][0]


def test_a_path_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        sf.evaluate(str(tmp_path / "missing.tsv"))


def test_evaluate_key_and_scores_equals_convert_then_evaluate(tmp_path, trials):
    key, scores = tmp_path / "key.txt", tmp_path / "scores.txt"
    sio.write_text_trials(trials, key, "key")
    sio.write_text_trials(trials, scores, "scores")
    direct = _cli_csv(tmp_path, ["evaluate", "--key", str(key), "--scores", str(scores)],
                      "direct.csv")
    assert main(["convert", "--key", str(key), "--scores", str(scores), "-o",
                 str(tmp_path / "ds")]) == 0
    converted = _cli_csv(tmp_path, ["evaluate", str(tmp_path / "ds")], "conv.csv")
    assert direct.equals(converted)
    assert sf.evaluate(sf.align(key, scores)).select("eer", "cllr").rows() == \
        direct.select("eer", "cllr").rows()


def test_key_and_scores_that_do_not_align_are_an_error(tmp_path, trials, capsys):
    key, scores = tmp_path / "key.txt", tmp_path / "scores.txt"
    sio.write_text_trials(trials, key, "key")
    sio.write_text_trials(trials.slice(0, 1000), scores, "scores")
    with pytest.raises(AlignmentError, match="do not align"):
        sf.align(key, scores).collect()
    assert main(["evaluate", "--key", str(key), "--scores", str(scores)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "align" in err[0]


@pytest.mark.parametrize("args,msg", [
    (["--key", "K"], "--key and --scores go together"),
    (["--scores", "S"], "--key and --scores go together"),
    (["DS", "--key", "K", "--scores", "S"], "not both"),
])
def test_key_scores_usage_errors(args, msg, capsys):
    assert main(["evaluate", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


def test_parquet_with_other_column_names_reads_with_columns(tmp_path, trials):
    path = tmp_path / "renamed.parquet"
    trials.rename({"model": "enroll", "segment": "test", "score": "llr"}).write_parquet(path)
    cli = _cli_csv(tmp_path, ["evaluate", str(path), "--columns",
                              "model=enroll,segment=test,score=llr"], "r.csv")
    assert cli["eer"][0] == sf.evaluate(trials)["eer"][0]


# ------------------------------------------------------- read/scan/write_trials by registry
KIND_COLUMNS = {"key": ["model", "segment", "label"], "scores": ["model", "segment", "score"]}


@pytest.mark.parametrize("name", [n for n in sio.format_names(writable=True)
                                  if n in sio.format_names(readable=True)])
@pytest.mark.parametrize("kind", ["key", "scores"])
def test_every_registered_format_round_trips_by_path(tmp_path, trials, name, kind):
    """write_trials / read_trials / scan_trials dispatch on the registry for every format."""
    if name == "voxceleb" and kind == "scores":
        pytest.skip("a VoxCeleb list holds a key")
    data = trials.select(KIND_COLUMNS[kind])
    suffix = {"parquet": ".parquet", "bosaris-h5": ".h5", "nist": ".tsv", "csv": ".csv",
              "tsv": ".tsv", "kaldi": ""}.get(name, ".txt")
    path = tmp_path / (f"{kind}{suffix}" if name != "kaldi" else f"{kind}_trials")
    sio.write_trials(data, path, fmt=name)
    assert path.exists()
    key = ["model", "segment"]
    back = sio.read_trials(path, fmt=name, kind=kind).select(data.columns).sort(key)
    assert back.equals(data.sort(key)), name
    lazy = sio.scan_trials(path, fmt=name, kind=kind, where="model = 'm000000'").collect()
    assert lazy.select(data.columns).sort(key).equals(
        data.filter(pl.col("model") == "m000000").sort(key))


def test_write_trials_guesses_the_format_from_the_name(tmp_path, trials):
    sio.write_trials(trials.select("model", "segment", "score"), tmp_path / "s.h5")
    assert sio.guess_format(tmp_path / "s.h5") == "bosaris-h5"
    back = sio.read_trials(tmp_path / "s.h5").sort("model", "segment")
    assert back["score"].to_list() == trials.sort("model", "segment")["score"].to_list()
    sio.write_trials(trials, tmp_path / "ds")  # no suffix: a Parquet dataset directory
    assert (tmp_path / "ds").is_dir() and sio.read_trials(tmp_path / "ds").equals(trials)


def test_write_trials_refuses_an_option_the_format_does_not_take(tmp_path, trials):
    with pytest.raises(UsageError, match="partition_by") as info:
        sio.write_trials(trials, tmp_path / "t.csv", partition_by=["model"])
    assert info.value.parameter == "partition_by" and info.value.path == str(tmp_path / "t.csv")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------- the CLI maps attributes, not text
def test_the_cli_names_the_option_from_the_parameter_attribute_only():
    import argparse

    from scoreframe.cli.main import error_line

    parser = argparse.ArgumentParser()
    parser.add_argument("--p-target")
    ns = argparse.Namespace(parser=parser)
    # the attribute is set: the option is named as typed, whatever the wording
    err = ScoreframeError("the prior `p_target` must be in (0, 1)", parameter="p_target")
    assert "`--p-target`" in error_line(err, ns)
    # no attribute (a Polars error whose text looks like ours): the text is left as it is
    polars_err = pl.exceptions.ComputeError("bad `p_target`: from a UDF")
    assert "bad `p_target`" in error_line(polars_err, ns)
    # the library's own wording sets the attribute when the exception is made
    assert ScoreframeError("bad `ci`: expected a number in (0, 1)").parameter == "ci"
    assert ScoreframeError("bad `quality.W`").parameter is None
