"""The tandem t-DCF of a countermeasure (CM) system in front of an ASV system, from one table.

Results layer: the two systems' rows of a SASV trial table (``system``, ``model``, ``segment``,
``score``, ``trial_type``) are paired on ``(model, segment)`` by a join that is part of the
scan (a LazyFrame: Polars' streaming engine, or a streaming sink to a temporary Parquet file
for Dask), and unpivoted into one row per score: ``role`` (``asv`` or ``cm``; the rows of
unpaired trials and of trials whose two rows disagree on ``trial_type`` get roles of their
own, so they are counted, not collected), ``trial_type`` and ``score``. One reduction of the
statistics layer (:func:`scoreframe.stats.compute_statistics`, grouped by role, split by
``trial_type``) then gives the class counts, the ASV's ASVspoof-EER operating point with its
error counts (:class:`~scoreframe.stats._tandem.AsvspoofEer`) and the corners of the CM sweep
(:class:`~scoreframe.stats._tandem.SweepCorners`), from which the t-DCF follows with the
float operations of :func:`scoreframe.metrics.spoof.t_dcf`, bit for bit, on every engine.
:func:`tandem_arrays` still returns the paired scores as arrays (in memory).
"""

from __future__ import annotations

import inspect
import math
import os
import tempfile
import warnings
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

import numpy as np
import polars as pl

from scoreframe.checks import check_choice
from scoreframe.errors import (
    AlignmentError,
    DegenerateError,
    ScoreframeError,
    ScoreframeWarning,
    ValidationError,
    message,
)
from scoreframe.frames.class_scores import trial_type_problem
from scoreframe.frames.lazy import Data, as_lazy
from scoreframe.results._pairs import (
    engine_for,
    id_bucket_parts,
    id_buckets,
    row_count,
)
from scoreframe.stats import EngineLike, as_engine
from scoreframe.stats._tandem import (
    AsvspoofEer,
    ClassesBelow,
    EerPoint,
    SweepCorners,
    SweepState,
)

__all__ = ["tandem_arrays", "tandem_curve", "tandem_t_dcf"]


Unpaired = Literal["error", "drop"]
UNPAIRED = ("error", "drop")


def tandem_t_dcf(data: Data, *, asv: str, cm: str, where: str | None = None,
                 variant: str = "2021", unpaired: Unpaired = "error",
                 engine: EngineLike = "auto", **costs: Any) -> dict[str, Any]:
    """Minimum normalized t-DCF of system ``cm`` in tandem with system ``asv``.

    Parameters
    ----------
    data
        A SASV trial table with ``system``, ``model``, ``segment``, ``score`` and
        ``trial_type`` (``target`` / ``nontarget`` / ``spoof``).
    asv, cm
        Names of the ASV and CM systems.
    unpaired
        Trials scored by only one of the two systems: ``"error"`` (default) raises
        :class:`~scoreframe.errors.AlignmentError` with their counts and examples;
        ``"drop"`` leaves them out with a :class:`~scoreframe.errors.ScoreframeWarning`
        saying how many were dropped.
    engine
        As in :func:`scoreframe.evaluate`: the paired scores are reduced to statistics (class
        counts, the ASV operating point, the corners of the CM sweep) in memory, out of core
        or on Dask; the results are identical.
    variant, costs
        Passed to :func:`scoreframe.metrics.spoof.t_dcf` (``"2021"`` or ``"2019"``, priors, costs).

    Returns
    -------
    dict
        The keys of :func:`scoreframe.metrics.spoof.t_dcf`, plus ``asv_system``, ``cm_system``,
        ``variant`` and ``n_trials`` (trials scored by both systems).

    See Also
    --------
    scoreframe.spoof : The anti-spoofing metrics.
    scoreframe.views.plots.t_dcf_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> rows = [("asv", f"t{i}", s, c) for i, (s, c) in enumerate(
    ...     [(3.0, "target"), (2.5, "target"), (0.0, "nontarget"), (0.5, "nontarget"),
    ...      (2.0, "spoof"), (1.0, "spoof")])]
    >>> rows += [("cm", f"t{i}", s, c) for i, (s, c) in enumerate(
    ...     [(2.0, "target"), (1.5, "target"), (1.8, "nontarget"), (1.0, "nontarget"),
    ...      (-1.0, "spoof"), (0.2, "spoof")])]
    >>> df = pl.DataFrame(rows, schema=["system", "model", "score", "trial_type"], orient="row")
    >>> out = tandem_t_dcf(df.with_columns(segment=pl.col("model")), asv="asv", cm="cm")
    >>> out["n_trials"], out["variant"], 0.0 <= out["min_t_dcf"] <= 1.0
    (6, '2021', True)
    """
    res, _, n = _tandem(data, asv=asv, cm=cm, where=where, unpaired=unpaired, engine=engine,
                        variant=variant, costs=costs)
    return {**res, "asv_system": asv, "cm_system": cm, "variant": variant, "n_trials": n}


def tandem_curve(data: Data, *, asv: str, cm: str, where: str | None = None,
                 unpaired: Unpaired = "error", engine: EngineLike = "auto",
                 variant: str = "2021", **costs: Any) -> tuple[pl.DataFrame, int]:
    """The t-DCF curve of system ``cm`` in tandem with ``asv`` from statistics, and the trials.

    Arguments as :func:`tandem_t_dcf`. The curve has the columns of
    :func:`scoreframe.metrics.spoof.t_dcf_curve` with one row per *corner* of the per-trial
    CM sweep: the all-accepted point and the point after each run of bona fide or spoof
    trials in score order, plus the first minimum when it lies inside a run. Every row
    equals, bit for bit, the row of the per-trial curve at the same point, and the per-trial
    curve is monotone between corners (so its minimum and first argmin, ``is_min``, are the
    same).

    Returns
    -------
    tuple
        The curve (``cm_threshold``, ``t_dcf``, ``p_miss_cm``, ``p_fa_cm``, ``is_min``) and
        the number of trials scored by both systems.

    See Also
    --------
    tandem_t_dcf : Its minimum and the ASV constants.

    Examples
    --------
    >>> import polars as pl
    >>> rows = [("asv", f"t{i}", s, c) for i, (s, c) in enumerate(
    ...     [(3.0, "target"), (2.5, "target"), (0.0, "nontarget"), (0.5, "nontarget"),
    ...      (2.0, "spoof"), (1.0, "spoof")])]
    >>> rows += [("cm", f"t{i}", s, c) for i, (s, c) in enumerate(
    ...     [(2.0, "target"), (1.5, "target"), (1.8, "nontarget"), (1.0, "nontarget"),
    ...      (-1.0, "spoof"), (0.2, "spoof")])]
    >>> df = pl.DataFrame(rows, schema=["system", "model", "score", "trial_type"], orient="row")
    >>> curve, n = tandem_curve(df.with_columns(segment=pl.col("model")), asv="asv", cm="cm")
    >>> n, curve.height, curve.filter("is_min")["cm_threshold"].item()
    (6, 3, 0.2)
    """
    _, curve, n = _tandem(data, asv=asv, cm=cm, where=where, unpaired=unpaired,
                          engine=engine, variant=variant, costs=costs, curve=True)
    assert curve is not None  # asked for
    return curve, n


def tandem_arrays(data: Data, *, asv: str, cm: str, where: str | None = None,
                  unpaired: Unpaired = "error", engine: EngineLike = "auto"
                  ) -> tuple[tuple[Any, Any, Any, Any, Any], int]:
    """``(asv_target, asv_nontarget, asv_spoof, cm_bonafide, cm_spoof)`` and the trial count.

    The two systems' rows are joined on ``(model, segment)``; errors name what is missing.
    Trials scored by one system only are an error (``unpaired="error"``) or dropped with a
    warning (``unpaired="drop"``), never dropped silently.
    """
    check_choice(unpaired, name="unpaired", choices=UNPAIRED)
    how: Literal["in-memory", "streaming"] = (
        "in-memory" if as_engine(engine).kind == "memory" else "streaming")
    lf = as_lazy(data, where=where)
    names = lf.collect_schema().names()
    need = ["system", "model", "segment", "score", "trial_type"]
    missing = [c for c in need if c not in names]
    if missing:
        raise ValidationError(message("the tandem t-DCF needs a SASV trial table",
                                      expected=", ".join(need),
                                      got=f"missing {', '.join(missing)}"))
    sel = lf.select("system", "model", "segment", pl.col("score").cast(pl.Float64),
                    pl.col("trial_type").cast(pl.String))
    a = sel.filter(pl.col("system") == asv).drop("system").collect(engine=how)
    c = sel.filter(pl.col("system") == cm).drop("system").collect(engine=how)
    for name, part in ((asv, a), (cm, c)):
        if part.height == 0:
            systems = sel.select("system").unique().collect()["system"].sort().to_list()
            raise ValidationError(message(f"no trials of system `{name}`",
                                          expected=" | ".join(map(str, systems)), got=name))
        problem = trial_type_problem(part["trial_type"])
        if problem:
            raise ValidationError(problem)
    only_a = a.join(c, on=["model", "segment"], how="anti")
    only_c = c.join(a, on=["model", "segment"], how="anti")
    if only_a.height or only_c.height:
        counts = (f"{only_a.height} of {a.height} ASV trial(s) have no `{cm}` score"
                  f"{_examples(only_a)} and {only_c.height} of {c.height} CM trial(s) have no "
                  f"`{asv}` score{_examples(only_c)}")
        if unpaired == "error":
            raise AlignmentError(message(
                f"systems `{asv}` (ASV) and `{cm}` (CM) do not score the same trials",
                expected="every trial scored by both systems", got=counts,
                hint="Score the missing trials, select the common ones (--where / where=), "
                     "or drop them explicitly (unpaired='drop'; CLI --tandem-unpaired drop)."))
        warnings.warn(f"tandem t-DCF: dropped {only_a.height} of {a.height} ASV trial(s) "
                      f"without a `{cm}` score and {only_c.height} of {c.height} CM trial(s) "
                      f"without an `{asv}` score", ScoreframeWarning, stacklevel=3)
    j = a.join(c, on=["model", "segment"], how="inner", suffix="_cm")
    if j.height == 0:
        raise AlignmentError(message("the ASV and CM systems share no trial",
                                     expected="rows with the same (model, segment)",
                                     got=f"{a.height} ASV and {c.height} CM rows"))
    if (j["trial_type"] != j["trial_type_cm"]).any():
        raise AlignmentError(message("ASV and CM rows disagree on `trial_type`",
                                     got=f"{int((j['trial_type'] != j['trial_type_cm']).sum())}"
                                         " trial(s)"))

    def scores(col: str, *types: str) -> Any:
        return j.filter(pl.col("trial_type").is_in(list(types)))[col].to_numpy()

    return (scores("score", "target"), scores("score", "nontarget"), scores("score", "spoof"),
            scores("score_cm", "target", "nontarget"), scores("score_cm", "spoof")), j.height


def _examples(part: pl.DataFrame, n: int = 3) -> str:
    """`` (e.g. m1/s1, m3/s3)`` for the first trials of ``part``; empty when it is empty."""
    if part.height == 0:
        return ""
    def short(v: object) -> str:
        t = str(v)
        return t if len(t) <= 40 else t[:39] + "\u2026"

    return " (e.g. " + ", ".join(f"{short(m)}/{short(s)}" for m, s in
                                 part.select("model", "segment").head(n).iter_rows()) + ")"


ROLE_ASV, ROLE_CM = "asv", "cm"
#: Role suffixes of the rows of trials scored by one system only / whose two rows disagree.
ONLY, MISMATCH = ":only", ":mismatch"
IDS = ["model", "segment"]


def _selection(data: Data, where: str | None) -> pl.LazyFrame:
    lf = as_lazy(data, where=where)
    names = lf.collect_schema().names()
    need = ["system", *IDS, "score", "trial_type"]
    missing = [c for c in need if c not in names]
    if missing:
        raise ValidationError(message("the tandem t-DCF needs a SASV trial table",
                                      expected=", ".join(need),
                                      got=f"missing {', '.join(missing)}"))
    return lf.select("system", *IDS, pl.col("score").cast(pl.Float64),
                     pl.col("trial_type").cast(pl.String))


def _side(sel: pl.LazyFrame, system: str, tag: str) -> pl.LazyFrame:
    return sel.filter(pl.col("system") == system).select(
        *IDS, pl.col("score").alias(f"__s{tag}"), pl.col("trial_type").alias(f"__t{tag}"),
        pl.lit(True).alias(f"__in{tag}"))


def paired_rows(sel: pl.LazyFrame, *, asv: str, cm: str) -> pl.LazyFrame:
    """The two systems' scores of each trial, one row per score: a lazy join, unpivoted.

    Columns ``role``, ``trial_type``, ``score``, ``label``; the join is a full join on
    ``(model, segment)``. Roles: ``asv`` / ``cm`` for trials scored by both with the same
    ``trial_type``; ``asv:only`` / ``cm:only`` for trials scored by one system;
    ``asv:mismatch`` / ``cm:mismatch`` for trials whose two rows disagree on ``trial_type``.
    ``label`` is the positive class of the role's system (ASV: ``target``; CM: bona fide,
    not ``spoof``).
    """
    w = _side(sel, asv, "a").join(_side(sel, cm, "c"), on=IDS, how="full", coalesce=True)
    ina, inc = pl.col("__ina").fill_null(False), pl.col("__inc").fill_null(False)
    status = (pl.when(ina & inc & pl.col("__ta").eq_missing(pl.col("__tc"))).then(pl.lit(""))
              .when(ina & inc).then(pl.lit(MISMATCH)).otherwise(pl.lit(ONLY)))
    role_a = pl.when(ina).then(pl.lit(ROLE_ASV) + status)
    role_c = pl.when(inc).then(pl.lit(ROLE_CM) + status)
    long = (w.select(role=pl.concat_list(role_a, role_c),
                     score=pl.concat_list("__sa", "__sc"),
                     trial_type=pl.concat_list("__ta", "__tc"))
            .explode(["role", "score", "trial_type"])
            .filter(pl.col("role").is_not_null()))
    is_asv = pl.col("role").str.starts_with(ROLE_ASV)
    label = pl.when(is_asv).then(pl.col("trial_type") == "target") \
        .otherwise(pl.col("trial_type") != "spoof").fill_null(False)
    return long.with_columns(label=label)


def sink_pairs(sel: pl.LazyFrame, directory: str, *, asv: str, cm: str, rows: int,
               memory_limit: int) -> int:
    """Stream :func:`paired_rows` into Parquet files of ``directory``; the number of buckets.

    The trials are split into buckets by a hash of their ids, so that one bucket's join fits
    ``memory_limit`` (:data:`scoreframe.results._pairs.JOIN_BYTES_PER_ROW`); each bucket is
    one streaming query (a filtered scan, the join, the unpivot) written by a streaming sink.
    The two rows of a trial land in the same bucket, so the buckets' pairs are the pairs of
    the whole table.
    """
    buckets = id_buckets(rows, memory_limit)
    for b, part in id_bucket_parts(sel, IDS, buckets):
        paired_rows(part, asv=asv, cm=cm).sink_parquet(
            os.path.join(directory, f"pairs-{b:05d}.parquet"))
    return buckets


@dataclass(frozen=True)
class _Stats:
    counts: dict[str, dict[str | None, int]]  # role -> class -> trials
    eer: EerPoint | None
    below: tuple[int, ...] | None  # at a given asv_threshold
    sweep: SweepState


def _reduce(sel: pl.LazyFrame, *, asv: str, cm: str, engine: EngineLike,
            asv_threshold: float | None, stack: ExitStack) -> tuple[_Stats, pl.LazyFrame]:
    """One reduction of the paired rows: class counts, the ASV point, the CM sweep.

    Also returns the paired rows as a LazyFrame, valid while ``stack`` is open (out of core:
    a scan of the temporary Parquet files the join was streamed into).
    """
    from scoreframe.stats import compute_statistics
    from scoreframe.stats.engine import bytes_per_trial
    from scoreframe.stats.summary import ClassCounts, Request

    classes = ("target", "nontarget", "spoof")
    eer = AsvspoofEer(("target",), ("nontarget",), below=classes)
    fixed = None if asv_threshold is None or math.isnan(asv_threshold) else ClassesBelow(
        threshold=float(asv_threshold), names=classes)
    sweep = SweepCorners(("target", "nontarget"), ("spoof",))
    counts = ClassCounts()
    request = Request(statistics=(counts, eer, sweep, *([fixed] if fixed else [])),
                      class_column="trial_type")
    eng = as_engine(engine)
    rows = row_count(sel, [asv, cm])
    eng = engine_for(eng, rows, bytes_per_trial(read=True, grouped=True, replicate_columns=0)
                      + request.bytes_per_trial)
    kw: dict[str, Any] = {"by": ["role"], "pooled": False, "request": request,
                          "p": np.zeros(0), "q": np.zeros(0), "engine": eng,
                          "validate": False}
    try:
        if eng.kind == "memory":
            pairs = paired_rows(sel, asv=asv, cm=cm)
            stats = compute_statistics(pairs, **kw)
        else:  # out of core: the join runs once, in buckets, into Parquet sinks
            root = eng.spill_dir or os.environ.get("SCOREFRAME_SPILL_DIR") or None
            tmp = stack.enter_context(tempfile.TemporaryDirectory(
                prefix="scoreframe-tandem-", dir=root))
            sink_pairs(sel, tmp, asv=asv, cm=cm, rows=rows, memory_limit=eng.limit)
            stats = compute_statistics(tmp, **kw)
            pairs = pl.scan_parquet(os.path.join(tmp, "*.parquet"))
    except DegenerateError:  # no row of either system
        _no_trials(sel, asv)
        raise
    out: dict[str, dict[str | None, int]] = {}
    eer_of, below, sw = None, None, sweep.empty()
    for u in stats.units:
        role = str(u.unit.key["role"])
        out[role] = {k: n for k, (n, _) in (u.stats.get(counts) or {}).items()}
        if role == ROLE_ASV:
            eer_of = u.stats.get(eer)
            below = None if fixed is None else u.stats.get(fixed)
        elif role == ROLE_CM:
            sw = u.stats.get(sweep)
    return _Stats(out, eer_of, below, sw), pairs


def _no_trials(sel: pl.LazyFrame, name: str) -> NoReturn:
    systems = sel.select("system").unique().collect(engine="streaming")["system"]
    raise ValidationError(message(f"no trials of system `{name}`",
                                  expected=" | ".join(map(str, systems.sort().to_list())),
                                  got=name))


def _examples_of(sel: pl.LazyFrame, one: str, other: str) -> str:
    """Examples of trials of ``one`` without an ``other`` score (an error path only)."""
    a = sel.filter(pl.col("system") == one).select(IDS)
    b = sel.filter(pl.col("system") == other).select(IDS)
    part = a.join(b, on=IDS, how="anti", maintain_order="left").head(3).collect()
    return _examples(part)


def _check_pairing(st: _Stats, sel: pl.LazyFrame, *, asv: str, cm: str,
                   unpaired: Unpaired) -> int:
    """The errors and warning of :func:`tandem_arrays`, from the counts; the paired trials."""
    def total(*roles: str) -> int:
        return sum(sum(st.counts.get(r, {}).values()) for r in roles)

    for name, tag in ((asv, ROLE_ASV), (cm, ROLE_CM)):
        roles = (tag, tag + ONLY, tag + MISMATCH)
        if total(*roles) == 0:
            _no_trials(sel, name)
        values = sorted({c for r in roles for c in st.counts.get(r, {})},
                        key=lambda v: (v is None, str(v)))
        problem = trial_type_problem(pl.Series("trial_type", values, dtype=pl.String))
        if problem:
            raise ValidationError(problem)
    n_a, n_c = total(ROLE_ASV, ROLE_ASV + ONLY, ROLE_ASV + MISMATCH), \
        total(ROLE_CM, ROLE_CM + ONLY, ROLE_CM + MISMATCH)
    only_a, only_c = total(ROLE_ASV + ONLY), total(ROLE_CM + ONLY)
    if only_a or only_c:
        if unpaired == "error":
            ex_a = _examples_of(sel, asv, cm) if only_a else ""
            ex_c = _examples_of(sel, cm, asv) if only_c else ""
            counts = (f"{only_a} of {n_a} ASV trial(s) have no `{cm}` score{ex_a} and "
                      f"{only_c} of {n_c} CM trial(s) have no `{asv}` score{ex_c}")
            raise AlignmentError(message(
                f"systems `{asv}` (ASV) and `{cm}` (CM) do not score the same trials",
                expected="every trial scored by both systems", got=counts,
                hint="Score the missing trials, select the common ones (--where / where=), "
                     "or drop them explicitly (unpaired='drop'; CLI --tandem-unpaired drop)."))
        warnings.warn(f"tandem t-DCF: dropped {only_a} of {n_a} ASV trial(s) "
                      f"without a `{cm}` score and {only_c} of {n_c} CM trial(s) "
                      f"without an `{asv}` score", ScoreframeWarning, stacklevel=5)
    mismatch = total(ROLE_ASV + MISMATCH)
    n = total(ROLE_ASV) + mismatch
    if n == 0:
        raise AlignmentError(message("the ASV and CM systems share no trial",
                                     expected="rows with the same (model, segment)",
                                     got=f"{n_a} ASV and {n_c} CM rows"))
    if mismatch:
        raise AlignmentError(message("ASV and CM rows disagree on `trial_type`",
                                     got=f"{mismatch} trial(s)"))
    return n


def _cost_arguments(costs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`scoreframe.metrics.spoof.t_dcf` with their defaults."""
    from scoreframe.metrics.spoof import t_dcf

    params = {k: p.default for k, p in inspect.signature(t_dcf).parameters.items()
              if p.kind is inspect.Parameter.KEYWORD_ONLY and k != "variant"}
    unknown = [k for k in costs if k not in params]
    if unknown:
        raise TypeError(f"t_dcf() got an unexpected keyword argument {unknown[0]!r}")
    return {**params, **costs}


def _tandem(data: Data, *, asv: str, cm: str, where: str | None, unpaired: Unpaired,
            engine: EngineLike, variant: str, costs: dict[str, Any], curve: bool = False
            ) -> tuple[dict[str, Any], pl.DataFrame | None, int]:
    """``(t_dcf result, curve or None, paired trials)`` from one reduction of the pairs."""
    check_choice(unpaired, name="unpaired", choices=UNPAIRED)
    args = _cost_arguments(costs)
    thr_given = args.pop("asv_threshold")
    sel = _selection(data, where)
    with ExitStack() as stack:
        st, pairs = _reduce(sel, asv=asv, cm=cm, engine=engine, stack=stack,
                            asv_threshold=None if thr_given is None else float(thr_given))
        return _finish(st, sel, pairs, asv=asv, cm=cm, unpaired=unpaired, variant=variant,
                       args=args, thr_given=thr_given, curve=curve)


def _finish(st: _Stats, sel: pl.LazyFrame, pairs: pl.LazyFrame, *, asv: str, cm: str,
            unpaired: Unpaired, variant: str, args: dict[str, Any], thr_given: Any,
            curve: bool) -> tuple[dict[str, Any], pl.DataFrame | None, int]:
    """The t-DCF, its curve and the paired trials from the statistics (see :func:`_tandem`)."""
    from scoreframe.metrics.spoof import check_asv_threshold, t_dcf_constants

    n = _check_pairing(st, sel, asv=asv, cm=cm, unpaired=unpaired)
    a, c = st.counts.get(ROLE_ASV, {}), st.counts.get(ROLE_CM, {})
    nt, nn, ns = (a.get(k, 0) for k in ("target", "nontarget", "spoof"))
    nb, ncs = c.get("target", 0) + c.get("nontarget", 0), c.get("spoof", 0)
    for name, size in (("asv_target", nt), ("asv_nontarget", nn), ("asv_spoof", ns),
                       ("cm_bonafide", nb), ("cm_spoof", ncs)):
        if size == 0:
            raise DegenerateError(message(f"`{name}` is empty", expected="at least one score",
                                          got="0 scores"))
    sw = st.sweep
    if sw.not_finite:
        raise ScoreframeError(message("the CM scores contain non-finite values",
                                      expected="finite scores",
                                      got=f"{sw.not_finite} non-finite value(s)"))
    if sw.distinct < 3:
        raise ScoreframeError(message(
            "the CM scores look like decisions", expected="at least 3 distinct CM scores",
            got=f"{sw.distinct}"))
    if variant not in ("2021", "2019"):
        raise ScoreframeError(message("unknown t-DCF `variant`", expected="2021 | 2019",
                                      got=repr(variant)))
    if thr_given is None:
        assert st.eer is not None  # both ASV classes have trials
        thr, (bt, bn, bs) = st.eer.threshold, st.eer.below
    else:
        thr = check_asv_threshold(thr_given)
        assert st.below is not None  # requested
        bt, bn, bs = st.below
    # the float operations of kernels.spoof.asv_error_rates
    co = t_dcf_constants(thr, bt / nt, (nn - bn) / nn, bs / ns, (ns - bs) / ns,
                         variant=variant, **args)
    c0, c1, c2 = co["c0"], co["c1"], co["c2"]

    def value(rb: Any, rs: Any) -> Any:  # the float operations of kernels.spoof.t_dcf_curve
        p_miss = rb / nb
        p_fa = (ncs - rs) / ncs
        return (c0 + c1 * p_miss + c2 * p_fa) / (c0 + min(c1, c2)), p_miss, p_fa

    values, p_miss, p_fa = value(sw.rejected_pos, sw.rejected_neg)
    i = int(np.argmin(values))
    thresholds = sw.threshold
    inside = _first_in_run(sw, i, values, value)
    if inside is not None:  # the first minimum lies inside the run of spoofs ending at i
        rs = inside
        t = _spoof_score(pairs, sw=sw, i=i, rank=rs)
        v1, pm1, pf1 = value(sw.rejected_pos[i:i + 1], np.array([rs], dtype=np.int64))
        thresholds = np.insert(thresholds, i, t)
        values, p_miss, p_fa = (np.insert(values, i, v1), np.insert(p_miss, i, pm1),
                                np.insert(p_fa, i, pf1))
    res = {"min_t_dcf": float(values[i]), "cm_threshold": float(thresholds[i]), **co}
    frame = None
    if curve:
        is_min = np.zeros(values.shape[0], dtype=bool)
        is_min[i] = True
        frame = pl.DataFrame({"cm_threshold": thresholds, "t_dcf": values,
                              "p_miss_cm": p_miss, "p_fa_cm": p_fa, "is_min": is_min})
    return res, frame, n


def _first_in_run(sw: SweepState, i: int, values: Any, value: Any) -> int | None:
    """The spoofs rejected at a first minimum inside the spoof run ending at corner ``i``.

    ``None`` when the first minimum is the corner itself.
    Within a run of spoofs the curve is non-increasing; the corner before ``i`` is higher
    (``i`` is the first corner at the minimum), so the first point of the run at the minimum
    is found by bisection over the count of rejected spoofs.
    """
    if i == 0 or not sw.last_neg[i]:
        return None
    rb = sw.rejected_pos[i:i + 1]
    target = values[i]

    def at(rs: int) -> Any:
        return value(rb, np.array([rs], dtype=np.int64))[0][0]

    lo, hi = int(sw.rejected_neg[i - 1]), int(sw.rejected_neg[i])  # at(lo) > target
    if at(hi - 1) != target:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid) == target:
            hi = mid
        else:
            lo = mid
    return hi


def _spoof_score(pairs: pl.LazyFrame, *, sw: SweepState, i: int, rank: int) -> float:
    """The ``rank``-th lowest paired CM spoof score (1-based), within the run ending at ``i``.

    Read by a filtered query of the paired rows (only when a first minimum lies inside a run
    of spoofs, where the statistics hold no score: rounding made the curve flat there).
    """
    lo, hi = float(sw.threshold[i - 1]), float(sw.threshold[i])
    score = pl.col("score")
    low = score > lo if sw.last_neg[i - 1] else score >= lo
    run = (pairs
           .filter((pl.col("role") == ROLE_CM) & (pl.col("trial_type") == "spoof")
                   & low & (score <= hi)))
    j = rank - int(sw.rejected_neg[i - 1]) - 1
    got = run.select(score.sort().gather(j)).collect(engine="streaming")
    return float(got["score"][0])
