"""Which sort this machine runs faster, numpy's or Polars': timed once per process.

Imports nothing of the package, so every layer may use it (the in-memory engine). The choice
changes how fast a result comes, never the result: a sorted array is the same whoever sorts
it (for floats, once zeros have one sign: see ``SortedScores``).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import polars as pl

__all__ = ["POLARS_SORT_MIN", "polars_sorts_faster"]

#: From this many values, a sort may be handed to Polars (see :func:`polars_sorts_faster`).
POLARS_SORT_MIN = 1 << 22


@functools.cache
def polars_sorts_faster() -> bool:
    """Whether Polars' multi-threaded sort beats numpy's two-threaded one on this machine.

    numpy's sort is vectorized where its sorting library dispatches to the CPU's vector
    instructions (0.17 s for 10^7 doubles on one core of the machine of the earlier
    benchmarks, faster than Polars' 0.33 s on two) and a plain quicksort elsewhere (0.68 s
    on an AMD EPYC of family 25, Zen 4, where Polars takes 0.21 s). So a process that sorts
    a large array times both once, on 2^17 random doubles (about 40 ms in all), and takes
    the faster: numpy (in parts on several threads: ``stats.reduce.sort_classes`` for one
    group's scores) or Polars' sort. The choice changes how fast, never what: both give the
    same sorted arrays (ties are equal values; zeros are made positive by ``SortedScores``).
    """
    x = np.random.default_rng(0).standard_normal(1 << 17)
    pl.Series(x).sort()  # Polars' thread pool starts (~10 ms the first time)
    t_np = t_pl = np.inf
    for _ in range(5):  # alternated, the best of each: about 40 ms in all
        t = time.perf_counter()
        np.sort(x)
        t_np = min(t_np, time.perf_counter() - t)
        t = time.perf_counter()
        pl.Series(x).sort().to_numpy()
        t_pl = min(t_pl, time.perf_counter() - t)
    # numpy's path sorts two parts on two threads, but gathers the classes first: Polars
    # wins from about 1.5x (2.4x on the Zen 4 EPYC at this size; on the machine of the
    # earlier benchmarks numpy's sort of 10^7 doubles took half of Polars' time)
    return bool(t_pl < t_np / 1.5)


