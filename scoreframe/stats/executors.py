"""Where the statistics layer's tasks run: local threads, or Dask workers.

An executor maps a module-level task function over a list of picklable task descriptions and
returns the results in order. Tasks read their own inputs (Parquet files, spill files) and
return only statistics, so on Dask no trial row travels to the client. This module imports
no dataframe library.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol, TypeVar

from scoreframe._cores import usable_cores

__all__ = ["Executor", "LocalExecutor"]

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs tasks: ``map(fn, items)`` returns ``[fn(x) for x in items]`` (in order)."""

    #: How many tasks run at once (sizes the memory budget of each task).
    workers: int

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Apply ``fn`` to every item, possibly in parallel; results in input order."""
        ...

    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, window: int) -> Iterator[R]:
        """Yield ``fn(x)`` for every item, in input order, as the results arrive.

        At most ``window`` items are taken from ``items`` and not yet yielded: items are
        made, and results held, only a few at a time (the out-of-core reduction folds each
        range's statistics as it comes, whatever the number of ranges).
        """
        ...


class LocalExecutor:
    """Tasks on a pool of threads in this process (NumPy sorts and Polars release the GIL).

    Examples
    --------
    >>> LocalExecutor(workers=2).map(abs, [-1, 2, -3])
    [1, 2, 3]
    """

    def __init__(self, *, workers: int | None = None) -> None:
        self.workers = max(1, workers if workers is not None else usable_cores())

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Apply ``fn`` to every item on the thread pool; results in input order."""
        if self.workers == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(fn, items))

    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, window: int) -> Iterator[R]:
        """Yield ``fn(x)`` in input order, at most ``window`` items in flight.

        Examples
        --------
        >>> list(LocalExecutor(workers=2).imap(abs, iter([-1, 2, -3]), window=2))
        [1, 2, 3]
        """
        window = max(1, window)
        if self.workers == 1 or window == 1:
            yield from (fn(x) for x in items)
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, window)) as pool:
            pending: deque[Future[R]] = deque()
            try:
                for x in items:
                    pending.append(pool.submit(fn, x))
                    if len(pending) >= window:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:  # an error or an abandoned iterator: nothing more starts
                for f in pending:
                    f.cancel()
