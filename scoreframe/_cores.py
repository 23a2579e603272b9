"""How many cores this process may use.

Imports nothing from the package, so every layer (readers and frames included) may use it.
``os.cpu_count()`` counts the machine's cores; a batch system (SLURM, a container's cpuset)
often lets a process run on fewer, and threads beyond those only take turns.
"""

from __future__ import annotations

import os

__all__ = ["usable_cores"]


def usable_cores() -> int:
    """The number of cores this process may run on (its CPU affinity where the OS has one).

    The kernels, readers and engine split work over at most this many threads (and the
    engine's default number of workers is this); the split never changes a result, only how
    fast it comes.

    >>> usable_cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1
