"""The how-to pages run as written, and what they promise holds.

``docs/howto/add_metric.md`` and ``docs/howto/add_format.md`` are executed here cell by cell
(the same code the pages show; only the cell that moves the docs build into a temporary
directory is replaced by ``monkeypatch.chdir``). Then each promise is checked against an
independent computation: the metric declared by the page against the public scalar function
on the raw scores, in every engine, with intervals, in ``compare``, the CLI's table and JSON
and the report; the format registered by the page through the library, the CLI, guessing and
the malformed-input catalogue (``tests/test_malformed.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from test_malformed import check_registered_format

import scoreframe as sf
from scoreframe import io as sio
from scoreframe.cli import main
from scoreframe.errors import FormatError, UsageError
from scoreframe.io import _formats
from scoreframe.metrics import registry

HOWTO = Path(__file__).parents[1] / "docs" / "howto"
CELL = re.compile(r"^```\{code-cell\} ipython3\n(.*?)^```", re.S | re.M)


def cells(page: str) -> list[str]:
    """The code cells of a MyST-NB page, in order, without the build's remove-cells."""
    found = CELL.findall((HOWTO / page).read_text())
    return [c for c in found if ":tags: [remove-cell]" not in c]


@pytest.fixture
def registries():
    """Restore the metric and format registries after a page has added to them."""
    metrics, formats = dict(registry._REGISTRY), dict(_formats._REGISTRY)  # noqa: SLF001
    yield
    registry._REGISTRY.clear()  # noqa: SLF001
    registry._REGISTRY.update(metrics)  # noqa: SLF001
    _formats._REGISTRY.clear()  # noqa: SLF001
    _formats._REGISTRY.update(formats)  # noqa: SLF001


def run_page(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Execute a page's cells in one namespace, in ``tmp_path``; return the namespace."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"howto_{page.removesuffix('.md')}"}
    blocks = cells(page)
    assert len(blocks) >= 5, page
    for i, block in enumerate(blocks):
        exec(compile(block, f"{HOWTO / page}, cell {i + 1}", "exec"), namespace)  # noqa: S102
    return namespace


def test_pages_are_in_the_docs_toctree():
    index = (Path(__file__).parents[1] / "docs" / "index.md").read_text()
    assert "howto/add_metric" in index and "howto/add_format" in index


# ------------------------------------------------------------------- add a metric
def reference_area(trials: pl.DataFrame) -> dict[str, float]:
    """Each system's area under the ROCCH from the public scalar function on its raw scores."""
    out = {}
    for (system,), g in trials.group_by("system"):
        tar = g.filter(pl.col("label"))["score"].to_numpy()
        non = g.filter(~pl.col("label"))["score"].to_numpy()
        out[str(system)] = sf.area_under_rocch(tar, non)
    pooled_tar = trials.filter(pl.col("label"))["score"].to_numpy()
    assert pooled_tar.size > 0
    return out


@pytest.fixture
def metric_page(tmp_path, monkeypatch, registries) -> dict[str, Any]:
    ns = run_page("add_metric.md", tmp_path, monkeypatch)
    assert sum(m.name == "area_rocch" for m in registry.declared()) == 1  # one declaration
    return ns


def test_metric_page_values_match_the_scalar_function(metric_page):
    ref = reference_area(metric_page["trials"])
    res = metric_page["res"]
    got = dict(zip(res["system"].to_list(), res["area_rocch"].to_list(), strict=True))
    assert set(got) == set(ref) and len(ref) == 2
    for system, value in ref.items():
        assert got[system] == pytest.approx(value, rel=1e-12)
        assert 0.0 < value < 0.5  # better than chance, not perfect: the case is not trivial
    lo, hi = res["area_rocch_lo"].to_numpy(), res["area_rocch_hi"].to_numpy()
    assert np.all(lo < res["area_rocch"].to_numpy()) and np.all(res["area_rocch"].to_numpy() < hi)


@pytest.mark.parametrize("engine", ["out of core", "dask"])
def test_metric_page_engines_agree(metric_page, engine, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    if engine == "dask":
        pytest.importorskip("dask.distributed")
        other_engine = sf.Engine("dask", workers=1, memory_limit="64KiB")
    else:
        other_engine = sf.Engine("streaming", memory_limit="64KiB")
    intervals = sf.Intervals(bootstrap=20, seed=4)
    memory = sf.evaluate("ds", intervals=intervals, engine="memory")
    other = sf.evaluate("ds", intervals=intervals, engine=other_engine)
    for col in ("area_rocch", "area_rocch_lo", "area_rocch_hi"):
        np.testing.assert_allclose(other[col].to_numpy(), memory[col].to_numpy(),
                                   rtol=1e-12, atol=0)


def test_metric_page_compare_cli_and_report(metric_page, capsys):
    res, diff = metric_page["res"], metric_page["diff"]
    row = diff.filter(pl.col("metric") == "area_rocch").row(0, named=True)
    a, b = res["area_rocch"].to_list()
    assert row["a"] == pytest.approx(a, rel=1e-12) and row["b"] == pytest.approx(b, rel=1e-12)
    assert row["diff_lo"] < row["diff"] < row["diff_hi"]
    groups = json.loads(Path("eval.json").read_text())["groups"]
    assert [g["area_rocch"] for g in groups] == pytest.approx([a, b], rel=1e-12)
    assert "area under ROCCH (%)" in Path("report.html").read_text()
    capsys.readouterr()
    assert main(["evaluate", "ds"]) == 0
    table = capsys.readouterr().out
    assert "area_rocch (%)" in table and f"{100 * a:.2f}" in table  # % like eer
    assert main(["compare", "ds", "--systems", "sys1", "sys2", "--bootstrap", "20"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "area_rocch" in ln)
    assert "area_rocch (%)" in line and f"{100 * a:.2f}" in line


# ------------------------------------------------------------------- add a format
@pytest.fixture
def format_page(tmp_path, monkeypatch, registries) -> dict[str, Any]:
    return run_page("add_format.md", tmp_path, monkeypatch)


def test_format_page_reads_and_writes_by_path(format_page):
    trials = format_page["trials"]
    assert "ssv" in sio.format_names(readable=True) and "ssv" in sio.format_names(writable=True)
    header, first = Path("trials.ssv").read_text().splitlines()[:2]
    assert header == "model;segment;score;label" and first.count(";") == 3
    assert format_page["back"].equals(trials)
    assert sf.scan_trials("trials.ssv").collect().equals(trials)
    assert sio.read_any("copy.ssv").equals(trials)  # written by `convert --to ssv`
    assert pl.read_parquet("trials.parquet").select(trials.columns).equals(trials)


def test_format_page_guessing(format_page):
    assert sio.guess_format("trials.ssv") == "ssv"
    assert sio.guess_format("export.csv") == "ssv"  # sniffed: a semicolon header
    Path("plain.csv").write_text("model,segment,score,label\nm,s,1.0,target\n")
    assert sio.guess_format("plain.csv") == "csv"  # a comma header stays CSV


def test_format_page_evaluates_as_the_builtin_formats_do(format_page):
    trials = format_page["trials"]
    expected = sf.evaluate(trials)
    assert sf.evaluate("trials.ssv").equals(expected)
    cli = pl.read_csv("eval.csv")
    assert cli["eer"][0] == pytest.approx(expected["eer"][0], rel=1e-12)
    assert cli["cllr"][0] == pytest.approx(expected["cllr"][0], rel=1e-12)


def test_format_page_errors_name_the_file_and_line(format_page, capsys):
    with pytest.raises(FormatError, match=r"bad\.ssv.*line 3") as info:
        sf.read_trials("bad.ssv")
    assert info.value.line == 3 or "line 3" in str(info.value)
    assert main(["evaluate", "bad.ssv", "-o", "never.csv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.ssv" in err[0] and "line 3" in err[0]
    assert not Path("never.csv").exists()
    with pytest.raises(UsageError, match="partition_by") as refused:
        sf.write_trials(format_page["trials"], "p.ssv", partition_by=["model"])
    assert refused.value.parameter == "partition_by" and not Path("p.ssv").exists()


def test_format_page_joins_the_malformed_input_catalogue(format_page, tmp_path, capsys):
    check_registered_format(tmp_path / "catalogue", "ssv", capsys)


def test_the_page_entries_leave_with_the_test():
    assert "ssv" not in sio.format_names()
    assert all(m.name != "area_rocch" for m in registry.declared())
