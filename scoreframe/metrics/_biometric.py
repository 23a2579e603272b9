"""Biometric verification metrics (ISO/IEC 19795-1): declarations, scalar API, per-group values.

Vocabulary: genuine = target, impostor = non-target; FMR (false match rate) = false-alarm rate
``P_fa``, FNMR (false non-match rate) = miss rate ``P_miss``; TAR@FAR = ``1 - fnmr_at_fmr``.
A comparison is accepted when ``score >= threshold`` (``strict=True``: ``score > threshold``).

Three conventions (``convention=``):

``"exact"`` (default)
    The definitions (see :mod:`scoreframe.kernels.biometric`), computed on the statistics
    layer: per condition, pooled rows, in memory, out of core and on Dask, bit-identical.
``"bob"``
    bob.measure 6.1.1's threshold selection, tie handling and EER / min-HTER search.
``"pyeer"``
    pyeer 0.5.6's nearest-operating-point rule, ROC points and EER rule.

The peers' conventions reproduce in-memory tools and are computed in memory per group (the
sorted scores of each result row), whatever the engine. ``docs/biometrics.md`` lists every
difference from the definitions with a small example.

Group-level metrics are declared in the registry (family ``"biometric"``); the per-target
values are list-of-struct columns ``fnmr_at_fmr``, ``fmr_at_fnmr`` and ``at_threshold`` of
``evaluate`` (one struct per target, unnested by :func:`explode_targets`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoreframe.errors import (
    DegenerateError,
    DegenerateGroupWarning,
    ScoreframeError,
    UnresolvedTargetWarning,
    message,
)
from scoreframe.kernels import biometric as kb
from scoreframe.kernels.sorted_scores import Blocks, SortedScores
from scoreframe.metrics.registry import GroupStats, Metric, declare
from scoreframe.stats.summary import (
    VerificationRequest,
    VerificationStats,
    reduce_verification,
)

__all__ = ["CONVENTIONS", "RatesAt", "VerificationRequest", "attach_target_columns",
           "check_convention", "explode_targets",
           "check_rate_targets", "fmr_at_fnmr", "fmr_fnmr", "fnmr_at_fmr", "min_hter",
           "mw_auc", "verification_request", "verification_summary", "verification_values",
           "target_fields", "without_intervals", "zero_fmr", "zero_fnmr"]

F64 = NDArray[np.float64]

#: Conventions of the verification metrics.
CONVENTIONS = ("exact", "bob", "pyeer")

#: Keys of the per-target structs, in order.
TARGET_FIELDS = {
    "fnmr_at_fmr": ("fmr_target", "fnmr", "fmr", "threshold", "n_fnm", "n_fm"),
    "fmr_at_fnmr": ("fnmr_target", "fmr", "fnmr", "threshold", "n_fm", "n_fnm"),
    "at_threshold": ("threshold", "fmr", "fnmr", "hter", "n_fm", "n_fnm"),
}


def check_convention(convention: object) -> str:
    """A convention name; the error lists the known ones.

    >>> check_convention("bob")
    'bob'
    """
    if convention not in CONVENTIONS:
        raise ScoreframeError(message("unknown convention", expected=" | ".join(CONVENTIONS),
                                      got=repr(convention)))
    return str(convention)


def check_rate_targets(values: ArrayLike | float | None, *, name: str) -> tuple[float, ...]:
    """Error-rate targets, each strictly between 0 and 1 (order kept, repeats dropped).

    >>> check_rate_targets([1e-3, 1e-2], name="fmr")
    (0.001, 0.01)
    """
    if values is None:
        return ()
    arr = np.atleast_1d(np.asarray(values, dtype=object)).ravel()
    out: list[float] = []
    for v in arr.tolist():
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = math.nan
        if isinstance(v, bool) or not 0.0 < f < 1.0:
            hint = ("ZeroFMR and ZeroFNMR are their own metrics (zero_fmr, zero_fnmr); a "
                    "rate of 1 accepts or rejects everything.") if name in ("fmr", "fnmr") \
                else None
            raise ScoreframeError(message(
                f"bad `{name}` target", expected="rates strictly between 0 and 1",
                got=repr(v), hint=hint))
        if f not in out:
            out.append(f)
    return tuple(out)


def verification_request(*, fmr: ArrayLike | float | None = None,
                         fnmr: ArrayLike | float | None = None,
                         thresholds: ArrayLike | float | None = None,
                         strict: bool = False) -> VerificationRequest:
    """A checked :class:`VerificationRequest` (targets in (0, 1), finite thresholds).

    >>> verification_request(fmr=[1e-4], thresholds=0.5).thresholds
    (0.5,)
    """
    thr = () if thresholds is None else tuple(
        float(t) for t in np.atleast_1d(np.asarray(thresholds, dtype=np.float64)))
    if any(math.isnan(t) for t in thr):
        raise ScoreframeError(message("bad `thresholds`", expected="numbers", got="NaN"))
    return VerificationRequest(check_rate_targets(fmr, name="fmr"),
                               check_rate_targets(fnmr, name="fnmr"), thr, bool(strict))


# --- values of one group --------------------------------------------------------------------


def _rate(num: int, den: int) -> float:
    return num / den


def from_statistics(ver: VerificationStats, blocks: Blocks, n_tar: int, n_non: int,
                    request: VerificationRequest) -> dict[str, Any]:
    """The exact convention's values of one group from its final (merged) statistics."""
    strict = request.strict
    out: dict[str, Any] = {}
    a = ver.at_fmr
    ge = np.where(np.isnan(a.ge), np.nextafter(a.gt, np.inf), a.ge)
    thr_a = a.gt if strict else ge
    b = ver.at_fnmr
    gt = np.where(np.isnan(b.gt), np.nextafter(b.ge, -np.inf), b.gt)
    thr_b = gt if strict else b.ge
    def target_rows(targets: Sequence[float], at: Any, thr: np.ndarray, name: str,
                    order: tuple[str, str]) -> list[dict[str, Any]]:
        """One row per target: rates reached, threshold and counts (null if unresolved)."""
        rows = []
        for i, target in enumerate(targets):
            ok = int(at.k[i]) > 0
            rate = {"fnmr": _rate(int(at.fnm[i]), n_tar), "fmr": _rate(int(at.fm[i]), n_non)}
            count = {"fnmr": int(at.fnm[i]), "fmr": int(at.fm[i])}
            rows.append({name: target, **{r: rate[r] if ok else None for r in order},
                         "threshold": float(thr[i]) if ok else None,
                         **{f"n_{r[:-1]}": count[r] if ok else None for r in order}})
        return rows

    out["fnmr_at_fmr"] = target_rows(request.fmr, a, thr_a, "fmr_target", ("fnmr", "fmr"))
    out["fmr_at_fnmr"] = target_rows(request.fnmr, b, thr_b, "fnmr_target", ("fmr", "fnmr"))
    out["zero_fmr"] = _rate(int(a.fnm[-1]), n_tar)
    out["zero_fmr_threshold"] = float(thr_a[-1])
    out["zero_fnmr"] = _rate(int(b.fm[-1]), n_non)
    out["zero_fnmr_threshold"] = float(thr_b[-1])
    fnm, fm, thr = kb.min_hter_blocks(blocks.n_tar, blocks.n_non, blocks.lo, blocks.hi,
                                      strict=strict)
    out["min_hter"] = (_rate(fnm, n_tar) + _rate(fm, n_non)) / 2.0
    out["min_hter_threshold"] = thr
    out["auc_mw"] = int(ver.twice_u) / (2 * int(n_tar) * int(n_non))  # int / int: rounded once
    out["eer_peer"] = None
    out["at_threshold"] = _at_thresholds(request.thresholds, ver.fnm, ver.fm, n_tar, n_non)
    return out


def _at_thresholds(thresholds: Sequence[float], fnm: NDArray[np.int64],
                   fm: NDArray[np.int64], n_tar: int, n_non: int) -> list[dict[str, Any]]:
    rows = []
    for i, t in enumerate(thresholds):
        fmr_, fnmr_ = _rate(int(fm[i]), n_non), _rate(int(fnm[i]), n_tar)
        rows.append({"threshold": float(t), "fmr": fmr_, "fnmr": fnmr_,
                     "hter": (fmr_ + fnmr_) / 2.0, "n_fm": int(fm[i]), "n_fnm": int(fnm[i])})
    return rows


def _peer_values(s: SortedScores, request: VerificationRequest, convention: str
                 ) -> dict[str, Any]:
    """bob.measure's or pyeer's values of one group from its sorted scores."""
    tar, non = s.tar, s.non
    t, n = s.n_tar, s.n_non
    out: dict[str, Any] = {}
    if convention == "bob":
        if t < 2 or n < 2:
            raise DegenerateError(message(
                "convention `bob` needs at least two genuine and two impostor scores "
                "(bob.measure raises otherwise)", got=f"{t} genuine and {n} impostor score(s)"))

        def at(thr: float) -> tuple[int, int]:
            fnm, fm = kb.error_counts(tar, non, [thr])
            return int(fnm[0]), int(fm[0])

        rows = []
        for a in request.fmr:
            thr = kb.bob_far_threshold(non, a)
            fnm, fm = at(thr)
            rows.append({"fmr_target": a, "fnmr": fnm / t, "fmr": fm / n, "threshold": thr,
                         "n_fnm": fnm, "n_fm": fm})
        out["fnmr_at_fmr"] = rows
        rows = []
        for b in request.fnmr:
            thr = kb.bob_frr_threshold(tar, b)
            fnm, fm = at(thr)
            rows.append({"fnmr_target": b, "fmr": fm / n, "fnmr": fnm / t, "threshold": thr,
                         "n_fm": fm, "n_fnm": fnm})
        out["fmr_at_fnmr"] = rows
        thr = kb.bob_far_threshold(non, 0.0)
        out["zero_fmr"], out["zero_fmr_threshold"] = at(thr)[0] / t, thr
        thr = kb.bob_frr_threshold(tar, 0.0)
        out["zero_fnmr"], out["zero_fnmr_threshold"] = at(thr)[1] / n, thr
        out["min_hter"], out["min_hter_threshold"] = kb.bob_min_hter(tar, non)
        out["eer_peer"] = kb.bob_eer(tar, non)[0]
        out["auc_mw"] = kb.auc_twice_u(tar, non) / (2 * t * n)
    else:
        thr_, fmr_, fnmr_ = kb.pyeer_roc(tar, non)
        fnm_, fm_ = kb.error_counts(tar, non, thr_)
        rows = []
        for a in request.fmr:
            i = kb.pyeer_fmr_op(fmr_, fnmr_, a)
            rows.append({"fmr_target": a, "fnmr": float(fnmr_[i]), "fmr": float(fmr_[i]),
                         "threshold": float(thr_[i]), "n_fnm": int(fnm_[i]),
                         "n_fm": int(fm_[i])})
        out["fnmr_at_fmr"] = rows
        rows = []
        for b in request.fnmr:
            i = kb.pyeer_fnmr_op(fmr_, fnmr_, b)
            rows.append({"fnmr_target": b, "fmr": float(fmr_[i]), "fnmr": float(fnmr_[i]),
                         "threshold": float(thr_[i]), "n_fm": int(fm_[i]),
                         "n_fnm": int(fnm_[i])})
        out["fmr_at_fnmr"] = rows
        i = kb.pyeer_fmr_op(fmr_, fnmr_, 0.0)
        out["zero_fmr"], out["zero_fmr_threshold"] = float(fnmr_[i]), float(thr_[i])
        i = kb.pyeer_fnmr_op(fmr_, fnmr_, 0.0)
        out["zero_fnmr"], out["zero_fnmr_threshold"] = float(fmr_[i]), float(thr_[i])
        fnm, fm, thr = kb.min_hter_blocks(s.blocks.n_tar, s.blocks.n_non, s.blocks.lo,
                                          s.blocks.hi)
        out["min_hter"], out["min_hter_threshold"] = (fnm / t + fm / n) / 2.0, thr
        out["eer_peer"] = kb.pyeer_eer(fmr_, fnmr_)
        out["auc_mw"] = kb.pyeer_auc(fmr_, fnmr_)
    fnm_t, fm_t = kb.error_counts(tar, non, request.threshold_array)
    out["at_threshold"] = _at_thresholds(request.thresholds, fnm_t, fm_t, t, n)
    return out


def group_values(s: SortedScores, request: VerificationRequest, *, convention: str = "exact"
                 ) -> dict[str, Any]:
    """All verification values of one group from its sorted scores (any convention)."""
    if convention == "exact":
        ver = reduce_verification(s, request, total_tar=s.n_tar, total_non=s.n_non)
        return from_statistics(ver, s.blocks, s.n_tar, s.n_non, request)
    if request.strict:
        raise ScoreframeError(message(
            f"convention `{convention}` has no strict accept rule",
            expected="strict=False (accept score >= threshold, as the peer does)",
            got="strict=True"))
    return _peer_values(s, request, convention)


def unresolved(values: dict[str, Any], *, n_tar: int, n_non: int, where: str) -> list[str]:
    """Descriptions of the targets of one group that its trial counts cannot resolve."""
    out = []
    for r in values.get("fnmr_at_fmr", []):
        if r["fnmr"] is None:
            out.append(f"FMR {r['fmr_target']:g} in {where}: cannot be resolved with "
                       f"{n_non} impostor comparisons (needs at least "
                       f"{math.ceil(1 / r['fmr_target'])})")
    for r in values.get("fmr_at_fnmr", []):
        if r["fmr"] is None:
            out.append(f"FNMR {r['fnmr_target']:g} in {where}: cannot be resolved with "
                       f"{n_tar} genuine comparisons (needs at least "
                       f"{math.ceil(1 / r['fnmr_target'])})")
    return out


def warn_unresolved(notes: Sequence[str], *, stacklevel: int = 3) -> None:
    """One :class:`~scoreframe.errors.UnresolvedTargetWarning` listing the notes."""
    if notes:
        warnings.warn("; ".join(notes) + "; those values are null", UnresolvedTargetWarning,
                      stacklevel=stacklevel)


# --- the scalar API (arrays) ---------------------------------------------------------------


@dataclass(frozen=True)
class RatesAt:
    """Error rates at operating points chosen by targets, with the thresholds used.

    ``fnmr`` and ``fmr`` are the rates reached at ``threshold`` (NaN where a target cannot be
    resolved with the number of trials); ``target`` repeats the requested rates.

    See Also
    --------
    fnmr_at_fmr, fmr_at_fnmr : The functions that return it.

    Examples
    --------
    >>> r = fnmr_at_fmr([1.0, 2.0, 3.0, 4.0], [0.0, 0.5, 1.5, -1.0], fmr=0.25)
    >>> r.target.tolist(), r.fnmr.tolist(), r.fmr.tolist(), r.threshold.tolist()
    ([0.25], [0.0], [0.25], [1.0])
    """

    target: F64
    fnmr: F64
    fmr: F64
    threshold: F64


def _sorted(tar: ArrayLike, non: ArrayLike) -> SortedScores:
    from scoreframe.metrics.scalar import sorted_scores

    return sorted_scores(tar, non)


def _values(tar: ArrayLike, non: ArrayLike, request: VerificationRequest, convention: str
            ) -> tuple[dict[str, Any], SortedScores]:
    s = _sorted(tar, non)
    values = group_values(s, request, convention=check_convention(convention))
    warn_unresolved(unresolved(values, n_tar=s.n_tar, n_non=s.n_non, where="the scores"),
                    stacklevel=4)
    return values, s


def _rates(rows: list[dict[str, Any]], target_key: str) -> RatesAt:
    def col(k: str) -> F64:
        return np.array([np.nan if r[k] is None else r[k] for r in rows], dtype=np.float64)

    return RatesAt(col(target_key), col("fnmr"), col("fmr"), col("threshold"))


def fnmr_at_fmr(tar: ArrayLike, non: ArrayLike, fmr: ArrayLike | float, *,
                convention: str = "exact", strict: bool = False) -> RatesAt:
    """FNMR at FMR targets: the minimum FNMR over thresholds with FMR <= each target.

    Parameters
    ----------
    tar, non
        Genuine and impostor scores (similarities: larger favours a match).
    fmr
        FMR targets, each in (0, 1).
    convention
        ``"exact"`` (the definition), ``"bob"`` (bob.measure 6.1.1 ``far_threshold``: the
        lowest *impostor* score with FMR <= target) or ``"pyeer"`` (pyeer 0.5.6: the
        threshold whose FMR is *nearest* the target, possibly above it).
    strict
        Accept ``score > threshold`` (default ``>=``). The rates are the same; the
        thresholds are the data's scores on the other side of the cut.

    Returns
    -------
    RatesAt
        FNMR, the FMR reached and the threshold used, per target. A target below
        ``1 / n_impostors`` cannot be resolved: NaN, and an
        :class:`~scoreframe.errors.UnresolvedTargetWarning`.

    See Also
    --------
    fmr_at_fnmr, zero_fmr, scoreframe.evaluate

    Examples
    --------
    >>> r = fnmr_at_fmr([0.5, 1.0, 1.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.0, 1.5, 2.5], [0.2])
    >>> r.fnmr.tolist(), r.fmr.round(4).tolist(), r.threshold.tolist()
    ([0.6], [0.1667], [2.0])
    >>> fnmr_at_fmr([0.5, 1.0, 1.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.0, 1.5, 2.5], [0.2],
    ...             convention="bob").fnmr.tolist()
    [0.8]
    """
    req = verification_request(fmr=fmr, strict=strict)
    values, _ = _values(tar, non, req, convention)
    return _rates(values["fnmr_at_fmr"], "fmr_target")


def fmr_at_fnmr(tar: ArrayLike, non: ArrayLike, fnmr: ArrayLike | float, *,
                convention: str = "exact", strict: bool = False) -> RatesAt:
    """FMR at FNMR targets: the minimum FMR over thresholds with FNMR <= each target.

    See :func:`fnmr_at_fmr` for the parameters; bob's rule is ``frr_threshold``, pyeer's the
    last threshold whose FNMR is nearest the target.

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.
    fnmr
        FNMR target(s), in (0, 1).
    convention
        ``"exact"`` (the definition), ``"bob"`` or ``"pyeer"`` (see
        :func:`fnmr_at_fmr`).
    strict
        Accept ``score > threshold`` (default ``>=``).

    See Also
    --------
    fnmr_at_fmr, zero_fnmr

    Examples
    --------
    >>> r = fmr_at_fnmr([1.0, 1.0, 2.0], [0.0, 1.0, 1.0, 3.0], [0.5])
    >>> r.fmr.tolist(), r.fnmr.tolist(), r.threshold.tolist()
    ([0.75], [0.0], [1.0])
    """
    req = verification_request(fnmr=fnmr, strict=strict)
    values, _ = _values(tar, non, req, convention)
    return _rates(values["fmr_at_fnmr"], "fnmr_target")


def zero_fmr(tar: ArrayLike, non: ArrayLike, *, convention: str = "exact") -> float:
    """ZeroFMR: the FNMR at the lowest threshold with no false match.

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.
    convention
        ``"exact"`` (the definition), ``"bob"`` or ``"pyeer"`` (see
        :func:`fnmr_at_fmr`).

    Returns
    -------
    float
        The FNMR, a fraction.

    See Also
    --------
    zero_fnmr, fnmr_at_fmr

    Examples
    --------
    >>> zero_fmr([0.5, 1.0, 1.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.0, 1.5, 2.5])
    0.8
    """
    return float(_values(tar, non, VerificationRequest(), convention)[0]["zero_fmr"])


def zero_fnmr(tar: ArrayLike, non: ArrayLike, *, convention: str = "exact") -> float:
    """ZeroFNMR: the FMR at the highest threshold with no false non-match.

    bob.measure 6.1.1 (``convention="bob"``) skips a tied lowest genuine score.

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.
    convention
        ``"exact"`` (the definition), ``"bob"`` or ``"pyeer"`` (see
        :func:`fnmr_at_fmr`).

    Returns
    -------
    float
        The FMR, a fraction.

    See Also
    --------
    zero_fmr, fmr_at_fnmr

    Examples
    --------
    >>> zero_fnmr([1.0, 1.0, 2.0], [0.0, 1.0, 1.0, 3.0])
    0.75
    >>> zero_fnmr([1.0, 1.0, 2.0], [0.0, 1.0, 1.0, 3.0], convention="bob")
    0.25
    """
    return float(_values(tar, non, VerificationRequest(), convention)[0]["zero_fnmr"])


def min_hter(tar: ArrayLike, non: ArrayLike, *, convention: str = "exact") -> float:
    """Minimum half total error rate ``min_t (FMR(t) + FNMR(t)) / 2``.

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.
    convention
        ``"exact"`` (the definition), ``"bob"`` or ``"pyeer"`` (see
        :func:`fnmr_at_fmr`).

    Returns
    -------
    float
        The minimum HTER, a fraction.

    See Also
    --------
    scoreframe.min_dcf : the same minimum at ``p_target=0.5`` (unnormalized).

    Examples
    --------
    >>> round(min_hter([0.5, 1.0, 1.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.0, 1.5, 2.5]), 4)
    0.3833
    """
    return float(_values(tar, non, VerificationRequest(), convention)[0]["min_hter"])


def mw_auc(tar: ArrayLike, non: ArrayLike) -> float:
    """Exact AUC: ``P(genuine > impostor) + P(genuine = impostor) / 2`` (Mann-Whitney).

    Counted in integers (``2U``) and divided once.

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.

    Returns
    -------
    float
        The AUC, in [0, 1].

    See Also
    --------
    scoreframe.auc

    Examples
    --------
    >>> mw_auc([1.0, 2.0, 3.0], [0.0, 2.0])
    0.75
    """
    s = _sorted(tar, non)
    return kb.auc_twice_u(s.tar, s.non) / (2 * s.n_tar * s.n_non)


def fmr_fnmr(tar: ArrayLike, non: ArrayLike, thresholds: ArrayLike | float, *,
             strict: bool = False) -> tuple[F64, F64]:
    """FMR and FNMR at fixed thresholds (accept ``score >= t``; ``strict``: ``>``).

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.
    thresholds
        Decision threshold(s).
    strict
        Accept ``score > threshold`` (default ``>=``).

    Returns
    -------
    tuple of numpy.ndarray
        FMR and FNMR, one value per threshold.

    See Also
    --------
    fnmr_at_fmr

    Examples
    --------
    >>> fmr, fnmr = fmr_fnmr([1.0, 2.0], [0.0, 2.0], [2.0, 2.5])
    >>> fmr.tolist(), fnmr.tolist()
    ([0.5, 0.0], [0.5, 1.0])
    """
    s = _sorted(tar, non)
    req = verification_request(thresholds=thresholds, strict=strict)
    fnm, fm = kb.error_counts(s.tar, s.non, req.threshold_array, strict=strict)
    return fm / s.n_non, fnm / s.n_tar


def verification_summary(tar: ArrayLike, non: ArrayLike, *,
                         fmr: ArrayLike | float | None = None,
                         fnmr: ArrayLike | float | None = None,
                         thresholds: ArrayLike | float | None = None, strict: bool = False,
                         convention: str = "exact") -> dict[str, Any]:
    """Every verification value of one set of scores, as ``evaluate`` reports it per group.

    Keys: ``fnmr_at_fmr``, ``fmr_at_fnmr``, ``at_threshold`` (lists of dicts), ``zero_fmr``,
    ``zero_fmr_threshold``, ``zero_fnmr``, ``zero_fnmr_threshold``, ``min_hter``,
    ``min_hter_threshold``, ``auc_mw`` and ``eer_peer`` (the peer's EER; ``None`` for
    ``"exact"``, whose EER conventions are those of :func:`scoreframe.eer`).

    Parameters
    ----------
    tar, non
        Genuine (target) and impostor (non-target) scores.
    fmr, fnmr
        FMR and FNMR targets (optional).
    thresholds
        Fixed thresholds (optional).
    strict
        Accept ``score > threshold`` (default ``>=``).
    convention
        ``"exact"`` (the definition), ``"bob"`` or ``"pyeer"`` (see
        :func:`fnmr_at_fmr`).

    Returns
    -------
    dict
        The values named above.

    See Also
    --------
    fnmr_at_fmr, scoreframe.evaluate

    Examples
    --------
    >>> v = verification_summary([0.5, 1.0, 1.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.0, 1.5, 2.5],
    ...                          convention="pyeer")
    >>> round(v["eer_peer"], 4), round(v["auc_mw"], 4)
    (0.4333, 0.6167)
    """
    req = verification_request(fmr=fmr, fnmr=fnmr, thresholds=thresholds, strict=strict)
    return _values(tar, non, req, convention)[0]


# --- per-group values of an evaluation --------------------------------------------------------


def verification_values(units: Sequence[Any], request: VerificationRequest, *,
                        convention: str = "exact",
                        sorted_units: Sequence[SortedScores | None] | None = None
                        ) -> list[dict[str, Any]]:
    """Per unit of a :class:`~scoreframe.stats.engine.Statistics`, its verification values.

    The exact convention reads the merged statistics (``unit.stats.verification``);
    the peers' conventions need the units' sorted scores (``sorted_units``). Units without
    genuine or impostor scores get an empty dict (their metrics are null, and ``evaluate``
    warns once naming them). One :class:`~scoreframe.errors.UnresolvedTargetWarning` lists the
    targets the groups' counts cannot resolve.
    """
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    skipped: list[str] = []
    for i, us in enumerate(units):
        st = us.stats
        if not (st.n_tar and st.n_non):
            out.append({})
            continue
        if convention == "exact":
            if st.verification is None:
                raise RuntimeError("the reduction did not compute verification statistics")
            v = from_statistics(st.verification, st.blocks, st.n_tar, st.n_non, request)
        else:
            s = sorted_units[i] if sorted_units is not None else None
            if s is None:
                raise RuntimeError("the peers' conventions need the units' sorted scores")
            try:
                v = group_values(s, request, convention=convention)
            except DegenerateError as exc:  # bob.measure needs two scores per class
                name = ", ".join(f"{k}={val}" for k, val in us.unit.key.items()) or "(all)"
                skipped.append(f"{name} ({str(exc).splitlines()[0]})")
                out.append({})
                continue
        name = ", ".join(f"{k}={val}" for k, val in us.unit.key.items()) or "(all)"
        notes += unresolved(v, n_tar=st.n_tar, n_non=st.n_non, where=f"group {name}")
        out.append(v)
    warn_unresolved(notes, stacklevel=4)
    if skipped:
        warnings.warn("verification metrics undefined for group(s): " + "; ".join(skipped)
                      + "; they are null", DegenerateGroupWarning, stacklevel=4)
    return out


def _from_extras(name: str) -> Callable[[GroupStats], object]:
    def compute(g: GroupStats) -> object:
        v = g.extras.get("verification")
        if v is None and "verification" not in g.extras and g.stats.verification is not None:
            # a replicate's (or a bare group's) statistics: the exact convention's values,
            # computed once per group and kept with it
            v = g.extras["verification"] = from_statistics(
                g.stats.verification, g.stats.blocks, g.n_tar, g.n_non, VerificationRequest())
        return (v or {}).get(name)
    return compute


for _name, _display, _unit, _scale, _table, _iv, _desc in (
        ("zero_fmr", "ZeroFMR", "%", 100.0, True, True,
         "FNMR at the lowest threshold with FMR = 0"),
        ("zero_fmr_threshold", "ZeroFMR threshold", "", 1.0, False, False,
         "the threshold of ZeroFMR"),
        ("zero_fnmr", "ZeroFNMR", "%", 100.0, True, True,
         "FMR at the highest threshold with FNMR = 0"),
        ("zero_fnmr_threshold", "ZeroFNMR threshold", "", 1.0, False, False,
         "the threshold of ZeroFNMR"),
        ("min_hter", "min HTER", "%", 100.0, True, True,
         "minimum over thresholds of (FMR + FNMR) / 2"),
        ("min_hter_threshold", "min HTER threshold", "", 1.0, False, False,
         "the threshold of the minimum HTER"),
        ("auc_mw", "AUC", "", 1.0, True, True,
         "P(genuine > impostor) + P(tie) / 2, exact (Mann-Whitney)"),
        ("eer_peer", "EER (peer)", "%", 100.0, True, False,
         "the EER by the peer's rule (convention bob or pyeer)")):
    declare(Metric(_name, _display, _unit, _from_extras(_name), scale=_scale,
                   family="biometric", table=_table, description=_desc, intervals=_iv))


def without_intervals(metrics: Sequence[Metric]) -> list[Metric]:
    """``metrics`` with the biometric family's intervals switched off (peers' conventions)."""
    from dataclasses import replace

    return [replace(m, intervals=False) if m.family == "biometric" else m for m in metrics]


def peer_sorted_units(stats: Any, data: Any, *, where: str | None) -> list[SortedScores | None]:
    """Each unit's sorted scores, for the peers' conventions (one in-memory pass)."""
    from scoreframe.frames.lazy import scan_raw
    from scoreframe.stats.reduce import merge_sorted, sorted_groups

    row_cols = list(stats.row_cols)
    keys, base, _ = sorted_groups(scan_raw(data, where=where), row_cols)
    index = {tuple(k[c] for c in row_cols): i for i, k in enumerate(keys)}
    system = [c for c in row_cols if c == "system"]
    out: list[SortedScores | None] = []
    for us in stats.units:
        u = us.unit
        match = system if u.pooled else row_cols
        members = [i for kk, i in index.items()
                   if all(kk[row_cols.index(c)] == u.key[c] for c in match)]
        out.append(merge_sorted([base[i] for i in members]) if members else None)
    return out


def target_fields(kind: str, *, intervals: bool = False) -> tuple[str, ...]:
    """The fields of a per-target struct column (with ``_lo``/``_hi`` after each rate).

    >>> target_fields("fnmr_at_fmr", intervals=True)[:4]
    ('fmr_target', 'fnmr', 'fnmr_lo', 'fnmr_hi')
    """
    from scoreframe.metrics._biometric_intervals import INTERVAL_FIELDS

    out: list[str] = []
    for f in TARGET_FIELDS[kind]:
        out.append(f)
        if intervals and f in INTERVAL_FIELDS[kind]:
            out += [f"{f}_lo", f"{f}_hi"]
    return tuple(out)


def _struct_dtype(kind: str, *, intervals: bool = False) -> Any:
    import polars as pl

    ints = {"n_fnm", "n_fm"}
    return pl.List(pl.Struct({f: pl.Int64 if f in ints else pl.Float64
                              for f in target_fields(kind, intervals=intervals)}))


def attach_target_columns(results: Any, stats: Any, values: Sequence[dict[str, Any]], *,
                          convention: str = "exact", intervals: Any = None,
                          request: VerificationRequest | None = None) -> Any:
    """Add the per-target list-of-struct columns to ``evaluate``'s results (before ``dcf``).

    Rows are matched on the group columns; ``eer_peer`` is dropped for the exact convention
    (its EERs are the ``eer`` column's conventions). With ``intervals`` (an
    :class:`~scoreframe.metrics.IntervalOptions`, exact convention, statistics carrying
    replicates) and the ``request``, every rate gets ``_lo``/``_hi`` fields.
    """
    import polars as pl

    with_iv = intervals is not None and request is not None and convention == "exact"
    if with_iv:
        from scoreframe.metrics._biometric_intervals import target_intervals

        values = [target_intervals(us.stats, request, v, intervals,  # type: ignore[arg-type]  # request is set when intervals are (with_iv)
                                   values_of=from_statistics)
                  if v and us.stats.replicates else v
                  for us, v in zip(stats.units, values, strict=True)]
    keys = list(stats.row_cols)
    data: dict[str, list[Any]] = {k: [us.unit.key[k] for us in stats.units] for k in keys}
    for kind in TARGET_FIELDS:
        data[kind] = [v.get(kind) if v else None for v in values]
    schema: dict[str, Any] = {k: pl.String for k in keys}
    schema.update({kind: _struct_dtype(kind, intervals=with_iv) for kind in TARGET_FIELDS})
    extra = pl.DataFrame(data, schema=schema)
    out = (results.join(extra, on=keys, how="left", nulls_equal=True, maintain_order="left")
           if keys else pl.concat([results, extra], how="horizontal"))
    cols = [c for c in out.columns if c != "dcf"] + ["dcf"]
    if convention == "exact" and "eer_peer" in cols:
        cols.remove("eer_peer")
    return out.select(cols)


def explode_targets(results: Any, kind: str = "fnmr_at_fmr") -> Any:
    """One row per group x target of a per-target column of ``evaluate``, unnested.

    ``kind`` is ``"fnmr_at_fmr"``, ``"fmr_at_fnmr"``, ``"at_threshold"`` or ``"fixed"``
    (thresholds from ``threshold_from``); the group columns and counts come first, then the
    struct's fields (with their ``_lo``/``_hi`` bounds when ``evaluate`` had ``bootstrap``).
    This is the flat form for pandas: ``explode_targets(res).to_pandas()`` (``res.to_pandas()``
    itself keeps each list-of-struct cell as an array of dicts).

    Parameters
    ----------
    results
        An :func:`scoreframe.evaluate` frame with verification columns.
    kind
        The per-target column to unnest.

    Returns
    -------
    polars.DataFrame
        One row per group and target.

    See Also
    --------
    scoreframe.explode_dcf : The same for operating points.
    verification_summary : The values it spreads.

    Examples
    --------
    >>> import polars as pl
    >>> from scoreframe import Biometric, evaluate
    >>> df = pl.DataFrame({"score": [0.5, 1.0, 1.0, 2.0, 3.0, 0.0, 0.5, 1.0, 1.0, 1.5, 2.5],
    ...                    "label": [True] * 5 + [False] * 6})
    >>> res = evaluate(df, metrics=[Biometric(fmr=[0.2, 0.5])])
    >>> explode_targets(res).select("fmr_target", "fnmr", "threshold").rows()
    [(0.2, 0.6, 2.0), (0.5, 0.6, 1.5)]
    """
    if kind not in (*TARGET_FIELDS, "fixed"):
        raise ScoreframeError(message("unknown target column",
                                      expected=" | ".join((*TARGET_FIELDS, "fixed")),
                                      got=repr(kind)))
    if kind not in results.columns:
        raise ScoreframeError(message(
            f"no `{kind}` column in these results",
            expected="evaluate(..., fmr=...) for fnmr_at_fmr, fnmr= for fmr_at_fnmr, "
                     "at_threshold= for at_threshold, threshold_from= for fixed",
            got="columns " + ", ".join(results.columns)))
    front = results.columns[: results.columns.index("n_non") + 1]
    return results.select(*front, kind).explode(kind).unnest(kind)
