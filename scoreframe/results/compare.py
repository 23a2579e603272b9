"""Paired comparison of two systems on the same trials: is system B really better than A.

Both systems are scored on the same trials, so their metrics are compared on the same bootstrap
replicates: a trial (or a model, a segment) has the same multiplicity in both systems, because
multiplicities depend only on the unit's id, never on the system (see
:mod:`scoreframe.results.bootstrap`). The replicate differences give an interval and a two-sided
p-value for ``diff = b - a``. At every actual-DCF (Bayes) threshold a McNemar test compares the
two systems' decisions trial by trial, separately on targets (misses) and non-targets (false
alarms), with the exact binomial distribution of the discordant pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from scoreframe.errors import AlignmentError, ScoreframeError, message
from scoreframe.frames.lazy import Data, by_columns, scan_raw
from scoreframe.kernels import bootstrap as kb
from scoreframe.metrics import Intervals, declared, interval_metrics, replicate_values
from scoreframe.metrics._options import (
    DEFAULT_OPERATING_POINTS,
    OperatingPointsLike,
    as_operating_points,
)
from scoreframe.metrics.registry import GroupStats, Metric, OperatingPoints
from scoreframe.results._pairs import (
    engine_for,
    id_bucket_parts,
    id_buckets,
    row_count,
)
from scoreframe.results.bootstrap import DEFAULT_INTERVALS
from scoreframe.results.evaluate import group_statistics, validation
from scoreframe.stats.engine import EngineLike, Statistics, as_engine, source_name
from scoreframe.stats.groups import POOLED
from scoreframe.stats.reduce import UnitStats, label_columns

__all__ = ["compare", "compare_statistics", "compared_metrics", "mcnemar_p_value",
           "paired_p_value", "unique_trials"]

KEY = ("model", "segment")


def compared_metrics(families: Sequence[str] = ()) -> list[Metric]:
    """The metrics the paired bootstrap compares: every table metric declared with intervals.

    Those of the binary family, and of the optional ``families`` (``"spoof"``,
    ``"forensic"``) whose statistics the replicates carry.

    >>> [m.name for m in compared_metrics()][:3]
    ['eer', 'cllr', 'min_cllr']
    >>> [m.name for m in compared_metrics(["forensic"])][-2:]
    ['elub_lower_log10', 'elub_upper_log10']
    """
    return [m for m in interval_metrics(declared(family=["binary", *families])) if m.table]


def paired_p_value(diffs: np.ndarray) -> float:
    """Two-sided bootstrap p-value of ``diff = 0``: twice the smaller tail, with the +1 rule.

    ``p = min(1, 2 min(1 + #{d <= 0}, 1 + #{d >= 0}) / (B + 1))`` over the defined replicates:
    the smallest ``1 - ci`` at which the percentile interval of the difference excludes 0
    (Davison & Hinkley 1997, section 4.4). NaN when no replicate is defined.

    Examples
    --------
    >>> paired_p_value(np.array([1.0, 2.0, 3.0, -1.0]))
    0.8
    """
    d = diffs[~np.isnan(diffs)]
    if d.shape[0] == 0:
        return float("nan")
    tail = min(np.count_nonzero(d <= 0), np.count_nonzero(d >= 0)) + 1
    return float(min(1.0, 2.0 * tail / (d.shape[0] + 1)))


def mcnemar_p_value(a_only: int, b_only: int) -> float:
    """Exact McNemar p-value: ``a_only`` trials where only A errs vs ``b_only`` where only B does.

    Under the null hypothesis each discordant trial is A's error or B's with probability 1/2,
    so ``a_only ~ Binomial(a_only + b_only, 1/2)`` (two-sided ``scipy.stats.binomtest``; exact at
    every count). 1 when there is no discordant trial.

    Examples
    --------
    >>> round(mcnemar_p_value(10, 2), 4)
    0.0386
    """
    n = a_only + b_only
    if n == 0:
        return 1.0
    from scipy.stats import binomtest  # ~0.6 s to import: loaded on first use

    return float(binomtest(a_only, n, 0.5).pvalue)


def compare(data: Data, a: str = "sys1", b: str = "sys2", *,
            by: Sequence[str] | str | None = None, where: str | None = None,
            operating_points: OperatingPointsLike = DEFAULT_OPERATING_POINTS,
            intervals: Intervals = DEFAULT_INTERVALS, engine: EngineLike = "auto",
            pooled: bool = True, validate: bool | Sequence[str] = True) -> pl.DataFrame:
    """Compare systems ``a`` and ``b`` on the same trials, per condition.

    Parameters
    ----------
    data
        Trials with a ``system`` column naming ``a`` and ``b``, and ``model``/``segment``
        identifying the trials (both systems must score exactly the same trials).
    a, b
        The two systems; differences are ``b - a`` (negative: ``b`` has the lower cost).
    by, where, operating_points, pooled, validate
        As in :func:`scoreframe.evaluate`.
    engine
        As in :func:`scoreframe.evaluate`, for the statistics pass and for the pairing of the
        two systems' trials (alignment checks, McNemar counts): in memory when the pairing
        fits ``memory_limit``, else in buckets of the trial ids, each a streaming query within
        the limit (on Dask the buckets run on the client). The results are identical.
    intervals
        As in :func:`scoreframe.bootstrap_evaluate` (default 1000 trial-level replicates).
        One reduction pass computes both systems' statistics and replicates; a unit's
        multiplicity depends on its id, never on the system, so the two systems share every
        replicate (paired bootstrap).

    Returns
    -------
    polars.DataFrame
        One row per group x metric (x operating point): the condition columns, ``metric``,
        ``p_target`` (null for threshold-free metrics), ``a``, ``b``, ``diff``, ``diff_lo``,
        ``diff_hi``, ``p_value`` and ``test``. Bootstrap rows (``test = "paired bootstrap"``)
        cover every table metric declared with intervals (:func:`compared_metrics`: ``eer``,
        ``cllr``, ``min_cllr``, ``cal_loss``, ``prbep``, ``act_dcf_norm``, ``min_dcf_norm``);
        McNemar rows (``test = "mcnemar exact"``, metrics ``misses`` and ``false_alarms``)
        give the error counts of the decisions at each Bayes threshold and the exact McNemar
        p-value (``diff_lo``/``diff_hi`` null).

    Raises
    ------
    AlignmentError
        When the two systems do not score the same trials (the message gives the counts).

    See Also
    --------
    scoreframe.evaluate : The metrics of each system.
    scoreframe.bootstrap_evaluate : Intervals of one system.
    scoreframe.views.report.build_report : Both in an HTML report.

    Examples
    --------
    >>> from scoreframe.frames.synth import synth_chunks
    >>> df = next(synth_chunks(3000, n_systems=2, seed=1))
    >>> res = compare(df, "sys1", "sys2", operating_points=0.1,
    ...               intervals=Intervals(bootstrap=200))
    >>> res.filter(pl.col("metric") == "eer").select("metric", "test").rows()
    [('eer', 'paired bootstrap')]
    >>> bool(res["p_value"].is_between(0, 1).all())
    True
    """
    by_cols = [c for c in by_columns(by) if c != "system"]
    opts, ops_in = intervals, as_operating_points(operating_points)
    check, trial_id = validation(validate)
    both = _checked_pair(data, a, b, by_cols, where)
    stats, _ = group_statistics(
        data, by=["system", *by_cols], where=both, p_target=ops_in.p_target,
        c_miss=ops_in.c_miss, c_fa=ops_in.c_fa, pooled=pooled, engine=engine, validate=check,
        trial_id=trial_id, intervals=opts)
    return compare_statistics(data, stats, a, b, by=by_cols, where=where,
                              operating_points=ops_in, intervals=opts, pooled=pooled,
                              engine=engine, unique_trials=unique_trials(data, validate))


def unique_trials(data: Data, validate: bool | Sequence[str]) -> bool:
    """Whether a reduction with ``validate`` leaves each system's ``(model, segment)`` unique.

    True when it checks duplicates on the system and ids within ``(model, segment)``, or
    trusts a validating write's mark (:func:`scoreframe.io.parquet.dataset_validated`) made
    on such ids. Uniqueness on fewer columns implies it on more.

    >>> import polars as pl
    >>> df = pl.DataFrame({"system": ["a"], "model": ["m"], "segment": ["s"]})
    >>> unique_trials(df, True), unique_trials(df, ["model"]), unique_trials(df, ["utt"])
    (True, True, False)
    >>> unique_trials(df, False)
    False
    """
    check, trial_id = validation(validate)
    if not check:
        return False
    if isinstance(data, str | Path):
        from scoreframe.io.parquet import dataset_validated, validation_mark

        if dataset_validated(data):  # the reduction trusts the mark: so does the pairing
            ids = (validation_mark(data) or {}).get("id_columns")
            return isinstance(ids, list) and set(ids) <= {"system", *KEY}
    return set(trial_id or KEY) <= set(KEY)


def _checked_pair(data: Data, a: str, b: str, by_cols: list[str], where: str | None) -> str:
    """The selection of the two systems' trials, after checking the systems and columns."""
    if a == b:
        raise ScoreframeError(message("compare needs two different systems", got=f"{a!r} twice"))
    schema = scan_raw(data, where=where).collect_schema()
    missing = [c for c in ("system", *KEY, "score", "label", *by_cols) if c not in schema]
    if missing:
        raise ScoreframeError(message(
            f"column(s) {', '.join(f'`{c}`' for c in missing)} not found",
            where=source_name(data),
            expected="trials with system, model, segment, score and label columns",
            got=", ".join(schema.names())))
    pair = f"CAST(system AS VARCHAR) IN ({_sql_string(a)}, {_sql_string(b)})"
    return pair if where is None else f"({where}) AND {pair}"


def compare_statistics(data: Data, stats: Statistics, a: str, b: str, *,
                       by: Sequence[str] | str | None, where: str | None,
                       operating_points: OperatingPoints, intervals: Intervals,
                       pooled: bool = True, families: Sequence[str] = (),
                       engine: EngineLike = "auto", unique_trials: bool = False
                       ) -> pl.DataFrame:
    """:func:`compare` from statistics already reduced (e.g. by the report's one pass).

    ``stats`` must hold the units of ``a`` and ``b`` grouped by ``system`` and ``by`` (other
    systems' units are ignored), with the binary metrics' statistics and ``intervals``'
    replicates; ``operating_points`` are those of the reduction. Only the trial-by-trial
    McNemar counts and the alignment checks read ``data`` again: the two systems' rows paired
    on ``(model, segment)`` and reduced to integer counts per condition, in memory or, when
    ``engine`` (as in :func:`compare`) says they do not fit its ``memory_limit``, in buckets
    of the trial ids (each a streaming query; on Dask, on the client). ``families``: optional
    families whose metrics (and replicated statistics) the reduction computed, compared too
    (:func:`compared_metrics`). ``unique_trials``: the reduction checked that each system's
    ``(model, segment)`` are unique (:func:`unique_trials`); the pairing then tries the rows'
    order first.
    """
    by_cols = [c for c in by_columns(by) if c != "system"]
    ops, opts = operating_points, intervals
    mcnemar = _mcnemar(data, a, b, by_cols, where, pooled and bool(by_cols), ops, engine,
                       unique=unique_trials)
    per_sys: dict[str, list[UnitStats]] = {a: [], b: []}
    for us in stats.units:
        name = str(us.unit.key.get("system"))
        if name in per_sys:
            per_sys[name].append(us)
    cond_a = [{c: us.unit.key[c] for c in by_cols} for us in per_sys[a]]
    if cond_a != [{c: us.unit.key[c] for c in by_cols} for us in per_sys[b]]:
        raise AlignmentError(message("the two systems' trials fall into different conditions",
                                     hint="Condition columns must be properties of the trial."))
    metrics = compared_metrics(families)
    out: list[dict[str, object]] = []
    for key, ua, ub in zip(cond_a, per_sys[a], per_sys[b], strict=True):
        out.extend(_paired_rows(key, ua, ub, ops, metrics, opts))
    out.extend(mcnemar)
    frame = pl.from_dicts(out, infer_schema_length=None).with_columns(
        pl.col("p_target").cast(pl.Float64),
        *[pl.col(c).cast(pl.Float64) for c in ("a", "b", "diff", "diff_lo", "diff_hi",
                                                "p_value")])
    names = [m.name for m in metrics]
    order = pl.DataFrame({"metric": [*names, "misses", "false_alarms"],
                          "__m": list(range(len(names) + 2))})
    sort_keys = []
    if by_cols:
        frame = frame.with_columns(pl.all_horizontal([pl.col(c) == POOLED for c in by_cols])
                                   .alias("__pooled"))
        sort_keys = ["__pooled", *by_cols]
    frame = frame.join(order, on="metric", how="left").sort([*sort_keys, "__m", "p_target"],
                                                             nulls_last=False)
    return frame.select(*by_cols, "metric", "p_target", "a", "b", "diff", "diff_lo", "diff_hi",
                        "p_value", "test")


def _sql_string(v: str) -> str:
    return "'" + v.replace("'", "''") + "'"


def _label_expr(schema: pl.Schema) -> pl.Expr:
    return label_columns(schema)[0]


def _paired_rows(key: Mapping[str, object], ua: UnitStats, ub: UnitStats, ops: OperatingPoints,
                 metrics: list[Metric], opts: Intervals) -> list[dict[str, object]]:
    """The paired-bootstrap rows of one condition: ``b - a`` per metric and operating point."""
    boot = opts.bootstrap
    sa, sb = ua.stats, ub.stats
    ok = sa.n_tar and sa.n_non and sb.n_tar and sb.n_non
    ra = replicate_values(sa, ops, metrics) if ok else {}
    rb = replicate_values(sb, ops, metrics) if ok else {}
    ga, gb = GroupStats(sa, ops), GroupStats(sb, ops)
    # jackknife rows that delete nothing of this condition do not count (BCa)
    untouched = np.array([st.n_tar == sa.n_tar and st.n_non == sa.n_non
                          for st in sa.replicates[boot:]], dtype=bool)
    rows: list[dict[str, object]] = []
    for m in metrics:
        points = list(ops.p_target) if m.per_operating_point else [None]
        # a metric without a value (None: e.g. a group without spoofs) is NaN
        va = np.atleast_1d(np.asarray(m.compute(ga), dtype=np.float64)) if ok else None
        vb = np.atleast_1d(np.asarray(m.compute(gb), dtype=np.float64)) if ok else None
        for kp, pt in enumerate(points):
            row: dict[str, object] = dict(key) | {"metric": m.name, "p_target": pt,
                                                  "test": "paired bootstrap"}
            if not ok or va is None or vb is None:
                rows.append(row | dict.fromkeys(("a", "b", "diff", "diff_lo", "diff_hi",
                                                 "p_value")))
                continue
            k = (m.name, m.per_operating_point)
            with np.errstate(invalid="ignore"):  # inf - inf (an infinite Cllr) is NaN
                d = rb[k] - ra[k]
                d = d[:, kp] if m.per_operating_point else d
                diff = float(vb[kp] - va[kp])
                if opts.method == "bca":
                    jk = d[boot:].copy()
                    jk[untouched] = np.nan
                    lo, hi = kb.bca_interval(d[:boot, None], np.array([diff]), jk[:, None],
                                             opts.ci)
                else:
                    lo, hi = kb.percentile_interval(d[:boot, None], opts.ci)
            rows.append(row | {"a": float(va[kp]), "b": float(vb[kp]), "diff": diff,
                               "diff_lo": _num(lo[0]), "diff_hi": _num(hi[0]),
                               "p_value": _num(paired_p_value(d[:boot]))})
    return rows


def _num(v: float) -> float | None:
    return None if np.isnan(v) else float(v)


#: Peak bytes per input row (of the two systems) while one bucket of trials is paired: the
#: hash aggregation by ``(model, segment)`` (string ids, the two scores, labels and the
#: condition of each trial). Measured at 10^7 synth trials per system by condition, streaming
#: engine: 446 MB peak with 20 buckets of 1e6 rows, 857 MB with 5 buckets of 4e6 rows, i.e.
#: ~137 B per row above ~300 MB of interpreter and libraries; rounded up.
PAIR_BYTES_PER_ROW = 160

#: Peak bytes per input row (of the two systems) while the rows are paired in their order.
#: The query holds no hash table, but Polars buffers the rows of one system while the scan
#: of the other has not reached its own: when one file holds all of ``a``'s rows before
#: ``b``'s, that is every row of ``a``. Measured at 10^7 synth trials per system (short
#: string ids): ~46 B per input row above the interpreter in that layout, ~23 B with one
#: directory per system; rounded up. Longer ids (over 12 bytes) take more.
IN_ORDER_BYTES_PER_ROW = 48

#: The per-group integer sums of the pairing: alignment counts, then per threshold the 8
#: McNemar counts (errors of a, of b, a-only and b-only errors; on targets, on non-targets).
_COUNTS = ("rows_a", "rows_b", "dup_a", "dup_b", "only_a", "only_b", "bad_label")
_MCNEMAR = ("miss_a", "miss_b", "miss_ao", "miss_bo", "fa_a", "fa_b", "fa_ao", "fa_bo")


def _pair_sums(lf: pl.LazyFrame, a: str, b: str, by: list[str],
               thresholds: list[float]) -> pl.LazyFrame:
    """The pairing of one bucket of trials, reduced to integer sums per condition of ``a``.

    A group-by on ``(model, segment)`` of both systems' rows (a full join that also counts the
    rows of each side per trial) gives each trial's row counts, scores and labels; a second
    group-by on the conditions sums, per condition, :data:`_COUNTS` and for each threshold
    :data:`_MCNEMAR` (the McNemar counts are only read when every trial is paired once).
    """
    one = pl.lit(1, dtype=pl.Int64)
    is_a, is_b = pl.col("system") == a, pl.col("system") == b
    keyed = lf.select(
        *[pl.col(c).cast(pl.String) for c in KEY],
        pl.when(is_a).then(one).otherwise(0).alias("__na"),
        pl.when(is_b).then(one).otherwise(0).alias("__nb"),
        pl.when(is_a).then(pl.col("score")).alias("__sa"),
        pl.when(is_b).then(pl.col("score")).alias("__sb"),
        pl.when(is_a).then(pl.col("label")).alias("__la"),
        pl.when(is_b).then(pl.col("label")).alias("__lb"),
        *[pl.when(is_a).then(pl.col(c).cast(pl.String)).alias(c) for c in by])
    trials = keyed.group_by(list(KEY)).agg(
        pl.col("__na", "__nb").sum(), pl.col("__sa", "__sb", "__la", "__lb").max(),
        *[pl.col(c).max() for c in by])
    na, nb = pl.col("__na"), pl.col("__nb")
    lab, paired = pl.col("__la"), (na > 0) & (nb > 0)
    flags = [na.alias("rows_a"), nb.alias("rows_b"), (na - 1).clip(0).alias("dup_a"),
             (nb - 1).clip(0).alias("dup_b"), ((na > 0) & (nb == 0)).alias("only_a"),
             ((nb > 0) & (na == 0)).alias("only_b"),
             (paired & (lab != pl.col("__lb"))).alias("bad_label")]
    return _summed(trials, by, [*flags, *_decision_flags(thresholds)])


def _positional_sums(sel: pl.LazyFrame, label: pl.Expr, a: str, b: str, by: list[str],
                     thresholds: list[float]) -> pl.LazyFrame:
    """:func:`_pair_sums` when row ``i`` of ``a`` and row ``i`` of ``b`` are the same trial.

    The usual layout: both systems scored one trial list in its order. The two systems' rows
    are put side by side in their order (no hash table; a streaming query that may buffer one
    system's rows, see :data:`IN_ORDER_BYTES_PER_ROW`);
    the extra sum ``moved`` counts the rows whose ``(model, segment)`` differ between the two
    sides (a missing row on one side counts too). The sums are those of :func:`_pair_sums`
    only when ``moved`` is 0 and each system's ``(model, segment)`` are unique; otherwise the
    caller pairs by hash.
    """
    def side(name: str, tag: str, extra: list[str]) -> pl.LazyFrame:
        return sel.filter(pl.col("system").cast(pl.String) == name).with_columns(
            label).filter(pl.col("label").is_not_null()).select(
            *[pl.col(c).cast(pl.String).alias(f"__k{tag}_{c}") for c in KEY],
            *[pl.col(c).cast(pl.String) for c in extra],  # the conditions of a's trials
            pl.col("score").cast(pl.Float64).alias(f"__s{tag}"),
            pl.col("label").alias(f"__l{tag}"), pl.lit(True).alias(f"__p{tag}"))

    rows = pl.concat([side(a, "a", by), side(b, "b", [])], how="horizontal_extend")
    present_a, present_b = pl.col("__pa").is_not_null(), pl.col("__pb").is_not_null()
    moved = pl.lit(False)
    for c in KEY:
        moved = moved | (pl.col(f"__ka_{c}") != pl.col(f"__kb_{c}")).fill_null(True)
    lab, zero = pl.col("__la"), pl.lit(False)
    flags = [present_a.alias("rows_a"), present_b.alias("rows_b"), zero.alias("dup_a"),
             zero.alias("dup_b"), zero.alias("only_a"), zero.alias("only_b"),
             (lab != pl.col("__lb")).fill_null(False).alias("bad_label"), moved.alias("moved")]
    return _summed(rows, by, [*flags, *_decision_flags(thresholds)])


def _summed(trials: pl.LazyFrame, by: list[str], flags: list[pl.Expr]) -> pl.LazyFrame:
    """Each flag of the paired trials summed as an integer, per condition (``by``)."""
    sums = [pl.col(f.meta.output_name()).cast(pl.Int64).sum() for f in flags]
    per = trials.select(*by, *flags)
    return per.group_by(by).agg(sums) if by else per.select(sums)


def _decision_flags(thresholds: list[float]) -> list[pl.Expr]:
    """Per threshold, the :data:`_MCNEMAR` flags of a paired trial (``__sa/__sb/__la``)."""
    lab, flags = pl.col("__la"), []
    for k, t in enumerate(thresholds):
        acc_a = pl.col("__sa") >= t  # accept iff llr >= threshold (ties accept)
        acc_b = pl.col("__sb") >= t
        flags += [(lab & ~acc_a).alias(f"miss_a{k}"), (lab & ~acc_b).alias(f"miss_b{k}"),
                  (lab & ~acc_a & acc_b).alias(f"miss_ao{k}"),
                  (lab & acc_a & ~acc_b).alias(f"miss_bo{k}"),
                  (~lab & acc_a).alias(f"fa_a{k}"), (~lab & acc_b).alias(f"fa_b{k}"),
                  (~lab & acc_a & ~acc_b).alias(f"fa_ao{k}"),
                  (~lab & ~acc_a & acc_b).alias(f"fa_bo{k}")]
    return flags


def _merge_sums(parts: list[pl.DataFrame], by: list[str]) -> pl.DataFrame:
    """The buckets' sums added up per condition (integers: exact, whatever the buckets)."""
    frame = pl.concat(parts, how="vertical")
    if len(parts) == 1:
        return frame
    cols = [c for c in frame.columns if c not in by]
    return frame.group_by(by).agg(pl.col(cols).sum()) if by else frame.select(
        pl.col(cols).sum())


def _pair_counts(data: Data, a: str, b: str, by: list[str], where: str | None,
                 thresholds: list[float], engine: EngineLike, *,
                 unique: bool = False) -> pl.DataFrame:
    """Per condition of ``a``'s trials, :func:`_pair_sums` of the whole selection.

    ``unique``: each system's ``(model, segment)`` are known to be unique (checked by the
    reduction, or by a validating write). Then, when the engine is ``memory`` or the rows fit
    its ``memory_limit`` at :data:`IN_ORDER_BYTES_PER_ROW`, the rows are first paired in
    their order (:func:`_positional_sums`, one streaming query), which is the answer when the
    two systems list the same trials in the same order. Otherwise, or when they do not, by
    hash: in memory when the engine (or ``auto``, from the two systems' row count and
    :data:`PAIR_BYTES_PER_ROW`) says the pairing fits ``memory_limit``; else in buckets of
    the trial ids, each a streaming query (:mod:`scoreframe.results._pairs`; on Dask, on the
    client). Both give the same integer sums.
    """
    both = _checked_pair(data, a, b, by, where)
    schema = scan_raw(data, where=where).collect_schema()
    sel = scan_raw(data, where=both)
    eng = as_engine(engine)
    rows = row_count(sel.select(pl.col("system").cast(pl.String)), [a, b])
    if unique and (eng.kind == "memory" or rows * IN_ORDER_BYTES_PER_ROW <= eng.limit):
        sums = _positional_sums(sel, _label_expr(schema), a, b, by, thresholds).collect(
            engine="streaming")
        if int(sums["moved"].sum()) == 0:
            return sums.drop("moved")
    eng = engine_for(eng, rows, PAIR_BYTES_PER_ROW)
    in_memory = eng.kind == "memory"
    buckets = 1 if in_memory else id_buckets(rows, eng.limit, bytes_per_row=PAIR_BYTES_PER_ROW)
    parts = []
    for _, part in id_bucket_parts(sel, KEY, buckets):
        lf = part.with_columns(pl.col("system").cast(pl.String), _label_expr(schema),
                               pl.col("score").cast(pl.Float64)
                               ).filter(pl.col("label").is_not_null())
        # Polars' streaming engine also when the pairing fits in memory: it aggregates the
        # same rows 3x faster than its in-memory engine (Polars 2.1, 2*10^6 rows: 0.45 vs
        # 1.4 s), with the peak PAIR_BYTES_PER_ROW was measured on
        parts.append(_pair_sums(lf, a, b, by, thresholds).collect(engine="streaming"))
    return _merge_sums(parts, by)


def _mcnemar(data: Data, a: str, b: str, by: list[str], where: str | None, pooled: bool,
             ops: OperatingPoints, engine: EngineLike, *, unique: bool = False
             ) -> list[dict[str, object]]:
    """The alignment checks (errors), then the McNemar rows of every condition (and pooled)."""
    thresholds = [float(t) for t in ops.threshold.tolist()]
    sums = _pair_counts(data, a, b, by, where, thresholds, engine, unique=unique)
    total = {c: int(sums[c].sum()) for c in _COUNTS}
    for name, tag in ((a, "a"), (b, "b")):
        if total[f"rows_{tag}"] == 0:
            raise ScoreframeError(message(f"system `{name}` has no trials",
                                          hint="Check the system names (and `where`)."))
        dup = total[f"dup_{tag}"]
        if dup:
            raise AlignmentError(message(f"system `{name}` scores some trials more than once",
                                         got=f"{dup} duplicate (model, segment) trial(s)"))
    only_a, only_b = total["only_a"], total["only_b"]
    if only_a or only_b:
        raise AlignmentError(message(
            f"systems `{a}` and `{b}` do not score the same trials",
            expected="the same (model, segment) trials in both",
            got=f"{only_a} trial(s) only in `{a}`, {only_b} only in `{b}` "
                f"({total['rows_a']} and {total['rows_b']} in all)",
            hint="Restrict both to the common trials (`where=`) or align the score files "
                 "first (scoreframe.align)."))
    if total["bad_label"]:
        raise AlignmentError(message("the two systems disagree on trial labels",
                                     got=f"{total['bad_label']} trial(s) with different labels"))
    tables = [sums]
    if by and pooled:
        cols = [f"{m}{k}" for k in range(len(thresholds)) for m in _MCNEMAR]
        tables.append(sums.select(pl.col(cols).sum()).with_columns(
            [pl.lit(POOLED).alias(c) for c in by]))
    return _mcnemar_rows(tables, by, ops)


def _mcnemar_rows(tables: list[pl.DataFrame], by: list[str],
                  ops: OperatingPoints) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for table in tables:
        for r in table.iter_rows(named=True):
            key = {c: r[c] for c in by}
            for k, pt in enumerate(ops.p_target):
                for metric, pre in (("misses", "miss"), ("false_alarms", "fa")):
                    ea, eb = int(r[f"{pre}_a{k}"]), int(r[f"{pre}_b{k}"])
                    rows.append(key | {
                        "metric": metric, "p_target": pt, "a": float(ea), "b": float(eb),
                        "diff": float(eb - ea), "diff_lo": None, "diff_hi": None,
                        "p_value": mcnemar_p_value(int(r[f"{pre}_ao{k}"]), int(r[f"{pre}_bo{k}"])),
                        "test": "mcnemar exact"})
    return rows
