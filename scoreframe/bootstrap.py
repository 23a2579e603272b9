"""Bootstrap confidence intervals for every metric of :func:`scoreframe.evaluate`.

A replicate is a re-weighting of the one sorted order of each group (see
:mod:`scoreframe.kernels.bootstrap`): no replicate sorts anything. Resampling units are
trials (``resample="trial"``) or id columns (``resample=["model", "segment"]``: the two-way
"subjects" bootstrap, where a trial counts with the product of its model's and its segment's
Poisson multiplicities). Multiplicities come from a counter-based generator keyed by the seed,
the column, the replicate index and a stable hash of the unit's id, so the same seed gives the
same intervals whatever the number of workers, the row order or the file layout. Pooled rows
merge the groups' weighted count tables; they never re-sort.

Two entry points:

* :func:`bootstrap_evaluate` - standalone and frame level: one sort of the data, one row per
  group (and pooled rows) with values and ``_lo``/``_hi`` bounds, laid out like
  :func:`scoreframe.evaluate` so the two join on the group columns;
* :func:`group_intervals` / :func:`system_intervals` - for the statistics layer, which already
  holds sorted groups (:class:`~scoreframe.kernels.bootstrap.SortedGroup`).

:func:`trials_needed` turns intervals into trial-count guidance ([BdV11] section 2.1, the rule
of 30).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from scoreframe.checks import (
    check_choice,
    check_p_targets,
    check_positive,
    check_positive_int,
    check_probability,
)
from scoreframe.errors import ScoreframeError, message, warn_degenerate_groups
from scoreframe.frames import Data, scan_raw
from scoreframe.kernels import bootstrap as kb
from scoreframe.kernels.bootstrap import SortedGroup, Units
from scoreframe.kernels.elementary import effective_prior, operating_points
from scoreframe.stats.engine import source_name
from scoreframe.stats.executors import Executor, LocalExecutor
from scoreframe.stats.reduce import check_trials

__all__ = ["INTERVALS", "POOLED", "TRIAL", "IntervalOptions", "bootstrap_evaluate",
           "group_intervals", "interval_long", "jackknife_plan", "replicate_values",
           "sorted_groups", "system_intervals", "trials_needed"]

F64 = NDArray[np.float64]
#: Resampling unit meaning "each trial".
TRIAL = "trial"
#: Group value of pooled rows (as in :func:`scoreframe.evaluate`).
POOLED = "all"
INTERVALS = ("percentile", "bca")
Interval = Literal["percentile", "bca"]
#: Metrics with one value per group, and per operating point.
SCALARS = kb.SCALARS
PER_POINT = kb.PER_POINT
#: Delete-a-block jackknife for the BCa acceleration: at most this many blocks per column.
JACKKNIFE_BLOCKS = 100
DEFAULT_MEMORY = 512 * 2**20
#: Largest weight matrix of one chunk (below glibc's 32 MiB dynamic mmap threshold).
CACHE_BYTES = 16 * 2**20


@dataclass(frozen=True)
class IntervalOptions:
    """Everything that defines the replicates and the intervals (validated)."""

    p_target: tuple[float, ...] = (0.01,)
    c_miss: float = 1.0
    c_fa: float = 1.0
    bootstrap: int = 1000
    ci: float = 0.95
    seed: int = 0
    interval: Interval = "percentile"
    resample: tuple[str, ...] = (TRIAL,)
    memory_limit: int = DEFAULT_MEMORY

    def __post_init__(self) -> None:
        check_p_targets(self.p_target)
        check_positive(self.c_miss, name="c_miss")
        check_positive(self.c_fa, name="c_fa")
        check_positive_int(self.bootstrap, name="bootstrap", minimum=2)
        check_probability(self.ci, name="ci")
        check_choice(self.interval, name="interval", choices=INTERVALS)
        if not isinstance(self.seed, int | np.integer) or isinstance(self.seed, bool):
            raise ScoreframeError(message("bad `seed`", expected="an integer",
                                          got=repr(self.seed)))
        if not self.resample or (TRIAL in self.resample and len(self.resample) > 1):
            raise ScoreframeError(message(
                "bad `resample`", expected='"trial" or id columns such as ["model", "segment"]',
                got=repr(list(self.resample))))

    def operating_points(self) -> tuple[F64, F64, F64]:
        """Effective priors ``p``, ``1 - p`` and the Bayes thresholds."""
        eff = effective_prior(np.asarray(self.p_target), self.c_miss, self.c_fa)
        return operating_points(p_target=eff)


def _resample_tuple(resample: str | Sequence[str]) -> tuple[str, ...]:
    return (resample,) if isinstance(resample, str) else tuple(resample)


# ---------------------------------------------------------------------------------------------
# the replicate engine (statistics layer side: numpy arrays in, arrays out)


@dataclass(frozen=True, eq=False)
class _Plan:
    """Precomputed structure of a list of groups (and their pooled row)."""

    groups: list[SortedGroup]
    tables: list[kb.ReplicateTable | None]
    cells: list[np.ndarray | None]  # per group: cell starts when it has ties, else None
    pooled_index: list[np.ndarray]
    pooled_table: kb.ReplicateTable | None
    columns: tuple[str, ...]
    n_items: int


def _plan(groups: Sequence[SortedGroup], pooled: bool, thr: F64,
          columns: tuple[str, ...]) -> _Plan:
    tables: list[kb.ReplicateTable | None] = []
    cells: list[np.ndarray | None] = []
    cell_lists = []
    for g in groups:
        ok = g.n_tar > 0 and g.n_non > 0
        tables.append(kb.replicate_table(g.score, g.label, thr) if ok else None)
        starts = kb.trial_cells(g.score, g.label)
        cells.append(None if starts.shape[0] == g.score.shape[0] else starts)
        cell_lists.append((g.score[starts], g.label[starts]))
    pooled_table: Any = None
    index: list[Any] = []
    if pooled:
        score, lab, index = kb.pooled_cells(cell_lists)
        if lab.any() and not lab.all():
            pooled_table = kb.replicate_table(score, lab, thr)
    n = sum(g.score.shape[0] for g in groups) + (0 if pooled_table is None else
                                                  pooled_table.n)
    return _Plan(list(groups), tables, cells, index, pooled_table, columns, n)


def _multiplicities(plan: _Plan, rows: np.ndarray, kind: str, seed: int,
                    jack: dict[str, tuple[int, int, np.ndarray]] | None = None
                    ) -> list[dict[str, np.ndarray]]:
    """Per group: the unit multiplicities ``(b, U)`` of every resampling column."""
    cache: dict[tuple[str, int], np.ndarray] = {}
    out = []
    for g in plan.groups:
        mult = {}
        for c in plan.columns:
            u = g.units[c]
            key = (c, id(u.hashes))
            if key not in cache:
                if kind == "poisson":
                    cache[key] = kb.poisson_multiplicities(u.hashes, rows,
                                                           key=kb.stream_key(seed, c))
                elif kind == "ones" or jack is None:
                    cache[key] = np.ones((rows.shape[0], u.n_units), dtype=np.uint8)
                else:
                    first, count, block = jack[c][0], jack[c][1], jack[c][2]
                    local = rows - first
                    inside = (local >= 0) & (local < count)
                    m = np.ones((rows.shape[0], u.n_units), dtype=np.uint8)
                    m[inside] = (block[None, :] != local[inside][:, None])
                    cache[key] = m
            mult[c] = cache[key]
        out.append(mult)
    return out


def _run_chunk(plan: _Plan, p: F64, q: F64, kind: str, seed: int, jack: dict | None,
               rows: np.ndarray) -> list[dict[str, F64] | None]:
    """One task: the metrics of replicates ``rows`` for every group (module level, picklable)."""
    mults = _multiplicities(plan, rows, kind, seed, jack)
    results: list[dict[str, F64] | None] = []
    pooled_w = (np.zeros((rows.shape[0], plan.pooled_table.n))
                if plan.pooled_table is not None else None)
    for i, g in enumerate(plan.groups):
        w = kb.trial_weights(mults[i], g.units)
        table = plan.tables[i]
        res = None if table is None else kb.replicate_metrics(table, w, p, q)
        if kind == "jackknife" and res is not None:
            untouched = w.sum(axis=1) == g.score.shape[0]  # this row deletes nothing here
            for v in res.values():
                v[untouched] = np.nan
        results.append(res)
        if pooled_w is not None:
            starts = plan.cells[i]
            cw = w if starts is None else np.add.reduceat(w, starts, axis=1)
            pooled_w[:, plan.pooled_index[i]] += cw
    if plan.pooled_table is not None:
        assert pooled_w is not None
        res = kb.replicate_metrics(plan.pooled_table, pooled_w, p, q)
        if kind == "jackknife":
            untouched = pooled_w.sum(axis=1) == sum(g.score.shape[0] for g in plan.groups)
            for v in res.values():
                v[untouched] = np.nan
        results.append(res)
    elif plan.pooled_index:
        results.append(None)
    return results


def replicate_values(groups: Sequence[SortedGroup], *, options: IntervalOptions,
                     pooled: bool = False, executor: Executor | None = None,
                     rows: np.ndarray | None = None, kind: str = "poisson",
                     jack: dict | None = None) -> list[dict[str, F64] | None]:
    """Metric values of every replicate, per group (and the pooled row last when ``pooled``).

    ``kind`` is ``"poisson"`` (bootstrap replicates ``rows``, default ``0 .. B-1``), ``"ones"``
    (the full data: point values) or ``"jackknife"`` (rows and ``jack`` from
    :func:`jackknife_plan`; NaN where a row deletes nothing of the group).

    Each entry maps ``eer``, ``cllr``, ``min_cllr`` to arrays ``(B,)`` and ``act_dcf_norm``,
    ``min_dcf_norm``, ``pmiss_min``, ``pfa_min`` to ``(B, K)``; ``None`` for a group without
    targets or non-targets. Replicates run in chunks sized to ``options.memory_limit`` on the
    executor's workers; results are independent of both.
    """
    p, q, thr = options.operating_points()
    for g in groups:
        missing = [c for c in options.resample if c not in g.units]
        if missing:
            raise ScoreframeError(message(
                "a group has no units for the resampling column(s) "
                + ", ".join(f"`{c}`" for c in missing),
                expected=", ".join(options.resample), got=", ".join(g.units) or "none"))
    plan = _plan(groups, pooled, thr, options.resample)
    if rows is None:
        rows = np.arange(options.bootstrap, dtype=np.int64)
    ex = executor or LocalExecutor(workers=min(2, os.cpu_count() or 1))
    # Rows per chunk: within the memory budget, and each (rows x trials) float64 matrix at
    # most CACHE_BYTES, so the allocator reuses its memory instead of mapping fresh pages
    # for every chunk (large temporaries cost more in page faults than in arithmetic).
    per_row = 8 * 4 * max(plan.n_items, 1)
    largest = max([g.score.shape[0] for g in plan.groups]
                  + [plan.pooled_table.n if plan.pooled_table is not None else 0])
    chunk = int(min(256, max(1, options.memory_limit // (per_row * max(ex.workers, 1))),
                    max(1, CACHE_BYTES // (8 * max(largest, 1)))))
    chunks = [rows[i:i + chunk] for i in range(0, rows.shape[0], chunk)]
    parts = ex.map(partial(_run_chunk, plan, p, q, kind, options.seed, jack), chunks)
    out: list[dict[str, F64] | None] = []
    for i in range(len(parts[0])):
        if parts[0][i] is None:
            out.append(None)
            continue
        out.append({k: np.concatenate([part[i][k] for part in parts])  # type: ignore[index]
                    for k in parts[0][i]})  # type: ignore[union-attr]
    return out


def jackknife_plan(groups: Sequence[SortedGroup], options: IntervalOptions
               ) -> tuple[np.ndarray, dict[str, tuple[int, int, np.ndarray]]]:
    """Jackknife rows over the units of every resampling column (BCa acceleration).

    Returns the row indices and, per column, ``(first row, rows, block of every unit)``: row
    ``first + j`` deletes the units of block ``j`` (one unit per block up to
    ``JACKKNIFE_BLOCKS`` units, else ``JACKKNIFE_BLOCKS`` blocks assigned by id hash). Pass
    both to :func:`replicate_values` with ``kind="jackknife"``.
    """
    jack: dict[str, tuple[int, int, np.ndarray]] = {}
    first = 0
    for c in options.resample:
        hashes = {id(g.units[c].hashes): g.units[c].hashes for g in groups}
        if len(hashes) != 1:
            raise ScoreframeError(message("BCa needs one unit table per resampling column",
                                          got=f"{len(hashes)} tables for `{c}`"))
        h = next(iter(hashes.values()))
        if h.shape[0] <= JACKKNIFE_BLOCKS:
            block, count = np.arange(h.shape[0], dtype=np.int64), h.shape[0]
        else:
            key = kb.stream_key(options.seed, "jackknife:" + c)
            block = (kb.splitmix64(h ^ key) % np.uint64(JACKKNIFE_BLOCKS)).astype(np.int64)
            count = JACKKNIFE_BLOCKS
        jack[c] = (first, count, block)
        first += count
    return np.arange(first, dtype=np.int64), jack


def system_intervals(groups: Sequence[SortedGroup], *, options: IntervalOptions,
                     pooled: bool = False, executor: Executor | None = None
                     ) -> list[dict[str, object] | None]:
    """Point values and intervals of every group (and the pooled row last when ``pooled``).

    Each entry has ``n_replicates`` (replicates where the metrics are defined), for ``eer``,
    ``cllr``, ``min_cllr`` the value and ``_lo``/``_hi``, and for ``act_dcf_norm``,
    ``min_dcf_norm``, ``pmiss_min``, ``pfa_min`` lists (one per operating point) of the value
    and ``_lo``/``_hi``; ``n_miss_min``/``n_fa_min`` are the error counts at the minDCF point.
    """
    reps = replicate_values(groups, options=options, pooled=pooled, executor=executor)
    ones = IntervalOptions(**{**options.__dict__, "bootstrap": 2})
    est = replicate_values(groups, options=ones, pooled=pooled, executor=LocalExecutor(
        workers=1), rows=np.zeros(1, dtype=np.int64), kind="ones")
    jk: list[dict[str, F64] | None] = [None] * len(reps)
    if options.interval == "bca":
        rows, jack = jackknife_plan(groups, options)
        jk = replicate_values(groups, options=options, pooled=pooled, executor=executor,
                              rows=rows, kind="jackknife", jack=jack)
    out: list[dict[str, object] | None] = []
    all_groups = list(groups)
    for i, r in enumerate(reps):
        e = est[i]
        if r is None or e is None:
            out.append(None)
            continue
        if i < len(all_groups):
            n_tar, n_non = all_groups[i].n_tar, all_groups[i].n_non
        else:
            n_tar = sum(g.n_tar for g in all_groups)
            n_non = sum(g.n_non for g in all_groups)
        row: dict[str, object] = {"n_replicates": int(np.count_nonzero(~np.isnan(r["cllr"])))}
        for name in (*SCALARS, *PER_POINT):
            value = e[name][0]
            if options.interval == "bca":
                jv = jk[i]
                assert jv is not None
                lo, hi = kb.bca_interval(r[name], value, jv[name], options.ci)
            else:
                lo, hi = kb.percentile_interval(r[name], options.ci)
            if name in SCALARS:
                row |= {name: float(value), f"{name}_lo": float(lo), f"{name}_hi": float(hi)}
            else:
                row |= {name: value.tolist(), f"{name}_lo": lo.tolist(),
                        f"{name}_hi": hi.tolist()}
        row["n_miss_min"] = [round(v * n_tar) for v in row["pmiss_min"]]  # type: ignore[attr-defined]
        row["n_fa_min"] = [round(v * n_non) for v in row["pfa_min"]]  # type: ignore[attr-defined]
        out.append(row)
    return out


def group_intervals(group: SortedGroup, *, units: Sequence[str] | str = TRIAL,
                    p_target: Sequence[float] | float = (0.01,), c_miss: float = 1.0,
                    c_fa: float = 1.0, bootstrap: int = 1000, ci: float = 0.95, seed: int = 0,
                    interval: Interval = "percentile", executor: Executor | None = None,
                    memory_limit: int = DEFAULT_MEMORY) -> dict[str, object] | None:
    """Intervals of one sorted group (``None`` when it has no targets or no non-targets).

    Examples
    --------
    >>> import numpy as np
    >>> from scoreframe.kernels.bootstrap import Units, splitmix64
    >>> rng = np.random.default_rng(0)
    >>> s = np.concatenate((rng.normal(-2, 2, 300), rng.normal(2, 2, 300)))
    >>> lab = np.repeat([False, True], 300)
    >>> order = np.lexsort((~lab, s))
    >>> trial = Units(np.arange(600), splitmix64(np.arange(600, dtype=np.uint64)))
    >>> g = SortedGroup(s[order], lab[order], {"trial": trial})
    >>> r = group_intervals(g, p_target=0.1, bootstrap=200)
    >>> bool(r["eer_lo"] < r["eer"] < r["eer_hi"])
    True
    """
    opts = IntervalOptions(p_target=tuple(np.atleast_1d(p_target).tolist()), c_miss=c_miss,
                           c_fa=c_fa, bootstrap=bootstrap, ci=ci, seed=seed, interval=interval,
                           resample=_resample_tuple(units), memory_limit=memory_limit)
    return system_intervals([group], options=opts, executor=executor)[0]


# ---------------------------------------------------------------------------------------------
# frame side: one sort of the data into SortedGroups


def _string_hashes(values: pl.Series) -> np.ndarray:
    """Stable hash of each string of ``values`` (UTF-8 bytes)."""
    arr = values.cast(pl.String).to_arrow()
    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    import pyarrow as pa

    arr = arr.cast(pa.large_string())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    return kb.hash_strings(data, offsets)


def sorted_groups(lf: pl.LazyFrame, by: Sequence[str], resample: Sequence[str]
                  ) -> tuple[pl.DataFrame, list[SortedGroup]]:
    """Sort trials once by (group, score, targets first) and build every group's units.

    Returns the group keys (one row per group, sorted) and the groups. Unit ids are hashed by
    value, so a unit has the same multiplicities in every group and every system. With
    ``resample=["trial"]`` a trial is identified by its ``model`` and ``segment`` (whichever
    are present; never ``system``, so the systems of a paired comparison share weights), or
    by its row position within its system when the data has neither.
    """
    schema = lf.collect_schema()
    trial = list(resample) == [TRIAL]
    ids = [c for c in ("model", "segment") if c in schema] if trial else list(resample)
    for c in ("score", "label", *by, *ids):
        if c not in schema:
            raise ScoreframeError(message(
                f"column `{c}` not found",
                expected="score, label, the `by` columns and the resampling columns",
                got=", ".join(schema.names()),
                hint='Resample "trial" needs no id columns; ["model", "segment"] needs both.'))
    keys = [pl.col(c).cast(pl.String).alias(c) for c in by]
    sys_col = ["system"] if "system" in by else []
    pos = (pl.int_range(pl.len()).over(sys_col) if sys_col else pl.int_range(pl.len()))
    df = (lf.select(*keys, pl.col("score").cast(pl.Float64), pl.col("label"),
                    *[pl.col(c).cast(pl.String) for c in ids if c not in by],
                    pos.alias("__pos"))
          .filter(pl.col("label").is_not_null()).collect(engine="streaming"))
    nan = int(df["score"].is_nan().sum())
    if nan:
        raise ScoreframeError(message("column `score` has NaN values", got=f"{nan} NaN score(s)",
                                      hint="NaN scores are rejected at the boundary."))
    for c in ids:
        nulls = int(df[c].null_count())
        if nulls:
            raise ScoreframeError(message(f"column `{c}` has null ids",
                                          got=f"{nulls} null value(s)",
                                          hint="Every resampling unit needs an id."))
    # unit codes and hashes, by value
    unit_tables: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for c in ids:
        uniq = df[c].unique().sort()
        codes = (df[c].rank("dense") - 1).cast(pl.Int64).to_numpy()
        unit_tables[c] = (codes, _string_hashes(uniq))
    if trial:
        if ids:
            h = unit_tables[ids[0]][1][unit_tables[ids[0]][0]]
            for c in ids[1:]:
                h = kb.combine_hashes(h, unit_tables[c][1][unit_tables[c][0]])
        else:
            h = kb.splitmix64(df["__pos"].cast(pl.UInt64).to_numpy())
        df = df.with_columns(pl.Series("__hash", h))
    else:
        df = df.with_columns([pl.Series(f"__code_{c}", unit_tables[c][0]) for c in ids])
    df = df.sort([*by, "score", "label"], descending=[False] * len(by) + [False, True],
                 nulls_last=True, maintain_order=True)
    if by:
        idx = (df.select(by).with_row_index("__i").group_by(by, maintain_order=True)
               .agg(pl.col("__i").first().alias("__start"), pl.len().alias("__n")))
        key_df = idx.select(by)
        bounds = list(zip(idx["__start"].to_list(), idx["__n"].to_list(), strict=True))
    else:
        key_df = pl.DataFrame()
        bounds = [(0, df.height)]
    score = df["score"].to_numpy()
    label = df["label"].to_numpy()
    groups: list[SortedGroup | None] = [None] * len(bounds)
    if trial:
        hashes_all = df["__hash"].to_numpy()
        sys_keys = key_df["system"].to_list() if sys_col else [None] * len(bounds)
        # one unit table per system: the system's trials in sorted-group order
        per_sys: dict[object, list[int]] = {}
        for i, k in enumerate(sys_keys):
            per_sys.setdefault(k, []).append(i)
        for members in per_sys.values():
            sl = [slice(bounds[i][0], bounds[i][0] + bounds[i][1]) for i in members]
            table = np.concatenate([hashes_all[s] for s in sl])
            start = 0
            for i, s in zip(members, sl, strict=True):
                n = s.stop - s.start
                groups[i] = SortedGroup(score[s], label[s], {TRIAL: Units(
                    np.arange(start, start + n, dtype=np.int64), table)})
                start += n
    else:
        id_codes = {c: df[f"__code_{c}"].to_numpy() for c in ids}
        for i, (start, n) in enumerate(bounds):
            s = slice(start, start + n)
            groups[i] = SortedGroup(score[s], label[s], {
                c: Units(id_codes[c][s], unit_tables[c][1]) for c in ids})
    return key_df, [g for g in groups if g is not None]


def bootstrap_evaluate(data: Data, *, by: Sequence[str] | str | None = None,
                       where: str | None = None, p_target: Sequence[float] | float = (0.01,),
                       c_miss: float = 1.0, c_fa: float = 1.0, bootstrap: int = 1000,
                       ci: float = 0.95, resample: str | Sequence[str] = TRIAL, seed: int = 0,
                       interval: Interval = "percentile", pooled: bool = True,
                       workers: int | None = None, executor: Executor | None = None,
                       memory_limit: int = DEFAULT_MEMORY,
                       trial_id: Sequence[str] | None = None, validate: bool = True
                       ) -> pl.DataFrame:
    """Evaluate per condition with bootstrap confidence intervals.

    Parameters
    ----------
    data
        Trials (``score``, ``label``, condition and id columns): anything
        :func:`scoreframe.frames.as_lazy` accepts.
    by, where, p_target, c_miss, c_fa, pooled
        As in :func:`scoreframe.evaluate` (a ``system`` column is always a grouping column).
    bootstrap
        Number of replicates ``B``.
    ci
        Nominal coverage of the intervals.
    resample
        ``"trial"`` (each trial is a unit, identified by its ``model`` and ``segment``), or
        id columns resampled independently: ``["model", "segment"]`` is the two-way bootstrap
        for evaluations that reuse speakers (trials are then not independent).
    seed
        Any integer; the same seed gives identical intervals on any number of workers, any
        row order and any split of the data into files.
    interval
        ``"percentile"`` (default) or ``"bca"`` (bias-corrected and accelerated; acceleration
        from a delete-a-block jackknife over the resampling units).
    workers, executor
        Threads to run replicate chunks on (default: both cores), or an executor.
    memory_limit
        Bytes of weight matrices in flight (all workers together).
    trial_id, validate
        The duplicate-trial check, as in :func:`scoreframe.evaluate`: the columns that
        identify a trial (default ``model`` and ``segment``), or ``validate=False`` to skip it.

    Returns
    -------
    polars.DataFrame
        One row per group: the group columns, ``n_tar``, ``n_non``, ``n_replicates``
        (replicates where the metrics are defined), ``eer``, ``cllr``, ``min_cllr`` each with
        ``_lo``/``_hi``, and ``dcf``: a list of structs per operating point with
        ``p_target``, ``act_dcf_norm``, ``min_dcf_norm``, ``pmiss_min``, ``pfa_min`` (each
        with ``_lo``/``_hi``), ``effective_prior`` and ``n_miss_min``/``n_fa_min`` (error
        counts at the minDCF point). ``min_cllr`` is the exact PAV
        value (without BOSARIS' 1e-6 ramp).

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe.synth import synth_chunks
    >>> df = next(synth_chunks(4000, n_systems=1, seed=3))
    >>> r = bootstrap_evaluate(df, by="gender", p_target=0.1, bootstrap=100)
    >>> r.select("gender", "n_tar").rows()
    [('f', 220), ('m', 180), ('all', 400)]
    >>> bool((r["eer_lo"] <= r["eer"]).all() and (r["eer"] <= r["eer_hi"]).all())
    True
    """
    by_cols = [by] if isinstance(by, str) else list(by or [])
    opts = IntervalOptions(p_target=tuple(np.atleast_1d(p_target).tolist()),
                           c_miss=float(c_miss), c_fa=float(c_fa), bootstrap=bootstrap, ci=ci,
                           seed=int(seed), interval=interval,
                           resample=_resample_tuple(resample), memory_limit=memory_limit)
    # the checks of evaluate: null/NaN scores, label spellings, empty data, duplicate trials
    lf = check_trials(scan_raw(data, where=where), where=source_name(data),
                      validate=validate, trial_id=trial_id)
    names = lf.collect_schema().names()
    if "system" in names and "system" not in by_cols:
        by_cols = ["system", *by_cols]
    cond = [c for c in by_cols if c != "system"]
    keys, groups = sorted_groups(lf, by_cols, opts.resample)
    ex = executor or LocalExecutor(workers=workers if workers is not None
                                   else min(2, os.cpu_count() or 1))
    systems: dict[object, list[int]] = {}
    for i in range(len(groups)):
        systems.setdefault(keys["system"][i] if "system" in by_cols else None, []).append(i)
    rows: list[dict[str, object]] = []
    degenerate: list[tuple[dict[str, object], int, int]] = []
    key_rows = keys.rows(named=True) if by_cols else [{}]
    for sys_key, members in systems.items():
        with_pool = pooled and bool(cond)
        res = system_intervals([groups[i] for i in members], options=opts, pooled=with_pool,
                               executor=ex)
        entries = [(key_rows[i], groups[i].n_tar, groups[i].n_non) for i in members]
        if with_pool:
            pooled_key = ({"system": sys_key} if sys_key is not None else {}) | dict.fromkeys(
                cond, POOLED)
            entries.append((pooled_key, sum(groups[i].n_tar for i in members),
                            sum(groups[i].n_non for i in members)))
        for (key, n_tar, n_non), r in zip(entries, res, strict=True):
            if r is None:
                degenerate.append((dict(key), n_tar, n_non))
            rows.append(_tidy_row(key, n_tar, n_non, r, opts))
    if degenerate:
        warn_degenerate_groups(degenerate, ["intervals of every metric"], what="intervals",
                               stacklevel=2)
    return _frame(rows, by_cols)


def _tidy_row(key: dict, n_tar: int, n_non: int, r: dict[str, object] | None,
              opts: IntervalOptions) -> dict[str, object]:
    row: dict[str, object] = dict(key) | {"n_tar": n_tar, "n_non": n_non}
    row["n_replicates"] = None if r is None else r["n_replicates"]
    for name in SCALARS:
        for suffix in ("", "_lo", "_hi"):
            row[name + suffix] = None if r is None else _finite(r[name + suffix])
    dcf = []
    eff = effective_prior(np.asarray(opts.p_target), opts.c_miss, opts.c_fa)
    for k, pt in enumerate(opts.p_target):
        d: dict[str, object] = {"p_target": pt, "effective_prior": float(eff[k])}
        for name in PER_POINT:
            for suffix in ("", "_lo", "_hi"):
                d[name + suffix] = None if r is None else _finite(
                    r[name + suffix][k])  # type: ignore[index]
        for name in ("n_miss_min", "n_fa_min"):
            d[name] = None if r is None else r[name][k]  # type: ignore[index]
        dcf.append(d)
    row["dcf"] = dcf
    return row


def _finite(v: object) -> float | None:
    f = float(v)  # type: ignore[arg-type]
    return None if math.isnan(f) else f


def _frame(rows: list[dict[str, object]], by: list[str]) -> pl.DataFrame:
    df = pl.from_dicts(rows, infer_schema_length=None)
    floats = [n + s for n in SCALARS for s in ("", "_lo", "_hi")]
    df = df.with_columns(*[pl.col(c).cast(pl.Float64) for c in floats],
                         pl.col("n_replicates").cast(pl.Int64))
    cond = [c for c in by if c != "system"]
    if cond:
        df = df.with_columns(pl.all_horizontal([pl.col(c) == POOLED for c in cond])
                             .alias("__pooled"))
        df = df.sort([*(c for c in by if c == "system"), "__pooled", *cond]).drop("__pooled")
    return df.select([*by, "n_tar", "n_non", "n_replicates", *floats, "dcf"])


def interval_long(results: pl.DataFrame) -> pl.DataFrame:
    """One row per group x metric (x operating point): ``metric, p_target, value, lo, hi``.

    (``effective_prior`` too: the x of the operating point on an NBER plot is its logit.)

    Takes a :func:`bootstrap_evaluate` frame (or an evaluate frame with intervals joined in).
    """
    group = results.columns[: results.columns.index("n_tar")]
    parts = []
    for name in SCALARS:
        parts.append(results.select(*group, pl.lit(name).alias("metric"),
                                    pl.lit(None, dtype=pl.Float64).alias("p_target"),
                                    pl.lit(None, dtype=pl.Float64).alias("effective_prior"),
                                    pl.col(name).alias("value"), pl.col(f"{name}_lo").alias("lo"),
                                    pl.col(f"{name}_hi").alias("hi")))
    flat = results.select(*group, "dcf").explode("dcf").unnest("dcf")
    for name in PER_POINT[:2]:
        parts.append(flat.select(*group, pl.lit(name).alias("metric"),
                                 pl.col("p_target").cast(pl.Float64),
                                 pl.col("effective_prior").cast(pl.Float64),
                                 pl.col(name).alias("value"), pl.col(f"{name}_lo").alias("lo"),
                                 pl.col(f"{name}_hi").alias("hi")))
    return pl.concat(parts)


def trials_needed(results: pl.DataFrame, *, rel_width: float = 0.2) -> pl.DataFrame:
    """How many more targets and non-targets would bring each minDCF interval under a width.

    For each group and operating point of a :func:`bootstrap_evaluate` frame: the present
    relative width ``(hi - lo) / min_dcf_norm``, and the extra targets and non-targets (fewest
    in total) that bring it under ``rel_width``, plus the rule of 30 ([BdV11] section 2.1:
    at least 30 misses and 30 false alarms at the operating point).

    Scaling argument: at the minDCF point, ``DCF = p Pmiss + q Pfa``, and with binomial errors
    ``Var = p^2 Pmiss (1 - Pmiss) / T + q^2 Pfa (1 - Pfa) / N``, so the width scales like
    ``1 / sqrt(errors)``. The measured (bootstrap) width is split into a miss share ``s_m``
    and a false-alarm share ``s_f`` in proportion to those two variance terms; multiplying the
    targets by ``a`` and the non-targets by ``b`` gives width ``w sqrt(s_m / a + s_f / b)``.
    The cheapest ``(a, b)`` with ``a, b >= 1`` meeting the target is
    ``a = sqrt(s_m / T) (sqrt(s_m T) + sqrt(s_f N)) / c`` (and symmetrically ``b``), with
    ``c = (rel_width / present relative width)^2``, clipped at 1 and re-solved for the other
    side. New trials are assumed to behave like the present ones (for a two-way bootstrap:
    new speakers in the same proportions).

    Examples
    --------
    >>> from scoreframe.synth import synth_chunks
    >>> r = bootstrap_evaluate(next(synth_chunks(4000, n_systems=1, seed=3)),
    ...                        p_target=0.1, bootstrap=100)
    >>> g = trials_needed(r, rel_width=0.1)
    >>> bool(g["more_tar"][0] + g["more_non"][0] > 0)
    True
    """
    check_positive(rel_width, name="rel_width")
    group = results.columns[: results.columns.index("n_tar")]
    flat = results.select(*group, "n_tar", "n_non", "dcf").explode("dcf").unnest("dcf")
    out = []
    for row in flat.iter_rows(named=True):
        t, n = row["n_tar"], row["n_non"]
        v, lo, hi = row["min_dcf_norm"], row["min_dcf_norm_lo"], row["min_dcf_norm_hi"]
        rec = {c: row[c] for c in group} | {"p_target": row["p_target"], "n_tar": t,
                                             "n_non": n}
        more_t = more_n = rel = None
        r30_t = r30_n = None
        if None not in (v, lo, hi) and v > 0:
            rel = (hi - lo) / v
            p = float(effective_prior(row["p_target"]))
            pm, pf = row["pmiss_min"], row["pfa_min"]
            vm = p * p * pm * (1 - pm) / t
            vf = (1 - p) ** 2 * pf * (1 - pf) / n
            if vm + vf > 0:
                s_m, s_f = vm / (vm + vf), vf / (vm + vf)
                a, b = _allocate(s_m, s_f, t, n, (rel_width / rel) ** 2)
                more_t = max(0, math.ceil((a - 1) * t))
                more_n = max(0, math.ceil((b - 1) * n))
        if row["n_miss_min"] is not None:
            r30_t = _rule30(row["n_miss_min"], t)
            r30_n = _rule30(row["n_fa_min"], n)
        out.append(rec | {"rel_width": rel, "more_tar": more_t, "more_non": more_n,
                          "n_miss_min": row["n_miss_min"], "n_fa_min": row["n_fa_min"],
                          "rule30_more_tar": r30_t, "rule30_more_non": r30_n})
    return pl.from_dicts(out, infer_schema_length=None)


def _rule30(errors: int, total: int) -> int | None:
    """Extra trials so that the error count reaches 30 at the same error rate."""
    if errors >= 30:
        return 0
    if errors == 0:
        return None
    return math.ceil(total * 30 / errors) - total


def _allocate(s_m: float, s_f: float, t: int, n: int, c: float) -> tuple[float, float]:
    """Cheapest factors ``a, b >= 1`` with ``s_m / a + s_f / b <= c`` (extra trials a T + b N)."""
    if s_m + s_f <= c:
        return 1.0, 1.0
    root = math.sqrt(s_m * t) + math.sqrt(s_f * n)
    a = math.sqrt(s_m / t) * root / c
    b = math.sqrt(s_f / n) * root / c
    if a < 1:
        a = 1.0
        b = s_f / (c - s_m) if c > s_m else math.inf
    elif b < 1:
        b = 1.0
        a = s_m / (c - s_f) if c > s_f else math.inf
    return a, b
