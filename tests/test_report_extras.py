"""The report with intervals, spoofing and forensic metrics, and the tandem t-DCF curve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from scoreframe import Tandem, evaluate, explode_dcf
from scoreframe.metrics import Intervals
from scoreframe.results.tandem import tandem_t_dcf
from scoreframe.views.report import build_report, render_html, write_report

DATA = Path(__file__).parent / "data" / "real" / "asvspoof5_fusion_dev" / \
    "asvspoof5_fusion_dev.parquet"


@pytest.fixture(scope="module")
def sasv() -> pl.DataFrame:
    return pl.read_parquet(DATA).rename({"condition": "trial_type"})


@pytest.fixture(scope="module")
def report(sasv):
    return build_report(sasv, operating_points=[0.01, 0.1], intervals=Intervals(bootstrap=40),
                        metrics=["spoof", "forensic", Tandem(asv="asv", cm="cm")])


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
    assert "SASV-EER (%)" in page  # trial_type column: spoofing metrics beside --forensic
    assert "t-DCF (2021) of cm in front of asv" in page


def test_report_forest_plot_of_two_systems(tmp_path, monkeypatch):
    from scoreframe import synth_chunks

    df = pl.concat(list(synth_chunks(3000, n_systems=2, seed=1)))
    rep = build_report(df, compare=("sys1", "sys2"), intervals=Intervals(bootstrap=30))
    assert rep.comparison is not None and set(rep.comparison["metric"]) >= {"eer", "cllr"}
    assert "forest" in [n for _, n, _ in rep.charts()]
    # served from the report's own reduction (no second statistics pass: compare's own
    # reduction is not called), it is compare's frame, bit for bit
    import scoreframe as sf
    from scoreframe.results import compare as compare_module

    own_pass = compare_module.group_statistics

    for iv in (Intervals(bootstrap=30, seed=4),
               Intervals(bootstrap=20, resample=["model", "segment"], method="bca")):
        with monkeypatch.context() as m:
            m.setattr(compare_module, "group_statistics", None)  # a call would fail
            rep = build_report(df, by="channel", compare=("sys2", "sys1"), intervals=iv,
                               operating_points=[0.01, 0.1])
        assert compare_module.group_statistics is own_pass
        ref = sf.compare(df, "sys2", "sys1", by="channel", intervals=iv,
                         operating_points=[0.01, 0.1])
        assert rep.comparison is not None and rep.comparison.equals(ref)
        assert rep.comparison["diff_lo"].null_count() < rep.comparison.height


# --- the report takes evaluate's options (issue 25 item 3) --------------------------------------

def test_report_takes_the_options_of_evaluate():
    import inspect

    import scoreframe as sf

    params = inspect.signature(build_report).parameters
    kw = [n for n, p in params.items() if p.kind == p.KEYWORD_ONLY]
    assert kw == ["by", "where", "metrics", "operating_points", "intervals", "calibration",
                  "compare", "engine", "validate", "progress"]
    shared = set(kw) & set(inspect.signature(sf.evaluate).parameters)
    assert shared == {"by", "where", "metrics", "operating_points", "intervals", "engine",
                      "validate", "progress"}
    for name in shared:  # the same defaults
        assert params[name].default == inspect.signature(sf.evaluate).parameters[name].default


@pytest.mark.parametrize("stale", ["p_target", "spoof", "forensic", "tandem", "t_dcf_variant",
                                   "tandem_unpaired", "title", "rel_width", "trial_id",
                                   "biometric"])
def test_old_report_keywords_are_python_type_errors(stale):
    df = pl.DataFrame({"score": [1.0, 0.0], "label": [True, False]})
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{stale}'"):
        build_report(df, **{stale: None})


def test_spoof_is_automatic_only_when_metrics_is_none(sasv):
    part = sasv.head(4000)
    assert "a_dcf" in build_report(part).summary.columns  # trial_type column: on by default
    assert "a_dcf" not in build_report(part, metrics=["forensic"]).summary.columns
    both = build_report(part, metrics=["forensic", "spoof"]).summary
    ref = evaluate(part, metrics=["spoof", "forensic"])
    assert both["a_dcf"].to_list() == ref["a_dcf"].to_list()
    assert both["auc"].to_list() == ref["auc"].to_list()


def test_report_numbers_follow_operating_points_and_binary_options():
    import scoreframe as sf

    df = pl.concat(list(sf.synth_chunks(3000, n_systems=1, seed=5)))
    ops = sf.OperatingPoints((0.01, 0.2), c_miss=10.0)
    for metrics in (None, [sf.Binary(eer_method="nist")]):
        rep = build_report(df, operating_points=ops, metrics=metrics)
        ref = evaluate(df, operating_points=ops, metrics=metrics)
        assert rep.p_target == [0.01, 0.2]
        assert rep.summary["eer"].to_list() == ref["eer"].to_list()
        assert explode_dcf(rep.summary)["min_dcf"].to_list() == \
            explode_dcf(ref)["min_dcf"].to_list()
    # the two EER conventions differ on these data, so the check above can fail
    assert evaluate(df, metrics=[sf.Binary(eer_method="nist")])["eer"][0] != \
        evaluate(df)["eer"][0]


def test_report_validate_names_the_trial_id_columns():
    from scoreframe.errors import ValidationError

    df = pl.DataFrame({"score": [1.0, 2.0, 0.0, 0.5], "label": [True, True, False, False],
                       "model": ["a", "a", "b", "b"], "segment": ["x", "x", "y", "y"],
                       "utt": ["1", "2", "3", "4"]})
    with pytest.raises(ValidationError, match="duplicate trials on"):
        build_report(df, operating_points=0.5)
    rep = build_report(df, operating_points=0.5, validate=["utt"])
    assert (rep.summary["n_tar"][0], rep.summary["n_non"][0]) == (2, 2)
    assert build_report(df, operating_points=0.5, validate=False).summary.equals(rep.summary)


def test_tandem_option_object(sasv):
    import scoreframe as sf
    from scoreframe.errors import ScoreframeError, UsageError

    with pytest.raises(UsageError, match="evaluate does not take a Tandem"):
        evaluate(sasv.head(100), metrics=[Tandem(asv="asv", cm="cm")])
    with pytest.raises(ScoreframeError, match="unknown `variant`"):
        Tandem(asv="asv", cm="cm", variant="2017")
    with pytest.raises(ScoreframeError, match="unknown `unpaired`"):
        Tandem(asv="asv", cm="cm", unpaired="ignore")
    assert "Tandem" in sf.__all__ and sf.Tandem is Tandem
    rep = build_report(sasv, metrics=[Tandem(asv="asv", cm="cm", variant="2019")])
    best = tandem_t_dcf(sasv, asv="asv", cm="cm", variant="2019")["min_t_dcf"]
    assert rep.t_dcf is not None and rep.t_dcf["t_dcf"].min() == pytest.approx(best, abs=1e-12)
    assert any(n.startswith("t-DCF (2019) of cm in front of asv") for n in rep.notes)


def test_title_and_rel_width_are_output_options(report, tmp_path):
    out = write_report(report, tmp_path / "r.html", title="<SASV> dev")
    assert "<title>&lt;SASV&gt; dev</title>" in out.read_text()
    assert report.title == "scoreframe report"  # the caller's report is unchanged
    default = report.guidance
    report.rel_width = 0.05
    try:
        narrow = report.guidance
    finally:
        report.rel_width = 0.2
    assert default is not None and narrow is not None
    assert narrow["rel_width"].equals(default["rel_width"])  # the present widths
    more = (narrow["more_tar"] + narrow["more_non"]) >= (default["more_tar"]
                                                         + default["more_non"])
    assert more.all() and (narrow["more_tar"] + narrow["more_non"]).sum() > \
        (default["more_tar"] + default["more_non"]).sum()
