"""Where the statistics layer's tasks run: local threads, or Dask workers.

An executor maps a module-level task function over a list of picklable task descriptions and
returns the results in order. Tasks read their own inputs (Parquet files, spill files) and
return only statistics, so on Dask no trial row travels to the client. This module imports
no dataframe library.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

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


class LocalExecutor:
    """Tasks on a pool of threads in this process (NumPy sorts and Polars release the GIL).

    Examples
    --------
    >>> LocalExecutor(workers=2).map(abs, [-1, 2, -3])
    [1, 2, 3]
    """

    def __init__(self, *, workers: int | None = None) -> None:
        self.workers = max(1, workers if workers is not None else (os.cpu_count() or 1))

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Apply ``fn`` to every item on the thread pool; results in input order."""
        if self.workers == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(fn, items))
