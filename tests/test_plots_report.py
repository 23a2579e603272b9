"""Charts (golden Vega-Lite specs), offline saving, the HTML report and its rendering in Chromium.

Golden specs live in tests/data/golden; they are rewritten only with ``pytest --update-golden``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import DATA

from scoreframe import curves, plots
from scoreframe.calibration import LinearCalibration, PavCalibration, calibration_map
from scoreframe.cli import main
from scoreframe.evaluate import evaluate
from scoreframe.report import build_report, render_html, write_report

GOLDEN = DATA / "golden"


def small() -> pl.DataFrame:
    """Two systems on deterministic quantile scores (no randomness in the golden specs)."""
    from scipy.stats import norm

    q = (np.arange(1, 201) - 0.5) / 200
    rows = []
    for name, d in (("A", 2.0), ("B", 1.2)):
        tar, non = d + norm.ppf(q[::4]), norm.ppf(q)
        rows.append(pl.DataFrame({"system": name, "score": np.r_[tar, non],
                                  "label": np.r_[np.ones(tar.size, bool),
                                                 np.zeros(non.size, bool)]}))
    return pl.concat(rows)


def points(df: pl.DataFrame) -> pl.DataFrame:
    return curves.dcf_points(df, p_target=[0.1, 0.5])


def charts() -> dict[str, object]:
    df = small()
    cal = LinearCalibration().fit(df.filter(pl.col("system") == "A"))
    pav = PavCalibration().fit(df.filter(pl.col("system") == "A"))
    return {
        "det": plots.det_plot(curves.det_curve(df), points=points(df)),
        "det_rocch": plots.det_plot(curves.det_curve(df), curve="rocch"),
        "nber": plots.nber_plot(curves.nber_curve(df, prior_log_odds=np.linspace(-5, 0, 21)),
                                components=True, p_target=[0.1]),
        "ape": plots.ape_plot(curves.ape_curve(df, prior_log_odds=np.linspace(-5, 5, 21)),
                              evaluate(df, p_target=0.1)),
        "calibration": plots.calibration_plot(calibration_map({"linear": cal, "pav": pav},
                                                              lo=-4, hi=5, n=11)),
        "histogram": plots.histogram_plot(curves.histogram_frame(df, bins=8)),
    }


@pytest.mark.parametrize("name", ["det", "det_rocch", "nber", "ape", "calibration",
                                  "histogram"])
def test_golden_specs(name, update_golden):
    spec = charts()[name].to_dict()  # validates against the Vega-Lite schema
    text = json.dumps(spec, indent=1, sort_keys=True)
    path = GOLDEN / f"{name}.json"
    if update_golden or not path.exists():
        if not update_golden:
            pytest.fail(f"no golden spec {path}; run pytest --update-golden")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    assert json.loads(path.read_text()) == json.loads(text)


def test_det_plot_content():
    spec = charts()["det"].to_dict()
    layers = spec["layer"]
    line = layers[0]
    # legend ordered by EER (A is the better system), names carry the EER
    domain = line["encoding"]["color"]["scale"]["domain"]
    assert domain[0].startswith("A (EER") and domain[1].startswith("B (EER")
    # probit axis with percentage ticks 0.1 ... 40
    axis = line["encoding"]["x"]["axis"]
    assert len(axis["values"]) == 9 and "'0.1'" in axis["labelExpr"]
    assert "'40'" in axis["labelExpr"]
    # DR30 rules and DCF points are layers
    marks = [layer["mark"]["type"] for layer in layers]
    assert "rule" in marks and "point" in marks


def test_no_row_limit_truncation():
    """A curve far above Altair's 5,000-row default is embedded whole."""
    rng = np.random.default_rng(0)
    n = 40_000
    df = pl.DataFrame({"score": rng.normal(0, 1, n), "label": rng.random(n) < 0.5})
    det = curves.det_curve(df, resolution=None)
    assert det.height > 5000
    spec = plots.det_plot(det, curve="steppy").to_dict(validate=False)
    assert len(spec["layer"][0]["data"]["values"]) == det.filter(
        pl.col("curve") == "steppy").height


@pytest.mark.parametrize("suffix", ["html", "svg", "png"])
def test_save_chart_offline(tmp_path, suffix):
    path = plots.save_chart(charts()["nber"], tmp_path / f"c.{suffix}")
    data = path.read_bytes()
    assert len(data) > 1000
    if suffix == "html":
        text = data.decode()
        assert "<script src=" not in text.replace("<script src=\"data:", "")
        assert "cdn.jsdelivr" not in text
    if suffix == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="unknown suffix"):
        plots.save_chart(charts()["nber"], tmp_path / "c.pdf")


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("report")
    assert main(["synth", str(out / "data"), "--trials", "20000", "--seed", "4"]) == 0
    rep = build_report(str(out / "data"), by=["channel"], p_target=[0.01, 0.1])
    path = write_report(rep, out / "report.html", export_dir=out / "charts",
                        export_formats=("svg",))
    return path, rep


def test_report_content(report_file):
    path, rep = report_file
    text = path.read_text()
    # summary table: every group, counts, metrics and rule-of-30 warnings
    n_groups = rep.summary.height
    start = text.index("<table class='summary'>")
    table = text[start:text.index("</table>", start)]
    assert table.count("<tr>") == n_groups + 1
    assert "minDCF @0.01" in text and "Cllr" in text
    if rep.summary["dr30_ok"].not_().any():
        assert "rule of 30" in text
    # offline: libraries inlined, no external script
    assert "<script src=" not in text and "vegaEmbed" in text
    n_charts = len(rep.charts())
    assert text.count("class='chart'") == n_charts
    assert len(list((path.parent / "charts").glob("*.svg"))) == n_charts


def test_report_with_calibration_and_cli(tmp_path, report_file, capsys):
    path, _ = report_file
    data = path.parent / "data"
    model = tmp_path / "cal.json"
    assert main(["calibrate", "train", str(data), "--where", "system = 'sys3'", "-o",
                 str(model)]) == 0
    out = tmp_path / "r.html"
    assert main(["report", str(data), "--where", "system = 'sys3'", "--calibration", str(model),
                 "--p-target", "0.05", "-o", str(out)]) == 0
    text = out.read_text()
    assert "calibrated with a linear model" in text and "Calibration map" in text
    assert main(["report", str(data), "-o", str(out)]) == 2  # exists, no --overwrite
    assert "already exists" in capsys.readouterr().err


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on this machine: the browser "
                    "rendering test needs Debian's `chromium` package (.ci/run installs it)")
def test_report_renders_in_headless_chromium(report_file, tmp_path):
    path, rep = report_file
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000",
             "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([_chromium(), *flags, "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-rendered="true"' in html and 'data-errors="0"' in html
    n_charts = len(rep.charts())
    assert html.count("<svg") >= n_charts  # every chart drew an SVG
    console_errors = [ln for ln in dom.stderr.splitlines()
                      if "CONSOLE" in ln and ("error" in ln.lower() or "Uncaught" in ln)]
    assert not console_errors, console_errors
    shot = Path(path.parent / "report.png")
    res = subprocess.run([_chromium(), *flags[:-2], "--window-size=1400,2000",
                          f"--screenshot={shot}", path.as_uri()], capture_output=True,
                         text=True, timeout=180)
    assert res.returncode == 0 and shot.stat().st_size > 50_000
    print(f"screenshot: {shot}")


def test_render_html_escapes_titles():
    df = small()
    rep = build_report(df, p_target=[0.1], title="<b>x</b>")
    assert "<title>&lt;b&gt;x&lt;/b&gt;</title>" in render_html(rep)
