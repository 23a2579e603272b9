"""Every fenced ```python block of README.md runs as written.

Each block runs alone (fresh namespace, warnings are errors) in its own temporary directory that
holds the input files the README names: ``key.txt`` and ``scores.h5`` (BOSARIS key text and
HDF5 scores) with ``models.csv`` (model, gender); the Parquet datasets ``eval_ds/``, ``dev/``
and ``eval/`` (synthetic evaluations with ``system``, ``gender``, ``channel`` and ``duration``
columns); ``scores.parquet`` and ``truth.parquet`` (the IEMOCAP multiclass set of
``tests/data/real/multiclass`` with a ``duration`` condition added) and ``other_scores.parquet``
(the same scores plus Gaussian noise, a second system); and ``tests/`` (the repository's test
data). An input that a block writes itself (e.g. ``write_trials(..., "eval_ds")``) is left out
of that block's directory. A block that needs a cluster is marked in the README with
``<!-- readme-test: skip (reason) -->`` and only compiled. The README's links must point at files
the repository ships.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scoreframe as sf
from scoreframe import io

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
#: (skip reason or None, code) of every ```python block; a block that needs outside
#: infrastructure (a cluster) is preceded by ``<!-- readme-test: skip (reason) -->``.
BLOCKS = [(skip or None, code) for skip, code in re.findall(
    r"(?:<!-- readme-test: skip \((.*?)\) -->\n)?^```python\n(.*?)^```",
    README.read_text(encoding="utf-8"), re.S | re.M)]
IEMOCAP = ROOT / "tests" / "data" / "real" / "multiclass" / "iemocap_w2v2"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("readme_inputs")
    trials = pl.concat(sf.synth_chunks(20_000, seed=11))
    sf.write_trials(trials, d / "eval_ds", partition_by=["gender"])
    even = pl.col("model").str.extract(r"(\d+)$").cast(pl.Int64) % 2 == 0
    sf.write_trials(trials.filter(even), d / "dev")
    sf.write_trials(trials.filter(~even), d / "eval")
    sys1 = trials.filter(pl.col("system") == "sys1").head(4000)
    io.write_text_trials(sys1.select("model", "segment", "label"), d / "key.txt", "key")
    io.write_bosaris_hdf5(sys1.select("model", "segment", "score"), d / "scores.h5", "scores")
    sys1.select("model", "gender").unique().sort("model").write_csv(d / "models.csv")
    scores = pl.read_parquet(IEMOCAP / "iemocap_w2v2_scores.parquet").drop("log_posterior")
    segment_number = pl.col("segment").str.extract(r"(\d+)$").cast(pl.Int64)
    duration = pl.when(segment_number % 3 == 0).then(pl.lit("short")).otherwise(pl.lit("long"))
    scores = scores.drop("system").with_columns(duration=duration)
    scores.write_parquet(d / "scores.parquet")
    noise = np.random.default_rng(5).normal(0.0, 1.0, scores.height)
    scores.with_columns(pl.col("score") + noise).write_parquet(d / "other_scores.parquet")
    (pl.read_parquet(IEMOCAP / "iemocap_w2v2_truth.parquet").drop("system")
     .write_parquet(d / "truth.parquet"))
    (d / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    return d


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 8
    assert sum(skip is not None for skip, _ in BLOCKS) <= 3  # skipping stays the exception


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, inputs, tmp_path, monkeypatch):
    skip, code = BLOCKS[index]
    if skip:
        compile(code, f"README.md python block {index + 1}", "exec")  # still valid Python
        pytest.skip(f"README block {index + 1}: {skip}")
    for item in inputs.iterdir():
        written = re.search(r"(write_\w+|save|save_chart|sink_\w+)\([^)]*[\"']"
                            + re.escape(item.name) + r"/?[\"']", code)
        if not written:
            (tmp_path / item.name).symlink_to(item, target_is_directory=item.is_dir())
    monkeypatch.chdir(tmp_path)
    first = code.strip().splitlines()[0]
    namespace: dict[str, object] = {"__name__": f"readme_block_{index}"}
    exec(compile(code, f"README.md python block {index + 1} ({first})", "exec"), namespace)


def test_readme_links_and_documents_exist():
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).exists(), target
    assert "MATH.md" not in text
    assert not re.search(r"\bseeds? ?0\d\d\b", text), re.findall(r".{30}\bseeds? ?0\d\d.{10}",
                                                                  text)
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "docs" / "math.md").exists()


def test_readme_mentions_the_browser_test_needs_chromium():
    text = README.read_text(encoding="utf-8")
    assert "chromium" in text and "make test" in text


def test_synthetic_inputs_have_the_columns_the_readme_uses(inputs):
    cols = pl.scan_parquet(inputs / "eval_ds" / "**" / "*.parquet",
                           hive_partitioning=True).collect_schema().names()
    assert {"system", "gender", "channel", "duration", "score", "label"} <= set(cols)
    assert np.isfinite(pl.read_parquet(inputs / "scores.parquet")["score"].to_numpy()).all()
    assert os.path.getsize(inputs / "scores.h5") > 0
