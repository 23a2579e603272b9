"""1:N identification from candidate lists: CMC, open-set FNIR/DIR at FPIR targets, curves.

Results layer over :mod:`scoreframe.kernels.identification`. Input: long form (one row per
probe x candidate: ``probe``, ``score``, ``mate``; any candidate id column is carried along
unread) as a path, frame or LazyFrame, or a probe x gallery score matrix
(:func:`read_score_matrix`). Two streaming passes: the first finds the probes and each
one's mate score and input position; the second reads the rows in batches and counts, per
probe, the non-mates above the mate and tied with it (and the best non-mate), so memory is a
few numbers per probe, whatever the rows, the ranks asked or the row order.

Vocabulary (ISO/IEC 19795-1, NIST FRTE 1:N): a *mated* search has its mate in the gallery,
a *non-mated* one has none. Closed-set identification rate at rank ``k`` (the CMC) counts
mated searches whose mate is within rank ``k``. Open set, at threshold ``t`` and rank ``R``:
DIR (TPIR) = mated searches whose mate is within rank ``R`` *and* scores ``>= t``; FNIR =
1 - DIR; FPIR = non-mated searches whose best candidate scores ``>= t``. The threshold for an
FPIR target ``f``: ``"exact"`` — the lowest with FPIR ``<= f`` (just above the ``(k+1)``-th
highest best non-mated score, ``k / P_nonmated <= f``); ``"bob"`` — bob.measure's
``far_threshold`` on those scores (the lowest such *non-mated* score).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scoreframe.errors import (
    DegenerateGroupWarning,
    FormatError,
    Place,
    ScoreframeError,
    UnresolvedTargetWarning,
    ValidationError,
    message,
)
from scoreframe.frames.lazy import by_columns
from scoreframe.kernels import biometric as kb
from scoreframe.kernels import identification as ki
from scoreframe.stats import EngineLike, as_engine
from scoreframe.stats.groups import POOLED

__all__ = ["THRESHOLD_CONVENTIONS", "Searches", "cmc_curve", "fnir_fpir_curve", "identify",
           "read_score_matrix", "search_statistics"]

#: Threshold conventions for FPIR targets.
THRESHOLD_CONVENTIONS = ("exact", "bob")
BATCH_ROWS = 1_000_000
SEP = "\x1f"


def read_score_matrix(path: str | Path) -> pl.LazyFrame:
    """A probe x gallery score matrix (``.npz`` or HDF5) as long-form candidate rows.

    Arrays: ``scores`` (probes x gallery, float; NaN = not compared, dropped), ``probe_ids``,
    ``gallery_ids``, and either ``mates`` (probes x gallery, bool) or ``probe_subjects`` and
    ``gallery_subjects`` (a candidate is the mate when the subjects are equal).

    Parameters
    ----------
    path
        The ``.npz`` or HDF5 file.

    Returns
    -------
    polars.LazyFrame
        Candidate rows ``probe, gallery, score, mate``, as :func:`identify` takes them.

    See Also
    --------
    identify : Evaluate the searches it holds.
    scoreframe.io.read_bosaris_hdf5 : The BOSARIS HDF5 score matrix.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "m.npz")
    >>> np.savez(p, scores=np.array([[0.9, 0.1]]), probe_ids=np.array(["p"]),
    ...          gallery_ids=np.array(["a", "b"]), mates=np.array([[True, False]]))
    >>> read_score_matrix(p).collect().rows()
    [('p', 'a', 0.9, True), ('p', 'b', 0.1, False)]
    """
    p = Path(path)
    try:
        if p.suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        else:
            import h5py

            with h5py.File(p, "r") as f:
                arrays = {k: f[k][()] for k in f}
    except (OSError, ValueError) as exc:
        raise FormatError(message("cannot read the score matrix", where=Place(p),
                                  got=str(exc).splitlines()[0][:200])) from None
    need = ["scores", "probe_ids", "gallery_ids"]
    missing = [k for k in need if k not in arrays]
    subjects = {"probe_subjects", "gallery_subjects"} <= arrays.keys()
    if missing or not ("mates" in arrays or subjects):
        raise FormatError(message(
            "bad score matrix", where=Place(p),
            expected="arrays scores, probe_ids, gallery_ids and mates (or probe_subjects and "
                     "gallery_subjects)", got="arrays " + ", ".join(sorted(arrays))))
    s = np.asarray(arrays["scores"], dtype=np.float64)

    def ids(k: str) -> np.ndarray:
        a = np.asarray(arrays[k])
        return a.astype(str) if a.dtype.kind != "S" else np.char.decode(a, "utf-8")

    pid, gid = ids("probe_ids"), ids("gallery_ids")
    if s.ndim != 2 or s.shape != (pid.shape[0], gid.shape[0]):
        raise FormatError(message("bad score matrix", where=Place(p),
                                  expected="scores of shape (len(probe_ids), len(gallery_ids))",
                                  got=f"{s.shape} with {pid.shape[0]} probes and "
                                      f"{gid.shape[0]} gallery ids"))
    if "mates" in arrays:
        mates = np.asarray(arrays["mates"], dtype=bool)
        if mates.shape != s.shape:
            raise FormatError(message("bad score matrix", where=Place(p),
                                      expected=f"mates of shape {s.shape}",
                                      got=str(mates.shape)))
    else:
        mates = ids("probe_subjects")[:, None] == ids("gallery_subjects")[None, :]
    keep = ~np.isnan(s).ravel()
    return pl.LazyFrame({"probe": np.repeat(pid, gid.shape[0])[keep],
                         "candidate": np.tile(gid, pid.shape[0])[keep],
                         "score": s.ravel()[keep], "mate": mates.ravel()[keep]})


def _scan(data: Any, where: str | None) -> pl.LazyFrame:
    if isinstance(data, str | Path) and Path(data).suffix in (".npz", ".h5", ".hdf5"):
        lf = read_score_matrix(data)
        return lf.filter(pl.sql_expr(where)) if where else lf
    from scoreframe.frames.lazy import scan_raw

    return scan_raw(data, where=where)


@dataclass(frozen=True, eq=False)
class Searches:
    """The merged per-probe state of an identification experiment, with its grouping.

    ``groups[i]`` is the condition key of probe code ``i`` (a tuple over ``by``).

    See Also
    --------
    search_statistics : How it is made.
    identify : The summary read from it.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"probe": ["p1", "p1", "p2", "p2"], "score": [0.9, 0.5, 0.2, 0.8],
    ...                    "mate": [True, False, True, False], "site": ["x", "x", "y", "y"]})
    >>> s = search_statistics(df, by="site")
    >>> s.by, s.groups
    (('site',), [('x',), ('y',)])
    >>> [(key["site"], mask.tolist()) for key, mask in s.units()]  # then the pooled row
    [('x', [True, False]), ('y', [False, True]), ('all', [True, True])]
    """

    by: tuple[str, ...]
    groups: list[tuple[str | None, ...]]
    state: ki.SearchState

    def units(self, pooled: bool = True) -> list[tuple[dict[str, str | None], np.ndarray]]:
        """Each result row: its key and the probe mask (conditions, then the pooled row)."""
        codes = {g: i for i, g in enumerate(sorted(set(self.groups), key=str))}
        gid = np.array([codes[g] for g in self.groups], dtype=np.int64)
        out = [(dict(zip(self.by, g, strict=True)), gid == i) for g, i in codes.items()]
        if pooled and self.by:
            out.append((dict.fromkeys(self.by, POOLED), np.ones(gid.shape[0], bool)))
        return out


def search_statistics(data: Any, *, by: Sequence[str] | str | None = None,
                      where: str | None = None, max_rank: int = 1,
                      batch_rows: int = BATCH_ROWS) -> Searches:
    """Reduce candidate rows to the per-probe state (two streaming passes, in batches).

    Raises on missing columns, null or NaN scores, null mate flags and probes with more than
    one mate.

    Parameters
    ----------
    data
        Candidate rows ``probe, score, mate`` (and the ``by`` columns): a frame or a path.
    by
        Condition columns; each probe belongs to one condition.
    where
        A SQL predicate selecting candidate rows first.
    max_rank
        The deepest rank kept per probe (the CMC's length).
    batch_rows
        Rows reduced per batch (memory, not results, depends on it).

    Returns
    -------
    Searches
        The merged per-probe state.

    See Also
    --------
    identify, cmc_curve, fnir_fpir_curve : The results computed from it.
    Searches : What it returns.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"probe": ["p1", "p1", "p2"], "score": [0.9, 0.5, 0.2],
    ...                    "mate": [False, True, True]})
    >>> search_statistics(df, max_rank=2).groups  # one probe code per probe, no conditions
    [(), ()]
    """
    by_cols = by_columns(by)
    if max_rank < 1:
        raise ScoreframeError(message("bad rank", expected="ranks >= 1", got=str(max_rank)))
    lf = _scan(data, where)
    names = lf.collect_schema().names()
    for c in ("probe", "score", "mate", *by_cols):
        if c not in names:
            raise ValidationError(message(
                f"column `{c}` not found", expected="candidate rows with probe, score and "
                "mate (and the --by columns)", got="columns " + ", ".join(names)))
    parts = [pl.col(c).cast(pl.String).fill_null("\x00") for c in [*by_cols, "probe"]]
    key = pl.concat_str(parts, separator=SEP).alias("__key")
    mate = pl.col("mate")
    if lf.collect_schema()["mate"] != pl.Boolean:
        mate = pl.col("mate").cast(pl.String).str.to_lowercase().replace_strict(
            {"true": True, "1": True, "false": False, "0": False}, default=None,
            return_dtype=pl.Boolean)
    indexed = lf.with_row_index("__pos")
    # First pass: the probes, and each one's mate score and input position (bad values are
    # reported by the second pass, which reads every row as before)
    first = (indexed.select(
        key, pl.when(mate).then(pl.col("score").cast(pl.Float64, strict=False)).alias("__ms"),
        pl.when(mate).then(pl.col("__pos").cast(pl.Int64)).alias("__mp"))
        .group_by("__key").agg(pl.col("__ms").max(), pl.col("__mp").min())
        .collect(engine="streaming").sort("__key"))
    keys = first["__key"].to_list()
    if not keys:
        raise ScoreframeError(message("nothing to identify", got="no candidate rows"))
    enum = pl.Enum(keys)
    state = ki.empty_state(first["__ms"].fill_null(np.nan).to_numpy(),
                           first["__mp"].fill_null(-1).to_numpy(), r=max_rank)
    del first
    sel = indexed.select(
        key.cast(enum).to_physical().cast(pl.Int64).alias("__code"),
        pl.col("score").cast(pl.Float64), mate.alias("mate"),
        pl.col("mate").is_not_null().alias("__given"), pl.col("__pos").cast(pl.Int64))
    for batch in sel.collect_batches(chunk_size=batch_rows, engine="streaming"):
        sc = batch["score"]
        if sc.null_count() or sc.is_nan().any():
            raise ValidationError(message("column `score` has missing values",
                                          expected="a number for every candidate",
                                          got="null or NaN scores"))
        if batch["mate"].null_count():
            bad = int(batch["mate"].null_count())
            what = "missing" if int((~batch["__given"]).sum()) else "unrecognized"
            raise ValidationError(message(
                "column `mate` must say for every candidate whether it is the probe's mate",
                expected="true/false or 1/0", got=f"{bad} {what} mate flag(s)"))
        ki.add_rows(state, batch["__code"].to_numpy(), sc.to_numpy(),
                    batch["mate"].to_numpy(), batch["__pos"].to_numpy())
    two = np.flatnonzero(state.n_mates > 1)
    if two.size:
        ex = ", ".join(keys[i].split(SEP)[-1] for i in two[:3])
        raise ValidationError(message(
            "probe(s) with more than one mate", expected="at most one mate per probe",
            got=f"{two.size} probe(s), e.g. {ex}",
            hint="A search has one mate in the gallery (or none, for open-set)."))
    groups = [tuple(None if v == "\x00" else v for v in k.split(SEP)[:-1]) for k in keys]
    return Searches(tuple(by_cols), groups, state)


def _threshold(best: np.ndarray, mates: np.ndarray, f: float, convention: str
               ) -> tuple[float | None, int]:
    """Threshold for FPIR target ``f`` from the non-mated searches' best scores."""
    n = best.shape[0]
    if convention == "bob":
        if n < 2:
            return None, 0
        return kb.bob_far_threshold(np.sort(best), f), 1
    k = int(kb.count_within([f], n)[0])
    if k == 0:
        return None, 0
    v = np.sort(best)[n - 1 - k]
    above = np.concatenate((best[best > v], mates[mates > v]))
    return (float(above.min()) if above.size else float(np.nextafter(v, np.inf))), k


def summary(s: Searches, *, rank: Sequence[int] = (1,), fpir: Sequence[float] = (),
            tie: str = "pessimistic", threshold: str = "exact", pooled: bool = True
            ) -> pl.DataFrame:
    """Identification rates per condition (see :func:`identify`)."""
    st = s.state
    ranks = ki.mate_ranks(st, tie=tie)
    rows = []
    notes: list[str] = []
    degenerate: list[str] = []
    for key, mask in s.units(pooled):
        name = ", ".join(f"{k}={v}" for k, v in key.items()) or "(all)"
        mated = mask & (st.n_mates == 1)
        nonmated = mask & (st.n_mates == 0)
        pm, pn = int(mated.sum()), int(nonmated.sum())
        row: dict[str, Any] = {**key, "n_searches": int(mask.sum()), "n_mated": pm,
                               "n_nonmated": pn}
        if pm == 0:
            degenerate.append(f"{name} (no mated searches)")
        row["cmc"] = [{"rank": r, "identification_rate":
                       int((ranks[mated] <= r).sum()) / pm if pm else None} for r in rank]
        opens = []
        best = st.best_non[nonmated]
        mscore = st.mate_score[mated]
        for f in fpir:
            t, k = _threshold(best, mscore, f, threshold) if pn else (None, 0)
            if t is None:
                notes.append(f"FPIR {f:g} in group {name}: cannot be resolved with {pn} "
                             f"non-mated searches (needs at least {math.ceil(1 / f)})")
            for r in rank:
                if t is None or pm == 0:
                    opens.append({"fpir_target": f, "rank": r, "threshold": t, "fpir": None,
                                  "fnir": None, "dir": None})
                    continue
                hit = int(((ranks[mated] <= r) & (mscore >= t)).sum())
                fp = int((best >= t).sum())
                opens.append({"fpir_target": f, "rank": r, "threshold": t, "fpir": fp / pn,
                              "fnir": (pm - hit) / pm, "dir": hit / pm})
        row["open_set"] = opens
        rows.append(row)
    if degenerate:
        warnings.warn("identification rates undefined for group(s): " + "; ".join(degenerate)
                      + "; they are null", DegenerateGroupWarning, stacklevel=3)
    if notes:
        warnings.warn("; ".join(notes) + "; those values are null", UnresolvedTargetWarning,
                      stacklevel=3)
    schema: dict[str, Any] = {c: pl.String for c in s.by} | {
        "n_searches": pl.Int64, "n_mated": pl.Int64, "n_nonmated": pl.Int64,
        "cmc": pl.List(pl.Struct({"rank": pl.Int64, "identification_rate": pl.Float64})),
        "open_set": pl.List(pl.Struct({"fpir_target": pl.Float64, "rank": pl.Int64,
                                       "threshold": pl.Float64, "fpir": pl.Float64,
                                       "fnir": pl.Float64, "dir": pl.Float64}))}
    return pl.DataFrame(rows, schema=schema)


def _checks(rank: Sequence[int] | int, fpir: Sequence[float] | float | None, tie: str,
            threshold: str) -> tuple[list[int], tuple[float, ...]]:
    from scoreframe.checks import check_choice
    from scoreframe.metrics._biometric import check_rate_targets

    check_choice(tie, name="tie", choices=ki.TIE_RULES)
    check_choice(threshold, name="threshold", choices=THRESHOLD_CONVENTIONS)
    ranks = [rank] if isinstance(rank, int) else list(rank)
    if not ranks or any(isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 1
                        for r in ranks):
        raise ScoreframeError(message("bad `rank`", expected="integers >= 1",
                                      got=repr(rank)))
    return sorted(set(int(r) for r in ranks)), check_rate_targets(fpir, name="fpir")


def identify(data: Any, *, rank: Sequence[int] | int = (1,),
             fpir: Sequence[float] | float | None = None, by: Sequence[str] | str | None = None,
             where: str | None = None, tie: str = "pessimistic", threshold: str = "exact",
             pooled: bool = True, batch_rows: int | None = None,
             engine: EngineLike = "auto") -> pl.DataFrame:
    """Closed- and open-set identification rates per condition.

    Parameters
    ----------
    data
        Candidate rows (``probe``, ``score``, ``mate``; a path, frame or LazyFrame) or a
        score matrix file (``.npz``/``.h5``, see :func:`read_score_matrix`).
    rank
        Ranks ``k`` of the CMC, and the ranks ``R`` of the open-set rates.
    fpir
        FPIR targets, each in (0, 1).
    by, where, pooled
        Condition columns (constant within a probe), a SQL row filter, and a pooled row.
    tie
        ``"pessimistic"`` (a non-mate tied with the mate ranks first, as bob.measure),
        ``"optimistic"`` or ``"stable"`` (input order, as pyeer).
    threshold
        ``"exact"`` (lowest threshold with FPIR <= target) or ``"bob"``.
    batch_rows, engine
        Candidate rows reduced per streaming batch (default: from the engine's memory limit,
        about 200 bytes a row, at most 10^6); ``engine`` as in :func:`scoreframe.evaluate`.
        Every kind reduces the batches in this process; results do not depend on either.

    Returns
    -------
    polars.DataFrame
        Per condition (and pooled): ``n_searches``, ``n_mated``, ``n_nonmated``, ``cmc``
        (``rank``, ``identification_rate``) and ``open_set`` (``fpir_target``, ``rank``,
        ``threshold``, ``fpir``, ``fnir``, ``dir``). An FPIR target below ``1 / n_nonmated``
        cannot be resolved: null and an :class:`~scoreframe.errors.UnresolvedTargetWarning`.

    See Also
    --------
    cmc_curve, fnir_fpir_curve

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"probe": ["p1"] * 3 + ["p2"] * 3,
    ...                    "score": [0.9, 0.5, 0.5, 0.2, 0.8, 0.1],
    ...                    "mate": [False, True, False, True, False, False]})
    >>> identify(df, rank=[1, 2, 3])["cmc"][0].to_list()  # p1's mate ties a non-mate
    [{'rank': 1, 'identification_rate': 0.0}, {'rank': 2, 'identification_rate': 0.5}, \
{'rank': 3, 'identification_rate': 1.0}]
    """
    ranks, targets = _checks(rank, fpir, tie, threshold)
    if batch_rows is None:
        batch_rows = max(1024, min(BATCH_ROWS, as_engine(engine).limit // 200))
    else:
        as_engine(engine)  # checked the same way
    s = search_statistics(data, by=by, where=where, max_rank=max(ranks), batch_rows=batch_rows)
    return summary(s, rank=ranks, fpir=targets, tie=tie, threshold=threshold, pooled=pooled)


def cmc_curve(data: Any, *, max_rank: int = 20, by: Sequence[str] | str | None = None,
              where: str | None = None, tie: str = "pessimistic", pooled: bool = True
              ) -> pl.DataFrame:
    """The CMC: identification rate at every rank from 1 to ``max_rank``, per condition.

    Parameters
    ----------
    data
        Candidate rows ``probe, score, mate`` (and the ``by`` columns): a frame or a path.
    max_rank
        The deepest rank.
    by
        Condition columns.
    where
        A SQL predicate selecting candidate rows first.
    tie
        How a mate tied with non-mates is ranked: ``pessimistic`` (after them),
        ``optimistic`` (before them) or ``stable`` (in row order).
    pooled
        Add the pooled row (over all conditions) when ``by`` is given.

    Returns
    -------
    polars.DataFrame
        One row per condition and rank: ``n_mated``, ``rank``, ``identification_rate``.

    See Also
    --------
    identify : The rank-1 and open-set summary.
    fnir_fpir_curve : The open-set curve.
    scoreframe.views.plots.cmc_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"probe": ["p"] * 2, "score": [0.2, 0.8], "mate": [True, False]})
    >>> cmc_curve(df, max_rank=2)["identification_rate"].to_list()
    [0.0, 1.0]
    """
    _checks(max_rank, None, tie, "exact")
    s = search_statistics(data, by=by, where=where, max_rank=max_rank)
    res = summary(s, rank=list(range(1, max_rank + 1)), tie=tie, pooled=pooled)
    return res.select(*s.by, "n_mated", "cmc").explode("cmc").unnest("cmc")


def fnir_fpir_curve(data: Any, *, rank: int = 1, by: Sequence[str] | str | None = None,
                    where: str | None = None, tie: str = "pessimistic", pooled: bool = True
                    ) -> pl.DataFrame:
    """FNIR against FPIR at rank ``rank`` over thresholds (NIST FRTE 1:N style), per condition.

    One point per distinct best score of the non-mated searches (each the lowest threshold
    with that FPIR), highest first. Needs mated and non-mated searches.

    Parameters
    ----------
    data
        Candidate rows ``probe, score, mate`` (and the ``by`` columns): a frame or a path.
    rank
        The rank a mate must reach.
    by
        Condition columns.
    where
        A SQL predicate selecting candidate rows first.
    tie
        How a mate tied with non-mates is ranked: ``pessimistic`` (after them),
        ``optimistic`` (before them) or ``stable`` (in row order).
    pooled
        Add the pooled row (over all conditions) when ``by`` is given.

    Returns
    -------
    polars.DataFrame
        One row per condition and threshold: ``rank``, ``threshold``, ``fpir``, ``fnir``.

    See Also
    --------
    identify : FNIR at given FPIR targets.
    cmc_curve : The closed-set curve.
    scoreframe.views.plots.fnir_fpir_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"probe": ["a", "a", "b", "c"], "score": [0.9, 0.1, 0.5, 0.7],
    ...                    "mate": [True, False, False, False]})
    >>> fnir_fpir_curve(df).select("threshold", "fpir", "fnir").rows()
    [(0.7, 0.5, 0.0), (0.5, 1.0, 0.0)]
    """
    _checks(rank, None, tie, "exact")
    s = search_statistics(data, by=by, where=where, max_rank=rank)
    st = s.state
    ranks = ki.mate_ranks(st, tie=tie)
    rows = []
    for key, mask in s.units(pooled):
        mated = mask & (st.n_mates == 1)
        nonmated = mask & (st.n_mates == 0)
        pm, pn = int(mated.sum()), int(nonmated.sum())
        if not (pm and pn):
            continue
        best = np.sort(st.best_non[nonmated])
        thr = np.unique(best[np.isfinite(best)])[::-1]
        fp = pn - np.searchsorted(best, thr, side="left")
        ok = np.sort(st.mate_score[mated & (ranks <= rank)])
        hit = ok.shape[0] - np.searchsorted(ok, thr, side="left")
        for t, a, h in zip(thr.tolist(), fp.tolist(), hit.tolist(), strict=True):
            rows.append({**key, "rank": rank, "threshold": t, "fpir": a / pn,
                         "fnir": (pm - h) / pm})
    schema = {c: pl.String for c in s.by} | {"rank": pl.Int64, "threshold": pl.Float64,
                                             "fpir": pl.Float64, "fnir": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
