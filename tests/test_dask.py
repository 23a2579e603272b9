"""The Dask executor on a LocalCluster of 2 worker processes (needs ``scoreframe[dask]``)."""

from __future__ import annotations

import os
import socket
import sys
import time

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("dask.distributed",
                    reason="dask.distributed is not installed (pip install 'scoreframe[dask]')")
import psutil  # a dependency of distributed  # noqa: E402

from scoreframe import evaluate  # noqa: E402
from scoreframe.errors import DegenerateError, EngineError, ScoreframeError  # noqa: E402
from scoreframe.stats import Engine
from scoreframe.stats.dask import DaskExecutor  # noqa: E402


def square_and_pid(x: int) -> tuple[int, int]:
    time.sleep(0.05)  # long enough that both workers get tasks
    return x * x, os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise DegenerateError(f"task {x} failed")
    return x


def children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def wait_gone(pids: set[int], timeout: float = 20.0) -> set[int]:
    deadline = time.monotonic() + timeout
    alive = {p for p in pids if psutil.pid_exists(p)}
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = {p for p in alive if psutil.pid_exists(p)
                 and psutil.Process(p).status() != psutil.STATUS_ZOMBIE}
    return alive


@pytest.fixture(scope="module")
def executor():
    with DaskExecutor(workers=2) as ex:
        yield ex


def test_map_in_order_on_two_worker_processes(executor):
    assert executor.workers == 2 and executor.local
    assert executor.address.startswith("tcp://127.0.0.1:")
    out = executor.map(square_and_pid, list(range(40)))
    assert [v for v, _ in out] == [x * x for x in range(40)]
    pids = {p for _, p in out}
    assert len(pids) == 2 and os.getpid() not in pids
    assert executor.map(square_and_pid, []) == []


def test_task_error_reaches_the_caller_and_executor_survives(executor):
    with pytest.raises(DegenerateError, match="task 3 failed"):
        executor.map(fail_on_three, list(range(8)))
    assert executor.map(fail_on_three, [1, 2]) == [1, 2]


def test_connect_to_running_scheduler(executor):
    with DaskExecutor(executor.address, timeout=10) as remote:
        assert not remote.local and remote.workers == 2
        assert [v for v, _ in remote.map(square_and_pid, [5, 6])] == [25, 36]
    # closing a client of someone else's cluster leaves the cluster running
    assert [v for v, _ in executor.map(square_and_pid, [7])] == [49]


def test_local_cluster_closed_on_exception_no_leftover_processes():
    before = children()
    with pytest.raises(RuntimeError, match="boom"):  # noqa: PT012
        with DaskExecutor(workers=2) as ex:
            started = children() - before
            assert len(started) >= 2  # at least the two worker processes
            assert len(ex.map(square_and_pid, [1, 2, 3])) == 3
            raise RuntimeError("boom")
    assert wait_gone(started) == set()
    with pytest.raises(EngineError, match="closed"):
        ex.map(square_and_pid, [1])
    ex.close()  # idempotent


def test_unreachable_scheduler_is_one_clear_error():
    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.monotonic()
    with pytest.raises(EngineError, match=f"cannot reach the dask scheduler in tcp://127.0.0.1:"
                                          f"{port}") as e:
        DaskExecutor(f"tcp://127.0.0.1:{port}", timeout=2)
    assert "\n" not in str(e.value)
    assert time.monotonic() - t < 30


@pytest.mark.parametrize("kwargs,match", [
    ({"workers": 0}, "bad `workers`"),
    ({"scheduler": ""}, "bad `scheduler`"),
    ({"timeout": -1}, "bad `timeout`"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ScoreframeError, match=match):
        DaskExecutor(**kwargs)


def test_missing_dask_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import raises ImportError
    with pytest.raises(EngineError, match=r"pip install 'scoreframe\[dask\]'"):
        DaskExecutor(workers=1)


@pytest.fixture(scope="module")
def multi_file(tmp_path_factory):
    """A plain directory of 4 Parquet files: heavy ties, +-inf, 3 conditions, id columns."""
    root = tmp_path_factory.mktemp("dask_ds") / "ds"
    root.mkdir()
    rng = np.random.default_rng(12)
    for k in range(4):
        n = 4_000 + 500 * k
        label = rng.random(n) < 0.2
        score = np.round(rng.standard_normal(n) + 1.5 * label, 1)  # heavy ties
        score[rng.random(n) < 0.002] = np.inf
        score[rng.random(n) < 0.002] = -np.inf
        pl.DataFrame({
            "model": [f"m{k}_{i // 50}" for i in range(n)],
            "segment": [f"s{i}" for i in range(n)],
            "score": score, "label": label,
            "condition": rng.choice(["a", "b", "c"], n),
        }).write_parquet(root / f"part-{k}.parquet")
    return root


def test_dask_engine_identical_to_local_engine(multi_file, executor, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    kw = {"by": "condition", "operating_points": [0.01, 0.5]}
    memory = evaluate(multi_file, **kw)  # in memory
    ooc = evaluate(multi_file, engine=Engine(memory_limit="64KiB"), **kw)  # out of core
    on_dask = evaluate(multi_file,
                       engine=Engine("dask", memory_limit="64KiB", scheduler=executor.address),
                       **kw)
    default = evaluate(multi_file, engine=Engine("dask", scheduler=executor.address), **kw)
    assert on_dask.equals(ooc)  # same ranges, same tasks: bit for bit
    for res in (ooc, on_dask, default):
        assert res.select("condition", "n_tar", "n_non").equals(
            memory.select("condition", "n_tar", "n_non"))
        assert_frame_equal(res, memory, rel_tol=1e-12, abs_tol=0.0)
    assert memory.height == 4 and memory["n_tar"].sum() > 0  # a, b, c and the pooled row
    assert list(tmp_path.iterdir()) == []  # no spill directory survives


def test_dask_engine_own_cluster_finds_duplicates_and_cleans_up(multi_file, tmp_path,
                                                                 monkeypatch):
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(spill))
    ds = tmp_path / "dup"
    ds.mkdir()
    for f in multi_file.iterdir():
        (ds / f.name).write_bytes(f.read_bytes())
    (ds / "again.parquet").write_bytes((multi_file / "part-0.parquet").read_bytes())
    before = children()
    with pytest.raises(ScoreframeError, match="duplicate"):
        # starts and closes a cluster
        evaluate(ds, by="condition", engine=Engine("dask", workers=2))
    assert wait_gone(children() - before) == set()
    assert list(spill.iterdir()) == []
