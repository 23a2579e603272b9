"""Demographic differentials of a verification system at one global threshold (ISO/IEC 19795-10).

Results layer over the statistics layer. NISTIR 8280 and ISO/IEC 19795-10 compare error rates
across demographic groups *at one threshold*, chosen globally (at a global FMR target, or
given): a group's FNMR uses its genuine trials, its FMR its impostor trials — or, with
``pair_with``, the impostor trials of each *pair* of groups (e.g. the probe's and the
reference's sex), so same-group and cross-group impostors are separated. Summaries over the
groups whose rate is defined:

* ``max / min`` and ``max / geometric mean`` of FMR and of FNMR (NISTIR 8280);
* the Fairness Discrepancy Rate, ``FDR = 1 - (alpha A + (1 - alpha) B)`` with ``A`` and ``B``
  the largest differences of FMR and of FNMR between two groups (de Freitas Pereira and
  Marcel, "Fairness in biometrics: a figure of merit to assess biometric verification
  systems", IEEE T-BIOM 2022);
* GARBE, ``x G(FMR) + (1 - x) G(FNMR)`` with the Gini coefficient
  ``G(a) = n / (n - 1) * sum_ij |a_i - a_j| / (2 n^2 mean(a))`` (Howard, Laird, Rubin,
  Sirotin, Tipton, Vemury, "Evaluating proposed fairness models for face recognition
  algorithms", 2022).

Two passes over the data at most: the pooled statistics give the threshold (skipped when it
is given), the grouped statistics count errors at it; both run on every engine.

Intervals (``intervals=B`` or an :class:`~scoreframe.metrics.Intervals`): by default the
subject-level two-way bootstrap (``resample=("model", "segment")``: both sides of a
comparison are resampled as subjects, each with its own Poisson multiplicities, the protocol
of :func:`scoreframe.evaluate`'s intervals).
The grouped pass carries every replicate's weighted counts at the threshold (integers, the
same on every engine); each replicate's rates and summaries go through the same code as the
point values, and percentile (or BCa) bounds follow. The threshold is held at its full-data
value in every replicate: the intervals are those of the group rates *at the reported
threshold*, as NISTIR 8280 reports them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from scoreframe.errors import (
    DegenerateGroupWarning,
    ScoreframeError,
    UnresolvedTargetWarning,
    ValidationError,
    message,
)
from scoreframe.frames.lazy import by_columns
from scoreframe.metrics import Intervals
from scoreframe.stats.engine import EngineLike
from scoreframe.stats.summary import VerificationRequest

__all__ = ["Differentials", "differentials", "fdr", "garbe", "gini"]


@dataclass(frozen=True)
class Differentials:
    """Per-group rates at the global threshold and the summaries across groups.

    Attributes
    ----------
    groups
        One row per group: the group columns, ``kind`` (``"genuine"`` rows carry FNMR,
        ``"impostor"`` rows FMR; with ``pair_with`` the impostor rows are pairs), counts,
        ``rate``, ``errors`` and ``reason`` (why a rate is null).
    summary
        One row per measure (``fmr_max_min``, ``fmr_max_geomean``, ``fnmr_max_min``,
        ``fnmr_max_geomean``, ``fdr``, ``garbe``): ``value`` and ``reason`` when null.
    threshold
        The global threshold (accept ``score >= threshold``).

    See Also
    --------
    scoreframe.differentials : How it is made.
    scoreframe.views.plots.differentials_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [2.0, 0.0, 3.0, 1.0], "label": [True, False] * 2,
    ...                    "sex": ["f", "f", "m", "m"]})
    >>> differentials(df, by="sex", threshold=1.0).threshold
    1.0
    """

    groups: pl.DataFrame
    summary: pl.DataFrame
    threshold: float


def gini(a: Sequence[float]) -> float:
    """Gini coefficient with the ``n / (n - 1)`` correction (GARBE's building block).

    >>> round(gini([0.1, 0.1, 0.4]), 4)
    0.5
    """
    x = np.asarray(a, dtype=np.float64)
    n = x.shape[0]
    if n < 2 or x.mean() == 0:
        return math.nan
    return float(n / (n - 1) * np.abs(x[:, None] - x[None, :]).sum() / (2 * n * n * x.mean()))


def fdr(fmrs: Sequence[float], fnmrs: Sequence[float], *, alpha: float = 0.5) -> float:
    """Fairness Discrepancy Rate: ``1 - (alpha max|dFMR| + (1 - alpha) max|dFNMR|)``.

    >>> round(fdr([0.01, 0.03], [0.1, 0.2]), 6)
    0.94
    """
    a = max(fmrs) - min(fmrs) if len(fmrs) else math.nan
    b = max(fnmrs) - min(fnmrs) if len(fnmrs) else math.nan
    return float(1.0 - (alpha * a + (1.0 - alpha) * b))


def garbe(fmrs: Sequence[float], fnmrs: Sequence[float], *, x: float = 0.5) -> float:
    """GARBE: ``x G(FMR) + (1 - x) G(FNMR)``.

    >>> round(garbe([0.01, 0.03], [0.1, 0.1]), 4)
    0.25
    """
    return float(x * gini(fmrs) + (1 - x) * gini(fnmrs))


def _ratio(rates: list[float], kind: str) -> tuple[float | None, float | None, str | None]:
    if len(rates) < 2:
        return None, None, "fewer than two groups with this rate defined"
    lo, hi = min(rates), max(rates)
    if lo == 0:
        return None, None, f"a group has {kind} = 0 (ratios undefined)"
    geo = math.exp(sum(math.log(r) for r in rates) / len(rates))
    return hi / lo, hi / geo, None


def _summary_values(fm_l: list[float], fn_l: list[float], *, alpha: float,
                    garbe_weight: float) -> list[dict[str, Any]]:
    """The summary rows over the groups' defined FMRs and FNMRs."""
    summary = []
    for kind, rates in (("fmr", fm_l), ("fnmr", fn_l)):
        mm, mg, why = _ratio(rates, kind.upper())
        summary += [{"measure": f"{kind}_max_min", "value": mm, "reason": why},
                    {"measure": f"{kind}_max_geomean", "value": mg, "reason": why}]
    ok = len(fm_l) >= 2 and len(fn_l) >= 2
    why = None if ok else "fewer than two groups with FMR and FNMR defined"
    summary.append({"measure": "fdr", "value": fdr(fm_l, fn_l, alpha=alpha) if ok else None,
                    "reason": why})
    gv = garbe(fm_l, fn_l, x=garbe_weight) if ok else math.nan
    summary.append({"measure": "garbe", "value": None if math.isnan(gv) else gv,
                    "reason": why if not ok else None if not math.isnan(gv)
                    else "a rate is 0 in every group (Gini undefined)"})
    return summary


def _replicate_bounds(st: Any, by_cols: list[str], pair_cols: list[str],
                      gen_keys: list[tuple[str | None, ...]],
                      imp_keys: list[tuple[str | None, ...]], options: Any, *,
                      alpha: float, garbe_weight: float
                      ) -> tuple[dict[tuple[object, ...], tuple[float | None, float | None]],
                                 dict[str, tuple[float | None, float | None]]]:
    """Bounds of every group's rate and of every summary, from the units' replicates."""
    from scoreframe.metrics._biometric_intervals import interval_bounds

    n_rows = max((len(us.stats.replicates) for us in st.units), default=0)
    keys = [("genuine", k) for k in gen_keys] + [("impostor", k) for k in imp_keys]
    col = {k: i for i, k in enumerate(keys)}
    n = np.zeros((n_rows, len(keys)), np.int64)
    e = np.zeros((n_rows, len(keys)), np.int64)
    for us in st.units:
        key = us.unit.key
        g = col[("genuine", tuple(key[c] for c in by_cols))]
        i = col[("impostor", tuple(key[c] for c in [*by_cols, *pair_cols]))]
        for r, rep in enumerate(us.stats.replicates):
            ver = rep.verification
            n[r, g] += rep.n_tar
            n[r, i] += rep.n_non
            if ver is not None:
                e[r, g] += int(ver.fnm[0])
                e[r, i] += int(ver.fm[0])
    with np.errstate(all="ignore"):
        rates = np.where(n > 0, e / np.maximum(n, 1), np.nan)
    kinds = np.array([k for k, _ in keys])
    measures = [s["measure"] for s in _summary_values([], [], alpha=alpha,
                                                      garbe_weight=garbe_weight)]
    summ = np.full((n_rows, len(measures)), np.nan)
    for r in range(n_rows):
        fm_l = [float(x) for x in rates[r, kinds == "impostor"] if not np.isnan(x)]
        fn_l = [float(x) for x in rates[r, kinds == "genuine"] if not np.isnan(x)]
        for j, s in enumerate(_summary_values(fm_l, fn_l, alpha=alpha,
                                              garbe_weight=garbe_weight)):
            summ[r, j] = np.nan if s["value"] is None else s["value"]
    # the point values, for BCa (the same code on the full data's counts)
    pn = np.zeros(len(keys), np.int64)
    pe = np.zeros(len(keys), np.int64)
    for us in st.units:
        key = us.unit.key
        g = col[("genuine", tuple(key[c] for c in by_cols))]
        i = col[("impostor", tuple(key[c] for c in [*by_cols, *pair_cols]))]
        ver = us.stats.verification
        pn[g] += us.stats.n_tar
        pn[i] += us.stats.n_non
        if ver is not None:
            pe[g] += int(ver.fnm[0])
            pe[i] += int(ver.fm[0])
    with np.errstate(all="ignore"):
        prate = np.where(pn > 0, pe / np.maximum(pn, 1), np.nan)
    p_fm = [float(x) for x in prate[kinds == "impostor"] if not np.isnan(x)]
    p_fn = [float(x) for x in prate[kinds == "genuine"] if not np.isnan(x)]
    psum = np.array([np.nan if s["value"] is None else s["value"] for s in
                     _summary_values(p_fm, p_fn, alpha=alpha, garbe_weight=garbe_weight)])
    whole = _Whole(st.units)
    lo, hi = interval_bounds(np.concatenate((rates, summ), axis=1),
                             np.concatenate((prate, psum)), whole, options)  # type: ignore[arg-type]  # a stand-in with the statistics' unit fields

    def f(v: float) -> float | None:
        return None if np.isnan(v) else float(v)

    rate_b: dict[tuple[object, ...], tuple[float | None, float | None]] = {
        k: (f(lo[j]), f(hi[j])) for j, k in enumerate(keys)}
    m = len(keys)
    summ_b = {name: (f(lo[m + j]), f(hi[m + j])) for j, name in enumerate(measures)}
    return rate_b, summ_b


class _Whole:
    """The union of the units' replicate counts (for the jackknife rows of BCa)."""

    def __init__(self, units: Sequence[Any]) -> None:
        self.n_tar = sum(us.stats.n_tar for us in units)
        self.n_non = sum(us.stats.n_non for us in units)
        n_rows = max((len(us.stats.replicates) for us in units), default=0)
        tot = np.zeros((n_rows, 2), np.int64)
        for us in units:
            for r, rep in enumerate(us.stats.replicates):
                tot[r] += (rep.n_tar, rep.n_non)
        self.replicates = [_Counts(int(a), int(b)) for a, b in tot]


@dataclass(frozen=True)
class _Counts:
    n_tar: int
    n_non: int


def _interval_options(intervals: Any) -> Any:
    """``intervals=`` as :class:`~scoreframe.metrics.Intervals` (``None``: none).

    >>> _interval_options(50).resample
    ('model', 'segment')
    """
    if intervals is None or isinstance(intervals, Intervals):
        return intervals
    if isinstance(intervals, int | np.integer) and not isinstance(intervals, bool):
        return Intervals(bootstrap=int(intervals), resample=("model", "segment"))
    raise ScoreframeError(message(
        "bad `intervals`", expected="a number of replicates or Intervals(...)",
        got=repr(intervals)))


def differentials(data: Any, *, by: Sequence[str] | str, fmr: float | None = None,
                  threshold: float | None = None, pair_with: Sequence[str] | str | None = None,
                  where: str | None = None, alpha: float = 0.5, garbe_weight: float = 0.5,
                  intervals: int | Intervals | None = None, engine: EngineLike = "auto",
                  validate: bool | Sequence[str] = True) -> Differentials:
    """FMR and FNMR of each demographic group at one global threshold, and their disparity.

    Parameters
    ----------
    data
        Trials (as for :func:`scoreframe.evaluate`).
    by
        Demographic columns (e.g. ``["sex", "age_band"]``): the groups.
    fmr, threshold
        The global threshold: at this global FMR target (exact convention: the lowest
        threshold with FMR <= target over all trials), or given.
    pair_with
        Columns of the other side of a comparison (e.g. the reference's ``sex``): impostor
        rates are then reported per pair of groups (same-group and cross-group separately).
    where
        SQL predicate selecting trials first.
    alpha, garbe_weight
        The weight of FMR in FDR and in GARBE.
    intervals
        ``rate_lo``/``rate_hi`` on every group and ``value_lo``/``value_hi`` on every
        summary: a number of replicates ``B`` (the subject-level two-way bootstrap,
        resampling ``model`` and ``segment``, 95 % percentile intervals, seed 0), or an
        :class:`~scoreframe.Intervals` (other resampling ids, coverage, seed, BCa). The
        threshold is held at its full-data value.
    engine, validate
        Where the reductions run and the duplicate-trial check, as in
        :func:`scoreframe.evaluate`.

    Returns
    -------
    Differentials
        Per-group rates and the summaries. A group without genuine (or impostor) trials gets
        a null rate with its reason and one :class:`~scoreframe.errors.DegenerateGroupWarning`
        naming it.

    See Also
    --------
    scoreframe.views.plots.differentials_plot, scoreframe.evaluate

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [2.0, 1.0, 0.5, 0.0, 3.0, 1.5, 1.2, -1.0],
    ...                    "label": [True, True, False, False] * 2,
    ...                    "sex": ["f"] * 4 + ["m"] * 4})
    >>> d = differentials(df, by="sex", threshold=1.1)
    >>> d.groups.select("sex", "kind", "rate").rows()
    [('f', 'genuine', 0.5), ('f', 'impostor', 0.0), ('m', 'genuine', 0.0), ('m', 'impostor', 0.5)]
    """
    from scoreframe.metrics._biometric import check_rate_targets, from_statistics
    from scoreframe.results.evaluate import group_statistics, validation

    check, ids = validation(validate)
    run = {"engine": engine, "validate": check, "trial_id": ids}
    by_cols = by_columns(by)
    pair_cols = [pair_with] if isinstance(pair_with, str) else list(pair_with or [])
    if not by_cols:
        raise ScoreframeError(message("differentials need demographic columns",
                                      expected="by=[...] (CLI --by)", got="none"))
    if (fmr is None) == (threshold is None):
        raise ScoreframeError(message("give `fmr` or `threshold` (one of them)",
                                      got="both" if fmr is not None else "neither"))
    for name, v in (("alpha", alpha), ("garbe_weight", garbe_weight)):
        if not 0.0 <= v <= 1.0:
            raise ScoreframeError(message(f"bad `{name}`", expected="a weight in [0, 1]",
                                          got=repr(v)))
    if threshold is None:
        (target,) = check_rate_targets(fmr, name="fmr")
        req = VerificationRequest(fmr=(target,))
        st, _ = group_statistics(data, where=where, pooled=True, verification=req,
                                 **run)  # type: ignore[arg-type]  # run holds engine, validate and trial_id
        g = st.units[0].stats
        if not (g.n_tar and g.n_non) or g.verification is None:
            raise ValidationError(message("the global threshold needs genuine and impostor "
                                          "trials", got=f"{g.n_tar} and {g.n_non}"))
        row = from_statistics(g.verification, g.blocks, g.n_tar, g.n_non, req)["fnmr_at_fmr"][0]
        if row["threshold"] is None:
            raise ScoreframeError(message(
                f"FMR {target:g} cannot be resolved with {g.n_non} impostor comparisons",
                expected=f"at least {math.ceil(1 / target)} impostor comparisons"))
        threshold = float(row["threshold"])
    elif isinstance(threshold, bool) or not math.isfinite(float(threshold)):
        raise ScoreframeError(message("bad `threshold`", expected="a finite number",
                                      got=repr(threshold)))
    thr = float(threshold)
    opts = _interval_options(intervals)
    st, _ = group_statistics(data, by=[*by_cols, *pair_cols], where=where, pooled=False,
                             verification=VerificationRequest(thresholds=(thr,)),
                             intervals=opts, **run)  # type: ignore[arg-type]  # run holds engine, validate and trial_id
    gen: dict[tuple[str | None, ...], list[int]] = {}
    imp: dict[tuple[str | None, ...], list[int]] = {}
    for us in st.units:
        key = us.unit.key
        s = us.stats
        fnm = int(s.verification.fnm[0]) if s.verification is not None else 0
        fm = int(s.verification.fm[0]) if s.verification is not None else 0
        gk = tuple(key[c] for c in by_cols)
        ik = tuple(key[c] for c in [*by_cols, *pair_cols])
        a = gen.setdefault(gk, [0, 0])
        a[0] += s.n_tar
        a[1] += fnm
        b = imp.setdefault(ik, [0, 0])
        b[0] += s.n_non
        b[1] += fm
    rows = []
    degenerate = []
    pair_names = [f"{c}" for c in pair_cols]
    for gk, (n, e) in gen.items():
        reason = None if n else "no genuine trials"
        rows.append({**dict(zip(by_cols, gk, strict=True)), **dict.fromkeys(pair_names),
                     "kind": "genuine", "n_trials": n, "errors": e,
                     "rate": e / n if n else None, "reason": reason})
        if reason:
            degenerate.append(f"{', '.join(f'{c}={v}' for c, v in zip(by_cols, gk, strict=True))}"
                              f" ({reason})")
    for ik, (n, e) in imp.items():
        reason = None if n else "no impostor trials"
        key = dict(zip([*by_cols, *pair_names], ik, strict=True))
        rows.append({**key, "kind": "impostor", "n_trials": n, "errors": e,
                     "rate": e / n if n else None, "reason": reason})
        if reason:
            degenerate.append(f"{', '.join(f'{c}={v}' for c, v in key.items())} ({reason})")
    schema = {c: pl.String for c in [*by_cols, *pair_names]} | {
        "kind": pl.String, "n_trials": pl.Int64, "errors": pl.Int64, "rate": pl.Float64,
        "reason": pl.String}
    rate_b: dict[tuple[object, ...], tuple[float | None, float | None]] = {}
    summ_b: dict[str, tuple[float | None, float | None]] = {}
    if opts is not None:
        rate_b, summ_b = _replicate_bounds(st, by_cols, pair_cols, list(gen), list(imp), opts,
                                           alpha=alpha, garbe_weight=garbe_weight)
        for row in rows:
            k = tuple(row[c] for c in (by_cols if row["kind"] == "genuine"
                                       else [*by_cols, *pair_names]))
            row["rate_lo"], row["rate_hi"] = rate_b.get((row["kind"], k), (None, None))
        schema = {**{c: v for c, v in schema.items() if c != "reason"},
                  "rate_lo": pl.Float64, "rate_hi": pl.Float64, "reason": pl.String}
    groups = pl.DataFrame(rows, schema=schema).sort([*by_cols, *pair_names, "kind"],
                                                     nulls_last=True)
    if degenerate:
        warnings.warn("rates undefined for group(s): " + "; ".join(degenerate) + "; they are "
                      "null", DegenerateGroupWarning, stacklevel=2)
    fmrs = groups.filter((pl.col("kind") == "impostor") & pl.col("rate").is_not_null())["rate"]
    fnmrs = groups.filter((pl.col("kind") == "genuine") & pl.col("rate").is_not_null())["rate"]
    fm_l, fn_l = fmrs.to_list(), fnmrs.to_list()
    summary = _summary_values(fm_l, fn_l, alpha=alpha, garbe_weight=garbe_weight)
    summary_schema: dict[str, Any] = {"measure": pl.String, "value": pl.Float64,
                                      "reason": pl.String}
    if opts is not None:
        for item in summary:
            item["value_lo"], item["value_hi"] = summ_b.get(item["measure"], (None, None))
        summary_schema = {"measure": pl.String, "value": pl.Float64, "value_lo": pl.Float64,
                          "value_hi": pl.Float64, "reason": pl.String}
    if fmr is not None and any(r == 0 for r in fm_l):
        warnings.warn(f"some groups have no false match at the global threshold {thr:g}: "
                      "their FMR is 0 and the FMR ratios are undefined (more impostor "
                      "comparisons per group are needed)", UnresolvedTargetWarning,
                      stacklevel=2)
    return Differentials(groups, pl.DataFrame(summary, schema=summary_schema), thr)
