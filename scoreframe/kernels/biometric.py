"""Verification metrics of biometrics (ISO/IEC 19795-1): exact, and as two peer tools compute them.

numpy only. Scores are similarities (larger favours a match); a comparison is accepted when
``score >= threshold`` (ISO/IEC 19795-1, bob.measure and pyeer agree), or ``score > threshold``
with the strict rule. ``tar``/``non`` are the genuine and impostor scores, each sorted
ascending. Counts stay integers until a rate is formed.

Exact convention (the default of :mod:`scoreframe.metrics`):

* a rate target ``a`` allows ``k`` errors out of ``n`` where ``k`` is the largest count with
  ``k / n <= a`` (the float quotient, so FMR = 7/10 is allowed at ``a = 0.7``);
* FNMR at FMR = a is the minimum FNMR over all thresholds with FMR <= a. With the ``>=`` rule
  FNMR grows and FMR falls with the threshold, so the minimum is at the lowest threshold
  with at most ``k`` impostors accepted: just above ``v``, the ``(k+1)``-th highest impostor
  score. Its FNMR counts the genuine scores ``<= v``. The threshold reported is the lowest
  score of the data above ``v`` (``>=`` rule) or ``v`` itself (strict rule);
* FMR at FNMR = b is the mirror: at ``u``, the ``(k+1)``-th lowest genuine score;
* ZeroFMR is FNMR at the lowest threshold with FMR = 0 (``k = 0``), ZeroFNMR the FMR at the
  highest threshold with FNMR = 0;
* min HTER is the minimum over thresholds of ``(FMR + FNMR) / 2``, compared exactly as
  ``n_fnm * N + n_fm * T``; the minimum of this linear cost lies on a vertex of the ROC
  convex hull, i.e. at a PAV block boundary;
* AUC is the Mann-Whitney statistic ``P(genuine > impostor) + P(equal) / 2`` as the integer
  ``2U`` over ``2 T N``.

``bob_*`` functions reproduce bob.measure 6.1.1 and ``pyeer_*`` pyeer 0.5.6 (behaviour
observed by running them; see ``docs/biometrics.md`` for each difference from the exact
definition, with examples).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["auc_twice_u", "bob_eer", "bob_far_threshold", "bob_frr_threshold",
           "bob_min_hter", "count_within", "error_counts", "fmr_at_fnmr_located",
           "fnmr_at_fmr_located", "min_hter_blocks", "pyeer_auc", "pyeer_eer",
           "pyeer_fmr_op", "pyeer_fnmr_op", "pyeer_roc"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def count_within(rate: ArrayLike, total: int) -> I64:
    """Largest count ``k`` in ``[0, total]`` with ``k / total <= rate`` (float quotient).

    >>> count_within([0.1, 0.7, 0.999], 10).tolist()
    [1, 7, 9]
    """
    r = np.atleast_1d(np.asarray(rate, dtype=np.float64))
    if total <= 0:
        return np.zeros(r.shape, np.int64)
    k = np.clip(np.floor(r * total), 0, total).astype(np.int64)
    for _ in range(2):  # the float product is within one count of the float quotient rule
        up = (k < total) & ((k + 1) / total <= r)
        k = k + up
        down = (k > 0) & (k / total > r)
        k = k - down
    return k


def error_counts(tar: F64, non: F64, thresholds: ArrayLike, *, strict: bool = False
                 ) -> tuple[I64, I64]:
    """False non-matches and false matches at ``thresholds`` (accept ``>=``, or ``>``).

    >>> fnm, fm = error_counts(np.array([1.0, 2.0]), np.array([0.0, 2.0]), [2.0])
    >>> fnm.tolist(), fm.tolist()
    ([1], [1])
    """
    t = np.asarray(thresholds, dtype=np.float64)
    side: Literal["left", "right"] = "right" if strict else "left"
    fnm = np.searchsorted(tar, t, side=side).astype(np.int64)
    fm = non.shape[0] - np.searchsorted(non, t, side=side).astype(np.int64)
    return fnm, fm


def fnmr_at_fmr_located(tar: F64, non: F64, k: I64, *, total_non: int, offset_tar: int = 0,
                        offset_non: int = 0) -> tuple[NDArray[np.bool_], I64, I64, F64, F64]:
    """The exact FNMR at ``k`` allowed false matches, for the part of it held by this range.

    ``tar``/``non`` are one contiguous score range of a group (sorted), ``offset_*`` the
    counts of the group below the range, ``total_non`` the group's impostors. For each ``k``
    the ``(k+1)``-th highest impostor score ``v`` is located by its global rank; where it lies
    in this range, returns ``found=True`` with the global false non-match count (genuine
    scores ``<= v``), the global false-match count (impostors ``> v``), the strict-rule
    threshold ``v`` and the ``>=``-rule threshold (the lowest score of the range above ``v``,
    NaN when the range has none: it is then the next range's lowest score).

    Examples
    --------
    >>> f, fnm, fm, gt, ge = fnmr_at_fmr_located(np.array([0.5, 2.0, 3.0]),
    ...     np.array([0.0, 1.0, 2.5]), np.array([0, 1]), total_non=3)
    >>> fnm.tolist(), fm.tolist(), gt.tolist(), ge.tolist()
    ([2, 1], [0, 1], [2.5, 1.0], [3.0, 2.0])
    """
    k = np.asarray(k, dtype=np.int64)
    idx = total_non - 1 - k - offset_non  # local ascending index of v
    found = (idx >= 0) & (idx < non.shape[0])
    v = non[np.clip(idx, 0, max(non.shape[0] - 1, 0))] if non.shape[0] else \
        np.zeros(k.shape)
    v = np.where(found, v, np.nan)
    it = np.searchsorted(tar, v, side="right")
    inn = np.searchsorted(non, v, side="right")
    fnm = offset_tar + it.astype(np.int64)
    fm = total_non - (offset_non + inn.astype(np.int64))
    nxt_t = np.where(it < tar.shape[0], tar[np.minimum(it, tar.shape[0] - 1)], np.inf) \
        if tar.shape[0] else np.full(k.shape, np.inf)
    nxt_n = np.where(inn < non.shape[0], non[np.minimum(inn, non.shape[0] - 1)], np.inf) \
        if non.shape[0] else np.full(k.shape, np.inf)
    above = np.minimum(nxt_t, nxt_n)
    has = (it < tar.shape[0]) | (inn < non.shape[0])
    ge = np.where(found & has, above, np.nan)
    return found, fnm, fm, v, ge


def fmr_at_fnmr_located(tar: F64, non: F64, k: I64, *, total_non: int, offset_tar: int = 0,
                        offset_non: int = 0) -> tuple[NDArray[np.bool_], I64, I64, F64, F64]:
    """The exact FMR at ``k`` allowed false non-matches, for the part held by this range.

    Mirror of :func:`fnmr_at_fmr_located`: ``u`` is the ``(k+1)``-th lowest genuine score
    (global rank ``k``). Returns ``found``, the global false non-match count (genuine ``< u``),
    the global false-match count (impostors ``>= u``), the ``>=``-rule threshold ``u`` and
    the strict-rule threshold (the highest score of the range below ``u``; NaN when the range
    has none: it is then the previous range's highest score).

    >>> f, fnm, fm, ge, gt = fmr_at_fnmr_located(np.array([0.5, 2.0, 3.0]),
    ...     np.array([0.0, 1.0, 2.5]), np.array([0, 1]), total_non=3)
    >>> fnm.tolist(), fm.tolist(), ge.tolist(), gt.tolist()
    ([0, 1], [2, 1], [0.5, 2.0], [0.0, 1.0])
    """
    k = np.asarray(k, dtype=np.int64)
    idx = k - offset_tar
    found = (idx >= 0) & (idx < tar.shape[0])
    u = tar[np.clip(idx, 0, max(tar.shape[0] - 1, 0))] if tar.shape[0] else np.zeros(k.shape)
    u = np.where(found, u, np.nan)
    it = np.searchsorted(tar, u, side="left")
    inn = np.searchsorted(non, u, side="left")
    fnm = offset_tar + it.astype(np.int64)
    fm = total_non - (offset_non + inn.astype(np.int64))
    prv_t = np.where(it > 0, tar[np.maximum(it - 1, 0)], -np.inf) if tar.shape[0] else \
        np.full(k.shape, -np.inf)
    prv_n = np.where(inn > 0, non[np.maximum(inn - 1, 0)], -np.inf) if non.shape[0] else \
        np.full(k.shape, -np.inf)
    gt = np.where(found & ((it > 0) | (inn > 0)), np.maximum(prv_t, prv_n), np.nan)
    return found, fnm, fm, u, gt


def auc_twice_u(tar: F64, non: F64, *, offset_non: int = 0) -> int:
    """``2U`` of the genuine scores of this range: ``sum(2 #{non < t} + #{non == t})``.

    ``offset_non`` impostors lie below the range. Exact (Python integer).

    >>> auc_twice_u(np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0]))
    9
    """
    if tar.shape[0] == 0:
        return 0
    lo = np.searchsorted(non, tar, side="left").astype(np.int64)
    hi = np.searchsorted(non, tar, side="right").astype(np.int64)
    return int(np.sum(lo + hi)) + 2 * offset_non * int(tar.shape[0])


def min_hter_blocks(n_tar: I64, n_non: I64, lo: F64, hi: F64, *, strict: bool = False
                    ) -> tuple[int, int, float]:
    """Minimum HTER from PAV blocks: ``(n_fnm, n_fm, threshold)`` at the minimizing vertex.

    Vertex ``b`` rejects blocks ``< b``; the cost ``n_fnm * N + n_fm * T`` is compared in
    integers; ties go to the lowest threshold. The threshold is the lowest score of block
    ``b`` (``>=`` rule) or the highest of block ``b - 1`` (strict rule), one float step
    beyond the data at the ends.

    >>> min_hter_blocks(np.array([0, 2]), np.array([2, 1]), np.array([0.0, 1.0]),
    ...                 np.array([0.5, 3.0]))
    (0, 1, 1.0)
    """
    t, n = int(n_tar.sum()), int(n_non.sum())
    fnm = np.concatenate(([0], np.cumsum(n_tar))).astype(np.int64)
    fm = n - np.concatenate(([0], np.cumsum(n_non))).astype(np.int64)
    cost = [int(a) * n + int(b) * t for a, b in zip(fnm.tolist(), fm.tolist(), strict=True)] \
        if fnm.shape[0] < 4096 else (fnm.astype(object) * n + fm.astype(object) * t)
    j = int(np.argmin(np.asarray(cost, dtype=object))) if fnm.shape[0] < 4096 \
        else int(np.argmin(cost))
    nb = n_tar.shape[0]
    if strict:
        thr = float(hi[j - 1]) if j > 0 else float(np.nextafter(lo[0], -np.inf))
    else:
        thr = float(lo[j]) if j < nb else float(np.nextafter(hi[-1], np.inf))
    return int(fnm[j]), int(fm[j]), thr


# --- bob.measure 6.1.1 -------------------------------------------------------------------


def bob_far_threshold(non: F64, far: float) -> float:
    """bob.measure's ``far_threshold``: the lowest impostor score with FMR ``<= far``.

    Only impostor scores are candidates (genuine scores between two impostor scores are
    skipped, so its FNMR can exceed the minimum); ``nextafter`` above the highest impostor
    when none qualifies; ``far >= 1 - eps`` gives ``nextafter`` below the lowest.

    >>> bob_far_threshold(np.array([0.0, 0.5, 1.0, 1.0, 1.5, 2.5]), 0.2)
    2.5
    """
    n = non.shape[0]
    if far >= 1.0 - np.finfo(np.float64).eps:
        return float(np.nextafter(non[0], -np.inf))
    distinct = np.unique(non)
    ge = n - np.searchsorted(non, distinct, side="left")  # impostors >= each value
    ok = ge / n <= far
    if not ok.any():
        return float(np.nextafter(non[-1], np.inf))
    return float(distinct[np.argmax(ok)])


def bob_frr_threshold(tar: F64, frr: float) -> float:
    """bob.measure's ``frr_threshold``: the highest genuine score it accepts for FNMR ``<= frr``.

    A genuine value ``u`` qualifies when ``(#genuine <= u) - 1`` (the index of its *last*
    tied copy, where the FNMR at ``u`` is ``#genuine < u``) is at most ``frr * T``; so a tie
    at the lowest genuine score makes ZeroFNMR skip it. ``nextafter`` above the lowest genuine
    score when none qualifies; ``frr >= 1 - eps`` gives ``nextafter`` above the highest.

    >>> bob_frr_threshold(np.array([1.0, 1.0, 2.0]), 0.0)
    1.0000000000000002
    """
    t = tar.shape[0]
    if frr >= 1.0 - np.finfo(np.float64).eps:
        return float(np.nextafter(tar[-1], np.inf))
    distinct = np.unique(tar)
    last = np.searchsorted(tar, distinct, side="right") - 1
    ok = last / t <= frr
    if not ok[0]:
        return float(np.nextafter(tar[0], np.inf))
    stop = np.flatnonzero(~ok)
    return float(distinct[(stop[0] if stop.size else distinct.shape[0]) - 1])


def _bob_minimizing(tar: F64, non: F64, weighted: bool) -> float:
    """The threshold bob.measure's data-driven search returns (EER or weighted error 0.5).

    The search visits the lowest score, then the midpoints between consecutive distinct
    scores while both classes have scores left, with rates accumulated by repeated float
    steps of ``1/N`` and ``1/T``; the last minimum wins (``<=``). After the walk, the state
    reached is taken only if strictly better, and so is ``(FMR, FNMR) = (0, 1)`` just above
    the highest score.
    """
    n, t = non.shape[0], tar.shape[0]
    far_seq = np.add.accumulate(np.concatenate(([1.0], np.full(n, -(1.0 / n)))))
    frr_seq = np.add.accumulate(np.concatenate(([0.0], np.full(t, 1.0 / t))))
    values = np.unique(np.concatenate((tar, non)))
    c_non = np.searchsorted(non, values, side="right")  # processed after each distinct value
    c_tar = np.searchsorted(tar, values, side="right")
    done = np.flatnonzero((c_non >= n) | (c_tar >= t))
    stop = int(done[0]) + 1  # groups processed when the walk ends
    far = np.concatenate(([1.0], far_seq[c_non[:stop]]))
    frr = np.concatenate(([0.0], frr_seq[c_tar[:stop]]))
    crit = (0.5 * far + 0.5 * frr) if weighted else np.abs(far - frr)
    nxt = values[1:stop + 1] if stop < values.shape[0] else np.append(values[1:stop], np.nan)
    thr = np.concatenate(([values[0]], (values[:stop] + nxt) / 2.0))
    if stop == values.shape[0]:
        thr[-1] = values[-1]
    inner = crit[:stop]
    best = int(np.flatnonzero(inner == inner.min())[-1])
    best_c, best_t = float(inner[best]), float(thr[best])
    if crit[stop] < best_c:
        best_c, best_t = float(crit[stop]), float(thr[stop])
    if stop < values.shape[0]:
        last = 0.5 if weighted else 1.0
        if last < best_c:
            best_t = float(np.nextafter(non[-1] if c_non[stop - 1] < n else tar[-1], np.inf))
    return best_t


def bob_eer(tar: F64, non: F64) -> tuple[float, float]:
    """bob.measure's ``eer``: ``(FMR + FNMR) / 2`` at ``eer_threshold``; returns (eer, thr).

    The threshold minimizes ``|FMR - FNMR|`` over bob's search points (see
    :func:`_bob_minimizing`).
    """
    thr = _bob_minimizing(tar, non, weighted=False)
    fnm, fm = error_counts(tar, non, [thr])
    return (float(fm[0] / non.shape[0]) + float(fnm[0] / tar.shape[0])) / 2.0, thr


def bob_min_hter(tar: F64, non: F64) -> tuple[float, float]:
    """HTER at bob.measure's ``min_hter_threshold``; returns ``(hter, threshold)``."""
    thr = _bob_minimizing(tar, non, weighted=True)
    fnm, fm = error_counts(tar, non, [thr])
    return (float(fm[0] / non.shape[0]) + float(fnm[0] / tar.shape[0])) / 2.0, thr


# --- pyeer 0.5.6 -------------------------------------------------------------------------


def pyeer_roc(tar: F64, non: F64) -> tuple[F64, F64, F64]:
    """The ROC of pyeer: thresholds at the distinct scores only, FMR ``#non >= t / N``, FNMR.

    No threshold above the highest score: when it is an impostor's, FMR never reaches 0.
    """
    thr = np.unique(np.concatenate((tar, non)))
    fnm, fm = error_counts(tar, non, thr)
    return thr, fm / non.shape[0], fnm / tar.shape[0]


def pyeer_fmr_op(fmr: F64, fnmr: F64, op: float) -> int:
    """The FMR operating point of pyeer: the first threshold whose FMR is *nearest* to ``op``.

    The nearest FMR can be above ``op`` (FMR 0.17 reported "at FMR = 0.1").
    """
    return int(np.argmin(np.abs(fmr - op)))


def pyeer_fnmr_op(fmr: F64, fnmr: F64, op: float) -> int:
    """The FNMR operating point of pyeer: the *last* threshold with FNMR nearest ``op``."""
    d = np.abs(fnmr - op)
    return int(np.flatnonzero(d == d.min())[-1])


def pyeer_eer(fmr: F64, fnmr: F64) -> float:
    """The EER of pyeer: ``(FMR + FNMR) / 2`` at one of the two points around the crossing.

    The first point with ``FMR <= FNMR`` or the one before it, whichever has the smaller
    ``FMR + FNMR`` (the earlier on a tie).

    When the curves never cross pyeer warns and returns 1.
    """
    diff = fmr - fnmr
    hit = np.flatnonzero(diff <= 0)
    if hit.size == 0:
        return 1.0
    t2 = int(hit[0])
    t1 = t2 - 1 if diff[t2] != 0 and t2 != 0 else t2
    pick = t1 if fmr[t1] + fnmr[t1] <= fmr[t2] + fnmr[t2] else t2
    return float((fnmr[pick] + fmr[pick]) / 2)


def pyeer_auc(fmr: F64, fnmr: F64) -> float:
    """The AUC of pyeer: the trapezoid rule over its ROC points (Mann-Whitney up to rounding)."""
    tpr = 1 - fnmr
    x1, x2, y1, y2 = fmr[:-1], fmr[1:], tpr[:-1], tpr[1:]
    return float(((x1 - x2) * (y1 + (y2 - y1) / 2)).sum())
