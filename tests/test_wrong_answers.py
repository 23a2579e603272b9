"""Wrong or unexplained answers with exit 0 (issue "Trust, round 3", item 4), one test each.

Each case failed on the main branch before its fix (the commit that added it says how):

* (a) all-tied scores: ``min_cllr`` was 1.00000018 (BOSARIS' tie-breaking ramp) while its
  bootstrap interval was [1, 1]; PAV of tied scores is one block with llr 0, so the exact
  value is 1 and Cllr - minCllr of a calibrated system cannot be negative;
* (b) ``compare`` reported other ``min_cllr`` (and Cllr, DCF) values than ``evaluate`` for the
  same system (its points came from the bootstrap kernel);
* (c) a ``label`` that contradicts ``trial_type`` (a spoof marked target) was accepted;
* (d) ``--tandem`` silently computed the t-DCF on the trials both systems scored;
* (e) the report's score histograms of the pooled ``all`` groups had no data.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scoreframe as sf
from scoreframe.cli import main
from scoreframe.errors import AlignmentError, ScoreframeWarning, ValidationError
from scoreframe.frames.synth import synth_chunks
from scoreframe.kernels import cllr as kc
from scoreframe.kernels.sorted_scores import pav_blocks, sort_scores
from scoreframe.metrics import Intervals
from scoreframe.results.compare import compare
from scoreframe.results.evaluate import evaluate, explode_dcf
from scoreframe.results.tandem import tandem_t_dcf
from scoreframe.views.report import build_report

# ---------------------------------------------------------------- (a) all-tied scores


# (47, 3) and (94, 5): counts where the old sum-then-divide formula rounded (47 log 2) / 47
# away from log 2 even without the ramp
@pytest.mark.parametrize(("n_tar", "n_non"), [(1, 1), (3, 5), (14, 26), (47, 3), (94, 5),
                                              (101, 1000)])
def test_min_cllr_of_tied_scores_is_exactly_one(n_tar: int, n_non: int) -> None:
    """One PAV block, llr 0 for every trial: Cllr of the PAV llrs is exactly 1 bit."""
    tar, non = np.full(n_tar, 0.25), np.full(n_non, 0.25)
    blocks = pav_blocks(sort_scores(tar, non))
    assert blocks.n_tar.shape == (1,)
    assert kc.min_cllr(blocks) == 1.0
    assert sf.min_cllr(tar, non) == 1.0
    # BOSARIS' ramp stays available to reproduce its numbers (tests/data/bosaris all_equal)
    assert sf.min_cllr(tar, non, ramp=True) > 1.0


def test_evaluate_min_cllr_of_tied_scores_is_one_and_inside_its_interval() -> None:
    n = 40
    df = pl.DataFrame({"model": [f"m{i}" for i in range(n)], "segment": ["s"] * n,
                       "score": [0.0] * n, "label": [i % 3 == 0 for i in range(n)]})
    res = evaluate(df, intervals=Intervals(bootstrap=50, seed=3))
    row = res.row(0, named=True)
    assert row["min_cllr"] == 1.0
    assert row["cllr"] == 1.0  # llr 0 everywhere: calibrated, so no calibration loss
    assert row["cal_loss"] == 0.0
    assert row["min_cllr_lo"] <= row["min_cllr"] <= row["min_cllr_hi"]


@pytest.mark.parametrize("n", [150])
def test_bootstrap_interval_of_tied_scores_is_exactly_one(n: int) -> None:
    df = pl.DataFrame({"score": [0.0] * n, "label": [i % 3 == 0 for i in range(n)]})
    for seed in range(3):
        row = evaluate(df, intervals=Intervals(bootstrap=200, seed=seed)).row(0, named=True)
        assert row["min_cllr_lo"] == row["min_cllr"] == row["min_cllr_hi"] == 1.0


def test_min_cllr_never_exceeds_cllr_or_one_on_ties() -> None:
    """minCllr is a minimum over calibrations that include the identity and llr = 0."""
    rng = np.random.default_rng(5)
    for _ in range(50):
        tar = rng.integers(-3, 4, rng.integers(1, 40)).astype(float)
        non = rng.integers(-3, 4, rng.integers(1, 40)).astype(float)
        m = sf.min_cllr(tar, non)
        assert m <= 1.0
        assert m <= sf.cllr(tar, non) + 1e-15


# ---------------------------------------------------------------- (b) compare == evaluate


def test_compare_points_equal_evaluate_bit_for_bit() -> None:
    df = pl.concat(synth_chunks(4000, n_systems=2, seed=11, n_conditions=3))
    p = [0.01, 0.1]
    cmp = compare(df, "sys1", "sys2", by="condition", operating_points=p,
                  intervals=Intervals(bootstrap=20))
    ev = evaluate(df, by="condition", operating_points=p)
    scalars = [m for m in cmp.filter(pl.col("p_target").is_null())["metric"].unique()
               if m in ev.columns]
    assert {"eer", "cllr", "min_cllr"} <= set(scalars)
    want: dict[tuple[str, str, str, float | None], float] = {}
    for r in ev.iter_rows(named=True):
        for m in scalars:
            want[(r["system"], r["condition"], m, None)] = r[m]
    for r in explode_dcf(ev).iter_rows(named=True):
        for m in ("act_dcf_norm", "min_dcf_norm"):
            want[(r["system"], r["condition"], m, r["p_target"])] = r[m]
    rows = cmp.filter(pl.col("test") == "paired bootstrap").iter_rows(named=True)
    n = 0
    for r in rows:
        for side, system in (("a", "sys1"), ("b", "sys2")):
            expected = want[(system, r["condition"], r["metric"], r["p_target"])]
            assert r[side] == expected, (r["condition"], r["metric"], r["p_target"], side)
            n += 1
        assert r["diff"] == r["b"] - r["a"]
    # 3 conditions + pooled; every compared scalar + 2 DCFs at 2 priors
    assert n == 2 * 4 * (len(scalars) + 2 * 2)


# ---------------------------------------------------------------- (c) label vs trial_type


def _sasv(label: list[object]) -> pl.DataFrame:
    types = ["target", "target", "nontarget", "nontarget", "spoof", "spoof"]
    return pl.DataFrame({"model": [f"m{i}" for i in range(6)], "segment": ["s"] * 6,
                         "score": [3.0, 2.0, 0.0, -1.0, 1.0, -2.0], "label": label,
                         "trial_type": types})


def test_consistent_labels_and_trial_types_are_accepted() -> None:
    for lab in ([True, True, False, False, False, False],
                ["target", "target", "nontarget", "nontarget", "nontarget", None]):
        res = evaluate(_sasv(lab), metrics=["spoof"])
        assert res["n_spoof"][0] == (2 if lab[-1] is not None else 1)


@pytest.mark.parametrize(("label", "shown"), [
    ([True, True, False, False, True, False], "e.g. label True with trial_type 'spoof' (row 4)"),
    (["target", "nontarget", "nontarget", "nontarget", "nontarget", "nontarget"],
     "e.g. label False with trial_type 'target' (row 1)"),
    ([1, 1, 1, 0, 0, 0], "1 'nontarget' trial(s) labelled target (e.g. row 2) and 1 labelled "
                         "non-target (e.g. row 3)"),
])
def test_label_contradicting_trial_type_is_an_error(label, shown) -> None:
    with pytest.raises(ValidationError) as err:
        evaluate(_sasv(label), metrics=["spoof"])
    text = str(err.value)
    assert "contradicts `trial_type`" in text and shown in text


def test_cm_labels_bona_fide_are_accepted_per_system() -> None:
    """A CM system labels bona fide trials (target and nontarget) True: not a contradiction."""
    asv = _sasv([True, True, False, False, False, False]).with_columns(system=pl.lit("asv"))
    cm = _sasv([True, True, True, True, False, False]).with_columns(system=pl.lit("cm"))
    res = evaluate(pl.concat([asv, cm]), metrics=["spoof"])
    assert res["n_spoof"].to_list() == [2, 2]
    mixed = cm.with_columns(label=pl.Series([True, True, True, False, False, False]))
    with pytest.raises(ValidationError, match="in system `cm`: 1 'nontarget'"):
        evaluate(pl.concat([asv, mixed]), metrics=["spoof"])


def test_label_contradicting_trial_type_cli_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "sasv.parquet"
    _sasv([True, True, False, False, True, False]).write_parquet(path)
    out = tmp_path / "r.json"
    for argv in (["evaluate", str(path), "--spoof", "-o", str(out)],
                 ["report", str(path), "-o", str(tmp_path / "r.html")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "contradict" in err and "Traceback" not in err
    assert not out.exists() and not (tmp_path / "r.html").exists()


# ---------------------------------------------------------------- (d) tandem coverage


def _tandem_table(n: int = 30, cm_every: int = 2) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    types = np.array(["target", "nontarget", "spoof"])[np.arange(n) % 3]
    asv = pl.DataFrame({"system": "asv", "model": [f"m{i}" for i in range(n)],
                        "segment": [f"s{i}" for i in range(n)],
                        "score": rng.normal(size=n), "trial_type": types})
    keep = np.arange(n) % cm_every == 0
    cm = asv.filter(pl.Series(keep)).with_columns(
        system=pl.lit("cm"), score=pl.Series(rng.normal(size=int(keep.sum()))))
    return pl.concat([asv, cm])


def test_tandem_with_unscored_trials_is_an_error_with_counts() -> None:
    with pytest.raises(AlignmentError) as err:
        tandem_t_dcf(_tandem_table(), asv="asv", cm="cm")
    text = str(err.value)
    assert "15 of 30 ASV trial(s) have no `cm` score" in text
    assert "m1/s1" in text  # an example trial
    assert "unpaired='drop'" in text


def test_tandem_trials_scored_only_by_cm_are_an_error_too() -> None:
    df = _tandem_table(cm_every=1)
    df = df.filter(~((pl.col("system") == "asv") & (pl.col("model") == "m7")))
    with pytest.raises(AlignmentError, match=r"1 of 30 CM trial\(s\) have no `asv` score"
                       r" \(e\.g\. m7/s7\)"):
        tandem_t_dcf(df, asv="asv", cm="cm")


def test_tandem_drop_unpaired_warns_with_the_count() -> None:
    with pytest.warns(ScoreframeWarning, match=r"dropped 15 of 30 ASV trial\(s\)"):
        res = tandem_t_dcf(_tandem_table(), asv="asv", cm="cm", unpaired="drop")
    assert res["n_trials"] == 15
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fully paired: no warning
        full = tandem_t_dcf(_tandem_table(cm_every=1), asv="asv", cm="cm", unpaired="drop")
    assert full["n_trials"] == 30


def test_tandem_cli_exit_2_and_nothing_written(tmp_path, capsys) -> None:
    path = tmp_path / "sasv.parquet"
    _tandem_table().with_columns(label=pl.col("trial_type") == "target").write_parquet(path)
    out = tmp_path / "r.json"
    assert main(["evaluate", str(path), "--tandem", "asv", "cm", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "15 of 30" in err
    assert not out.exists()
    assert main(["evaluate", str(path), "--tandem", "asv", "cm", "--tandem-unpaired", "drop",
                 "-o", str(out)]) == 0
    assert "warning: tandem t-DCF: dropped 15 of 30 ASV trial(s)" in capsys.readouterr().err
    assert json.loads(out.read_text())["t_dcf"]["n_trials"] == 15


# ---------------------------------------------------------------- (e) report histograms


def _datasets(spec: object) -> list[list[object]]:
    """Every inline dataset of a Vega-Lite spec (``datasets`` and ``data.values``)."""
    found: list[list[object]] = []
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == "datasets" and isinstance(v, dict):
                found += list(v.values())
            elif k == "values" and isinstance(v, list):
                found.append(v)
            else:
                found += _datasets(v)
    elif isinstance(spec, list):
        for v in spec:
            found += _datasets(v)
    return found


def _histograms(rep) -> dict[str, list[list[object]]]:
    return {name: _datasets(chart.to_dict()) for _, name, chart in rep.charts()
            if name.startswith("histogram")}


@pytest.mark.parametrize(("by", "text_labels"), [("condition", False),
                                                 (["gender", "channel"], False),
                                                 ("channel,gender", False),
                                                 ("condition", True)])
def test_every_report_histogram_has_data(by, text_labels: bool) -> None:
    df = pl.concat(synth_chunks(3000, n_systems=2, seed=2, n_conditions=2))
    if text_labels:  # the histograms read the raw column: all densities were 0
        df = df.with_columns(label=pl.when(pl.col("label")).then(pl.lit("target"))
                             .otherwise(pl.lit("nontarget")))
    rep = build_report(df, by=by, operating_points=0.1)
    hists = _histograms(rep)
    assert any(name.endswith("_all") or "_all_" in name for name in hists)
    for name, data in hists.items():
        assert data and all(len(d) > 0 for d in data), name
        rows = [r for d in data for r in d]
        assert {r["class"] for r in rows} == {"target", "non-target"}, name  # type: ignore[index]
        assert any(r["density"] > 0 for r in rows), name  # type: ignore[index]


def test_demo_style_report_histograms_have_data(tmp_path) -> None:
    """The demo's report: a dataset partitioned by system, grouped by channel."""
    from scoreframe.io.parquet import write_trials

    data = tmp_path / "trials"
    write_trials(synth_chunks(3000, n_systems=3, seed=0, chunk_trials=1000), data,
                 partition_by=["system"])
    rep = build_report(str(data), by=["channel"], operating_points=[0.01, 0.1])
    hists = _histograms(rep)
    assert sum(1 for n in hists if n.endswith("_all")) == 3
    for name, data_sets in hists.items():
        assert data_sets and all(len(d) > 0 for d in data_sets), name
    # the pooled histogram holds every trial of its system (densities integrate to 1)
    pooled = rep.histograms.filter(pl.col("channel") == "all")
    for _, part in pooled.group_by("system", "class"):
        area = float(((part["hi"] - part["lo"]) * part["density"]).sum())
        assert math.isclose(area, 1.0, rel_tol=1e-9)


def test_report_json_histograms_are_not_empty(tmp_path) -> None:
    """The written HTML embeds no empty dataset (the symptom in the issue)."""
    from scoreframe.views.report import write_report

    df = pl.concat(synth_chunks(2000, n_systems=1, seed=4, n_conditions=2))
    path = write_report(build_report(df, by="condition"), tmp_path / "r.html")
    html = Path(path).read_text(encoding="utf-8")
    assert '"values": []' not in html and '"values":[]' not in html
    # the report stores chart rows once, packed by column: every dataset has rows
    line = next(x for x in html.splitlines() if x.startswith("const PACKED = "))
    packed = json.loads(line[len("const PACKED = "):].rstrip(";").replace("<\\/", "</"))
    assert packed and all(d["n"] > 0 for d in packed.values())


# ---------------------------------------------------------------- noticed in the last round


def test_text_labels_1_0_mix_with_target_nontarget(tmp_path, capsys) -> None:
    """``1.0``/``0.0`` (a float label column written as text) were refused as soon as another
    row said ``target`` (the column is then read as text); they mean what the numbers mean."""
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("model,segment,score,label\na,x,1.0,1.0\nb,y,0.2,0.0\nc,z,0.5,target\n"
                     "d,w,0.1,nontarget\ne,v,0.3,0\n")
    numeric = tmp_path / "numeric.csv"
    numeric.write_text("model,segment,score,label\na,x,1.0,1.0\nb,y,0.2,0.0\nc,z,0.5,1.0\n"
                       "d,w,0.1,0.0\ne,v,0.3,0.0\n")
    for path in (mixed, numeric):
        assert main(["evaluate", str(path), "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["groups"][0]["n_tar"], doc["groups"][0]["n_non"]) == (2, 3)
    bad = tmp_path / "bad.csv"
    bad.write_text("model,segment,score,label\na,x,1.0,2.0\nc,z,0.5,target\nd,w,0.1,nontarget\n")
    assert main(["evaluate", str(bad)]) == 2
    assert "'2.0' (line 2)" in capsys.readouterr().err


def test_compare_table_shows_rates_in_percent_like_evaluate(tmp_path, capsys, monkeypatch) -> None:
    """One unit rule: rates in % with two decimals in console tables, fractions in frames."""
    monkeypatch.setenv("COLUMNS", "200")
    path = tmp_path / "two.parquet"
    df = pl.concat(synth_chunks(3000, n_systems=2, seed=1))
    df.write_parquet(path)
    eer = evaluate(df)["eer"].to_list()
    assert main(["compare", str(path), "--systems", "sys1", "sys2", "--bootstrap", "20"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "eer (%)" in x)
    assert f"{100 * eer[0]:.2f}" in line and f"{100 * eer[1]:.2f}" in line
    out = tmp_path / "cmp.csv"
    assert main(["compare", str(path), "--systems", "sys1", "sys2", "--bootstrap", "20",
                 "--format", "csv", "-o", str(out)]) == 0
    row = pl.read_csv(out).filter(pl.col("metric") == "eer").row(0, named=True)
    assert (row["a"], row["b"]) == (eer[0], eer[1])  # fractions, evaluate's values


@pytest.fixture(scope="module")
def two_systems(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("two") / "two.parquet"
    pl.concat(synth_chunks(2000, n_systems=2, seed=1)).write_parquet(path)
    return path


@pytest.mark.parametrize("argv", [
    ["evaluate", "{data}", "-o", "{out}/r.csv"],
    ["compare", "{data}", "--systems", "sys1", "sys2", "--bootstrap", "20", "-o",
     "{out}/c.json", "--format", "json"],
    ["report", "{data}", "-o", "{out}/r.html"],
    ["convert", "{data}", "-o", "{out}/ds"],
    ["synth", "{out}/ds", "--trials", "200"],
    ["demo", "--out", "{out}/demo", "--trials", "200"],
])
@pytest.mark.parametrize("parent", ["missing", "file"])
def test_an_output_whose_directory_is_missing_is_an_error(argv, parent, two_systems, tmp_path,
                                                         capsys) -> None:
    """One rule for every command: outputs go into existing directories (a mistyped path
    never creates directories); the error names the directory; nothing is written."""
    out = tmp_path / "nodir"
    if parent == "file":
        out.write_text("a file")
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [a.format(data=two_systems, out=out) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"`{out}`" in err
    assert ("does not exist" if parent == "missing" else "is not a directory") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_outputs_in_existing_directories_and_new_export_dirs_work(two_systems, tmp_path) -> None:
    assert main(["evaluate", str(two_systems), "-o", str(tmp_path / "r.csv")]) == 0
    charts = tmp_path / "charts"  # an output directory itself: created (its parent exists)
    assert main(["report", str(two_systems), "-o", str(tmp_path / "r.html"), "--export-dir",
                 str(charts), "--export-format", "svg"]) == 0
    assert any(charts.glob("*.svg"))
    assert main(["report", str(two_systems), "-o", str(tmp_path / "r2.html"), "--export-dir",
                 str(tmp_path / "no" / "charts")]) == 2
    assert not (tmp_path / "no").exists() and not (tmp_path / "r2.html").exists()


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_info_and_evaluate_word_duplicates_the_same_way(suffix, tmp_path, capsys) -> None:
    df = pl.DataFrame({"model": ["a", "a", "c", "d", "d", "d"],
                       "segment": ["x", "x", "z", "w", "w", "w"],
                       "score": [1.0, 0.2, 0.5, 0.1, 0.3, 0.3], "label": [1, 0, 1, 0, 0, 0]})
    path = tmp_path / f"dup.{suffix}"
    df.write_parquet(path) if suffix == "parquet" else df.write_csv(path)
    said = []
    for command in ("info", "evaluate"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        said.append(err[err.index("got "):err.index(" (hint")])
    assert said[0] == said[1]
    assert said[0].startswith("got 2 trial(s) that occur more than once (3 extra row(s)), "
                              "e.g. model=a, segment=x (x2")
