"""One unit rule for rates in every table: tables show rates in %, JSON and frames keep fractions.

``evaluate`` and ``compare`` print the same EER of the same system the same way (issue 25 item
8: ``compare`` once printed a fraction where ``evaluate`` printed %).
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import scoreframe as sf
from scoreframe.cli import main


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("units") / "ds"
    sf.write_trials(pl.concat(sf.synth_chunks(4_000, n_systems=2, seed=2)), path)
    return path


def _row(table: str, first: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if ln.strip("│┃ ").startswith(first))
    return [c.strip() for c in line.strip("│┃").split("│")]


def test_evaluate_and_compare_print_eer_in_percent(ds, capsys):
    eer = sf.evaluate(ds)["eer"].to_list()  # fractions, sys1 and sys2
    assert 0.01 < eer[0] < 0.5 and 0.01 < eer[1] < 0.5
    assert main(["evaluate", str(ds)]) == 0
    out = capsys.readouterr().out
    assert "eer (%)" in out
    assert f"{100 * eer[0]:.2f}" in _row(out, "sys1")
    assert main(["compare", str(ds), "--systems", "sys1", "sys2", "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    cells = _row(out, "eer (%)")
    assert cells[2:4] == [f"{100 * eer[0]:.2f}", f"{100 * eer[1]:.2f}"]


def test_json_keeps_fractions(ds, tmp_path):
    eer = sf.evaluate(ds)["eer"].to_list()
    assert main(["evaluate", str(ds), "--format", "json", "-o", str(tmp_path / "e.json")]) == 0
    assert main(["compare", str(ds), "--systems", "sys1", "sys2", "--bootstrap", "20",
                 "--format", "json", "-o", str(tmp_path / "c.json")]) == 0
    groups = json.loads((tmp_path / "e.json").read_text())["groups"]
    row = next(r for r in json.loads((tmp_path / "c.json").read_text()) if r["metric"] == "eer")
    assert [g["eer"] for g in groups[:2]] == pytest.approx(eer, rel=1e-12)
    assert (row["a"], row["b"]) == pytest.approx(tuple(eer), rel=1e-12)
