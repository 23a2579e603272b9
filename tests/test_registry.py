"""The metric registry: a new metric is one declaration (docs/architecture.md's example)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from scoreframe import evaluate, explode_dcf
from scoreframe.kernels import rocch as kr
from scoreframe.metrics import registry
from scoreframe.results.before_after import before_after, columns
from scoreframe.stats import Engine


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def data() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    lab = rng.random(4000) < 0.3
    return pl.DataFrame({"score": rng.normal(size=4000) + 2 * lab, "label": lab,
                         "gender": rng.choice(["f", "m"], 4000)})


def test_one_declaration_adds_a_column_everywhere(fresh_registry):
    registry.declare(registry.Metric(
        "uer10", "UER(10)", "%", lambda g: kr.uer(g.stats.blocks, 10.0), scale=100.0))
    df = data()
    res = evaluate(df, by="gender", engine=Engine(memory_limit="16KiB"))  # out of core too
    assert "uer10" in res.columns
    tar = df.filter(pl.col("label"))["score"].to_numpy()
    non = df.filter(~pl.col("label"))["score"].to_numpy()
    from scoreframe import uer

    assert res.filter(pl.col("gender") == "all")["uer10"][0] == pytest.approx(
        uer(tar, non, r=10.0), abs=1e-15)
    assert "uer10" in columns()
    t = before_after({"before": df.drop("gender")}, operating_points=0.1)
    assert t["uer10"].null_count() == 0
    assert registry.lookup("uer10").header == "UER(10) (%)"


def test_per_operating_point_declaration_goes_into_the_dcf_structs(fresh_registry):
    registry.declare(registry.Metric(
        "pmiss_act", "Pmiss", "", lambda g: g.act_counts()[0] / g.n_tar,
        per_operating_point=True))
    flat = explode_dcf(evaluate(data(), operating_points=[0.1, 0.5]))
    assert flat["pmiss_act"].to_list() == pytest.approx(
        (flat["n_miss_act"] / flat["n_tar"]).to_list())


def test_names_are_unique():
    with pytest.raises(ValueError, match="declared twice"):
        registry.declare(registry.lookup("eer"))
    assert registry.lookup("dr30_ok").per_operating_point is False
