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
