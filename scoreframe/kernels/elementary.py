"""Elementary functions of the field (docs/math.md section 1): sigmoid, logit, probit, softplus.

numpy/scipy, and numba through :mod:`scoreframe.kernels.compiled` for the exact sums of
:func:`softplus_sums` (a numpy path gives the same integers without it). The exact sums
(:func:`exact_sum`) are here too.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, ndtri

from scoreframe._cores import usable_cores
from scoreframe.kernels.compiled import compiled_available, jit

__all__ = [
    "effective_prior",
    "exact_sum",
    "exact_to_float",
    "logit",
    "neglogsigmoid",
    "operating_points",
    "probit",
    "sigmoid",
    "softplus",
    "softplus_sums",
    "usable_cores",
]


def sigmoid(x: ArrayLike) -> NDArray[np.float64]:
    """Logistic sigmoid ``1 / (1 + exp(-x))``; ``sigmoid(-inf) = 0``, ``sigmoid(inf) = 1``.

    Parameters
    ----------
    x
        Log odds (any real, +-inf allowed).

    Returns
    -------
    numpy.ndarray
        Probabilities in [0, 1], float64.

    See Also
    --------
    logit : Its inverse.

    Examples
    --------
    >>> sigmoid([0.0, float("inf")]).tolist()
    [0.5, 1.0]
    """
    return np.asarray(expit(np.asarray(x, dtype=np.float64)))


def logit(p: ArrayLike) -> NDArray[np.float64]:
    """Log odds ``log(p / (1 - p))``; ``logit(0) = -inf``, ``logit(1) = inf``.

    Parameters
    ----------
    p
        Probabilities in [0, 1].

    Returns
    -------
    numpy.ndarray
        The log odds, float64.

    See Also
    --------
    sigmoid : Its inverse.
    effective_prior : The prior whose log odds is a threshold.

    Examples
    --------
    >>> logit([0.5, 0.9]).round(6).tolist()
    [0.0, 2.197225]
    """
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out: NDArray[np.float64] = np.log(p) - np.log1p(-p)
    return out


def probit(p: ArrayLike) -> NDArray[np.float64]:
    """Inverse of the standard normal CDF; ``probit(0) = -inf``, ``probit(1) = inf``.

    The axes of DET plots are probit-warped error rates.

    Parameters
    ----------
    p
        Probabilities in [0, 1].

    Returns
    -------
    numpy.ndarray
        Standard normal quantiles, float64.

    See Also
    --------
    scoreframe.det_curve : DET curves with probit columns.

    Examples
    --------
    >>> probit([0.5, 0.975]).round(4).tolist()
    [0.0, 1.96]
    """
    return np.asarray(ndtri(np.asarray(p, dtype=np.float64)))


def softplus(x: ArrayLike) -> NDArray[np.float64]:
    """``log(1 + exp(x))`` evaluated stably; ``softplus(-inf) = 0``, ``softplus(inf) = inf``.

    Computed as ``max(x, 0) + log1p(exp(-|x|))`` (the formula of ``np.logaddexp(0, x)``,
    about 3x faster).

    >>> softplus([-np.inf, 0.0, np.inf]).tolist()
    [0.0, 0.6931471805599453, inf]
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape)
    cores = usable_cores()
    if (x.size < PARALLEL_MIN or cores < 2
            or threading.current_thread() is not threading.main_thread()):  # a worker already
        _softplus_into(x, out)
        return out
    # elementwise, so the result does not depend on the split: slices of whole 64-element
    # blocks, one per core, computed in threads (numpy releases the GIL)
    flat_x, flat_out = np.ascontiguousarray(x).ravel(), out.ravel()
    k = min(cores, 8)
    cut = [(x.size * i // k) // 64 * 64 for i in range(k)] + [x.size]
    with ThreadPoolExecutor(k) as pool:
        list(pool.map(lambda a, b: _softplus_into(flat_x[a:b], flat_out[a:b]), cut[:-1], cut[1:]))
    return out


#: Arrays from this size on are computed in threads by :func:`softplus` (called from the main
#: thread only: inside the workers of a pool the cores are busy already).
PARALLEL_MIN = 1 << 20


#: Elements of :func:`_softplus_into`'s blocks: five passes over a block that stays in the
#: core's cache instead of five passes over memory (1.5-1.9x faster at 10^7; elementwise, so
#: the same bits).
SOFTPLUS_BLOCK = 1 << 16


def _softplus_into(x: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``out[...] = max(x, 0) + log1p(exp(-|x|))``, in place, block by block.

    ``out`` is C-contiguous (written through a flat view); ``x`` has its shape.
    """
    x, out = x.reshape(-1), out.reshape(-1)
    pos = np.empty(min(x.shape[0], SOFTPLUS_BLOCK))
    for i in range(0, x.shape[0], SOFTPLUS_BLOCK):
        xb, ob = x[i:i + SOFTPLUS_BLOCK], out[i:i + SOFTPLUS_BLOCK]
        pb = pos[:xb.shape[0]]
        np.abs(xb, out=ob)
        np.negative(ob, out=ob)
        np.exp(ob, out=ob)
        np.log1p(ob, out=ob)
        np.maximum(xb, 0.0, out=pb)
        ob += pb


def softplus_sums(x: ArrayLike, shifts: ArrayLike) -> list[int]:
    """:func:`exact_sum` of ``softplus(x + shift)`` for each shift, ``x`` ascending.

    One exponential per trial instead of one per trial and shift. With ``u = x + shift``:
    where ``u <= 0``, ``softplus(u) = log1p(exp(x) * exp(shift))``; where ``u > 0``, it is
    ``u + log1p(exp(-x) * exp(-shift))``, with ``u`` taken exactly (the exact sums of ``x``
    above each split point, computed once, plus the shift times the count) and the log part
    summed on its own (it descends along ``x``). Each log term is a function of its own trial
    that is monotone along ``x``, so every :func:`exact_sum` gets its terms in order and the
    sums of a split of ``x`` add up to the sum of the whole. The split point of each shift is
    a binary search. Trials with ``|x| > 700`` (whose ``exp(x)`` or ``exp(-x)`` would leave
    the normal range) take their exponential of ``u`` itself, shifts beyond ``512`` take
    :func:`softplus` per shift. A few trials (``_SMALL_TERMS`` terms in all) get the same
    terms for every shift at once (the per-shift Python overhead would outweigh them). Each
    term is within a few units of the last place of ``softplus(u)``. With numba the log
    terms are summed by a compiled pass (:func:`_blocked_log_sums`), a block of trials at a
    time for every shift; without it (and for the few trials above) by numpy passes: the
    same terms, so the same integers.

    Parameters
    ----------
    x
        Ascending floats; ``-inf`` allowed (a zero term), ``+inf`` and NaN are not.
    shifts
        Finite shifts (for example prior log odds).

    Returns
    -------
    list of int
        One exact sum per shift, in units of ``2**-EXACT_SCALE`` (see :func:`exact_to_float`).

    See Also
    --------
    softplus : The terms, one at a time.

    Examples
    --------
    >>> x = np.array([-1.0, 0.0, 2.0])
    >>> [round(exact_to_float(v), 12) for v in softplus_sums(x, [0.0, 1.0])]
    [3.133336879121, 5.054996219652]
    >>> round(float(softplus(x).sum()), 12), round(float(softplus(x + 1.0).sum()), 12)
    (3.133336879121, 5.054996219652)
    """
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    t = np.asarray(shifts, dtype=np.float64).ravel()
    if t.size == 0:
        return []
    n = x.shape[0]
    if n == 0:
        return [0] * t.size
    if not np.all(np.abs(t) <= 512.0):
        return [exact_sum(softplus(x + shift), ascending=True) for shift in t.tolist()]
    # every x < -700 has u <= 0 and every x > 700 has u > 0 (|shift| <= 512)
    lo_x = int(np.searchsorted(x, -700.0, side="left"))
    hi_x = int(np.searchsorted(x, 700.0, side="right"))
    cut = np.searchsorted(x, -t, side="right")  # per shift: u <= 0 below
    # the sums of u above each cut, exactly: sums of x between the cuts (the positives as
    # they are, the negatives negated and read backwards: two passes), then suffix sums
    bounds = np.unique(np.append(cut, n)).tolist()
    z = int(np.searchsorted(x, 0.0, side="left"))
    pos = _pieces_sums(x, [max(b, z) for b in bounds])
    neg_part = np.negative(x[bounds[0]:z][::-1])
    neg = _pieces_sums(neg_part, [z - min(b, z) for b in bounds[::-1]])[::-1]
    x_above = {n: 0}
    for k in range(len(bounds) - 2, -1, -1):
        x_above[bounds[k]] = x_above[bounds[k + 1]] + pos[k] - neg[k]
    cuts = cut.tolist()
    if lo_x == 0 and hi_x == n and n * t.size <= _SMALL_TERMS:
        # few trials: the same terms for every shift at once, then one exact pass for all
        with np.errstate(over="ignore", under="ignore"):  # overflows only outside the pieces
            a_all = np.log1p(np.exp(x)[None, :] * np.array([math.exp(v) for v in t])[:, None])
            b_all = np.log1p(np.exp(-x)[::-1][None, :]
                             * np.array([math.exp(-v) for v in t])[:, None])
        pieces = [p for r, j in enumerate(cuts) for p in (a_all[r, :j], b_all[r, :n - j])]
        owner = np.repeat(np.arange(t.size), n)  # both pieces of a shift hold n terms
        logs = _grouped_sums(np.concatenate(pieces), owner, t.size)
    elif compiled_available():  # the same terms, summed by a compiled pass, block by block
        logs = _blocked_log_sums(x, t, cuts, lo_x, hi_x)
    else:
        logs = _ascending_log_sums(x, t, cuts, lo_x, hi_x)
    # u above the cut, exactly, and the log terms
    return [x_above[j] + (n - j) * _exact_float(shift) + logs[r]
            for r, (shift, j) in enumerate(zip(t.tolist(), cuts, strict=True))]


def _ascending_log_sums(x: NDArray[np.float64], t: NDArray[np.float64], cut: list[int],
                        lo_x: int, hi_x: int) -> list[int]:
    """The exact sums of :func:`softplus_sums`' log terms per shift, by numpy passes.

    Per shift, four ascending pieces side by side in one buffer, summed in one pass
    (:func:`_pieces_sums`): ``log1p(exp(u))`` below the normal ``exp(x)``;
    ``log1p(exp(x) * exp(shift))`` up to the cut; then, from the top down,
    ``log1p(exp(-x) * exp(-shift))`` and ``log1p(exp(-u))`` above the normal ``exp(-x)``.
    """
    n = x.shape[0]
    low, high = max(lo_x, max(cut)), min(hi_x, min(cut))
    e_pos = np.exp(x[lo_x:low])
    e_neg = np.exp(-x[high:hi_x])[::-1].copy()  # descending x: the log part ascends
    buf = np.empty(n)
    neg_x = np.negative(x[hi_x:][::-1])  # above the normals, from the top down
    sums = []
    for shift, j in zip(t.tolist(), cut, strict=True):
        if lo_x:
            out = buf[:lo_x]
            np.add(x[:lo_x], shift, out=out)
            with np.errstate(under="ignore"):
                np.exp(out, out=out)
            np.log1p(out, out=out)
        if j > lo_x:
            a_ = buf[lo_x:j]
            with np.errstate(under="ignore"):
                np.multiply(e_pos[:j - lo_x], math.exp(shift), out=a_)
            np.log1p(a_, out=a_)
        if hi_x > j:
            b_ = buf[j:hi_x]
            with np.errstate(under="ignore"):
                np.multiply(e_neg[:hi_x - j], math.exp(-shift), out=b_)
            np.log1p(b_, out=b_)
        if hi_x < n:
            out = buf[hi_x:]
            np.subtract(neg_x, shift, out=out)
            with np.errstate(under="ignore"):
                np.exp(out, out=out)
            np.log1p(out, out=out)
        sums.append(sum(_pieces_sums(buf, [0, lo_x, j, hi_x, n])))
    return sums


_NOT_FINITE = "softplus_sums takes finite or -inf scores: got +inf or NaN"
#: Trials per block of :func:`_blocked_log_sums`: a block's exponentials and terms stay in
#: the core's cache while every shift reads them.
_LOG_BLOCK = 1 << 16


def _blocked_log_sums(x: NDArray[np.float64], t: NDArray[np.float64], cut: list[int],
                      lo_x: int, hi_x: int) -> list[int]:
    """The exact sums of :func:`softplus_sums`' log terms per shift, by the compiled pass.

    The terms are those of the numpy path, trial for trial (``log1p(exp(x) * exp(shift))``
    below the shift's cut, ``log1p(exp(-x) * exp(-shift))`` above it, ``log1p(exp(+-u))``
    beyond ``|x| > 700``); the exact sum does not depend on their order, so the trials are
    taken a block at a time, every shift reading the block's exponentials while they are in
    the cache, and each shift's sum is added into its own table (:func:`_exact_table_body`).
    """
    body = jit(_exact_table_body)
    k, n = t.shape[0], x.shape[0]
    if n >= 1 << 36:  # a table row's column sums stay below 2**63 up to 2**36 terms
        raise ValueError(f"{n} trials: expected fewer than 2**36 in one range")
    tables = np.zeros((k, 2048, 2), dtype=np.int64)
    spans = np.zeros((k, 2), dtype=np.int64)
    spans[:, 0] = 2048
    c_pos = [math.exp(v) for v in t.tolist()]
    c_neg = [math.exp(-v) for v in t.tolist()]
    buf = np.empty(max(min(hi_x - lo_x, _LOG_BLOCK), lo_x, n - hi_x, 1))
    for r, shift in enumerate(t.tolist()):  # beyond the normal exponentials (rare)
        for part, sign in ((x[:lo_x], 1.0), (x[hi_x:], -1.0)):
            if part.shape[0]:
                out = buf[:part.shape[0]]
                np.add(part, shift, out=out)
                if sign < 0:
                    np.negative(out, out=out)
                with np.errstate(under="ignore"):
                    np.exp(out, out=out)
                np.log1p(out, out=out)
                if not body(out, tables[r], spans[r]):
                    raise ValueError(_NOT_FINITE)
    top, bottom = max(cut), min(cut)
    e_pos = np.empty(_LOG_BLOCK)
    e_neg = np.empty(_LOG_BLOCK)
    for b0 in range(lo_x, hi_x, _LOG_BLOCK):
        b1 = min(b0 + _LOG_BLOCK, hi_x)
        # exp(x) below the highest cut, exp(-x) above the lowest: a shift reads one of them
        p_end, n_start = max(min(b1, top), b0), min(max(b0, bottom), b1)
        np.exp(x[b0:p_end], out=e_pos[:p_end - b0])
        np.negative(x[n_start:b1], out=e_neg[:b1 - n_start])
        np.exp(e_neg[:b1 - n_start], out=e_neg[:b1 - n_start])
        out = buf[:b1 - b0]
        for r in range(k):
            jb = min(max(cut[r], b0), b1)
            with np.errstate(under="ignore"):
                np.multiply(e_pos[:jb - b0], c_pos[r], out=out[:jb - b0])
                np.multiply(e_neg[jb - n_start:b1 - n_start], c_neg[r], out=out[jb - b0:])
            np.log1p(out, out=out)
            if not body(out, tables[r], spans[r]):
                raise ValueError(_NOT_FINITE)
    return [_table_total(tables[r], int(spans[r, 0]), int(spans[r, 1])) for r in range(k)]


def _table_total(table: NDArray[np.int64], lowest: int, highest: int) -> int:
    """The exact sum held in rows ``lowest..highest`` of a table of :func:`_exact_table_body`.

    Row ``r`` holds multiples of ``2**(r - 1075)``: summed from the top row down (a shift
    and an add per row), in units of ``2**-EXACT_SCALE``. The rows are cleared.
    """
    if highest < lowest:
        return 0
    rows = table[lowest:highest + 1]
    high, low = rows[:, 0].tolist(), rows[:, 1].tolist()
    rows[:] = 0
    total, at = 0, highest
    for k in range(highest - lowest, -1, -1):
        v = (high[k] << 26) + low[k]
        if v:
            total = (total << (at - lowest - k)) + v
            at = lowest + k
    return total << (at - 1075 + EXACT_SCALE) if total else 0


_FRACTION = 0xFFFFFFFFFFFFF  # the 52 fraction bits of a float64
_SIGN_EXPONENT = ~_FRACTION  # its sign and exponent bits (as an int64 mask)
#: Terms per block of :func:`_exact_table_body`'s vector loop.
_EXACT_BLOCK = 256


def _exact_table_body(x: Any, table: Any, span: Any) -> bool:
    """Add the exact sum of ``x`` into ``table``, one row per binary exponent (compiled).

    A float is ``s * m * 2**(max(e, 1) - 1075)`` with its sign ``s``, biased exponent ``e``
    and 53-bit integer mantissa ``m`` (the implicit bit set when ``e > 0``). Row ``max(e, 1)``
    of ``table`` gets ``s`` times the sums of the high 27 and low 26 bits of the mantissas
    (columns 0 and 1: integers below ``2**63`` for fewer than ``2**36`` terms). The terms are
    summed in runs of one sign and exponent (those of a sorted range change exponent
    rarely): a block of ``_EXACT_BLOCK`` terms all of the run's sign and exponent is summed
    in vector registers; a block where they change is walked term by term. ``span`` gets
    the lowest and highest rows written (widened: ``span`` starts as ``[2048, 0]``). False
    when ``x`` holds an infinity or a NaN.
    """
    bits = x.view(np.int64)
    n = bits.shape[0]
    if n == 0:
        return True
    lowest, highest = 2048, 0
    head = bits[0] & _SIGN_EXPONENT  # the run's sign and exponent bits
    high, low, count = 0, 0, 0
    i = 0
    while i <= n:
        block = bits[i:i + _EXACT_BLOCK]  # a slice: indices the compiler knows are in range
        if i < n:
            other = 0
            for k in range(block.shape[0]):
                other |= (block[k] & _SIGN_EXPONENT) ^ head
            if other == 0:  # the whole block continues the run
                for k in range(block.shape[0]):
                    f = block[k] & _FRACTION
                    high += f >> 26
                    low += f & 0x3FFFFFF
                count += block.shape[0]
                i += block.shape[0]
                continue
        steps = block.shape[0] + (1 if i + block.shape[0] == n else 0)
        for k in range(steps):
            # term by term; one step past the last term (k == n - i) ends the last run
            h = block[k] & _SIGN_EXPONENT if k < block.shape[0] else 1
            if h != head:  # the run ends (it holds at least its first term)
                e = (head >> 52) & 0x7FF
                if e == 0x7FF:
                    return False
                if e > 0:
                    high += count << 26  # the implicit bits: 2**52 = 2**26 * 2**26 each
                if head < 0:
                    high, low = -high, -low
                row = max(e, 1)
                table[row, 0] += high
                table[row, 1] += low
                lowest, highest = min(lowest, row), max(highest, row)
                head, high, low, count = h, 0, 0, 0
            if k < block.shape[0]:
                f = block[k] & _FRACTION
                high += f >> 26
                low += f & 0x3FFFFFF
                count += 1
        i += steps
    span[0], span[1] = min(span[0], lowest), max(span[1], highest)
    return True


def _grouped_sums(x: NDArray[np.float64], owner: NDArray[np.int64] | None,
                  n_owners: int) -> list[int]:
    """Exact sums of finite floats grouped by ``owner`` (``None``: one group), in any order.

    The general path of :func:`exact_sum`, one pass: the mantissas are summed per (owner,
    exponent) cell in two halves of at most 27 bits, as floats (exact: fewer than ``2**25``
    terms), then shifted into place.
    """
    if x.shape[0] > 1 << 25:
        raise ValueError(f"{x.shape[0]} terms: expected at most 2**25")
    bits = x.view(np.int64)
    field = (bits >> 52) & 0x7FF  # biased exponent; 0 = subnormal
    mant = bits & 0xFFFFFFFFFFFFF
    mant |= (field > 0).astype(np.int64) << 52  # implicit bit: mant * 2**(field - 1075)
    np.maximum(field, 1, out=field)  # subnormals: mant * 2**(1 - 1075)
    np.negative(mant, out=mant, where=bits < 0)
    cell = field if owner is None else owner * 2048 + field
    size = n_owners * 2048
    high = np.bincount(cell, weights=(mant >> 26).astype(np.float64), minlength=size)
    low = np.bincount(cell, weights=(mant & 0x3FFFFFF).astype(np.float64), minlength=size)
    # the sums are integers below 2**53: as int64, a table per owner (_exact_table_body's)
    tables = np.stack((high, low), axis=-1).astype(np.int64).reshape(n_owners, 2048, 2)
    out = []
    for table in tables:
        rows = np.flatnonzero(table.any(axis=1))
        out.append(_table_total(table, int(rows[0]), int(rows[-1])) if rows.size else 0)
    return out


def _exact_float(v: float) -> int:
    """One float as an exact sum (units of ``2**-EXACT_SCALE``)."""
    m, e = math.frexp(v)  # v = m * 2**e, 53-bit m
    return int(m * 2**53) << (e - 53 + EXACT_SCALE) if v else 0


#: Exact sums are integers in units of ``2**-EXACT_SCALE`` (below the smallest subnormal).
EXACT_SCALE = 1126
_EXACT_ONE = 1 << EXACT_SCALE


def exact_sum(x: ArrayLike, *, ascending: bool = False) -> int:
    """The exact sum of finite floats, as an integer in units of ``2**-1126``.

    Order-independent and mergeable by integer addition, so sums split over ranges, files or
    workers agree to the last bit; :func:`exact_to_float` rounds it correctly. A float is
    ``m * 2**(e - 1075)`` with its biased exponent ``e`` and 53-bit integer mantissa ``m``;
    the mantissas are summed per exponent in integer arithmetic (split in two halves so no
    partial sum overflows). ``ascending=True`` promises non-negative input in ascending order
    (as the Cllr terms of sorted scores are): runs of one exponent are then found by binary
    search and summed with ``np.add.reduceat``, a few passes over the data. Where the
    exponents do not rise at the ends or around a change (terms that fall by a unit of the
    last place at a power of two), or a run's float sum overflows, the general path sums
    the chunk instead (:func:`_grouped_sums`, the same exact sum).

    >>> exact_to_float(exact_sum([0.1] * 10)), sum([0.1] * 10)
    (1.0, 0.9999999999999999)
    """
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    total = 0
    chunk = 1 << 25  # 2**25 halves of < 2**37 each: no int64 partial sum overflows
    for i in range(0, x.shape[0], chunk):
        part = x[i:i + chunk]
        runs = _ascending_runs(part, [0, part.shape[0]]) if ascending else None
        total += runs[0] if runs is not None else _grouped_sums(part, None, 1)[0]
    return total


#: Terms (trials x shifts) up to which :func:`softplus_sums` computes every term at once:
#: for a small range, the per-shift Python overhead (~0.1 ms) outweighs the exponentials.
_SMALL_TERMS = 1 << 15
#: Elements on each side of a change of binary exponent that :func:`_ascending_runs` checks.
_RUN_EDGE = 64
_EDGE_OFFSETS = np.arange(-_RUN_EDGE, _RUN_EDGE)


def _pieces_sums(x: NDArray[np.float64], bounds: list[int]) -> list[int]:
    """Exact sums of consecutive pieces ``x[bounds[k]:bounds[k + 1]]``, each ascending.

    One pass for all the pieces (:func:`_ascending_runs`); where its checks fail, each piece
    by the general path of :func:`exact_sum` (the same exact sums).
    """
    sums = _ascending_runs(x, bounds)
    return sums if sums is not None else [
        exact_sum(x[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _ascending_runs(x: NDArray[np.float64], bounds: list[int]) -> list[int] | None:
    """Exact sums of consecutive ascending non-negative pieces, or ``None`` (not in order).

    Within a run of one biased exponent ``e`` the bit patterns are ``(e << 52) + f`` with the
    52-bit fraction ``f``: the runs of every piece are found by binary search and summed
    together in one pass (:func:`_run_values`). Terms computed in floating point can fall by
    a unit of the last place where their exact values rise; at a power of two that puts a
    larger exponent before a smaller one, and the runs would be grouped wrongly. So the ends
    of each piece and the ``_RUN_EDGE`` elements on each side of every change of exponent
    are checked first (all pieces at once). ``None`` when a check fails, a piece is longer
    than ``2**25`` or a run's float sum overflows.
    """
    bits = x.view(np.int64)
    out = [0] * (len(bounds) - 1)
    pieces = [(k, a, b) for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
              if b > a]
    if not pieces:
        return out
    starts_all, vals_all, own_all, edge_all, lo_all, hi_all = [], [], [], [], [], []
    for k, a, b in pieces:
        first, last = int(bits[a]) >> 52, int(bits[b - 1]) >> 52
        if first > last or first < 0 or b - a > (1 << 25):
            return None
        vals = np.arange(first, last + 1, dtype=np.int64)
        starts = np.searchsorted(bits[a:b], vals << 52) + a
        keep = np.diff(np.append(starts, b)) > 0
        starts, vals = starts[keep], vals[keep]
        starts_all.append(starts)
        vals_all.append(vals)
        own_all.append(np.full(starts.shape[0], k))
        if starts.shape[0] > 1:  # changes of exponent inside the piece, and its ends
            edge_all.append(starts[1:])
            lo_all.append(np.full(starts.shape[0] - 1, a))
            hi_all.append(np.full(starts.shape[0] - 1, b - 1))
    if edge_all:
        at = (np.concatenate(edge_all)[:, None] + _EDGE_OFFSETS[None, :]).clip(
            np.concatenate(lo_all)[:, None], np.concatenate(hi_all)[:, None])
        if not (np.diff(bits[at] >> 52, axis=1) >= 0).all():
            return None
    end = pieces[-1][2]
    starts = np.concatenate(starts_all)
    counts = np.diff(np.append(starts, end))
    wrapped = np.add.reduceat(x[:end].view(np.uint64), starts)  # sum of bits mod 2**64
    with np.errstate(over="ignore"):
        approx = np.add.reduceat(x[:end], starts)
    if not np.isfinite(approx).all():
        return None
    for k, v in zip(np.concatenate(own_all).tolist(),
                    _run_values(np.concatenate(vals_all), counts, wrapped, approx),
                    strict=True):
        out[k] += v
    return out


def _run_values(vals: NDArray[np.int64], counts: NDArray[np.int64], wrapped: NDArray[np.uint64],
                approx: NDArray[np.float64]) -> list[int]:
    """The exact sum of each run of one biased exponent ``e`` (units of ``2**-EXACT_SCALE``).

    A run of ``c`` terms has the mantissa sum ``M = sum(bits) - c * ((e - 1) << 52)``
    (normal; ``sum(bits)`` for subnormals), known modulo ``2**64`` from the wrapped bit sum
    and to within ``c**2 <= 2**50`` from the float sum, which fixes the multiple of
    ``2**64``: both for all runs at once, then ``M * 2**(max(e, 1) - 1075)`` per run.
    """
    normal = vals > 0
    implicit = counts.astype(np.uint64) * ((np.maximum(vals, 1) - 1).astype(np.uint64)
                                           << np.uint64(52))
    low = np.where(normal, wrapped - implicit, wrapped)  # M mod 2**64 (uint64, wrapping)
    near = np.ldexp(approx, np.where(normal, 1075 - vals, 1074))  # M, to within 2**50
    high = np.rint((near - low.astype(np.float64)) * 2.0**-64).astype(np.int64)
    shift = np.maximum(vals, 1) - 1075 + EXACT_SCALE
    return [((h << 64) + lo_) << sh for h, lo_, sh in
            zip(high.tolist(), low.tolist(), shift.tolist(), strict=True)]


def exact_to_float(total: int) -> float:
    """The float nearest to an :func:`exact_sum` (correct rounding)."""
    return total / _EXACT_ONE  # int / int: correctly rounded in Python


def neglogsigmoid(x: ArrayLike) -> NDArray[np.float64]:
    """``-log(sigmoid(x)) = softplus(-x)``."""
    return softplus(-np.asarray(x, dtype=np.float64))


def effective_prior(p_target: ArrayLike, c_miss: ArrayLike = 1.0,
                    c_fa: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Effective target prior ``p c_miss / (p c_miss + (1 - p) c_fa)`` ([BdV11], eq 10).

    Parameters
    ----------
    p_target
        Target prior(s), in [0, 1].
    c_miss, c_fa
        Costs of a miss and of a false alarm, positive.

    Returns
    -------
    numpy.ndarray
        The effective prior(s), broadcast over the inputs.

    See Also
    --------
    scoreframe.logit : Its log odds, the Bayes threshold's negative.
    scoreframe.min_dcf, scoreframe.act_dcf : Costs at the effective prior.

    Examples
    --------
    >>> float(effective_prior(0.01, 10, 1))
    0.09174311926605505
    """
    p = np.asarray(p_target, dtype=np.float64)
    a = p * np.asarray(c_miss, dtype=np.float64)
    return a / (a + (1.0 - p) * np.asarray(c_fa, dtype=np.float64))


def operating_points(*, p_target: ArrayLike | None = None,
                     prior_log_odds: ArrayLike | None = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return ``(p, 1 - p, threshold)`` for effective priors or prior log odds.

    The Bayes threshold on llrs is ``-prior_log_odds``, taken directly when log odds are given
    (never through a sigmoid/logit round trip, docs/math.md section 1).
    """
    if (p_target is None) == (prior_log_odds is None):
        raise TypeError("give exactly one of `p_target` and `prior_log_odds`")
    if prior_log_odds is not None:
        plo = np.atleast_1d(np.asarray(prior_log_odds, dtype=np.float64))
        return sigmoid(plo), sigmoid(-plo), -plo
    p = np.atleast_1d(np.asarray(p_target, dtype=np.float64))
    return p, 1.0 - p, -logit(p)
