"""Binary metrics on arrays of target and non-target scores (the BOSARIS-style scalar API).

Each function validates its inputs (1-D, no NaN, at least one target and one non-target) and
calls the kernels. For data frames grouped by condition use :func:`scoreframe.evaluate`.
Operating points are effective priors ``p_target`` (optionally with ``c_miss``, ``c_fa``,
reduced to an effective prior), or ``prior_log_odds`` whose Bayes threshold is used directly.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import DegenerateError, ScoreframeError, message
from scoreframe.kernels import SortedScores, sort_scores
from scoreframe.kernels import cllr as _cllr
from scoreframe.kernels import dcf as _dcf
from scoreframe.kernels import eer_conventions as _eerc
from scoreframe.kernels import rocch as _rocch
from scoreframe.kernels.elementary import effective_prior, operating_points

__all__ = [
    "psr",
    "EER_METHODS",
    "act_dcf",
    "area_under_rocch",
    "check_scores",
    "cllr",
    "cross_entropy",
    "eer",
    "min_cllr",
    "min_dcf",
    "pav_llrs",
    "prbep",
    "rocch",
    "sorted_scores",
    "uer",
]

EER_METHODS = ("rocch", "nist", "kaldi", "asvspoof")
EerMethod = Literal["rocch", "nist", "kaldi", "asvspoof"]
F64 = NDArray[np.float64]


def _as_scores(x: ArrayLike, name: str) -> F64:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0 or (a.ndim == 2 and 1 in a.shape):
        a = a.reshape(-1)  # a scalar, or a row/column vector
    if a.ndim != 1:
        raise ScoreframeError(message(f"`{name}` must be one-dimensional",
                                      got=f"shape {a.shape}"))
    nan = np.isnan(a)
    if nan.any():
        first = int(np.argmax(nan))
        raise ScoreframeError(message(f"`{name}` contains NaN scores",
                                      expected="finite or infinite llrs", where=f"index {first}",
                                      got=f"{int(nan.sum())} NaN value(s)",
                                      hint="Drop or repair those trials before evaluating."))
    return a


def check_scores(tar: ArrayLike, non: ArrayLike | None) -> tuple[F64, F64]:
    """Validate target and non-target scores and return them as float64 arrays.

    Raises
    ------
    ScoreframeError
        On NaN or non-1-D input.
    DegenerateError
        When there is no target or no non-target.
    """
    if non is None:
        raise ScoreframeError(message("`non` is required", expected="non-target scores",
                                      got="None"))
    t = _as_scores(tar, "tar")
    n = _as_scores(non, "non")
    if t.shape[0] == 0 or n.shape[0] == 0:
        raise DegenerateError(message(
            "binary metrics need at least one target and one non-target",
            got=f"{t.shape[0]} target(s) and {n.shape[0]} non-target(s)"))
    return t, n


def sorted_scores(tar: ArrayLike | SortedScores, non: ArrayLike | None = None) -> SortedScores:
    """Validate and sort once; pass the result to several metrics to avoid re-sorting.

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).

    Returns
    -------
    SortedScores
        The sorted scores and their PAV blocks, accepted by every metric in place of
        ``tar, non``.

    See Also
    --------
    eer, min_dcf, cllr : Metrics that accept the result.

    Examples
    --------
    >>> s = sorted_scores([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0])
    >>> eer(s), min_dcf(s, p_target=0.5)
    (0.16666666666666666, 0.16666666666666666)
    """
    if isinstance(tar, SortedScores):
        return tar
    return sort_scores(*check_scores(tar, non))


def _ops(p_target: ArrayLike | None, c_miss: ArrayLike, c_fa: ArrayLike,
         prior_log_odds: ArrayLike | None) -> tuple[F64, F64, F64]:
    if prior_log_odds is not None:
        if p_target is not None:
            raise TypeError("give `p_target` or `prior_log_odds`, not both")
        return operating_points(prior_log_odds=prior_log_odds)
    if p_target is None:
        raise TypeError("give `p_target` (or `prior_log_odds`)")
    p = np.atleast_1d(np.asarray(p_target, dtype=np.float64))
    if np.any((p < 0) | (p > 1)) or np.isnan(p).any():
        raise ScoreframeError(message("`p_target` must lie in [0, 1]", got=str(p.tolist())))
    if not (np.all(np.asarray(c_miss) == 1) and np.all(np.asarray(c_fa) == 1)):
        p = effective_prior(p, c_miss, c_fa)
    return operating_points(p_target=p)


def _shape(x: F64, like: ArrayLike | None) -> float | F64:
    if like is not None and np.ndim(like) == 0:
        return float(x[0])
    return x


def _normalize(dcf: F64, p: F64, q: F64) -> F64:
    with np.errstate(divide="ignore", invalid="ignore"):
        return dcf / np.minimum(p, q)


def act_dcf(tar: ArrayLike, non: ArrayLike | None = None, *, p_target: ArrayLike | None = None,
            c_miss: ArrayLike = 1.0, c_fa: ArrayLike = 1.0,
            prior_log_odds: ArrayLike | None = None, normalize: bool = False) -> float | F64:
    """Actual DCF (empirical Bayes error rate) of llrs at the Bayes threshold.

    ``act_dcf`` is the raw cost, as the ``act_dcf`` column of :func:`scoreframe.evaluate`
    and BOSARIS' ``Results.get_act_dcf``; ``normalize=True`` gives the normalized DCF that
    NIST evaluations report (the ``act_dcf_norm`` column).

    Parameters
    ----------
    tar, non
        Target and non-target llrs (or a :class:`SortedScores` as ``tar``).
    p_target, c_miss, c_fa
        Operating point(s); reduced to the effective prior ([BdV11] eq 10).
    prior_log_odds
        Alternative to ``p_target``: the threshold is ``-prior_log_odds`` exactly.
    normalize
        Divide by the default system's cost ``min(p, 1 - p)`` ([BdV11] eq 13); off by
        default, so ``act_dcf`` means the same as the ``act_dcf`` column of ``evaluate``.

    Returns
    -------
    float or ndarray
        A float for a scalar operating point, else one value per operating point.

    See Also
    --------
    min_dcf : The cost at the best threshold; ``act_dcf - min_dcf`` is the calibration loss.
    cllr : The cost averaged over all operating points.
    eer : The threshold-free summary of discrimination.
    scoreframe.det_curve : The curve whose points these costs weigh.

    Examples
    --------
    >>> round(act_dcf([1, 2, 5, 7], [-7, -5, -2, -1], prior_log_odds=1.0), 6)
    0.067235
    >>> round(act_dcf([1, 2, 5, 7], [-7, -5, -2, -1], p_target=0.5, normalize=True), 6)
    0.0
    """
    s = sorted_scores(tar, non)
    p, q, thr = _ops(p_target, c_miss, c_fa, prior_log_odds)
    dcf, _, _ = _dcf.act_dcf(s, p, q, thr)
    return _shape(_normalize(dcf, p, q) if normalize else dcf,
                  p_target if prior_log_odds is None else prior_log_odds)


def min_dcf(tar: ArrayLike, non: ArrayLike | None = None, *, p_target: ArrayLike | None = None,
            c_miss: ArrayLike = 1.0, c_fa: ArrayLike = 1.0,
            prior_log_odds: ArrayLike | None = None, normalize: bool = False) -> float | F64:
    """Minimum DCF over all thresholds (on the ROCCH, [BdV11] eqs 15-16, 25).

    ``min_dcf`` is the raw cost, as the ``min_dcf`` column of :func:`scoreframe.evaluate` and
    BOSARIS' ``fast_minDCF`` / ``Results.get_min_dcf``; ``normalize=True`` gives the
    normalized DCF that NIST evaluations report (the ``min_dcf_norm`` column).

    Parameters
    ----------
    tar, non
        Target and non-target scores (or a :class:`SortedScores` as ``tar``); any strictly
        increasing map of the scores gives the same value.
    p_target, c_miss, c_fa
        Operating point(s); reduced to the effective prior ([BdV11] eq 10).
    prior_log_odds
        Alternative to ``p_target``: the effective prior's log odds.
    normalize
        Divide by the default system's cost ``min(p, 1 - p)`` ([BdV11] eq 13); off by
        default, so ``min_dcf`` means the same as the ``min_dcf`` column of ``evaluate``.

    Returns
    -------
    float or ndarray
        A float for a scalar operating point, else one value per operating point.

    See Also
    --------
    act_dcf : The cost at the Bayes threshold of the scores taken as llrs.
    eer : The largest ``min_dcf`` over all priors (unit costs).
    min_cllr : The minimum cost averaged over all operating points.
    scoreframe.det_curve : The curve whose convex hull holds the minimizing point.

    Examples
    --------
    >>> round(min_dcf([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4], p_target=0.5), 6)
    0.266667
    >>> round(min_dcf([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4], p_target=0.5,
    ...               normalize=True), 6)
    0.533333
    """
    s = sorted_scores(tar, non)
    p, q, _ = _ops(p_target, c_miss, c_fa, prior_log_odds)
    dcf, _, _ = _rocch.min_dcf(s.blocks, p, q)
    return _shape(_normalize(dcf, p, q) if normalize else dcf,
                  p_target if prior_log_odds is None else prior_log_odds)


def eer(tar: ArrayLike, non: ArrayLike | None = None, *, method: EerMethod = "rocch") -> float:
    """Equal error rate.

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).
    method
        ``"rocch"`` (default, BOSARIS: where the ROC convex hull crosses ``pmiss = pfa``),
        ``"nist"`` (linear interpolation of the per-trial ROC, NIST SRE scorer), ``"kaldi"``
        (Kaldi ``compute-eer``), ``"asvspoof"`` (the ASVspoof challenge's per-trial sweep).

    Returns
    -------
    float
        The error rate, a fraction in ``[0, 0.5]``.

    See Also
    --------
    min_dcf : The cost at one operating point; ``eer`` is its largest value over priors.
    act_dcf : The cost of the scores as calibrated llrs.
    scoreframe.det_curve : The curve on which the EER is read.
    prbep : The break-even point of precision and recall.

    Examples
    --------
    >>> round(eer([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4]), 6)
    0.272727
    """
    s = sorted_scores(tar, non)
    if method == "rocch":
        return _rocch.rocch_eer(s.blocks)
    if method == "nist":
        return _eerc.steppy_eer(s)
    if method == "kaldi":
        return _eerc.kaldi_eer(s)
    if method == "asvspoof":
        from scoreframe.kernels.spoof import asvspoof_eer

        return asvspoof_eer(s.tar, s.non)[0]
    raise ScoreframeError(message("unknown EER method", expected=" | ".join(EER_METHODS),
                                  got=repr(method)))


def prbep(tar: ArrayLike, non: ArrayLike | None = None) -> float:
    """Precision-recall break-even point, as a count of errors (BOSARIS ``prbep``).

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).

    Returns
    -------
    float
        The number of misses (equal to the number of false alarms) on the ROC convex hull where
        precision equals recall.

    See Also
    --------
    eer : The rate where the miss and false-alarm rates are equal.

    Examples
    --------
    >>> prbep([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0])
    0.5
    """
    return _rocch.prbep(sorted_scores(tar, non).blocks)


def uer(tar: ArrayLike, non: ArrayLike | None = None, *, r: float) -> float:
    """Unit error rate ``UER(r)`` ([BdV11] eqs 27-28); ``r = 1`` gives the EER.

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).
    r
        The ratio of the costs of the two errors, positive and finite.

    Returns
    -------
    float
        The ROCCH error rate at the operating point where the cost ratio is ``r``.

    See Also
    --------
    eer : ``uer(..., r=1)``.

    Examples
    --------
    >>> uer([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0], r=1.0)
    0.16666666666666666
    """
    if not (0 < r < np.inf):
        raise ScoreframeError(message("`r` must be positive and finite", got=repr(r)))
    return _rocch.uer(sorted_scores(tar, non).blocks, r)


def rocch(tar: ArrayLike, non: ArrayLike | None = None) -> tuple[F64, F64]:
    """ROCCH vertices ``(pmiss, pfa)`` from ``(0, 1)`` to ``(1, 0)``.

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).

    Returns
    -------
    tuple of numpy.ndarray
        Miss and false-alarm rates of the convex hull's vertices.

    See Also
    --------
    eer : Where the hull crosses ``pmiss = pfa``.
    scoreframe.det_curve : The steppy and hull curves of a trial table, per condition.

    Examples
    --------
    >>> pmiss, pfa = rocch([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0])
    >>> pmiss.round(3).tolist(), pfa.round(3).tolist()
    ([0.0, 0.0, 0.333, 1.0], [1.0, 0.333, 0.0, 0.0])
    """
    return _rocch.rocch(sorted_scores(tar, non).blocks)


def area_under_rocch(tar: ArrayLike, non: ArrayLike | None = None) -> float:
    """Area under the ROCCH in (pfa, pmiss) space (0 is perfect; BOSARIS ``area_under_rocch``).

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).

    Returns
    -------
    float
        The area between the convex hull and the axes: ``1 - AUC`` of the hull.

    See Also
    --------
    rocch : The hull's vertices.
    scoreframe.auc : The area under the steppy ROC (Mann-Whitney).

    Examples
    --------
    >>> area_under_rocch([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0])
    0.05555555555555555
    """
    return _rocch.area_under_rocch(sorted_scores(tar, non).blocks)


def cllr(tar: ArrayLike, non: ArrayLike | None = None) -> float:
    """Cllr in bits, scores taken as natural-log llrs ([BdV11] eq 18).

    Parameters
    ----------
    tar, non
        Target and non-target llrs (or ``tar`` alone as a :func:`sorted_scores` result).

    Returns
    -------
    float
        The log-likelihood-ratio cost in bits: 0 for a perfect system, 1 for one that always
        says ``llr = 0``.

    See Also
    --------
    min_cllr : The cost after optimal calibration; ``cllr - min_cllr`` is the calibration loss.
    cross_entropy : The same cost at one prior.
    act_dcf : The cost at one operating point.

    Examples
    --------
    >>> round(cllr([1, 2, 5, 7], [-7, -5, -2, -1]), 6)
    0.161516
    """
    if isinstance(tar, SortedScores):
        return _cllr.cllr(tar.tar, tar.non)
    return _cllr.cllr(*check_scores(tar, non))


def min_cllr(tar: ArrayLike, non: ArrayLike | None = None, *, ramp: bool = False) -> float:
    """Cllr after optimal (PAV) calibration: the exact value, as in ``evaluate``'s ``min_cllr``.

    Between 0 and 1 and at most :func:`cllr`; exactly 1 when the scores are all tied.
    ``ramp=True`` reproduces BOSARIS ``min_cllr`` to the last digits instead, including its
    ``k*1e-6/n`` monotonicity ramp (constant scores then give 1.00000018).

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).
    ramp
        Reproduce BOSARIS ``min_cllr`` exactly, ramp included.

    Returns
    -------
    float
        minCllr in bits.

    See Also
    --------
    cllr : the cost of the scores as they are.
    pav_llrs : the PAV llrs whose Cllr this is.

    Examples
    --------
    >>> round(min_cllr([-3, 1, 2, 5, 7], [-7, -5, -2, -1, 3, 4]), 6)
    0.618993
    >>> min_cllr([3, 3, 3], [3, 3]), round(min_cllr([3, 3, 3], [3, 3], ramp=True), 8)
    (1.0, 1.00000018)
    """
    return _cllr.min_cllr(sorted_scores(tar, non).blocks, ramp=ramp)


def cross_entropy(tar: ArrayLike, non: ArrayLike | None = None, *, p_target: float) -> float:
    """Prior-weighted cross-entropy (ECE) in bits; ``p_target = 0.5`` gives Cllr.

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).
    p_target
        Prior of the target class, in (0, 1).

    Returns
    -------
    float
        The empirical cross-entropy of the llrs at ``p_target``, normalized so that a system
        that always says llr 0 scores 1.

    See Also
    --------
    cllr : The same at ``p_target = 0.5``.
    scoreframe.metrics.forensic.ece : The curve over prior log odds.

    Examples
    --------
    >>> cross_entropy([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0], p_target=0.5)
    0.7139568107297096
    """
    if not 0 < p_target < 1:
        raise ScoreframeError(message("`p_target` must lie in (0, 1)", got=repr(p_target)))
    t, n = check_scores(tar, non)
    return _cllr.cross_entropy(t, n, p_target)


def psr(tar: ArrayLike, non: ArrayLike | None = None, *, p_target: float,
        rule: str | tuple[float, float] = "log", normalize: bool = False) -> float:
    """Prior-weighted proper-scoring-rule objective of llrs ([BD13]; docs/math.md §9.4).

    ``pi mean_T C(q, H1) + (1 - pi) mean_N C(q, H2)`` with ``q = sigmoid(llr + logit(pi))`` and
    ``C`` the Beta-family rule ``rule`` (``log``, ``brier``, ``boost``, ``asym`` or
    ``(alpha, beta)``). ``normalize`` divides by the default system's value (1 = useless).

    Parameters
    ----------
    tar, non
        Target and non-target llrs.
    p_target
        The prior ``pi``, in (0, 1).
    rule
        The scoring rule: a name or ``(alpha, beta)``.
    normalize
        Divide by the default system's value.

    Returns
    -------
    float
        The objective (0 for a perfect system; the log rule in nats).

    See Also
    --------
    cllr : The logarithmic rule at ``p_target = 0.5``, normalized.
    cross_entropy : The logarithmic rule at one prior.

    Examples
    --------
    >>> round(psr([1, 2, 5, 7], [-7, -5, -2, -1], p_target=0.1, rule="brier"), 6)
    0.068297
    """
    from scoreframe.kernels.psr import psr_beta, psr_objective

    if not 0 < p_target < 1:
        raise ScoreframeError(message("`p_target` must lie in (0, 1)", got=repr(p_target)))
    try:
        r = psr_beta(rule) if isinstance(rule, str) else psr_beta(*rule)
    except ValueError as exc:
        raise ScoreframeError(str(exc)) from None
    t, n = check_scores(tar, non)
    return psr_objective(t, n, p_target, r, normalize=normalize)


def pav_llrs(tar: ArrayLike, non: ArrayLike | None = None, *, laplace: bool = False,
             ramp: bool = False) -> tuple[F64, F64]:
    """PAV-optimal llr of each trial, in input order (BOSARIS ``opt_loglr``).

    Parameters
    ----------
    tar, non
        Target and non-target scores (or ``tar`` alone as a :func:`sorted_scores` result).
    laplace
        Add one dummy target and one dummy non-target at the extremes (Laplace's rule), so
        every llr is finite.
    ramp
        BOSARIS' ramp between PAV blocks instead of steps.

    Returns
    -------
    tuple of numpy.ndarray
        The llrs of the targets and of the non-targets, each in input order.

    See Also
    --------
    min_cllr : The Cllr of these llrs.
    scoreframe.PavCalibration : A PAV map fitted on one set and applied to others.

    Examples
    --------
    >>> pav_llrs([0.5, 2.0, 3.0], [-1.0, 0.0, 1.0])
    (array([ 0., inf, inf]), array([-inf, -inf,   0.]))
    """
    t, n = check_scores(tar, non)
    return _cllr.pav_llrs(t, n, laplace=laplace, ramp=ramp)
