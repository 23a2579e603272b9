"""Which replicates a reduction computes, and every unit's multiplicity in each of them.

numpy only (it travels in a :class:`~scoreframe.stats.summary.Request` to threads, processes
and Dask workers). A replicate is a re-weighting of the trials: each resampling unit (a trial,
a model, a segment, ...) gets an integer multiplicity, and a trial counts with the product of
its units' multiplicities. Multiplicities are counter-based: a pure function of the unit's id
hash, the replicate number and the seed
(:func:`scoreframe.kernels.bootstrap.poisson_multiplicities`: Poisson(1) by the inverse CDF of
``splitmix64``), so a task holding any score range of any file
draws the same ones as every other task, with no communication, whatever the engine, the
number of workers, the memory limit, the file split or the row order.

Rows ``0 .. bootstrap - 1`` are bootstrap replicates. With ``jackknife=True`` (for the BCa
acceleration) rows ``bootstrap + c * JACKKNIFE_BLOCKS + j`` follow: for resampling column
``c``, the units whose hash falls in block ``j`` get multiplicity 0 and every other unit 1
(a delete-a-block jackknife; blocks by id hash, so again no communication).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scoreframe.errors import ScoreframeError, message
from scoreframe.kernels import bootstrap as kb
from scoreframe.kernels.replicates import compiled_available

__all__ = ["JACKKNIFE_BLOCKS", "MAX_BOOTSTRAP", "TRIAL", "Replicates", "SortedUnits"]

U64 = NDArray[np.uint64]
I64 = NDArray[np.int64]
#: Resampling unit meaning "each trial".
TRIAL = "trial"
#: Delete-a-block jackknife for the BCa acceleration: this many blocks per resampling column.
JACKKNIFE_BLOCKS = 100
#: Largest number of bootstrap replicates (every replicate keeps its statistics until the end).
MAX_BOOTSTRAP = 100_000


@dataclass(frozen=True)
class Replicates:
    """The replicates a reduction computes besides the point statistics.

    Attributes
    ----------
    resample
        ``("trial",)`` or id columns resampled independently (``("model", "segment")``: the
        two-way bootstrap).
    seed
        Any integer.
    bootstrap
        Number of bootstrap replicates ``B`` (``1 .. MAX_BOOTSTRAP``).
    jackknife
        Also compute the delete-a-block jackknife rows (BCa intervals).
    ids
        For ``resample=("trial",)``: the columns whose values identify a trial (hashed as an
        ordered pair); empty means the trial's row position in the selection.

    Examples
    --------
    >>> r = Replicates(("model", "segment"), seed=1, bootstrap=10, jackknife=True)
    >>> r.n_rows, r.columns
    (210, ('model', 'segment'))
    """

    resample: tuple[str, ...] = (TRIAL,)
    seed: int = 0
    bootstrap: int = 1000
    jackknife: bool = False
    ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        b = self.bootstrap
        if (not isinstance(b, int | np.integer) or isinstance(b, bool)
                or not 1 <= int(b) <= MAX_BOOTSTRAP):
            raise ScoreframeError(message("bad `bootstrap`",
                                          expected=f"an integer from 1 to {MAX_BOOTSTRAP:,}",
                                          got=repr(b)))
        if not isinstance(self.seed, int | np.integer) or isinstance(self.seed, bool):
            raise ScoreframeError(message("bad `seed`", expected="an integer",
                                          got=repr(self.seed)))
        if (not self.resample or (TRIAL in self.resample and len(self.resample) > 1)
                or len(set(self.resample)) != len(self.resample)):
            raise ScoreframeError(message(
                "bad `resample`", expected='"trial" or id columns such as ["model", "segment"]',
                got=repr(list(self.resample))))

    @property
    def trial(self) -> bool:
        """True when each trial is its own unit."""
        return self.resample == (TRIAL,)

    @property
    def columns(self) -> tuple[str, ...]:
        """The unit columns (one hash per trial each): ``("trial",)`` or the id columns."""
        return self.resample

    @property
    def n_rows(self) -> int:
        """Bootstrap rows, then jackknife rows."""
        return self.bootstrap + (JACKKNIFE_BLOCKS * len(self.columns) if self.jackknife else 0)

    def multiplicities(self, column: int, hashes: U64, rows: I64) -> NDArray[np.uint8]:
        """Multiplicity of every unit (``hashes`` of unit column ``column``) in ``rows``.

        Shape ``(len(rows), len(hashes))``.

        >>> r = Replicates(("model",), seed=0, bootstrap=3, jackknife=True)
        >>> m = r.multiplicities(0, np.arange(5, dtype=np.uint64), np.array([0, 3, 4]))
        >>> m.shape, bool((m[1:] <= 1).all())
        ((3, 5), True)
        """
        rows = np.asarray(rows, dtype=np.int64)
        out = np.ones((rows.shape[0], hashes.shape[0]), dtype=np.uint8)
        boot = rows < self.bootstrap
        if boot.any():
            out[boot] = kb.poisson_multiplicities(
                hashes, rows[boot], key=kb.stream_key(self.seed, self.columns[column]),
                compiled=compiled_available())
        local = rows - self.bootstrap - column * JACKKNIFE_BLOCKS
        jack = ~boot & (local >= 0) & (local < JACKKNIFE_BLOCKS)
        if jack.any():
            key = kb.stream_key(self.seed, "jackknife:" + self.columns[column])
            block = (kb.splitmix64(hashes ^ key) % np.uint64(JACKKNIFE_BLOCKS)).astype(np.int64)
            out[jack] = block[None, :] != local[jack][:, None]
        return out

    def unit_multiplicities(self, column: int, hashes: U64, rows: I64) -> NDArray[np.uint8]:
        """:meth:`multiplicities` as ``(len(hashes), len(rows))``, C-contiguous.

        Bootstrap rows are drawn in that order (with numba); jackknife rows are transposed.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.shape[0] and int(rows.max()) < self.bootstrap:
            return kb.poisson_multiplicities(
                hashes, rows, key=kb.stream_key(self.seed, self.columns[column]),
                compiled=compiled_available(), by_unit=True)
        return np.ascontiguousarray(self.multiplicities(column, hashes, rows).T)

    def max_weight(self) -> int:
        """Largest possible trial weight (product of the largest multiplicity per column)."""
        return int(kb.MAX_POISSON ** len(self.columns))


@dataclass(frozen=True, eq=False)
class SortedUnits:
    """The unit hashes of one group's trials, aligned with its sorted scores.

    ``tar[c][i]`` is the hash of unit column ``c`` of the ``i``-th target of the group's
    :class:`~scoreframe.kernels.sorted_scores.SortedScores` (and ``non`` likewise).
    """

    tar: tuple[U64, ...]
    non: tuple[U64, ...]
