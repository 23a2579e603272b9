"""``frames.as_lazy``: every accepted input gives the same trials, and the same evaluation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import scoreframe as sf
from scoreframe.errors import ScoreframeError
from scoreframe.frames.lazy import as_lazy, is_frame_like

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
ds = pytest.importorskip("pyarrow.dataset")


@pytest.fixture(scope="module")
def trials() -> pl.DataFrame:
    rng = np.random.default_rng(8)
    n = 400
    return pl.DataFrame({
        "model": [f"m{i % 40:02d}" for i in range(n)],
        "segment": [f"s{i:03d}" for i in range(n)],
        "score": np.r_[rng.normal(2, 1, 100), rng.normal(0, 1, n - 100)],
        "label": np.r_[np.ones(100, bool), np.zeros(n - 100, bool)],
        "gender": np.where(np.arange(n) % 3 == 0, "f", "m"),
    })


def _inputs(trials: pl.DataFrame, tmp_path) -> dict[str, object]:
    path = tmp_path / "t.parquet"
    trials.write_parquet(path)
    return {"polars": trials, "lazy": trials.lazy(), "path": str(path),
            "pandas": trials.to_pandas(), "arrow": trials.to_arrow(),
            "batch": trials.to_arrow().to_batches()[0], "dataset": ds.dataset(path)}


def test_every_input_gives_the_same_rows(trials, tmp_path):
    where = "gender = 'f' and score > 0"
    want = trials.filter((pl.col("gender") == "f") & (pl.col("score") > 0))
    for kind, data in _inputs(trials, tmp_path).items():
        assert is_frame_like(data) == (kind not in ("path", "dataset")), kind
        got = as_lazy(data, where=where).collect()
        assert got.select(want.columns).equals(want), kind


def test_every_input_gives_the_same_evaluation(trials, tmp_path):
    want = sf.evaluate(trials, by="gender", operating_points=0.1)
    assert want.height == 3  # f, m, pooled
    for kind, data in _inputs(trials, tmp_path).items():
        assert sf.evaluate(data, by="gender", operating_points=0.1).equals(want), kind


def test_pandas_named_index_becomes_columns(trials):
    frame = trials.to_pandas().set_index(["model", "segment"])
    got = as_lazy(frame).collect()
    assert {"model", "segment"} <= set(got.columns)
    assert got.sort("segment")["model"].to_list() == trials.sort("segment")["model"].to_list()
    plain = as_lazy(trials.to_pandas()).collect()  # a default RangeIndex adds no column
    assert plain.columns == trials.columns


def test_unsupported_input_is_named():
    with pytest.raises(ScoreframeError, match="unsupported trial data.*got list"):
        as_lazy([1.0, 2.0])


def test_data_layer_entry_points_take_pandas_and_pyarrow(tmp_path):
    pd = pytest.importorskip("pandas")
    import pyarrow as pa

    import scoreframe as sf
    from scoreframe.io.parquet import dataset_validated

    df = pd.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, -1.0],
                       "label": [True, False]})
    assert sf.validate_trials(df).collect().height == 2
    assert sf.align(df.drop(columns=["score"]), df.drop(columns=["label"])).collect().height == 2
    for i, table in enumerate((df, pa.Table.from_pandas(df))):
        sf.write_trials(table, tmp_path / f"t{i}.parquet")
        assert dataset_validated(tmp_path / f"t{i}.parquet")
        assert sf.evaluate(tmp_path / f"t{i}.parquet")["n_tar"][0] == 1
