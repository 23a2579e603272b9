"""The out-of-core duplicate check sorts each hash range in place (one copy per task).

At 10^9 trials with the default 1 GiB budget and two workers, the hash ranges are sized so
that the two ranges in flight fill the budget once; a sorted copy doubled that (peak 2.2 GB
for ``scoreframe evaluate`` on a dataset with model and segment columns, measured by
``benchmarks/bench_billion.py``). These tests pin the result and the memory of one task.
"""

from __future__ import annotations

import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.frames.schema import repeated_hashes
from scoreframe.stats.outofcore import duplicate_task


def brute_repeated(h: np.ndarray) -> list[int]:
    """Values seen more than once, by counting (sorted)."""
    return sorted(int(v) for v, c in Counter(h.tolist()).items() if c > 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("overwrite", [False, True])
def test_repeated_hashes_equals_counting(seed: int, overwrite: bool) -> None:
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 500, 2000).astype(np.uint64)  # many repeats, some values thrice
    before = h.copy()
    got = repeated_hashes(h, overwrite_input=overwrite).tolist()
    assert got == brute_repeated(before)
    if overwrite:
        assert np.array_equal(h, np.sort(before))  # sorted in place
    else:
        assert np.array_equal(h, before)  # the input is left alone


@pytest.mark.parametrize("values", [3, 1000, 2**64 - 1])
@pytest.mark.parametrize("overwrite", [False, True])
def test_repeated_hashes_sorted_in_parts(values: int, overwrite: bool) -> None:
    # above the size sorted in parts on several threads: the same values as counting them
    # (np.unique's counts), whether few values repeat (2**64 - 1), most do (1,000) or almost
    # every part boundary falls inside a run of equal values (3)
    rng = np.random.default_rng(values % 97)
    n = 3 * (1 << 20) + 17
    h = rng.integers(0, values, n, dtype=np.uint64)
    h[[11, n - 1]] = h[n // 2]  # one value repeated across the parts
    u, c = np.unique(h, return_counts=True)
    before = h.copy()
    got = repeated_hashes(h, overwrite_input=overwrite)
    assert np.array_equal(got, u[c > 1])
    assert np.array_equal(h, np.sort(before) if overwrite else before)


def test_repeated_hashes_none_and_empty() -> None:
    assert repeated_hashes(np.arange(10, dtype=np.uint64), overwrite_input=True).size == 0
    assert repeated_hashes(np.empty(0, np.uint64), overwrite_input=True).size == 0


def test_duplicate_task_holds_one_copy_of_its_range(tmp_path: Path) -> None:
    n = 4_000_000  # 32 MB of hashes
    rng = np.random.default_rng(3)
    h = rng.integers(0, 2**63, n, dtype=np.uint64)
    h[-5:] = h[:5]  # five duplicated ids
    (tmp_path / "h00000").mkdir()
    h[: n // 2].tofile(tmp_path / "h00000" / "t0.bin")  # two spill files, as the writers do
    h[n // 2:].tofile(tmp_path / "h00000" / "t1.bin")
    tracemalloc.start()
    try:
        got = duplicate_task((str(tmp_path), 0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.tolist() == sorted(int(v) for v in h[:5])
    # the range (32 MB) plus the comparison mask (4 MB); a sorted copy would be 68 MB
    assert peak < 1.3 * h.nbytes, peak / 1e6
    assert not (tmp_path / "h00000").exists()


@pytest.mark.parametrize("polars", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_repeated_hashes_are_the_same_whoever_sorts(polars: bool, seed: int) -> None:
    """The readers' check sorts its Polars hash series with Polars, the out-of-core task its
    numpy array with numpy: both ways, the same repeated values and the input kept."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 3000, 20_000).astype(np.uint64)
    h[:3] = np.iinfo(np.uint64).max  # the top value, thrice
    before = h.copy()
    given = pl.Series(h) if polars else h
    assert repeated_hashes(given).tolist() == brute_repeated(before)
    assert np.array_equal(h, before)
