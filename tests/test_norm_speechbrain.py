"""scoreframe's z-, t- and s-norm under ``convention="speechbrain"`` against SpeechBrain's own
recipe code (``get_verification_scores`` of its VoxCeleb cosine recipe; see
tests/data/speechbrain_norm/README.md for how the reference was made)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.norm import Normalization, normalize

DATA = Path(__file__).parent / "data" / "speechbrain_norm"
EMB = (DATA / "enroll.npz", DATA / "test.npz")
#: SpeechBrain computes in float32 (the embeddings are float32): a cosine carries an error of
#: a few float32 ulps (~1e-7; observed <= 8.0e-8 against scoreframe's float64). A normalized
#: score divides differences of such scores by a cohort std (down to ~0.03 for a top-50
#: cohort) and reaches |score| ~ 10, so its float32 error is ~1e-6 (observed <= 2.6e-6).
ATOL_RAW = 1e-6
ATOL_NORM = 1e-5
#: the recipe's settings (column of scores.csv) -> scoreframe's method and top_k
CASES = [("znorm", "znorm", None), ("tnorm", "tnorm", None), ("snorm", "snorm", None),
         ("znorm50", "znorm", 50), ("tnorm50", "tnorm", 50), ("snorm50", "snorm", 50),
         ("snorm300", "snorm", 300)]


@pytest.fixture(scope="module")
def reference() -> pl.DataFrame:
    return pl.read_csv(DATA / "scores.csv")


def test_raw_cosine_scores_match(reference: pl.DataFrame) -> None:
    trials = reference.select("model", "segment")
    out = normalize(trials, method=Normalization("snorm", convention="speechbrain"),
                    embeddings=EMB, cohort=DATA / "cohort.npz").collect()
    assert np.abs(out["score"].to_numpy() - reference["raw"].to_numpy()).max() <= ATOL_RAW


@pytest.mark.parametrize(("column", "method", "top_k"), CASES)
def test_matches_speechbrain_recipe(reference: pl.DataFrame, column: str, method: str,
                                    top_k: int | None) -> None:
    trials = reference.select("model", "segment", pl.col("raw").alias("score"))
    norm = Normalization(method, top_k=top_k, convention="speechbrain")
    out = normalize(trials, method=norm, embeddings=EMB, cohort=DATA / "cohort.npz").collect()
    got = out[f"score_{method}{top_k or ''}"].to_numpy()
    want = reference[column].to_numpy()
    assert np.abs(got - want).max() <= ATOL_NORM
    # the same scores from the trials' own cosine (computed by scoreframe in float64)
    mine = normalize(trials.drop("score"), method=norm, embeddings=EMB,
                     cohort=DATA / "cohort.npz").collect()
    assert np.abs(mine[f"score_{method}{top_k or ''}"].to_numpy() - want).max() <= ATOL_NORM


def test_convention_matters(reference: pl.DataFrame) -> None:
    """The WeSpeaker convention (population std) is measurably off SpeechBrain's numbers."""
    trials = reference.select("model", "segment", pl.col("raw").alias("score"))
    out = normalize(trials, method=Normalization("snorm", convention="wespeaker"),
                    embeddings=EMB, cohort=DATA / "cohort.npz").collect()
    assert np.abs(out["score_snorm"].to_numpy() - reference["snorm"].to_numpy()).max() > 1e-3
