"""Cohort statistics from cohort score tables: the same bits whatever the engine (local
threads, Dask workers), the number of workers, the batch size, the file layout and the row
order; and equal to a brute-force numpy twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import scoreframe.norm._tables as tables
from scoreframe import Engine
from scoreframe.errors import ScoreframeError, UsageError
from scoreframe.kernels.cohort import moments_of_rows
from scoreframe.norm import Normalization, cohort_statistics

N_IDS, N_COHORT, K = 60, 700, 25


def _table(seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    ids = np.repeat([f"spk{i:03d}" for i in range(N_IDS)], N_COHORT)
    scores = rng.normal(0.05, 0.2, N_IDS * N_COHORT)
    scores[::97] *= 1e-9  # magnitudes far apart: the exact sums' slow paths too
    scores[::101] = np.round(scores[::101], 2)  # ties in the top k
    return pl.DataFrame({"enroll_id": ids,
                         "cohort_id": np.tile([f"c{j}" for j in range(N_COHORT)], N_IDS),
                         "score": scores})


def _write(df: pl.DataFrame, root: Path, *, n_files: int, seed: int | None,
           row_group: int) -> Path:
    """The table in ``n_files`` files, rows shuffled (``seed``) or grouped by id (None)."""
    if seed is not None:
        df = df[np.random.default_rng(seed).permutation(df.height)]
    root.mkdir()
    for i, part in enumerate(np.array_split(np.arange(df.height), n_files)):
        df[part].write_parquet(root / f"part-{i}.parquet", row_group_size=row_group)
    return root


def _twin(df: pl.DataFrame, ddof: int) -> pl.DataFrame:
    rows = []
    for (name,), grp in df.group_by("enroll_id"):
        x = grp["score"].to_numpy()
        top = -np.sort(-x)[:K]
        tm, ts = moments_of_rows(top[None, :], ddof=ddof)
        rows.append({"id": name, "mean": x.mean(), "std": x.std(ddof=ddof),
                     "top_mean": float(tm[0]), "top_std": float(ts[0])})
    return pl.DataFrame(rows).sort("id")


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    df = _table()
    tmp = tmp_path_factory.mktemp("cohort")
    return {"grouped-1": _write(df, tmp / "a", n_files=1, seed=None, row_group=5000),
            "shuffled-3": _write(df, tmp / "b", n_files=3, seed=1, row_group=3000),
            "shuffled-7": _write(df, tmp / "c", n_files=7, seed=2, row_group=50_000)}


def _stats(path: Path, *, engine: str = "auto", **kw: Any) -> pl.DataFrame:
    return cohort_statistics(method=Normalization(["znorm", f"znorm{K}"], ddof=1),
                             cohort_scores=(path, None), engine=Engine(engine, **kw)
                             ).sort("id", "top_k", nulls_last=False)


def test_local_engine_identical_whatever_workers_batches_files_order(
        layouts: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    ref = _stats(layouts["grouped-1"], workers=1)
    # against the twin: the whole cohort (numpy's pairwise sums: close, not the same bits)
    # and the top k (the same k values, the same row moments: the same bits)
    twin = _twin(_table(), ddof=1)
    whole = ref.filter(pl.col("top_k").is_null())
    top = ref.filter(pl.col("top_k") == K)
    np.testing.assert_allclose(whole["mean"], twin["mean"], rtol=1e-12, atol=1e-20)
    np.testing.assert_allclose(whole["std"], twin["std"], rtol=1e-12)
    np.testing.assert_array_equal(top["mean"], twin["top_mean"])
    np.testing.assert_array_equal(top["std"], twin["top_std"])
    assert whole["n"].to_list() == [N_COHORT] * N_IDS
    # small batches and files split into slices of row groups, several per worker
    monkeypatch.setattr(tables, "MIN_BATCH_ROWS", 1000)
    monkeypatch.setattr(tables, "MIN_PART_ROWS", 4000)
    for name, path in layouts.items():
        for workers in (1, 2, 3):
            for limit in ("2GB", "1MB"):  # 10^6-row batches; 1000-row batches
                got = _stats(path, workers=workers, memory_limit=limit)
                assert got.equals(ref), (name, workers, limit)


def test_dask_engine_identical(layouts: dict[str, Path],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask.distributed", reason="dask.distributed is not installed")
    ref = _stats(layouts["grouped-1"], workers=1)
    monkeypatch.setattr(tables, "MIN_BATCH_ROWS", 1000)
    monkeypatch.setattr(tables, "MIN_PART_ROWS", 4000)
    # a local cluster of 2 worker processes (one cluster: each takes seconds to start); the
    # tasks, their slices and batches are those of the local engine with 2 workers
    got = _stats(layouts["shuffled-7"], engine="dask", workers=2, memory_limit="1MB")
    assert got.equals(ref)


def test_engine_errors(layouts: dict[str, Path]) -> None:
    frame = pl.read_parquet(layouts["grouped-1"])
    with pytest.raises(UsageError, match="dask engine reads cohort score tables by path"):
        _stats(frame, engine="dask")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="dask engine reduces cohort score tables"):
        cohort_statistics(embeddings=((["a"], np.ones((1, 3))),) * 2,
                          cohort=(["c", "d"], np.eye(2, 3)), engine="dask")
    with pytest.raises(ScoreframeError, match="scheduler"):
        _stats(layouts["grouped-1"], scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(Exception, match="engine"):
        _stats(layouts["grouped-1"], engine="spark")
