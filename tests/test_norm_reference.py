"""scoreframe's s-norm and AS-norm against WeSpeaker's own `score_norm.py` (see
tests/data/norm_reference/README.md for how the reference files were made)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.norm import Normalization, cohort_statistics, normalize

DATA = Path(__file__).parent / "data" / "norm_reference"
#: WeSpeaker writes normalized scores with 5 decimals (half a unit: 5e-6) and computes in
#: float32 (relative 6e-8 on scores, ~1e-6 once divided by a cohort std of ~0.05-0.1).
ATOL_SCORE = 2e-5
#: Cohort means are written with 4 decimals (5e-5) from float32 arithmetic.
ATOL_MEAN = 6e-5


def _read(name: str) -> pl.DataFrame:
    cols = ["model", "segment", "score", "label", "enroll_mag", "test_mag", "enroll_mean",
            "test_mean"]
    df = pl.read_csv(DATA / name, separator=" ", has_header=False)
    return df.rename(dict(zip(df.columns, cols[:df.width], strict=True)))


@pytest.mark.parametrize(("method", "wespeaker_file"), [("snorm", "trials.snorm.score"),
                                                         ("asnorm100", "trials.asnorm.score")])
def test_matches_wespeaker_score_norm(method: str, wespeaker_file: str) -> None:
    raw = _read("trials.score")  # WeSpeaker's cosine scores (5 decimals), as its norm reads
    ref = _read(wespeaker_file)
    assert ref.height == raw.height == 477
    mean_vec = np.load(DATA / "mean_vec.npy")
    out = normalize(raw, method=Normalization(method, convention="wespeaker"),
                    embeddings=(DATA / "embeddings.npz", DATA / "embeddings.npz"),
                    cohort=DATA / "cohort.npz", center=mean_vec).collect()
    col = "score_" + method
    got = out[col].to_numpy()
    want = ref["score"].to_numpy()
    assert np.abs(got - want).max() <= ATOL_SCORE
    # the cohort means WeSpeaker prints (4 decimals) match the statistics table
    stats = cohort_statistics(method=method, embeddings=(DATA / "embeddings.npz",) * 2,
                              cohort=DATA / "cohort.npz", center=mean_vec)
    enroll = stats.filter(pl.col("side") == "enroll").select("id", "mean")
    joined = ref.join(enroll, left_on="model", right_on="id")
    assert joined.height == ref.height
    assert np.abs(joined["mean"].to_numpy() - joined["enroll_mean"].to_numpy()).max() <= ATOL_MEAN


def test_our_cosine_scores_match_wespeaker_score_py() -> None:
    raw = _read("trials.score")
    out = normalize(raw.drop("score"), method="snorm",
                    embeddings=(DATA / "embeddings.npz", DATA / "embeddings.npz"),
                    cohort=DATA / "cohort.npz", center=np.load(DATA / "mean_vec.npy")).collect()
    # 5 decimals in WeSpeaker's file; float32 embeddings on its side
    assert np.abs(out["score"].to_numpy() - raw["score"].to_numpy()).max() <= 6e-6
