"""On Dask only statistics travel (issue 21 item 5): task results do not follow the trials.

Two datasets of 20,000 and 200,000 trials are evaluated on a local Dask cluster with a memory
limit proportional to their size, so both have the same number of score ranges and a range of
the second holds ten times the trials. Every task result is pickled as it reaches the client:
a reduce task's result (the statistics of its range) must stay far below both the growth of
its trials and the size of their scores, and the plan's score sample is capped by
``SAMPLE_SIZE`` whatever the data. Needs ``scoreframe[dask]``.
"""

from __future__ import annotations

import pickle
from collections import defaultdict

import numpy as np
import polars as pl
import pytest

pytest.importorskip("dask.distributed",
                    reason="dask.distributed is not installed (pip install 'scoreframe[dask]')")

import scoreframe as sf  # noqa: E402
from scoreframe.stats import outofcore  # noqa: E402
from scoreframe.stats.dask import DaskExecutor  # noqa: E402
from scoreframe.stats.outofcore import SAMPLE_SIZE  # noqa: E402

SIZES = (20_000, 200_000)
FAMILIES = {"binary": {}, "biometric": {"metrics": [sf.Biometric(fmr=[0.01])]},
            "bootstrap": {"intervals": sf.Intervals(bootstrap=10, resample=["model"])}}


@pytest.fixture(scope="module")
def cluster():
    with DaskExecutor(workers=2) as ex:
        yield ex


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask_bytes")
    out = {}
    for n in SIZES:
        rng = np.random.default_rng(n)
        label = rng.random(n) < 0.2
        score = np.where(label, rng.normal(2.0, 1.0, n), rng.normal(0.0, 1.0, n))
        df = pl.DataFrame({"model": [f"m{i % 97}" for i in range(n)],
                           "segment": [f"s{i}" for i in range(n)], "score": score,
                           "label": label, "cond": rng.integers(0, 3, n).astype(str)})
        sf.write_trials(df, root / f"d{n}", partition_by=["cond"])
        out[n] = root / f"d{n}"
    return out


def _sizes(monkeypatch, cluster, path, n, options) -> dict[str, list[int]]:
    sizes: dict[str, list[int]] = defaultdict(list)
    real = DaskExecutor.map

    def measured(self, fn, items):
        out = real(self, fn, items)
        sizes[fn.__name__] += [len(pickle.dumps(r, protocol=5)) for r in out]
        return out

    real_i = DaskExecutor.imap

    def measured_i(self, fn, items, *, window):  # the reduction folds results as they come
        for r in real_i(self, fn, items, window=window):
            sizes[fn.__name__].append(len(pickle.dumps(r, protocol=5)))
            yield r

    with monkeypatch.context() as m:
        m.setattr(DaskExecutor, "map", measured)
        m.setattr(DaskExecutor, "imap", measured_i)
        # ranges sized by the trials alone (the plan's fixed cost per range, not in
        # proportion to the trials, would give the two sizes different ranges)
        m.setattr(outofcore, "UNIT_RANGE_BYTES", 0)
        m.setattr(outofcore, "REPLICATE_RANGE_BYTES", 0)
        engine = sf.Engine("dask", scheduler=cluster.address, workers=2, memory_limit=n * 80)
        sf.evaluate(str(path), by=["cond"], engine=engine, **options)
    return sizes


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_task_results_do_not_follow_the_trials_per_range(family, cluster, datasets,
                                                         monkeypatch):
    small, big = (_sizes(monkeypatch, cluster, datasets[n], n, FAMILIES[family])
                  for n in SIZES)
    rows_ratio = SIZES[1] / SIZES[0]
    assert len(small["reduce_task"]) == len(big["reduce_task"]) >= 3  # same ranges, 10x rows
    per_range = SIZES[1] / len(big["reduce_task"])  # trials in a range of the big dataset
    grow = max(big["reduce_task"]) / max(small["reduce_task"])
    # PAV blocks grow slowly with the trials of a range (here ~1.8x for 10x); never in step
    assert grow < rows_ratio ** 0.5, (family, grow)
    assert max(big["reduce_task"]) < 8 * per_range  # less than the range's scores alone
    for kind in ("partition_task", "duplicate_task"):
        if small.get(kind):
            assert max(big[kind]) <= 1.1 * max(small[kind]) + 64, (kind, small[kind], big[kind])
    # the plan's sample of scores is capped, whatever the number of trials
    assert sum(big["plan_task"]) <= 8 * SAMPLE_SIZE * 1.05 + 4096 * len(big["plan_task"])
