"""The Dask executor on a LocalCluster of 2 worker processes (needs ``scoreframe[dask]``)."""

from __future__ import annotations

import os
import socket
import sys
import time

import pytest

pytest.importorskip("dask.distributed",
                    reason="dask.distributed is not installed (pip install 'scoreframe[dask]')")
import psutil  # a dependency of distributed  # noqa: E402

from scoreframe.errors import DegenerateError, EngineError, ScoreframeError  # noqa: E402
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
