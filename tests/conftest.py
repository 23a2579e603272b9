from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"
# Fixture data and the scripts that made them with other toolkits (run in their own
# environments, see each README): never collected, not even by --doctest-modules.
collect_ignore_glob = ["data/*"]
BOSARIS = DATA / "bosaris"
BINARY_CASES = ["gauss_small", "ties", "tiny", "tiny_interleaved", "all_equal", "separable"]


def load_case(name: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """A BOSARIS reference case: inputs and the toolkit's outputs (tests/data/bosaris/README.md)."""
    d = BOSARIS / name
    tar = np.loadtxt(d / "tar.txt", ndmin=1)
    non = np.loadtxt(d / "non.txt", ndmin=1)
    expected = json.loads((d / "expected.json").read_text())
    return tar, non, expected


def assert_close(actual, expected, *, rtol: float = 1e-12, atol: float = 1e-15, what: str = ""):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                               rtol=rtol, atol=atol, err_msg=what)


@pytest.fixture(params=BINARY_CASES)
def case(request):
    return (request.param, *load_case(request.param))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden Vega-Lite specs in tests/data/golden")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


def id_hashes(values: list[str]) -> dict[str, int]:
    """Hashes of id strings built independently of polars/arrow: Python bytes and offsets."""
    from scoreframe.kernels import bootstrap as kb

    raw = [v.encode() for v in values]
    offsets = np.concatenate(([0], np.cumsum([len(b) for b in raw]))).astype(np.int64)
    data = np.frombuffer(b"".join(raw), dtype=np.uint8)
    return dict(zip(values, kb.hash_strings(data, offsets).tolist(), strict=True))


def row_weights(df, resample: tuple[str, ...], rows: np.ndarray, seed: int) -> np.ndarray:
    """Per-row bootstrap multiplicities ``(len(rows), df.height)`` from the documented recipe,
    computed directly (the twin of the statistics layer's replicate weights)."""
    from scoreframe.kernels import bootstrap as kb

    if resample == ("trial",):
        hm, hs = id_hashes(df["model"].to_list()), id_hashes(df["segment"].to_list())
        h = kb.combine_hashes(np.array([hm[v] for v in df["model"]], dtype=np.uint64),
                              np.array([hs[v] for v in df["segment"]], dtype=np.uint64))
        return kb.poisson_multiplicities(h, rows, key=kb.stream_key(seed, "trial")).astype(int)
    w = np.ones((rows.shape[0], df.height), dtype=int)
    for c in resample:
        hc = id_hashes(df[c].to_list())
        h = np.array([hc[v] for v in df[c]], dtype=np.uint64)
        w *= kb.poisson_multiplicities(h, rows, key=kb.stream_key(seed, c)).astype(int)
    return w

