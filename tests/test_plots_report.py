"""Charts (what they draw, golden summaries), offline saving and display, the HTML report.

Golden files in tests/data/golden hold a *summary* of each chart's Vega-Lite spec (mark types,
encodings and fields, explicit scales, axis tick values, clip flags, data row counts and a few
rounded rows), not the whole generated spec, so an Altair / Vega-Lite version bump that changes
defaults or key order does not break them. They are rewritten only with
``pytest --update-golden`` after looking at the charts; a missing file is a failure.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
import pytest
import vl_convert as vlc
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from scoreframe.cli import main
from scoreframe.errors import ScoreframeError, UsageError
from scoreframe.estimators.calibration import LinearCalibration, PavCalibration, calibration_map
from scoreframe.kernels.elementary import probit
from scoreframe.results import curves
from scoreframe.results.evaluate import evaluate
from scoreframe.views import plots
from scoreframe.views.plots.det import display_decimate
from scoreframe.views.plots.style import DET_BOX, SERIES, det_ticks
from scoreframe.views.report import (
    GRID_COLUMNS,
    build_report,
    render_html,
    share_data,
    write_report,
)

GOLDEN = DATA / "golden"
STANDARD_TICKS = ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"]


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


def charts() -> dict[str, alt.TopLevelMixin]:
    df = small()
    cal = LinearCalibration().fit(df.filter(pl.col("system") == "A"))
    pav = PavCalibration().fit(df.filter(pl.col("system") == "A"))
    grid = np.linspace(-5, 0, 21)
    return {
        "det": plots.det_plot(curves.det_curve(df), points=points(df)),
        "det_rocch": plots.det_plot(curves.det_curve(df), curve="rocch"),
        "nber": plots.nber_plot(curves.nber_curve(df, prior_log_odds=grid), p_target=[0.1]),
        "nber_components": plots.nber_plot(
            curves.nber_curve(df.filter(pl.col("system") == "A"), prior_log_odds=grid),
            components=True, p_target=[0.1]),
        "ape": plots.ape_plot(curves.ape_curve(df, prior_log_odds=np.linspace(-5, 5, 21)),
                              evaluate(df, operating_points=0.1)),
        "calibration": plots.calibration_plot(calibration_map({"linear": cal, "pav": pav},
                                                              lo=-4, hi=5, n=11)),
        "histogram": plots.histogram_plot(curves.histogram_frame(df, bins=8)),
    }


def units(spec: dict) -> list[dict]:
    """Every single-view spec (with a ``mark``) inside layers, concatenations and facets."""
    out = []
    if "mark" in spec:
        out.append(spec)
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(key, []):
            out += units(sub)
    if isinstance(spec.get("spec"), dict):
        out += units(spec["spec"])
    return out


def _round(v: object) -> object:
    if isinstance(v, float):
        return float(f"{v:.4g}")
    if isinstance(v, list):
        return [_round(x) for x in v]
    if isinstance(v, dict):
        return {k: _round(x) for k, x in sorted(v.items())}
    return v


def spec_summary(spec: dict) -> dict:
    """The parts of a chart that matter, independent of Altair's defaults and key order."""
    layers = []
    for u in units(spec):
        mark = u["mark"] if isinstance(u["mark"], dict) else {"type": u["mark"]}
        enc = {}
        for channel, e in sorted(u.get("encoding", {}).items()):
            if not isinstance(e, dict):
                continue
            item = {k: e[k] for k in ("field", "type", "value") if k in e}
            scale = e.get("scale") or {}
            item |= {f"scale_{k}": _round(scale[k]) for k in ("domain", "range", "clamp")
                     if k in scale}
            axis = e.get("axis") or {}
            item |= {f"axis_{k}": _round(axis[k]) for k in ("values", "labelOverlap", "title")
                     if k in axis}
            lg = e.get("legend") or {}
            item |= {f"legend_{k}": lg[k] for k in ("symbolType",) if k in lg}
            enc[channel] = item
        values = u.get("data", {}).get("values", [])
        layers.append({
            "mark": mark["type"], "clip": mark.get("clip", False),
            "filled": mark.get("filled"), "encoding": enc,
            "transforms": sorted(next(iter(t)) for t in u.get("transform", [])),
            "rows": len(values), "first": _round(values[0]) if values else None,
            "last": _round(values[-1]) if values else None})
    title = spec.get("title")
    return {"title": _round(title), "layers": layers}


@pytest.mark.parametrize("name", ["det", "det_rocch", "nber", "nber_components", "ape",
                                  "calibration", "histogram"])
def test_golden_specs(name, update_golden):
    summary = spec_summary(charts()[name].to_dict())  # to_dict validates the Vega-Lite schema
    text = json.dumps(summary, indent=1, sort_keys=True, ensure_ascii=False)
    path = GOLDEN / f"{name}.json"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    if not path.exists():
        pytest.fail(f"no golden summary {path}; look at the chart, then run pytest "
                    "--update-golden")
    assert json.loads(path.read_text()) == json.loads(text)


def test_golden_summary_ignores_version_noise():
    """Schema URL, config and key order are not part of the comparison; a field change is."""
    spec = charts()["det"].to_dict()
    noisy = json.loads(json.dumps(spec))
    noisy["$schema"] = "https://vega.github.io/schema/vega-lite/v99.json"
    noisy["config"] = {"view": {"continuousWidth": 123}}
    noisy["layer"][0]["mark"]["tooltip"] = True
    assert spec_summary(noisy) == spec_summary(spec)
    noisy["layer"][0]["encoding"]["x"]["field"] = "pfa"
    assert spec_summary(noisy) != spec_summary(spec)


def svg_text(chart: alt.TopLevelMixin) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", vlc.vegalite_to_svg(chart.to_dict()))


@pytest.mark.parametrize("kw", [{}, {"curve": "both"}])
def test_det_every_standard_tick_labelled_on_both_axes(kw):
    texts = svg_text(plots.det_plot(curves.det_curve(small()), **kw))
    for t in STANDARD_TICKS:
        assert texts.count(t) >= 2, (t, texts)  # once on each axis: Vega dropped none


def test_det_ticks_thin_out_only_when_crowded():
    assert [f"{100 * t:g}" for t in det_ticks(0.0005, 0.5, length_px=300)] == STANDARD_TICKS
    crowded = det_ticks(0.0001, 0.99, length_px=120)
    pos = (probit(crowded) - probit(0.0001)) / (probit(0.99) - probit(0.0001)) * 120
    assert np.all(np.diff(pos) >= 14) and 0.5 > len(crowded) / 15


def test_det_curves_leave_the_box_unclamped():
    df = small()
    det = curves.det_curve(df)
    spec = plots.det_plot(det, resolution=None).to_dict()
    line = spec["layer"][0]
    assert line["mark"]["clip"] is True
    xs = np.array([r["probit_pfa"] for r in line["data"]["values"]])
    lo, hi = float(probit(DET_BOX[0])), float(probit(DET_BOX[1]))
    steppy = det.filter(pl.col("curve") == "steppy")
    # the data keep the points beyond the box (not moved onto its border)
    assert (xs > hi + 0.1).sum() == (steppy["probit_pfa"] > hi + 0.1).sum() > 0
    on_border = np.isclose(steppy["probit_pfa"].to_numpy(), hi).sum()
    assert np.isclose(xs, hi).sum() == on_border  # none moved onto the border
    assert np.isclose(xs, lo).sum() == np.isclose(steppy["probit_pfa"].to_numpy(), lo).sum()
    assert line["encoding"]["x"]["scale"]["domain"] == pytest.approx([lo, hi])


def test_det_guides_choose_the_reference_lines():
    det = curves.det_curve(small())

    def rules_and_lines(**kw):  # noqa: ANN003, ANN202
        spec = plots.det_plot(det, resolution=None, **kw).to_dict()
        kinds = [(u["mark"]["type"], tuple(u["encoding"])) for u in spec["layer"][1:]]
        return sum(k == "rule" for k, _ in kinds), sum(k == "line" for k, _ in kinds)

    n_rules, n_lines = rules_and_lines()  # the dr30 rules inside the box, the EER line
    assert n_rules >= 1 and n_lines == 1
    assert rules_and_lines(guides=("eer",)) == (0, 1)
    assert rules_and_lines(guides="dr30") == (n_rules, 0)
    assert rules_and_lines(guides=()) == (0, 0)
    with pytest.raises(ScoreframeError, match="bad `guides`.*'eer' and/or 'dr30'"):
        plots.det_plot(det, guides=("diagonal",))


def test_dcf_markers_outside_the_box_are_omitted_with_a_note():
    df = small()
    pts = curves.dcf_points(df, p_target=[0.001, 0.5])
    lo, hi = float(probit(DET_BOX[0])), float(probit(DET_BOX[1]))
    p = np.c_[probit(pts["pfa"].to_numpy()), probit(pts["pmiss"].to_numpy())]
    outside = ~((p >= lo) & (p <= hi)).all(axis=1)
    assert outside.any() and not outside.all()
    spec = plots.det_plot(curves.det_curve(df), points=pts).to_dict()
    drawn = [u for u in units(spec) if u["mark"]["type"] == "point"]
    assert sum(len(u["data"]["values"]) for u in drawn) == int((~outside).sum())
    omitted = spec["usermeta"]["scoreframe"]["omitted_points"]
    assert omitted and all("@0.001" in o for o in omitted)
    assert any("outside the box" in s for s in spec["title"]["subtitle"])
    # one shape per prior, filled for min DCF and open for act DCF
    scales = {(tuple(u["encoding"]["shape"]["scale"]["domain"]),
               tuple(u["encoding"]["shape"]["scale"]["range"])) for u in drawn}
    assert len(scales) == 1
    (domain, shapes), = scales
    assert domain == ("0.001", "0.5") and len(set(shapes)) == 2
    assert {r["prior"] for u in drawn for r in u["data"]["values"]} == {"0.5"}
    assert {u["mark"]["filled"] for u in drawn} == {True, False}


def test_nber_values_above_the_top_are_clipped_not_clamped():
    df = small()
    nber = curves.nber_curve(df, prior_log_odds=np.linspace(-5, 0, 21))
    assert nber["act_dcf_norm"].max() > 1.0
    spec = plots.nber_plot(nber, y_max=1.0).to_dict()
    line = spec["layer"][0]
    assert line["mark"]["clip"] is True and "clamp" not in line["encoding"]["y"]["scale"]
    top = max(max(r["actual"], r["minimum"]) for r in line["data"]["values"])
    assert top == pytest.approx(nber["act_dcf_norm"].max(), rel=1e-4)


def test_nber_components_need_one_series():
    with pytest.raises(UsageError, match="one series"):
        plots.nber_plot(curves.nber_curve(small()), components=True)


def _series_styles(spec: dict) -> dict[str, tuple[str, tuple]]:
    out: dict[str, tuple[str, tuple]] = {}
    for u in units(spec):
        enc = u.get("encoding", {})
        col, dash = enc.get("color", {}), enc.get("strokeDash", {})
        if col.get("field") != SERIES or "range" not in col.get("scale", {}):
            continue
        dashes = (dash.get("scale", {}).get("range") if dash.get("field") == SERIES else None)
        for i, label in enumerate(col["scale"]["domain"]):
            d = tuple(dashes[i]) if dashes else None
            out[label] = (col["scale"]["range"][i], d)
            assert col["legend"]["symbolType"] == "stroke"
    return out


def test_series_styles_are_distinct_and_stable():
    labels = [f"g{i}" for i in range(64)]
    s = plots.series_scale(labels)
    assert len(set(s.values())) == 64
    assert plots.series_scale(labels[:5]) == {k: s[k] for k in labels[:5]}
    df = small()
    st = plots.series_scale(["B", "A"])  # B first: it must keep B's style in every chart
    det = _series_styles(plots.det_plot(curves.det_curve(df), styles=st).to_dict())
    nber = _series_styles(plots.nber_plot(curves.nber_curve(df), styles=st).to_dict())
    ape = _series_styles(plots.ape_plot(curves.ape_curve(df), styles=st).to_dict())
    for label in ("A", "B"):
        want = (st[label].color, tuple(st[label].dash))
        assert det[label] == nber[label] == ape[label] == want


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> tuple[Path, object, list]:
    out = tmp_path_factory.mktemp("report")
    assert main(["synth", str(out / "data"), "--trials", "20000", "--seed", "4"]) == 0
    # groups: 2 systems x 2 channels + 2 pooled rows (kept small: every chart is rendered)
    rep = build_report(str(out / "data"), by=["channel"], where="system != 'sys3'",
                       operating_points=[0.01, 0.1])
    calls: list[tuple[int, int]] = []
    path = write_report(rep, out / "report.html", export_dir=out / "charts",
                        export_formats=("svg",), progress=lambda d, t: calls.append((d, t)))
    return path, rep, calls


def test_report_uses_one_style_per_group_in_every_chart(report_file):
    _, rep, _ = report_file
    seen: dict[str, set] = {}
    for _, _, chart in rep.charts():
        for label, style in _series_styles(chart.to_dict()).items():
            seen.setdefault(label, set()).add(style[0])
            if style[1] is not None:
                seen.setdefault(label + " dash", set()).add(style[1])
    assert len([k for k in seen if not k.endswith(" dash")]) == rep.summary.height
    assert all(len(v) == 1 for v in seen.values()), seen
    colors_dashes = {(next(iter(seen[k])), next(iter(seen[k + " dash"])))
                     for k in seen if not k.endswith(" dash")}
    assert len(colors_dashes) == rep.summary.height  # every group looks different


def test_report_progress_covers_rendering(report_file):
    _, rep, calls = report_file
    n = len(rep.charts())
    assert calls[-1] == (2 * n, 2 * n)  # n charts into the HTML, n SVG exports
    assert [d for d, _ in calls] == list(range(1, 2 * n + 1))


def test_display_decimation_keeps_the_visible_path():
    """Outside runs collapse to their ends; with sub-pixel cells the clipped path is unchanged."""
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"score": np.r_[rng.normal(2, 1, 3000), rng.normal(0, 1, 30000)],
                       "label": np.r_[np.ones(3000, bool), np.zeros(30000, bool)]})
    det = plots.series_labels(curves.det_curve(df, resolution=None))
    lo, hi = float(probit(DET_BOX[0])), float(probit(DET_BOX[1]))
    box = (lo, hi, lo, hi)
    fine = display_decimate(det, cell=1e-9, box=box).filter(pl.col("curve") == "steppy")
    full = det.filter(pl.col("curve") == "steppy")
    assert fine.height < full.height

    def clipped(frame: pl.DataFrame) -> set:
        x, y = frame["probit_pfa"].to_numpy(), frame["probit_pmiss"].to_numpy()
        return _clipped_segments(np.clip(x, -50, 50), np.clip(y, -50, 50), box)

    assert clipped(fine) == clipped(full)
    # at one pixel, every dropped point inside the box is within one cell of a kept neighbour
    cell = (hi - lo) / 300
    px = display_decimate(det, cell=cell, box=box).filter(pl.col("curve") == "steppy")
    assert px.height < 0.3 * full.height
    kept = np.c_[px["probit_pfa"], px["probit_pmiss"]]
    inside = full.filter(pl.col("probit_pfa").is_between(lo, hi)
                         & pl.col("probit_pmiss").is_between(lo, hi))
    pts = np.c_[inside["probit_pfa"], inside["probit_pmiss"]]
    dist = np.abs(pts[:, None, :] - kept[None, :, :]).max(axis=2).min(axis=1)
    assert dist.max() <= cell * (1 + 1e-9)


def _clipped_segments(x: np.ndarray, y: np.ndarray, box: tuple[float, ...]) -> set:
    """The visible parts of a polyline's segments (Liang-Barsky clipping to the box)."""
    lo_x, hi_x, lo_y, hi_y = box
    segs = set()
    for x0, y0, x1, y1 in zip(x[:-1], y[:-1], x[1:], y[1:], strict=True):
        t0, t1, ok = 0.0, 1.0, True
        for p, q in ((-(x1 - x0), x0 - lo_x), (x1 - x0, hi_x - x0), (-(y1 - y0), y0 - lo_y),
                     (y1 - y0, hi_y - y0)):
            if p == 0:
                ok &= q >= 0
            elif p < 0:
                t0 = max(t0, q / p)
            else:
                t1 = min(t1, q / p)
        if ok and t0 < t1:
            segs.add(tuple(np.round([x0 + t0 * (x1 - x0), y0 + t0 * (y1 - y0),
                                     x0 + t1 * (x1 - x0), y0 + t1 * (y1 - y0)], 9)))
    return segs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0.0, 1.5)), min_size=3, max_size=60))
def test_decimation_outside_the_box_never_changes_what_is_visible(steps):
    """Any DET-like staircase (pfa falls, pmiss rises): collapsing outside runs hides nothing."""
    x, y = [2.5], [-4.0]
    for kind, d in steps:  # 0, 1: move left; 2, 3: move up (a staircase)
        x.append(x[-1] - d if kind < 2 else x[-1])
        y.append(y[-1] + d if kind >= 2 else y[-1])
    n = len(x)
    frame = pl.DataFrame({SERIES: ["s"] * n, "curve": ["steppy"] * n, "pfa": np.arange(n) / n,
                          "pmiss": np.arange(n) / n, "probit_pfa": x, "probit_pmiss": y})
    box = (-1.0, 0.5, -1.0, 0.5)
    kept = display_decimate(frame, cell=1e-9, box=box)
    assert kept.height <= n and kept["probit_pfa"][0] == x[0] and kept["probit_pfa"][-1] == x[-1]
    assert _clipped_segments(kept["probit_pfa"].to_numpy(), kept["probit_pmiss"].to_numpy(),
                             box) == _clipped_segments(np.array(x), np.array(y), box)


def test_inputs_from_pandas_and_pyarrow():
    pytest.importorskip("pandas")
    df = small()
    det = curves.det_curve(df)
    spec = plots.det_plot(det).to_dict()
    assert plots.det_plot(det.to_pandas()).to_dict() == spec
    assert plots.det_plot(det.to_arrow()).to_dict() == spec
    rep = build_report(df.to_pandas(), operating_points=[0.1])
    assert sorted(rep.summary["system"].to_list()) == ["A", "B"]
    assert build_report(df.to_arrow(), operating_points=[0.1]).summary.equals(rep.summary)


def test_no_row_limit_truncation():
    """A curve far above Altair's 5,000-row default is embedded whole."""
    rng = np.random.default_rng(0)
    n = 40_000
    df = pl.DataFrame({"score": rng.normal(0, 1, n), "label": rng.random(n) < 0.5})
    det = curves.det_curve(df, resolution=None)
    assert det.height > 5000
    spec = plots.det_plot(det, curve="steppy", resolution=None).to_dict(validate=False)
    assert len(spec["layer"][0]["data"]["values"]) == det.filter(
        pl.col("curve") == "steppy").height


@pytest.mark.parametrize("suffix", ["html", "svg", "png", "pdf"])
def test_save_chart_offline(tmp_path, suffix):
    chart = charts()["nber"]
    path = plots.save_chart(chart, tmp_path / f"c.{suffix}")
    data = path.read_bytes()
    assert len(data) > 1000
    magic = {"svg": b"<svg", "png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "html": b"<!DOCTYPE"}
    assert data.lstrip()[:len(magic[suffix])].lower() == magic[suffix].lower()
    if suffix == "html":
        text = data.decode()
        assert "<script src=" not in text.replace("<script src=\"data:", "")
        assert "cdn.jsdelivr" not in text
    with pytest.raises(ScoreframeError, match="already exists"):
        plots.save_chart(chart, path)
    assert path.read_bytes() == data
    plots.save_chart(chart, path, overwrite=True)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_save_chart_unknown_suffix(tmp_path):
    with pytest.raises(UsageError, match="unknown suffix"):
        plots.save_chart(charts()["nber"], tmp_path / "c.jpeg")
    assert not list(tmp_path.iterdir())


def test_charts_display_offline_in_notebooks():
    assert alt.renderers.active == "scoreframe"  # enabled by importing scoreframe.views.plots
    bundle = charts()["det"]._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert svg.startswith("<svg") and "text/html" not in bundle
    assert not re.search(r"cdn|jsdelivr|unpkg|esm\.sh", svg)
    plots.disable_offline_display()
    try:
        assert alt.renderers.active == "default"
        plots.enable_offline_display()  # default is active again: it switches back
        assert alt.renderers.active == "scoreframe"
        alt.renderers.enable("mimetype")
        plots.enable_offline_display()  # a renderer the user chose is left alone
        assert alt.renderers.active == "mimetype"
        plots.enable_offline_display(interactive=True)  # asked for: the spec rides along
        bundle = charts()["ape"]._repr_mimebundle_()
        assert bundle["text/plain"] == "<chart: Applied probability of error>"
        spec = next(v for k, v in bundle.items() if "vegalite" in k)
        assert spec["hconcat"][0]["layer"][0]["mark"]["type"] == "line"
    finally:
        plots.enable_offline_display(force=True)
    assert set(charts()["ape"]._repr_mimebundle_()) == {"image/svg+xml", "text/plain"}


def test_report_content(report_file):
    path, rep, _ = report_file
    text = path.read_text()
    # summary table: every group, counts, metrics (EER in percent) and rule-of-30 warnings
    n_groups = rep.summary.height
    start = text.index("<table class='summary'>")
    table = text[start:text.index("</table>", start)]
    assert table.count("<tr>") == n_groups + 1 and "EER (%)" in table
    eer = rep.summary.row(0, named=True)["eer"]
    assert f"<td>{100 * eer:.2f}</td>" in table
    assert "minDCF @0.01" in text and "Cllr" in text
    if rep.summary["dr30_ok"].not_().any():
        assert "rule of 30" in text
    # offline: libraries inlined, no external script
    assert "<script src=" not in text and "vegaEmbed" in text
    n_charts = len(rep.charts())
    assert text.count("class='chart'") == n_charts
    assert len(list((path.parent / "charts").glob("*.svg"))) == n_charts


def test_report_refuses_existing_outputs_before_work(report_file, tmp_path):
    path, rep, _ = report_file
    calls: list = []
    with pytest.raises(ScoreframeError, match="already exists"):
        write_report(rep, path, progress=lambda d, t: calls.append(d))
    assert calls == []
    out = tmp_path / "r.html"
    with pytest.raises(ScoreframeError, match="already exists"):
        write_report(rep, out, export_dir=path.parent / "charts", export_formats=("svg",),
                     progress=lambda d, t: calls.append(d))
    assert calls == [] and not out.exists()


def test_report_with_calibration_and_cli(tmp_path, report_file, capsys):
    path, _, _ = report_file
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
                    "rendering test needs Debian's `chromium` package (`make test` installs "
                    "it where apt-get can)")
def test_report_renders_in_headless_chromium(report_file, tmp_path):
    path, rep, _ = report_file
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000",
             "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([_chromium(), *flags, "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-rendered="true"' in html and 'data-errors="0"' in html
    _, packed = share_data({str(i): c.to_dict(validate=False)
                            for i, (_, _, c) in enumerate(rep.charts())})
    assert f'data-rows="{sum(p["n"] for p in packed.values())}"' in html  # decoded in the page
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


def _unpack(p: dict) -> list[dict]:
    """A Python twin of the page's decoder (report._UNPACK_JS)."""
    cols = {}
    for name, e in p["c"].items():
        if isinstance(e, list):
            cols[name] = e
        elif "k" in e:
            cols[name] = [e["d"][i] for i in e["k"]]
        elif "r" in e:
            cols[name] = [a + i * s for a, s, n in e["r"] for i in range(n)]
        else:
            cols[name] = list(np.cumsum(e["z"]) / e["q"])
    return [{k: cols[k][i] for k in cols} for i in range(p["n"])]


def test_shared_data_rebuilds_every_row(report_file):
    """Each chart's rows come back from the shared, packed datasets: exact, or on a grid."""
    _, rep, _ = report_file
    specs = {str(i): c.to_dict(validate=False) for i, (_, _, c) in enumerate(rep.charts())}
    shared, packed = share_data(specs)
    n_inline = 0

    def pairs(a, b):
        if isinstance(a, dict):
            replaced = "values" in a.get("data", {}) and "name" in b.get("data", {})
            if replaced:
                yield a["data"]["values"], _unpack(packed[b["data"]["name"]])
            for k in (k for k in a if not (replaced and k == "data")):
                yield from pairs(a[k], b[k])
        elif isinstance(a, list):
            for x, y in zip(a, b, strict=True):
                yield from pairs(x, y)

    for orig, back in (p for k in specs for p in pairs(specs[k], shared[k])):
        n_inline += 1
        assert len(orig) == len(back) and [list(r) for r in orig] == [list(r) for r in back]
        for name in (orig[0] if orig else {}):
            a = [r[name] for r in orig]
            b = [r[name] for r in back]
            if name in GRID_COLUMNS:
                on = [v for v in a if abs(v) < 999]
                tol = (max(on) - min(on)) / 20_000 if on else 1.0
                np.testing.assert_allclose(b, a, rtol=0, atol=tol)
            else:
                assert a == b, name
    assert n_inline > len(packed) > 0  # datasets shared between charts are stored once
    def inline_rows(node) -> int:
        if isinstance(node, list):
            return sum(inline_rows(x) for x in node)
        if not isinstance(node, dict):
            return 0
        here = isinstance(node.get("data"), dict) and "values" in node["data"]
        return int(here) + sum(inline_rows(v) for v in node.values())

    assert inline_rows(shared) == 0 < inline_rows(specs)  # no rows left inline


def test_render_html_escapes_titles():
    df = small()
    rep = build_report(df, operating_points=[0.1])
    rep.title = "<b>x</b>"
    assert "<title>&lt;b&gt;x&lt;/b&gt;</title>" in render_html(rep)


def test_shared_data_keeps_types_apart():
    """Rows equal in Python but not in JSON (1, 1.0, True) are not merged into one dataset."""
    def spec(v):
        return {"data": {"values": [{"a": v, "b": "x"}, {"a": v, "b": "y"}]}, "mark": "point"}

    shared, packed = share_data({"p": spec(1), "q": spec(1.0), "r": spec(True), "s": spec(1)})
    names = {k: s["data"]["name"] for k, s in shared.items()}
    assert names["p"] == names["s"] and len({names["p"], names["q"], names["r"]}) == 3
    assert [_unpack(packed[names[k]])[0]["a"] for k in "pqr"] == [1, 1.0, True]
    assert [type(_unpack(packed[names[k]])[0]["a"]) for k in "pqr"] == [int, float, bool]
