"""kill -9 in the middle of every writing command: no output, and no temporary survives.

Each writer is started in a subprocess with ``SCOREFRAME_TEST_PAUSE_IN_WRITE`` set (the atomic
write module sleeps after the content is written and before the rename), killed with SIGKILL
once its temporary exists, and then:

* the destination does not exist (nothing half-written under its name);
* the temporary left by the dead process is there (the kill really was mid-write);
* the next write into the same directory removes it, and only it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

from scoreframe.io.atomic import PAUSE_ENV, host_tag, is_temp_name, remove_stale_temps
from scoreframe.io.parquet import write_trials

BIN = Path(sys.executable).parent / "scoreframe"


def _temps(d: Path) -> list[Path]:
    return [p for p in d.iterdir() if is_temp_name(p.name)]


def _trials(n: int = 4000, system: str | None = None) -> pl.DataFrame:
    i = pl.int_range(n, eager=True)
    df = pl.DataFrame({
        "model": ("m" + (i // 40).cast(pl.String)),
        "segment": ("s" + i.cast(pl.String)),
        "label": (i % 10 == 0),
    }).with_columns(score=pl.when(pl.col("label")).then(2.0).otherwise(-1.0)
                    + (i % 97).cast(pl.Float64) / 50 - 1)
    return df if system is None else df.with_columns(system=pl.lit(system))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    write_trials(_trials(), d / "dev.parquet")
    write_trials(_trials(system="a"), d / "a.parquet")
    write_trials(_trials(system="b").with_columns(pl.col("score") * 0.5), d / "b.parquet")
    from scoreframe.cli.main import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["calibrate", "train", str(d / "dev.parquet"), "-o", str(d / "cal.json")]) == 0
        assert main(["fuse", "train", f"a={d / 'a.parquet'}", f"b={d / 'b.parquet'}", "-o",
                     str(d / "fus.json")]) == 0
    return {"dev": d / "dev.parquet", "a": d / "a.parquet", "b": d / "b.parquet",
            "cal": d / "cal.json", "fus": d / "fus.json"}


def _commands(inp: dict[str, Path], out: Path) -> dict[str, list[str]]:
    py = [sys.executable, "-c",
          "import sys, polars as pl; from scoreframe.io import write_trials; "
          "write_trials(pl.read_parquet(sys.argv[1]), sys.argv[2])",
          str(inp["dev"]), str(out)]
    return {
        "convert": [str(BIN), "convert", str(inp["dev"]), "-o", str(out)],
        "synth": [str(BIN), "synth", str(out), "--trials", "2000", "--systems", "2"],
        "calibrate-apply": [str(BIN), "calibrate", "apply", str(inp["cal"]), str(inp["dev"]),
                            "-o", str(out)],
        "report": [str(BIN), "report", str(inp["dev"]), "-o", str(out)],
        "fuse-apply": [str(BIN), "fuse", "apply", str(inp["fus"]), f"a={inp['a']}",
                       f"b={inp['b']}", "-o", str(out)],
        "write_trials": py,
    }


OUT_NAME = {"report": "report.html"}


def _kill_mid_write(cmd: list[str], outdir: Path) -> None:
    env = {**os.environ, PAUSE_ENV: "60", "NO_COLOR": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 90
        while not _temps(outdir):
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                pytest.fail(f"writer ended before its write: {proc.returncode} {err}")
            if time.monotonic() > deadline:
                pytest.fail("no temporary appeared")
            time.sleep(0.05)
        time.sleep(0.3)  # let it get on with the write
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.parametrize("command", ["convert", "synth", "calibrate-apply", "report",
                                     "fuse-apply", "write_trials"])
def test_kill_9_leaves_nothing_after_the_next_write(tmp_path: Path, inputs: dict[str, Path],
                                                    command: str) -> None:
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / OUT_NAME.get(command, "result.parquet")
    _kill_mid_write(_commands(inputs, out)[command], outdir)
    assert not out.exists(), "a half-written output under the final name"
    left = _temps(outdir)
    assert left, "the kill did not happen mid-write"
    # the next write into this directory (any writer) removes what the dead one left
    write_trials(_trials(50), outdir / "next.parquet")
    assert _temps(outdir) == []
    assert sorted(p.name for p in outdir.iterdir()) == ["next.parquet"]


def test_next_run_of_the_same_command_cleans_up(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """The killed command, run again to completion, leaves exactly its output."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / "result.parquet"
    cmd = _commands(inputs, out)["convert"]
    _kill_mid_write(cmd, outdir)
    assert _temps(outdir)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in outdir.iterdir()) == ["result.parquet"]
    assert pl.read_parquet(out).height == pl.read_parquet(inputs["dev"]).height


def test_live_writers_temporaries_are_kept(tmp_path: Path) -> None:
    """Only dead processes' temporaries go: a concurrent live write is left alone."""
    live = tmp_path / f".x.parquet.scoreframe-tmp-{host_tag()}-{os.getpid()}-abcd1234"
    live.mkdir()
    other = tmp_path / ".x.parquet.tmp-foreign"  # not ours: never touched
    other.mkdir()
    dead_pid = _dead_pid()
    dead = tmp_path / f".y.parquet.scoreframe-tmp-{host_tag()}-{dead_pid}-abcd1234"
    dead.mkdir()
    removed = remove_stale_temps(tmp_path)
    assert removed == [dead]
    assert live.exists() and other.exists() and not dead.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_abandoned_temporaries_of_earlier_versions_are_removed(tmp_path: Path) -> None:
    """`.NAME.tmp-XXXXXXXX` (no pid in the name) go once 6 hours old and shaped like ours."""
    old = tmp_path / ".ds.tmp-ab12cd_3"
    (old / "out" / "gender=f").mkdir(parents=True)
    (old / "out" / "gender=f" / "part-00000.parquet").write_bytes(b"x" * 100)
    recent = tmp_path / ".r.parquet.tmp-zz99yy88"
    (recent / "out").mkdir(parents=True)
    foreign = tmp_path / ".notes.tmp-qwertyui"  # same pattern, other content: not ours
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me")
    stale = time.time() - 7 * 3600
    for d in (old, foreign):
        os.utime(d, (stale, stale))
    assert remove_stale_temps(tmp_path) == [old]
    assert not old.exists() and recent.exists() and foreign.exists()
