"""Multiplicity draws against their previous implementation, bit for bit.

``kernels/bootstrap.py::poisson_multiplicities`` draws several replicate rows per numpy call
when there are few units; the twin below is the code it replaces, verbatim (one row per
call): the draws must be identical for few and many units, any replicate numbers, and
reach the table cells that need the binary search.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from scoreframe.kernels import bootstrap as kb

I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]


def _old_poisson_multiplicities(unit_hashes: U64, replicates: I64, *, key: np.uint64
                                ) -> NDArray[np.uint8]:
    """The previous row-by-row draws."""
    r = np.asarray(replicates, dtype=np.uint64)
    rk = kb.splitmix64(np.uint64(key) + r * kb._GOLDEN)
    h = np.asarray(unit_hashes, dtype=np.uint64)
    out = np.empty((r.shape[0], h.shape[0]), dtype=np.uint8)
    z = np.empty(h.shape[0], dtype=np.uint64)
    tmp = np.empty(h.shape[0], dtype=np.uint64)
    for i in range(r.shape[0]):  # row by row into two reused buffers: no large temporaries
        np.bitwise_xor(h, rk[i], out=z)
        kb._splitmix64_inplace(z, tmp)
        np.right_shift(z, kb._CELL, out=tmp)
        np.take(kb._TABLE, tmp, out=out[i])
        amb = np.flatnonzero(out[i] == 255)
        if amb.size:
            out[i, amb] = np.searchsorted(kb._THRESHOLDS, z[amb], side="right")
    return out


@pytest.mark.parametrize("units", [1, 3, 1000, 70_000])
def test_poisson_multiplicities_equal_the_row_by_row_draws(units) -> None:
    h = kb.splitmix64(np.arange(units, dtype=np.uint64) * np.uint64(977))
    rows = np.array([0, 1, 2, 7, 1000, 31, 5, 99_999, 3, 4], dtype=np.int64)
    key = kb.stream_key(3, "model")
    new = kb.poisson_multiplicities(h, rows, key=key)
    old = _old_poisson_multiplicities(h, rows, key=key)
    assert new.dtype == old.dtype == np.uint8
    np.testing.assert_array_equal(new, old)
    if units >= 1000:  # some draws fell in a table cell holding a threshold (binary search)
        rk = kb.splitmix64(np.uint64(key) + rows.astype(np.uint64) * kb._GOLDEN)
        u = kb.splitmix64(h[None, :] ^ rk[:, None])
        assert (kb._TABLE[u >> kb._CELL] == 255).any()
