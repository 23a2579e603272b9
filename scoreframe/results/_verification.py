"""Thresholds fixed on development trials and applied to evaluation trials; the EPC curve.

Results layer. Verification protocols (ISO/IEC 19795-1, the bob/BEAT EPC of Bengio & Mariéthoz)
choose a decision threshold on development trials — at an FMR or FNMR target, or at the
minimum HTER — and report the error rates that threshold gives on evaluation trials, per
condition. Two reductions: the development trials' statistics give each group's thresholds;
the evaluation trials' statistics count errors at every group's thresholds in one pass
(integer counts at fixed thresholds merge exactly, so this runs on every engine).

* :func:`dev_thresholds`: the thresholds of each development group, as a tidy frame;
* :func:`fixed_threshold_column`: ``evaluate``'s ``fixed`` column (one struct per criterion);
* the EPC curve lives in :mod:`scoreframe.results._epc` (it runs the evaluation; this module is
  used by it).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import polars as pl

from scoreframe.errors import ScoreframeError, ScoreframeWarning, message
from scoreframe.stats.engine import Statistics
from scoreframe.stats.summary import VerificationRequest

__all__ = ["FixedThresholdWarning", "dev_thresholds", "fixed_threshold_column",
           "check_threshold_table", "eval_where"]

FIXED_FIELDS = ("criterion", "threshold", "fmr", "fnmr", "hter", "n_fm", "n_fnm")


class FixedThresholdWarning(ScoreframeWarning):
    """Evaluation groups without a development threshold (their ``fixed`` values are null)."""


def eval_where(where: str | None, threshold_from: str | None) -> str | None:
    """The evaluation trials: ``where``, or every trial not selected by ``threshold_from``.

    >>> eval_where(None, "split = 'dev'")
    "NOT (split = 'dev')"
    """
    if where is not None or threshold_from is None:
        return where
    return f"NOT ({threshold_from})"


def _key_frame(stats: Statistics) -> dict[str, list[Any]]:
    return {c: [us.unit.key[c] for us in stats.units] for c in stats.row_cols}


def dev_thresholds(stats: Statistics, request: VerificationRequest) -> pl.DataFrame:
    """Each development group's thresholds: at min HTER, at each FMR and FNMR target.

    ``stats`` must carry verification statistics for ``request`` (exact convention).
    Returns the group columns, ``criterion`` (``"min_hter"``, ``"fmr=0.001"``,
    ``"fnmr=0.01"``) and ``threshold`` (null where the development counts cannot resolve
    the target or the group has no genuine or impostor trials).
    """
    from scoreframe.metrics._biometric import from_statistics

    rows: list[dict[str, Any]] = []
    for us in stats.units:
        st = us.stats
        key = dict(us.unit.key)
        ver = st.verification
        v = from_statistics(ver, st.blocks, st.n_tar, st.n_non, request) \
            if st.n_tar > 0 and st.n_non > 0 and ver is not None else {}
        rows.append({**key, "criterion": "min_hter",
                     "threshold": v.get("min_hter_threshold")})
        for i, a in enumerate(request.fmr):
            rows.append({**key, "criterion": f"fmr={a:g}",
                         "threshold": v["fnmr_at_fmr"][i]["threshold"] if v else None})
        for i, b in enumerate(request.fnmr):
            rows.append({**key, "criterion": f"fnmr={b:g}",
                         "threshold": v["fmr_at_fnmr"][i]["threshold"] if v else None})
    schema = {c: pl.String for c in stats.row_cols} | {"criterion": pl.String,
                                                        "threshold": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def check_threshold_table(table: object, row_cols: Sequence[str]) -> pl.DataFrame:
    """A ``thresholds=`` table: group columns (a subset of ``row_cols``) and ``threshold``.

    An optional ``criterion`` column names each threshold (default ``"given"``). Group
    columns are compared as text; a table without group columns applies to every group.
    """
    if not isinstance(table, pl.DataFrame):
        try:
            table = pl.DataFrame(table)  # type: ignore[arg-type]  # any table-like; polars rejects a bad one
        except Exception:  # noqa: BLE001 - the message below says what is expected
            raise ScoreframeError(message(
                "bad `thresholds` table", expected="a data frame with a `threshold` column",
                got=type(table).__name__)) from None
    if "threshold" not in table.columns or not table.schema["threshold"].is_numeric():
        raise ScoreframeError(message(
            "bad `thresholds` table", expected="a numeric `threshold` column (and optional "
            "group columns and `criterion`)", got="columns " + ", ".join(table.columns)))
    extra = [c for c in table.columns if c not in ("threshold", "criterion", *row_cols)]
    if extra:
        raise ScoreframeError(message(
            "bad `thresholds` table: columns that are not grouping columns",
            expected="a subset of " + (", ".join(row_cols) or "(no grouping columns)")
            + " plus `threshold` and `criterion`", got=", ".join(extra)))
    if table["threshold"].cast(pl.Float64).is_nan().any():
        raise ScoreframeError(message("bad `thresholds` table", expected="numbers",
                                      got="NaN thresholds"))
    keys = [c for c in row_cols if c in table.columns]
    out = table.select(*[pl.col(c).cast(pl.String) for c in keys],
                       (pl.col("criterion").cast(pl.String) if "criterion" in table.columns
                        else pl.lit("given")).alias("criterion"),
                       pl.col("threshold").cast(pl.Float64))
    if out.select([*keys, "criterion"]).is_duplicated().any():
        raise ScoreframeError(message("bad `thresholds` table",
                                      expected="one threshold per group and criterion",
                                      got="repeated rows"))
    return out


def table_thresholds(table: pl.DataFrame) -> tuple[float, ...]:
    """The distinct non-null thresholds of a table, sorted (the reduction counts at each)."""
    thr = table["threshold"].drop_nulls().unique().sort().to_list()
    return tuple(float(t) for t in thr)


def fixed_threshold_column(stats: Statistics, table: pl.DataFrame,
                           thresholds: Sequence[float], *, offset: int = 0,
                           intervals: Any = None) -> pl.Series:
    """``evaluate``'s ``fixed`` column: per group, one struct per criterion of ``table``.

    ``thresholds`` lists the thresholds at which the evaluation's reduction counted errors,
    from index ``offset`` of ``stats``' verification counts. Groups of the evaluation with
    no row in ``table`` get null and one :class:`FixedThresholdWarning` naming them. With
    ``intervals`` (statistics carrying replicates), FMR, FNMR and HTER get ``_lo``/``_hi``
    fields (the thresholds stay those of the development trials in every replicate).
    """
    from scoreframe.metrics._biometric_intervals import fixed_intervals

    with_iv = intervals is not None
    keys = [c for c in stats.row_cols if c in table.columns]
    index = {float(t): offset + i for i, t in enumerate(thresholds)}
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in table.iter_rows(named=True):
        by_key.setdefault(tuple(r[c] for c in keys), []).append(r)
    values: list[list[dict[str, Any]] | None] = []
    missing: list[str] = []
    for us in stats.units:
        st = us.stats
        name = ", ".join(f"{k}={v}" for k, v in us.unit.key.items()) or "(all)"
        rows = by_key.get(tuple(us.unit.key[c] for c in keys))
        if rows is None:
            missing.append(name)
            values.append(None)
            continue
        if not (st.n_tar and st.n_non) or st.verification is None:
            values.append(None)
            continue
        out = []
        given = [r for r in rows if r["threshold"] is not None]
        lo = hi = None
        if with_iv and st.replicates and given:
            lo, hi = fixed_intervals(st, [index[float(r["threshold"])] for r in given],
                                     intervals)
        j_iv = 0
        for r in rows:
            t = r["threshold"]
            if t is None:
                out.append({"criterion": r["criterion"], **dict.fromkeys(FIXED_FIELDS[1:])})
                continue
            j = index[float(t)]
            fm, fnm = int(st.verification.fm[j]), int(st.verification.fnm[j])
            fmr, fnmr = fm / st.n_non, fnm / st.n_tar
            item: dict[str, Any] = {"criterion": r["criterion"], "threshold": float(t),
                                    "fmr": fmr, "fnmr": fnmr, "hter": (fmr + fnmr) / 2.0,
                                    "n_fm": fm, "n_fnm": fnm}
            if lo is not None and hi is not None:
                for c, name in enumerate(("fmr", "fnmr", "hter")):
                    a, b = float(lo[j_iv, c]), float(hi[j_iv, c])
                    item[f"{name}_lo"] = None if a != a else a
                    item[f"{name}_hi"] = None if b != b else b
                j_iv += 1
            out.append(item)
        values.append(out)
    if missing:
        warnings.warn(f"no development threshold for group(s): {'; '.join(missing)}; their "
                      "`fixed` values are null", FixedThresholdWarning, stacklevel=4)
    fields: list[str] = []
    for f in FIXED_FIELDS:
        fields.append(f)
        if with_iv and f in ("fmr", "fnmr", "hter"):
            fields += [f"{f}_lo", f"{f}_hi"]
    dtype = pl.List(pl.Struct({f: pl.String if f == "criterion" else
                               pl.Int64 if f.startswith("n_") else pl.Float64
                               for f in fields}))
    return pl.Series("fixed", values, dtype=dtype)


def attach_fixed(results: pl.DataFrame, stats: Statistics, column: pl.Series) -> pl.DataFrame:
    """Join the ``fixed`` column onto ``evaluate``'s results (before ``dcf``)."""
    keys = list(stats.row_cols)
    extra = pl.DataFrame(_key_frame(stats), schema={c: pl.String for c in keys}) \
        .with_columns(column) if keys else pl.DataFrame([column])
    out = (results.join(extra, on=keys, how="left", nulls_equal=True, maintain_order="left")
           if keys else pl.concat([results, extra], how="horizontal"))
    return out.select([c for c in out.columns if c != "dcf"] + ["dcf"])
