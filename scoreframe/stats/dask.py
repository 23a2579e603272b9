"""Run the statistics layer's tasks on a Dask cluster (``pip install 'scoreframe[dask]'``).

:class:`DaskExecutor` implements the executor interface of
:mod:`scoreframe.stats.executors` (``map(fn, items)`` in order, ``workers``) on
``dask.distributed``: either a cluster you already run (a scheduler address, e.g. one started by
``dask-jobqueue``'s ``SLURMCluster``) or a :class:`~distributed.LocalCluster` of worker
processes started on the loopback interface and closed on exit.

What travels: the engine maps **module-level task functions** over **task descriptions** —
Parquet file paths or row-group ranges, score-range boundaries, spill-file paths, small arrays
— and each task reads its own input on the worker (with Polars) and returns only **sufficient
statistics** (count tables, PAV blocks, sums). No trial row is ever sent to or from the
client. Paths in task descriptions must therefore be visible to every worker: on a real
cluster, the dataset and the spill directory must be on a shared filesystem.

This module imports Dask only when an executor is created, so ``scoreframe`` works without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

from scoreframe.checks import check_positive, check_positive_int
from scoreframe.errors import EngineError, message

__all__ = ["CONNECT_TIMEOUT", "DaskExecutor", "check_scheduler_address", "require_distributed"]

#: Seconds a scheduler has to answer before :class:`DaskExecutor` gives up on it.
CONNECT_TIMEOUT = 10.0

_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
                      r":(\d{1,5})")


def check_scheduler_address(address: object) -> str:
    """A scheduler address of the form ``[tcp|tls|ws|wss://]host:port``, checked by form only.

    Dask answers a malformed address only after its connection timeout, so it is checked
    here first (no Dask import).

    Examples
    --------
    >>> check_scheduler_address("tcp://head-node:8786")
    'tcp://head-node:8786'
    >>> check_scheduler_address("tcp://127.0.0.1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scoreframe.errors.EngineError: bad `scheduler`: expected an address such as ...
    """
    m = _ADDRESS.fullmatch(address) if isinstance(address, str) else None
    if m is None or not 0 < int(m.group(1)) < 65536:
        shown = repr(address)[:80]
        raise EngineError(message("bad `scheduler`", expected="an address such as "
                                  "tcp://host:8786 (host and port)", got=shown))
    return address  # type: ignore[return-value]  # address matched the pattern: a str

T = TypeVar("T")
R = TypeVar("R")

INSTALL_HINT = "pip install 'scoreframe[dask]'"


def _distributed() -> Any:
    """The ``dask.distributed`` module, or a clear error when Dask is not installed."""
    try:
        import dask.distributed as distributed
    except ImportError:
        raise EngineError(message("the dask engine needs dask.distributed, which is not "
                                  "installed", expected=INSTALL_HINT),
                          parameter="engine") from None
    return distributed


def require_distributed() -> None:
    """Check that ``dask.distributed`` can be imported (``EngineError`` naming the install)."""
    _distributed()


class DaskExecutor:
    """Tasks on Dask workers: a running cluster (``scheduler``) or a local one (``workers``).

    Use it as a context manager: on exit the client is closed, and a cluster this executor
    started is shut down with all its worker processes (also when the block raises).

    Parameters
    ----------
    scheduler
        Address of a running Dask scheduler (``"tcp://host:8786"``), or a
        ``dask.distributed.Client`` to use (it is left open on exit). ``None`` starts a
        :class:`~distributed.LocalCluster` on 127.0.0.1 with ``workers`` single-threaded
        worker processes and no dashboard.
    workers
        With no ``scheduler``: the number of worker processes (default 2). With a
        ``scheduler``: wait (up to ``timeout``) until at least this many workers have joined,
        e.g. while a batch system starts them.
    timeout
        Seconds to wait for the workers (``workers`` of them joining a running scheduler, or
        a local cluster starting) before giving up.
    connect_timeout
        Seconds a running scheduler has to answer (at most ``timeout``): an unreachable
        address, or a server that does not speak Dask's protocol, is an error after at most
        this long.

    Attributes
    ----------
    workers : int
        How many tasks run at once: the total number of worker threads in the cluster.
    address : str
        The scheduler's address.
    local : bool
        Whether this executor started the cluster (on this machine).

    Raises
    ------
    EngineError
        Dask is not installed, the scheduler cannot be reached, or no worker joined in time.

    Examples
    --------
    >>> from operator import neg
    >>> with DaskExecutor(workers=2) as ex:  # doctest: +SKIP
    ...     ex.workers, ex.map(neg, [1, 2, 3])
    (2, [-1, -2, -3])
    """

    def __init__(self, scheduler: object = None, workers: int | None = None, *,
                 timeout: float = 30.0, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        given_client = scheduler is not None and not isinstance(scheduler, str)
        if scheduler is not None and not given_client:
            scheduler = check_scheduler_address(scheduler)
        if workers is not None:
            workers = check_positive_int(workers, name="workers")
        timeout = check_positive(timeout, name="timeout")
        connect_timeout = min(timeout, check_positive(connect_timeout, name="connect_timeout"))
        distributed = _distributed()
        self._cluster: Any = None
        self._client: Any = None
        self._owns_client = not given_client
        self.local = scheduler is None
        try:
            if given_client:
                self._client = scheduler
                self._client.wait_for_workers(workers or 1, timeout=timeout)
            elif scheduler is None:
                self._cluster = distributed.LocalCluster(
                    n_workers=workers or 2, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR,
                    worker_dashboard_address=None,
                    # no dashboard; the scheduler's small HTTP server on a free loopback port
                    scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})
                self._client = distributed.Client(self._cluster, timeout=timeout,
                                                  set_as_default=False)
            else:
                self._client = self._connect(distributed, scheduler,  # type: ignore[arg-type]  # a str here
                                             connect_timeout)
                self._client.wait_for_workers(workers or 1, timeout=timeout)
        except EngineError:
            self.close()
            raise
        except (OSError, TimeoutError) as e:  # unreachable scheduler, workers not joining
            self.close()
            where = f"scheduler {scheduler}" if scheduler else "a local Dask cluster"
            raise EngineError(message("cannot start the dask engine", where=where,
                                      got=f"{type(e).__name__}: {_one_line(e)}")) from None
        except BaseException:
            self.close()
            raise
        self.address: str = self._client.scheduler.address
        info = self._client.scheduler_info()
        self.workers: int = max(1, sum(w.get("nthreads", 1)
                                       for w in info.get("workers", {}).values()))

    @staticmethod
    def _connect(distributed: Any, scheduler: str, timeout: float) -> Any:
        """A client of the scheduler at ``scheduler``, which must answer within ``timeout``.

        A throw-away connection (Dask's handshake, on a private event loop in a helper thread,
        so it also works under a running loop such as Jupyter's) is tried first: a
        ``distributed.Client`` whose construction fails otherwise blocks interpreter exit for
        twice its timeout.
        """
        async def probe() -> None:
            from distributed.comm.core import connect
            from distributed.security import Security

            args = Security().get_connection_args("client")
            comm = await connect(scheduler, timeout=timeout, **args)
            await comm.close()

        try:
            # a refused or silent port fails here at once (Dask's own connect retries a
            # refused connection until its timeout), so the whole check stays within timeout
            m = _ADDRESS.fullmatch(scheduler)
            host = m.group(0).split("://")[-1].rsplit(":", 1)[0].strip("[]") if m else ""
            start = time.monotonic()
            if m:
                with socket.create_connection((host, int(m.group(1))), timeout=timeout / 2) as s:
                    s.shutdown(socket.SHUT_WR)  # then read to the end: a clean close, no reset
                    with contextlib.suppress(OSError):
                        while s.recv(4096):
                            pass
            timeout = max(0.5, timeout - (time.monotonic() - start))
            with ThreadPoolExecutor(1, thread_name_prefix="scoreframe-dask-probe") as pool:
                # the handshake too is bounded (a server that accepts and stays silent)
                pool.submit(asyncio.run, asyncio.wait_for(probe(), timeout)).result()
            return distributed.Client(scheduler, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise EngineError(message("cannot reach the dask scheduler", where=scheduler,
                                      got=f"{type(e).__name__}: {_one_line(e)}")) from None
        except Exception as e:  # noqa: BLE001 (a server that is not a Dask scheduler)
            # its reply, parsed as Dask frames, raises anything (even a MemoryError for a
            # frame "length" read from text): name the cause, and the parser's error type only
            raise EngineError(message(
                "no dask scheduler answered", where=scheduler,
                expected="a Dask scheduler (tcp://host:port)",
                got=f"a reply it could not read as the Dask protocol ({type(e).__name__})"),
            ) from None

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Run ``fn`` on every item on the workers; results in input order.

        ``fn`` must be a module-level function importable on the workers; each call is a
        separate task (``pure=False``: never deduplicated or cached). If a task fails, the
        others are cancelled and its exception is raised here.
        """
        if self._client is None:
            raise EngineError("the dask executor is closed")
        if not items:
            return []
        futures = self._client.map(fn, list(items), pure=False)
        try:
            return list(self._client.gather(futures))
        except BaseException:
            self._client.cancel(futures)
            raise

    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, window: int) -> Iterator[R]:
        """Yield ``fn(x)`` in input order, at most ``window`` tasks submitted and not yielded.

        Only ``window`` task descriptions and results exist at once, on the client and the
        workers; a failed task cancels the others, and its exception is raised here.
        """
        if self._client is None:
            raise EngineError("the dask executor is closed")
        pending: deque[Any] = deque()
        try:
            for x in items:
                pending.append(self._client.submit(fn, x, pure=False))
                if len(pending) >= max(1, window):
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            if pending:
                self._client.cancel(list(pending))

    def close(self) -> None:
        """Close the client and, if this executor started it, the cluster (idempotent)."""
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        try:
            if client is not None and self._owns_client:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._client is None else f"{self.workers} workers"
        kind = "local" if self.local else "remote"
        return f"DaskExecutor({kind}, {state})"


def _one_line(e: BaseException) -> str:
    """An exception's message on one line."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "..."

