"""BOSARIS Key / Ndx / Scores in HDF5 (layout: tests/data/bosaris/HDF5_LAYOUT.md).

I/O layer. Dense ``(n_models, n_segments)`` masks are converted to long trial tables with
numpy index arrays and Arrow string gathers: no Python object is built per trial.

* Key: ``/trial_mask`` int8 (+1 target, -1 non-target, 0 no trial), ``/file_format`` ``"2.0"``,
  ``/ID/row_ids`` (models), ``/ID/column_ids`` (segments). The old layout with
  ``/target_mask`` and ``/nontarget_mask`` is read too.
* Ndx: ``/trial_mask`` uint8 (1 = trial).
* Scores: ``/scores`` float64 and ``/score_mask`` uint8.

Name datasets may be 1-D ``(n,)``, ``(n, 1)`` or ``(1, n)``, fixed- or variable-length strings.
Writers write 1-D fixed-length (null-padded) byte strings, as BOSARIS-compatible Python tools do.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import polars as pl

from scoreframe.errors import FormatError, message
from scoreframe.io.atomic import atomic_output
from scoreframe.schema import Kind, validate_trials

__all__ = ["read_bosaris_hdf5", "write_bosaris_hdf5"]


def _names(f: h5py.File, name: str, where: str) -> pl.Series:
    if name not in f:
        raise FormatError(message(f"missing dataset `/{name}`", where=where,
                                  expected="a BOSARIS Key, Ndx or Scores HDF5 file"))
    ds = f[name]
    raw = ds[()]
    arr = np.asarray(raw)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    elif arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise FormatError(message(f"dataset `/{name}` has the wrong shape", where=where,
                                  expected="(n,), (n, 1) or (1, n)", got=str(arr.shape)))
    if arr.dtype.kind == "S":
        out = np.char.decode(np.char.rstrip(arr, b"\x00"), "utf-8")
    elif arr.dtype.kind == "O":
        out = np.array([v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr])
    elif arr.dtype.kind == "U":
        out = arr
    else:
        raise FormatError(message(f"dataset `/{name}` does not hold strings", where=where,
                                  got=str(arr.dtype)))
    return pl.Series(name.rsplit("/", 1)[-1], out, dtype=pl.String)


def _mask(f: h5py.File, name: str, shape: tuple[int, int], where: str) -> np.ndarray:
    if name not in f:
        raise FormatError(message(f"missing dataset `/{name}`", where=where))
    arr = np.asarray(f[name][()])
    if arr.shape != shape:
        raise FormatError(message(f"dataset `/{name}` does not match the name lists",
                                  where=where,
                                  expected=f"shape {shape} (models x segments)",
                                  got=f"shape {arr.shape}"))
    return arr


def _long(models: pl.Series, segs: pl.Series, mask: np.ndarray) -> pl.DataFrame:
    i, j = np.nonzero(mask)
    return pl.DataFrame({"model": models.gather(i), "segment": segs.gather(j)})


def read_bosaris_hdf5(path: str | Path, kind: Kind | None = None) -> pl.DataFrame:
    """Read a BOSARIS HDF5 Key, Ndx or Scores file as a long trial table.

    Parameters
    ----------
    path
        The ``.h5`` file.
    kind
        ``"key"``, ``"ndx"`` or ``"scores"``; detected from the datasets when omitted
        (``/scores`` means scores, ``/target_mask`` or an int8 ``/trial_mask`` means key).

    Returns
    -------
    polars.DataFrame
        ``model, segment, label`` (key), ``model, segment`` (ndx) or ``model, segment, score``
        (scores), in model-major order of the stored matrices.
    """
    path = Path(path)
    where = f"`{path}`"
    if not path.is_file():
        raise FormatError(message(f"no such file `{path}`"))
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise FormatError(message("cannot open HDF5 file (truncated or not HDF5?)", where=where,
                                  got=str(exc).splitlines()[0])) from None
    try:
        with f:
            models = _names(f, "ID/row_ids", where)
            segs = _names(f, "ID/column_ids", where)
            shape = (models.len(), segs.len())
            if kind is None:
                if "scores" in f:
                    kind = "scores"
                elif "target_mask" in f or ("trial_mask" in f
                                            and f["trial_mask"].dtype.kind == "i"):
                    kind = "key"
                else:
                    kind = "ndx"
            if kind == "key":
                if "target_mask" in f:
                    tar = _mask(f, "target_mask", shape, where).astype(bool)
                    non = _mask(f, "nontarget_mask", shape, where).astype(bool)
                else:
                    tm = _mask(f, "trial_mask", shape, where).astype(np.int16)
                    tar, non = tm > 0, tm < 0
                if (tar & non).any():
                    raise FormatError(message("a trial is both target and non-target",
                                              where=where, got=f"{int((tar & non).sum())}"))
                df = _long(models, segs, tar | non)
                i, j = np.nonzero(tar | non)
                df = df.with_columns(pl.Series("label", tar[i, j]))
            elif kind == "ndx":
                df = _long(models, segs, _mask(f, "trial_mask", shape, where).astype(bool))
            elif kind == "scores":
                mask = _mask(f, "score_mask", shape, where).astype(bool)
                scores = _mask(f, "scores", shape, where)
                df = _long(models, segs, mask)
                i, j = np.nonzero(mask)
                df = df.with_columns(pl.Series("score", scores[i, j].astype(np.float64)))
            else:
                raise FormatError(message("unknown BOSARIS kind", expected="key | ndx | scores",
                                          got=repr(kind)))
    except (OSError, KeyError, RuntimeError) as exc:
        raise FormatError(message("cannot read HDF5 data (truncated file?)", where=where,
                                  got=str(exc).splitlines()[0])) from None
    return validate_trials(df, kind=kind, where=where).collect()


def _index(col: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    names = col.unique().sort()
    idx = col.cast(pl.Enum(names.to_list())).to_physical().to_numpy().astype(np.int64)
    return np.asarray(names.to_list(), dtype=object), idx


def write_bosaris_hdf5(data: pl.DataFrame, path: str | Path, kind: Kind, *,
                       overwrite: bool = False) -> None:
    """Write a long table as a BOSARIS HDF5 Key, Ndx or Scores file (atomically).

    Model and segment names are sorted, as BOSARIS ``read_txt`` does.
    """
    df = data
    if kind not in ("key", "ndx", "scores"):
        raise FormatError(message("unknown BOSARIS kind", expected="key | ndx | scores",
                                  got=repr(kind)))
    if kind == "key" and df["label"].null_count():
        raise FormatError(message("cannot write unknown (null) labels to a BOSARIS Key",
                                  got=f"{df['label'].null_count()} null label(s)"))
    models, mi = _index(df["model"])
    segs, si = _index(df["segment"])
    shape = (len(models), len(segs))
    with atomic_output(path, overwrite=overwrite) as out, h5py.File(out, "w") as f:
        if kind == "key":
            tm = np.zeros(shape, dtype=np.int8)
            tm[mi, si] = np.where(df["label"].to_numpy(), 1, -1).astype(np.int8)
            f.create_dataset("trial_mask", data=tm)
            f.create_dataset("file_format", data=np.array([b"2.0"]))
        elif kind == "ndx":
            tm = np.zeros(shape, dtype=np.uint8)
            tm[mi, si] = 1
            f.create_dataset("trial_mask", data=tm)
        else:
            sc = np.zeros(shape, dtype=np.float64)
            sc[mi, si] = df["score"].to_numpy()
            sm = np.zeros(shape, dtype=np.uint8)
            sm[mi, si] = 1
            f.create_dataset("scores", data=sc)
            f.create_dataset("score_mask", data=sm)
        f.create_dataset("ID/row_ids", data=np.array([m.encode() for m in models], dtype="S"))
        f.create_dataset("ID/column_ids", data=np.array([s.encode() for s in segs], dtype="S"))
