"""evaluate --spoof / --forensic / --tandem / eer_method="asvspoof" per condition.

Each column equals the array API of scoreframe.metrics.spoof / scoreframe.metrics.forensic (tested
against the
official implementations in tests/test_spoof.py and tests/test_forensic.py) on the group's
scores; pooled rows use the pooled scores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe import evaluate
from scoreframe.errors import ScoreframeError
from scoreframe.metrics import Binary, forensic, spoof
from scoreframe.results.tandem import tandem_t_dcf

DATA = Path(__file__).parent / "data" / "real" / "asvspoof5_fusion_dev" / \
    "asvspoof5_fusion_dev.parquet"


@pytest.fixture(scope="module")
def sasv() -> pl.DataFrame:
    df = pl.read_parquet(DATA).rename({"condition": "trial_type"})
    half = (pl.col("model").str.slice(1).cast(pl.Int64) % 2).cast(pl.String)
    return df.with_columns(half=half)


def classes(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(df.filter(pl.col("trial_type") == c)["score"].to_numpy()  # type: ignore[return-value]
                 for c in ("target", "nontarget", "spoof"))


def test_spoof_and_forensic_columns_per_group(sasv):
    asv = sasv.filter(pl.col("system") == "asv")
    res = evaluate(asv, by="half", metrics=["spoof", "forensic"])
    for half in ("0", "1", "all"):
        part = asv if half == "all" else asv.filter(pl.col("half") == half)
        row = res.filter(pl.col("half") == half).row(0, named=True)
        t, n, s = classes(part)
        a = spoof.a_dcf(t, n, s)
        assert row["a_dcf"] == a["min_a_dcf"] and row["a_dcf_threshold"] == a["threshold"]
        e = spoof.sasv_eer(t, n, s)
        assert (row["sasv_eer"], row["sv_eer"], row["spf_eer"]) == (
            e["sasv_eer"], e["sv_eer"], e["spf_eer"])
        assert row["n_spoof"] == s.size
        non = np.concatenate((n, s))
        assert row["auc"] == forensic.auc(t, non)
        m = forensic.misleading_evidence(t, non)
        assert (row["rmep"], row["rmed"]) == (m["rmep"], m["rmed"])
        el = forensic.elub(t, non)
        assert (row["elub_lower_log10"], row["elub_upper_log10"]) == (
            el["lower_log10"], el["upper_log10"])


def test_asvspoof_eer_method(sasv):
    cm = sasv.filter(pl.col("system") == "cm")
    res = evaluate(cm, by="half", metrics=[Binary(eer_method="asvspoof")])
    tar = cm.filter(pl.col("label"))["score"].to_numpy()
    non = cm.filter(~pl.col("label"))["score"].to_numpy()
    assert res.filter(pl.col("half") == "all")["eer"][0] == spoof.asvspoof_eer(tar, non)["eer"]


def test_tandem_matches_the_array_api(sasv):
    out = tandem_t_dcf(sasv, asv="asv", cm="cm", variant="2019")
    asv = sasv.filter(pl.col("system") == "asv")
    cm = sasv.filter(pl.col("system") == "cm")
    t, n, s = classes(asv)
    ct, cn, cs = classes(cm)
    ref = spoof.t_dcf(t, n, s, np.concatenate((ct, cn)), cs, variant="2019")
    assert out["min_t_dcf"] == ref["min_t_dcf"] and out["n_trials"] == asv.height


def test_spoof_needs_trial_type(sasv):
    with pytest.raises(ScoreframeError, match="trial_type"):
        evaluate(sasv.drop("trial_type"), metrics=["spoof"])
    bad = sasv.with_columns(pl.when(pl.col("model") == "t000003").then(pl.lit("bonafide"))
                            .otherwise(pl.col("trial_type")).alias("trial_type"))
    with pytest.raises(ScoreframeError, match="bonafide"):
        evaluate(bad, metrics=["spoof"])


def test_cli_spoof_tandem_json(sasv, tmp_path):
    path = tmp_path / "sasv.parquet"
    sasv.write_parquet(path)
    out = subprocess.run([sys.executable, "-m", "scoreframe", "evaluate", str(path), "--spoof",
                          "--tandem", "asv", "cm", "--format", "json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert {"min_t_dcf", "cm_threshold", "c0", "c1", "c2"} <= set(doc["t_dcf"])
    assert {g["system"] for g in doc["groups"]} == {"asv", "cm"}
    assert all("a_dcf" in g for g in doc["groups"])
    bad = subprocess.run([sys.executable, "-m", "scoreframe", "evaluate", str(path),
                          "--tandem", "asv", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "nope" in bad.stderr
