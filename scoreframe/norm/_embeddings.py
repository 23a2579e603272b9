"""Embeddings: reading (Parquet, npz, HDF5), checks, and cohort statistics by blocks of products.

Cosine scores are products of length-normalized vectors computed by BLAS (matrix-matrix
products) in row blocks; the full cohort score matrix is never held. BLAS may sum a product
element in a different order depending on the shape of the call (OpenBLAS 0.3.31 does for small
dimensions: an 8-row and a 300-row call give different last bits), so every call has the same
shape: :func:`block_rows` rows (the last block zero-padded), a number fixed by the cohort size
alone. The memory limit sets how many blocks are in flight (one per worker, as many as fit);
statistics are therefore the same whatever the memory limit or the number of workers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from scoreframe.errors import FormatError, Place, ScoreframeError, ValidationError, message
from scoreframe.kernels.cohort import moments_of_rows, row_topk
from scoreframe.stats.executors import LocalExecutor

__all__ = ["BLOCK_BYTES", "MAX_BLOCK_ROWS", "Embeddings", "block_rows", "block_statistics",
           "prepare", "read_embeddings", "trial_scores"]

F64 = NDArray[np.float64]
#: Most rows of the enrolment/test matrix per BLAS product.
MAX_BLOCK_ROWS = 256
#: Target size of one block of cohort scores (bytes).
BLOCK_BYTES = 64 * 2**20
_ID_KEYS = ("id", "ids")
_VEC_KEYS = ("vector", "vectors", "embedding", "embeddings")


@dataclass(frozen=True, eq=False)
class Embeddings:
    """Vectors with their ids (and optionally a speaker per vector), read and checked.

    Attributes
    ----------
    ids
        One id per row (strings).
    vectors
        ``(n, dim)`` float64.
    speakers
        One speaker label per row when the input had a ``speaker`` column, else ``None``.
    where
        How messages name the input.

    See Also
    --------
    read_embeddings : How it is read.
    scoreframe.normalize : Normalize from embeddings.

    Examples
    --------
    >>> import numpy as np
    >>> e = read_embeddings((["a", "b", "c"], np.eye(3)))
    >>> e.ids.tolist(), e.vectors.shape, e.speakers is None
    (['a', 'b', 'c'], (3, 3), True)
    """

    ids: NDArray[np.str_]
    vectors: F64
    speakers: NDArray[np.str_] | None
    where: str


def _pick(names: Sequence[str], keys: Sequence[str], where: str, what: str) -> str:
    for k in keys:
        if k in names:
            return k
    raise FormatError(message(f"no {what} column", where=where,
                              expected=" or ".join(f"`{k}`" for k in keys),
                              got="columns " + ", ".join(names)))


def _from_frame(df: pl.DataFrame, where: str) -> tuple[Any, Any, Any]:
    idc = _pick(df.columns, _ID_KEYS, where, "id")
    vc = _pick(df.columns, _VEC_KEYS, where, "vector")
    dtype = df.schema[vc]
    if not isinstance(dtype, pl.Array | pl.List):
        raise FormatError(message(f"column `{vc}` must hold vectors", where=where,
                                  expected="a fixed-size list (Array) or list of floats",
                                  got=str(dtype)))
    col = df[vc]
    if isinstance(dtype, pl.List):
        lens = col.list.len().unique()
        if lens.len() > 1 or col.null_count():
            raise ValidationError(message("vectors of different dimensions", where=where,
                                          got="dimensions " + ", ".join(
                                              str(v) for v in sorted(lens.drop_nulls()
                                                                     .to_list())[:5])))
        dim = int(lens[0]) if lens.len() else 0
        col = col.cast(pl.Array(pl.Float64, dim))
    size = col.dtype.size  # type: ignore[attr-defined]  # polars stubs: Array/numeric dtypes' size is not on DataType
    vectors = col.cast(pl.Array(pl.Float64, size)).to_numpy()
    speakers = df["speaker"].cast(pl.String).to_numpy() if "speaker" in df.columns else None
    return df[idc].cast(pl.String).to_numpy(), vectors, speakers


def read_embeddings(source: object) -> Embeddings:
    """Read embeddings: a path (Parquet, ``.npz``, ``.h5``/``.hdf5``), a frame, or ``(ids, array)``.

    Parquet and frames have an ``id`` column and a ``vector`` column (a fixed-size list or a
    list of floats); npz and HDF5 files hold an ``id`` (or ``ids``) array of strings and a 2-D
    ``vector`` (or ``vectors``, ``embedding``, ``embeddings``) array. An optional ``speaker``
    column/array labels each vector (used by the leakage guard).

    Parameters
    ----------
    source
        A path, a frame with ``id`` and ``vector`` columns, or an ``(ids, array)`` pair.

    Returns
    -------
    Embeddings
        The checked vectors and ids.

    Raises
    ------
    FormatError
        The input cannot be read or lacks the columns.
    ValidationError
        Vectors of different dimensions, NaN or infinite values, all-zero vectors, repeated
        ids, or no vectors at all.

    See Also
    --------
    Embeddings : What it returns.
    scoreframe.normalize : Uses it for cohort scores.

    Examples
    --------
    >>> e = read_embeddings((["a", "b"], np.eye(2)))
    >>> e.ids.tolist(), e.vectors.shape
    (['a', 'b'], (2, 2))
    """
    where = (Place(source) if isinstance(source, str | Path)
             else f"the {type(source).__name__} given")
    speakers = None
    if isinstance(source, tuple) and len(source) == 2:
        ids, vectors = np.asarray(source[0]).astype(str), source[1]
    elif isinstance(source, pl.DataFrame | pl.LazyFrame):
        df = source.collect() if isinstance(source, pl.LazyFrame) else source
        ids, vectors, speakers = _from_frame(df, where)
    elif isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise FormatError(message("no such file or directory", path=path))
        suffix = path.suffix.lower()
        try:
            if suffix == ".npz":
                with np.load(path, allow_pickle=False) as z:
                    names = list(z.files)
                    ids = z[_pick(names, _ID_KEYS, where, "id")].astype(str)
                    vectors = z[_pick(names, _VEC_KEYS, where, "vector")]
                    speakers = z["speaker"].astype(str) if "speaker" in names else None
            elif suffix in (".h5", ".hdf5"):
                import h5py

                with h5py.File(path, "r") as h:
                    names = list(h.keys())
                    ids = np.asarray(h[_pick(names, _ID_KEYS, where, "id")][()]).astype(str)
                    vectors = np.asarray(h[_pick(names, _VEC_KEYS, where, "vector")][()])
                    speakers = (np.asarray(h["speaker"][()]).astype(str)
                                if "speaker" in names else None)
            else:
                src = str(path / "**" / "*.parquet") if path.is_dir() else path
                ids, vectors, speakers = _from_frame(pl.read_parquet(src), where)
        except (OSError, pl.exceptions.PolarsError, ValueError, KeyError) as exc:
            if isinstance(exc, ScoreframeError):
                raise
            raise FormatError(message("cannot read embeddings", where=where,
                                      got=(str(exc).splitlines() or [type(exc).__name__])[0]
                                      [:200])) from None
    else:
        raise ScoreframeError(message("unsupported embeddings", expected="a path (parquet, "
                                      "npz, h5), a polars frame or (ids, array)",
                                      got=type(source).__name__))
    return _checked(np.asarray(ids), vectors, speakers, where)


def _checked(ids: Any, vectors: Any, speakers: Any, where: str) -> Embeddings:
    try:
        v = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(message("vectors of different dimensions or not numbers",
                                      where=where)) from None
    if v.ndim != 2 or v.shape[0] == 0 or v.shape[1] == 0:
        raise ValidationError(message("no vectors", where=where, expected="a 2-D array of "
                                      "vectors (one row per id)", got=f"shape {v.shape}"))
    if ids.ndim != 1 or ids.shape[0] != v.shape[0]:
        raise ValidationError(message("ids and vectors differ in number", where=where,
                                      got=f"{ids.shape[0]} ids, {v.shape[0]} vectors"))
    bad = ~np.isfinite(v).all(axis=1)
    if bad.any():
        raise ValidationError(message(
            f"{int(bad.sum())} vector(s) with NaN or infinite values", where=where,
            got="ids " + ", ".join(f"`{i}`" for i in ids[bad][:5])))
    zero = ~(v != 0).any(axis=1)
    if zero.any():
        raise ValidationError(message(
            f"{int(zero.sum())} zero-length vector(s)", where=where,
            got="ids " + ", ".join(f"`{i}`" for i in ids[zero][:5]),
            hint="A cosine score needs a non-zero vector: drop them or fix the extractor."))
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValidationError(message(
            f"{int((counts > 1).sum())} repeated id(s)", where=where,
            got=", ".join(f"`{i}`" for i in uniq[counts > 1][:5])))
    return Embeddings(ids.astype(str), np.ascontiguousarray(v), speakers, where)


def prepare(vectors: F64, *, center: F64 | None) -> F64:
    """Subtract ``center`` (if any), then scale every vector to unit length.

    >>> prepare(np.array([[3.0, 4.0]]), center=None).tolist()
    [[0.6, 0.8]]
    """
    v = vectors - center if center is not None else vectors.copy()
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    if not (norms > 0).all():
        raise ValidationError(message(
            f"{int((norms <= 0).sum())} vector(s) of length zero after subtracting the "
            "mean vector", hint="Check the mean vector (center)."))
    v /= norms[:, None]
    return v


def block_rows(n_cohort: int) -> int:
    """Rows per BLAS product: a power of two, at most 256, one block of scores <= 64 MiB.

    >>> block_rows(20_000), block_rows(10**6)
    (256, 8)
    """
    rows = MAX_BLOCK_ROWS
    while rows > 1 and rows * n_cohort * 8 > BLOCK_BYTES:
        rows //= 2
    return rows


def trial_scores(left: F64, right: F64) -> F64:
    """Row-wise dot products (cosine scores of normalized vectors)."""
    scores: F64 = np.einsum("ij,ij->i", left, right)
    return scores


@dataclass(frozen=True)
class _Block:
    start: int
    stop: int


def block_statistics(side: F64, cohort: F64, *, ks: Sequence[int | None], ddof: int,
                     exclude: Sequence[NDArray[np.int64]] | None = None,
                     workers: int = 1, memory_limit: int,
                     progress: Callable[[int, int], None] | None = None,
                     ) -> dict[int | None, tuple[NDArray[np.int64], F64, F64]]:
    """Cohort statistics of every row of ``side`` against ``cohort`` (both normalized).

    For each requested cohort size k (``None``: the whole cohort) returns ``(n, mean, std)``
    per row: the number of cohort scores used, their mean and standard deviation. Whole-
    cohort moments need no score matrix: the mean of ``x . c_j`` is ``x . cbar`` and the sum
    of squared deviations is ``x' S x``, with ``cbar`` and ``S`` the cohort's mean vector and
    scatter matrix (excluded entries are then taken out as a sub-sample, exactly in
    arithmetic). Top-k moments come from the k largest scores of each row of a block of
    products (:func:`~scoreframe.kernels.cohort.moments_of_rows`). ``exclude[i]`` lists the
    cohort rows row ``i`` must not use.
    """
    n, m = side.shape[0], cohort.shape[0]
    cohort_t = np.ascontiguousarray(cohort.T)
    rows = block_rows(m)
    per_block = rows * m * 8 * 3  # the products, the partition copy, temporaries
    workers = max(1, min(workers, memory_limit // per_block))
    blocks = [_Block(s, min(s + rows, n)) for s in range(0, n, rows)]
    done = [0]
    lock = threading.Lock()

    tops = [k for k in ks if k is not None]
    if None in ks:  # whole-cohort moments from the cohort's mean vector and scatter matrix
        cbar = cohort.mean(axis=0)
        dev = cohort - cbar
        scatter = dev.T @ dev

    def run(b: _Block) -> dict[int | None, tuple[Any, Any, Any]]:
        nb = b.stop - b.start
        x = np.zeros((rows, side.shape[1]))
        x[:nb] = side[b.start:b.stop]
        cnt = np.full(nb, m, dtype=np.int64)
        pairs: tuple[Any, Any] | None = None
        if exclude is not None:
            lens = [len(exclude[i]) for i in range(b.start, b.stop)]
            if any(lens):
                r = np.repeat(np.arange(nb), lens)
                c = np.concatenate([exclude[i] for i in range(b.start, b.stop)]).astype(np.int64)
                pairs = (r, c)
                cnt -= np.asarray(lens, dtype=np.int64)
        out: dict[int | None, tuple[Any, Any, Any]] = {}
        if tops:
            s = (x @ cohort_t)[:nb]  # always a (rows x dim) @ (dim x m) product
            if pairs is not None:
                s[pairs] = -np.inf
            top = row_topk(s, max(tops))
            del s
            for k in tops:
                mean, std = moments_of_rows(top[:, :k], ddof=ddof)
                out[k] = (np.full(nb, k, dtype=np.int64), mean, std)
        if None in ks:
            mean = (x @ cbar)[:nb]  # mean_i = x_i . cbar; sum (s - mean)^2 = x_i' S x_i
            ss = np.einsum("ij,ij->i", x @ scatter, x)[:nb]
            if pairs is not None:  # leave the excluded scores out of the moments
                xs = np.einsum("ij,ij->i", x[pairs[0]], cohort[pairs[1]])
                n_x = np.bincount(pairs[0], minlength=nb)
                sum_x = np.bincount(pairs[0], weights=xs, minlength=nb)
                dev_x = np.bincount(pairs[0], weights=(xs - mean[pairs[0]]) ** 2, minlength=nb)
                with np.errstate(divide="ignore", invalid="ignore"):
                    kept = (m * mean - sum_x) / (m - n_x)
                ss = ss - dev_x - (m - n_x) * (kept - mean) ** 2
                mean = kept
            with np.errstate(divide="ignore", invalid="ignore"):
                var = np.maximum(ss, 0.0) / (cnt - ddof)
            out[None] = (cnt, mean, np.sqrt(np.where(cnt > ddof, var, np.nan)))
        with lock:
            done[0] += nb
            if progress is not None:
                progress(done[0], n)
        return out

    results = LocalExecutor(workers=workers).map(run, blocks)
    final: dict[int | None, tuple[NDArray[np.int64], F64, F64]] = {}
    for k in ks:
        parts = [r[k] for r in results]
        final[k] = (np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.int64),
                    np.concatenate([p[1] for p in parts]) if parts else np.empty(0),
                    np.concatenate([p[2] for p in parts]) if parts else np.empty(0))
    return final
