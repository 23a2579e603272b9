"""The statistics layer: exact, mergeable summaries of (score, label) per group.

:mod:`~scoreframe.stats.summary` holds the statistics themselves (numpy only: PAV blocks,
Cllr sums, integer error counts, located partial results) and their exact ``merge``;
:mod:`~scoreframe.stats.reduce` reduces trial frames to them in memory with the data checks
folded in; :mod:`~scoreframe.stats.outofcore` does the same out of core (score ranges spilled
to a temporary directory); :mod:`~scoreframe.stats.engine` picks the engine;
:mod:`~scoreframe.stats.executors` and :mod:`~scoreframe.stats.dask` run the tasks on local
threads or Dask workers. See ``docs/architecture.md``.

May import: errors, checks, kernels, io, frames.
"""

from scoreframe.stats._engine_option import Engine, EngineLike, as_engine
from scoreframe.stats.engine import Statistics, compute_statistics, parse_memory
from scoreframe.stats.groups import POOLED, Unit
from scoreframe.stats.reduce import UnitStats
from scoreframe.stats.summary import (
    Context,
    Request,
    ScoreStats,
    merge,
    merge_all,
    reduce_range,
    reduce_sorted,
)

__all__ = ["POOLED", "Context", "Engine", "EngineLike", "Request", "ScoreStats", "Statistics",
           "Unit", "UnitStats", "as_engine", "compute_statistics", "merge", "merge_all",
           "parse_memory", "reduce_range", "reduce_sorted"]
