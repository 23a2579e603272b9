"""A catalogue of malformed inputs: every reader answers with one ScoreframeError naming the file.

Each case builds a small malformed file and says what the message must contain: the file name,
and the 1-based line (text), the row or the dataset (HDF5) where there is one. Most cases run
through the Python API (`pytest.raises(ScoreframeError)`, so any other exception fails the
test); a representative subset runs through the command line in a subprocess, asserting exit
status 2, exactly one stderr line, no traceback, the file named and no output left behind.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import polars as pl
import pytest

from scoreframe import io as sio
from scoreframe.errors import ScoreframeError
from scoreframe.frames.sql import query

Build = Callable[[Path], None]
QUERIES = Path(__file__).parents[1] / "queries"


@dataclass(frozen=True)
class Case:
    """One malformed input: file name, how to build it, how to read it, what to expect."""

    id: str
    name: str
    build: Build
    read: Callable[[Path], object]
    match: str
    line: int | None = None
    cli: tuple[str, ...] = ()  # CLI arguments ({} = the file), for the subprocess subset


def text(data: bytes | str) -> Build:
    raw = data.encode() if isinstance(data, str) else data

    def build(p: Path) -> None:
        p.write_bytes(raw)
    return build


def gz(data: str, *, cut: float | None = None, flip: bool = False) -> Build:
    def build(p: Path) -> None:
        blob = bytearray(gzip.compress(data.encode() * 50))
        if cut is not None:
            blob = blob[: int(len(blob) * cut)]
        if flip:
            for k in range(12, len(blob) - 8, 7):
                blob[k] ^= 0xFF
        p.write_bytes(bytes(blob))
    return build


def h5(**datasets: object) -> Build:
    def build(p: Path) -> None:
        with h5py.File(p, "w") as f:
            for name, value in datasets.items():
                if isinstance(value, str) and value == "GROUP":
                    f.create_group(name.replace("__", "/"))
                elif isinstance(value, tuple):
                    f.create_dataset(name.replace("__", "/"), data=value[0], dtype=value[1])
                else:
                    f.create_dataset(name.replace("__", "/"), data=value)
    return build


def parquet(df: pl.DataFrame) -> Build:
    def build(p: Path) -> None:
        df.write_parquet(p)
    return build


def hive(parts: dict[str, pl.DataFrame]) -> Build:
    def build(p: Path) -> None:
        for sub, df in parts.items():
            (p / sub).mkdir(parents=True)
            df.write_parquet(p / sub / "part-0.parquet")
    return build


def truncated(build: Build, frac: float = 0.5) -> Build:
    def wrapped(p: Path) -> None:
        build(p)
        p.write_bytes(p.read_bytes()[: int(p.stat().st_size * frac)])
    return wrapped


def directory(p: Path) -> None:
    p.mkdir()


def nothing(p: Path) -> None:
    """The file does not exist."""


R, C = np.array([b"m1", b"m2"]), np.array([b"s1", b"s2"])
ONES = np.ones((2, 2), dtype=np.uint8)
KEY_T = "m1 s1 target\nm1 s2 nontarget\n"
TRIALS = {"model": ["m1", "m1"], "segment": ["s1", "s2"], "score": [0.5, -1.0],
          "label": [True, False]}

key_txt, ndx_txt, scores_txt = sio.read_key_txt, sio.read_ndx_txt, sio.read_scores_txt
kaldi_t, kaldi_s = sio.read_kaldi_trials, sio.read_kaldi_scores
nist_k, nist_s, table, trials = (sio.read_nist_key, sio.read_nist_scores, sio.read_table,
                                 sio.read_trials)
bh5 = sio.read_bosaris_hdf5
NIST_H = "modelid\tsegmentid\tside\ttargettype\n"
NIST_SH = "modelid\tsegmentid\tside\tLLR\n"
CSV_H = "model,segment,score,label\n"
CONVERT = ("convert", "{}", "-o", "{out}")
KEYCONV = ("convert", "--key", "{}", "-o", "{out}")
SCCONV = ("convert", "--scores", "{}", "-o", "{out}")

CASES = [
    # BOSARIS text key / ndx / scores
    Case("key-short-row", "key.txt", text("m1 s1 target\nm1 s2\n"), key_txt,
         r"ragged.*expected 3 fields", 2, KEYCONV),
    Case("key-long-row", "key.txt", text("m1 s1 target\nm1 s2 target extra\n"), key_txt,
         r"got 4 field", 2),
    Case("key-bad-label", "key.txt", text("m1 s1 target\nm1 s2 maybe\n"), key_txt,
         r"label.*'maybe'", 2, KEYCONV),
    Case("key-empty-file", "key.txt", text(""), key_txt, r"no key rows"),
    Case("key-blank-lines-only", "key.txt", text("\n  \n\t\n"), key_txt, r"no key rows"),
    Case("key-invalid-utf8", "key.txt", text(b"m1 s1 target\nm1 s\xff2 nontarget\n"), key_txt,
         r"invalid UTF-8", 2, KEYCONV),
    Case("key-nul-byte", "key.txt", text(b"m1 s\x001 target\n"), key_txt,
         r"control character", 1, CONVERT),
    Case("key-latin1-sniffed", "key.txt", text(b"m\xe91 s1 target\n"), sio.read_any,
         r"invalid UTF-8", 1, CONVERT),
    Case("key-gz-truncated-sniffed", "key.txt.gz", gz(KEY_T, cut=0.7), sio.read_any,
         r"truncated gzip", None, CONVERT),
    Case("nist-sniffed-latin1", "sys.tsv", text(b"modelid\tsegmentid\tside\tLLR\n\xe9\tb\ta\t1\n"),
         lambda p: sio.read_any(p, fmt="nist"), r"invalid UTF-8", 2,
         ("convert", "{}", "--from", "nist", "-o", "{out}")),
    Case("key-escape-byte", "key.txt", text(b"m1 s1 target\nm\x1b2 s2 target\n"), key_txt,
         r"control character", 2),
    Case("key-unit-separator", "key.txt", text(b"m1 s1 target\nm2\x1fs2 target\n"), key_txt,
         r"control character", 2),
    Case("key-cr-inside-line", "key.txt", text(b"m1 s1\rtarget\n"), key_txt,
         r"control character", 1),
    Case("key-duplicate-trial", "key.txt", text("m1 s1 target\nm1 s2 target\nm1 s1 target\n"),
         key_txt, r"duplicate trials.*first at line 1", None, KEYCONV),
    Case("key-truncated-gzip", "key.txt.gz", gz(KEY_T, cut=0.6), key_txt, r"truncated gzip",
         None, KEYCONV),
    Case("key-corrupt-gzip", "key.txt.gz", gz(KEY_T, flip=True), key_txt, r"gzip"),
    Case("key-is-directory", "key.txt", directory, key_txt, r"not a file"),
    Case("key-missing-file", "key.txt", nothing, key_txt, r"no such file", None, KEYCONV),
    Case("key-binary-garbage", "key.txt", text(bytes(range(256)) * 4), key_txt,
         r"control character", 1),
    Case("ndx-three-fields", "ndx.txt", text("m1 s1 target\n"), ndx_txt,
         r"expected 2 fields", 1),
    Case("ndx-one-field", "ndx.txt", text("m1 s1\nm2\n"), ndx_txt, r"got 1 field", 2),
    Case("scores-not-a-number", "scores.txt", text("m1 s1 0.5\nm1 s2 abc\n"), scores_txt,
         r"bad score.*'abc'", 2, SCCONV),
    Case("scores-decimal-comma", "scores.txt", text("m1 s1 0,5\n"), scores_txt,
         r"'0,5'", 1),
    Case("scores-nan", "scores.txt", text("m1 s1 0.5\nm1 s2 nan\n"), scores_txt,
         r"NaN", 2, SCCONV),
    Case("scores-missing-score", "scores.txt", text("m1 s1 0.5\nm1 s2\n"), scores_txt,
         r"ragged", 2),
    Case("scores-duplicate", "scores.txt", text("m1 s1 0.5\nm1 s1 0.7\n"), scores_txt,
         r"duplicate trials", None),
    # Kaldi
    Case("kaldi-trials-short", "trials", text("u1 u2 target\nu1 u3\n"), kaldi_t,
         r"Kaldi key line.*expected 3", 2, ("convert", "--key", "{}", "--key-from", "kaldi",
                                            "-o", "{out}")),
    Case("kaldi-trials-bad-label", "trials", text("u1 u2 tgt\n"), kaldi_t, r"'tgt'", 1),
    Case("kaldi-scores-four-fields", "scores", text("u1 u2 1.0 x\n"), kaldi_s,
         r"got 4 field", 1),
    Case("kaldi-scores-bad-number", "scores", text("u1 u2 1.0\nu1 u3 1e\n"), kaldi_s,
         r"'1e'", 2),
    # NIST SRE TSV
    Case("nist-key-missing-column", "key.tsv", text("modelid\tsegmentid\tside\n1\ta\ta\n"),
         nist_k, r"missing NIST key column.*targettype", None),
    Case("nist-key-short-row", "key.tsv",
         text(NIST_H + "1\ta\ta\ttarget\n1\tb\tnontarget\n"), nist_k,
         r"expected 4 fields.*got 3", 3, ("convert", "--key", "{}", "--key-from", "nist", "-o",
                                          "{out}")),
    Case("nist-key-long-row", "key.tsv", text(NIST_H + "1\ta\ta\ttarget\tx\n"), nist_k,
         r"got 5 field", 2),
    Case("nist-key-bad-label", "key.tsv", text(NIST_H + "1\ta\ta\ttarget\n1\tb\ta\tyes\n"),
         nist_k, r"'yes' \(line 3\)", 3),
    Case("nist-key-header-only", "key.tsv", text(NIST_H), nist_k, r"no key rows"),
    Case("nist-key-empty", "key.tsv", text(""), nist_k, r"no header line", 1),
    Case("nist-key-invalid-utf8", "key.tsv", text(NIST_H.encode() + b"1\ta\xe9\ta\ttarget\n"),
         nist_k, r"invalid UTF-8", 2),
    Case("nist-key-duplicate-header", "key.tsv",
         text("modelid\tsegmentid\tside\ttargettype\tside\n1\ta\ta\ttarget\tb\n"), nist_k,
         r"duplicate column names.*side", 1),
    Case("nist-scores-bad-llr", "sys.tsv", text(NIST_SH + "1\ta\ta\t2.5\n1\tb\ta\tx\n"),
         nist_s, r"`score`.*'x'", 3),
    Case("nist-scores-nan", "sys.tsv", text(NIST_SH + "1\ta\ta\tNaN\n"), nist_s, r"NaN", 2),
    # generic CSV / TSV / gz
    Case("csv-short-row-shifts", "t.csv", text(CSV_H + "m1,s1,0.5,1\nm1,-0.4,0\n"), table,
         r"expected 4 fields.*got 3", 3, CONVERT),
    Case("csv-long-row", "t.csv", text(CSV_H + "m1,s1,0.5,1,9\n"), table, r"got 5 field", 2,
         CONVERT),
    Case("csv-unbalanced-quote", "t.csv", text(CSV_H + 'm1,"s1,0.5,1\n'), table,
         r"unbalanced quote", 2),
    Case("csv-quoted-short-row", "t.csv", text(CSV_H + '"m,1",s1,0.5\n'), table,
         r"got 3 field", 2),
    Case("csv-header-only", "t.csv", text(CSV_H), table, r"no trials rows", None, CONVERT),
    Case("csv-empty", "t.csv", text(""), table, r"no header line", 1, CONVERT),
    Case("csv-blank-header", "t.csv", text("\n" + CSV_H + "m1,s1,1,1\n"), table,
         r"no header line", 1),
    Case("csv-bad-score", "t.csv", text(CSV_H + "m1,s1,1,1\nm1,s2,1,0\nm1,s3,abc,0\n"), table,
         r"`score`.*'abc'", 4, CONVERT),
    Case("csv-bad-label", "t.csv", text(CSV_H + "m1,s1,1,2\n"), table, r"e.g. 2 \(line 2\)", 2,
         CONVERT),
    Case("csv-null-model", "t.csv", text(CSV_H + "m1,s1,1,1\n,s2,1,0\n"), table,
         r"`model` has missing values", None),
    Case("csv-missing-column", "t.csv", text("model,score\nm1,1\n"), table,
         r"missing column.*`segment`", None, ("info", "{}")),
    Case("csv-duplicate", "t.csv", text(CSV_H + "m1,s1,1,1\nm1,s1,2,1\n"), table,
         r"duplicate trials", None, ("evaluate", "{}")),
    Case("csv-nul-byte", "t.csv", text(CSV_H.encode() + b"m1,s\x001,1,1\n"), table,
         r"control character", 2, CONVERT),
    Case("csv-latin1", "t.csv", text(CSV_H.encode() + b"m1,s\xe91,1,1\n"), table,
         r"invalid UTF-8", 2),
    Case("tsv-short-row", "t.tsv", text("model\tsegment\tscore\nm1\ts1\n"), table,
         r"got 2 field", 2, CONVERT),
    Case("tsv-gz-truncated", "t.tsv.gz", gz("model\tsegment\tscore\nm1\ts1\t1\n", cut=0.5),
         table, r"truncated gzip", None, CONVERT),
    Case("csv-gz-corrupt", "t.csv.gz", gz(CSV_H + "m1,s1,1,1\n", flip=True), table, r"gzip",
         None, CONVERT),
    # Parquet file / directory
    Case("parquet-not-parquet", "t.parquet", text("model,segment\n"), trials,
         r"cannot read parquet", None, ("info", "{}")),
    Case("parquet-truncated", "t.parquet", truncated(parquet(pl.DataFrame(TRIALS))), trials,
         r"cannot read parquet", None, ("evaluate", "{}")),
    Case("parquet-empty-dir", "ds", directory, trials, r"no parquet files", None,
         ("info", "{}")),
    Case("parquet-string-score", "t.parquet",
         parquet(pl.DataFrame({**TRIALS, "score": ["1", "2"]})), trials,
         r"`score` must be numeric", None, CONVERT),
    Case("parquet-nan-score", "t.parquet",
         parquet(pl.DataFrame({**TRIALS, "score": [0.5, float("nan")]})), trials,
         r"NaN.*row\(s\) 1", None, ("evaluate", "{}")),
    Case("parquet-null-score", "t.parquet", parquet(pl.DataFrame({**TRIALS, "score": [0.5, None]})),
         trials, r"`score` has missing values", None),
    Case("parquet-duplicate", "t.parquet",
         parquet(pl.DataFrame({**TRIALS, "segment": ["s1", "s1"]})), trials,
         r"duplicate trials", None, ("evaluate", "{}")),
    Case("parquet-duplicate-across-partitions", "ds",
         hive({"gender=f": pl.DataFrame(TRIALS), "gender=m": pl.DataFrame(TRIALS)}), trials,
         r"duplicate trials", None),
    Case("parquet-bad-label", "t.parquet",
         parquet(pl.DataFrame({**TRIALS, "label": ["target", "tar"]})), trials,
         r"'tar' \(row 1\)", None, CONVERT),
    Case("parquet-bad-label-evaluate", "t.parquet",
         parquet(pl.DataFrame({**TRIALS, "label": ["target", "tar"]})), trials,
         r"'tar' \(row 1\)", None, ("evaluate", "{}")),
    Case("parquet-bad-label-report", "t.parquet",
         parquet(pl.DataFrame({**TRIALS, "label": ["target", "tar"]})), trials,
         r"'tar' \(row 1\)", None, ("report", "{}", "-o", "{outdir}/r.html")),
    Case("csv-short-row-report", "t.csv", text(CSV_H + "m1,s1,0.5,1\nm1,-0.4,0\n"), table,
         r"expected 4 fields.*got 3", 3, ("report", "{}", "-o", "{outdir}/r.html")),
    Case("key-short-row-info", "key.txt", text("m1 s1 target\nm1 s2\n"), key_txt,
         r"ragged.*expected 3 fields", 2, ("info", "{}")),
    Case("parquet-zero-rows", "t.parquet", parquet(pl.DataFrame(TRIALS).head(0)), trials,
         r"no trials rows", None, ("evaluate", "{}")),
    Case("parquet-missing-segment", "t.parquet",
         parquet(pl.DataFrame(TRIALS).drop("segment")), trials, r"`segment`", None),
    Case("sql-not-parquet", "t.parquet", text("not parquet at all\n"),
         lambda p: query("select count(*) from trials", p), r"cannot read parquet", None,
         ("query", str(QUERIES / "per_gender_counts.sql"), "{}")),
    Case("table-parquet-truncated", "t.parquet", truncated(parquet(pl.DataFrame(TRIALS))),
         table, r"cannot read parquet"),
    # BOSARIS HDF5 key / ndx / scores
    Case("h5-string-scores", "s.h5", h5(scores=np.array([[b"1", b"2"], [b"3", b"4"]]),
                                         score_mask=ONES, ID__row_ids=R, ID__column_ids=C),
         bh5, r"dataset `/scores`.*expected numbers", None, SCCONV),
    Case("h5-non-utf8-names", "s.h5", h5(scores=np.ones((2, 2)), score_mask=ONES,
                                          ID__row_ids=np.array([b"m\xff", b"m2"]),
                                          ID__column_ids=C),
         bh5, r"not UTF-8.*`/ID/row_ids`", None, SCCONV),
    Case("h5-scalar-mask", "k.h5", h5(trial_mask=np.array(1, np.int8), ID__row_ids=R,
                                       ID__column_ids=C),
         bh5, r"`/trial_mask` does not match.*got shape \(\)", None, KEYCONV),
    Case("h5-2d-names", "k.h5", h5(trial_mask=np.ones((2, 2), np.int8),
                                    ID__row_ids=np.array([[b"a", b"b"], [b"c", b"d"]]),
                                    ID__column_ids=C),
         bh5, r"wrong shape.*`/ID/row_ids`", None),
    Case("h5-integer-names", "k.h5", h5(trial_mask=np.ones((2, 2), np.int8),
                                         ID__row_ids=np.array([1, 2]), ID__column_ids=C),
         bh5, r"not strings.*`/ID/row_ids`", None),
    Case("h5-wrong-shape", "s.h5", h5(scores=np.ones((2, 3)), score_mask=ONES, ID__row_ids=R,
                                       ID__column_ids=C),
         bh5, r"`/scores` does not match.*\(2, 3\)", None),
    Case("h5-not-hdf5", "k.h5", text("hello, world\n"), bh5, r"cannot open HDF5", None,
         KEYCONV),
    Case("h5-truncated", "k.h5", truncated(h5(trial_mask=np.ones((50, 50), np.int8),
                                              ID__row_ids=np.array([b"m%d" % i for i in range(50)]),
                                              ID__column_ids=np.array([b"s%d" % i
                                                                       for i in range(50)]))),
         bh5, r"HDF5", None, KEYCONV),
    Case("h5-empty", "k.h5", text(""), bh5, r"cannot open HDF5"),
    Case("h5-missing-dataset", "k.h5", h5(trial_mask=np.ones((2, 2), np.int8), ID__row_ids=R),
         bh5, r"missing dataset `/ID/column_ids`", None),
    Case("h5-group-not-dataset", "s.h5", h5(scores="GROUP", score_mask=ONES, ID__row_ids=R,
                                             ID__column_ids=C),
         bh5, r"`/scores` is not a dataset", None),
    Case("h5-target-and-nontarget", "k.h5", h5(target_mask=ONES, nontarget_mask=ONES,
                                                ID__row_ids=R, ID__column_ids=C),
         bh5, r"both target and non-target", None),
    Case("h5-repeated-names", "n.h5", h5(trial_mask=ONES, ID__row_ids=np.array([b"a", b"a"]),
                                          ID__column_ids=C),
         bh5, r"repeated names.*'a'", None),
    Case("h5-nan-scores", "s.h5", h5(scores=np.full((2, 2), np.nan), score_mask=ONES,
                                      ID__row_ids=R, ID__column_ids=C),
         bh5, r"`/scores`.*NaN", None, SCCONV),
    Case("h5-string-mask", "n.h5", h5(trial_mask=np.array([[b"1", b"0"], [b"0", b"1"]]),
                                       ID__row_ids=R, ID__column_ids=C),
         bh5, r"`/trial_mask`.*expected numbers", None),
    Case("h5-control-char-name", "k.h5", h5(trial_mask=np.ones((2, 2), np.int8),
                                             ID__row_ids=np.array([b"a\x07", b"b"]),
                                             ID__column_ids=C),
         bh5, r"control character", None),
]


def _build(tmp_path: Path, case: Case) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    path = d / case.name
    case.build(path)
    return path


#: Longest message (characters): a few hundred whatever the input (values are cut).
MAX_MESSAGE = 400


def _check_message(msg: str, case: Case, path: Path) -> None:
    """The file named exactly once, and the case's line (if any) exactly once."""
    # the name as a path component: after `/`, a backtick or the ellipsis of a shortened path
    named = re.findall(rf"[/`…]{re.escape(path.name)}(?![\w.-])", msg)
    assert len(named) == 1, f"file not named exactly once: {msg!r}"
    assert len(msg.removeprefix("scoreframe: error: ")) <= MAX_MESSAGE, msg
    if case.line is not None:
        said = re.findall(rf"\bline(?:\(s\))? {case.line}\b", msg)
        assert len(said) == 1, f"line {case.line} not named exactly once: {msg!r}"


def _check_attributes(exc: ScoreframeError, case: Case, path: Path) -> None:
    """The file (and line) the error is about are its attributes, not only words in its text."""
    assert exc.path is not None and Path(exc.path).name == path.name, (exc.path, str(exc))
    assert not re.search(rf"[/`…]{re.escape(path.name)}(?![\w.-])", exc.text), (
        f"the bare text repeats the file: {exc.text!r}")
    if case.line is not None and exc.line is not None:
        assert exc.line == case.line, (exc.line, str(exc))


def test_catalogue_is_large_and_ids_unique():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)
    assert sum(bool(c.cli) for c in CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_api(tmp_path: Path, case: Case) -> None:
    path = _build(tmp_path, case)
    before = sorted(p.name for p in path.parent.iterdir())
    with pytest.raises(ScoreframeError, match=case.match) as info:
        case.read(path)
    _check_message(str(info.value), case, path)
    _check_attributes(info.value, case, path)
    assert sorted(p.name for p in path.parent.iterdir()) == before  # inputs untouched


# --- well-formed inputs, bad options or outputs: the message still names the input file ---------
# (command line only; the message names the input, or the output it is about, and stays short)
def _cli_only(path: Path) -> object:
    raise AssertionError("a command-line case")


TWO = {**{k: v * 2 for k, v in TRIALS.items()}, "system": ["s1", "s1", "s2", "s2"]}
T = parquet(pl.DataFrame(TRIALS))
T2 = parquet(pl.DataFrame(TWO))


def beside(main: Build, **others: Build) -> Build:
    """Build ``main`` at the path and each of ``others`` (by file name) next to it."""
    def build(p: Path) -> None:
        main(p)
        for name, other in others.items():
            other(p.parent / name)
    return build


def fusion_model(n: int) -> Build:
    """A linear fusion model file of ``n`` systems (none of them in the data but s1)."""
    doc = {"format": "scoreframe-model", "version": 1, "method": "linear_fusion",
           "weights": {"s1": 1.0, **{f"sys{i}": 1.0 for i in range(n - 1)}}, "offset": 0.0,
           "p_target": 0.5, "objective": {"rule": "log", "alpha": 1.0, "beta": 1.0},
           "missing": "error", "quality": None, "system": None, "where": None,
           "training": {"n_tar": 1, "n_non": 1}}
    return text(json.dumps(doc))


BAD_WHERE = "score >"
OPTION_CASES = [Case(*c[:3], _cli_only, *c[3:]) for c in [  # type: ignore[misc]
    ("opt-where-syntax-evaluate", "t.parquet", T, r"--where", None,
     ("evaluate", "{}", "--where", BAD_WHERE)),
    ("opt-where-unknown-column", "t.parquet", T, r"nosuch", None,
     ("evaluate", "{}", "--where", "nosuch = 1")),
    ("opt-where-syntax-info", "t.parquet", T, r"--where", None,
     ("info", "{}", "--where", BAD_WHERE)),
    ("opt-where-syntax-convert", "t.parquet", T, r"--where", None,
     ("convert", "{}", "--where", BAD_WHERE, "-o", "{out}")),
    ("opt-where-syntax-report", "t.parquet", T, r"--where", None,
     ("report", "{}", "--where", BAD_WHERE, "-o", "{outdir}/r.html")),
    ("opt-where-syntax-compare", "t.parquet", T2, r"--where", None,
     ("compare", "{}", "--systems", "s1", "s2", "--where", BAD_WHERE)),
    ("opt-where-syntax-calibrate", "t.parquet", T, r"--where", None,
     ("calibrate", "train", "{}", "--where", BAD_WHERE, "-o", "{outdir}/m.json")),
    ("opt-p-target-evaluate", "t.parquet", T, r"--p-target.*\(0, 1\)", None,
     ("evaluate", "{}", "--p-target", "1.5")),
    ("opt-p-target-report", "t.parquet", T, r"--p-target", None,
     ("report", "{}", "--p-target", "1.5", "-o", "{outdir}/r.html")),
    ("opt-p-target-compare", "t.parquet", T2, r"--p-target", None,
     ("compare", "{}", "--systems", "s1", "s2", "--p-target", "1.5")),
    ("opt-p-target-calibrate", "t.parquet", T, r"--p-target", None,
     ("calibrate", "train", "{}", "--p-target", "1.5", "-o", "{outdir}/m.json")),
    ("opt-c-miss-negative", "t.parquet", T, r"--c-miss", None,
     ("evaluate", "{}", "--c-miss", "-1")),
    ("opt-ci-out-of-range", "t.parquet", T, r"--ci", None,
     ("evaluate", "{}", "--bootstrap", "10", "--ci", "2")),
    ("opt-memory-limit", "t.parquet", T, r"--memory-limit", None,
     ("evaluate", "{}", "--memory-limit", "lots")),
    ("opt-by-unknown", "t.parquet", T, r"`nosuch`", None, ("evaluate", "{}", "--by", "nosuch")),
    ("opt-systems-unknown", "t.parquet", T2, r"`zz`", None,
     ("compare", "{}", "--systems", "s1", "zz")),
    ("opt-objective", "t.parquet", T, r"objective", None,
     ("calibrate", "train", "{}", "--objective", "zzz", "-o", "{outdir}/m.json")),
    ("out-parent-is-file-evaluate", "blocker", beside(text("x"), **{"t.parquet": T}),
     r"is not a directory", None,
     ("evaluate", "{dir}/t.parquet", "-o", "{}/x.json")),
    ("out-parent-is-file-convert", "blocker", beside(text("x"), **{"t.parquet": T}),
     r"is not a directory", None, ("convert", "{dir}/t.parquet", "-o", "{}/x.parquet")),
    ("out-parent-is-file-calibrate", "blocker", beside(text("x"), **{"t.parquet": T}),
     r"is not a directory", None,
     ("calibrate", "train", "{dir}/t.parquet", "-o", "{}/m.json")),
    ("out-parent-is-file-report", "blocker", beside(text("x"), **{"t.parquet": T}),
     r"is not a directory", None, ("report", "{dir}/t.parquet", "-o", "{}/r.html")),
    ("out-parent-is-file-query", "blocker", beside(text("x"), **{"t.parquet": T}),
     r"is not a directory", None,
     ("query", str(QUERIES / "per_gender_counts.sql"), "{dir}/t.parquet", "-o", "{}/q.csv")),
    ("export-dir-is-file", "blocker", beside(text("x"), **{"t.parquet": T}), r"is a file",
     None, ("report", "{dir}/t.parquet", "-o", "{outdir}/r.html", "--export-dir", "{}")),
    ("model-not-json", "model.json", beside(text("{not json"), **{"t.parquet": T}),
     r"not valid JSON", None, ("calibrate", "apply", "{}", "{dir}/t.parquet", "-o", "{out}")),
    ("model-wrong-kind", "model.json", beside(fusion_model(2), **{"t.parquet": T}),
     r"linear_fusion model", None,
     ("calibrate", "apply", "{}", "{dir}/t.parquet", "-o", "{out}")),
    ("fusion-100000-weights", "fusion.json", beside(fusion_model(100_000), **{"t.parquet": T2}),
     r"lack systems.*100,000 in all", None,
     ("fuse", "apply", "{}", "{dir}/t.parquet", "-o", "{out}")),
    ("sql-syntax-error", "bad.sql", beside(text("selec nothing"), **{"t.parquet": T}),
     r"SQL", None, ("query", "{}", "{dir}/t.parquet")),
]]


def test_option_catalogue_is_large_and_ids_unique():
    assert len(OPTION_CASES) >= 22
    assert not {c.id for c in OPTION_CASES} & {c.id for c in CASES}


@pytest.mark.parametrize("case", OPTION_CASES, ids=[c.id for c in OPTION_CASES])
def test_cli_options_and_outputs(case: Case,
                                 cli_results: dict[str, tuple[Path, Path, object, str]]) -> None:
    """Exit 2, one line naming the file (at most MAX_MESSAGE characters), nothing written."""
    path, outdir, code, stderr = cli_results[case.id]
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and code == 2 and len(lines) == 1, (code, stderr)
    # a library error (`scoreframe: error:`) or a bad option value found while parsing
    # (`scoreframe evaluate: error: ... (usage: ...)`)
    prefix = re.match(r"scoreframe( [a-z ]+)?: error: ", lines[0])
    assert prefix, lines[0]
    _check_message(lines[0].removeprefix(prefix.group(0)), case, path)
    assert list(outdir.iterdir()) == [], "output or temporary left behind"
    assert re.search(case.match, stderr), stderr


BIN = Path(sys.executable).parent / "scoreframe"
CLI_CASES = [c for c in CASES if c.cli]
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}

# One interpreter runs every CLI case through `scoreframe.cli.main` (exit status and stderr as
# the console script gives them; an escaping exception is recorded as a traceback), so the
# catalogue costs one start-up instead of one per case. A few cases also run the real script.
DRIVER = """
import contextlib, io, json, sys, traceback
from scoreframe.cli.main import main
out = {}
for cid, argv in json.load(sys.stdin).items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            traceback.print_exc(file=err)
            code = "exception"
    out[cid] = [code, err.getvalue()]
print(json.dumps(out))
"""


def _argv(case: Case, path: Path, out: Path) -> list[str]:
    return [a.replace("{outdir}", str(out.parent)).replace("{out}", str(out))
            .replace("{dir}", str(path.parent)).replace("{}", str(path)) for a in case.cli]


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Build every CLI case's input, run them all in one subprocess, keep paths and results."""
    root = tmp_path_factory.mktemp("cli")
    jobs, where = {}, {}
    for case in [*CLI_CASES, *OPTION_CASES]:
        base = root / case.id
        base.mkdir()
        path = _build(base, case)
        (base / "out").mkdir()
        jobs[case.id] = _argv(case, path, base / "out" / "result.parquet")
        where[case.id] = (path, base / "out")
    res = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(jobs),
                         capture_output=True, text=True, timeout=600, env=ENV, cwd=root)
    assert res.returncode == 0, res.stderr
    results = json.loads(res.stdout.strip().splitlines()[-1])
    return {cid: (*where[cid], *results[cid]) for cid in jobs}


def _check_cli(case: Case, path: Path, outdir: Path, code: object, stderr: str) -> None:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert code == 2, (code, stderr)
    assert len(lines) == 1, stderr
    assert lines[0].startswith("scoreframe: error:"), lines[0]
    _check_message(lines[0], case, path)
    assert list(outdir.iterdir()) == [], "output or temporary left behind"


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_cli(case: Case, cli_results: dict[str, tuple[Path, Path, object, str]]) -> None:
    path, outdir, code, stderr = cli_results[case.id]
    _check_cli(case, path, outdir, code, stderr)


SCRIPT_CASES = ["csv-short-row-shifts", "h5-string-scores", "key-truncated-gzip",
                "parquet-duplicate"]


@pytest.mark.parametrize("cid", SCRIPT_CASES)
def test_console_script(tmp_path: Path, cid: str) -> None:
    """The installed `scoreframe` script itself: exit 2, one line, nothing left behind."""
    case = next(c for c in CASES if c.id == cid)
    path = _build(tmp_path, case)
    outdir = tmp_path / "out"
    outdir.mkdir()
    res = subprocess.run([str(BIN), *_argv(case, path, outdir / "result.parquet")],
                         capture_output=True, text=True, timeout=120, env=ENV, cwd=tmp_path)
    _check_cli(case, path, outdir, res.returncode, res.stderr)


# --- every registered format, from the registry: a format added with register_format joins ------
# the catalogue with no case of its own (docs/howto/add_format.md registers one and runs this)
#: Inputs no reader of any format accepts: (id, file contents), or None for "no such file".
REGISTRY_INPUTS: list[tuple[str, bytes | None]] = [
    ("missing", None),
    ("empty", b""),
    ("binary", bytes(range(256)) * 4),
    ("ragged", b"m1 s1 target extra words\nm2\n"),
]


def check_registered_format(tmp_path: Path, name: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """Every REGISTRY_INPUTS case, read as format ``name`` through the library and the CLI.

    The library (``read_trials(path, fmt=name)``) raises one ScoreframeError naming the file;
    the command line (``evaluate PATH --from NAME``, in this process so that a format
    registered by the caller is known) exits 2 with one line naming the file, leaving
    nothing behind.
    """
    from scoreframe.cli import main

    for cid, data in REGISTRY_INPUTS:
        d = tmp_path / f"{name}-{cid}"
        d.mkdir(parents=True)
        path = d / f"input-{cid}.dat"
        if data is not None:
            path.write_bytes(data)
        with pytest.raises(ScoreframeError) as info:
            sio.read_trials(path, fmt=name)
        assert path.name in str(info.value) or info.value.path == str(path), (cid, info.value)
        capsys.readouterr()
        out = d / "result.csv"
        code = main(["evaluate", str(path), "--from", name, "-o", str(out)])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (cid, code, lines)
        assert lines[0].startswith("scoreframe: error:") and path.name in lines[0], lines[0]
        assert sorted(p.name for p in d.iterdir()) == ([path.name] if data is not None else [])


@pytest.mark.parametrize("name", sio.format_names(readable=True))
def test_every_registered_format_refuses_malformed_input(tmp_path: Path, name: str,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    check_registered_format(tmp_path, name, capsys)
