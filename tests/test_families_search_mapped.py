"""The ELUB grid's bisection through the clipped log10 map (stats._families.search_mapped)."""

from __future__ import annotations

import numpy as np

from scoreframe.stats._families import search_mapped


def test_search_mapped_is_searchsorted_of_the_mapped_array() -> None:
    """The bisection through ``f`` finds the positions of ``searchsorted(f(x), v)``."""
    rng = np.random.default_rng(3)

    def f(y: np.ndarray) -> np.ndarray:
        return np.clip(y / np.log(10), -9.0, 9.0)

    for n in (0, 1, 2, 7, 100, 1000):
        x = np.sort(np.concatenate([np.round(rng.normal(0, 20, n), 1)[: max(n - 2, 0)],
                                    [-np.inf, np.inf][: min(n, 2)]]))
        fx = f(x)
        v = np.concatenate([fx, np.nextafter(fx, np.inf), np.nextafter(fx, -np.inf),
                            np.linspace(-10, 10, 41)])
        for side in ("left", "right"):
            assert np.array_equal(search_mapped(x, v, f, side=side),
                                  np.searchsorted(fx, v, side=side))
