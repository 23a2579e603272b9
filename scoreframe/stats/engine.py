"""One reduction, three places to run it: in memory, out of core, on Dask workers.

:func:`compute_statistics` is the statistics layer's entry point: it resolves the grouping of
an evaluation, checks the data in the same pass (null/NaN scores, unrecognized labels, empty
selections; duplicated trials by their id columns unless the dataset was validated when it was
written or ``validate=False``), and returns the final statistics of every result unit.

Engines (``engine=``, resolved by :func:`~scoreframe.stats._engine_option.as_engine`):
``"auto"`` reduces in memory when the selected trials fit in the engine's ``memory_limit``
(at the measured bytes per trial of :func:`bytes_per_trial`), and out of core
(:mod:`scoreframe.stats.outofcore`: range-partitioned by score, spilled to a temporary
directory that is always removed) when they do not; ``"memory"`` and ``"streaming"`` force one
or the other; ``"dask"`` runs the out-of-core tasks on Dask workers
(:mod:`scoreframe.stats.dask`). Results are identical.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scoreframe._cores import usable_cores
from scoreframe.errors import FormatError, Place, ValidationError, message
from scoreframe.frames.lazy import Data, as_lazy, is_frame_like, scan_raw
from scoreframe.kernels.compiled import warm_up
from scoreframe.stats._engine_option import (
    DEFAULT_MEMORY_LIMIT,
    ENGINE_KINDS,
    Engine,
    EngineLike,
    as_engine,
    parse_memory,
)
from scoreframe.stats.groups import class_plan, plan_units
from scoreframe.stats.reduce import (
    Statistics,
    check_counts,
    check_duplicates,
    sorted_unit_groups,
    unit_columns,
    unit_statistics,
)
from scoreframe.stats.summary import Request

__all__ = ["DEFAULT_MEMORY_LIMIT", "ENGINES", "Engine", "EngineLike", "Statistics",
           "as_engine", "bytes_per_trial", "compute_statistics", "parse_memory",
           "reduce_statistics", "source_name"]

ENGINES = ENGINE_KINDS
# The constants of ``engine="auto"``: peak resident bytes per trial of the in-memory reduction
# above its input, measured by benchmarks/bench_engine_auto.py (fresh process per case,
# trials with model/segment ids so the duplicate check runs; benchmarks/RESULTS.md, section
# "engine-auto"). Measured (bytes/trial at 1e6 / 3e6 trials, one group | 20 conditions):
#   DataFrame input      52 / 38  | 115 / 56
#   Parquet path         94 / 56  | 130 / 85   (the columns read, then reduced)
#   + replicates, 2 columns (Intervals(bootstrap=100, resample=["model", "segment"])):
#   DataFrame input     198 / 198 | 553 / 345
#   Parquet path        207 / 204 | 564 / 308
# Each constant is the largest measured value (rounded up), so "auto" stays in memory only
# when the measured peak fits; 10^7 trials of a DataFrame with one group (<= 64 B) now fit the
# 1 GiB default, which 128 B/trial sent out of core.
#: Bytes per trial, one group, trials already in memory (a DataFrame).
BYTES_PER_TRIAL = 64
#: Bytes per trial with condition columns (per-group list aggregations, the pooled row).
GROUPED_BYTES_PER_TRIAL = 128
#: Extra bytes per trial when the trials are read by the reduction (a path, a LazyFrame).
READ_BYTES_PER_TRIAL = 48
#: Extra bytes per trial and resampling column when replicates are asked for (the unit hashes,
#: sorted along the scores, their unit codes), one group | with condition columns.
REPLICATE_BYTES_PER_COLUMN = 80
GROUPED_REPLICATE_BYTES_PER_COLUMN = 224


def bytes_per_trial(*, read: bool, grouped: bool, replicate_columns: int) -> int:
    """The in-memory reduction's peak bytes per trial, from the measured constants above.

    >>> bytes_per_trial(read=False, grouped=False, replicate_columns=0)
    64
    """
    per = GROUPED_BYTES_PER_TRIAL if grouped else BYTES_PER_TRIAL
    per += READ_BYTES_PER_TRIAL if read else 0
    rep = GROUPED_REPLICATE_BYTES_PER_COLUMN if grouped else REPLICATE_BYTES_PER_COLUMN
    return per + rep * replicate_columns


def source_name(data: object) -> str:
    """How error messages name the data: the path (a :class:`Place`), or the kind of frame."""
    if isinstance(data, str | Path):
        return Place(data)
    return f"the {type(data).__name__} given"


def _validated_on_write(data: object) -> bool:
    if not isinstance(data, str | Path):
        return False
    from scoreframe.io import parquet as pq_io

    check = getattr(pq_io, "dataset_validated", None)
    return bool(check(data)) if check is not None else False


#: Trials from which a reduction with compiled statistics sets numba up before it reads
#: (:func:`~scoreframe.kernels.compiled.warm_up`); fewer may never run a compiled loop.
WARM_UP_ROWS = 100_000


def _row_estimate(data: object, lf: pl.LazyFrame) -> int:
    """Rows the reduction will hold: exact for frames, from Parquet footers for paths."""
    if isinstance(data, pl.DataFrame):
        return data.height
    if isinstance(data, str | Path):
        try:
            return int(as_lazy(data).select(pl.len()).collect().item())
        except Exception:  # an unreadable footer shows up as a clear error in the pass
            return 0
    if is_frame_like(data) and not isinstance(data, pl.LazyFrame):
        return int(getattr(data, "num_rows", None) or len(data))  # type: ignore[arg-type]  # data is an Arrow table or a frame here (has len)
    return int(lf.select(pl.len()).collect(engine="streaming").item())


def compute_statistics(data: Data, **kw: Any) -> Statistics:
    """Statistics of every result unit of an evaluation (see :func:`reduce_statistics`).

    Errors of the dataframe engine while reading (files that disagree on column types, a
    corrupt page) become a :class:`~scoreframe.errors.FormatError` naming the data.
    """
    try:
        return reduce_statistics(data, **kw)
    except pl.exceptions.PolarsError as exc:
        raise FormatError(message("cannot read the trials", where=source_name(data),
                                  got=str(exc).strip().splitlines()[0][:300],
                                  hint="Check that every file has the same columns and "
                                       "types.")) from None


def reduce_statistics(data: Data, *, by: Sequence[str] = (), equalize_by: Sequence[str] = (),
                       where: str | None = None, pooled: bool = True, request: Request,
                       p: np.ndarray, q: np.ndarray, engine: EngineLike = "auto",
                       validate: bool = True, trial_id: Sequence[str] | None = None,
                       progress: Callable[[int, int], None] | None = None) -> Statistics:
    """Statistics of every result unit of an evaluation (see the module docstring).

    ``p``/``q`` are the operating points' effective priors, needed by the equalized DCF.
    """
    eng = as_engine(engine)
    limit = eng.limit
    where_name = source_name(data)
    lf = scan_raw(data, where=where)  # labels as stored: checked in the pass
    names = lf.collect_schema().names()
    by_cols = list(dict.fromkeys(by))  # a column named twice groups once
    system_cols = ["system"] if "system" in names and "system" not in by_cols else []
    if "system" in by_cols:
        system_cols = ["system"]
        by_cols.remove("system")
    row_cols = [*system_cols, *by_cols]
    eq_cols = [c for c in dict.fromkeys(equalize_by) if c not in row_cols]
    group_cols = [*row_cols, *eq_cols]
    class_col = request.class_column
    if class_col is not None:  # units split by class: the last grouping column
        if class_col not in names:
            raise ValidationError(message(
                f"column `{class_col}` not found", where=where_name,
                expected="a class column for the requested metrics (trial_type with values "
                         "target / nontarget / spoof for the anti-spoofing metrics)",
                got="columns " + ", ".join(names)))
        group_cols = [c for c in group_cols if c != class_col] + [class_col]
    if "score" in names and not (lf.collect_schema()["score"].is_numeric()):
        raise ValidationError(message("column `score` must be numeric", where=where_name,
                                      got=str(lf.collect_schema()["score"])))
    for what, cols in (("by= / --by", by_cols), ("equalize_by= / --equalize-by", eq_cols),
                       ("trial_id= / --trial-id", list(trial_id or []))):
        missing = [c for c in cols if c not in names]
        if missing:
            raise ValidationError(message(
                f"column(s) {', '.join(f'`{c}`' for c in missing)} named in {what} not found",
                where=where_name, got="columns " + ", ".join(names)))
    if request.replicates is not None:
        unit_columns(request.replicates, names)  # resampling columns exist
    trial_id = list(dict.fromkeys(trial_id)) if trial_id else None  # a column named twice
    ids = list(trial_id) if trial_id else [c for c in ("model", "segment") if c in names]
    if ids and not trial_id and len(ids) < 2:
        ids = []  # one of model/segment alone does not identify a trial
    id_cols = [*system_cols, *ids] if ids else []
    check_dups = validate and bool(id_cols) and not _validated_on_write(data)
    per_trial = bytes_per_trial(
        read=not (is_frame_like(data) and not isinstance(data, pl.LazyFrame)),
        grouped=bool(group_cols),
        replicate_columns=0 if request.replicates is None else len(request.replicates.columns)
    ) + request.bytes_per_trial
    compiled = eng.kind != "dask" and any(st.compiled for st in request.statistics)
    rows = _row_estimate(data, lf) if eng.kind == "auto" or compiled else 0
    if compiled and rows >= WARM_UP_ROWS:
        # numba's set-up overlaps the read (the ECE sums' first range would wait for it;
        # replicates first need it well after the read's peak memory, and set it up then)
        warm_up()
    if eng.kind in ("streaming", "dask") or (
            eng.kind == "auto" and rows * per_trial > limit):
        from scoreframe.stats import outofcore

        workers = eng.workers
        return outofcore.compute(
            data, lf, group_cols=group_cols, row_cols=row_cols, system_cols=system_cols,
            pooled=pooled, equalize=bool(equalize_by), request=request, p=p, q=q,
            engine="dask" if eng.kind == "dask" else "local", memory_limit=limit,
            workers=workers if eng.kind == "dask" else (workers or usable_cores()),
            scheduler=eng.scheduler,
            id_cols=id_cols if check_dups else [], where=where, where_name=where_name,
            progress=progress,
            spill_root=None if eng.spill_dir is None else str(eng.spill_dir),
            class_col=class_col)
    keys, base, base_units, checks = sorted_unit_groups(lf, group_cols, request.replicates)
    check_counts(checks, where=where_name, source=data, where_sql=where)
    if check_dups:
        check_duplicates(lf, id_cols, where=where_name)
    units = plan_units(keys, row_cols=row_cols, system_cols=system_cols, pooled=pooled)
    classes_of, partition_of = class_plan(keys, class_col)
    stats = unit_statistics(units, base, request, equalize=bool(equalize_by), p=p, q=q,
                            progress=progress, base_units=base_units,
                            workers=eng.workers or min(2, usable_cores()),
                            classes_of=classes_of, partition_of=partition_of)
    return Statistics(tuple(row_cols), stats, checks, "memory")

