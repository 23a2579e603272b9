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

import numpy as np
import polars as pl
from scipy.stats import binomtest

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
from scoreframe.results.bootstrap import DEFAULT_INTERVALS
from scoreframe.results.evaluate import group_statistics, validation
from scoreframe.stats.engine import EngineLike, Statistics, source_name
from scoreframe.stats.groups import POOLED
from scoreframe.stats.reduce import UnitStats, label_columns

__all__ = ["compare", "compare_statistics", "compared_metrics", "mcnemar_p_value",
           "paired_p_value"]

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
    by, where, operating_points, engine, pooled, validate
        As in :func:`scoreframe.evaluate`.
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
                              operating_points=ops_in, intervals=opts, pooled=pooled)


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
                       pooled: bool = True, families: Sequence[str] = ()) -> pl.DataFrame:
    """:func:`compare` from statistics already reduced (e.g. by the report's one pass).

    ``stats`` must hold the units of ``a`` and ``b`` grouped by ``system`` and ``by`` (other
    systems' units are ignored), with the binary metrics' statistics and ``intervals``'
    replicates; ``operating_points`` are those of the reduction. Only the trial-by-trial
    McNemar counts and the alignment checks read ``data`` again (the two systems' trials,
    side by side). ``families``: optional families whose metrics (and replicated statistics)
    the reduction computed, compared too (:func:`compared_metrics`).
    """
    by_cols = [c for c in by_columns(by) if c != "system"]
    ops, opts = operating_points, intervals
    both = _checked_pair(data, a, b, by_cols, where)
    schema = scan_raw(data, where=where).collect_schema()
    aligned = _aligned(scan_raw(data, where=both).with_columns(
        _label_expr(schema)).filter(pl.col("label").is_not_null()), a, b, by_cols)
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
    with_pool = pooled and bool(by_cols)
    out.extend(_mcnemar_rows(aligned, by_cols, with_pool, ops))
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


def _aligned(lf: pl.LazyFrame, a: str, b: str, by: list[str]) -> pl.DataFrame:
    """The trials of ``a`` and ``b`` side by side (``score_a``, ``score_b``), or an error."""
    cols = [*KEY, "score", "label", *by]
    base = lf.select(pl.col("system").cast(pl.String), *[pl.col(c).cast(pl.String)
                                                         for c in (*KEY, *by)],
                     pl.col("score").cast(pl.Float64), "label")
    fa = base.filter(pl.col("system") == a).select(cols).collect()
    fb = base.filter(pl.col("system") == b).select(cols).collect()
    for name, f in ((a, fa), (b, fb)):
        if f.height == 0:
            raise ScoreframeError(message(f"system `{name}` has no trials",
                                          hint="Check the system names (and `where`)."))
        dup = f.height - f.select(KEY).unique().height
        if dup:
            raise AlignmentError(message(f"system `{name}` scores some trials more than once",
                                         got=f"{dup} duplicate (model, segment) trial(s)"))
    only_a = fa.join(fb, on=list(KEY), how="anti").height
    only_b = fb.join(fa, on=list(KEY), how="anti").height
    if only_a or only_b:
        raise AlignmentError(message(
            f"systems `{a}` and `{b}` do not score the same trials",
            expected="the same (model, segment) trials in both",
            got=f"{only_a} trial(s) only in `{a}`, {only_b} only in `{b}` "
                f"({fa.height} and {fb.height} in all)",
            hint="Restrict both to the common trials (`where=`) or align the score files "
                 "first (scoreframe.align)."))
    joined = fa.join(fb.select(*KEY, pl.col("score").alias("score_b"),
                               pl.col("label").alias("label_b")), on=list(KEY))
    bad = joined.filter(pl.col("label") != pl.col("label_b")).height
    if bad:
        raise AlignmentError(message("the two systems disagree on trial labels",
                                     got=f"{bad} trial(s) with different labels"))
    return joined.rename({"score": "score_a"}).drop("label_b")


def _mcnemar_rows(aligned: pl.DataFrame, by: list[str], pooled: bool,
                  ops: OperatingPoints) -> list[dict[str, object]]:
    thr = ops.threshold
    lab = pl.col("label")
    aggs = []
    for k, t in enumerate(thr.tolist()):
        acc_a = pl.col("score_a") >= t  # accept iff llr >= threshold (ties accept)
        acc_b = pl.col("score_b") >= t
        aggs += [(lab & ~acc_a).sum().alias(f"miss_a{k}"), (lab & ~acc_b).sum().alias(f"miss_b{k}"),
                 (lab & ~acc_a & acc_b).sum().alias(f"miss_ao{k}"),
                 (lab & acc_a & ~acc_b).sum().alias(f"miss_bo{k}"),
                 (~lab & acc_a).sum().alias(f"fa_a{k}"), (~lab & acc_b).sum().alias(f"fa_b{k}"),
                 (~lab & acc_a & ~acc_b).sum().alias(f"fa_ao{k}"),
                 (~lab & ~acc_a & acc_b).sum().alias(f"fa_bo{k}")]
    tables = []
    if by:
        tables.append(aligned.group_by(by).agg(aggs))
        if pooled:
            tables.append(aligned.select(aggs).with_columns(
                [pl.lit(POOLED).alias(c) for c in by]))
    else:
        tables.append(aligned.select(aggs))
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
