"""The synthetic evaluation generator: determinism, parallel chunks, population values, arguments.

The population values come from the generator's model (scoreframe/synth.py docstring): given the
label and a (gender, channel, duration) cell, the latent variable of system k is
``q_k * z + sqrt(0.6) * shared + sqrt(0.4) * noise_k`` with ``z = +-d'/2`` and
``d' = 3.2 - 0.8 [mic] - (1.0, 0.4, 0.0)[duration] - 0.2 [female]``, so it has unit variance,
separation ``q_k d'``, and two systems correlate with coefficient 0.6; the score is the affine
map ``a x + b`` with ``a = scale_k (1 + 0.3 [mic])`` and ``b = offset_k + (-0.5, 0, 0.4)[dur]``.
"""

from __future__ import annotations

import threading

import numpy as np
import polars as pl
import pytest
from scipy.stats import norm

from scoreframe import synth_chunks
from scoreframe.errors import ScoreframeError
from scoreframe.frames.synth import MAX_SYSTEMS, synth_chunk

QUALITY = (1.0, 0.85, 0.7, 0.9, 0.6)
SCALE = (2.0, 0.7, 1.3, 1.0, 0.5)
OFFSET = (-1.0, 0.5, 2.0, 0.0, -2.5)
DUR = {"short": (1.0, -0.5), "medium": (0.4, 0.0), "long": (0.0, 0.4)}  # d' drop, offset


@pytest.fixture(scope="module")
def big() -> pl.DataFrame:
    return pl.concat(synth_chunks(400_000, n_systems=3, seed=21, chunk_trials=90_000))


def test_columns_dtypes_and_shape():
    df = pl.concat(synth_chunks(3_000, n_systems=2, n_conditions=4, chunk_trials=1_000))
    assert df.columns == ["model", "segment", "system", "score", "label", "gender", "channel",
                          "duration", "condition"]
    assert df.schema["score"] == pl.Float64 and df.schema["label"] == pl.Boolean
    assert all(df.schema[c] == pl.String for c in ("model", "segment", "system", "gender",
                                                    "channel", "duration", "condition"))
    assert df.height == 6_000
    assert set(df["condition"]) == {"c00", "c01", "c02", "c03"}
    assert set(df["duration"]) == set(DUR) and set(df["channel"]) == {"tel", "mic"}
    assert df.select("model", "segment", "system").is_unique().all()
    assert df["score"].is_finite().all() and df.null_count().sum_horizontal().item() == 0
    assert "condition" not in next(synth_chunks(10)).columns


def test_deterministic_and_independent_of_threads():
    kw = {"n_systems": 3, "seed": 9, "chunk_trials": 2_500, "n_conditions": 5}
    one = pl.concat(synth_chunks(20_000, threads=1, **kw))
    many = pl.concat(synth_chunks(20_000, threads=3, **kw))
    assert one.equals(many)
    other = pl.concat(synth_chunks(20_000, threads=2, **{**kw, "seed": 10}))
    assert not one.equals(other)
    assert one.select("model", "segment", "label").equals(
        other.select("model", "segment", "label"))  # the design does not depend on the seed
    # chunk c can be generated alone (what lets the chunks be made in parallel)
    third = synth_chunk(20_000, 3, **kw)
    assert third.equals(one.filter(pl.int_range(pl.len()).over("system") // 2_500 == 3))


def test_models_and_targets():
    df = pl.concat(synth_chunks(10_000, n_systems=1, target_rate=0.25, trials_per_model=40))
    per_model = df.group_by("model").agg(n=pl.len(), tar=pl.col("label").sum(),
                                         g=pl.col("gender").n_unique())
    assert (per_model["n"] == 40).all() and (per_model["tar"] == 10).all()
    assert (per_model["g"] == 1).all()  # gender is a model property
    assert df.select("model", "segment").is_unique().all()


@pytest.mark.parametrize("k", [0, 2])
def test_population_separation_and_calibration(big, k):
    sys_df = big.filter(system=f"sys{k + 1}")
    checked = 0
    for (gender, channel, dur), cell in sys_df.group_by("gender", "channel", "duration"):
        mic = channel == "mic"
        dprime = QUALITY[k] * (3.2 - 0.8 * mic - DUR[dur][0] - 0.2 * (gender == "f"))
        a = SCALE[k] * (1 + 0.3 * mic)
        b = OFFSET[k] + DUR[dur][1]
        tar = cell.filter(label=True)["score"].to_numpy()
        non = cell.filter(label=False)["score"].to_numpy()
        assert tar.size > 1_000 and non.size > 10_000
        # means a*(+-d'/2) + b, standard deviation a; tolerances ~6 standard errors
        assert np.mean(tar) == pytest.approx(a * dprime / 2 + b, abs=6 * a / np.sqrt(tar.size))
        assert np.mean(non) == pytest.approx(-a * dprime / 2 + b, abs=6 * a / np.sqrt(non.size))
        assert np.std(non) == pytest.approx(a, rel=0.03)
        # equal-variance Gaussian: EER = Phi(-d'/2) at the midpoint threshold
        thr = b
        eer = (np.mean(tar < thr) + np.mean(non >= thr)) / 2
        assert eer == pytest.approx(norm.cdf(-dprime / 2), abs=0.02)
        checked += 1
    assert checked == 12


def test_systems_correlated_through_shared_latent(big):
    cell = big.filter(label=False, gender="m", channel="tel", duration="long")
    s1 = cell.filter(system="sys1")["score"].to_numpy()
    s2 = cell.filter(system="sys2")["score"].to_numpy()
    assert np.corrcoef(s1, s2)[0, 1] == pytest.approx(0.6, abs=0.03)


def test_stopping_early_leaves_no_threads():
    before = threading.active_count()
    chunks = synth_chunks(50_000, chunk_trials=1_000, threads=2)
    next(chunks)
    chunks.close()
    assert threading.active_count() == before


@pytest.mark.parametrize("kwargs,name", [
    ({"n_trials": 0}, "n_trials"),
    ({"n_trials": -5}, "n_trials"),
    ({"n_trials": 1.5}, "n_trials"),
    ({"n_trials": True}, "n_trials"),
    ({"n_systems": 0}, "n_systems"),
    ({"n_systems": MAX_SYSTEMS + 1}, "n_systems"),
    ({"chunk_trials": 0}, "chunk_trials"),
    ({"target_rate": 0.0}, "target_rate"),
    ({"target_rate": 1.0}, "target_rate"),
    ({"target_rate": float("nan")}, "target_rate"),
    ({"seed": -1}, "seed"),
    ({"n_conditions": 0}, "n_conditions"),
    ({"trials_per_model": 0}, "trials_per_model"),
    ({"threads": 0}, "threads"),
])
def test_arguments_out_of_range(kwargs, name):
    kw = {"n_trials": 100, **kwargs}
    n = kw.pop("n_trials")
    with pytest.raises(ScoreframeError, match=f"bad `{name}`") as e:
        synth_chunks(n, **kw)  # raised at the call, before any chunk is generated
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("args,name", [
    (["--trials", "0"], "argument --trials:"),
    (["--systems", "9"], "argument --systems:"),
    (["--chunk-trials", "0"], "argument --chunk-trials:"),
    (["--target-rate", "1.5"], "argument --target-rate:"),
])
def test_cli_arguments_out_of_range(tmp_path, capsys, args, name):
    from scoreframe.cli import main

    out = tmp_path / "ds"
    assert main(["synth", str(out), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert name in err and "\n" not in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
