"""The out-of-core plan counts each range's fixed cost (result rows x replicates).

A range's statistics cost about the same whatever its trials: with many groups and bootstrap
replicates, a small ``memory_limit`` used to mean many small ranges, each paying that cost,
and results of several ranges held at once (a review probe: 724 MB at a 20 MB limit against
485 MB at 2 GB, for 500 groups x 50 replicates; 2.4 GB against 0.87 GB for 1,500 x 100).
Now the plan sizes ranges and tasks in flight to the limit with that cost counted, results
are folded as they arrive, a limit that cannot be kept is said (``MemoryLimitWarning``), and
the numbers are the same bits as in memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import polars as pl
import pytest

from scoreframe import Engine, Intervals, evaluate
from scoreframe.errors import MemoryLimitWarning
from scoreframe.stats.executors import LocalExecutor
from scoreframe.stats.outofcore import (
    GROUP_RANGE_BYTES,
    MIN_RANGE_TRIALS,
    RangePlan,
    range_plan,
)


def estimate(p: RangePlan, *, n_rows: int, per_trial: int, fixed: int, n_groups: int,
             workers: int) -> int:
    """The peak the plan's docstring describes, recomputed from its parts."""
    run = min(workers, p.window)
    return (run * (p.range_trials * per_trial + fixed) + (p.window - run) * fixed
            + (2 * fixed if p.n_ranges > 1 else 0) + p.n_ranges * GROUP_RANGE_BYTES * n_groups)


@pytest.mark.parametrize("n_rows", [10_000, 10**6, 10**8, 10**9])
@pytest.mark.parametrize("fixed", [0, 10**5, 10**7, 5 * 10**8])
@pytest.mark.parametrize("workers", [1, 2, 3, 8])
@pytest.mark.parametrize("limit", [2**20, 2**26, 2**30])
def test_range_plan_covers_the_trials_and_keeps_the_limit_when_it_says_so(
        n_rows: int, fixed: int, workers: int, limit: int) -> None:
    kw = {"n_rows": n_rows, "per_trial": 400, "fixed": fixed, "n_groups": 50,
          "workers": workers}
    p = range_plan(memory_limit=limit, **kw)
    assert p.n_ranges * p.range_trials >= n_rows  # every trial has a range
    assert 1 <= p.window <= 2 * workers
    assert p.peak == estimate(p, **kw)
    assert p.fits == (p.peak <= limit)
    if p.fits and p.n_ranges > 1:
        assert p.range_trials >= MIN_RANGE_TRIALS
    if not p.fits:  # nothing the plan could choose keeps the limit: one task at a time
        assert p.window == 1


def test_range_plan_needs_no_more_tasks_in_flight_than_fit() -> None:
    kw = {"n_rows": 10**7, "per_trial": 400, "n_groups": 1500, "workers": 2,
          "memory_limit": 2**30}
    windows = [range_plan(fixed=f, **kw).window for f in (10**5, 10**7, 10**8, 2 * 10**8)]
    assert windows == sorted(windows, reverse=True) and windows[0] == 4 and windows[-1] < 4
    small = range_plan(fixed=10**5, **kw)  # a fixed cost that hardly matters
    trials = (2**30 - 6 * 10**5) // (2 * 400)  # 4 in flight, 2 running, 2 for the fold
    need = -(-10**7 // trials)
    assert small.n_ranges == need + need % 2 and small.fits


def test_a_large_fixed_part_takes_the_window_with_fewer_ranges() -> None:
    """compare of two systems with 1,000 replicates (42 result rows): each range's result is
    ~130 MB. Twice the workers in flight would leave 34 ranges of trials; as many as the
    workers, 18: each range also costs the replicates' statistics in time, so 18."""
    fixed = 42 * (2048 + 1000 * 3072)
    p = range_plan(n_rows=2 * 10**7, per_trial=250, fixed=fixed, n_groups=42, workers=2,
                   memory_limit=2**30)
    narrow = (2**30 - 4 * fixed) // (2 * 250)
    need = -(-2 * 10**7 // narrow)
    assert p.window == 2 and p.n_ranges == need + need % 2 == 18 and p.fits


def test_range_plan_without_fixed_cost_matches_the_trial_budget() -> None:
    p = range_plan(n_rows=10**9, per_trial=100, fixed=0, n_groups=20, workers=2,
                   memory_limit=2**30)
    # 2 tasks of trials, as the engine always did; rounded up to whole rounds of 2
    need = -(-10**9 // (2**30 // (2 * 100)))
    assert p.fits and p.window == 4 and p.n_ranges == need + need % 2


def test_imap_yields_in_order_with_at_most_window_in_flight() -> None:
    lock = threading.Lock()
    started: list[int] = []
    state = {"now": 0, "most": 0}

    def task(x: int) -> int:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.002 * (x % 3))  # out-of-order finishes
        with lock:
            state["now"] -= 1
        return x * x

    def items():
        for i in range(40):
            started.append(i)
            yield i

    got = []
    for y in LocalExecutor(workers=4).imap(task, items(), window=3):
        got.append(y)
        assert len(started) - len(got) <= 3  # items taken and not yet yielded
    assert got == [i * i for i in range(40)] and state["most"] <= 3


def test_imap_raises_a_task_error_and_starts_nothing_more() -> None:
    seen: list[int] = []

    def task(x: int) -> int:
        seen.append(x)
        if x == 2:
            raise ValueError("bad range 2")
        return x

    with pytest.raises(ValueError, match="bad range 2"):
        list(LocalExecutor(workers=2).imap(task, iter(range(100)), window=2))
    assert max(seen) < 10


def data(n: int, groups: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.2
    return pl.DataFrame({
        "score": np.round(rng.normal(size=n) + 2 * lab, 2), "label": lab,
        "condition": rng.integers(0, groups, n).astype(str),
        "model": rng.integers(0, 300, n).astype(str), "segment": np.arange(n).astype(str)})


def test_a_limit_below_the_fixed_cost_warns_and_gives_the_in_memory_bits(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = data(20_000, 120)
    iv = Intervals(bootstrap=30, resample=["model", "segment"], seed=3)
    a = evaluate(df, by="condition", intervals=iv, engine="memory", validate=False)
    with pytest.warns(MemoryLimitWarning, match=r"121 result rows x 30 replicates") as rec:
        b = evaluate(df, by="condition", intervals=iv, validate=False,
                     engine=Engine("streaming", memory_limit="64KB"))
    w = rec[0].message
    assert isinstance(w, MemoryLimitWarning) and w.need > w.limit == 64_000
    assert a.equals(b)
    assert not list(tmp_path.iterdir())  # the spill directory and its count files are gone


def test_a_limit_that_fits_gives_no_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = data(20_000, 5)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryLimitWarning)
        evaluate(df, by="condition", intervals=Intervals(bootstrap=20), validate=False,
                 engine=Engine("streaming", memory_limit="64MB"))


PEAK = """
import json, resource, sys, warnings
warnings.simplefilter("ignore")
import scoreframe as sf
path, limit = sys.argv[1], sys.argv[2]
sf.evaluate(path, by="condition", validate=False,
            intervals=sf.Intervals(bootstrap=50, resample=["model", "segment"]),
            engine=sf.Engine("streaming", memory_limit=limit, workers=2))
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def test_a_small_limit_does_not_cost_more_memory_than_a_large_one(tmp_path):
    """500 groups x 50 replicates: a 20 MB limit used to peak at 1.5x a 2 GB one (724 MB
    against 485 MB): each of its small ranges paid the results' fixed cost, several held at
    once. Fresh processes; the same data."""
    path = tmp_path / "t.parquet"
    data(100_000, 500).write_parquet(path)
    spill = tmp_path / "spill"
    spill.mkdir()
    peak = {}
    for limit in ("2GB", "20MB"):
        out = subprocess.run([sys.executable, "-c", PEAK, str(path), limit], cwd=tmp_path,
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "SCOREFRAME_SPILL_DIR": str(spill)})
        peak[limit] = json.loads(out.stdout.strip().splitlines()[-1])
    assert peak["20MB"] <= 1.2 * peak["2GB"], peak
    assert not list(spill.iterdir())
