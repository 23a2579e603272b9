"""Fuzzing of every reader: a correct parse or a ScoreframeError, never anything else.

Hypothesis generates valid trial sets and writes them in every registered format with
serializers of the test's own (the text formats) or the format's writer (HDF5); reading them
back must give exactly the generated trials. Valid files (generated, and fixed fixtures) of
every format are mutated by Hypothesis (byte flips, truncation, field deletion
and duplication, line shuffles, deletions and duplications). Reading the mutant must either

* raise :class:`~scoreframe.errors.ScoreframeError` (any other exception fails the test), or
* give a table in the canonical schema that is *correct*: for the text formats it equals what
  an independent, obviously-correct Python tokenizer (the twin below) makes of the same bytes,
  and for semantically neutral mutations (a line shuffle) it equals the original trials.

Over-long lines are inserted under a small ``max_line_bytes``: the reader must refuse the
first line longer than the limit, naming it, before anything else. A wrong success (a read
that succeeds where the twin refuses, or rows that differ from the twin's) fails the test.

Bounded to a few seconds per reader by default; ``-m slow`` runs many more examples.
"""

from __future__ import annotations

import gzip
import math
import random
import re
from collections.abc import Callable
from pathlib import Path

import h5py  # noqa: F401  (imported so a broken h5py fails at collection, not in a reader)
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoreframe import io as sio
from scoreframe.errors import ScoreframeError

FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
GEN = settings(max_examples=15, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture,
                                      HealthCheck.too_slow])
SLOW = settings(max_examples=600, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

_rng = random.Random(5)
MODELS = [f"m{i}" for i in range(4)]
SEGS = [f"seg_{j}" for j in range(5)]
CELLS = [(m, s) for m in MODELS for s in SEGS if _rng.random() < 0.8]
LABELS = [_rng.random() < 0.3 for _ in CELLS]
SCORES = [round(_rng.gauss(0, 3), 6) for _ in CELLS]


def _key_lines(target: str = "target", non: str = "nontarget") -> list[str]:
    return [f"{m} {s} {target if t else non}" for (m, s), t in zip(CELLS, LABELS, strict=True)]


def _ws(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


KEY_TXT = _ws(_key_lines())
NDX_TXT = _ws([f"{m} {s}" for m, s in CELLS])
SCORES_TXT = _ws([f"{m} {s} {v!r}" for (m, s), v in zip(CELLS, SCORES, strict=True)])
NIST_KEY = ("modelid\tsegmentid\tside\ttargettype\n" + "".join(
    f"{m}\t{s}\ta\t{'target' if t else 'nontarget'}\n"
    for (m, s), t in zip(CELLS, LABELS, strict=True))).encode()
NIST_SCORES = ("modelid\tsegmentid\tside\tLLR\n" + "".join(
    f"{m}\t{s}\ta\t{v!r}\n" for (m, s), v in zip(CELLS, SCORES, strict=True))).encode()
CSV = ("model,segment,score,label\n" + "".join(
    f"{m},{s},{v!r},{int(t)}\n"
    for (m, s), v, t in zip(CELLS, SCORES, LABELS, strict=True))).encode()
TRIALS = pl.DataFrame({"model": [c[0] for c in CELLS], "segment": [c[1] for c in CELLS],
                       "score": SCORES, "label": LABELS})


# ---------------------------------------------------------------- the twin tokenizer ---------

_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NUM = re.compile(r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity)$",
                  re.IGNORECASE)
_TRUE, _FALSE = {"target", "1", "true"}, {"nontarget", "0", "false"}


class Reject(Exception):
    """The twin refuses the input (the reader must raise ScoreframeError)."""


def _lines(data: bytes) -> list[str]:
    if data.startswith(b"\x1f\x8b"):
        raise Reject("gzip")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("utf-8") from None
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    if any(_CTRL.search(ln) for ln in lines):
        raise Reject("control")
    return lines


def _label(tok: str) -> bool:
    low = tok.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise Reject("label")


def _number(tok: str) -> float | None:
    """A score, or None when the twin cannot tell (a spelling the twin does not model)."""
    tok = tok.strip()
    if tok.lower() == "nan":
        raise Reject("nan")
    if _NUM.match(tok):
        return float(tok)
    try:
        float(tok)
    except ValueError:
        raise Reject("number") from None
    return None


def twin_whitespace(data: bytes, kind: str) -> list[tuple]:
    n = {"key": 3, "ndx": 2, "scores": 3}[kind]
    rows: list[tuple] = []
    for ln in _lines(data):
        fields = re.split(r"[ \t]+", ln.strip(" \t"))
        if fields == [""]:
            continue
        if len(fields) != n:
            raise Reject("fields")
        if kind == "key":
            rows.append((fields[0], fields[1], _label(fields[2])))
        elif kind == "scores":
            rows.append((fields[0], fields[1], _number(fields[2])))
        else:
            rows.append((fields[0], fields[1]))
    if not rows:
        raise Reject("empty")
    if len({r[:2] for r in rows}) != len(rows):
        raise Reject("duplicate")
    return rows


def twin_table(data: bytes, sep: str, cols: dict[str, str]) -> list[tuple]:
    """A header table without quotes (the fixtures have none; a quote makes the twin unsure)."""
    lines = _lines(data)
    if not lines or lines[0] == "":
        raise Reject("header")
    if any('"' in ln for ln in lines):
        return None  # type: ignore[return-value]  # quoting: the twin does not judge
    header = lines[0].split(sep)
    if len(set(header)) != len(header):
        raise Reject("duplicate header")
    body = [ln for ln in lines[1:] if ln != ""]
    if any(len(ln.split(sep)) != len(header) for ln in body):
        raise Reject("fields")
    if any(c not in header for c in (cols["model"], cols["segment"])):
        raise Reject("column")
    if any(c not in header for c in cols.values()):
        return None  # type: ignore[return-value]  # another kind of table: not judged here
    idx = {k: header.index(v) for k, v in cols.items()}
    rows = []
    for ln in body:
        f = ln.split(sep)
        if f[idx["model"]] == "" or f[idx["segment"]] == "":
            raise Reject("null id")
        row: tuple = (f[idx["model"]], f[idx["segment"]])
        if "score" in idx:
            if f[idx["score"]].strip() == "":
                raise Reject("null score")
            row += (_number(f[idx["score"]]),)
        if "label" in idx:
            if f[idx["label"]].strip() == "":
                if cols["label"] == "targettype":
                    raise Reject("empty targettype")  # a NIST key names every trial's type
                return None  # type: ignore[return-value]  # a null label is unknown: legal
            if re.fullmatch(r"[+-]?0*[01]", f[idx["label"]].strip()) and f[idx[
                    "label"]].strip() not in ("0", "1"):
                return None  # type: ignore[return-value]  # `00`: 0 in an integer column
            row += (_label(f[idx["label"]]),)
        rows.append(row)
    if not rows:
        raise Reject("empty")
    if len({r[:2] for r in rows}) != len(rows):
        raise Reject("duplicate")
    return rows


# ---------------------------------------------------------------- mutations ------------------

def _split_lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


# positions are drawn independently of the file's length (then reduced modulo it), so a
# replayed example stays valid even if the valid file's bytes differ between runs
_POS = st.integers(0, 2**20)


@st.composite
def mutation(draw: st.DrawFn, data: bytes, *, text: bool, header: bool) -> tuple[str, bytes]:
    kinds = ["flip", "truncate", "insert"] + (
        ["shuffle", "delete_field", "dup_field", "dup_line", "delete_line"] if text else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(_POS) % len(out)
            out[pos] ^= draw(st.integers(1, 255))
        return kind, bytes(out)
    if kind == "truncate":
        return kind, data[: draw(_POS) % len(data)]
    if kind == "insert":
        pos = draw(_POS) % (len(data) + 1)
        blob = draw(st.binary(min_size=1, max_size=4))
        return kind, data[:pos] + blob + data[pos:]
    lines = _split_lines(data.rstrip(b"\n"))
    first = 1 if header else 0
    if kind == "shuffle":
        body = lines[first:]
        seed = draw(st.integers(0, 2**32 - 1))
        random.Random(seed).shuffle(body)
        return kind, b"\n".join(lines[:first] + body) + b"\n"
    lo = first if kind in ("dup_line", "delete_line") else 0
    i = lo + draw(_POS) % (len(lines) - lo)
    if kind == "dup_line":
        lines.insert(i, lines[i])
    elif kind == "delete_line":
        del lines[i]
    else:
        sep = b"\t" if b"\t" in lines[i] else (b"," if b"," in lines[i] else b" ")
        fields = lines[i].split(sep)
        j = draw(_POS) % len(fields)
        if kind == "delete_field":
            del fields[j]
        else:
            fields.insert(j, fields[j])
        lines[i] = sep.join(fields)
    return kind, b"\n".join(lines) + b"\n"


# ---------------------------------------------------------------- the property ---------------

def _canonical(df: pl.DataFrame, *, checked: bool = True) -> None:
    """A successful read is in the canonical schema, with no NaN/null where none may be."""
    if not checked:
        assert df.schema["model"] == pl.String and df.schema["segment"] == pl.String
        return
    assert df.height > 0
    assert df.schema["model"] == pl.String and df.schema["segment"] == pl.String
    assert df["model"].null_count() == 0 and df["segment"].null_count() == 0
    if "score" in df.columns:
        assert df.schema["score"] == pl.Float64
        assert df["score"].null_count() == 0 and not df["score"].is_nan().any()
    if "label" in df.columns:
        assert df.schema["label"] == pl.Boolean
    assert df.select("model", "segment").is_unique().all()


def _rows(df: pl.DataFrame, cols: list[str]) -> list[tuple]:
    return sorted(df.select(cols).rows())


def _same(actual: list[tuple], expected: list[tuple]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(sorted(actual, key=lambda r: r[:2]), sorted(expected, key=lambda r: r[:2]),
                    strict=True):
        assert a[:2] == e[:2]
        for x, y in zip(a[2:], e[2:], strict=True):
            if isinstance(y, float) and y is not None:
                assert math.isclose(x, y, rel_tol=1e-15, abs_tol=0) or x == y
            elif y is not None:
                assert x == y


def check(read: Callable[[Path], pl.DataFrame], path: Path, data: bytes,
          twin: Callable[[bytes], list[tuple]] | None, cols: list[str], kind: str,
          original: pl.DataFrame) -> None:
    path.write_bytes(data)
    try:
        df = read(path)
    except ScoreframeError as exc:
        assert path.name in str(exc), f"message does not name the file: {exc}"
        if twin is not None:
            try:
                judged = twin(data)
            except Reject:
                return
            if judged is None:
                return  # the twin does not judge this input (quotes, null labels, ...)
            # the twin accepted: only allowed if the reader's reason is one the twin
            # deliberately does not model (numbers spelled in ways Python parses differently)
            assert "score" in str(exc) or "label" in str(exc), (kind, str(exc), data)
        return
    if "model" not in df.columns and "segment" not in df.columns:
        # a mutated header lost both id names: a score/label table with two condition
        # columns is valid (ids are needed only in pairs); the twins model id'd tables only
        assert {"score", "label"} <= set(df.columns) and df.height > 0, (kind, data)
        return
    _canonical(df, checked=not path.name.startswith("marked"))
    if kind == "shuffle":
        _same(_rows(df, cols), _rows(original, cols))
    if twin is not None:
        try:
            expected = twin(data)
        except Reject as why:
            pytest.fail(f"{kind}: read succeeded but the twin rejects ({why}): {data!r}")
        if expected is not None:
            _same(_rows(df, cols), expected)


TEXT_READERS = {
    "bosaris-key": ("key.txt", KEY_TXT, sio.read_key_txt, ["model", "segment", "label"],
                    lambda b: twin_whitespace(b, "key"), False),
    "bosaris-ndx": ("ndx.txt", NDX_TXT, sio.read_ndx_txt, ["model", "segment"],
                    lambda b: twin_whitespace(b, "ndx"), False),
    "bosaris-scores": ("scores.txt", SCORES_TXT, sio.read_scores_txt,
                       ["model", "segment", "score"], lambda b: twin_whitespace(b, "scores"),
                       False),
    "kaldi-trials": ("trials", KEY_TXT, sio.read_kaldi_trials, ["model", "segment", "label"],
                     lambda b: twin_whitespace(b, "key"), False),
    "kaldi-scores": ("scores", SCORES_TXT, sio.read_kaldi_scores,
                     ["model", "segment", "score"], lambda b: twin_whitespace(b, "scores"),
                     False),
    "nist-key": ("key.tsv", NIST_KEY, sio.read_nist_key, ["model", "segment", "label"],
                 lambda b: twin_table(b, "\t", {"model": "modelid", "segment": "segmentid",
                                                "label": "targettype"}), True),
    "nist-scores": ("sys.tsv", NIST_SCORES, sio.read_nist_scores, ["model", "segment", "score"],
                    lambda b: twin_table(b, "\t", {"model": "modelid", "segment": "segmentid",
                                                   "score": "LLR"}), True),
    "csv": ("t.csv", CSV, sio.read_table, ["model", "segment", "score", "label"],
            lambda b: twin_table(b, ",", {"model": "model", "segment": "segment",
                                          "score": "score", "label": "label"}), True),
}


def _original(name: str) -> pl.DataFrame:
    return {"bosaris-ndx": TRIALS.drop("score", "label"),
            "bosaris-scores": TRIALS.drop("label"), "kaldi-scores": TRIALS.drop("label"),
            "nist-scores": TRIALS.drop("label"), "bosaris-key": TRIALS.drop("score"),
            "kaldi-trials": TRIALS.drop("score"), "nist-key": TRIALS.drop("score")}.get(
        name, TRIALS)


def _text_test(name: str, tmp_path: Path, data: st.DataObject) -> None:
    fname, valid, read, cols, twin, header = TEXT_READERS[name]
    kind, mutant = data.draw(mutation(valid, text=True, header=header))
    check(read, tmp_path / fname, mutant, twin, cols, kind, _original(name))


@pytest.mark.parametrize("name", list(TEXT_READERS))
def test_valid_files_read_as_the_twin_says(tmp_path: Path, name: str) -> None:
    fname, valid, read, cols, twin, _ = TEXT_READERS[name]
    p = tmp_path / fname
    p.write_bytes(valid)
    _same(_rows(read(p), cols), twin(valid))


@pytest.mark.parametrize("name", list(TEXT_READERS))
@FAST
@given(data=st.data())
def test_text_readers(tmp_path: Path, name: str, data: st.DataObject) -> None:
    _text_test(name, tmp_path, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TEXT_READERS))
@SLOW
@given(data=st.data())
def test_text_readers_long(tmp_path: Path, name: str, data: st.DataObject) -> None:
    _text_test(name, tmp_path, data)


# ---------------------------------------------------------------- binary formats -------------

def _binary_files(tmp: Path) -> dict[str, tuple[str, bytes, Callable[[Path], pl.DataFrame]]]:
    out: dict[str, tuple[str, bytes, Callable[[Path], pl.DataFrame]]] = {}
    # unmarked: the reader runs every data check on whatever the damaged file decodes to
    sio.write_trials(TRIALS, tmp / "t.parquet", validate=False)
    out["parquet"] = ("t.parquet", (tmp / "t.parquet").read_bytes(), sio.read_trials)
    # marked by a validating write: the checks are skipped (the mark trusts the file not to
    # have changed since it was written), so a damaged page that still decodes can slip
    # through; the reader must still answer with a canonical table or a ScoreframeError
    sio.write_trials(TRIALS, tmp / "marked.parquet")
    out["parquet-marked"] = ("marked.parquet", (tmp / "marked.parquet").read_bytes(),
                             sio.read_trials)
    sio.write_bosaris_hdf5(TRIALS, tmp / "k.h5", "key")
    out["h5-key"] = ("k.h5", (tmp / "k.h5").read_bytes(), sio.read_bosaris_hdf5)
    sio.write_bosaris_hdf5(TRIALS, tmp / "n.h5", "ndx")
    out["h5-ndx"] = ("n.h5", (tmp / "n.h5").read_bytes(),
                     lambda p: sio.read_bosaris_hdf5(p, "ndx"))
    sio.write_bosaris_hdf5(TRIALS, tmp / "s.h5", "scores")
    out["h5-scores"] = ("s.h5", (tmp / "s.h5").read_bytes(), sio.read_bosaris_hdf5)
    out["csv-gz"] = ("t.csv.gz", gzip.compress(CSV, mtime=0), sio.read_table)
    return out


BINARY = ["parquet", "parquet-marked", "h5-key", "h5-ndx", "h5-scores", "csv-gz"]


@pytest.fixture(scope="module")
def binary_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    return _binary_files(tmp_path_factory.mktemp("valid"))


def _binary_test(name: str, files: dict[str, tuple], tmp_path: Path,
                 data: st.DataObject) -> None:
    fname, valid, read = files[name]
    kind, mutant = data.draw(mutation(valid, text=False, header=False))
    check(read, tmp_path / fname, mutant, None, [], kind, TRIALS)


@pytest.mark.parametrize("name", BINARY)
@FAST
@given(data=st.data())
def test_binary_readers(tmp_path: Path, binary_files: dict[str, tuple], name: str,
                        data: st.DataObject) -> None:
    _binary_test(name, binary_files, tmp_path, data)


# Long runs over Parquet mutants are left out: polars 2.1 occasionally *aborts the process*
# (SIGABRT from a Rust panic while decoding a damaged data page; cf. pola-rs/polars#18085)
# instead of raising, which no Python code can catch. The default run above covers Parquet.
@pytest.mark.slow
@pytest.mark.parametrize("name", [b for b in BINARY if not b.startswith("parquet")])
@SLOW
@given(data=st.data())
def test_binary_readers_long(tmp_path: Path, binary_files: dict[str, tuple], name: str,
                             data: st.DataObject) -> None:
    _binary_test(name, binary_files, tmp_path, data)


# ---------------------------------------------------------------- generated inputs -----------

_ID = st.text(alphabet="abcdxyzABZ0189_-.:/", min_size=1, max_size=8)


@st.composite
def trial_sets(draw: st.DrawFn) -> pl.DataFrame:
    """Valid trials: distinct (model, segment) ids, finite scores, both labels possible."""
    pairs = draw(st.lists(st.tuples(_ID, _ID), min_size=1, max_size=25,
                          unique_by=lambda t: t))
    n = len(pairs)
    scores = draw(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64),
                           min_size=n, max_size=n))
    labels = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return pl.DataFrame({"model": [p[0] for p in pairs], "segment": [p[1] for p in pairs],
                         "score": scores, "label": labels},
                        schema={"model": pl.String, "segment": pl.String,
                                "score": pl.Float64, "label": pl.Boolean})


def _tt(t: bool) -> str:
    return "target" if t else "nontarget"


def _ser_ws(df: pl.DataFrame, kind: str) -> bytes:
    rows = df.rows(named=True)
    if kind == "key":
        return _ws([f"{r['model']} {r['segment']} {_tt(r['label'])}" for r in rows])
    if kind == "ndx":
        return _ws([f"{r['model']} {r['segment']}" for r in rows])
    return _ws([f"{r['model']} {r['segment']} {r['score']!r}" for r in rows])


def _ser_table(df: pl.DataFrame, sep: str, names: dict[str, str], extra: str = "") -> bytes:
    cols = list(names)
    head = sep.join(names[c] for c in cols) + (sep + "side" if extra else "")

    def cell(r: dict, c: str) -> str:
        v = r[c]
        if c == "label":
            return _tt(v) if names[c] == "targettype" else str(int(v))
        return repr(v) if c == "score" else str(v)

    body = [sep.join(cell(r, c) for c in cols) + (sep + extra if extra else "")
            for r in df.rows(named=True)]
    return ("\n".join([head, *body]) + "\n").encode()


_NIST_K = {"model": "modelid", "segment": "segmentid", "label": "targettype"}
_NIST_S = {"model": "modelid", "segment": "segmentid", "score": "LLR"}
_PLAIN = {"model": "model", "segment": "segment", "score": "score", "label": "label"}

#: name -> (file name, serializer, reader, columns compared, twin)
GENERATED: dict[str, tuple[str, Callable[[pl.DataFrame], bytes], Callable[[Path], pl.DataFrame],
                           list[str], Callable[[bytes], list[tuple]]]] = {
    "bosaris-key": ("key.txt", lambda d: _ser_ws(d, "key"), sio.read_key_txt,
                    ["model", "segment", "label"], lambda b: twin_whitespace(b, "key")),
    "bosaris-ndx": ("ndx.txt", lambda d: _ser_ws(d, "ndx"), sio.read_ndx_txt,
                    ["model", "segment"], lambda b: twin_whitespace(b, "ndx")),
    "bosaris-scores": ("scores.txt", lambda d: _ser_ws(d, "scores"), sio.read_scores_txt,
                       ["model", "segment", "score"], lambda b: twin_whitespace(b, "scores")),
    "kaldi-trials": ("trials", lambda d: _ser_ws(d, "key"), sio.read_kaldi_trials,
                     ["model", "segment", "label"], lambda b: twin_whitespace(b, "key")),
    "kaldi-scores": ("scores", lambda d: _ser_ws(d, "scores"), sio.read_kaldi_scores,
                     ["model", "segment", "score"], lambda b: twin_whitespace(b, "scores")),
    "nist-key": ("key.tsv", lambda d: _ser_table(d, "\t", _NIST_K), sio.read_nist_key,
                 ["model", "segment", "label"], lambda b: twin_table(b, "\t", _NIST_K)),
    "nist-scores": ("sys.tsv", lambda d: _ser_table(d, "\t", _NIST_S), sio.read_nist_scores,
                    ["model", "segment", "score"], lambda b: twin_table(b, "\t", _NIST_S)),
    "csv": ("t.csv", lambda d: _ser_table(d, ",", _PLAIN), sio.read_table,
            ["model", "segment", "score", "label"], lambda b: twin_table(b, ",", _PLAIN)),
    "tsv": ("t.tsv", lambda d: _ser_table(d, "\t", _PLAIN), sio.read_table,
            ["model", "segment", "score", "label"], lambda b: twin_table(b, "\t", _PLAIN)),
}


def _generated_test(name: str, tmp_path: Path, data: st.DataObject) -> None:
    fname, ser, read, cols, twin = GENERATED[name]
    trials = data.draw(trial_sets(), label="trials")
    valid = ser(trials)
    compressed = data.draw(st.booleans(), label="gzip")
    path = tmp_path / (fname + (".gz" if compressed else ""))
    path.write_bytes(gzip.compress(valid, mtime=0) if compressed else valid)
    _same(_rows(read(path), cols), _rows(trials, cols))  # a valid file reads back exactly
    kind, mutant = data.draw(mutation(valid, text=True, header=name.startswith(("nist", "csv",
                                                                                 "tsv"))))
    if compressed:  # the twin judges the decompressed bytes; the reader gets the gzip
        path.write_bytes(gzip.compress(mutant, mtime=0))
        _check_gz(read, path, mutant, twin, cols)
    else:
        check(read, path, mutant, twin, cols, kind, trials)


def _check_gz(read: Callable[[Path], pl.DataFrame], path: Path, data: bytes,
              twin: Callable[[bytes], list[tuple]], cols: list[str]) -> None:
    try:
        df = read(path)
    except ScoreframeError as exc:
        assert path.name in str(exc), f"message does not name the file: {exc}"
        return
    if not {"model", "segment"} <= set(df.columns):
        return  # id names mutated away (see check)
    _canonical(df)
    try:
        expected = twin(data)
    except Reject as why:
        pytest.fail(f"gzip: read succeeded but the twin rejects ({why}): {data!r}")
    if expected is not None:
        _same(_rows(df, cols), expected)


@pytest.mark.parametrize("name", list(GENERATED))
@GEN
@given(data=st.data())
def test_generated_text_formats(tmp_path: Path, name: str, data: st.DataObject) -> None:
    _generated_test(name, tmp_path, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GENERATED))
@SLOW
@given(data=st.data())
def test_generated_text_formats_long(tmp_path: Path, name: str, data: st.DataObject) -> None:
    _generated_test(name, tmp_path, data)


def _long_line_test(name: str, tmp_path: Path, data: st.DataObject) -> None:
    """A run of bytes without a line end inserted into a line, read under a small limit."""
    fname, ser, read, cols, twin = GENERATED[name]
    valid = ser(data.draw(trial_sets(), label="trials"))
    limit = data.draw(st.integers(8, 120), label="limit")
    lines = valid.split(b"\n")
    i = data.draw(_POS) % max(len(lines) - 1, 1)
    at = data.draw(_POS) % (len(lines[i]) + 1)
    run = data.draw(st.sampled_from([b"x", b"0", b" ", b"\t", b","]), label="byte") * \
        data.draw(st.integers(1, 3 * limit), label="length")
    lines[i] = lines[i][:at] + run + lines[i][at:]
    mutant = b"\n".join(lines)
    compressed = data.draw(st.booleans(), label="gzip")
    path = tmp_path / (fname + (".gz" if compressed else ""))
    path.write_bytes(gzip.compress(mutant, mtime=0) if compressed else mutant)
    over = [k + 1 for k, ln in enumerate(mutant.split(b"\n")) if len(ln) > limit]
    with sio.max_line_bytes(limit):
        try:
            df = read(path)
        except ScoreframeError as exc:
            msg = str(exc)
            if over:
                assert exc.text.startswith("line too long"), msg
                assert (exc.path, exc.line) == (str(path), over[0]), msg
                assert msg.startswith(f"`{path}` line {over[0]}:"), msg
                assert f"at most {limit} bytes" in msg
            else:
                assert not exc.text.startswith("line too long"), msg
            assert len(msg) < 800
            return
    assert not over, f"a line over {limit} bytes was read: line {over[0]}"
    if {"model", "segment"} <= set(df.columns):
        _canonical(df)
        try:
            expected = twin(mutant)
        except Reject as why:
            pytest.fail(f"read succeeded but the twin rejects ({why}): {mutant!r}")
        if expected is not None:
            _same(_rows(df, cols), expected)


@pytest.mark.parametrize("name", list(GENERATED))
@GEN
@given(data=st.data())
def test_long_lines(tmp_path: Path, name: str, data: st.DataObject) -> None:
    _long_line_test(name, tmp_path, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GENERATED))
@SLOW
@given(data=st.data())
def test_long_lines_long(tmp_path: Path, name: str, data: st.DataObject) -> None:
    _long_line_test(name, tmp_path, data)


def _binary_generated_test(fmt: str, tmp_path: Path, data: st.DataObject) -> None:
    """Parquet (written by pyarrow, not scoreframe) and BOSARIS HDF5, generated then mutated."""
    import pyarrow.parquet as pq

    trials = data.draw(trial_sets(), label="trials")
    if fmt == "parquet":
        path = tmp_path / "g.parquet"
        pq.write_table(trials.to_arrow(), path,
                       row_group_size=data.draw(st.integers(1, 30), label="row group"))
        read: Callable[[Path], pl.DataFrame] = sio.read_trials
        cols = ["model", "segment", "score", "label"]
    else:
        kind = fmt.removeprefix("h5-")
        path = tmp_path / f"g-{kind}.h5"
        sio.write_bosaris_hdf5(trials, path, kind, overwrite=True)  # type: ignore[arg-type]
        read = lambda p: sio.read_bosaris_hdf5(p, kind)  # type: ignore[arg-type]  # noqa: E731
        cols = {"key": ["model", "segment", "label"], "ndx": ["model", "segment"],
                "scores": ["model", "segment", "score"]}[kind]
    _same(_rows(read(path), cols), _rows(trials, cols))
    kind_m, mutant = data.draw(mutation(path.read_bytes(), text=False, header=False))
    check(read, path, mutant, None, cols, kind_m, trials)


@pytest.mark.parametrize("fmt", ["parquet", "h5-key", "h5-ndx", "h5-scores"])
@GEN
@given(data=st.data())
def test_generated_binary_formats(tmp_path: Path, fmt: str, data: st.DataObject) -> None:
    _binary_generated_test(fmt, tmp_path, data)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["h5-key", "h5-ndx", "h5-scores"])  # parquet: see above
@SLOW
@given(data=st.data())
def test_generated_binary_formats_long(tmp_path: Path, fmt: str, data: st.DataObject) -> None:
    _binary_generated_test(fmt, tmp_path, data)


# ---------------------------------------------------------------- multiclass -----------------

@st.composite
def multiclass_sets(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Long multiclass scores (every segment scores every class) and the matching truth."""
    segs = draw(st.lists(_ID, min_size=1, max_size=8, unique=True))
    classes = draw(st.lists(st.text(alphabet="abcdefgh", min_size=2, max_size=4), min_size=2,
                            max_size=4, unique=True))
    n = len(segs) * len(classes)
    scores = draw(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64),
                           min_size=n, max_size=n))
    long = pl.DataFrame({"segment": [s for s in segs for _ in classes],
                         "class": [c for _ in segs for c in classes], "score": scores})
    truth = pl.DataFrame({"segment": segs,
                          "class": [draw(st.sampled_from(classes)) for _ in segs]})
    return long, truth


def _tsv(df: pl.DataFrame) -> bytes:
    lines = ["\t".join(df.columns)] + ["\t".join(repr(v) if isinstance(v, float) else str(v)
                                                 for v in r) for r in df.rows()]
    return ("\n".join(lines) + "\n").encode()


def _multiclass_test(tmp_path: Path, data: st.DataObject) -> None:
    from scoreframe.io.multiclass import read_multiclass_scores, read_multiclass_truth

    long, truth = data.draw(multiclass_sets())
    wide = data.draw(st.booleans(), label="wide")
    table = (long.pivot(on="class", index="segment", values="score") if wide else long)
    sp, tp = tmp_path / "scores.tsv", tmp_path / "truth.tsv"
    sp.write_bytes(_tsv(table))
    tp.write_bytes(_tsv(truth))
    got = read_multiclass_scores(sp)
    _same(_rows(got, ["segment", "class", "score"]), _rows(long, ["segment", "class", "score"]))
    assert _rows(read_multiclass_truth(tp), ["segment", "class"]) == _rows(truth, ["segment",
                                                                                   "class"])
    for path, read in ((sp, read_multiclass_scores), (tp, read_multiclass_truth)):
        kind, mutant = data.draw(mutation(path.read_bytes(), text=True, header=True))
        path.write_bytes(mutant)
        try:
            df = read(path)
        except ScoreframeError as exc:
            assert path.name in str(exc), f"message does not name the file: {exc}"
            continue
        assert df.height > 0 and df.schema["segment"] == pl.String
        assert df["segment"].null_count() == 0 and df["class"].null_count() == 0
        if "score" in df.columns:
            assert df.schema["score"] == pl.Float64 and not df["score"].is_nan().any()
            assert df.select("segment", "class").is_unique().all()
            if kind == "shuffle":
                _same(_rows(df, ["segment", "class", "score"]),
                      _rows(long, ["segment", "class", "score"]))
        else:
            assert df["segment"].is_unique().all()


@GEN
@given(data=st.data())
def test_multiclass_readers(tmp_path: Path, data: st.DataObject) -> None:
    _multiclass_test(tmp_path, data)


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_multiclass_readers_long(tmp_path: Path, data: st.DataObject) -> None:
    _multiclass_test(tmp_path, data)


# ---------------------------------------------------------------- examples -------------------

def test_nist_key_with_an_empty_targettype_is_an_error(tmp_path: Path) -> None:
    """Issue 26: it converted with exit 0 and a null label."""
    p = tmp_path / "key.tsv"
    p.write_text("modelid\tsegmentid\ttargettype\nm1\ts1\ttarget\nm1\ts2\t\n"
                 "m2\ts1\tnontarget\n")
    with pytest.raises(ScoreframeError, match=r"key\.tsv` line 3: empty `targettype`"):
        sio.read_nist_key(p)
    with pytest.raises(ScoreframeError, match="line 3"):
        sio.read_any(p)
    from scoreframe.cli.main import main

    out = tmp_path / "k.parquet"
    assert main(["convert", str(p), "-o", str(out)]) == 2
    assert not out.exists()
