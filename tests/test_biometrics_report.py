"""The report's biometrics section: charts, tables, intervals, CLI options, bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import polars as pl
import pytest

import scoreframe as sf
from scoreframe.cli import main
from scoreframe.errors import ScoreframeError, UnresolvedTargetWarning
from scoreframe.metrics import fnmr_at_fmr, min_hter, zero_fmr
from scoreframe.views.report import build_report, render_html, write_report


def trials(n: int = 4000, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.3
    sex = rng.choice(["f", "m"], n)
    score = np.where(lab, rng.normal(2.0, 1.0, n), rng.normal(np.where(sex == "f", 0.3, 0), 1, n))
    return pl.DataFrame({"score": np.round(score, 2), "label": lab, "sex": sex,
                         "split": rng.choice(["dev", "eval"], n),
                         "model": [f"m{i}" for i in rng.integers(0, 80, n)],
                         "segment": [f"s{i}" for i in range(n)]})


def candidates(seed: int = 2) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(300):
        mate = p % 40 if p < 200 else -1  # 100 searches with no mate in the gallery
        for g in range(40):
            rows.append((f"p{p}", f"g{g}", float(rng.normal(3.0 if g == mate else 0, 1)),
                         g == mate))
    return pl.DataFrame(rows, schema=["probe", "gallery_id", "score", "mate"], orient="row")


def _quiet(fn, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        return fn(*a, **kw)


def test_section_values_charts_and_tables() -> None:
    df = trials()
    opts = sf.Biometric(fmr=(1e-2, 0.1), threshold_from="split = 'dev'",
                        identification=candidates(), demographics=("sex",))
    rep = _quiet(build_report, df, by="sex", metrics=[opts])
    names = [n for s, n, _ in rep.charts() if s == "biometrics"]
    assert names == ["fnmr_fmr_log", "epc", "cmc", "fnir_fpir", "differentials"]
    det = next(c for _, n, c in rep.charts() if n == "fnmr_fmr_log").to_dict()
    assert det["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    # the table's values are the scalar API's on each group's scores
    t = rep.biometric.targets
    for sex in ("f", "m"):
        part = df.filter(pl.col("sex") == sex)
        tar = part.filter(pl.col("label"))["score"].to_numpy()
        non = part.filter(~pl.col("label"))["score"].to_numpy()
        want = fnmr_at_fmr(tar, non, [1e-2, 0.1])
        got = t.filter((pl.col("sex") == sex) & (pl.col("kind") == "fnmr_at_fmr"))
        np.testing.assert_array_equal(got["rate"].to_numpy(), want.fnmr)
        np.testing.assert_array_equal(got["threshold"].to_numpy(), want.threshold)
        s = rep.biometric.scalars.filter(pl.col("sex") == sex)
        assert s["zero_fmr"][0] == zero_fmr(tar, non)
        assert s["min_hter"][0] == min_hter(tar, non)
    html = render_html(rep)
    assert "FNMR at FMR targets" in html and "Identification (1:N)" in html
    assert "Demographic differentials" in html


def test_section_intervals_with_bootstrap(tmp_path) -> None:  # noqa: ANN001
    df = trials(3000, seed=3)
    rep = _quiet(build_report, df,
                 intervals=sf.Intervals(bootstrap=20, resample=["model", "segment"]),
                 metrics=[sf.Biometric(fmr=(0.05,), demographics=("sex",))])
    t = rep.biometric.targets
    assert t["rate_lo"][0] <= t["rate"][0] <= t["rate_hi"][0]
    s = rep.biometric.scalars
    assert s["min_hter_lo"][0] <= s["min_hter"][0] <= s["min_hter_hi"][0]
    from scoreframe import evaluate

    ev = _quiet(evaluate, df, metrics=[sf.Biometric(fmr=[0.05])],
                intervals=sf.Intervals(bootstrap=20, resample=["model", "segment"]))
    for m in ("zero_fmr", "zero_fnmr", "min_hter", "auc_mw"):  # the same replicates
        assert (s[f"{m}_lo"][0], s[f"{m}_hi"][0]) == (ev[f"{m}_lo"][0], ev[f"{m}_hi"][0])
    assert (t["rate_lo"][0], t["rate_hi"][0]) == (ev["fnmr_at_fmr"][0][0]["fnmr_lo"],
                                                  ev["fnmr_at_fmr"][0][0]["fnmr_hi"])
    assert "rate_lo" in rep.biometric.differentials.groups.columns
    out = write_report(rep, tmp_path / "r.html")
    assert "<span class='ci'>" in out.read_text()


def test_cli_report_biometric(tmp_path) -> None:  # noqa: ANN001
    ds = tmp_path / "t.parquet"
    trials().write_parquet(ds)
    ident = tmp_path / "c.parquet"
    candidates().write_parquet(ident)
    out = tmp_path / "r.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        code = main(["report", str(ds), "-o", str(out), "--by", "sex", "--fmr", "0.01",
                     "--epc-dev", "split = 'dev'", "--identification", str(ident),
                     "--demographics", "sex"])
    assert code == 0
    text = out.read_text()
    assert "Biometric verification" in text and '"fnmr_fmr_log"' not in text
    assert "data-name='cmc'" in text and "data-name='differentials'" in text
    bad = tmp_path / "bad.html"
    assert main(["report", str(ds), "-o", str(bad), "--pair-with", "sex"]) == 2
    assert main(["report", str(ds), "-o", str(bad), "--epc-eval", "split = 'eval'",
                 "--biometric"]) == 2
    assert not bad.exists()


def test_options_say_what_is_wrong() -> None:
    with pytest.raises(ScoreframeError, match="fmr"):
        sf.Biometric(fmr=(1.5,))
    with pytest.raises(ScoreframeError, match="differentials need a global FMR"):
        sf.Biometric(fmr=(), demographics=("sex",))
    with pytest.raises(ScoreframeError, match="`epc_eval` needs `threshold_from`"):
        sf.Biometric(epc_eval="split = 'eval'")
    with pytest.raises(ScoreframeError, match="bad `rank`"):
        sf.Biometric(rank=(0,))
    with pytest.raises(ScoreframeError, match="unknown `tie`"):
        sf.Biometric(tie="random")
    b = sf.Biometric(fmr=(1e-3, 1e-2), fpir=0.05, rank=1, demographics="sex")
    assert json.dumps([b.fmr, b.fpir, b.rank, b.demographics]) == \
        '[[0.001, 0.01], [0.05], [1], ["sex"]]'
    assert b.differentials_target == 0.001


def test_one_biometric_object_for_evaluate_and_the_report() -> None:
    # the same object in evaluate and in the report gives the same numbers; the report-only
    # fields (here the differentials) change nothing in evaluate
    df = trials(3000, seed=7)
    b = sf.Biometric(fmr=[0.01, 0.1], fnmr=[0.05], demographics="sex")
    ev = _quiet(sf.evaluate, df, by="split", metrics=[b])
    assert ev.equals(_quiet(sf.evaluate, df, by="split",
                            metrics=[sf.Biometric(fmr=[0.01, 0.1], fnmr=[0.05])]))
    rep = _quiet(build_report, df, by="split", metrics=[b])
    t = rep.biometric.targets
    for row in ev.iter_rows(named=True):
        got = t.filter((pl.col("split") == row["split"]) & (pl.col("kind") == "fnmr_at_fmr"))
        assert got["rate"].to_list() == [r["fnmr"] for r in row["fnmr_at_fmr"]]
        got = t.filter((pl.col("split") == row["split"]) & (pl.col("kind") == "fmr_at_fnmr"))
        assert got["rate"].to_list() == [r["fmr"] for r in row["fmr_at_fnmr"]]
        s = rep.biometric.scalars.filter(pl.col("split") == row["split"])
        assert (s["zero_fmr"][0], s["min_hter"][0]) == (row["zero_fmr"], row["min_hter"])
    assert rep.biometric.differentials is not None


def test_pandas_and_notebook_output() -> None:
    from scoreframe import evaluate
    from scoreframe.metrics import explode_targets

    df = trials(2000, seed=5)
    res = evaluate(df, metrics=[sf.Biometric(fmr=[0.01, 0.1], at_threshold=[1.0])],
                   intervals=sf.Intervals(bootstrap=10))
    cell = res.to_pandas()["fnmr_at_fmr"][0]
    assert cell[0]["fmr_target"] == 0.01 and "fnmr_lo" in cell[0]
    flat = explode_targets(res).to_pandas()
    assert list(flat["fmr_target"]) == [0.01, 0.1]
    assert (flat["fnmr_lo"] <= flat["fnmr"]).all() and (flat["fnmr"] <= flat["fnmr_hi"]).all()
    assert "hter_lo" in explode_targets(res, "at_threshold").columns
    with pytest.raises(ScoreframeError, match="no `fixed` column"):
        explode_targets(res, "fixed")
    rep = _quiet(build_report, df, metrics=[sf.Biometric(fmr=(0.01,))])
    assert "FNMR at FMR targets" in rep.biometric._repr_html_()


def test_section_renders_in_headless_chromium(tmp_path) -> None:  # noqa: ANN001
    import subprocess

    from test_plots_report import _chromium

    if _chromium() is None:
        pytest.skip("no Chromium on this machine (Debian's `chromium` package)")
    rep = _quiet(build_report, trials(), by="sex",
                 intervals=sf.Intervals(bootstrap=10, resample=["model", "segment"]),
                 metrics=[sf.Biometric(fmr=(1e-2, 0.1), threshold_from="split = 'dev'",
                                       identification=candidates(), demographics=("sex",))])
    path = write_report(rep, tmp_path / "r.html")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000",
             "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([_chromium(), *flags, "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-rendered="true"' in dom.stdout and 'data-errors="0"' in dom.stdout
    assert dom.stdout.count("<svg") >= len(rep.charts())
