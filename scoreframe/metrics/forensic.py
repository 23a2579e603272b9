"""Forensic likelihood-ratio evaluation: ECE, ELUB, rates of misleading evidence, Tippett, AUC.

Inputs are natural-log llrs of the same-source (``tar_llr``) and different-source
(``non_llr``) comparisons; ``+-inf`` is allowed, NaN and empty classes are rejected with a
one-line :class:`~scoreframe.errors.ScoreframeError`. ``*_log10`` keys and ``log10=True`` mean
``llr / ln 10``. The kernels are in :mod:`scoreframe.kernels.forensic`; the conventions (lir
1.3.1's grid for ELUB, fractions in Tippett plots) are in ``docs/spoof_forensic.md``.

For per-condition evaluation, :func:`forensic_summary_sorted` returns every
``evaluate --forensic`` column of one group from arrays already sorted ascending.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import ScoreframeError, message
from scoreframe.frames.class_scores import check_class_scores
from scoreframe.kernels import forensic as _k

__all__ = ["auc", "ece", "ece_curve", "elub", "forensic_summary_sorted", "misleading_evidence",
           "tippett"]

F64 = NDArray[np.float64]
LN10 = _k.LN10


def _llrs(tar_llr: ArrayLike, non_llr: ArrayLike, *, names: tuple[str, str] = ("tar_llr",
                                                                                 "non_llr")
          ) -> tuple[F64, F64]:
    return (check_class_scores(tar_llr, name=names[0], sort=True),
            check_class_scores(non_llr, name=names[1], sort=True))


def _finite_array(x: ArrayLike, *, name: str) -> F64:
    try:
        a = np.atleast_1d(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError):
        a = np.array([np.nan])
    if a.ndim != 1 or not np.isfinite(a).all():
        raise ScoreframeError(message(f"bad `{name}`", expected="finite numbers",
                                      got=repr(x)))
    return a


def ece(tar_llr: ArrayLike, non_llr: ArrayLike, *, prior_log_odds: ArrayLike) -> dict[str, F64]:
    """Empirical cross-entropy (the ECE plot's three curves) at each prior log odds.

    ``ECE(t) = [P mean_tar -log2 P(H1 | llr, t) + (1 - P) mean_non -log2 P(H2 | llr, t)]``
    with ``P = sigmoid(t)`` and posterior log odds ``llr + t`` (natural logs).

    Parameters
    ----------
    tar_llr, non_llr
        Natural-log llrs; ``+-inf`` allowed (a misleading infinite llr gives ``inf``).
    prior_log_odds
        Natural-log prior odds (finite); the ECE plot's x axis.

    Returns
    -------
    dict
        Arrays aligned with ``prior_log_odds``: ``prior_log_odds``, ``ece`` (bits; Cllr at
        0), ``ece_min`` (ECE of the exact PAV llrs: the calibration-free floor, ``min_cllr``
        without BOSARIS' ramp at 0) and ``ece_ref`` (all LR = 1: the prior's entropy).
        Equals lir 1.3.1 ``calculate_ece`` (with ``lrs = exp(llr)``, ``priors = sigmoid(t)``).

    References
    ----------
    D. Ramos et al., "Reliable support: measuring calibration of likelihood ratios", Forensic
    Sci. Int. 230, 2013; N. Brummer, PhD thesis 2010, ch. 7.

    Examples
    --------
    >>> r = ece([1.0, 2.0], [-1.0], prior_log_odds=[0.0])
    >>> round(float(r["ece"][0]), 6), float(r["ece_ref"][0])
    (0.384735, 1.0)
    """
    t, n = _llrs(tar_llr, non_llr)
    plo = _finite_array(prior_log_odds, name="prior_log_odds")
    return {"prior_log_odds": plo, "ece": _k.ece(t, n, plo), "ece_min": _k.ece_min(t, n, plo),
            "ece_ref": _k.ece_ref(plo)}


def ece_curve(tar_llr: ArrayLike, non_llr: ArrayLike, *,
              prior_log_odds: ArrayLike | None = None) -> pl.DataFrame:
    """:func:`ece` as a tidy frame for :func:`scoreframe.views.plots.ece_plot`.

    ``prior_log_odds`` defaults to 281 points from -7 to 7 (natural log; about +-3 in log10,
    lir's default range). Columns ``prior_log_odds``, ``ece``, ``ece_min``, ``ece_ref``; add a
    group column (``with_columns(system=...)``) and concatenate frames to compare systems.

    Examples
    --------
    >>> ece_curve([1.0, 2.0], [-1.0]).columns
    ['prior_log_odds', 'ece', 'ece_min', 'ece_ref']
    """
    plo = np.linspace(-7.0, 7.0, 281) if prior_log_odds is None else prior_log_odds
    return pl.DataFrame(ece(tar_llr, non_llr, prior_log_odds=plo))


def elub(tar_llr: ArrayLike, non_llr: ArrayLike, *, add_misleading: int = 1,
         step_log10: float = 0.01, substitute_extremes_log10: tuple[float, float] = (-9.0, 9.0)
         ) -> dict[str, float]:
    """Empirical lower and upper bounds (ELUB) on the llrs a system can support.

    The llrs are converted to log10 (``llr / ln 10``), clipped to ``substitute_extremes_log10``
    and compared, on lir's threshold grid (multiples of ``step_log10`` within
    ``[-log10(n_tar + 1), log10(n_non + 1)]``, always including 0), with the neutral system by
    expected utility, with ``add_misleading`` misleading llrs added to each class (Vergeer et al.
    2016). Equals lir 1.3.1 ``lir.algorithms.bayeserror.elub`` on ``llr / ln 10``.

    Returns
    -------
    dict
        ``lower_log10``, ``upper_log10`` (lir's outputs) and ``lower``, ``upper`` (natural log:
        ``lower_log10 * ln 10``).

    References
    ----------
    P. Vergeer, A. van Es, A. de Jongh, I. Alberink, R. Stoel, "Numerical likelihood ratios
    outputted by LR systems are often based on extrapolation: when to stop extrapolating?",
    Science & Justice 56, 2016.

    Examples
    --------
    >>> r = elub([-1.0, 2.0, 3.0, 4.0], [-3.0, -2.5, -2.0, 1.0])
    >>> r["lower_log10"], r["upper_log10"]
    (-0.17000000000000004, 0.16999999999999993)
    """
    if isinstance(add_misleading, bool) or not isinstance(add_misleading, int | np.integer) \
            or add_misleading < 0:
        raise ScoreframeError(message("bad `add_misleading`", expected="an integer >= 0",
                                      got=repr(add_misleading)))
    step = float(_finite_array(step_log10, name="step_log10")[0])
    ext = _finite_array(substitute_extremes_log10, name="substitute_extremes_log10")
    if step <= 0 or ext.shape[0] != 2 or not ext[0] < ext[1]:
        raise ScoreframeError(message("bad ELUB grid", expected=(
            "`step_log10` > 0 and `substitute_extremes_log10` = (low, high) with low < high"),
            got=f"{step_log10!r}, {substitute_extremes_log10!r}"))
    t, n = _llrs(tar_llr, non_llr)
    lo, hi = _k.elub(t / LN10, n / LN10, add_misleading=int(add_misleading), step=step,
                     extremes=(float(ext[0]), float(ext[1])))
    return {"lower_log10": lo, "upper_log10": hi, "lower": lo * LN10, "upper": hi * LN10}


def misleading_evidence(tar_llr: ArrayLike, non_llr: ArrayLike) -> dict[str, float | int]:
    """Rates of misleading evidence: ``rmep = #(tar < 0) / n_tar``, ``rmed = #(non > 0) / n_non``.

    An llr of exactly 0 is not misleading. Keys ``rmep``, ``rmed``, ``n_misleading_tar``,
    ``n_misleading_non``.

    Examples
    --------
    >>> misleading_evidence([-1.0, 0.0, 2.0, 3.0], [0.0, 1.0, -2.0])
    {'rmep': 0.25, 'rmed': 0.3333333333333333, 'n_misleading_tar': 1, 'n_misleading_non': 1}
    """
    t, n = _llrs(tar_llr, non_llr)
    mt, mn = _k.misleading_counts(t, n)
    return {"rmep": mt / t.shape[0], "rmed": mn / n.shape[0], "n_misleading_tar": mt,
            "n_misleading_non": mn}


def tippett(tar_llr: ArrayLike, non_llr: ArrayLike, *, thresholds: ArrayLike | None = None,
            log10: bool = False) -> pl.DataFrame:
    """Tippett curves: fractions of same- and different-source llrs at or above each threshold.

    Parameters
    ----------
    thresholds
        Where to evaluate (default: the sorted distinct llrs of both classes).
    log10
        Thresholds (given and returned) in log10 units; the llrs are divided by ln 10.

    Returns
    -------
    polars.DataFrame
        ``threshold``, ``p_tar_ge``, ``p_non_ge`` (lir 1.3.1 ``plotting.tippett`` type 1, as
        fractions instead of percent).

    Examples
    --------
    >>> tippett([0.0, 1.0], [-1.0, 0.0]).rows()
    [(-1.0, 1.0, 1.0), (0.0, 1.0, 0.5), (1.0, 0.5, 0.0)]
    """
    t, n = _llrs(tar_llr, non_llr)
    if log10:
        t, n = t / LN10, n / LN10
    if thresholds is None:
        thr = np.unique(np.concatenate((t, n)))
    else:
        thr = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
        if thr.ndim != 1 or np.isnan(thr).any():
            raise ScoreframeError(message("bad `thresholds`", expected="numbers, no NaN",
                                          got=repr(thresholds)))
    pt, pn = _k.tippett(t, n, thr)
    return pl.DataFrame({"threshold": thr, "p_tar_ge": pt, "p_non_ge": pn})


def auc(tar: ArrayLike, non: ArrayLike) -> float:
    """Area under the ROC curve: ``P(tar > non) + P(tar = non) / 2`` (``+-inf`` allowed).

    Equals scikit-learn ``roc_auc_score``, the Mann-Whitney ``U / (n_tar n_non)`` and
    ``1 -`` the area under the (steppy) ROC in (Pfa, Pmiss) space.

    Parameters
    ----------
    tar, non
        Target and non-target scores.

    Returns
    -------
    float
        The area, in [0, 1].

    See Also
    --------
    scoreframe.area_under_rocch : The area under the ROC convex hull.
    scoreframe.eer : Another threshold-free summary.
    scoreframe.metrics.mw_auc : The Mann-Whitney AUC with its interval.

    Examples
    --------
    >>> auc([1.0, 2.0, 3.0], [0.0, 2.0])
    0.75
    """
    t = check_class_scores(tar, name="tar")
    n = check_class_scores(non, name="non", sort=True)
    return _k.auc(t, n, non_sorted=True)


def forensic_summary_sorted(tar_llr: F64, non_llr: F64) -> dict[str, float]:
    """The ``evaluate --forensic`` columns of one group from sorted, validated llrs.

    Keys ``auc``, ``rmep``, ``rmed``, ``elub_lower_log10``, ``elub_upper_log10`` (ELUB with
    the defaults of :func:`elub`).
    """
    mt, mn = _k.misleading_counts(tar_llr, non_llr)
    lo, hi = _k.elub(tar_llr / LN10, non_llr / LN10, add_misleading=1, step=0.01,
                     extremes=(-9.0, 9.0))
    return {"auc": _k.auc(tar_llr, non_llr, non_sorted=True), "rmep": mt / tar_llr.shape[0],
            "rmed": mn / non_llr.shape[0], "elub_lower_log10": lo, "elub_upper_log10": hi}
