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
