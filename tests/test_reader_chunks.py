"""Line numbers of the text readers are chunked like the parsed columns (issue 22, target 5).

Polars parses a large file into chunks. A line-number column in one chunk beside them made
every later ``select`` or multi-column expression copy all columns into one chunk first
(0.2-0.4 s and ~100k page faults at 10^7 lines, in every text reader). These tests pin the
chunking and the values; the time is measured by ``benchmarks/bench_readers.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.errors import SchemaError
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


def test_delimited_line_numbers_follow_the_chunks(csv_file: Path) -> None:
    df = _read_delimited(csv_file, ",")
    chunks = df.n_chunks("all")
    if chunks[0] == 1:
        pytest.skip("the parser gave one chunk on this machine")
    assert len(set(chunks)) == 1
    assert df["__line"].to_list() == list(range(2, N + 2))  # line 1 is the header


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
