"""Line numbers of the text readers (issue 22, target 5).

Polars parses a large file into chunks. A line-number column in one chunk beside them made
every later ``select`` or multi-column expression copy all columns into one chunk first
(0.2-0.4 s and ~100k page faults at 10^7 lines, in every text reader), so line numbers were
chunked like the columns. A file without blank lines now has no line-number column at all
(row i is line i + 1, or i + 2 under a header): a message numbers the rows it quotes. These
tests pin the chunking where a column is still built, and the lines messages give; the time
is measured by ``benchmarks/bench_readers.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.errors import SchemaError, ScoreframeError
from scoreframe.frames.schema import validate_trials
from scoreframe.io import read_key_txt, read_table
from scoreframe.io.lines import line_numbers
from scoreframe.io.tables import _read_delimited
from scoreframe.io.text import _single_spaced

N = 300_000  # enough lines for Polars to parse in several chunks


def _ids(n: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(n)
    return np.char.add("m", (i // 1000).astype(str)), np.char.add("s", (i % 1000).astype(str))


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("chunks") / "key.txt"
    m, s = _ids(N)
    lab = np.where(np.arange(N) % 7 == 0, "target", "nontarget")
    p.write_text("\n".join(f"{a} {b} {c}" for a, b, c in zip(m, s, lab, strict=True)) + "\n")
    return p


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("chunks") / "t.csv"
    m, s = _ids(N)
    pl.DataFrame({"model": m, "segment": s, "score": np.linspace(-3, 3, N)}).write_csv(p)
    return p


def test_single_spaced_rows_are_numbered_only_for_a_message(key_file: Path,
                                                             tmp_path: Path) -> None:
    df = _single_spaced(key_file, key_file, ("model", "segment", "label"))
    assert df is not None and "lineno" not in df.columns  # row i is line i + 1
    lines = key_file.read_text().splitlines()
    bad = list(lines)
    bad[N - 5] = bad[N - 5].rsplit(" ", 1)[0] + " maybe"  # a bad label near the end
    bad[N // 2] = lines[N // 3]  # a duplicate: first at line N // 3 + 1
    p = tmp_path / "bad.txt"
    p.write_text("\n".join(bad) + "\n")
    with pytest.raises(SchemaError, match=f"'maybe' \\(line {N - 4}\\)"):
        read_key_txt(p)
    bad[N - 5] = lines[N - 5]
    p.write_text("\n".join(bad) + "\n")
    with pytest.raises(Exception, match=f"first at line {N // 3 + 1}\\)"):
        read_key_txt(p)


def test_delimited_rows_are_numbered_only_for_a_message(csv_file: Path,
                                                         tmp_path: Path) -> None:
    df = _read_delimited(csv_file, ",")
    assert "__line" not in df.columns  # row i is line i + 2 (line 1 is the header)
    lines = csv_file.read_text().splitlines()
    bad = list(lines)
    bad[N - 7] = bad[N - 7].rsplit(",", 1)[0] + ",x1"  # a bad score near the end
    p = tmp_path / "bad.csv"
    p.write_text("\n".join(bad) + "\n")
    with pytest.raises(Exception, match=f"line {N - 6}: bad value in column `score`"):
        read_table(p)
    bad[N - 7] = lines[N - 7]
    bad[N - 3] = lines[N // 4]  # a duplicate trial, first at line N // 4 + 1
    p.write_text("\n".join(bad) + "\n")
    with pytest.raises(Exception, match=f"first at line {N // 4 + 1}\\)"):
        read_table(p)
    bad[N - 3] = lines[N - 3].split(",", 1)[0] + ",s1,nan"  # NaN score
    p.write_text("\n".join(bad) + "\n")
    with pytest.raises(SchemaError, match=f"first at line\\(s\\) {N - 2}\\b"):
        read_table(p)


def test_line_numbers_of_an_empty_and_a_one_chunk_frame() -> None:
    assert line_numbers(pl.DataFrame(), 1, "n").to_list() == []
    s = line_numbers(pl.DataFrame({"a": [5, 6, 7]}), 10, "n")
    assert (s.name, s.to_list(), s.dtype) == ("n", [10, 11, 12], pl.Int64)


def test_readers_give_the_same_rows_as_a_plain_parse(key_file: Path, csv_file: Path) -> None:
    got = read_key_txt(key_file)
    plain = pl.read_csv(key_file, separator=" ", has_header=False,
                        new_columns=["model", "segment", "label"])
    assert got["model"].to_list() == plain["model"].to_list()
    assert got["label"].to_list() == (plain["label"] == "target").to_list()
    t = read_table(csv_file)
    assert t["score"].to_list() == pl.read_csv(csv_file)["score"].to_list()


def test_duplicates_found_whatever_the_chunking() -> None:
    # id columns in several chunks, a label column in one: the hash of the ids alone must
    # still see the repeated trial (rows 3 and 250,003)
    m, s = _ids(N)
    s[250_003] = s[3]
    m[250_003] = m[3]
    parts = [pl.DataFrame({"model": m[a:a + 50_000], "segment": s[a:a + 50_000]})
             for a in range(0, N, 50_000)]
    df = pl.concat(parts, rechunk=False).with_columns(
        pl.Series("label", np.arange(N) % 2 == 0))
    assert df.n_chunks("all")[0] > 1 and df.n_chunks("all")[-1] == 1
    with pytest.raises(SchemaError, match="duplicate"):
        validate_trials(df, kind="key").collect()


def test_first_line_is_checked() -> None:
    df = pl.DataFrame({"model": ["m"], "segment": ["s"], "label": ["target"]})
    assert validate_trials(df, kind="key", first_line=1).collect().height == 1
    for bad in (0, -3, 1.5, True, "2"):
        with pytest.raises(ScoreframeError, match="bad `first_line`"):
            validate_trials(df, kind="key", first_line=bad)  # type: ignore[arg-type]
    with pytest.raises(ScoreframeError, match="both given"):
        validate_trials(df.with_columns(pl.lit(1).alias("n")), kind="key", line_column="n",
                        first_line=1)
