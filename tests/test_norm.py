"""Score normalization against a brute-force numpy twin (full cohort matrices, small data)."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scoreframe
from scoreframe.errors import AlignmentError, ScoreframeError, UsageError, ValidationError
from scoreframe.kernels.cohort import (
    GroupMoments,
    group_topk,
    merge_topk,
    moments_of_rows,
    row_topk,
)
from scoreframe.norm import Normalization, cohort_statistics, normalize, read_embeddings
from scoreframe.stats import Engine

DIM = 6
N_COHORT = 40


def _data(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    enroll_ids = [f"e{i}" for i in range(7)]
    test_ids = [f"t{i}" for i in range(9)]
    cohort_ids = [f"c{i}" for i in range(N_COHORT)]
    e = rng.normal(size=(7, DIM)) + 0.3
    t = rng.normal(size=(9, DIM)) + 0.3
    c = rng.normal(size=(N_COHORT, DIM)) + 0.3
    pairs = list(itertools.product(range(7), range(9)))
    rng.shuffle(pairs)
    pairs = pairs[:30]
    trials = pl.DataFrame({"model": [enroll_ids[i] for i, _ in pairs],
                           "segment": [test_ids[j] for _, j in pairs],
                           "score": rng.normal(size=len(pairs)),
                           "label": rng.random(len(pairs)) < 0.3})
    return {"enroll": (enroll_ids, e), "test": (test_ids, t), "cohort": (cohort_ids, c),
            "trials": trials}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _twin_stats(vecs: np.ndarray, cohort: np.ndarray, k: int | None, ddof: int,
                drop: list[list[int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Full score matrix; per row: (top-k of) the scores, numpy mean/std."""
    full = _unit(vecs) @ _unit(cohort).T
    means, stds = [], []
    for i, row in enumerate(full):
        if drop is not None:
            row = np.delete(row, drop[i])
        if k is not None:
            row = np.sort(row)[::-1][:k]
        means.append(row.mean())
        stds.append(row.std(ddof=ddof))
    return np.array(means), np.array(stds)


def _twin(d: dict, method: str, k: int | None, ddof: int,
          drop: dict[str, list[list[int]]] | None = None) -> np.ndarray:
    out = []
    stats = {s: _twin_stats(d[s][1], d["cohort"][1], k, ddof,
                            None if drop is None else drop[s]) for s in ("enroll", "test")}
    idx = {s: {name: i for i, name in enumerate(d[s][0])} for s in ("enroll", "test")}
    for m, t, score in d["trials"].select("model", "segment", "score").iter_rows():
        ze = (score - stats["enroll"][0][idx["enroll"][m]]) / stats["enroll"][1][idx["enroll"][m]]
        zt = (score - stats["test"][0][idx["test"][t]]) / stats["test"][1][idx["test"][t]]
        out.append({"znorm": ze, "tnorm": zt}.get(method, 0.5 * (ze + zt)))
    return np.array(out)


def _cohort_tables(d: dict, tmp: Path, n_files: int = 3, seed: int = 1) -> tuple[Path, Path]:
    """Long cohort score tables (the twin's full matrices), shuffled, split into files."""
    rng = np.random.default_rng(seed)
    paths = []
    for side, col in (("enroll", "enroll_id"), ("test", "test_id")):
        ids, v = d[side]
        full = _unit(v) @ _unit(d["cohort"][1]).T
        df = pl.DataFrame({col: np.repeat(ids, N_COHORT),
                           "cohort_id": np.tile(d["cohort"][0], len(ids)),
                           "score": full.ravel()})
        df = df[rng.permutation(df.height)]
        root = tmp / f"{side}_cohort"
        root.mkdir()
        for i, part in enumerate(np.array_split(np.arange(df.height), n_files)):
            df[part].write_parquet(root / f"part-{i}.parquet")
        paths.append(root)
    return paths[0], paths[1]


CASES = [(m, conv, k, ddof) for m in ("znorm", "tnorm", "snorm", "asnorm")
         for conv in ("wespeaker", "speechbrain") for k in (None, 5, N_COHORT)
         for ddof in (None, 0, 1) if not (m == "asnorm" and k is None and conv == "speechbrain")]


def _expected_k(method: str, conv: str, k: int | None) -> int | None:
    if method == "asnorm":
        return k if k is not None else 300
    return k if conv == "speechbrain" else None


@pytest.mark.parametrize(("method", "convention", "top_k", "ddof"), CASES)
def test_embeddings_match_twin(method: str, convention: str, top_k: int | None,
                               ddof: int | None) -> None:
    d = _data()
    kk = _expected_k(method, convention, top_k)
    norm = Normalization(method, top_k=top_k, ddof=ddof, convention=convention)
    if kk is not None and kk > N_COHORT:
        with pytest.raises(ValidationError, match="larger than the cohort"):
            normalize(d["trials"], method=norm, embeddings=(d["enroll"], d["test"]),
                      cohort=d["cohort"])
        return
    dd = ddof if ddof is not None else (1 if convention == "speechbrain" else 0)
    out = normalize(d["trials"], method=norm, embeddings=(d["enroll"], d["test"]),
                    cohort=d["cohort"]).collect()
    col = "score_" + method + (str(kk) if kk is not None else "")
    np.testing.assert_allclose(out[col].to_numpy(), _twin(d, method, kk, dd), rtol=1e-12,
                               atol=1e-12)
    assert out.select("model", "segment", "score").equals(d["trials"].select(
        "model", "segment", "score"))


@pytest.mark.parametrize(("method", "convention", "top_k", "ddof"),
                         [c for c in CASES if c[2] != N_COHORT or c[0] == "asnorm"])
def test_cohort_score_tables_match_twin(tmp_path: Path, method: str, convention: str,
                                        top_k: int | None, ddof: int | None) -> None:
    d = _data()
    kk = _expected_k(method, convention, top_k)
    enr, tst = _cohort_tables(d, tmp_path)
    norm = Normalization(method, top_k=top_k, ddof=ddof, convention=convention)
    if kk is not None and kk > N_COHORT:
        with pytest.raises(ValidationError, match="larger than the cohort"):
            normalize(d["trials"], method=norm, cohort_scores=(enr, tst))
        return
    dd = ddof if ddof is not None else (1 if convention == "speechbrain" else 0)
    out = normalize(d["trials"], method=norm, cohort_scores=(enr, tst),
                    engine=Engine(memory_limit="64MB", workers=2)).collect()
    col = "score_" + method + (str(kk) if kk is not None else "")
    np.testing.assert_allclose(out[col].to_numpy(), _twin(d, method, kk, dd), rtol=1e-12,
                               atol=1e-12)


def test_asnorm_with_k_equal_to_cohort_is_snorm(tmp_path: Path) -> None:
    d = _data(3)
    for kw in ({"embeddings": (d["enroll"], d["test"]), "cohort": d["cohort"]},
               {"cohort_scores": _cohort_tables(d, tmp_path)}):
        out = normalize(d["trials"], method=["snorm", f"asnorm{N_COHORT}"], **kw).collect()
        np.testing.assert_allclose(out[f"score_asnorm{N_COHORT}"].to_numpy(),
                                   out["score_snorm"].to_numpy(), rtol=1e-13, atol=1e-13)


def test_statistics_identical_whatever_batches_workers_order(tmp_path: Path) -> None:
    d = _data(5)
    ref = None
    for n_files, seed, limit, workers in ((1, 1, "1GB", 1), (4, 2, "2MB", 2), (7, 3, "64MB", 2)):
        sub = tmp_path / f"{n_files}-{seed}"
        sub.mkdir()
        enr, tst = _cohort_tables(d, sub, n_files=n_files, seed=seed)
        st = cohort_statistics(method=["snorm", "asnorm7"], cohort_scores=(enr, tst),
                               engine=Engine(memory_limit=limit, workers=workers)
                               ).sort("side", "id", "top_k")
        if ref is None:
            ref = st
        assert st.equals(ref)  # bit for bit


def test_embedding_statistics_identical_whatever_block_size_and_workers() -> None:
    rng = np.random.default_rng(2)
    e = ([f"u{i}" for i in range(300)], rng.normal(size=(300, 16)))
    c = ([f"c{i}" for i in range(500)], rng.normal(size=(500, 16)))
    ref = None
    # 500 cohort entries: 256-row blocks of ~1 MB each; one or two in flight
    for limit, workers in ((10**9, 1), (2 * 10**5, 2), (10**6, 1), (2 * 10**6, 2)):
        st = cohort_statistics(method=["snorm", "asnorm50"], embeddings=(e, e), cohort=c,
                               engine=Engine(memory_limit=limit, workers=workers))
        if ref is None:
            ref = st
        assert st.equals(ref)
    # rows 8..255 of a block and of the whole matrix: the padded call gives the same bits
    st1 = cohort_statistics(method="snorm", embeddings=((e[0][:9], e[1][:9]),) * 2, cohort=c)
    assert ref is not None
    first = ref.filter(pl.col("top_k").is_null() & pl.col("id").is_in(e[0][:9]))
    assert st1.sort("side", "id").equals(first.sort("side", "id"))


def test_exact_moments_kernel_against_fractions() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0.2, 0.5, 5000) * 10.0 ** rng.integers(-12, 6, 5000)
    x[::11] = 0.0
    g = rng.integers(0, 4, x.shape[0])
    for ddof in (0, 1):
        m = GroupMoments(4)
        for part in np.array_split(rng.permutation(x.shape[0]), 5):
            piece = GroupMoments(4)
            piece.add(x[part], g[part])
            m.merge(piece)
        mean, std = m.finalize(ddof=ddof)
        for gi in range(4):
            v = [Fraction(t) for t in x[g == gi]]
            n = len(v)
            s1 = sum(v)
            s2 = sum(t * t for t in v)
            assert mean[gi] == float(s1 / n)
            assert std[gi] == math.sqrt(float((s2 - s1 * s1 / n) / (n - ddof)))


def test_topk_kernels() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 30))
    a[0, :4] = 2.0  # ties
    for k in (1, 3, 30):
        np.testing.assert_array_equal(row_topk(a, k), -np.sort(-a, axis=1)[:, :k])
        split = merge_topk(row_topk(a[:, :13], min(k, 13)),
                           row_topk(a[:, 13:], min(k, 17)), k) if k <= 13 else None
        if split is not None:
            np.testing.assert_array_equal(split, row_topk(a, k))
    wide = rng.normal(size=(6, 4000))  # wide rows go through the screen
    wide[1, :900] = 0.5  # ties at the k-th value
    wide[2, ::2] = -np.inf  # left out by the leakage guard
    wide[3] = 1.0
    for k in (1, 50, 100, 1999):
        np.testing.assert_array_equal(row_topk(wide, k), -np.sort(-wide, axis=1)[:, :k])
    mean, std = moments_of_rows(row_topk(a, 3), ddof=1)
    np.testing.assert_allclose(std, np.sort(a, axis=1)[:, ::-1][:, :3].std(axis=1, ddof=1))


def test_leakage_guard_excludes_same_id(tmp_path: Path) -> None:
    d = _data(4)
    # the cohort holds the trial sides' own vectors under their ids
    cids = d["cohort"][0] + d["enroll"][0][:3] + d["test"][0][:2]
    cvec = np.vstack([d["cohort"][1], d["enroll"][1][:3], d["test"][1][:2]])
    d2 = {**d, "cohort": (cids, cvec)}
    drop = {s: [[cids.index(i)] if i in cids else [] for i in d[s][0]]
            for s in ("enroll", "test")}
    guarded = Normalization(["snorm", "asnorm5"], exclude_same_id=True)
    out = normalize(d["trials"], method=guarded, embeddings=(d["enroll"], d["test"]),
                    cohort=d2["cohort"]).collect()
    for m, k in (("snorm", None), ("asnorm", 5)):
        want = _twin(d2, m, k, 0, drop)
        np.testing.assert_allclose(out[f"score_{m}{k or ''}"].to_numpy(), want, rtol=1e-12)
    unguarded = normalize(d["trials"], method="asnorm5", embeddings=(d["enroll"], d["test"]),
                          cohort=d2["cohort"]).collect()
    assert not np.allclose(unguarded["score_asnorm5"].to_numpy(),
                           out["score_asnorm5"].to_numpy())
    # the same guard on cohort score tables (rows whose cohort_id is the side's id)
    tabs = []
    for side, col in (("enroll", "enroll_id"), ("test", "test_id")):
        ids, v = d[side]
        full = _unit(v) @ _unit(cvec).T
        tabs.append(pl.DataFrame({col: np.repeat(ids, len(cids)),
                                  "cohort_id": np.tile(cids, len(ids)),
                                  "score": full.ravel()}))
    out2 = normalize(d["trials"], method=guarded, cohort_scores=(tabs[0], tabs[1])).collect()
    np.testing.assert_allclose(out2["score_snorm"].to_numpy(), out["score_snorm"].to_numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(out2["score_asnorm5"].to_numpy(),
                               out["score_asnorm5"].to_numpy(), rtol=1e-12)


def test_znorm_statistics_follow_the_model_axis_of_a_square_matrix() -> None:
    """SIDEKIT-style impostor score matrices: z-norm uses each *model's* row of impostor
    scores. With a square models x impostors matrix, taking the means along the other axis
    (SIDEKIT's broadcast) gives a different, wrong answer; the long format cannot."""
    rng = np.random.default_rng(9)
    mat = rng.normal(size=(6, 6)) + np.arange(6)[:, None]  # model i's impostors near i
    models = [f"m{i}" for i in range(6)]
    table = pl.DataFrame({"enroll_id": np.repeat(models, 6),
                          "cohort_id": np.tile([f"imp{j}" for j in range(6)], 6),
                          "score": mat.ravel()})
    trials = pl.DataFrame({"model": models, "segment": ["x"] * 6, "score": np.zeros(6)})
    out = normalize(trials, method="znorm", cohort_scores=(table, None)).collect()
    right = (0 - mat.mean(axis=1)) / mat.std(axis=1)
    wrong = (0 - mat.mean(axis=0)) / mat.std(axis=0)
    np.testing.assert_allclose(out["score_znorm"].to_numpy(), right, rtol=1e-13)
    assert not np.allclose(out["score_znorm"].to_numpy(), wrong)


def test_statistics_table_written_once_reused(tmp_path: Path) -> None:
    d = _data(6)
    st = cohort_statistics(method=["znorm", "asnorm5"], embeddings=(d["enroll"], d["test"]),
                           cohort=d["cohort"])
    assert st.schema == pl.Schema({"side": pl.String, "id": pl.String, "top_k": pl.Int64,
                                   "ddof": pl.Int8, "n": pl.Int64, "mean": pl.Float64,
                                   "std": pl.Float64})
    st.write_parquet(tmp_path / "stats.parquet")
    direct = normalize(d["trials"], method=["znorm", "asnorm5"],
                       embeddings=(d["enroll"], d["test"]), cohort=d["cohort"]).collect()
    reused = normalize(d["trials"], method=["znorm", "asnorm5"],
                       statistics=tmp_path / "stats.parquet").collect()
    assert reused.equals(direct)
    with pytest.raises(ValidationError, match="lacks what the methods need"):
        normalize(d["trials"], method="asnorm9", statistics=st)
    with pytest.raises(ValidationError, match="lacks what the methods need"):
        normalize(d["trials"], method=Normalization("znorm", ddof=1), statistics=st)
    with pytest.raises(ValidationError, match="more than once"):
        normalize(d["trials"], method="znorm", statistics=pl.concat([st, st.head(1)]))


def test_systems_layout_feeds_evaluate_and_compare() -> None:
    d = _data(8)
    out = normalize(d["trials"], method=["snorm", "asnorm5"], layout="systems",
                    embeddings=(d["enroll"], d["test"]), cohort=d["cohort"]).collect()
    assert sorted(out["system"].unique().to_list()) == ["asnorm5", "raw", "snorm"]
    assert out.height == 3 * d["trials"].height
    res = scoreframe.evaluate(out)
    assert sorted(res["system"].to_list()) == ["asnorm5", "raw", "snorm"]
    cols = normalize(d["trials"], method="snorm", embeddings=(d["enroll"], d["test"]),
                     cohort=d["cohort"]).collect()
    np.testing.assert_array_equal(out.filter(pl.col("system") == "snorm")["score"].to_numpy(),
                                  cols["score_snorm"].to_numpy())
    named = normalize(d["trials"].with_columns(pl.lit("xv").alias("system")), method="snorm",
                      layout="systems", embeddings=(d["enroll"], d["test"]),
                      cohort=d["cohort"]).collect()
    assert sorted(named["system"].unique().to_list()) == ["xv", "xv+snorm"]


def test_cosine_scores_from_embeddings_and_centering() -> None:
    d = _data(10)
    trials = d["trials"].drop("score")
    center = d["cohort"][1].mean(axis=0)
    out = normalize(trials, method="snorm", embeddings=(d["enroll"], d["test"]),
                    cohort=d["cohort"], center="cohort").collect()
    e = {i: v - center for i, v in zip(*d["enroll"], strict=True)}
    t = {i: v - center for i, v in zip(*d["test"], strict=True)}
    want = [float(e[m] @ t[s] / np.linalg.norm(e[m]) / np.linalg.norm(t[s]))
            for m, s in trials.select("model", "segment").iter_rows()]
    np.testing.assert_allclose(out["score"].to_numpy(), want, rtol=1e-12)
    d2 = {**d, "enroll": (d["enroll"][0], d["enroll"][1] - center),
          "test": (d["test"][0], d["test"][1] - center),
          "cohort": (d["cohort"][0], d["cohort"][1] - center),
          "trials": out.select("model", "segment", "score")}
    np.testing.assert_allclose(out["score_snorm"].to_numpy(), _twin(d2, "snorm", None, 0),
                               rtol=1e-11)


def test_embedding_formats(tmp_path: Path) -> None:
    import h5py

    rng = np.random.default_rng(0)
    ids = np.array(["a", "b", "c"])
    vec = rng.normal(size=(3, 4))
    pl.DataFrame({"id": ids, "vector": vec}).write_parquet(tmp_path / "arr.parquet")
    pl.DataFrame({"id": ids, "vector": vec.tolist()}).write_parquet(tmp_path / "list.parquet")
    np.savez(tmp_path / "e.npz", ids=ids, embeddings=vec)
    with h5py.File(tmp_path / "e.h5", "w") as h:
        h["id"] = ids.astype("S")
        h["vector"] = vec
    for name in ("arr.parquet", "list.parquet", "e.npz", "e.h5"):
        e = read_embeddings(tmp_path / name)
        assert e.ids.tolist() == ["a", "b", "c"]
        np.testing.assert_array_equal(e.vectors, vec)


def _bad(tmp_path: Path) -> dict:
    d = _data(11)
    return d


def test_bad_inputs(tmp_path: Path) -> None:
    d = _bad(tmp_path)
    emb = (d["enroll"], d["test"])
    missing = d["trials"].with_columns(pl.when(pl.int_range(pl.len()) < 2).then(pl.lit("zz"))
                                       .otherwise(pl.col("model")).alias("model"))
    with pytest.raises(AlignmentError, match="1 enroll id.*no embedding.*`zz`"):
        normalize(missing.drop("score"), embeddings=emb, cohort=d["cohort"])
    with pytest.raises(AlignmentError, match="1 enroll id.*no cohort statistics.*`zz`"):
        normalize(missing, embeddings=emb, cohort=d["cohort"])
    with pytest.raises(ValidationError, match="larger than the cohort"):
        normalize(d["trials"], method=Normalization("asnorm", top_k=N_COHORT + 1),
                  embeddings=emb, cohort=d["cohort"])
    with pytest.raises(ValidationError, match="different dimensions"):
        normalize(d["trials"], embeddings=emb,
                  cohort=(d["cohort"][0], d["cohort"][1][:, :3]))
    nan = d["cohort"][1].copy()
    nan[3, 1] = np.nan
    with pytest.raises(ValidationError, match="NaN.*`c3`"):
        normalize(d["trials"], embeddings=emb, cohort=(d["cohort"][0], nan))
    zero = d["enroll"][1].copy()
    zero[2] = 0.0
    with pytest.raises(ValidationError, match="zero-length.*`e2`"):
        normalize(d["trials"], embeddings=((d["enroll"][0], zero), d["test"]),
                  cohort=d["cohort"])
    with pytest.raises(ScoreframeError, match="unknown `method`"):
        normalize(d["trials"], method="qnorm", embeddings=emb, cohort=d["cohort"])
    with pytest.raises(ScoreframeError, match="unknown `convention`"):
        normalize(d["trials"], method=Normalization(convention="kaldi"), embeddings=emb,
                  cohort=d["cohort"])
    with pytest.raises(ScoreframeError, match="bad `ddof`"):
        normalize(d["trials"], method=Normalization(ddof=2), embeddings=emb,
                  cohort=d["cohort"])
    with pytest.raises(UsageError, match="exactly one source"):
        normalize(d["trials"])
    # zero spread: an enrolment id whose cohort scores are all equal
    flat = pl.DataFrame({"enroll_id": ["e0"] * 5 + ["e1"] * 5, "cohort_id": [f"c{i}" for i in
                         range(5)] * 2, "score": [0.5] * 5 + list(range(5))})
    tr = pl.DataFrame({"model": ["e0", "e1"], "segment": ["x", "y"], "score": [1.0, 2.0]})
    with pytest.raises(ValidationError, match="1 enroll id.*zero spread.*`e0`"):
        normalize(tr, method="znorm", cohort_scores=(flat, None))
    nan_scores = flat.with_columns(pl.when(pl.col("score") == 3).then(float("nan"))
                                   .otherwise(pl.col("score")).alias("score"))
    with pytest.raises(ValidationError, match="finite"):
        normalize(tr, method="znorm", cohort_scores=(nan_scores, None))


def test_normalization_options_object() -> None:
    """The method options are one checked object; names alone mean its defaults."""
    d = _data(12)
    emb = {"embeddings": (d["enroll"], d["test"]), "cohort": d["cohort"]}
    by_name = normalize(d["trials"], method=["snorm", "asnorm5"], **emb).collect()
    by_object = normalize(d["trials"], method=Normalization(["snorm", "asnorm5"]), **emb)
    assert by_object.collect().equals(by_name)
    assert by_name.columns[-2:] == ["score_snorm", "score_asnorm5"]
    n = Normalization(("znorm", "asnorm"), top_k=np.int64(5), ddof=1, convention="speechbrain")
    assert n.method == ("znorm", "asnorm") and n.top_k == 5 and type(n.top_k) is int
    assert [(m.name, m.k) for m in n.methods()] == [("znorm", 5), ("asnorm", 5)]
    assert n.resolved_ddof() == 1 and Normalization(convention="speechbrain").resolved_ddof() == 1
    assert Normalization().method == ("snorm",) and Normalization().resolved_ddof() == 0
    # every bad option is refused when the object is made, with a one-line error naming it
    bad = [({"method": "qnorm"}, "unknown `method`", "method"),
           ({"method": []}, "bad `method`", "method"),
           ({"method": 3}, "bad `method`", "method"),
           ({"method": "asnorm0"}, "bad `method`", "method"),
           ({"top_k": 0}, "bad `top_k`", "top_k"),
           ({"top_k": True}, "bad `top_k`", "top_k"),
           ({"top_k": 2.5}, "bad `top_k`", "top_k"),
           ({"ddof": 2}, "bad `ddof`", "ddof"),
           ({"ddof": True}, "bad `ddof`", "ddof"),
           ({"convention": "kaldi"}, "unknown `convention`", "convention"),
           ({"method": "asnorm", "convention": "speechbrain"}, "`asnorm` needs `top_k`", "top_k"),
           ({"exclude_same_id": "yes"}, "bad `exclude_same_id`", "exclude_same_id")]
    for kw, text, parameter in bad:
        with pytest.raises(ScoreframeError, match=text) as err:
            Normalization(**kw)
        assert "\n" not in str(err.value).split("\n\n")[0], kw
        if parameter is not None:
            assert err.value.parameter == parameter, kw
        if list(kw) == ["method"]:  # names given to the entry points are checked the same
            for call in (lambda m: normalize(d["trials"], method=m, **emb),
                         lambda m: cohort_statistics(method=m, **emb)):
                with pytest.raises(ScoreframeError, match=text):
                    call(kw["method"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.top_k = 7  # type: ignore[misc]
    # the options left the signatures: a stale keyword is Python's own TypeError
    for stale in ({"top_k": 5}, {"ddof": 1}, {"convention": "speechbrain"},
                  {"exclude_same_id": True}):
        with pytest.raises(TypeError, match="unexpected keyword"):
            normalize(d["trials"], **emb, **stale)
        with pytest.raises(TypeError, match="unexpected keyword"):
            cohort_statistics(**emb, **stale)
    for f in (normalize, cohort_statistics, scoreframe.normalize, scoreframe.cohort_statistics):
        kw_only = [p for p in inspect.signature(f).parameters.values()
                   if p.kind == p.KEYWORD_ONLY]
        assert len(kw_only) <= 10, (f.__name__, len(kw_only))
    assert scoreframe.Normalization is Normalization


def test_leakage_guard_refused_with_saved_statistics() -> None:
    """Saved statistics cannot be recomputed without the same-id entries: a clear refusal,
    never a silently ignored option."""
    d = _data(12)
    emb = {"embeddings": (d["enroll"], d["test"]), "cohort": d["cohort"]}
    stats = cohort_statistics(method="snorm", **emb)
    plain = normalize(d["trials"], method="snorm", statistics=stats).collect()
    assert plain.height == d["trials"].height
    with pytest.raises(UsageError, match="leakage guard") as err:
        normalize(d["trials"], method=Normalization("snorm", exclude_same_id=True),
                  statistics=stats)
    assert err.value.parameter == "exclude_same_id"


def test_exact_moments_scattered_groups() -> None:
    """Many groups, few values each, in any order (the kernel numbers the groups present)."""
    rng = np.random.default_rng(8)
    n_groups = 300_000
    x = rng.normal(0.1, 0.3, 3000) * 10.0 ** rng.integers(-8, 3, 3000)
    g = rng.integers(0, n_groups, 3000)
    g[:40] = 17
    whole = GroupMoments(n_groups)
    whole.add(x, g)
    parts = GroupMoments(n_groups)
    for part in np.array_split(rng.permutation(3000), 4):
        piece = GroupMoments(n_groups)
        piece.add(x[part], g[part])
        parts.merge(piece)
    mean, std = whole.finalize(ddof=1)
    mean2, std2 = parts.finalize(ddof=1)
    np.testing.assert_array_equal(mean, mean2)
    np.testing.assert_array_equal(std, std2)
    v = [Fraction(t) for t in x[g == 17]]
    s1, s2 = sum(v), sum(t * t for t in v)
    assert mean[17] == float(s1 / len(v))
    assert std[17] == math.sqrt(float((s2 - s1 * s1 / len(v)) / (len(v) - 1)))


def _fraction_moments(x: np.ndarray, ddof: int) -> tuple[float, float]:
    v = [Fraction(t) for t in x]
    n, s1 = len(v), sum(v)
    s2 = sum(t * t for t in v)
    return float(s1 / n), math.sqrt(float((s2 - s1 * s1 / n) / (n - ddof)))


@pytest.mark.parametrize("small_bins", [False, True])
def test_exact_moments_binned_paths(monkeypatch: pytest.MonkeyPatch, small_bins: bool) -> None:
    """The float bins (fixed grids, flushed into limbs) stay exact: magnitudes that grow
    from one add to the next (a coarser grid), values far below the largest (bits left below
    the last grid), subnormals, values near 2**500, and bins flushed when full."""
    import scoreframe.kernels.cohort as cohort

    if small_bins:  # many flushes and chunks on small data
        monkeypatch.setattr(cohort, "_BIN_LIMIT", 37)
        monkeypatch.setattr(cohort, "_BIN_CHUNK", 16)
    rng = np.random.default_rng(11)
    parts = [rng.normal(0.05, 0.1, 400) * 1e-3,  # small first: a fine grid
             rng.normal(0.05, 0.1, 400),  # larger: the grid grows
             rng.normal(0.0, 1.0, 400) * 10.0 ** rng.integers(-40, 3, 400),  # wide range
             np.r_[5e-324, -3e-310, 2.0**-1000, 1e-200, 0.0, -0.0],  # subnormals, tiny
             np.r_[2.0**499, -(2.0**498) * 1.5, 3.0, 2.0**-400],  # huge with small
             rng.normal(0.3, 0.01, 400)]
    groups = [rng.integers(0, 3, p.shape[0]) for p in parts]
    x, g = np.concatenate(parts), np.concatenate(groups)
    for ddof in (0, 1):
        seq = GroupMoments(3)
        for p, gp in zip(parts, groups, strict=True):  # one accumulator, successive adds
            seq.add(p, gp)
        mean, std = seq.finalize(ddof=ddof)
        shuffled = GroupMoments(3)
        order = rng.permutation(x.shape[0])
        for idx in np.array_split(order, 7):
            piece = GroupMoments(3)
            piece.add(x[idx], g[idx])
            shuffled.add(x[idx][:0], g[idx][:0])  # an empty add changes nothing
            shuffled.merge(piece)
        mean2, std2 = shuffled.finalize(ddof=ddof)
        np.testing.assert_array_equal(mean, mean2)
        np.testing.assert_array_equal(std, std2)
        for gi in range(3):
            want = _fraction_moments(x[g == gi], ddof)
            assert (mean[gi], std[gi]) == want


def test_group_topk_kernel() -> None:
    rng = np.random.default_rng(5)
    # a few runs (each partitioned), many (a padded matrix), very uneven (sorted)
    for n, n_groups, k in ((2000, 7, 5), (3000, 400, 3), (5000, 100, 7), (500, 3, 200),
                           (1, 1, 4)):
        x = np.round(rng.normal(size=n), 1)  # many ties
        g = rng.integers(0, n_groups, n) * 3  # sparse codes
        if n == 5000:  # very uneven runs: the sorting path
            g[:4500] = 0
        for order in (np.arange(n), np.argsort(g, kind="stable"), rng.permutation(n)):
            got_g, top = group_topk(x[order], g[order], k)
            np.testing.assert_array_equal(got_g, np.unique(g))
            for gi, row in zip(got_g, top, strict=True):
                want = -np.sort(-x[g == gi])[:k]
                np.testing.assert_array_equal(row[:want.shape[0]], want)
                assert np.all(row[want.shape[0]:] == -np.inf)
