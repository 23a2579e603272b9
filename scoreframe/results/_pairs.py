"""Two systems' rows of the same trials, paired in bounded memory: buckets of the trial ids.

The tandem t-DCF (:mod:`scoreframe.results.tandem`) and the paired comparison
(:mod:`scoreframe.results.compare`) both pair the rows of two systems on ``(model, segment)``.
Pairing holds a hash table of the trial ids, so out of core the trials are split into buckets
by a hash of their ids, each small enough for the engine's ``memory_limit``; the two rows of a
trial always land in the same bucket, so the buckets' pairs are the pairs of the whole table.
Each bucket is one query (a filtered scan, the pairing, what the caller makes of it), run by
Polars' streaming engine; on Dask the buckets run on the client, one after the other.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import polars as pl

from scoreframe.stats import Engine

__all__ = ["JOIN_BYTES_PER_ROW", "engine_for", "id_buckets", "id_bucket_parts", "row_count"]

#: Peak bytes per input row (of the two systems) while Polars joins them (the build side's
#: hash table with its string keys, the probe batches): ~245 B measured at 10^7 paired trials
#: with string ids (one bucket of 1.8e6 rows: 543 MB peak, ~100 MB of it the interpreter and
#: libraries), rounded up. Out of core, the rows are joined in buckets of the trial ids small
#: enough for the memory limit.
JOIN_BYTES_PER_ROW = 256


def engine_for(eng: Engine, rows: int, per_row: int) -> Engine:
    """``auto`` resolved from the two systems' row count (no pass over the pairing).

    >>> from scoreframe.stats import Engine
    >>> engine_for(Engine(memory_limit="1KiB"), 10, 256).kind
    'streaming'
    """
    if eng.kind != "auto":
        return eng
    return replace(eng, kind="memory" if rows * per_row <= eng.limit else "streaming")


def id_buckets(rows: int, memory_limit: int, *, bytes_per_row: int = JOIN_BYTES_PER_ROW) -> int:
    """How many buckets of the trial ids keep one bucket's pairing within ``memory_limit``.

    >>> id_buckets(10_000_000, 1 << 30), id_buckets(10, 1 << 30)
    (3, 1)
    """
    return max(1, -(-rows * bytes_per_row // max(memory_limit, 1)))


def id_bucket_parts(sel: pl.LazyFrame, ids: Sequence[str], buckets: int
                    ) -> Iterator[tuple[int, pl.LazyFrame]]:
    """``(bucket, rows of sel in it)`` for each bucket of a hash of the ``ids`` columns.

    One bucket is ``sel`` itself; rows with the same ids are always in the same bucket.
    """
    bucket = pl.struct(list(ids)).hash(seed=0) % buckets
    for b in range(buckets):
        yield b, sel if buckets == 1 else sel.filter(bucket == b)


def row_count(sel: pl.LazyFrame, systems: Sequence[str]) -> int:
    """Rows of ``systems`` in ``sel`` (a streaming count: what sizes the buckets)."""
    return int(sel.filter(pl.col("system").is_in(list(systems))).select(pl.len())
               .collect(engine="streaming").item())
