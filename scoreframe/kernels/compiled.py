"""numba, imported when a compiled kernel first runs: whether it is there, and the compiler.

numpy and numba only (importing this module imports neither). The compiled loops are written
as plain Python functions next to the kernels that use them
(:mod:`scoreframe.kernels.replicates`, :mod:`scoreframe.kernels.elementary`); :func:`jit`
compiles one on first use (``nogil``, so the reduction's threads run it side by side;
cached on disk beside the module). Every kernel with a compiled loop also has a numpy path
with the same result, taken when :func:`compiled_available` is false.

numba's first compiled call in a process costs about 0.3 s (its import and its code
generator's set-up), later ones a few milliseconds each: :func:`warm_up` pays it in a
background thread while a reduction is still reading, so the workers do not wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = ["compiled_available", "jit", "warm_up"]


@cache
def compiled_available() -> bool:
    """True when numba imports.

    numba is a dependency; without it the kernels take numpy passes, with the same results.

    >>> isinstance(compiled_available(), bool)
    True
    """
    try:
        import numba  # noqa: F401, PLC0415 - imported when a compiled kernel first runs
    except ImportError:
        return False
    return True


@cache
def jit(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` compiled by numba (when first called; its machine code cached on disk).

    ``body`` is a function of a module's source file: its machine code is cached beside it
    (or in numba's user cache directory). Where neither can be written (a read-only install
    and home), numba refuses to cache, and the loop is compiled in every process instead.
    Two threads asking at once may both build the compiler's dispatcher; numba compiles
    one at a time (the second loads the first's cache).

    >>> jit(_warm_body)(41) if compiled_available() else 42
    42
    """
    import numba  # noqa: PLC0415 - a fraction of a second, paid only when compiled loops run

    try:
        return numba.njit(nogil=True, cache=True, error_model="numpy")(body)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(nogil=True, cache=False, error_model="numpy")(body)


def _warm_body(x: int) -> int:
    return x + 1


_warming: list[threading.Thread] = []
_warming_lock = threading.Lock()


def _warm() -> None:
    try:
        if compiled_available():
            jit(_warm_body)(1)  # numba's one-time set-up, then a cached function loaded
    except Exception:  # noqa: BLE001 - a set-up ahead of time only: the kernel's own call
        return  # compiles again and reports what is wrong there


def warm_up() -> threading.Thread:
    """Set numba up in a background thread, once per process (a daemon; returns it).

    Called by the engines before they read when a statistic of the reduction runs compiled
    loops (:attr:`~scoreframe.stats._statistics.Statistic.compiled`): the set-up overlaps the
    read instead of stalling the workers. Without numba it does nothing.

    >>> warm_up().join(timeout=60)
    """
    with _warming_lock:
        if not _warming:
            t = threading.Thread(target=_warm, name="scoreframe-numba-warm-up", daemon=True)
            t.start()
            _warming.append(t)
        return _warming[0]
