"""Synthetic evaluations: sparse trials, correlated systems, condition-dependent behaviour.

Frames layer (numpy for random numbers, polars for the columns). Deterministic given the seed;
generated chunk by chunk (each chunk seeded by ``(seed, chunk index)``) so that 10^8 trials
are written in bounded memory by :func:`scoreframe.io.write_trials`.

Model of the data: every model (enrolled speaker) has the same number of trials against distinct
segments, the first ``target_rate`` fraction of them targets. ``gender`` is a model property,
``channel`` and ``duration`` segment properties, and ``condition`` (when ``n_conditions`` is
given) a model property. A latent llr-like variable with condition-dependent separation
(``d'`` from 3.2 down to about 1.2) is shared by all systems (so they are correlated), and each
system adds its own noise and an affine miscalibration that depends on channel and duration.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

__all__ = ["synth_chunks"]

_SYS_QUALITY = (1.0, 0.85, 0.7, 0.9, 0.6)
_SYS_SCALE = (2.0, 0.7, 1.3, 1.0, 0.5)
_SYS_OFFSET = (-1.0, 0.5, 2.0, 0.0, -2.5)
_DUR = ("short", "medium", "long")


def synth_chunks(n_trials: int, *, n_systems: int = 3, seed: int = 0, target_rate: float = 0.1,
                 chunk_trials: int = 1_000_000, n_conditions: int | None = None,
                 trials_per_model: int = 200) -> Iterator[pl.DataFrame]:
    """Yield the synthetic evaluation as DataFrame chunks (``n_systems`` rows per trial).

    Columns: ``model, segment, system, score, label, gender, channel, duration``
    (+ ``condition``).

    Examples
    --------
    >>> df = next(synth_chunks(1000, n_systems=2, seed=1))
    >>> df.height, sorted(df["system"].unique().to_list())
    (2000, ['sys1', 'sys2'])
    """
    if n_trials < 1 or not 1 <= n_systems <= len(_SYS_QUALITY) or not 0 < target_rate < 1:
        raise ValueError("need n_trials >= 1, 1 <= n_systems <= 5 and 0 < target_rate < 1")
    per_model = max(2, min(trials_per_model, n_trials))
    n_segments = max(per_model * 7, n_trials // 10) + 1
    n_tar_model = max(1, round(per_model * target_rate))
    for c, start in enumerate(range(0, n_trials, chunk_trials)):
        i = np.arange(start, min(start + chunk_trials, n_trials), dtype=np.int64)
        rng = np.random.default_rng([seed, c])
        m = i // per_model
        j = i % per_model
        seg = (m * 7919 + j) % n_segments
        label = j < n_tar_model
        female = (m * 2654435761) % 7 < 4
        mic = (seg % 2) == 1
        dur = (seg // 2) % 3
        dprime = 3.2 - 0.8 * mic - np.array([1.0, 0.4, 0.0])[dur] - 0.2 * female
        z = np.where(label, dprime / 2, -dprime / 2)
        shared = rng.standard_normal(i.shape[0])
        cols = {
            "mi": m, "si": seg, "label": label,
            "gender": np.where(female, "f", "m"),
            "channel": np.where(mic, "mic", "tel"),
            "duration": np.array(_DUR)[dur],
        }
        if n_conditions:
            cols["condition"] = np.char.add("c", np.char.zfill((m % n_conditions).astype(str),
                                                                 2))
        base = pl.DataFrame(cols)
        frames = []
        for k in range(n_systems):
            x = _SYS_QUALITY[k] * z + np.sqrt(0.6) * shared + np.sqrt(0.4) * rng.standard_normal(
                i.shape[0])
            a = _SYS_SCALE[k] * (1.0 + 0.3 * mic)
            b = _SYS_OFFSET[k] + np.array([-0.5, 0.0, 0.4])[dur]
            frames.append(base.with_columns(pl.lit(f"sys{k + 1}").alias("system"),
                                            pl.Series("score", a * x + b)))
        out = pl.concat(frames).select(
            pl.format("m{}", pl.col("mi").cast(pl.String).str.zfill(6)).alias("model"),
            pl.format("s{}", pl.col("si").cast(pl.String).str.zfill(8)).alias("segment"),
            "system", "score", "label", "gender", "channel", "duration",
            *(["condition"] if n_conditions else []))
        yield out
