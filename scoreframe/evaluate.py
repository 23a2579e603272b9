"""Per-condition binary evaluation of trial tables: the lazy -> numpy boundary.

Reduction layer: polars selects only ``score``, ``label`` and the grouping columns (never the
``model``/``segment`` strings), sorts them once by (group, label, score), and hands each group's
contiguous sorted target and non-target slices to the kernels; results come back as a tidy
polars DataFrame, group columns first, then counts, then metrics. A pooled row (``"all"`` in
every group column) is computed from the pooled scores, never by averaging groups.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from scoreframe.errors import DegenerateError, ScoreframeError, message
from scoreframe.io.parquet import apply_where, scan_trials
from scoreframe.kernels import SortedScores
from scoreframe.kernels.elementary import effective_prior, operating_points
from scoreframe.kernels.summary import binary_summary, equalized_summary
from scoreframe.metrics import EER_METHODS

__all__ = ["DegenerateGroupWarning", "OperatingPoints", "evaluate", "explode_dcf",
           "grouped_scores"]

POOLED = "all"
DR30 = 30


class DegenerateGroupWarning(UserWarning):
    """Some groups have no targets or no non-targets; their metrics are null."""


@dataclass(frozen=True)
class OperatingPoints:
    """Application operating points ``(p_target, c_miss, c_fa)`` and their effective priors."""

    p_target: tuple[float, ...]
    c_miss: float = 1.0
    c_fa: float = 1.0

    def __post_init__(self) -> None:
        p = np.asarray(self.p_target, dtype=float)
        if p.size == 0 or np.any((p <= 0) | (p >= 1)) or np.isnan(p).any():
            raise ScoreframeError(message("`p_target` values must lie in (0, 1)",
                                          got=str(list(self.p_target))))
        if not (self.c_miss > 0 and self.c_fa > 0):
            raise ScoreframeError(message("costs must be positive",
                                          got=f"c_miss={self.c_miss}, c_fa={self.c_fa}"))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Effective priors, their complements and the Bayes thresholds."""
        eff = effective_prior(np.asarray(self.p_target), self.c_miss, self.c_fa)
        return operating_points(p_target=eff)


def _as_lazy(data: pl.DataFrame | pl.LazyFrame | str | Path, where: str | None) -> pl.LazyFrame:
    if isinstance(data, (str, Path)):
        return scan_trials(data, where=where)
    lf = data.lazy() if isinstance(data, pl.DataFrame) else data
    return apply_where(lf, where)


def grouped_scores(lf: pl.LazyFrame, by: Sequence[str], *, scan_by: Sequence[str] = ()
                   ) -> tuple[pl.DataFrame, list[SortedScores], int]:
    """Reduce a trial table to one :class:`SortedScores` per group (one sort in all).

    Returns the group keys (one row per group, in sorted order), the sorted scores of each
    group, and the number of rows with an unknown (null) label that were left out.

    ``scan_by`` (a subset of ``by``, typically hive partition keys) reads each of its values by
    its own filtered scan, so only one partition's rows are in memory at a time and each file
    is read once; the other ``by`` columns are grouped in memory.
    """
    schema = lf.collect_schema()
    for c in ("score", "label", *by):
        if c not in schema:
            raise ScoreframeError(message(f"column `{c}` not found",
                                          expected="a trial table with scores and labels",
                                          got=", ".join(schema.names())))
    scan_by = [c for c in by if c in scan_by]
    if scan_by:
        rest = [c for c in by if c not in scan_by]
        values = lf.select(scan_by).unique().sort(scan_by).collect(engine="streaming")
        frames, out_list, unknown = [], [], 0
        for row in values.iter_rows(named=True):
            cond = pl.all_horizontal([pl.col(c).is_null() if v is None else pl.col(c) == v
                                      for c, v in row.items()])
            keys_df, groups, u = grouped_scores(lf.filter(cond), rest)
            n = len(groups)
            frames.append(pl.DataFrame({c: [None if v is None else str(v)] * n
                                        for c, v in row.items()},
                                       schema={c: pl.String for c in scan_by})
                          .hstack(keys_df if rest else pl.DataFrame()))
            out_list.extend(groups)
            unknown += u
        keys_all = pl.concat(frames).select(list(by)).with_row_index("__i").sort(list(by))
        order = keys_all["__i"].to_list()
        return keys_all.drop("__i"), [out_list[i] for i in order], unknown
    keys = [pl.col(c).cast(pl.String).alias(c) for c in by]
    score = pl.col("score")
    aggs = [score.filter(pl.col("label")).sort().alias("tar"),
            score.filter(~pl.col("label")).sort().alias("non"),
            pl.col("label").is_null().sum().alias("unknown"),
            score.is_nan().sum().alias("nan")]
    sel = lf.select(*keys, "score", "label")
    if by:
        red = sel.group_by(by).agg(aggs).sort(by).collect(engine="streaming")
    else:
        red = sel.select([a.implode() if i < 2 else a for i, a in enumerate(aggs)]).collect(
            engine="streaming")
    nan = int(red["nan"].sum())
    if nan:
        raise ScoreframeError(message("column `score` has NaN values",
                                      got=f"{nan} NaN score(s)",
                                      hint="NaN scores are rejected at the boundary."))
    out = [SortedScores(red["tar"][i].to_numpy(), red["non"][i].to_numpy())
           for i in range(red.height)]
    keys_df = red.select(by) if by else pl.DataFrame()
    return keys_df, out, int(red["unknown"].sum())


def _dcf_rows(ops: OperatingPoints, res: dict[str, object] | None,
              eq: dict[str, object] | None, p: np.ndarray, q: np.ndarray) -> list[dict]:
    rows = []
    norm = np.minimum(p, q)
    for k, pt in enumerate(ops.p_target):
        row: dict[str, object] = {"p_target": pt, "c_miss": ops.c_miss, "c_fa": ops.c_fa,
                                  "effective_prior": float(p[k])}
        if res is None:
            row.update(dict.fromkeys(("act_dcf", "act_dcf_norm", "min_dcf", "min_dcf_norm")))
            row.update(dict.fromkeys(("n_miss_min", "n_fa_min", "n_miss_act", "n_fa_act")))
            row["dr30_ok"] = None
        else:
            act = float(res["act_dcf"][k])  # type: ignore[index]
            mn = float(res["min_dcf"][k])  # type: ignore[index]
            n_miss = int(res["n_miss_min"][k])  # type: ignore[index]
            n_fa = int(res["n_fa_min"][k])  # type: ignore[index]
            row.update({
                "act_dcf": act, "act_dcf_norm": act / norm[k],
                "min_dcf": mn, "min_dcf_norm": mn / norm[k],
                "n_miss_min": n_miss, "n_fa_min": n_fa,
                "n_miss_act": int(res["n_miss_act"][k]),  # type: ignore[index]
                "n_fa_act": int(res["n_fa_act"][k]),  # type: ignore[index]
                "dr30_ok": n_miss >= DR30 and n_fa >= DR30,
            })
        if eq is not None:
            row["eq_act_dcf_norm"] = float(eq["eq_act_dcf"][k] / norm[k])  # type: ignore[index]
            row["eq_min_dcf_norm"] = float(eq["eq_min_dcf"][k] / norm[k])  # type: ignore[index]
        rows.append(row)
    return rows


def evaluate(data: pl.DataFrame | pl.LazyFrame | str | Path, *,
             by: Sequence[str] | str | None = None, where: str | None = None,
             p_target: Sequence[float] | float = (0.01,), c_miss: float = 1.0, c_fa: float = 1.0,
             eer_method: str = "rocch", equalize_by: Sequence[str] | str | None = None,
             pooled: bool = True,
             progress: Callable[[int, int], None] | None = None,
             on_group: Callable[[dict[str, object], SortedScores], None] | None = None
             ) -> pl.DataFrame:
    """Evaluate binary scores per condition: EER, Cllr, minCllr, PRBEP, actual/min DCF.

    Parameters
    ----------
    data
        Trials (``score``, ``label`` and condition columns): a frame, a LazyFrame, or the path
        of a Parquet file or hive-partitioned dataset (scanned lazily).
    by
        Condition columns to group by. When the data has a ``system`` column it is always a
        grouping column (first), since pooling different systems is meaningless.
    where
        SQL predicate selecting trials first (``"channel = 'tel'"``).
    p_target, c_miss, c_fa
        Operating points: one or more target priors with shared costs.
    eer_method
        ``"rocch"`` (default, BOSARIS), ``"nist"`` or ``"kaldi"`` (see :func:`scoreframe.eer`).
    equalize_by
        Condition columns whose partitions are weighted equally inside each group (NIST SRE16
        equalized DCF/EER): adds ``eq_eer`` and ``eq_*_dcf_norm`` to the results.
    pooled
        Add a pooled row per system (``"all"`` in the ``by`` columns) when grouping.
    progress
        Optional callable ``progress(done, total)`` over groups.
    on_group
        Optional callable ``on_group(key, sorted_scores)`` for every group with targets and
        non-targets (pooled rows included), so views (curves, reports) reuse the one reduction.

    Returns
    -------
    polars.DataFrame
        One row per group: group columns (as strings), ``n_tar``, ``n_non``, ``eer``,
        ``cllr``, ``min_cllr``, ``cal_loss``, ``prbep``, ``c_primary``/``min_c_primary``
        (means of normalized DCFs over the operating points), ``dr30_ok``, and ``dcf``: a list
        of structs, one per operating point (see :func:`explode_dcf` for a flat table).
        Groups without targets or non-targets get null metrics and one
        :class:`DegenerateGroupWarning` naming them.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"score": [2.0, 1.0, -1.0, 0.5], "label": [True, True, False, False],
    ...                    "gender": ["f", "m", "f", "m"]})
    >>> evaluate(df, by="gender", p_target=0.5).select("gender", "n_tar", "eer").rows()
    [('f', 1, 0.0), ('m', 1, 0.0), ('all', 2, 0.0)]
    """
    if eer_method not in EER_METHODS:
        raise ScoreframeError(message("unknown EER method", expected=" | ".join(EER_METHODS),
                                      got=repr(eer_method)))
    by_cols = [by] if isinstance(by, str) else list(by or [])
    eq_cols = [equalize_by] if isinstance(equalize_by, str) else list(equalize_by or [])
    ops = OperatingPoints(tuple(np.atleast_1d(np.asarray(p_target, dtype=float)).tolist()),
                          float(c_miss), float(c_fa))
    lf = _as_lazy(data, where)
    names = lf.collect_schema().names()
    if "system" in names and "system" not in by_cols:
        by_cols = ["system", *by_cols]
    cond_cols = [c for c in by_cols if c != "system"]
    sys_cols = [c for c in by_cols if c == "system"]
    group_cols = by_cols + [c for c in eq_cols if c not in by_cols]
    keys, groups, _ = grouped_scores(lf, group_cols, scan_by=_hive_keys(data))
    # collapse the equalization partitions back into their groups
    p, q, thr = ops.arrays()
    rows: list[dict] = []
    degenerate: list[str] = []
    units: list[tuple[dict, list[SortedScores]]] = []
    if not by_cols:
        units.append(({}, groups))
    else:
        unit_index = (keys.select(by_cols).with_row_index("__i")
                      .group_by(by_cols, maintain_order=True).agg(pl.col("__i")))
        for row in unit_index.iter_rows(named=True):
            idx = row.pop("__i")
            units.append((row, [groups[i] for i in idx]))
    if pooled and cond_cols:
        pooled_units: dict[tuple, list[SortedScores]] = {}
        for key, parts in units:
            sk = tuple(key[c] for c in sys_cols)
            pooled_units.setdefault(sk, []).extend(parts)
        for sk, parts in pooled_units.items():
            key = dict(zip(sys_cols, sk, strict=True)) | dict.fromkeys(cond_cols, POOLED)
            units.append((key, parts))
    total = len(units)
    for done, (key, parts) in enumerate(units, 1):
        s = _merge(parts)
        res = eq = None
        if s.n_tar and s.n_non:
            res = binary_summary(s, p, q, thr, eer_method=eer_method)
            if on_group is not None:
                on_group(dict(key), s)
            if eq_cols:
                eq = equalized_summary(parts, p, q, thr)
        else:
            degenerate.append(", ".join(f"{k}={v}" for k, v in key.items()) or "(all)")
        dcf = _dcf_rows(ops, res, eq, p, q)
        row: dict[str, object] = dict(key)
        row.update({"n_tar": s.n_tar, "n_non": s.n_non})
        if res is None:
            row.update(dict.fromkeys(("eer", "cllr", "min_cllr", "cal_loss", "prbep",
                                      "c_primary", "min_c_primary", "dr30_ok")))
        else:
            row.update({
                "eer": res["eer"], "cllr": res["cllr"], "min_cllr": res["min_cllr"],
                "cal_loss": float(res["cllr"]) - float(res["min_cllr"]),  # type: ignore[arg-type]
                "prbep": res["prbep"],
                "c_primary": float(np.mean([d["act_dcf_norm"] for d in dcf])),
                "min_c_primary": float(np.mean([d["min_dcf_norm"] for d in dcf])),
                "dr30_ok": all(d["dr30_ok"] for d in dcf),
            })
        if eq_cols:
            row["eq_eer"] = None if eq is None else eq["eq_eer"]
        row["dcf"] = dcf
        rows.append(row)
        if progress is not None:
            progress(done, total)
    if degenerate:
        warnings.warn(f"no targets or no non-targets in group(s): {'; '.join(degenerate)}; "
                      "their metrics are null", DegenerateGroupWarning, stacklevel=2)
    if not rows:
        raise DegenerateError(message("nothing to evaluate", got="no trials with labels"))
    return _results_frame(rows, by_cols)


def _hive_keys(data: object) -> list[str]:
    """Partition keys of a hive-partitioned directory (``key=value/`` folder names)."""
    if not isinstance(data, (str, Path)) or not Path(data).is_dir():
        return []
    keys: list[str] = []
    level = [Path(data)]
    while level:
        subs = [d for p in level for d in p.iterdir() if d.is_dir() and "=" in d.name]
        for d in subs:
            k = d.name.split("=", 1)[0]
            if k not in keys:
                keys.append(k)
        level = subs[:1]  # partitions nest the same keys in every branch
    return keys


def _merge(parts: list[SortedScores]) -> SortedScores:
    if len(parts) == 1:
        return parts[0]
    # the parts are sorted runs: a stable (run-detecting) merge sort merges them in ~O(n log k)
    return SortedScores(np.sort(np.concatenate([s.tar for s in parts]), kind="stable"),
                        np.sort(np.concatenate([s.non for s in parts]), kind="stable"))


def _results_frame(rows: list[dict], by: list[str]) -> pl.DataFrame:
    df = pl.from_dicts(rows, infer_schema_length=None)
    metric_order = ["n_tar", "n_non", "eer", "eq_eer", "cllr", "min_cllr", "cal_loss", "prbep",
                    "c_primary", "min_c_primary", "dr30_ok", "dcf"]
    cols = by + [c for c in metric_order if c in df.columns]
    cond = [c for c in by if c != "system"]
    if cond:
        df = df.with_columns(pl.all_horizontal([pl.col(c) == POOLED for c in cond])
                             .alias("__pooled"))
        df = df.sort([*(c for c in by if c == "system"), "__pooled", *cond])
    return df.select(cols).with_columns(
        [pl.col(c).cast(pl.Float64) for c in ("eer", "eq_eer", "cllr", "min_cllr", "cal_loss",
                                              "prbep", "c_primary", "min_c_primary")
         if c in df.columns])


def group_columns(results: pl.DataFrame) -> list[str]:
    """The grouping columns of an :func:`evaluate` result (those before ``n_tar``)."""
    return results.columns[: results.columns.index("n_tar")]


def explode_dcf(results: pl.DataFrame) -> pl.DataFrame:
    """One row per group x operating point: the ``dcf`` structs unnested beside the group."""
    return results.drop("dr30_ok", strict=False).explode("dcf").unnest("dcf")
