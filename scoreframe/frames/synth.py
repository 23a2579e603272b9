"""Synthetic evaluations: sparse trials, correlated systems, condition-dependent behaviour.

Frames layer (numpy for random numbers, polars for the columns). Deterministic given the seed
and the chunk size: chunk ``c`` draws its random numbers from ``default_rng([seed, c])``, so
chunks are independent of each other and are generated ahead of the consumer on a small pool
of threads (NumPy's random generators, NumPy arithmetic and Polars release the GIL), while the
consumer — typically :func:`scoreframe.io.write_trials` — writes the previous chunk. 10^8
trials are therefore written in bounded memory (a few chunks in flight) on every core.

Model of the data: every model (enrolled speaker) has the same number of trials against distinct
segments, the first ``target_rate`` fraction of them targets. ``gender`` is a model property,
``channel`` and ``duration`` segment properties, and ``condition`` (when ``n_conditions`` is
given) a model property. A latent llr-like variable with condition-dependent separation
(``d'`` from 3.2 down to about 1.2) is shared by all systems (so they are correlated), and each
system adds its own noise and an affine miscalibration that depends on channel and duration.

No string is built per trial in Python: identifier columns are formatted in bulk by Polars
(model and condition identifiers once per distinct value, then gathered by integer code) and
the low-cardinality columns are gathered from their few values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import polars as pl

from scoreframe._cores import usable_cores
from scoreframe.checks import check_positive_int, check_probability

__all__ = ["MAX_SYSTEMS", "SYNTH_COLUMNS", "synth_chunk", "synth_chunks"]

_SYS_QUALITY = (1.0, 0.85, 0.7, 0.9, 0.6)
_SYS_SCALE = (2.0, 0.7, 1.3, 1.0, 0.5)
_SYS_OFFSET = (-1.0, 0.5, 2.0, 0.0, -2.5)
_DUR = ("short", "medium", "long")
_DUR_DPRIME = np.array([1.0, 0.4, 0.0])
_DUR_OFFSET = np.array([-0.5, 0.0, 0.4])

#: How many systems (each with its own quality and miscalibration) the generator knows.
MAX_SYSTEMS = len(_SYS_QUALITY)
#: Columns of every chunk, in order (``condition`` only with ``n_conditions``).
SYNTH_COLUMNS = ("model", "segment", "system", "score", "label", "gender", "channel",
                 "duration", "condition")


def _layout(n_trials: int, target_rate: float, trials_per_model: int) -> tuple[int, int, int]:
    """Trials per model, number of segments, targets per model."""
    per_model = max(2, min(trials_per_model, n_trials))
    n_segments = max(per_model * 7, n_trials // 10) + 1
    n_tar_model = max(1, round(per_model * target_rate))
    return per_model, n_segments, n_tar_model


def _ids(prefix: str, values: pl.Series, width: int) -> pl.Series:
    """``prefix`` + zero-padded integers (at least ``width`` digits), formatted in bulk."""
    return pl.select(pl.format(prefix + "{}", values.cast(pl.String).str.zfill(width))
                     ).to_series()


def synth_chunk(n_trials: int, c: int, *, n_systems: int = 3, seed: int = 0,
                target_rate: float = 0.1, chunk_trials: int = 1_000_000,
                n_conditions: int | None = None, trials_per_model: int = 200) -> pl.DataFrame:
    """Chunk ``c`` of the synthetic evaluation (trials ``c*chunk_trials`` onwards).

    The arguments are those of :func:`synth_chunks` (checked there); chunks depend only on
    the arguments and ``c``, so they can be generated in any order, in parallel.

    Examples
    --------
    >>> synth_chunk(1000, 1, n_systems=2, chunk_trials=300).height  # trials 300..599
    600
    """
    per_model, n_segments, n_tar_model = _layout(n_trials, target_rate, trials_per_model)
    start = c * chunk_trials
    i = np.arange(start, min(start + chunk_trials, n_trials), dtype=np.int64)
    n = i.shape[0]
    rng = np.random.default_rng([seed, c])
    m = i // per_model
    j = i % per_model
    seg = (m * 7919 + j) % n_segments
    label = j < n_tar_model
    female = (m * 2654435761) % 7 < 4
    mic = (seg % 2) == 1
    dur = (seg // 2) % 3
    dprime = 3.2 - 0.8 * mic - _DUR_DPRIME[dur] - 0.2 * female
    z = np.where(label, dprime / 2, -dprime / 2)
    shared = rng.standard_normal(n)
    m0 = int(m[0])
    m_code = pl.Series((m - m0).astype(np.uint32))
    cols: dict[str, pl.Series] = {
        "model": _ids("m", pl.Series(np.arange(m0, int(m[-1]) + 1)), 6).gather(m_code),
        "segment": _ids("s", pl.Series(seg), 8),
        "label": pl.Series(label),
        "gender": pl.Series(["m", "f"]).gather(pl.Series(female.astype(np.uint32))),
        "channel": pl.Series(["tel", "mic"]).gather(pl.Series(mic.astype(np.uint32))),
        "duration": pl.Series(_DUR).gather(pl.Series(dur.astype(np.uint32))),
    }
    if n_conditions:
        names = _ids("c", pl.Series(np.arange(n_conditions)), 2)
        cols["condition"] = names.gather(pl.Series((m % n_conditions).astype(np.uint32)))
    base = pl.DataFrame(cols)
    a_mic = 1.0 + 0.3 * mic
    b_dur = _DUR_OFFSET[dur]
    frames = []
    for k in range(n_systems):  # systems, not trials
        x = _SYS_QUALITY[k] * z + np.sqrt(0.6) * shared + np.sqrt(0.4) * rng.standard_normal(n)
        score = (_SYS_SCALE[k] * a_mic) * x + (_SYS_OFFSET[k] + b_dur)
        frames.append(base.with_columns(pl.lit(f"sys{k + 1}").alias("system"),
                                        pl.Series("score", score)))
    return pl.concat(frames).select([c for c in SYNTH_COLUMNS if c != "condition"
                                     or n_conditions])


def synth_chunks(n_trials: int, *, n_systems: int = 3, seed: int = 0, target_rate: float = 0.1,
                 chunk_trials: int = 1_000_000, n_conditions: int | None = None,
                 trials_per_model: int = 200, threads: int | None = None
                 ) -> Iterator[pl.DataFrame]:
    """Yield the synthetic evaluation as DataFrame chunks (``n_systems`` rows per trial).

    Parameters
    ----------
    n_trials
        Number of trials (each scored by every system).
    n_systems
        Number of systems, 1 to :data:`MAX_SYSTEMS`.
    seed
        Seed (a non-negative integer); with ``chunk_trials`` it fixes the output.
    target_rate
        Fraction of target trials, in (0, 1).
    chunk_trials
        Trials per chunk (memory holds a few chunks at once).
    n_conditions
        Add a ``condition`` column (a model property) with this many values ``c00, c01, ...``.
    trials_per_model
        Trials of each model (at least 2 are used).
    threads
        Threads generating chunks ahead of the consumer (default: the number of cores, at
        most 4); the output does not depend on it.

    Returns
    -------
    Iterator[pl.DataFrame]
        Chunks with columns ``model, segment, system, score, label, gender, channel,
        duration`` (+ ``condition``); strings, ``score`` Float64, ``label`` Boolean.

    Raises
    ------
    ScoreframeError
        When an argument is out of range (checked before anything is generated).

    See Also
    --------
    scoreframe.write_trials : Write the chunks as a dataset.
    scoreframe.evaluate : Evaluate them.

    Examples
    --------
    >>> df = next(synth_chunks(1000, n_systems=2, seed=1))
    >>> df.height, sorted(df["system"].unique().to_list())
    (2000, ['sys1', 'sys2'])
    >>> synth_chunks(0)
    Traceback (most recent call last):
    ...
    scoreframe.errors.ScoreframeError: bad `n_trials`: expected an integer >= 1; got 0
    """
    n_trials = check_positive_int(n_trials, name="n_trials")
    n_systems = check_positive_int(n_systems, name="n_systems", maximum=MAX_SYSTEMS)
    seed = check_positive_int(seed, name="seed", minimum=0)
    target_rate = check_probability(target_rate, name="target_rate")
    chunk_trials = check_positive_int(chunk_trials, name="chunk_trials")
    if n_conditions is not None:
        n_conditions = check_positive_int(n_conditions, name="n_conditions")
    trials_per_model = check_positive_int(trials_per_model, name="trials_per_model")
    if threads is None:
        threads = min(4, usable_cores())
    threads = check_positive_int(threads, name="threads")
    n_chunks = -(-n_trials // chunk_trials)
    kwargs = {"n_systems": n_systems, "seed": seed, "target_rate": target_rate,
              "chunk_trials": chunk_trials, "n_conditions": n_conditions,
              "trials_per_model": trials_per_model}
    return _generate(n_trials, n_chunks, threads, kwargs)


def _generate(n_trials: int, n_chunks: int, threads: int,
              kwargs: dict[str, Any]) -> Iterator[pl.DataFrame]:
    """Chunks in order, ``threads`` of them generated ahead on a thread pool."""
    if threads == 1 or n_chunks == 1:
        for c in range(n_chunks):
            yield synth_chunk(n_trials, c, **kwargs)
        return
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="synth")
    pending: deque[Future[pl.DataFrame]] = deque()
    try:
        nxt = 0
        while nxt < n_chunks or pending:
            while nxt < n_chunks and len(pending) < threads:
                pending.append(pool.submit(synth_chunk, n_trials, nxt, **kwargs))
                nxt += 1
            yield pending.popleft().result()
    finally:  # also when the consumer stops early or fails
        pool.shutdown(wait=True, cancel_futures=True)
