"""Anti-spoofing and spoofing-aware speaker verification (SASV) metrics on score arrays.

``a_dcf`` (ASVspoof 5, Shim et al. 2024), ``t_dcf`` (ASVspoof 2019 / 2021 / 5), ``asvspoof_eer``
(the ASVspoof per-trial EER) and ``sasv_eer`` (SASV 2022 EERs). Each function validates its inputs
(1-D, no NaN, no empty class) and calls :mod:`scoreframe.kernels.spoof`, reproducing the official
evaluation packages exactly; the conventions are in ``docs/spoof_forensic.md``.

For per-condition evaluation, the ``*_sorted`` functions take arrays already sorted ascending
(the statistics layer's order) and skip validation and sorting; :func:`spoof_summary_sorted`
returns every ``evaluate --spoof`` column of one group in one call.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import DegenerateError, ScoreframeError, UsageError, message
from scoreframe.frames.class_scores import (
    TRIAL_TYPES,
    check_class_scores,
    check_trial_types,
    split_trial_types,
    trial_type_problem,
)
from scoreframe.kernels import spoof as _k

__all__ = [
    "A_DCF_DEFAULTS",
    "ASVSPOOF5_A_DCF",
    "TRIAL_TYPES",
    "a_dcf",
    "a_dcf_sorted",
    "asvspoof_eer",
    "asvspoof_eer_sorted",
    "check_trial_types",
    "label_trial_type_problem",
    "sasv_eer",
    "sasv_eer_sorted",
    "spoof_summary_sorted",
    "split_trial_types",
    "t_dcf",
    "t_dcf_constants",
    "t_dcf_curve",
    "trial_type_problem",
]

F64 = NDArray[np.float64]
Variant = Literal["2021", "2019"]

#: a-DCF1 of Shim et al. (Odyssey 2024) = PyPI ``a_dcf`` 0.0.4 ``CostModel()``.
A_DCF_DEFAULTS: dict[str, float] = {"p_target": 0.9, "p_nontarget": 0.05, "p_spoof": 0.05,
                                    "c_miss": 1.0, "c_fa_nontarget": 10.0, "c_fa_spoof": 20.0}
#: ASVspoof 5 Track 2 (SASV) costs: p_target = 0.95 * 0.99, p_nontarget = 0.95 * 0.01.
ASVSPOOF5_A_DCF: dict[str, float] = {"p_target": 0.9405, "p_nontarget": 0.0095, "p_spoof": 0.05,
                                     "c_miss": 1.0, "c_fa_nontarget": 10.0, "c_fa_spoof": 10.0}
PRESETS = {"a_dcf1": A_DCF_DEFAULTS, "asvspoof5": ASVSPOOF5_A_DCF}


def _check_costs(*, priors: dict[str, float], costs: dict[str, float]) -> None:
    for name, v in {**priors, **costs}.items():
        if isinstance(v, bool) or not isinstance(v, int | float | np.floating | np.integer) \
                or not math.isfinite(v) or v < 0 or (name in priors and v > 1):
            rng = "[0, 1]" if name in priors else ">= 0"
            raise ScoreframeError(message(f"bad `{name}`", expected=f"a finite number in {rng}"
                                          if name in priors else f"a finite number {rng}",
                                          got=repr(v)))
    total = sum(priors.values())
    if abs(total - 1.0) > 1e-10:
        raise ScoreframeError(message(
            "the priors must sum to 1", expected=" + ".join(f"`{k}`" for k in priors) + " = 1",
            got=f"{total!r}"))


def _resolve_preset(preset: str | None, given: dict[str, float]) -> dict[str, float]:
    if preset is None:
        return given
    if preset not in PRESETS:
        raise ScoreframeError(message("unknown `preset`", expected=" | ".join(PRESETS),
                                      got=repr(preset)))
    changed = [k for k, v in given.items() if v != A_DCF_DEFAULTS[k]]
    if changed:
        raise UsageError(message("give `preset` or cost arguments, not both",
                                 got=f"preset={preset!r} and {', '.join(changed)}"))
    return dict(PRESETS[preset])


def a_dcf_sorted(target: F64, nontarget: F64, spoof: F64, *, p_target: float = 0.9,
                 p_nontarget: float = 0.05, p_spoof: float = 0.05, c_miss: float = 1.0,
                 c_fa_nontarget: float = 10.0, c_fa_spoof: float = 20.0) -> dict[str, float]:
    """:func:`a_dcf` on arrays already sorted ascending and validated (no checks, no sort)."""
    return _k.a_dcf(target, nontarget, spoof, p_target=p_target, p_nontarget=p_nontarget,
                    p_spoof=p_spoof, c_miss=c_miss, c_fa_nontarget=c_fa_nontarget,
                    c_fa_spoof=c_fa_spoof)


def a_dcf(target: ArrayLike, nontarget: ArrayLike, spoof: ArrayLike, *, p_target: float = 0.9,
          p_nontarget: float = 0.05, p_spoof: float = 0.05, c_miss: float = 1.0,
          c_fa_nontarget: float = 10.0, c_fa_spoof: float = 20.0,
          preset: str | None = None) -> dict[str, float]:
    """Minimum normalised architecture-agnostic DCF (a-DCF) of SASV scores.

    ``a-DCF(t) = [c_miss p_target Pmiss(t) + c_fa_nontarget p_nontarget Pfa_non(t)
    + c_fa_spoof p_spoof Pfa_spoof(t)] / min(c_miss p_target, c_fa_nontarget p_nontarget
    + c_fa_spoof p_spoof)``, minimised over the per-trial sweep (scores ascending; at equal
    scores targets, then non-targets, then spoofs; first point: all accepted, threshold
    ``min(score) - 1e-8``). Equals ASVspoof 5 ``a_dcf._calculate_a_dcf``.

    Parameters
    ----------
    target, nontarget, spoof
        Scores of the three trial classes (larger favours target); ``+-inf`` allowed.
    p_target, p_nontarget, p_spoof
        Class priors (sum to 1). Defaults: a-DCF1 (Shim et al., Odyssey 2024).
    c_miss, c_fa_nontarget, c_fa_spoof
        Costs of missing a target and of accepting a non-target / a spoof.
    preset
        ``"asvspoof5"`` (Track 2: 0.9405, 0.0095, 0.05; costs 1, 10, 10) or ``"a_dcf1"``
        (the defaults); not combinable with explicit costs.

    Returns
    -------
    dict
        ``min_a_dcf``; ``threshold`` (score of the last rejected trial at the FIRST minimum);
        ``p_miss``, ``p_fa_nontarget``, ``p_fa_spoof`` at the minimum.

    References
    ----------
    H.-j. Shim et al., "a-DCF: an architecture agnostic metric with application to
    spoofing-robust speaker verification", Odyssey 2024, eqs 1-2.

    Examples
    --------
    >>> r = a_dcf([1.0, 2.0], [0.0], [-1.0, 1.5])
    >>> r["min_a_dcf"], r["threshold"], r["p_fa_spoof"]
    (0.5, 1.5, 0.0)
    """
    costs = _resolve_preset(preset, {"p_target": p_target, "p_nontarget": p_nontarget,
                                     "p_spoof": p_spoof, "c_miss": c_miss,
                                     "c_fa_nontarget": c_fa_nontarget,
                                     "c_fa_spoof": c_fa_spoof})
    _check_costs(priors={k: costs[k] for k in ("p_target", "p_nontarget", "p_spoof")},
                 costs={k: costs[k] for k in ("c_miss", "c_fa_nontarget", "c_fa_spoof")})
    norm = min(costs["c_miss"] * costs["p_target"],
               costs["c_fa_nontarget"] * costs["p_nontarget"]
               + costs["c_fa_spoof"] * costs["p_spoof"])
    if norm <= 0:
        raise ScoreframeError(message("the a-DCF normaliser is 0", expected=(
            "c_miss p_target > 0 and c_fa_nontarget p_nontarget + c_fa_spoof p_spoof > 0"),
            got=repr(costs)))
    t = check_class_scores(target, name="target", sort=True)
    n = check_class_scores(nontarget, name="nontarget", sort=True)
    s = check_class_scores(spoof, name="spoof", sort=True)
    return a_dcf_sorted(t, n, s, **costs)


def asvspoof_eer_sorted(target: F64, nontarget: F64) -> dict[str, float]:
    """:func:`asvspoof_eer` on sorted, validated arrays."""
    e, thr = _k.asvspoof_eer(target, nontarget)
    return {"eer": e, "threshold": thr}


def asvspoof_eer(target: ArrayLike, nontarget: ArrayLike) -> dict[str, float]:
    """EER as the ASVspoof evaluation packages compute it (``eval_metrics.compute_eer``).

    Per-trial sweep (scores ascending, targets first at ties, first threshold
    ``min - 0.001``); ``eer = (Pmiss + Pfa) / 2`` at the FIRST point minimising
    ``|Pmiss - Pfa|``; ``threshold`` is that point's threshold as the official code reports it
    (the score of the last rejected trial; ``min - 0.001`` at the first point).

    Examples
    --------
    >>> asvspoof_eer([1.0, 3.0], [0.0, 2.0])
    {'eer': 0.5, 'threshold': 1.0}
    """
    return asvspoof_eer_sorted(check_class_scores(target, name="target", sort=True),
                               check_class_scores(nontarget, name="nontarget", sort=True))


def sasv_eer_sorted(target: F64, nontarget: F64, spoof: F64) -> dict[str, float]:
    """:func:`sasv_eer` on sorted, validated arrays."""
    return {"sasv_eer": _k.interpolated_eer(target, nontarget, spoof),
            "sv_eer": _k.interpolated_eer(target, nontarget),
            "spf_eer": _k.interpolated_eer(target, spoof)}


def sasv_eer(target: ArrayLike, nontarget: ArrayLike, spoof: ArrayLike) -> dict[str, float]:
    """The three EERs of the SASV 2022 challenge (``metrics.get_all_EERs``).

    ROC with tied scores grouped, linearly interpolated between its vertices, EER where it
    crosses ``Pmiss = Pfa``. ``sasv_eer``: target vs non-target and spoof; ``sv_eer``: target vs
    non-target; ``spf_eer``: target vs spoof.

    Examples
    --------
    >>> sasv_eer([1.0, 3.0], [0.0, 2.0], [-1.0])
    {'sasv_eer': 0.3333333333333333, 'sv_eer': 0.5, 'spf_eer': 0.0}
    """
    return sasv_eer_sorted(check_class_scores(target, name="target", sort=True),
                           check_class_scores(nontarget, name="nontarget", sort=True),
                           check_class_scores(spoof, name="spoof", sort=True))


def label_trial_type_problem(data: pl.DataFrame | pl.LazyFrame, *, where: str | None = None,
                             examples: int = 3) -> str | None:
    """The message for labels that contradict ``trial_type``, or ``None`` when they agree.

    Two label conventions fit a SASV table: ASV/SASV scores label a trial target exactly when
    its ``trial_type`` is ``target``; countermeasure (CM) scores label bona fide speech
    (``target`` and ``nontarget``) as the positive class. So a ``spoof`` labelled target, or a
    ``target`` labelled non-target, contradicts ``trial_type`` under either, and ``nontarget``
    trials must be labelled one way within a system (per ``system`` when there is one).
    Null labels (unknown) are not checked. Rows are 0-based positions in ``data`` (after any
    selection).

    Examples
    --------
    >>> df = pl.DataFrame({"label": [True, True, False],
    ...                    "trial_type": ["target", "spoof", "nontarget"]})
    >>> print(label_trial_type_problem(df))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    column `label` contradicts `trial_type`: expected label target on 'target' trials and
    non-target on 'spoof' trials; got 1 trial(s), e.g. label True with trial_type 'spoof'
    (row 1)
    ...
    >>> label_trial_type_problem(df.head(1)) is None
    True
    """
    from scoreframe.frames.schema import normalize_label

    lf = data.lazy()
    schema = lf.collect_schema()
    if "label" not in schema or "trial_type" not in schema:
        return None
    system = ["system"] if "system" in schema else []
    kind = pl.col("trial_type").cast(pl.String)
    rows = lf.select(*system, normalize_label(schema["label"]).alias("__label"),
                     kind.alias("trial_type")).with_row_index("__row")
    lab, typ = pl.col("__label"), pl.col("trial_type")
    hint = ("Fix the key, or derive the label from trial_type (ASV/SASV scores: target = "
            "trial_type 'target'; CM scores: target = not 'spoof').")
    bad = ((lab & (typ == "spoof")) | (~lab & (typ == "target"))).fill_null(False)
    found = (rows.filter(bad)
             .select(pl.len().alias("n"), pl.col("__row").head(examples).implode(),
                     lab.head(examples).implode(), typ.head(examples).implode())
             .collect(engine="streaming").row(0, named=True))
    if found["n"]:
        shown = ", ".join(f"label {lb} with trial_type {t!r} (row {r})" for r, lb, t in
                          zip(found["__row"], found["__label"], found["trial_type"],
                              strict=True))
        return message("column `label` contradicts `trial_type`", where=where,
                       expected="label target on 'target' trials and non-target on 'spoof' "
                                "trials",
                       got=f"{found['n']} trial(s), e.g. {shown}", hint=hint)
    non = rows.filter((typ == "nontarget") & lab.is_not_null())
    ways = ((non.group_by(system) if system else non.group_by(pl.lit(0).alias("__all")))
            .agg(lab.sum().alias("t"), (~lab).sum().alias("f"),
                 pl.col("__row").filter(lab).first().alias("rt"),
                 pl.col("__row").filter(~lab).first().alias("rf"))
            .filter((pl.col("t") > 0) & (pl.col("f") > 0))
            .collect(engine="streaming"))
    if ways.height == 0:
        return None
    r = ways.sort(system or "__all").row(0, named=True)
    inside = f"in system `{str(r['system'])[:40]}`: " if system else ""
    return message("column `label` contradicts `trial_type`", where=where,
                   expected="'nontarget' trials labelled one way per system (non-target for "
                            "ASV/SASV scores, target = bona fide for CM scores)",
                   got=f"{inside}{r['t']} 'nontarget' trial(s) labelled target (e.g. row "
                       f"{r['rt']}) and {r['f']} labelled non-target (e.g. row {r['rf']})",
                   hint=hint)


def spoof_summary_sorted(target: F64, nontarget: F64, spoof: F64, **costs: float
                         ) -> dict[str, float | int]:
    """The ``evaluate --spoof`` columns of one group from sorted arrays (all classes non-empty).

    Keys ``a_dcf``, ``a_dcf_threshold``, ``sasv_eer``, ``sv_eer``, ``spf_eer``, ``n_spoof``;
    ``costs`` are passed to :func:`a_dcf_sorted`.
    """
    r = a_dcf_sorted(target, nontarget, spoof, **costs)
    return {"a_dcf": r["min_a_dcf"], "a_dcf_threshold": r["threshold"],
            **sasv_eer_sorted(target, nontarget, spoof), "n_spoof": int(spoof.shape[0])}


def _tandem_inputs(asv_target: ArrayLike, asv_nontarget: ArrayLike, asv_spoof: ArrayLike,
                   cm_bonafide: ArrayLike, cm_spoof: ArrayLike) -> tuple[F64, ...]:
    at = check_class_scores(asv_target, name="asv_target", sort=True)
    an = check_class_scores(asv_nontarget, name="asv_nontarget", sort=True)
    asp = check_class_scores(asv_spoof, name="asv_spoof", sort=True)
    cb = check_class_scores(cm_bonafide, name="cm_bonafide", finite=True, sort=True)
    cs = check_class_scores(cm_spoof, name="cm_spoof", finite=True, sort=True)
    n_distinct = np.unique(np.concatenate((cb, cs))).shape[0]
    if n_distinct < 3:
        raise ScoreframeError(message(
            "the CM scores look like decisions", expected="at least 3 distinct CM scores",
            got=f"{n_distinct}"))
    return at, an, asp, cb, cs


def _tandem_coefficients(at: F64, an: F64, asp: F64, *, variant: str, p_spoof: float,
                         p_target: float, p_nontarget: float, c_miss: float, c_fa: float,
                         c_fa_spoof: float, c_miss_cm: float, asv_threshold: float | None
                         ) -> dict[str, float]:
    # the variant and the weights are checked by t_dcf_constants (before any use)
    if asv_threshold is None:
        thr = _k.asvspoof_eer(at, an)[1]
    else:
        thr = check_asv_threshold(asv_threshold)
    p_miss, p_fa, p_miss_spf, p_fa_spf = _k.asv_error_rates(at, an, asp, thr)
    return t_dcf_constants(thr, p_miss, p_fa, p_miss_spf, p_fa_spf, variant=variant,
                           p_spoof=p_spoof, p_target=p_target, p_nontarget=p_nontarget,
                           c_miss=c_miss, c_fa=c_fa, c_fa_spoof=c_fa_spoof, c_miss_cm=c_miss_cm)


def check_asv_threshold(asv_threshold: float) -> float:
    """``asv_threshold`` as a float (NaN is an error)."""
    thr = float(asv_threshold)
    if math.isnan(thr):
        raise ScoreframeError(message("bad `asv_threshold`", expected="a number", got="nan"))
    return thr


def t_dcf_constants(thr: float, p_miss: float, p_fa: float, p_miss_spf: float,
                    p_fa_spf: float, *, variant: str, p_spoof: float, p_target: float,
                    p_nontarget: float, c_miss: float, c_fa: float, c_fa_spoof: float,
                    c_miss_cm: float) -> dict[str, float]:
    """The ASV constants of the t-DCF from the ASV's error rates at its threshold ``thr``.

    ``p_miss``/``p_fa``: targets below / non-targets at or above ``thr``; ``p_miss_spf`` /
    ``p_fa_spf``: spoofs below / at or above. Checks the weights (as :func:`t_dcf`).
    Returns ``asv_threshold``, ``p_miss_asv``, ``p_fa_asv``, ``p_fa_spoof_asv``, ``c0``,
    ``c1``, ``c2``.
    """
    if variant not in ("2021", "2019"):
        raise ScoreframeError(message("unknown t-DCF `variant`", expected="2021 | 2019",
                                      got=repr(variant)))
    _check_costs(priors={"p_target": p_target, "p_nontarget": p_nontarget, "p_spoof": p_spoof},
                 costs={"c_miss": c_miss, "c_fa": c_fa, "c_fa_spoof": c_fa_spoof,
                        "c_miss_cm": c_miss_cm})
    c0, c1, c2 = _k.t_dcf_coefficients(
        p_miss_asv=p_miss, p_fa_asv=p_fa, p_miss_spoof_asv=p_miss_spf, p_fa_spoof_asv=p_fa_spf,
        variant=variant, p_target=p_target, p_nontarget=p_nontarget, p_spoof=p_spoof,
        c_miss=c_miss, c_fa=c_fa, c_fa_spoof=c_fa_spoof, c_miss_cm=c_miss_cm)
    if c1 < 0 or c2 < 0 or c0 < 0:
        raise ScoreframeError(message(
            "negative t-DCF weights", expected="C0, C1, C2 >= 0",
            got=f"C0={c0!r}, C1={c1!r}, C2={c2!r} (ASV Pmiss={p_miss!r}, Pfa={p_fa!r})"))
    if c0 + min(c1, c2) == 0:
        raise DegenerateError(message(
            "the t-DCF normaliser C0 + min(C1, C2) is 0", expected="a positive normaliser",
            got=f"C0={c0!r}, C1={c1!r}, C2={c2!r} (ASV Pfa_spoof={p_fa_spf!r})"))
    return {"asv_threshold": thr, "p_miss_asv": p_miss, "p_fa_asv": p_fa,
            "p_fa_spoof_asv": p_fa_spf, "c0": c0, "c1": c1, "c2": c2}


def t_dcf(asv_target: ArrayLike, asv_nontarget: ArrayLike, asv_spoof: ArrayLike,
          cm_bonafide: ArrayLike, cm_spoof: ArrayLike, *, variant: Variant = "2021",
          p_spoof: float = 0.05, p_target: float = 0.9405, p_nontarget: float = 0.0095,
          c_miss: float = 1.0, c_fa: float = 10.0, c_fa_spoof: float = 10.0,
          c_miss_cm: float = 1.0, asv_threshold: float | None = None) -> dict[str, float]:
    """Minimum normalised tandem detection cost function (t-DCF) of a CM in front of an ASV.

    The ASV operating point is fixed first (``asv_threshold``; by default the
    :func:`asvspoof_eer` threshold of ``asv_target`` vs ``asv_nontarget``), giving
    ``Pmiss_asv = mean(asv_target < t)``, ``Pfa_asv = mean(asv_nontarget >= t)``,
    ``Pfa_spoof_asv = mean(asv_spoof >= t)``. Then, over the per-trial sweep of CM thresholds
    (bona fide before spoof at ties, first threshold ``min(cm) - 0.001``)::

        2021: t-DCF = (C0 + C1 Pmiss_cm + C2 Pfa_cm) / (C0 + min(C1, C2))
              C0 = p_target c_miss Pmiss_asv + p_nontarget c_fa Pfa_asv, C1 = p_target c_miss - C0,
              C2 = p_spoof c_fa_spoof Pfa_spoof_asv
        2019: t-DCF = (C1 Pmiss_cm + C2 Pfa_cm) / min(C1, C2)
              C1 = p_target (c_miss_cm - c_miss Pmiss_asv) - p_nontarget c_fa Pfa_asv,
              C2 = c_fa_spoof p_spoof Pfa_spoof_asv

    Equals ASVspoof 2021 ``eval_metrics.compute_tDCF`` / ``compute_tDCF_legacy`` followed by
    the FIRST argmin. ``c_miss_cm`` is used by "2019" only.

    Returns
    -------
    dict
        ``min_t_dcf``, ``cm_threshold``, ``asv_threshold``, ``p_miss_asv``, ``p_fa_asv``,
        ``p_fa_spoof_asv``, ``c0``, ``c1``, ``c2``.

    Raises
    ------
    ScoreframeError
        Priors not summing to 1 (+-1e-10), negative C1 or C2, non-finite CM scores, fewer than 3
        distinct CM scores, NaN or empty inputs.

    References
    ----------
    T. Kinnunen et al., "Tandem assessment of spoofing countermeasures and automatic speaker
    verification: fundamentals", IEEE/ACM TASLP 28, 2020 (eqs 14-17); ASVspoof 2019 evaluation
    plan (t-DCF v1).

    Examples
    --------
    >>> r = t_dcf([2.0, 3.0], [0.0, 1.0], [2.5, 0.5], [1.0, 2.0, 3.0], [-1.0, 0.5])
    >>> round(r["min_t_dcf"], 6), r["cm_threshold"], r["asv_threshold"]
    (0.159664, 0.5, 1.0)
    """
    at, an, asp, cb, cs = _tandem_inputs(asv_target, asv_nontarget, asv_spoof, cm_bonafide,
                                         cm_spoof)
    co = _tandem_coefficients(at, an, asp, variant=variant, p_spoof=p_spoof, p_target=p_target,
                              p_nontarget=p_nontarget, c_miss=c_miss, c_fa=c_fa,
                              c_fa_spoof=c_fa_spoof, c_miss_cm=c_miss_cm,
                              asv_threshold=asv_threshold)
    r = _k.t_dcf(cb, cs, co["c0"], co["c1"], co["c2"])
    return {"min_t_dcf": r["min_t_dcf"], "cm_threshold": r["cm_threshold"], **co}


def t_dcf_curve(asv_target: ArrayLike, asv_nontarget: ArrayLike, asv_spoof: ArrayLike,
                cm_bonafide: ArrayLike, cm_spoof: ArrayLike, *, variant: Variant = "2021",
                p_spoof: float = 0.05, p_target: float = 0.9405, p_nontarget: float = 0.0095,
                c_miss: float = 1.0, c_fa: float = 10.0, c_fa_spoof: float = 10.0,
                c_miss_cm: float = 1.0, asv_threshold: float | None = None) -> pl.DataFrame:
    """The normalised t-DCF at every point of the CM sweep (arguments as :func:`t_dcf`).

    Returns
    -------
    polars.DataFrame
        ``cm_threshold``, ``t_dcf``, ``p_miss_cm``, ``p_fa_cm``, ``is_min`` (True at the first
        argmin only): one row per sweep point, ``len(cm_bonafide) + len(cm_spoof) + 1`` rows.

    Examples
    --------
    >>> c = t_dcf_curve([2.0, 3.0], [0.0, 1.0], [2.5, 0.5], [1.0, 2.0, 3.0], [-1.0, 0.5])
    >>> c.height, c.filter("is_min")["cm_threshold"].item()
    (6, 0.5)
    """
    at, an, asp, cb, cs = _tandem_inputs(asv_target, asv_nontarget, asv_spoof, cm_bonafide,
                                         cm_spoof)
    co = _tandem_coefficients(at, an, asp, variant=variant, p_spoof=p_spoof, p_target=p_target,
                              p_nontarget=p_nontarget, c_miss=c_miss, c_fa=c_fa,
                              c_fa_spoof=c_fa_spoof, c_miss_cm=c_miss_cm,
                              asv_threshold=asv_threshold)
    thr, curve, pm, pf = _k.t_dcf_curve(cb, cs, co["c0"], co["c1"], co["c2"])
    is_min = np.zeros(curve.shape[0], dtype=bool)
    is_min[int(np.argmin(curve))] = True
    return pl.DataFrame({"cm_threshold": thr, "t_dcf": curve, "p_miss_cm": pm, "p_fa_cm": pf,
                         "is_min": is_min})
