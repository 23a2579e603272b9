"""BOSARIS Key / Ndx / Scores in HDF5 (layout: tests/data/bosaris/HDF5_LAYOUT.md).

I/O layer. Dense ``(n_models, n_segments)`` matrices are converted to and from long trial tables
block by block, with numpy index arrays and Arrow string gathers: no Python object per trial,
and never the whole dense matrix in memory at once.

* Key: ``/trial_mask`` int8 (+1 target, -1 non-target, 0 no trial), ``/file_format`` ``"2.0"``,
  ``/ID/row_ids`` (models), ``/ID/column_ids`` (segments). The old layout with
  ``/target_mask`` and ``/nontarget_mask`` is read too.
* Ndx: ``/trial_mask`` uint8 (1 = trial).
* Scores: ``/scores`` float64 and ``/score_mask`` uint8.

Name datasets may be 1-D ``(n,)``, ``(n, 1)`` or ``(1, n)``, fixed- or variable-length UTF-8
strings. Writers write 1-D fixed-length (null-padded) byte strings, as BOSARIS-compatible Python
tools do, and chunked matrices compressed with deflate (the HDF5 filter every HDF5 build, MATLAB
and BOSARIS included, can read); chunks holding no trial are never written (they read as the
fill value 0).

Every problem with a file (not HDF5, truncated, a missing dataset, a dataset of the wrong type
or shape, names that are not UTF-8 or repeat) is a :class:`~scoreframe.errors.FormatError`
naming the file and the dataset.
"""

from __future__ import annotations

import logging
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from numpy.typing import DTypeLike, NDArray

from scoreframe._cores import usable_cores
from scoreframe.errors import FormatError, Place, ScoreframeError, ScoreframeWarning, message
from scoreframe.frames.schema import Kind, validate_trials
from scoreframe.io.atomic import atomic_output, final_path
from scoreframe.io.lines import quote

if TYPE_CHECKING:  # h5py is imported where a file is opened (~0.04 s, and its exit)
    import h5py

__all__ = ["DEFAULT_MAX_DENSE_BYTES", "dense_bytes", "read_bosaris_hdf5", "write_bosaris_hdf5"]

logger = logging.getLogger(__name__)

#: Refuse to write a BOSARIS HDF5 file whose dense matrices would exceed this (8 GiB).
DEFAULT_MAX_DENSE_BYTES = 8 * 2**30
_WARN_DENSE_BYTES = 2**30
_BLOCK_BYTES = 64 * 2**20  # matrix slab read at once
_CHUNK_ELEMENTS = 2**17  # elements per HDF5 chunk (1 MiB of float64)
_COMPRESSION_LEVEL = 4


def _dataset(f: h5py.File, name: str, where: str) -> h5py.Dataset:
    import h5py  # ~0.04 s to import (and its exit): loaded on first use
    if name not in f:
        raise FormatError(message(f"missing dataset `/{name}`", where=where,
                                  expected="a BOSARIS Key, Ndx or Scores HDF5 file"))
    ds = f[name]
    if not isinstance(ds, h5py.Dataset):
        raise FormatError(message(f"`/{name}` is not a dataset", where=where,
                                  expected="a dataset", got=type(ds).__name__.lower()))
    return ds


def _names(f: h5py.File, name: str, where: Place) -> pl.Series:
    import h5py  # ~0.04 s to import (and its exit): loaded on first use
    ds = _dataset(f, name, where)
    at = where.inside(f"dataset `/{name}`")
    if ds.dtype.kind not in "SOU" or (ds.dtype.kind == "O"
                                      and h5py.check_string_dtype(ds.dtype) is None):
        raise FormatError(message("names are not strings", where=at,
                                  expected="fixed- or variable-length strings",
                                  got=str(ds.dtype)))
    shape = ds.shape
    if shape is None or len(shape) > 2 or (len(shape) == 2 and 1 not in shape):
        raise FormatError(message("name list has the wrong shape", where=at,
                                  expected="(n,), (n, 1) or (1, n)", got=str(shape)))
    try:
        raw = ds.asstr(encoding="utf-8", errors="strict")[()]
    except UnicodeDecodeError as exc:
        raise FormatError(message("names are not UTF-8", where=at, expected="UTF-8 strings",
                                  got=f"byte {exc.object[exc.start:exc.start + 1]!r}")) from None
    arr = np.asarray(raw, dtype=object).reshape(-1)
    names = pl.Series(name.rsplit("/", 1)[-1], arr, dtype=pl.String)
    if ds.dtype.kind == "S":
        names = names.str.strip_chars_end("\x00")
    if names.null_count():
        raise FormatError(message("missing names", where=at, got=f"{names.null_count()} null(s)"))
    bad = names.str.contains(r"[\x00-\x1f\x7f]")
    if bad.any():
        raise FormatError(message("control character in a name", where=at,
                                  expected="printable names",
                                  got=quote(names.filter(bad)[0])))
    if names.n_unique() != names.len():
        dup = names.filter(names.is_duplicated()).unique().sort().head(3).to_list()
        raise FormatError(message("repeated names", where=at, expected="each name once",
                                  got=", ".join(quote(d) for d in dup)))
    return names


def _matrix(f: h5py.File, name: str, shape: tuple[int, int], where: Place,
            kinds: str = "iub") -> h5py.Dataset:
    ds = _dataset(f, name, where)
    at = where.inside(f"dataset `/{name}`")
    if ds.dtype.kind not in kinds:
        expected = {"iub": "integers", "iubf": "numbers", "f": "floating point numbers"}[kinds]
        raise FormatError(message("wrong data type", where=at, expected=expected,
                                  got=str(ds.dtype)))
    if ds.shape != shape:
        raise FormatError(message(f"dataset `/{name}` does not match the name lists",
                                  where=where, expected=f"shape {shape} (models x segments)",
                                  got=f"shape {ds.shape}"))
    return ds


def _row_blocks(ds: h5py.Dataset, n_rows: int, n_cols: int) -> list[tuple[int, int]]:
    rows = max(1, _BLOCK_BYTES // max(1, n_cols * 8))
    if ds.chunks:
        rows = max(ds.chunks[0], rows // ds.chunks[0] * ds.chunks[0])
    return [(r, min(r + rows, n_rows)) for r in range(0, n_rows, rows)]


def _kind(f: h5py.File) -> Kind:
    import h5py  # ~0.04 s to import (and its exit): loaded on first use
    if "scores" in f:
        return "scores"
    if "target_mask" in f or ("trial_mask" in f and isinstance(f["trial_mask"], h5py.Dataset)
                              and f["trial_mask"].dtype.kind in "if"):
        return "key"
    return "ndx"


def _nonzero_cells(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of a 2-D block's nonzero cells, in row-major order.

    Trial masks are sparse: one-byte cells are scanned eight at a time (as 64-bit words),
    and only the nonzero words are looked at byte by byte; ~10x faster than ``np.nonzero``.
    """
    n_cols = block.shape[1]
    flat = np.ascontiguousarray(block).reshape(-1)
    whole = flat.size // 8 * 8
    if flat.dtype.itemsize == 1 and whole:
        words = np.flatnonzero(flat[:whole].view(np.uint64))
        if words.size * 8 <= flat.size // 4:
            cand = (words[:, None] * 8 + np.arange(8)).reshape(-1)
            idx = np.concatenate([cand[flat[cand] != 0],
                                  whole + np.flatnonzero(flat[whole:])])
            return idx // n_cols, idx % n_cols
    idx = np.flatnonzero(flat)
    return idx // n_cols, idx % n_cols


def _read_long(f: h5py.File, kind: Kind, shape: tuple[int, int],
               where: Place) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Row indices, column indices and per-trial values, read slab by slab."""
    n_rows, n_cols = shape
    if kind == "key" and "target_mask" in f:
        tar_ds = _matrix(f, "target_mask", shape, where)
        non_ds = _matrix(f, "nontarget_mask", shape, where)
        def masks(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
            return tar_ds[a:b] != 0, non_ds[a:b] != 0
        first = tar_ds
    elif kind == "key":
        first = _matrix(f, "trial_mask", shape, where, kinds="iubf")
    elif kind == "ndx":
        first = _matrix(f, "trial_mask", shape, where, kinds="iubf")
    elif kind == "scores":
        first = _matrix(f, "score_mask", shape, where, kinds="iubf")
        scores_ds = _matrix(f, "scores", shape, where, kinds="iubf")
    else:
        raise FormatError(message("unknown BOSARIS kind", expected="key | ndx | scores",
                                  got=repr(kind)))
    ii: list[np.ndarray] = []
    jj: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for a, b in _row_blocks(first, n_rows, n_cols):
        if kind == "key" and "target_mask" in f:
            tar, non = masks(a, b)
            if (tar & non).any():
                raise FormatError(message("a trial is both target and non-target",
                                          where=where, got=f"{int((tar & non).sum())} trial(s)"))
            i, j = _nonzero_cells(tar | non)
            values.append(tar[i, j])
        elif kind == "key":
            block = first[a:b]
            if block.dtype.kind == "f":  # BOSARIS: target > 0.5, non-target < -0.5
                block = np.where(block > 0.5, 1, np.where(block < -0.5, -1, 0)).astype(np.int8)
            i, j = _nonzero_cells(block)
            values.append(block[i, j] > 0)
        elif kind == "ndx":
            i, j = _nonzero_cells(first[a:b])
        else:
            i, j = _nonzero_cells(first[a:b])
            values.append(np.asarray(scores_ds[a:b][i, j], dtype=np.float64))
        ii.append(i.astype(np.int64) + a)
        jj.append(j.astype(np.int64))
    def cat(xs: list[NDArray[Any]], dt: DTypeLike) -> NDArray[Any]:
        return np.concatenate(xs) if xs else np.zeros(0, dt)

    out = {}
    if kind == "key":
        out["label"] = cat(values, bool)
    elif kind == "scores":
        out["score"] = cat(values, np.float64)
    return cat(ii, np.int64), cat(jj, np.int64), out


def read_bosaris_hdf5(path: str | Path, kind: Kind | None = None, *,
                      max_dense_bytes: int | None = DEFAULT_MAX_DENSE_BYTES) -> pl.DataFrame:
    """Read a BOSARIS HDF5 Key, Ndx or Scores file as a long trial table.

    Parameters
    ----------
    path
        The ``.h5`` file.
    kind
        ``"key"``, ``"ndx"`` or ``"scores"``; detected from the datasets when omitted
        (``/scores`` means scores, ``/target_mask`` or a signed ``/trial_mask`` means key).
    max_dense_bytes
        Refuse a file whose declared sizes (dense matrices, name lists) exceed this, before
        anything is read or allocated (default 8 GiB; None: no limit). The matrices are read
        in slabs, but a trial table of that many cells would not fit either.

    Returns
    -------
    polars.DataFrame
        ``model, segment, label`` (key), ``model, segment`` (ndx) or ``model, segment, score``
        (scores), in model-major order of the stored matrices.

    Raises
    ------
    FormatError
        Naming the file and the dataset.

    See Also
    --------
    write_bosaris_hdf5 : The writer.
    scoreframe.read_any : Any registered format.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "k.h5"
    >>> key = pl.DataFrame({"model": ["m1", "m1"], "segment": ["s1", "s2"],
    ...                     "label": [True, False]})
    >>> write_bosaris_hdf5(key, p, "key")
    >>> read_bosaris_hdf5(p).rows()
    [('m1', 's1', True), ('m1', 's2', False)]
    """
    import h5py  # ~0.04 s to import (and its exit): loaded on first use
    path = Path(path)
    where = Place(path)
    if not path.exists():
        raise FormatError(message("no such file", path=path))
    if not path.is_file():
        raise FormatError(message("not a file", path=path, expected="an HDF5 file",
                                  got="a directory" if path.is_dir() else "a special file"))
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise FormatError(message("cannot open HDF5 file (truncated or not HDF5?)", where=where,
                                  got=str(exc).splitlines()[0])) from None
    try:
        with f:
            kind = kind or _kind(f)
            if max_dense_bytes is not None:
                _check_declared(f, kind, max_dense_bytes, where)
            models = _names(f, "ID/row_ids", where)
            segs = _names(f, "ID/column_ids", where)
            i, j, values = _read_long(f, kind, (models.len(), segs.len()), where)
    except ScoreframeError:
        raise
    except (OSError, KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise FormatError(message("cannot read HDF5 data (truncated or corrupt file?)",
                                  where=where, got=str(exc).splitlines()[0])) from None
    df = pl.DataFrame({"model": models.gather(i), "segment": segs.gather(j)})
    for name, v in values.items():
        df = df.with_columns(pl.Series(name, v))
    where_data = where.inside("dataset `/scores`") if kind == "scores" else where
    # names are unique, so every (row, column) cell is one distinct trial: no duplicate scan
    return validate_trials(df, kind=kind, where=where_data, duplicates=False).collect()


def _check_declared(f: h5py.File, kind: Kind, limit: int, where: Place) -> None:
    """Refuse declared sizes over ``limit`` from the datasets' metadata alone (nothing read)."""
    counts = []
    name_bytes = 0
    for name in ("ID/row_ids", "ID/column_ids"):
        ds = _dataset(f, name, where)
        n = int(np.prod(ds.shape, dtype=object)) if ds.shape else 1
        counts.append(n)
        name_bytes += n * max(int(ds.dtype.itemsize), 16)  # variable-length: a pointer and more
    size = max(dense_bytes(counts[0], counts[1], kind), name_bytes)
    if size > limit:
        raise FormatError(message(
            "declared sizes too large", where=where,
            expected=f"at most {_fmt_bytes(limit)} of {kind} matrices and names",
            got=f"{counts[0]} models x {counts[1]} segments = {_fmt_bytes(size)}",
            hint="Nothing was read. If the file is genuine and memory allows, raise "
                 "max_dense_bytes (CLI: --max-dense-bytes)."))


def dense_bytes(n_models: int, n_segments: int, kind: Kind) -> int:
    """Bytes of the dense matrices a BOSARIS reader (MATLAB) holds for this file.

    Examples
    --------
    >>> dense_bytes(1000, 2000, "scores")  # float64 scores + uint8 mask
    18000000
    """
    per_cell = 9 if kind == "scores" else 1
    return int(n_models) * int(n_segments) * per_cell


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def _codes(col: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """Sorted distinct names and each row's index into them."""
    names = col.unique().sort()
    idx = col.cast(pl.Enum(names)).to_physical().to_numpy().astype(np.int64)
    return names, idx


def _name_array(names: pl.Series) -> np.ndarray:
    encoded = names.cast(pl.Binary).to_numpy()
    width = max(1, int(names.str.len_bytes().max() or 1))  # type: ignore[arg-type]  # polars stubs: Series.max() is any scalar; here an int
    return np.asarray(encoded, dtype=f"S{width}")


def _write_sparse(datasets: list[tuple[h5py.Dataset, np.ndarray]], mi: np.ndarray,
                  si: np.ndarray) -> None:
    """Fill chunked deflate matrices chunk by chunk; chunks with no trial are never written.

    Each chunk is built and compressed with :mod:`zlib` (the deflate filter's own format) on a
    thread pool -- zlib releases the GIL -- and stored with HDF5's direct chunk write, so memory
    holds a few chunks at a time whatever the dense size.
    """
    cr, cc = datasets[0][0].chunks
    n_cols = datasets[0][0].shape[1]
    n_chunk_cols = -(-n_cols // cc)
    chunk = (mi // cr) * n_chunk_cols + si // cc
    order = np.argsort(chunk, kind="stable")
    chunk = chunk[order]
    if not chunk.size:
        return
    starts = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1]])
    ends = np.r_[starts[1:], chunk.size]

    def build(k: int) -> tuple[tuple[int, int], list[bytes]]:
        s, e = int(starts[k]), int(ends[k])
        c = int(chunk[s])
        r0, c0 = (c // n_chunk_cols) * cr, (c % n_chunk_cols) * cc
        sel = order[s:e]
        li, lj = mi[sel] - r0, si[sel] - c0
        out = []
        for ds, values in datasets:
            buf = np.zeros((cr, cc), dtype=ds.dtype)  # edge chunks are stored full size
            buf[li, lj] = values[sel]
            out.append(zlib.compress(buf.tobytes(), _COMPRESSION_LEVEL))
        return (r0, c0), out

    workers = max(1, min(4, usable_cores()))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for offset, blobs in pool.map(build, range(starts.size), chunksize=16):
            for (ds, _), blob in zip(datasets, blobs, strict=True):
                ds.id.write_direct_chunk(offset, blob)


def write_bosaris_hdf5(data: pl.DataFrame, path: str | Path, kind: Kind, *,
                       overwrite: bool = False,
                       max_dense_bytes: int | None = DEFAULT_MAX_DENSE_BYTES) -> None:
    """Write a long table as a BOSARIS HDF5 Key, Ndx or Scores file (atomically).

    Model and segment names are sorted, as BOSARIS ``read_txt`` does. The matrices are chunked
    and deflate-compressed, filled chunk by chunk (memory does not grow with the dense size).

    Parameters
    ----------
    data
        Long table: ``model, segment`` and ``label`` (key) or ``score`` (scores).
    path
        The ``.h5`` file to write.
    kind
        ``"key"``, ``"ndx"`` or ``"scores"``.
    overwrite
        Replace an existing file.
    max_dense_bytes
        Refuse when the dense matrices (what a BOSARIS reader loads: 1 byte per model x
        segment cell, 9 for scores) would exceed this many bytes; ``None`` for no limit. The
        dense size is logged before writing, and above 1 GiB a
        :class:`~scoreframe.errors.ScoreframeWarning` says it.

    See Also
    --------
    read_bosaris_hdf5 : The reader.
    scoreframe.write_any : Any registered format.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.h5"
    >>> sc = pl.DataFrame({"model": ["m1", "m2"], "segment": ["s1", "s1"], "score": [0.5, -1.0]})
    >>> write_bosaris_hdf5(sc, p, "scores")
    >>> read_bosaris_hdf5(p)["score"].to_list()
    [0.5, -1.0]
    """
    import h5py  # ~0.04 s to import (and its exit): loaded on first use
    if kind not in ("key", "ndx", "scores"):
        raise FormatError(message("unknown BOSARIS kind", expected="key | ndx | scores",
                                  got=repr(kind)))
    path = Path(path)
    shown = final_path(path)
    df = validate_trials(data, kind=kind, where=Place(shown, detail="the data written")).collect()
    if kind == "key" and df["label"].null_count():
        raise FormatError(message("cannot write unknown (null) labels to a BOSARIS Key",
                                  got=f"{df['label'].null_count()} null label(s)"))
    models, mi = _codes(df["model"])
    segs, si = _codes(df["segment"])
    shape = (models.len(), segs.len())
    size = dense_bytes(*shape, kind)
    what = (f"BOSARIS HDF5 {kind} `{shown}`: dense {shape[0]} models x {shape[1]} segments "
            f"matrix of {_fmt_bytes(size)} ({df.height / max(1, shape[0] * shape[1]):.2%} of "
            f"cells hold trials)")
    if max_dense_bytes is not None and size > max_dense_bytes:
        raise ScoreframeError(message(
            "dense matrix too large for a BOSARIS HDF5 file", where=Place(shown),
            expected=f"at most {_fmt_bytes(max_dense_bytes)} (max_dense_bytes)",
            got=f"{shape[0]} models x {shape[1]} segments = {_fmt_bytes(size)}",
            hint="BOSARIS loads these matrices whole; split the trials (e.g. by condition), "
                 "use Parquet, or raise max_dense_bytes (CLI: --max-dense-bytes)."))
    logger.info("writing %s", what)
    if size > _WARN_DENSE_BYTES:
        warnings.warn(f"{what}; a BOSARIS reader needs that much memory to load it",
                      ScoreframeWarning, stacklevel=2)
    cc = max(1, min(shape[1], 4096))
    chunks = (max(1, min(shape[0], _CHUNK_ELEMENTS // cc)), cc)
    opts = {"chunks": chunks, "compression": "gzip", "compression_opts": _COMPRESSION_LEVEL,
            "fillvalue": 0}
    with atomic_output(path, overwrite=overwrite) as out, h5py.File(out, "w") as f:
        if kind == "key":
            tm = f.create_dataset("trial_mask", shape=shape, dtype=np.int8, **opts)
            labels = np.where(df["label"].to_numpy(), 1, -1).astype(np.int8)
            _write_sparse([(tm, labels)], mi, si)
            f.create_dataset("file_format", data=np.array([b"2.0"]))
        elif kind == "ndx":
            tm = f.create_dataset("trial_mask", shape=shape, dtype=np.uint8, **opts)
            _write_sparse([(tm, np.ones(df.height, dtype=np.uint8))], mi, si)
        else:
            sc = f.create_dataset("scores", shape=shape, dtype=np.float64, **opts)
            sm = f.create_dataset("score_mask", shape=shape, dtype=np.uint8, **opts)
            _write_sparse([(sc, df["score"].to_numpy()),
                           (sm, np.ones(df.height, dtype=np.uint8))], mi, si)
        f.create_dataset("ID/row_ids", data=_name_array(models))
        f.create_dataset("ID/column_ids", data=_name_array(segs))
