"""The report with intervals, spoofing and forensic metrics, and the tandem t-DCF curve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from scoreframe import evaluate, explode_dcf
from scoreframe.metrics import Intervals
from scoreframe.results.tandem import tandem_t_dcf
from scoreframe.views.report import build_report, render_html

DATA = Path(__file__).parent / "data" / "real" / "asvspoof5_fusion_dev" / \
    "asvspoof5_fusion_dev.parquet"


@pytest.fixture(scope="module")
def sasv() -> pl.DataFrame:
    return pl.read_parquet(DATA).rename({"condition": "trial_type"})


@pytest.fixture(scope="module")
def report(sasv):
    return build_report(sasv, p_target=[0.01, 0.1], intervals=Intervals(bootstrap=40),
                        forensic=True, tandem=("asv", "cm"), title="t")


def test_summary_carries_every_family_and_interval(report, sasv):
    s = report.summary
    ref = evaluate(sasv, operating_points=[0.01, 0.1], metrics=["spoof", "forensic"])
    for c in ("eer", "a_dcf", "sasv_eer", "auc", "elub_upper_log10"):
        assert s[c].to_list() == ref[c].to_list()
    assert (s["eer_lo"] <= s["eer"]).all() and (s["eer"] <= s["eer_hi"]).all()
    assert "min_dcf_norm_hi" in explode_dcf(s).columns
    assert report.guidance is not None and report.guidance.height == 4


def test_charts_and_html(report, sasv):
    names = [n for _, n, _ in report.charts()]
    for n in ("det_intervals", "nber_intervals", "tippett", "ece", "t_dcf"):
        assert n in names
    page = render_html(report)
    assert "How many trials are enough" in page and "SASV-EER (%)" in page
    assert "<span class='ci'>[" in page
    best = tandem_t_dcf(sasv, asv="asv", cm="cm")["min_t_dcf"]
    assert f"minimum {best:.4f}" in page


def test_report_cli_flags(tmp_path, sasv):
    path = tmp_path / "sasv.parquet"
    sasv.write_parquet(path)
    out = tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "scoreframe", "report", str(path), "-o", str(out),
                        "--bootstrap", "20", "--forensic", "--tandem", "asv", "cm"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert "How many trials are enough" in page and "Tippett" in page


def test_report_forest_plot_of_two_systems(tmp_path):
    from scoreframe import synth_chunks

    df = pl.concat(list(synth_chunks(3000, n_systems=2, seed=1)))
    rep = build_report(df, compare=("sys1", "sys2"), intervals=Intervals(bootstrap=30))
    assert rep.comparison is not None and set(rep.comparison["metric"]) >= {"eer", "cllr"}
    assert "forest" in [n for _, n, _ in rep.charts()]
