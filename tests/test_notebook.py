"""The example notebook runs (nbclient, a real Jupyter kernel) and its outputs work offline.

Checks: no cell raised; the evaluation table shows every system x channel group; every chart
came out as an inline ``image/svg+xml`` (no HTML loading Vega from a CDN) of moderate size.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).parents[1] / "examples" / "quickstart.ipynb"
CDN = re.compile(r"https?://[^\s\"'<>]*(cdn|jsdelivr|unpkg|esm\.sh|cdnjs)", re.I)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    work = tmp_path_factory.mktemp("nb")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(work)}})
    client.execute()
    return nb


def outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def test_notebook_runs_without_errors(executed):
    errors = [o for o in outputs(executed) if o.output_type == "error"]
    assert not errors, [(o.ename, o.evalue) for o in errors]
    stderr = [o.text for o in outputs(executed)
              if o.output_type == "stream" and o.name == "stderr"]
    assert not any("Warning" in t or "Traceback" in t for t in stderr), stderr


def test_evaluation_table_has_every_group(executed):
    cell = next(c for c in executed.cells if c.cell_type == "code"
                and c.source.startswith("summary = sf.evaluate"))
    text = cell.outputs[0]["data"]["text/plain"]
    assert "shape: (9, 7)" in text  # 3 systems x (mic, tel, pooled "all")
    for system in ("sys1", "sys2", "sys3"):
        for channel in ("mic", "tel", "all"):
            assert re.search(rf"{system}\s+┆\s+{channel}", text), (system, channel)


def test_charts_are_offline_svg(executed):
    charts = [o for o in outputs(executed) if "image/svg+xml" in o.get("data", {})]
    assert len(charts) == 4  # DET, NBER, APE, calibration
    for o in charts:
        svg = o["data"]["image/svg+xml"]
        assert "<svg" in svg[:200] and "</svg>" in svg[-50:]
        assert not CDN.search(svg)
        assert "text/html" not in o["data"]  # no script-based output that needs a CDN
        assert len(svg) < 400_000  # decimated for display (a DET was 1.3 MB before)
    det = charts[0]["data"]["image/svg+xml"]
    for tick in ("0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"):
        assert det.count(f">{tick}</text>") >= 2
    assert not any(CDN.search(str(o.get("data", {}))) for o in outputs(executed))
