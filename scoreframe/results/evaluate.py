"""Per-condition binary evaluation of trial tables: statistics in, tidy results out.

Results layer: :func:`scoreframe.stats.engine.compute_statistics` reduces the trials (in
memory, out of core or on Dask) to one set of mergeable statistics per result row; the metric
declarations of :mod:`scoreframe.metrics.registry` turn them into a tidy Polars frame: group
columns first, then counts, then metrics. A pooled row (``"all"`` in every condition column)
is computed from the merged statistics of its groups, never by averaging group metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from scoreframe.checks import check_choice
from scoreframe.errors import (
    DegenerateError,
    DegenerateGroupWarning,
    message,
    warn_degenerate_groups,
)
from scoreframe.frames.lazy import Data, by_columns
from scoreframe.metrics import Intervals, interval_metrics, metric_intervals
from scoreframe.metrics import binary as _binary_declarations  # noqa: F401 - registers metrics
from scoreframe.metrics._options import (
    DEFAULT_OPERATING_POINTS,
    MetricsLike,
    OperatingPointsLike,
    as_operating_points,
    metric_options,
)
from scoreframe.metrics.registry import (
    EER_METHODS,
    GroupStats,
    Metric,
    OperatingPoints,
    declared,
    request_for,
)
from scoreframe.stats.engine import EngineLike, Statistics, compute_statistics
from scoreframe.stats.groups import POOLED
from scoreframe.stats.summary import EqStats, ScoreStats, Statistic, VerificationRequest

__all__ = ["DegenerateGroupWarning", "OperatingPoints", "attach_intervals", "evaluate",
           "explode_dcf", "family_extras", "group_columns", "group_statistics",
           "results_frame", "validation"]



def validation(validate: bool | Sequence[str]) -> tuple[bool, list[str] | None]:
    """``validate=`` as (check duplicates, the id columns to check them on or ``None``).

    >>> validation(["utt_id"]), validation(False)
    ((True, ['utt_id']), (False, None))
    """
    if isinstance(validate, bool):
        return validate, None
    cols = _as_list(validate)
    if not cols or not all(isinstance(c, str) for c in cols):
        from scoreframe.errors import ScoreframeError

        raise ScoreframeError(message("bad `validate`", expected="True, False or id columns",
                                      got=repr(validate)[:80]), parameter="validate")
    return True, cols


def _as_list(x: Sequence[str] | str | None) -> list[str]:
    return by_columns(x)


def group_statistics(data: Data, *, by: Sequence[str] | str | None = None,
                     where: str | None = None, p_target: Sequence[float] | float = (0.01,),
                     c_miss: float = 1.0, c_fa: float = 1.0, eer_method: str = "rocch",
                     equalize_by: Sequence[str] | str | None = None, pooled: bool = True,
                     thresholds: np.ndarray | None = None, det_resolution: float | None = None,
                     engine: EngineLike = "auto", validate: bool = True,
                     trial_id: Sequence[str] | str | None = None,
                     metrics: Sequence[Metric] | None = None,
                     progress: Callable[[int, int], None] | None = None,
                     verification: VerificationRequest | None = None,
                     intervals: Intervals | None = None,
                     statistics: Sequence[Statistic] = ()
                     ) -> tuple[Statistics, OperatingPoints]:
    """The one reduction behind :func:`evaluate`, the curves and the report.

    Extra ``thresholds`` (e.g. the Bayes thresholds of a curve's prior grid), DET corners
    (``det_resolution``) and bootstrap replicates (``intervals``: every unit's statistics
    then carry its replicates) are computed in the same pass. See :func:`evaluate` for the
    rest. ``statistics`` are further typed statistics for the caller's views (curves).
    """
    check_choice(eer_method, name="eer_method", choices=EER_METHODS)
    ops = OperatingPoints(tuple(np.atleast_1d(np.asarray(p_target, dtype=float)).tolist()),
                          c_miss, c_fa)
    chosen = list(metrics) if metrics is not None else declared()
    request = request_for(chosen, ops,
                          eer_method=eer_method, extra_thresholds=thresholds,
                          det_resolution=det_resolution, verification=verification,
                          statistics=statistics)
    if intervals is not None:
        from dataclasses import replace

        from scoreframe.frames.lazy import scan_raw

        names = scan_raw(data).collect_schema().names()
        ids = [c for c in ("model", "segment") if c in names]  # what identifies a trial
        # the replicates carry the statistics the metrics with intervals read (same kernels)
        replicated = tuple(st for m in interval_metrics(chosen, eer_method=eer_method)
                           for st in m.needs)
        request = replace(request, replicates=intervals.replicates(ids),
                          replicated=replicated)
    stats = compute_statistics(
        data, by=_as_list(by), equalize_by=_as_list(equalize_by), where=where, pooled=pooled,
        request=request, p=ops.p, q=ops.q, engine=engine, validate=validate,
        trial_id=_as_list(trial_id) or None, progress=progress)
    return stats, ops


def _value(m: Metric, v: object) -> object:
    if v is None:
        return None
    if m.dtype == "int":
        return int(v)  # type: ignore[call-overload]  # a numeric cell value (typed object)
    if m.dtype == "bool":
        return bool(v)
    return float(v)  # type: ignore[arg-type]  # a numeric cell value (typed object)


def _equalized(members: Sequence[ScoreStats], eq: EqStats, ops: OperatingPoints
               ) -> tuple[float | None, np.ndarray, np.ndarray]:
    k = len(ops.p_target)
    with_t = [s for s in members if s.n_tar]
    with_n = [s for s in members if s.n_non]
    pm = np.mean([s.n_miss[:k] / s.n_tar for s in with_t], axis=0)
    pf = np.mean([s.n_fa[:k] / s.n_non for s in with_n], axis=0)
    return eq.eer, (ops.p * pm + ops.q * pf) / ops.default_dcf, eq.min_dcf / ops.default_dcf


def results_frame(stats: Statistics, ops: OperatingPoints, *, eer_method: str = "rocch",
                  metrics: Sequence[Metric] | None = None,
                  extras: Sequence[dict[str, object]] | None = None,
                  on_group: Callable[[dict[str, object], GroupStats], None] | None = None,
                  intervals: Intervals | None = None,
                  n_replicates: bool = False) -> pl.DataFrame:
    """Tidy results from statistics: one row per unit, metrics as declared in the registry.

    ``extras`` holds, per unit, the values of optional metric families (see
    :mod:`scoreframe.metrics.families`). With ``intervals`` (and statistics that carry
    replicates, see :func:`group_statistics`), every metric declared with intervals gets
    ``_lo``/``_hi`` right after its value (in the ``dcf`` structs for per-point metrics);
    ``n_replicates=True`` adds the number of replicates where the metrics are defined.
    """
    chosen = list(metrics) if metrics is not None else declared()
    group_level = [m for m in chosen if not m.per_operating_point]
    per_point = [m for m in chosen if m.per_operating_point]
    with_iv = interval_metrics(chosen, eer_method=eer_method) if intervals is not None else []
    iv_names = {(m.name, m.per_operating_point) for m in with_iv}
    equalized = any(u.eq is not None or u.members for u in stats.units)
    rows: list[dict[str, object]] = []
    degenerate: list[tuple[dict[str, object], int, int]] = []
    for i, us in enumerate(stats.units):
        g = GroupStats(us.stats, ops, eer_method, dict(extras[i]) if extras else {})
        row: dict[str, object] = dict(us.unit.key)
        row.update({"n_tar": g.n_tar, "n_non": g.n_non})
        points: list[dict[str, object]] = [
            {"p_target": pt, "c_miss": ops.c_miss, "c_fa": ops.c_fa,
             "effective_prior": float(ops.p[k])} for k, pt in enumerate(ops.p_target)]
        iv = metric_intervals(us.stats, ops, with_iv, intervals) \
            if intervals is not None and g.ok else None
        if n_replicates:
            row["n_replicates"] = None if iv is None else iv.n_replicates
        if g.ok:
            if on_group is not None:
                on_group(dict(us.unit.key), g)
            for m in group_level:
                row[m.name] = _value(m, m.compute(g))
                if (m.name, False) in iv_names:
                    lo, hi = iv.bounds[(m.name, False)] if iv is not None else (None, None)
                    row[f"{m.name}_lo"], row[f"{m.name}_hi"] = _bound(lo), _bound(hi)
            for m in per_point:
                values = np.asarray(m.compute(g))
                bounds = iv.bounds.get((m.name, True)) if iv is not None else None
                for k, pt in enumerate(points):
                    pt[m.name] = _value(m, values[k])
                    if bounds is not None:
                        pt[f"{m.name}_lo"] = _bound(bounds[0][k])
                        pt[f"{m.name}_hi"] = _bound(bounds[1][k])
        else:
            degenerate.append((dict(us.unit.key), g.n_tar, g.n_non))
            row.update(dict.fromkeys(m.name for m in group_level))
            row.update(dict.fromkeys(f"{n}_{e}" for n, pp in iv_names if not pp
                                     for e in ("lo", "hi")))
            for pt in points:
                for m in per_point:
                    pt[m.name] = None
                    if (m.name, True) in iv_names:
                        pt[f"{m.name}_lo"] = pt[f"{m.name}_hi"] = None
        if equalized:
            eer = act = mn = None
            if us.eq is not None and g.ok:
                eer, act, mn = _equalized(us.members, us.eq, ops)
            row["eq_eer"] = eer
            for k, pt in enumerate(points):
                pt["eq_act_dcf_norm"] = None if act is None else float(act[k])
                pt["eq_min_dcf_norm"] = None if mn is None else float(mn[k])
        row["dcf"] = points
        rows.append(row)
    if degenerate:
        warn_degenerate_groups(degenerate, [m.name for m in chosen if m.table], stacklevel=3)
    if not rows:
        raise DegenerateError(message("nothing to evaluate", got="no trials with labels"))
    return _tidy(rows, list(stats.row_cols), group_level, equalized,
                 {n for n, pp in iv_names if not pp}, n_replicates)


def _bound(v: object) -> float | None:
    """An interval bound as a float (``None`` where undefined)."""
    if v is None:
        return None
    f = float(v)  # type: ignore[arg-type]  # a numeric cell value (typed object)
    return None if np.isnan(f) else f


def _tidy(rows: list[dict[str, object]], by: list[str], metrics: Sequence[Metric],
          equalized: bool, with_intervals: set[str] | None = None,
          n_replicates: bool = False) -> pl.DataFrame:
    dtypes = {"float": pl.Float64, "int": pl.Int64, "bool": pl.Boolean}
    schema: dict[str, pl.DataType | type[pl.DataType]] = {c: pl.String for c in by}
    schema.update({"n_tar": pl.Int64, "n_non": pl.Int64})
    if n_replicates:
        schema["n_replicates"] = pl.Int64
    for m in metrics:
        schema[m.name] = dtypes[m.dtype]
        if with_intervals and m.name in with_intervals:
            schema[f"{m.name}_lo"] = schema[f"{m.name}_hi"] = pl.Float64
        if m.name == "eer" and equalized:
            schema["eq_eer"] = pl.Float64
    base = pl.from_dicts([{k: v for k, v in r.items() if k != "dcf"} for r in rows],
                         schema=schema)
    dcf = pl.Series("dcf", [r["dcf"] for r in rows])
    df = base.with_columns(dcf)
    cond = [c for c in by if c != "system"]
    if cond:
        df = (df.with_columns(pl.all_horizontal([pl.col(c) == POOLED for c in cond])
                              .alias("__pooled"))
              .sort([*(c for c in by if c == "system"), "__pooled", *cond]).drop("__pooled"))
    return df


def evaluate(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
             metrics: MetricsLike = None,
             operating_points: OperatingPointsLike = DEFAULT_OPERATING_POINTS,
             intervals: Intervals | None = None, engine: EngineLike = "auto",
             equalize_by: Sequence[str] | str | None = None, pooled: bool = True,
             validate: bool | Sequence[str] = True,
             progress: Callable[[int, int], None] | None = None) -> pl.DataFrame:
    """Evaluate binary scores per condition: EER, Cllr, minCllr, PRBEP, actual/min DCF.

    Parameters
    ----------
    data
        Trials (``score``, ``label`` and condition columns; ``model``/``segment`` only if the
        duplicate check should use them): a path (Parquet file, glob or dataset directory,
        scanned lazily), a Polars DataFrame or LazyFrame, a pandas DataFrame or a pyarrow Table.
    by
        Condition columns to group by (a list, or a comma-separated string). When the data
        has a ``system`` column it is always a grouping column (first).
    where
        SQL predicate selecting trials first (``"channel = 'tel'"``).
    metrics
        What to compute besides the binary family (always there): family names and option
        objects, e.g. ``["spoof", "forensic", Biometric(fmr=1e-3), Binary(eer_method="nist")]``.
        ``"spoof"`` (needs a ``trial_type`` column with ``target`` / ``nontarget`` /
        ``spoof``) adds ``a_dcf``, ``a_dcf_threshold`` (a-DCF with the defaults of
        :func:`scoreframe.metrics.spoof.a_dcf`), ``sasv_eer``, ``sv_eer``, ``spf_eer``,
        ``n_spoof``; ``"forensic"`` adds ``auc``, ``rmep``, ``rmed``, ``elub_lower_log10``,
        ``elub_upper_log10`` (scores taken as natural-log llrs; with ``"spoof"``, spoofs
        count as non-targets); ``"biometric"`` or a
        :class:`~scoreframe.metrics.Biometric` adds the ISO/IEC 19795-1 metrics (see there;
        with ``threshold_from`` or ``thresholds``, the list-of-struct column ``fixed``);
        :class:`~scoreframe.metrics.Binary` sets the EER convention (``"rocch"``, BOSARIS,
        by default).
    operating_points
        An :class:`~scoreframe.metrics.OperatingPoints` (target priors with shared costs),
        or target priors with unit costs (``0.01``, ``[0.01, 0.1]``).
    intervals
        An :class:`~scoreframe.metrics.Intervals` (bootstrap replicates, coverage,
        resampling units, seed, percentile or BCa): every metric declared with intervals
        (the float metrics of the binary, spoof and forensic families but
        ``a_dcf_threshold``) gets ``_lo``/``_hi`` after its value (in each ``dcf`` struct for
        per-point metrics), from the same reduction pass. ``None``: no intervals.
    engine
        Where the reduction runs: ``"auto"`` (in memory when the selected trials fit in the
        memory limit, else out of core), ``"memory"``, ``"streaming"`` (out of core),
        ``"dask"``, or an :class:`~scoreframe.Engine` with its settings (memory limit,
        workers, scheduler, spill directory). Results do not depend on it.
    equalize_by
        Condition columns whose partitions are weighted equally inside each group (NIST SRE16
        equalized DCF/EER): adds ``eq_eer`` and ``eq_*_dcf_norm`` to the results.
    pooled
        Add a pooled row per system (``"all"`` in the ``by`` columns) when grouping.
    validate
        Check for duplicated trials by their id columns (``system``, ``model``, ``segment``);
        a list of columns names the id columns instead (``["utt_id"]``); ``False`` skips the
        check. Skipped for datasets written (and so validated) by
        :func:`scoreframe.write_trials`. Null/NaN scores and unrecognized labels are always
        errors; null labels (unknown) are left out.
    progress
        Optional callable ``progress(done, total)``.

    Returns
    -------
    polars.DataFrame
        One row per group: group columns (as strings), ``n_tar``, ``n_non``, the declared
        metrics (``eer``, ``cllr``, ``min_cllr``, ``cal_loss``, ``prbep``, ``c_primary``,
        ``min_c_primary``, ``dr30_ok``) and ``dcf``: a list of structs, one per operating
        point (see :func:`explode_dcf`). Groups without targets or non-targets get null
        metrics and one :class:`DegenerateGroupWarning` naming them. ``.to_pandas()`` converts.

    See Also
    --------
    scoreframe.compare : Two systems, paired.
    scoreframe.bootstrap_evaluate : The same with intervals.
    scoreframe.views.report.build_report : An HTML report.
    scoreframe.explode_dcf : One row per operating point.
    scoreframe.eer, scoreframe.min_dcf : The scalar metrics on arrays.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [2.0, 1.0, -1.0, 0.5], "label": [True, True, False, False],
    ...                    "gender": ["f", "m", "f", "m"]})
    >>> evaluate(df, by="gender", operating_points=0.5).select("gender", "n_tar", "eer").rows()
    [('f', 1, 0.0), ('m', 1, 0.0), ('all', 2, 0.0)]
    """
    from scoreframe.metrics import _biometric as bio

    chosen, ops_in = metric_options(metrics), as_operating_points(operating_points)
    if chosen.tandem is not None:
        from scoreframe.errors import UsageError

        raise UsageError(message(
            "evaluate does not take a Tandem(...) in `metrics`", got=repr(chosen.tandem),
            hint="A tandem pairs two systems: use scoreframe.tandem_t_dcf or the report "
                 "(build_report(..., metrics=[Tandem(...)])."))
    p_target, c_miss, c_fa = ops_in.p_target, ops_in.c_miss, ops_in.c_fa
    eer_method, spoof, forensic = chosen.binary.eer_method, chosen.spoof, chosen.forensic
    bm = chosen.biometric
    biometric, strict = bm is not None, bm is not None and bm.strict
    fmr = fnmr = at_threshold = threshold_from = thresholds = None
    convention = "exact"
    if bm is not None:
        fmr, fnmr, at_threshold = bm.fmr or None, bm.fnmr or None, bm.at_threshold or None
        convention, threshold_from, thresholds = bm.convention, bm.threshold_from, bm.thresholds
    validate, trial_id = validation(validate)

    vreq = None
    fixed_on = threshold_from is not None or thresholds is not None
    if biometric or fmr is not None or fnmr is not None or at_threshold is not None or fixed_on:
        convention = bio.check_convention(convention)
        vreq = bio.verification_request(fmr=fmr, fnmr=fnmr, thresholds=at_threshold,
                                        strict=strict)
    req = vreq
    if fixed_on:
        from scoreframe.results import _verification as fixed

        table, where = _fixed_thresholds(
            data, threshold_from=threshold_from, thresholds=thresholds, where=where, by=by,
            pooled=pooled, request=vreq, engine=engine,  # type: ignore[arg-type]  # fixed_on implies vreq (set above)
            validate=validate, trial_id=trial_id)
        fixed_thr = fixed.table_thresholds(table)
        req = VerificationRequest(vreq.fmr, vreq.fnmr, vreq.thresholds + fixed_thr,  # type: ignore[union-attr]  # vreq is set on this branch
                                  vreq.strict)  # type: ignore[union-attr]  # vreq is set on this branch
    opts = intervals
    fams = [f for f, on in (("spoof", spoof), ("forensic", forensic)) if on]
    stats, ops = group_statistics(
        data, metrics=declared(family=["binary", *fams]), by=by, where=where,
        p_target=p_target, c_miss=c_miss, c_fa=c_fa,
        eer_method=eer_method, equalize_by=equalize_by, pooled=pooled, engine=engine,
        validate=validate, trial_id=trial_id, progress=progress, verification=req,
        intervals=opts)
    families, extras = family_extras(data, stats, where=where, spoof=spoof,
                                     forensic=forensic, eer_method=eer_method)
    ver_values = None
    if vreq is not None:
        ver_values = bio.verification_values(
            stats.units, vreq, convention=convention,
            sorted_units=None if convention == "exact"
            else bio.peer_sorted_units(stats, data, where=where))
        extras = [{**(extras[i] if extras else {}), "verification": v}
                  for i, v in enumerate(ver_values)]
        families = [*families, "biometric"]
    metric_list = declared(family=["binary", *families])
    if vreq is not None and convention != "exact":  # peers' values carry no replicates
        metric_list = bio.without_intervals(metric_list)
    res = results_frame(stats, ops, eer_method=eer_method,
                        metrics=metric_list, extras=extras, intervals=opts)
    if ver_values is not None:
        res = bio.attach_target_columns(res, stats, ver_values, convention=convention,
                                        intervals=opts, request=vreq)
    if fixed_on:
        col = fixed.fixed_threshold_column(stats, table, fixed_thr,
                                           offset=len(vreq.thresholds),  # type: ignore[union-attr]  # vreq is set on this branch
                                           intervals=opts)
        res = fixed.attach_fixed(res, stats, col)
    return res


def _fixed_thresholds(data: Data, *, threshold_from: str | None, thresholds: object,
                      where: str | None, by: Sequence[str] | str | None, pooled: bool,
                      request: VerificationRequest, **engine: object
                      ) -> tuple[pl.DataFrame, str | None]:
    """The thresholds table of ``threshold_from`` or ``thresholds``, and the eval selection."""
    from scoreframe.errors import UsageError
    from scoreframe.results import _verification as fixed

    if threshold_from is not None and thresholds is not None:
        raise UsageError(message("give `threshold_from` or `thresholds`, not both",
                                 got="both"))
    if thresholds is not None:
        return fixed.check_threshold_table(thresholds, ["system", *_as_list(by)]), where
    dev, _ = group_statistics(data, by=by, where=threshold_from, pooled=pooled,
                              verification=VerificationRequest(request.fmr, request.fnmr,
                                                               strict=request.strict),
                              **engine)  # type: ignore[arg-type]  # engine options forwarded as keywords
    table = fixed.dev_thresholds(dev, request)
    return table, fixed.eval_where(where, threshold_from)


def family_extras(data: Data, stats: Statistics, *, where: str | None = None,
                  spoof: bool = False, forensic: bool = False, eer_method: str = "rocch"
                  ) -> tuple[list[str], list[dict[str, object]] | None]:
    """The optional metric families of an evaluation and their per-unit values.

    ``stats`` come from a request with the families' metrics (their statistics are part of
    the one reduction; the spoof classes are checked here from its counts). Returns the
    families (for :func:`~scoreframe.metrics.registry.declared`) and ``None``: no per-unit
    extra values are needed any more (``eer_method="asvspoof"`` is a statistic of the
    reduction too; the argument is kept for the callers).
    """
    from scoreframe.frames.lazy import scan_raw
    from scoreframe.stats.engine import source_name

    families = [f for f, on in (("spoof", spoof), ("forensic", forensic)) if on]
    if spoof:
        from scoreframe.metrics.families import check_spoof_classes

        check_spoof_classes(stats.units, scan_raw(data, where=where), where=source_name(data))
    return families, None


def attach_intervals(results: pl.DataFrame, intervals: pl.DataFrame, *, eer: bool = True
                     ) -> pl.DataFrame:
    """Add the ``*_lo``/``*_hi`` columns of a bootstrap frame to evaluate's results.

    Rows are matched on the group columns; every bound of ``intervals`` whose metric is a
    column of ``results`` (or a field of its ``dcf`` structs) is added, and ``eer=False``
    leaves the EER without an interval (the bootstrap's EER is the ROCCH EER).
    """
    keys = group_columns(results)
    names = [c[:-3] for c in intervals.columns
             if c.endswith("_lo") and c[:-3] in results.columns and (eer or c != "eer_lo")]
    cols = [f"{m}_{e}" for m in names for e in ("lo", "hi")]
    point_fields = {f.name for f in intervals.schema["dcf"].inner.fields}  # type: ignore[attr-defined]  # polars stubs: List dtype's inner is not on DataType
    res_fields = {f.name for f in results.schema["dcf"].inner.fields}  # type: ignore[attr-defined]  # polars stubs: List dtype's inner is not on DataType
    dcf_names = [f[:-3] for f in point_fields if f.endswith("_lo") and f[:-3] in res_fields]
    lookup = {tuple(r[k] for k in keys): r for r in intervals.iter_rows(named=True)}
    rows = []
    for r in results.iter_rows(named=True):
        b = lookup.get(tuple(r[k] for k in keys))
        out = dict(r)
        for c in cols:
            out[c] = None if b is None else b[c]
        dcf_b = {} if b is None else {d["p_target"]: d for d in b["dcf"]}
        out["dcf"] = [{**d, **{f"{m}_{e}": dcf_b.get(d["p_target"], {}).get(f"{m}_{e}")
                                for m in sorted(dcf_names) for e in ("lo", "hi")}}
                      for d in r["dcf"]]
        rows.append(out)
    order = [c for c in results.columns[:results.columns.index("dcf")] if c not in cols]
    schema = {c: results.schema[c] for c in order} | {c: pl.Float64 for c in cols}
    base = pl.from_dicts([{c: r[c] for c in schema} for r in rows], schema=schema)
    front = list(order)
    for m in reversed(names):  # each interval right after its value
        i = front.index(m) + 1
        front[i:i] = [f"{m}_lo", f"{m}_hi"]
    return base.select(front).with_columns(pl.Series("dcf", [r["dcf"] for r in rows]))


def group_columns(results: pl.DataFrame) -> list[str]:
    """The grouping columns of an :func:`evaluate` result (those before ``n_tar``)."""
    return results.columns[: results.columns.index("n_tar")]


def explode_dcf(results: pl.DataFrame) -> pl.DataFrame:
    """One row per group x operating point: the ``dcf`` structs unnested beside the group.

    Parameters
    ----------
    results
        An :func:`scoreframe.evaluate` frame (with its ``dcf`` list column).

    Returns
    -------
    polars.DataFrame
        The group columns, then one column per field of ``dcf``.

    See Also
    --------
    evaluate : the results frame, one row per group with a ``dcf`` list.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [2.0, 1.0, -1.0, 0.5], "label": [True, True, False, False]})
    >>> flat = explode_dcf(evaluate(df, operating_points=OperatingPoints((0.1, 0.5))))
    >>> flat.select("p_target", "min_dcf_norm").rows()
    [(0.1, 0.0), (0.5, 0.0)]
    """
    return results.drop("dr30_ok", strict=False).explode("dcf").unnest("dcf")
