"""The one engine option: where and how a computation over trials runs.

Every entry point that reads trials takes ``engine=``, as Polars' ``LazyFrame.collect`` does:
a name (``"auto"``, ``"memory"``, ``"streaming"``, ``"dask"``) or an :class:`Engine` object
carrying the settings of that engine. :func:`as_engine` resolves either into an
:class:`Engine`, checked once, in this module only; the entry points pass the value through
untouched (STYLE 21).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from scoreframe.errors import EngineError, ScoreframeError, message

__all__ = ["DEFAULT_MEMORY_LIMIT", "ENGINE_KINDS", "MAX_WORKERS", "Engine", "EngineLike",
           "as_engine", "parse_memory"]

#: Default memory budget of the reduction (bytes): ``"auto"`` runs in memory below it.
DEFAULT_MEMORY_LIMIT = 1024**3

#: The engines, as ``engine=`` names them.
ENGINE_KINDS = ("auto", "memory", "streaming", "dask")
#: Largest ``workers`` (threads here, or Dask workers to wait for).
MAX_WORKERS = 4096
_CHOICES = "'auto', 'memory', 'streaming', 'dask' or an Engine(...)"


def parse_memory(value: int | float | str | None) -> int:
    """A memory size in bytes from ``2GB``, ``512MiB``, ``1e9`` or a number.

    >>> parse_memory("1.5GB"), parse_memory("512MiB"), parse_memory(4096)
    (1500000000, 536870912, 4096)
    """
    if value is None:
        return DEFAULT_MEMORY_LIMIT
    if isinstance(value, int | float) and not isinstance(value, bool):
        v = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMgGtT]i?[bB]?|[bB])?\s*", str(value))
        try:
            v = float(m.group(1)) if m else float("nan")
        except ValueError:
            v = float("nan")
        unit = (m.group(2) or "") if m else ""
        u = unit.lower().rstrip("b")
        mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
                "ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}.get(u)
        v = v * mult if mult is not None else float("nan")
    if not (v >= 1024):  # also catches NaN
        raise ScoreframeError(message("bad `memory_limit`",
                                      expected="a size of at least 1KiB such as 2GB or 512MiB",
                                      got=repr(value)))
    return int(v)


def _bad(name: str, *, expected: str, got: object, hint: str | None = None) -> EngineError:
    return EngineError(message(f"bad `{name}`" if name != "engine" else "unknown `engine`",
                               expected=expected, got=repr(got)[:80], hint=hint),
                       parameter=name)


@dataclass(frozen=True)
class Engine:
    """Where and how trials are reduced: an engine and its settings.

    Results never depend on the engine or its settings: every engine gives the same numbers,
    bit for bit; the settings only bound memory and spread the work.

    Parameters
    ----------
    kind
        ``"auto"`` (default): in memory when the selected trials fit in ``memory_limit``,
        else out of core. ``"memory"``: always in memory. ``"streaming"``: always out of
        core (score ranges spilled to ``spill_dir``, each reduced within ``memory_limit``).
        ``"dask"``: the out-of-core tasks on Dask workers (``pip install scoreframe[dask]``).
    memory_limit
        Memory budget of the reduction: bytes, or a size such as ``"2GB"`` or ``"512MiB"``
        (default 1 GiB). Stored in bytes.
    workers
        Parallel tasks: threads in this process, or the worker processes of a local Dask
        cluster (with a ``scheduler``: wait for this many workers). Default: the cores.
    scheduler
        With ``kind="dask"``: the address of a running scheduler (``"tcp://host:8786"``,
        which must answer within 10 s) or a ``dask.distributed.Client`` (used, not closed).
        Default: a local cluster of ``workers`` processes.
    spill_dir
        Where the out-of-core engines spill score ranges (default ``$SCOREFRAME_SPILL_DIR``
        or the temp dir); on a Dask cluster, a directory every worker can see.

    Raises
    ------
    EngineError
        An unknown ``kind`` (``"local"`` included: it is ``"auto"`` now), a bad setting, a
        ``scheduler`` without ``kind="dask"``, or ``kind="dask"`` without Dask installed.

    See Also
    --------
    as_engine : an ``engine=`` value resolved into an :class:`Engine`.

    Examples
    --------
    >>> Engine("streaming", memory_limit="512MiB").memory_limit
    536870912
    >>> Engine("local")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scoreframe.errors.EngineError: unknown `engine`: expected 'auto', 'memory', ...
    """

    kind: str = "auto"
    memory_limit: int | float | str | None = None
    workers: int | None = None
    scheduler: object = field(default=None, repr=False)
    spill_dir: str | Path | None = None

    def __post_init__(self) -> None:
        """Check every setting and store ``memory_limit`` in bytes."""
        if not isinstance(self.kind, str) or self.kind not in ENGINE_KINDS:
            hint = ("`engine='local'` is now `engine='auto'` (in memory when the trials fit, "
                    "else out of core)." if self.kind == "local" else None)
            raise _bad("engine", expected=_CHOICES, got=self.kind, hint=hint)
        object.__setattr__(self, "memory_limit", parse_memory(self.memory_limit))
        w = self.workers
        if w is not None and (isinstance(w, bool) or not isinstance(w, int)
                              or not 1 <= w <= MAX_WORKERS):
            raise _bad("workers", expected=f"an integer in [1, {MAX_WORKERS}]", got=w)
        if self.spill_dir is not None and (not isinstance(self.spill_dir, str | Path)
                                           or not str(self.spill_dir)):
            raise _bad("spill_dir", expected="a directory path", got=self.spill_dir)
        if self.scheduler is not None:
            if self.kind != "dask":
                raise _bad("scheduler", expected="engine kind 'dask' with a scheduler",
                           got=f"engine kind {self.kind!r}",
                           hint="Use Engine('dask', scheduler=...) (CLI: --engine dask).")
            if isinstance(self.scheduler, str):
                from scoreframe.stats.dask import check_scheduler_address

                check_scheduler_address(self.scheduler)
            elif not (hasattr(self.scheduler, "scheduler") and hasattr(self.scheduler, "map")):
                raise _bad("scheduler", expected="an address such as tcp://host:8786 or a "
                           "dask.distributed.Client", got=type(self.scheduler).__name__)
        if self.kind == "dask":
            from scoreframe.stats.dask import require_distributed

            require_distributed()

    @property
    def limit(self) -> int:
        """The memory budget in bytes."""
        return int(self.memory_limit)  # type: ignore[arg-type]  # bytes after __post_init__


#: What ``engine=`` accepts.
EngineLike = str | Engine


def as_engine(engine: EngineLike) -> Engine:
    """The :class:`Engine` an ``engine=`` value names (an object is returned as it is).

    Examples
    --------
    >>> as_engine("streaming").kind
    'streaming'
    >>> as_engine(Engine(workers=2)).workers
    2
    """
    if isinstance(engine, Engine):
        return engine
    if isinstance(engine, str):
        return Engine(engine)
    raise _bad("engine", expected=_CHOICES, got=engine)
