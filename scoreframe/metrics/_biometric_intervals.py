"""Bootstrap intervals of the per-target biometric values (FNMR at FMR, at fixed thresholds...).

The group-level verification metrics (``zero_fmr``, ``zero_fnmr``, ``min_hter``, ``auc_mw``)
are declared with intervals and go through :func:`~scoreframe.metrics.metric_intervals` like
every other metric. The per-target values live in list-of-struct columns; this module gives
their bounds from the same replicates: every replicate's
:class:`~scoreframe.stats.summary.VerificationStats` (located again in each replicate, so
each replicate chooses its own threshold for each target) goes through the same
:func:`~scoreframe.metrics._biometric.from_statistics` as the point value, and percentile or
BCa bounds are formed as :func:`~scoreframe.metrics.metric_intervals` forms them.

Exact convention only: the peers' conventions are computed from sorted scores in memory
and carry no replicates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels import bootstrap as kbs
from scoreframe.metrics._intervals import IntervalOptions
from scoreframe.stats.summary import ScoreStats, VerificationRequest

__all__ = ["INTERVAL_FIELDS", "interval_bounds", "replicate_rates", "target_intervals"]

F64 = NDArray[np.float64]

#: The rates of each per-target column that get ``_lo``/``_hi`` fields.
INTERVAL_FIELDS: dict[str, tuple[str, ...]] = {
    "fnmr_at_fmr": ("fnmr",),
    "fmr_at_fnmr": ("fmr",),
    "at_threshold": ("fmr", "fnmr", "hter"),
    "fixed": ("fmr", "fnmr", "hter"),
}


def interval_bounds(values: F64, estimate: F64, stats: ScoreStats, options: IntervalOptions
                    ) -> tuple[F64, F64]:
    """Percentile or BCa bounds of replicate ``values`` (axis 0: bootstrap then jackknife rows).

    The same rule as :func:`~scoreframe.metrics.metric_intervals`: jackknife rows that delete
    nothing of this group are left out of the acceleration.
    """
    b = options.bootstrap
    v = np.asarray(values, dtype=np.float64)
    if options.method == "bca":
        jk = v[b:].copy()
        untouched = np.array([st.n_tar == stats.n_tar and st.n_non == stats.n_non
                              for st in stats.replicates[b:]], dtype=bool)
        jk[untouched] = np.nan
        lo, hi = kbs.bca_interval(v[:b], np.asarray(estimate, dtype=np.float64), jk,
                                  options.ci)
    else:
        lo, hi = kbs.percentile_interval(v[:b], options.ci)
    return np.asarray(lo), np.asarray(hi)


Values = Callable[..., dict[str, Any]]


def replicate_rates(stats: ScoreStats, request: VerificationRequest,
                    read: Callable[[dict[str, Any], ScoreStats], F64], values_of: Values
                    ) -> F64:
    """``read(values, replicate_stats)`` on every replicate's verification values ``(R, K)``.

    ``values`` is ``values_of(verification, blocks, n_tar, n_non, request)`` of the
    replicate (:func:`~scoreframe.metrics._biometric.from_statistics`, the point values'
    function); NaN rows where a replicate has no genuine or no impostor weight.
    """
    rows: list[F64 | None] = []
    for st in stats.replicates:
        if st.n_tar == 0 or st.n_non == 0 or st.verification is None:
            rows.append(None)
            continue
        rows.append(np.asarray(read(values_of(st.verification, st.blocks, st.n_tar,
                                                     st.n_non, request), st),
                               dtype=np.float64))
    width = max((r.shape[0] for r in rows if r is not None), default=0)
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        if r is not None:
            out[i] = r
    return out


def _nan(v: object) -> float:
    return np.nan if v is None else float(v)  # type: ignore[arg-type]  # a numeric cell value (typed object)


def _bound(v: float) -> float | None:
    return None if np.isnan(v) else float(v)


def target_intervals(stats: ScoreStats, request: VerificationRequest,
                     values: dict[str, Any], options: IntervalOptions, *, values_of: Values
                     ) -> dict[str, Any]:
    """``values`` (one group's, exact convention) with ``_lo``/``_hi`` in its per-target rows.

    Each rate of :data:`INTERVAL_FIELDS` gets its bounds right after it; a target that a
    replicate cannot resolve (too few impostor weight for its FMR) counts as undefined in
    that replicate.
    """
    out = dict(values)
    for kind in ("fnmr_at_fmr", "fmr_at_fnmr", "at_threshold"):
        rows = values.get(kind) or []
        if not rows:
            continue
        fields = INTERVAL_FIELDS[kind]

        def read(v: dict[str, Any], _st: ScoreStats, kind: str = kind,
                 fields: tuple[str, ...] = fields) -> F64:
            return np.array([_nan(r[f]) for r in v[kind] for f in fields])

        reps = replicate_rates(stats, request, read, values_of)
        est = np.array([_nan(r[f]) for r in rows for f in fields])
        lo, hi = interval_bounds(reps, est, stats, options) if reps.shape[1] else (est, est)
        new_rows = []
        j = 0
        for r in rows:
            row: dict[str, Any] = {}
            for key, val in r.items():
                row[key] = val
                if key in fields:
                    row[f"{key}_lo"], row[f"{key}_hi"] = _bound(lo[j]), _bound(hi[j])
                    j += 1
            new_rows.append(row)
        out[kind] = new_rows
    return out


def fixed_intervals(stats: ScoreStats, indices: Sequence[int], options: IntervalOptions
                    ) -> tuple[F64, F64]:
    """Bounds of FMR, FNMR and HTER at fixed thresholds (verification count ``indices``).

    Returns ``(lo, hi)`` of shape ``(len(indices), 3)``.
    """
    idx = np.asarray(indices, dtype=np.int64)
    reps = np.full((len(stats.replicates), idx.shape[0], 3), np.nan)
    for i, st in enumerate(stats.replicates):
        ver = st.verification
        if st.n_tar == 0 or st.n_non == 0 or ver is None:
            continue
        fmr = ver.fm[idx] / st.n_non
        fnmr = ver.fnm[idx] / st.n_tar
        reps[i] = np.stack((fmr, fnmr, (fmr + fnmr) / 2.0), axis=1)
    ver = stats.verification
    assert ver is not None
    fmr = ver.fm[idx] / stats.n_non
    fnmr = ver.fnm[idx] / stats.n_tar
    est = np.stack((fmr, fnmr, (fmr + fnmr) / 2.0), axis=1)
    flat = reps.reshape(reps.shape[0], -1)
    lo, hi = interval_bounds(flat, est.reshape(-1), stats, options)
    return lo.reshape(idx.shape[0], 3), hi.reshape(idx.shape[0], 3)
