"""``scoreframe norm``: end to end on files, statistics reuse, and user errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.cli.main import main
from scoreframe.norm import Normalization, normalize


def _files(tmp: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    spk = rng.normal(size=(12, 16))
    ids = [f"s{s}-u{u}" for s in range(12) for u in range(3)]
    vec = np.array([spk[s] + 0.7 * rng.normal(size=16) for s in range(12) for _ in range(3)])
    coh = rng.normal(size=(60, 16))
    np.savez(tmp / "eval.npz", id=np.array(ids), vector=vec)
    pl.DataFrame({"id": [f"c{i}" for i in range(60)], "vector": coh}).write_parquet(
        tmp / "cohort.parquet")
    pairs = [(a, b) for a in range(36) for b in range(36) if a < b and (a + b) % 3 == 0]
    trials = pl.DataFrame({"model": [ids[a] for a, _ in pairs],
                           "segment": [ids[b] for _, b in pairs],
                           "label": [ids[a][:3] == ids[b][:3] for a, b in pairs]})
    trials.write_parquet(tmp / "trials_noscore.parquet")
    unit = vec / np.linalg.norm(vec, axis=1, keepdims=True)
    cu = coh / np.linalg.norm(coh, axis=1, keepdims=True)
    scores = np.einsum("ij,ij->i", unit[[a for a, _ in pairs]], unit[[b for _, b in pairs]])
    trials.with_columns(pl.Series("score", scores)).write_parquet(tmp / "trials.parquet")
    full = unit @ cu.T
    for side, col in (("enroll", "enroll_id"), ("test", "test_id")):
        pl.DataFrame({col: np.repeat(ids, 60), "cohort_id": np.tile([f"c{i}" for i in
                      range(60)], 36), "score": full.ravel()}).write_parquet(
            tmp / f"{side}_cohort.parquet")
    return {"trials": tmp / "trials.parquet", "noscore": tmp / "trials_noscore.parquet",
            "eval": tmp / "eval.npz", "cohort": tmp / "cohort.parquet",
            "enr": tmp / "enroll_cohort.parquet", "tst": tmp / "test_cohort.parquet"}


def test_cohort_scores_and_embeddings_agree(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    f = _files(tmp_path)
    rc = main(["norm", str(f["trials"]), "--cohort-scores", str(f["enr"]), str(f["tst"]),
               "--method", "snorm,asnorm20", "-o", str(tmp_path / "a.parquet"),
               "--save-statistics", str(tmp_path / "stats.parquet")])
    assert rc == 0
    a = pl.read_parquet(tmp_path / "a.parquet")
    rc = main(["norm", str(f["noscore"]), "--embeddings", str(f["eval"]), str(f["eval"]),
               "--cohort", str(f["cohort"]), "--method", "snorm", "asnorm", "--top-k", "20",
               "-o", str(tmp_path / "b.parquet")])
    assert rc == 0
    b = pl.read_parquet(tmp_path / "b.parquet")
    for col in ("score", "score_snorm", "score_asnorm20"):
        np.testing.assert_allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-12)
    # the saved statistics reproduce the same scores, bit for bit
    rc = main(["norm", str(f["trials"]), "--statistics", str(tmp_path / "stats.parquet"),
               "--method", "snorm,asnorm20", "-o", str(tmp_path / "c.parquet")])
    assert rc == 0
    assert pl.read_parquet(tmp_path / "c.parquet").equals(a)
    out = capsys.readouterr().out
    assert "normalized scores written" in out and "cohort statistics written" in out


def test_systems_layout_evaluate_table(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    f = _files(tmp_path)
    rc = main(["norm", str(f["trials"]), "--embeddings", str(f["eval"]), str(f["eval"]),
               "--cohort", str(f["cohort"]), "--method", "znorm,snorm", "--layout", "systems",
               "--convention", "speechbrain", "--evaluate", "-o", str(tmp_path / "s.parquet")])
    assert rc == 0
    out = pl.read_parquet(tmp_path / "s.parquet")
    assert sorted(out["system"].unique().to_list()) == ["raw", "snorm", "znorm"]
    text = capsys.readouterr().out
    assert "before/after normalization" in text and "snorm" in text
    lib = normalize(pl.read_parquet(f["trials"]),
                    method=Normalization("snorm", convention="speechbrain"),
                    embeddings=(f["eval"], f["eval"]), cohort=f["cohort"]).collect()
    np.testing.assert_allclose(
        out.filter(pl.col("system") == "snorm").sort("model", "segment")["score"].to_numpy(),
        lib.sort("model", "segment")["score_snorm"].to_numpy(), rtol=1e-13)


@pytest.mark.parametrize("args", [
    ["--top-k", "0"], ["--top-k", "-3"], ["--top-k", "abc"], ["--top-k", "1e99"],
    ["--top-k", "10000000000"], ["--workers", "0"], ["--memory-limit", "lots"],
    ["--method", "qnorm"], ["--convention", "kaldi"], ["--ddof", "2"],
    ["--method", "asnorm", "--top-k", "61"],
    ["--engine", "dask"], ["--engine", "spark"], ["--scheduler", "tcp://127.0.0.1:8786"],
])
def test_bad_options_exit_2_nothing_written(tmp_path: Path, args: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    f = _files(tmp_path)
    out = tmp_path / "out.parquet"
    rc = main(["norm", str(f["trials"]), "--embeddings", str(f["eval"]), str(f["eval"]),
               "--cohort", str(f["cohort"]), *args, "-o", str(out)])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in f.values())


def test_data_errors_exit_2_nothing_written(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    f = _files(tmp_path)
    bad = pl.read_parquet(f["trials"]).with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("ghost")).otherwise(pl.col("model"))
        .alias("model"))
    bad.write_parquet(tmp_path / "bad.parquet")
    out, st = tmp_path / "out.parquet", tmp_path / "st.parquet"
    cases = [
        ["norm", str(tmp_path / "bad.parquet"), "--cohort-scores", str(f["enr"]), str(f["tst"]),
         "-o", str(out), "--save-statistics", str(st)],
        ["norm", str(f["trials"]), "--cohort-scores", str(f["enr"]), str(f["tst"]),
         "--embeddings", str(f["eval"]), str(f["eval"]), "-o", str(out)],
        ["norm", str(f["trials"]), "--embeddings", str(f["eval"]), str(f["eval"]), "-o",
         str(out)],
        ["norm", str(f["trials"]), "--embeddings", str(f["eval"]), str(tmp_path / "no.npz"),
         "--cohort", str(f["cohort"]), "-o", str(out)],
        ["norm", str(f["trials"]), "--cohort-scores", str(f["enr"]), str(f["tst"])],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("scoreframe: error:"), err
        assert not out.exists() and not st.exists()
    main(cases[0])
    assert "1 enroll id(s) of the trials have no cohort statistics" in capsys.readouterr().err
