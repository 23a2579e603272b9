"""1:N identification: brute-force twins (full sort per probe), the peers' values, bad input."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.errors import ScoreframeError, UnresolvedTargetWarning, ValidationError
from scoreframe.identification import cmc_curve, fnir_fpir_curve, identify, read_score_matrix

REF = json.loads((Path(__file__).parent / "data" / "biometrics_reference" /
                  "identification.json").read_text())


def searches(n_probe=60, n_gal=12, seed=1, step=0.5, open_frac=0.3):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_probe):
        mate = -1 if rng.random() < open_frac else int(rng.integers(0, n_gal))
        for g in range(n_gal):
            s = rng.normal(1.5 if g == mate else 0.0, 1.0)
            rows.append((f"p{p:03d}", f"g{g:02d}", float(np.round(s / step) * step) if step
                         else float(s), g == mate, "f" if p % 2 else "m"))
    return pl.DataFrame(rows, schema=["probe", "candidate", "score", "mate", "sex"],
                        orient="row")


def brute_ranks(df, tie):
    """Rank of each mated probe's mate by a full sort of its candidates (row order kept)."""
    out = {}
    for (probe,), part in df.with_row_index("pos").group_by(["probe"], maintain_order=True):
        rows = part.rows(named=True)
        mates = [r for r in rows if r["mate"]]
        if not mates:
            continue
        m = mates[0]

        def key(r, m=m):
            tb = {"pessimistic": 0 if not r["mate"] else 1,
                  "optimistic": 1 if not r["mate"] else 0, "stable": r["pos"]}[tie]
            return (-r["score"], tb)
        ordered = sorted(rows, key=key)
        out[probe] = ordered.index(m) + 1
    return out


@pytest.mark.parametrize("tie", ["pessimistic", "optimistic", "stable"])
def test_cmc_equals_a_full_sort_per_probe(tie):
    df = searches()
    ranks = brute_ranks(df, tie)
    res = identify(df, rank=[1, 2, 3, 5, 12], tie=tie)
    for d in res["cmc"][0]:
        assert d["identification_rate"] == sum(r <= d["rank"] for r in ranks.values()) / len(ranks)
    small = identify(df, rank=[1, 2, 3, 5, 12], tie=tie, batch_rows=7)  # many merges
    assert small.equals(res)


def brute_open(df, f, rank, tie="pessimistic"):
    ranks = brute_ranks(df, tie)
    best_nm = [part["score"].max() for _, part in df.group_by("probe")
               if not part["mate"].any()]
    mate_scores = dict(df.filter(pl.col("mate")).select("probe", "score").iter_rows())
    cands = sorted(set(df["score"].to_list())) + [math.inf]
    for t in cands:  # the lowest threshold with FPIR <= f
        fp = sum(b >= t for b in best_nm)
        if fp / len(best_nm) <= f:
            hit = sum(1 for p, r in ranks.items() if r <= rank and mate_scores[p] >= t)
            return fp / len(best_nm), (len(ranks) - hit) / len(ranks), t
    raise AssertionError


def test_open_set_equals_a_threshold_scan():
    df = searches(n_probe=80, seed=2)
    res = identify(df, rank=[1, 3], fpir=[0.05, 0.2, 0.5])
    for o in res["open_set"][0]:
        fpir, fnir, t = brute_open(df, o["fpir_target"], o["rank"])
        assert (o["fpir"], o["fnir"]) == (fpir, fnir)
        assert abs(o["dir"] + fnir - 1) < 1e-15
        if math.isfinite(t):
            assert o["threshold"] == t
    curve = fnir_fpir_curve(df, rank=1)
    for row in curve.iter_rows(named=True):
        fp, fn = brute_open(df, row["fpir"], 1)[:2]
        assert (row["fpir"], row["fnir"]) == (fp, fn)


def test_conditions_pooled_row_and_curves():
    df = searches()
    res = identify(df, rank=[1, 5], by="sex")
    assert res["sex"].to_list() == ["f", "m", "all"]
    for row in res.iter_rows(named=True):
        sub = df if row["sex"] == "all" else df.filter(pl.col("sex") == row["sex"])
        ranks = brute_ranks(sub, "pessimistic")
        assert row["n_mated"] == len(ranks)
        assert row["cmc"][0]["identification_rate"] == sum(r == 1 for r in ranks.values()) \
            / len(ranks)
    c = cmc_curve(df, max_rank=12, by="sex")
    assert c.height == 36 and c.filter(pl.col("rank") == 12)["identification_rate"].max() == 1.0


def test_score_matrix_npz_and_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(0)
    s = np.round(rng.normal(size=(20, 6)), 1)
    subj_p = np.array([f"s{i % 8}" for i in range(20)])
    subj_g = np.array([f"s{i}" for i in range(6)])
    ids_p = np.array([f"p{i}" for i in range(20)])
    ids_g = np.array([f"g{i}" for i in range(6)])
    np.savez(tmp_path / "m.npz", scores=s, probe_ids=ids_p, gallery_ids=ids_g,
             probe_subjects=subj_p, gallery_subjects=subj_g)
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f["scores"], f["probe_ids"], f["gallery_ids"] = s, ids_p.astype("S"), ids_g.astype("S")
        f["mates"] = subj_p[:, None] == subj_g[None, :]
    long = read_score_matrix(tmp_path / "m.npz").collect()
    assert long.height == 120 and long["mate"].sum() == 16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        a = identify(tmp_path / "m.npz", rank=[1, 2], fpir=[0.2])
        b = identify(tmp_path / "m.h5", rank=[1, 2], fpir=[0.2])
        c = identify(long, rank=[1, 2], fpir=[0.2])
    assert a.equals(b) and a.equals(c) and a["n_nonmated"][0] == 4


@pytest.mark.parametrize("case", REF["cases"], ids=[c["name"] for c in REF["cases"]])
def test_tie_rules_reproduce_bob_measure_and_pyeer(case):
    df = pl.DataFrame(case["rows"], schema=["probe", "candidate", "score", "mate"],
                      orient="row")
    if case["closed"]:
        pess = identify(df, rank=list(range(1, 7)))["cmc"][0]
        assert [d["identification_rate"] for d in pess] == case["bob"]["cmc"] \
            == case["bob"]["recognition_rate"]
        stable = identify(df, rank=list(range(1, 7)), tie="stable")["cmc"][0]
        # pyeer sums per-rank fractions: equal to the last unit of rounding
        np.testing.assert_allclose([d["identification_rate"] for d in stable], case["pyeer"],
                                   rtol=1e-15, atol=0)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnresolvedTargetWarning)
        res = identify(df, rank=[1, 3], fpir=[0.1, 0.2, 0.5], threshold="bob")
    got = {(o["fpir_target"], o["rank"]): o for o in res["open_set"][0]}
    for ref in case["bob"]["open"]:
        for r in (1, 3):
            o = got[(ref["fpir_target"], r)]
            assert o["threshold"] == ref["threshold"]
            assert o["dir"] == ref["rate"][str(r)]
            assert o["fpir"] == ref["false_alarm_rate"]


def test_bad_identification_input():
    df = searches(n_probe=5)
    two = df.with_columns(pl.when(pl.col("candidate").is_in(["g00", "g01"]))
                          .then(True).otherwise(pl.col("mate")).alias("mate"))
    with pytest.raises(ValidationError, match="more than one mate.*e.g. p000"):
        identify(two)
    with pytest.raises(ValidationError, match="column `mate` not found"):
        identify(df.drop("mate"))
    with pytest.raises(ValidationError, match="1 missing mate flag"):
        identify(df.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None)
                                 .otherwise(pl.col("mate")).alias("mate")))
    with pytest.raises(ScoreframeError, match="pessimistic, optimistic, stable|pessimistic"):
        identify(df, tie="random")
    with pytest.raises(ScoreframeError, match="bad `fpir` target"):
        identify(df, fpir=[1.5])
    with pytest.raises(ScoreframeError, match="bad `rank`"):
        identify(df, rank=[0])
    with pytest.warns(UnresolvedTargetWarning, match="cannot be resolved with [0-9]+ non-mated"):
        res = identify(searches(n_probe=6, open_frac=0.3, seed=4), fpir=[0.01])
    assert res["open_set"][0][0]["fnir"] is None


def test_identification_charts():
    from scoreframe.views.plots import cmc_plot, fnir_fpir_plot

    df = searches()
    spec = cmc_plot(cmc_curve(df, max_rank=5, by="sex"), series=["sex"]).to_dict()
    assert spec["layer"][0]["encoding"]["y"]["field"] == "identification_rate"
    spec = fnir_fpir_plot(fnir_fpir_curve(df, rank=1)).to_dict()
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"


def test_row_order_matters_only_for_the_stable_rule():
    df = searches(seed=6)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=3)
    for tie in ("pessimistic", "optimistic"):
        a = identify(df, rank=[1, 2, 5], tie=tie, batch_rows=50)
        assert a.equals(identify(shuffled, rank=[1, 2, 5], tie=tie, batch_rows=50))
    ranks = brute_ranks(shuffled, "stable")  # the stable rule follows the shuffled order
    res = identify(shuffled, rank=[1, 2], tie="stable", batch_rows=50)
    for d in res["cmc"][0]:
        assert d["identification_rate"] == sum(r <= d["rank"] for r in ranks.values()) \
            / len(ranks)
