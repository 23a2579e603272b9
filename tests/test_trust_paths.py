"""Every path that reads trials gives the checks of the readers (issue: trust at the boundary).

Each public entry point is fed the same malformed trials, as a frame and as a Parquet file:
null/NaN scores, labels outside the accepted spellings, an empty selection and duplicated
trials must be a ScoreframeError subclass naming the data, never a number or a traceback.
"""

from __future__ import annotations

import polars as pl
import pytest

import scoreframe as sf
from scoreframe.errors import DegenerateError, ScoreframeError, ValidationError
from scoreframe.metrics import Intervals
from scoreframe.stats import Engine

SMALL = pl.DataFrame({"model": ["a", "a", "b", "b"], "segment": ["x", "y", "x", "y"],
                      "score": [2.0, -1.0, 0.5, 1.0], "label": [True, False, False, True]})


def two(df: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([df.with_columns(system=pl.lit("s1")), df.with_columns(system=pl.lit("s2"))])


PATHS = {
    "evaluate": lambda d: sf.evaluate(d),
    "evaluate-out-of-core": lambda d: sf.evaluate(d, engine=Engine(memory_limit="2KiB")),
    "bootstrap": lambda d: sf.bootstrap_evaluate(d, intervals=Intervals(bootstrap=5)),
    "compare": lambda d: sf.compare(d, "s1", "s2", intervals=Intervals(bootstrap=5)),
    "det_curve": lambda d: sf.det_curve(d),
    "dcf_points": lambda d: sf.dcf_points(d),
    "linear-calibration": lambda d: sf.LinearCalibration().fit(d),
    "pav-calibration": lambda d: sf.PavCalibration().fit(d),
}
PROBLEMS = {
    "nan": (SMALL.with_columns(pl.Series("score", [2.0, float("nan"), 0.5, 1.0])),
            ValidationError, "missing values"),
    "null": (SMALL.with_columns(pl.Series("score", [2.0, None, 0.5, 1.0])),
             ValidationError, "missing values"),
    "label": (SMALL.with_columns(pl.Series("label", ["target", "maybe", "nontarget", "1"])),
              ValidationError, "accepted spellings"),
    "empty": (SMALL.head(0), DegenerateError, "no trials"),
    "duplicate": (pl.concat([SMALL, SMALL.head(1)]), ValidationError, "duplicate trials"),
}
# a calibration may train on trials identified by more than (model, segment): no duplicate check
SKIP = {("linear-calibration", "duplicate"), ("pav-calibration", "duplicate")}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("as_file", [False, True])
def test_every_path_checks_its_input(path, problem, as_file, tmp_path):
    if (path, problem) in SKIP:
        pytest.skip("calibration has no duplicate check (documented)")
    frame, error, match = PROBLEMS[problem]
    if path == "compare":
        frame = two(frame)
    data: object = frame
    if as_file:
        data = tmp_path / "trials.parquet"
        frame.write_parquet(data)
    with pytest.raises(error, match=match) as info:
        PATHS[path](data)
    assert isinstance(info.value, ScoreframeError)
    if as_file and problem != "empty":
        assert "trials.parquet" in str(info.value)


@pytest.mark.parametrize("as_file", [False, True])
def test_scores_stored_as_text_are_refused(as_file, tmp_path):
    frame = SMALL.with_columns(pl.col("score").cast(pl.String))
    data: object = frame
    if as_file:
        data = tmp_path / "t.parquet"
        frame.write_parquet(data)
    with pytest.raises(ValidationError, match="`score` must be numeric"):
        sf.evaluate(data)


@pytest.mark.parametrize("special", ["symlink", "fifo"])
def test_outputs_that_are_links_or_special_files_are_refused(special, tmp_path):
    import os
    import subprocess
    import sys

    real = tmp_path / "real.json"
    real.write_text("keep")
    out = tmp_path / "out.json"
    if special == "symlink":
        out.symlink_to(real)
    else:
        os.mkfifo(out)
    data = tmp_path / "t.parquet"
    SMALL.write_parquet(data)
    r = subprocess.run([sys.executable, "-m", "scoreframe", "evaluate", str(data), "--format",
                        "json", "-o", str(out), "--overwrite"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "out.json" in r.stderr
    assert real.read_text() == "keep"
    assert out.is_symlink() if special == "symlink" else not out.is_file()
