"""Score normalization: cohort statistics (computed once, reusable) and their lazy application."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike

from scoreframe._cores import usable_cores
from scoreframe.checks import check_choice
from scoreframe.errors import AlignmentError, ScoreframeError, UsageError, ValidationError, message
from scoreframe.frames.lazy import Data, as_lazy
from scoreframe.norm._embeddings import (
    Embeddings,
    block_statistics,
    prepare,
    read_embeddings,
    trial_scores,
)
from scoreframe.norm._methods import Method, NormalizationLike, as_normalization, needed
from scoreframe.norm._tables import table_statistics
from scoreframe.stats import EngineLike, as_engine

__all__ = ["LAYOUTS", "STATISTICS_SCHEMA", "cohort_statistics", "normalize"]

#: How :func:`normalize` returns the normalized scores.
LAYOUTS = ("columns", "systems")
#: The columns of a cohort statistics table.
STATISTICS_SCHEMA = {"side": pl.String, "id": pl.String, "top_k": pl.Int64, "ddof": pl.Int8,
                     "n": pl.Int64, "mean": pl.Float64, "std": pl.Float64}
_TRIAL_COL = {"enroll": "model", "test": "segment"}
Progress = Callable[[str, int, int], None]


def _center_vector(center: object, cohort: Embeddings, dim: int) -> np.ndarray | None:
    if center is None:
        return None
    if isinstance(center, str):
        if center != "cohort":
            raise ScoreframeError(message("bad `center`", expected="None, 'cohort' or a vector",
                                          got=repr(center)))
        return np.asarray(cohort.vectors.mean(axis=0))
    vec = np.asarray(center, dtype=np.float64).ravel()
    if vec.shape[0] != dim or not np.isfinite(vec).all():
        raise ValidationError(message("bad `center`", expected=f"a finite vector of dimension "
                                      f"{dim}", got=f"dimension {vec.shape[0]}"))
    return vec


def _exclusions(side: Embeddings, cohort: Embeddings) -> list[np.ndarray]:
    """Cohort rows of the same speaker (or, without speaker labels, the same id) per row."""
    use_spk = side.speakers is not None and cohort.speakers is not None
    keys = cohort.speakers if use_spk else cohort.ids
    assert keys is not None
    index: dict[str, list[int]] = {}
    for j, key in enumerate(keys.tolist()):
        index.setdefault(key, []).append(j)
    mine = side.speakers if use_spk else side.ids
    assert mine is not None
    empty = np.empty(0, dtype=np.int64)
    return [np.asarray(index[key], dtype=np.int64) if key in index else empty
            for key in mine.tolist()]


def _embedding_statistics(embeddings: tuple[object, object], cohort: object, *,
                          wanted: dict[str, list[int | None]], ddof: int,
                          exclude_same_id: bool, center: object,
                          ids: dict[str, Sequence[str]] | None, memory_limit: int,
                          workers: int, progress: Progress | None,
                          ) -> tuple[pl.DataFrame, dict[str, tuple[Embeddings, np.ndarray]]]:
    coh = read_embeddings(cohort)
    sides = {"enroll": read_embeddings(embeddings[0]), "test": read_embeddings(embeddings[1])}
    dims = {"cohort": coh.vectors.shape[1], **{s: e.vectors.shape[1] for s, e in sides.items()}}
    if len(set(dims.values())) > 1:
        raise ValidationError(message("vectors of different dimensions", got=", ".join(
            f"{s} {d}" for s, d in dims.items()), hint="Enrolment, test and cohort vectors "
            "must come from the same extractor."))
    mean_vec = _center_vector(center, coh, dims["cohort"])
    cohort_n = prepare(coh.vectors, center=mean_vec)
    prepared: dict[str, tuple[Embeddings, np.ndarray]] = {}
    frames = []
    for side, emb in sides.items():
        if ids is not None and side in ids:
            keep = np.isin(emb.ids, np.asarray(list(ids[side]), dtype=str))
            emb = Embeddings(emb.ids[keep], emb.vectors[keep],
                             None if emb.speakers is None else emb.speakers[keep], emb.where)
        vecs = prepare(emb.vectors, center=mean_vec)
        prepared[side] = (emb, vecs)
        ks = wanted.get(side)
        if not ks:
            continue
        excl = _exclusions(emb, coh) if exclude_same_id else None
        most = max((len(x) for x in excl), default=0) if excl else 0
        available = coh.vectors.shape[0] - most
        for k in ks:
            if k is not None and k > available:
                raise ValidationError(message(
                    "`top_k` larger than the cohort", expected=f"k <= {available} (cohort "
                    f"entries{' left by the leakage guard' if most else ''})", got=str(k),
                    where=coh.where))
        if available - ddof < 1:
            raise ValidationError(message("the cohort is too small", where=coh.where,
                                          got=f"{available} usable entries with ddof={ddof}"))
        tick = (lambda done, total, s=side: progress(f"{s} cohort scores", done, total)
                ) if progress is not None else None
        stats = block_statistics(vecs, cohort_n, ks=ks, ddof=ddof, exclude=excl,
                                 workers=workers, memory_limit=memory_limit, progress=tick)
        for k in ks:
            n, mean, std = stats[k]
            frames.append(pl.DataFrame({
                "side": side, "id": emb.ids.tolist(),
                "top_k": pl.Series([k] * len(n), dtype=pl.Int64),
                "ddof": pl.Series([ddof] * len(n), dtype=pl.Int8), "n": n,
                "mean": pl.Series(mean, nan_to_null=True),
                "std": pl.Series(std, nan_to_null=True)}, schema=STATISTICS_SCHEMA))
    out = pl.concat(frames) if frames else pl.DataFrame(schema=STATISTICS_SCHEMA)
    return out, prepared


def _check_source(statistics: object, cohort_scores: object, embeddings: object,
                  cohort: object) -> str:
    given = [n for n, v in (("statistics", statistics), ("cohort_scores", cohort_scores),
                            ("embeddings", embeddings)) if v is not None]
    if len(given) != 1:
        raise UsageError(message(
            "name exactly one source of cohort statistics",
            expected="statistics=, cohort_scores=(enroll, test) or embeddings=(enroll, test) "
                     "with cohort=", got=", ".join(given) or "none"))
    if given[0] == "embeddings" and cohort is None:
        raise UsageError(message("`embeddings` needs `cohort`", got="no cohort embeddings"))
    if given[0] != "embeddings" and cohort is not None:
        raise UsageError(message("`cohort` goes with `embeddings`", got=given[0]))
    for name, value in (("cohort_scores", cohort_scores), ("embeddings", embeddings)):
        if value is not None and not (isinstance(value, tuple | list) and len(value) == 2):
            raise UsageError(message(f"bad `{name}`", expected="a pair (enroll, test)",
                                     got=type(value).__name__))
    return given[0]


def cohort_statistics(*, method: NormalizationLike = "snorm",
                      cohort_scores: tuple[object, object] | None = None,
                      embeddings: tuple[object, object] | None = None,
                      cohort: object | None = None, center: str | ArrayLike | None = None,
                      ids: dict[str, Sequence[str]] | None = None,
                      engine: EngineLike = "auto", progress: Progress | None = None,
                      ) -> pl.DataFrame:
    """The cohort statistics table the named methods need (compute once, reuse).

    One row per (side, id, cohort size): ``side`` (``enroll``/``test``), ``id``, ``top_k``
    (null: the whole cohort), ``ddof``, ``n`` (cohort scores used), ``mean``, ``std``.

    Parameters
    ----------
    method
        As in :func:`normalize`: method names, or a :class:`Normalization` (cohort size,
        ``ddof``, convention, leakage guard).
    cohort_scores
        ``(enroll_table, test_table)``: cohort score tables (paths to Parquet files or
        datasets, or frames) with ``enroll_id, cohort_id, score`` and ``test_id, cohort_id,
        score``, reduced out of core by id; either may be ``None`` when no method needs it.
    embeddings, cohort, center
        ``(enroll, test)`` embeddings and the cohort embeddings (paths to Parquet, npz or HDF5,
        frames, or ``(ids, array)``); cosine scores of length-normalized vectors after
        subtracting ``center`` (``"cohort"``: the cohort's mean vector, or a vector).
    ids
        Restrict the embedding sides to these ids (``{"enroll": [...], "test": [...]}``).
    engine
        As in :func:`scoreframe.evaluate`: its memory limit bounds the tables held at once.
        Cohort score tables are reduced out of core by id, on threads of this process, or
        with ``"dask"`` as the same tasks on the Dask cluster of the engine's ``scheduler``
        (or a local one); the statistics are identical. Embeddings are always scored in
        this process (``"dask"`` is an error there).
    progress
        ``progress(what, done, total)`` called as the work advances.

    Returns
    -------
    polars.DataFrame
        The statistics table (:data:`STATISTICS_SCHEMA`).

    See Also
    --------
    normalize : apply the statistics to trials.
    Normalization : the methods and their options.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ids = [f"u{i}" for i in range(4)]
    >>> emb = (ids, rng.normal(size=(4, 8)))
    >>> coh = ([f"c{i}" for i in range(50)], rng.normal(size=(50, 8)))
    >>> st = cohort_statistics(method="asnorm10", embeddings=(emb, emb), cohort=coh)
    >>> st.columns, st.height
    (['side', 'id', 'top_k', 'ddof', 'n', 'mean', 'std'], 8)
    >>> from scoreframe.norm import Normalization
    >>> sb = cohort_statistics(method=Normalization("snorm", top_k=20, convention="speechbrain"),
    ...                        embeddings=(emb, emb), cohort=coh)
    >>> sb["top_k"].unique().to_list(), sb["ddof"].unique().to_list()
    ([20], [1])
    """
    source = _check_source(None, cohort_scores, embeddings, cohort)
    norm = as_normalization(method)
    stats, _ = _statistics(source, norm.methods(), norm.resolved_ddof(),
                           cohort_scores=cohort_scores, embeddings=embeddings, cohort=cohort,
                           exclude_same_id=norm.exclude_same_id, center=center, ids=ids,
                           engine=engine, progress=progress)
    return stats


def _statistics(source: str, methods: list[Method], ddof: int, *, cohort_scores: Any,
                embeddings: Any, cohort: Any, exclude_same_id: bool, center: Any,
                ids: dict[str, Sequence[str]] | None,
                engine: EngineLike, progress: Progress | None,
                ) -> tuple[pl.DataFrame, dict[str, tuple[Embeddings, np.ndarray]] | None]:
    eng = as_engine(engine)
    limit, n_workers = eng.limit, eng.workers or usable_cores()
    kind, scheduler = ("dask" if eng.kind == "dask" else "local"), eng.scheduler
    wanted = needed(methods)
    if source == "embeddings" and kind == "dask":
        raise UsageError(message(
            "the dask engine reduces cohort score tables", got="embeddings",
            hint="Embeddings are scored by BLAS products in this process: use engine "
                 "'auto' (the default), or write cohort score tables for Dask."))
    if source == "embeddings":
        return _embedding_statistics(embeddings, cohort, wanted=wanted, ddof=ddof,
                                     exclude_same_id=exclude_same_id, center=center, ids=ids,
                                     memory_limit=limit, workers=n_workers, progress=progress)
    if center is not None:
        raise UsageError(message("`center` applies to embeddings", got="cohort score tables"))
    frames = []
    for i, side in enumerate(("enroll", "test")):
        ks = wanted.get(side)
        if not ks:
            continue
        table = cohort_scores[i]
        if table is None:
            raise UsageError(message(f"the methods need {side} cohort scores",
                                     got="none for that side"))
        tick = (lambda done, total, s=side: progress(f"{s} cohort scores", done, total)
                ) if progress is not None else None
        st = table_statistics(table, side=side, ks=ks, ddof=ddof,
                              exclude_same_id=exclude_same_id, memory_limit=limit,
                              workers=eng.workers if kind == "dask" else n_workers,
                              engine=kind, scheduler=scheduler, progress=tick)
        too_few = st.filter(pl.col("top_k").is_not_null() & (pl.col("n") < pl.col("top_k")))
        if too_few.height:
            raise ValidationError(message(
                "`top_k` larger than the cohort", where=f"the {side} cohort scores",
                expected=f"at least {int(too_few['top_k'].max())} cohort scores per id",  # type: ignore[arg-type]  # polars stubs: Series.max() is any scalar; here an int
                got=f"{too_few['id'].n_unique()} id(s) with fewer, e.g. " + ", ".join(
                    f"`{r['id']!s}` ({r['n']})" for r in too_few.head(3).iter_rows(named=True))))
        frames.append(st)
    return pl.concat(frames), None


def _wide(stats: pl.DataFrame, side: str, ks: Sequence[int | None], ddof: int) -> pl.DataFrame:
    """One row per id of ``side``: ``mean``/``std`` columns per cohort size."""
    out: pl.DataFrame | None = None
    for k in ks:
        sel = stats.filter((pl.col("side") == side) & (pl.col("ddof") == ddof)
                           & (pl.col("top_k").is_null() if k is None else pl.col("top_k") == k))
        tag = f"{side}_{k if k is not None else 'all'}"
        part = sel.select(pl.col("id").alias(_TRIAL_COL[side]),
                          pl.col("mean").alias(f"__mean_{tag}"),
                          pl.col("std").alias(f"__std_{tag}"))
        if part.height == 0:
            raise ValidationError(message(
                "the statistics table lacks what the methods need", expected=(
                    f"{side}-side rows with top_k={'null' if k is None else k}, ddof={ddof}"),
                got="(side, top_k, ddof) " + ", ".join(str(t) for t in sorted(
                    set(stats.select("side", "top_k", "ddof").iter_rows()), key=str)[:6]),
                hint="Compute the statistics with the same method, top_k and ddof."))
        dup = part.filter(pl.col(_TRIAL_COL[side]).is_duplicated())
        if dup.height:
            raise ValidationError(message(
                f"the statistics table has {dup[_TRIAL_COL[side]].n_unique()} {side} id(s) "
                "more than once for the same top_k and ddof", got="e.g. " + ", ".join(
                    f"`{v}`" for v in dup[_TRIAL_COL[side]].unique().head(3).to_list())))
        out = part if out is None else out.join(part, on=_TRIAL_COL[side], how="full",
                                                coalesce=True)
    assert out is not None
    return out


#: Trial rows per batch while the distinct ids are gathered.
ID_BATCH_ROWS = 1_000_000


def _distinct_ids(trials: pl.LazyFrame, cols: Sequence[str]) -> list[pl.DataFrame]:
    """The distinct values of ``cols`` (as strings), one frame per column, in one pass.

    Batch by batch, so memory stays bounded by the batch and the distinct ids (a streaming
    ``unique`` of two columns buffered up to gigabytes of decoded rows at 10^8 trials); each
    column's batch uniques are merged whenever they have doubled, in amortized linear time.
    """
    parts: list[list[pl.Series]] = [[] for _ in cols]
    size = [0] * len(cols)
    merged = [0] * len(cols)
    q = trials.select([pl.col(c).cast(pl.String) for c in cols])
    for batch in q.collect_batches(chunk_size=ID_BATCH_ROWS, engine="streaming"):
        for i, c in enumerate(cols):
            u = batch[c].unique()
            parts[i].append(u)
            size[i] += u.len()
            if size[i] > 2 * merged[i] + ID_BATCH_ROWS:
                parts[i] = [pl.concat(parts[i]).unique()]
                size[i] = merged[i] = parts[i][0].len()
    return [(pl.concat(p).unique() if p else pl.Series(c, [], dtype=pl.String)).to_frame(c)
            for p, c in zip(parts, cols, strict=True)]


def _check_ids(trials: pl.LazyFrame, tables: dict[str, pl.DataFrame]) -> None:
    """Every trial id has statistics, none with zero (or undefined) spread.

    One streaming pass: the trials' id columns are joined with the ids whose statistics are
    usable (small build sides, so memory stays bounded), and only the rows that find none
    are kept; they are then told apart (no statistics, or zero spread) on their distinct ids.
    """
    cols = [_TRIAL_COL[s] for s in tables]
    q = trials.select([pl.col(c).cast(pl.String) for c in cols])
    for side, table in tables.items():
        col = _TRIAL_COL[side]
        mcols = [c for c in table.columns if c.startswith("__mean_")]
        scols = [c for c in table.columns if c.startswith("__std_")]
        good = table.filter(pl.all_horizontal([pl.col(c).is_not_null() for c in mcols])
                            & pl.all_horizontal([pl.col(c) > 0 for c in scols]))
        q = q.join(good.select(col, pl.lit(True).alias(f"__ok_{side}")).lazy(), on=col,
                   how="left")
    bad = (q.filter(pl.any_horizontal([pl.col(f"__ok_{s}").is_null() for s in tables]))
           .select(cols).unique().collect(engine="streaming"))
    if bad.height == 0:
        return
    for side, table in tables.items():
        col = _TRIAL_COL[side]
        used = bad.select(pl.col(col).unique())
        joined = used.join(table, on=col, how="left")
        mcols = [c for c in table.columns if c.startswith("__mean_")]
        scols = [c for c in table.columns if c.startswith("__std_")]
        missing = joined.filter(pl.any_horizontal(pl.col(mcols).is_null()))
        if missing.height:
            raise AlignmentError(message(
                f"{missing.height} {side} id(s) of the trials have no cohort statistics",
                got="e.g. " + ", ".join(f"`{v}`" for v in missing[col].head(5).to_list()),
                hint=f"Every trial `{col}` needs cohort scores or an embedding."))
        flat = joined.filter(pl.any_horizontal([~(pl.col(c) > 0) for c in scols]))
        if flat.height:
            raise ValidationError(message(
                f"{flat.height} {side} id(s) with zero spread in their cohort scores",
                got="e.g. " + ", ".join(f"`{v}`" for v in flat[col].head(5).to_list()),
                hint="A cohort standard deviation of zero cannot normalize: check the cohort "
                     "or exclude these trials."))


def normalize(trials: Data, *, method: NormalizationLike = "snorm",
              statistics: pl.DataFrame | pl.LazyFrame | str | Path | None = None,
              cohort_scores: tuple[object, object] | None = None,
              embeddings: tuple[object, object] | None = None, cohort: object | None = None,
              center: str | ArrayLike | None = None, layout: str = "columns",
              engine: EngineLike = "auto", progress: Progress | None = None) -> pl.LazyFrame:
    """Normalize trial scores with cohort statistics: z-, t-, s- and adaptive s-norm.

    With the enrolment side's cohort mean and std ``mu_e, s_e`` and the test side's
    ``mu_t, s_t`` (over the whole cohort or its top k scores):
    ``znorm = (score - mu_e) / s_e``, ``tnorm = (score - mu_t) / s_t``,
    ``snorm = (znorm + tnorm) / 2`` and ``asnorm`` is s-norm over each side's k largest cohort
    scores.

    Parameters
    ----------
    trials
        Trials with ``model`` (enrolment id), ``segment`` (test id) and ``score``; without
        ``score``, cosine scores are computed from ``embeddings``.
    method
        ``znorm``, ``tnorm``, ``snorm``, ``asnorm`` or a list; a name may carry its cohort size
        (``asnorm300``, ``snorm20000``). Or a :class:`Normalization`, which also sets the
        cohort size (``top_k``), the standard deviation (``ddof``), the ``convention``
        (``"wespeaker"``, the default, or ``"speechbrain"``) and the leakage guard
        (``exclude_same_id``).
    statistics
        A statistics table from :func:`cohort_statistics` (a frame or a Parquet path).
    cohort_scores
        ``(enroll_table, test_table)`` cohort score tables (see :func:`cohort_statistics`).
    embeddings, cohort, center
        ``(enroll, test)`` embeddings and the cohort embeddings; ``center`` subtracts a mean
        vector (``"cohort"``: the cohort's) before length normalization (WeSpeaker's recipe).
    layout
        ``"columns"``: one ``score_<method>`` column per method; ``"systems"``: one copy of
        the trials per method in the ``system`` column (``raw``, ``snorm``, ... or
        ``<system>+snorm``), ready for ``evaluate`` and ``compare``.
    engine, progress
        As in :func:`cohort_statistics`.

    Returns
    -------
    polars.LazyFrame
        The trials with the normalized scores.

    Raises
    ------
    AlignmentError
        A trial id has no cohort scores or embedding (the error counts them and names some).
    ValidationError
        Zero spread, ``top_k`` larger than the cohort, bad vectors.

    See Also
    --------
    cohort_statistics : compute (and save) the statistics once.
    Normalization : the methods and their options (``top_k``, ``ddof``, ``convention``).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> ids = [f"u{i}" for i in range(4)]
    >>> emb = (ids, rng.normal(size=(4, 8)))
    >>> coh = ([f"c{i}" for i in range(50)], rng.normal(size=(50, 8)))
    >>> trials = pl.DataFrame({"model": ["u0", "u1"], "segment": ["u2", "u3"]})
    >>> out = normalize(trials, method=["snorm", "asnorm10"], embeddings=(emb, emb),
    ...                 cohort=coh).collect()
    >>> out.columns
    ['model', 'segment', 'score', 'score_snorm', 'score_asnorm10']
    >>> from scoreframe.norm import Normalization
    >>> sb = Normalization("snorm", top_k=20, convention="speechbrain")
    >>> normalize(trials, method=sb, embeddings=(emb, emb), cohort=coh).collect().columns[-1]
    'score_snorm20'
    """
    source = _check_source(statistics, cohort_scores, embeddings, cohort)
    check_choice(layout, name="layout", choices=LAYOUTS)
    as_engine(engine)  # checked before anything is read
    norm = as_normalization(method)
    methods, d = norm.methods(), norm.resolved_ddof()
    lf = as_lazy(trials)
    names = lf.collect_schema().names()
    for c in ("model", "segment"):
        if c not in names:
            raise ValidationError(message(f"the trials have no `{c}` column",
                                          got="columns " + ", ".join(names)))
    if "score" not in names and source != "embeddings":
        raise ValidationError(message("the trials have no `score` column",
                                      hint="Give embeddings to compute cosine scores."))
    for m in methods:
        if m.column in names:
            raise UsageError(message(f"the trials already have a `{m.column}` column"))
    prepared = None
    if source == "statistics" and norm.exclude_same_id:
        raise UsageError(message(
            "the leakage guard (`exclude_same_id`) cannot apply to saved statistics",
            hint="Give it to cohort_statistics when the statistics are computed, or normalize "
                 "from the cohort scores or embeddings."), parameter="exclude_same_id")
    if source == "statistics":
        stats = (pl.read_parquet(statistics) if isinstance(statistics, str | Path)
                 else statistics.collect() if isinstance(statistics, pl.LazyFrame)
                 else statistics)
        assert isinstance(stats, pl.DataFrame)
        missing = [c for c in STATISTICS_SCHEMA if c not in stats.columns]
        if missing:
            raise ValidationError(message("not a cohort statistics table", got="no column "
                                          + ", ".join(f"`{c}`" for c in missing)))
    else:
        ids: dict[str, Sequence[str]] | None = None
        if source == "embeddings":
            used = _distinct_ids(lf, ("model", "segment"))
            ids = {"enroll": used[0].to_series().drop_nulls().to_list(),
                   "test": used[1].to_series().drop_nulls().to_list()}
        stats, prepared = _statistics(source, methods, d, cohort_scores=cohort_scores,
                                      embeddings=embeddings, cohort=cohort,
                                      exclude_same_id=norm.exclude_same_id, center=center,
                                      ids=ids,
                                      engine=engine, progress=progress)
    wanted = needed(methods)
    tables = {side: _wide(stats, side, ks, d) for side, ks in wanted.items()}
    if "score" not in names:
        lf = _score_trials(lf, prepared)
        names = lf.collect_schema().names()
    _check_ids(lf, tables)
    out = lf
    for side, table in tables.items():
        col = _TRIAL_COL[side]
        key = f"__key_{side}"
        left = (out.with_columns(pl.col(col).cast(pl.String).alias(key))
                if out.collect_schema()[col] != pl.String else out.with_columns(
                    pl.col(col).alias(key)))
        out = left.join(table.lazy().rename({col: key}), on=key, how="left",
                        maintain_order="left")
    score = pl.col("score").cast(pl.Float64)

    def side_expr(side: str, k: int | None) -> pl.Expr:
        tag = f"{side}_{k if k is not None else 'all'}"
        return (score - pl.col(f"__mean_{tag}")) / pl.col(f"__std_{tag}")

    exprs = []
    for m in methods:
        parts = [side_expr(s, m.k) for s in m.sides]
        exprs.append((parts[0] if len(parts) == 1 else 0.5 * (parts[0] + parts[1]))
                     .alias(m.column))
    helper = [c for c in out.collect_schema().names() if c.startswith("__")]
    out = out.with_columns(exprs).drop(helper)
    if layout == "columns":
        return out
    base = pl.col("system").cast(pl.String) if "system" in names else pl.lit("raw")
    raw = out.drop([m.column for m in methods])
    if "system" not in names:
        raw = raw.with_columns(pl.lit("raw").alias("system"))
    frames = [raw.select([*names, *(["system"] if "system" not in names else [])])]
    for m in methods:
        sys = (base + "+" + m.label) if "system" in names else pl.lit(m.label)
        frames.append(out.with_columns(pl.col(m.column).alias("score"), sys.alias("system"))
                      .select(frames[0].collect_schema().names()))
    return pl.concat(frames)


def _score_trials(lf: pl.LazyFrame, prepared: dict[str, tuple[Embeddings, np.ndarray]] | None
                  ) -> pl.LazyFrame:
    """Cosine scores of the trials from the prepared (centered, normalized) embeddings."""
    assert prepared is not None
    df = lf.collect()
    idx = []
    for side in ("enroll", "test"):
        emb, _ = prepared[side]
        codes = df.select(pl.col(_TRIAL_COL[side]).cast(pl.String)
                          .replace_strict(emb.ids.tolist(), list(range(len(emb.ids))),
                                          default=None, return_dtype=pl.Int64)).to_series()
        if codes.null_count():
            miss = df.filter(codes.is_null())[_TRIAL_COL[side]].unique()
            raise AlignmentError(message(
                f"{miss.len()} {side} id(s) of the trials have no embedding",
                where=emb.where, got="e.g. " + ", ".join(f"`{v}`" for v in miss.head(5))))
        idx.append(codes.to_numpy())
    left, right = prepared["enroll"][1], prepared["test"][1]
    scores = np.empty(df.height)
    step = 1 << 16
    for i in range(0, df.height, step):
        scores[i:i + step] = trial_scores(left[idx[0][i:i + step]], right[idx[1][i:i + step]])
    pos = df.columns.index("segment") + 1
    return df.insert_column(pos, pl.Series("score", scores)).lazy()
