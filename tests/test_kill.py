"""kill -9 in the middle of every writing command: no output, and no temporary survives.

Each writer is started in a subprocess with ``SCOREFRAME_TEST_PAUSE_IN_WRITE`` set (the atomic
write module sleeps after the content is written and before the rename), killed with SIGKILL
once its temporary exists, and then:

* the destination does not exist (nothing half-written under its name);
* the temporary left by the dead process is there (the kill really was mid-write);
* the next write into the same directory removes it, and only it;
* the next run of any command (here ``scoreframe info`` on another file, writing nothing)
  removes it too, through the registry of temporaries, as ``scoreframe clean`` does on demand;
  the out-of-core engine's spill directory as well.

A reader in another process reading an output in a tight loop while it is replaced with
``overwrite`` again and again never fails and never sees a mix of two versions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import polars as pl
import pytest

from scoreframe.io.atomic import (
    PAUSE_ENV,
    STATE_ENV,
    clean_stale,
    host_tag,
    is_temp_name,
    registered_temp,
    registry_dir,
    remove_stale_temps,
)
from scoreframe.io.parquet import write_trials

BIN = Path(sys.executable).parent / "scoreframe"


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A registry of temporaries of this test's own (inherited by the subprocesses)."""
    d = tmp_path_factory.mktemp("state")
    monkeypatch.setenv(STATE_ENV, str(d))
    return d


def _temps(d: Path) -> list[Path]:
    return [p for p in d.iterdir() if is_temp_name(p.name)]


def _records() -> list[Path]:
    reg = registry_dir()
    return sorted(reg.glob("*.json")) if reg.is_dir() else []


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


@pytest.mark.parametrize("command", ["convert", "report", "write_trials"])
def test_kill_9_leaves_nothing_after_the_next_run_of_any_command(
        tmp_path: Path, inputs: dict[str, Path], command: str) -> None:
    """A command that writes elsewhere (or nothing) removes the temporary left anywhere."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / OUT_NAME.get(command, "result.parquet")
    _kill_mid_write(_commands(inputs, out)[command], outdir)
    assert _temps(outdir) and _records(), "the kill did not happen mid-write"
    res = subprocess.run([str(BIN), "info", str(inputs["dev"])], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert _temps(outdir) == [] and list(outdir.iterdir()) == []
    assert _records() == []


def test_scoreframe_clean_removes_them_on_demand(tmp_path: Path,
                                                 inputs: dict[str, Path]) -> None:
    outdir = tmp_path / "out"
    outdir.mkdir()
    _kill_mid_write(_commands(inputs, outdir / "r.parquet")["convert"], outdir)
    # an unregistered one (older version, or a lost registry): found by looking in DIR
    dead = outdir / f".z.parquet.scoreframe-tmp-{host_tag()}-{_dead_pid()}-abcd1234"
    dead.mkdir()
    res = subprocess.run([str(BIN), "clean", str(outdir)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert list(outdir.iterdir()) == [] and _records() == []
    assert "2 stale temporaries removed" in res.stdout
    res = subprocess.run([str(BIN), "clean", str(outdir / "nope")], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_kill_9_during_out_of_core_spill(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """The spill directory of a killed out-of-core evaluation goes with the next command."""
    spill = tmp_path / "spill"
    spill.mkdir()
    big = tmp_path / "big"
    res = subprocess.run([str(BIN), "synth", str(big), "--trials", "400000", "--systems", "1"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    proc = subprocess.Popen([str(BIN), "evaluate", str(big), "--memory-limit", "2MB",
                             "--spill-dir", str(spill), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any(spill.iterdir()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the evaluation ended before it spilled")
            time.sleep(0.01)
    finally:  # killed as soon as the spill directory exists (not after it may be gone)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert any(spill.iterdir()) and _records()
    res = subprocess.run([str(BIN), "info", str(inputs["dev"])], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert list(spill.iterdir()) == [] and _records() == []


def test_live_registered_temporary_is_kept(tmp_path: Path) -> None:
    """A registered temporary of a live process (this one) survives any clean-up."""
    tmp = tmp_path / f".x.parquet.scoreframe-tmp-{host_tag()}-{os.getpid()}-00000000"
    with registered_temp(tmp):
        tmp.mkdir()
        assert clean_stale(tmp_path) == [] and tmp.exists()
        code = "from scoreframe.io.atomic import clean_stale; print(len(clean_stale()))"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120)
        assert res.stdout.strip() == "0" and tmp.exists()
        tmp.rmdir()
    assert _records() == []


WRITER = r"""
import sys, time, polars as pl
from scoreframe.io import write_trials
out, partitioned, seconds = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3])
end, v = time.monotonic() + seconds, 0
while v == 0 or time.monotonic() < end:
    v += 1
    n = 3000 + 500 * (v % 7)  # each version has its own size and version number
    df = pl.DataFrame({"model": [f"m{i % 50}" for i in range(n)],
                       "segment": [f"s{i}" for i in range(n)],
                       "score": [float(i % 13) for i in range(n)],
                       "gender": ["f" if i % 3 else "m" for i in range(n)],
                       "version": [v] * n})
    write_trials(df, out, partition_by=["gender"] if partitioned else (), overwrite=True)
    time.sleep(0.02)  # a busy writer, not a hot loop: reads must not be starved on a loaded CI
print(v)
"""

READER = r"""
import json, sys, time
from scoreframe.io import read_trials
out, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
reads = failed = mixed = 0
errors = []
while time.monotonic() < end:
    try:
        df = read_trials(out)
    except Exception as exc:
        failed += 1
        errors.append(str(exc)[:200])
        continue
    reads += 1
    versions = df["version"].unique().to_list()
    if len(versions) != 1 or df.height != 3000 + 500 * (versions[0] % 7):
        mixed += 1
print(json.dumps({"reads": reads, "failed": failed, "mixed": mixed, "errors": errors[:3]}))
"""


@pytest.mark.parametrize("partitioned", [False, True], ids=["file", "partitioned"])
def test_reads_during_repeated_overwrite_never_fail(tmp_path: Path, partitioned: bool) -> None:
    out = tmp_path / ("ds" if partitioned else "t.parquet")
    seconds = 8.0
    first = subprocess.run([sys.executable, "-c", WRITER, str(out), "1" if partitioned else "0",
                            "0"], capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr  # one version exists before reading starts
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out),
                               "1" if partitioned else "0", str(seconds)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = subprocess.run([sys.executable, "-c", READER, str(out), str(seconds)],
                            capture_output=True, text=True, timeout=120)
    w_out, w_err = writer.communicate(timeout=120)
    assert writer.returncode == 0, w_err
    assert reader.returncode == 0, reader.stderr
    got = json.loads(reader.stdout.strip().splitlines()[-1])
    assert int(w_out.strip()) >= 5, "the writer did not replace the output repeatedly"
    assert got["reads"] >= 5
    assert got["failed"] == 0, got["errors"]
    assert got["mixed"] == 0
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary left


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


def test_consistent_read_runs_again_after_a_replacement(tmp_path: Path) -> None:
    from scoreframe.errors import ScoreframeError
    from scoreframe.io.atomic import consistent_read

    f = tmp_path / "x.txt"
    f.write_text("v1")
    calls = []

    def read_then_replaced() -> str:  # another process replaces the file during the 1st read
        calls.append(1)
        text = f.read_text()
        if len(calls) == 1:
            new = tmp_path / "new.txt"
            new.write_text("v2")
            os.replace(new, f)
        return text

    assert consistent_read(f, read_then_replaced) == "v2" and len(calls) == 2

    def always_replaced() -> str:
        new = tmp_path / "new.txt"
        new.write_text("v")
        os.replace(new, f)
        return "x"

    with pytest.raises(ScoreframeError, match="replaced while it was read, 5 times"):
        consistent_read(f, always_replaced, attempts=5)

    def broken() -> str:  # a failure on a path that did not change is the failure
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        consistent_read(f, broken)


def test_a_read_starved_by_replacements_says_so(tmp_path: Path) -> None:
    """Every attempt overlapping a replacement gives the clear error, not the reader's own."""
    from scoreframe.errors import ScoreframeError
    from scoreframe.io.atomic import consistent_read

    f = tmp_path / "t.txt"
    f.write_text("v0")
    calls = []

    def read() -> str:  # another process replaces the file during every read
        calls.append(1)
        tmp = tmp_path / "new.txt"
        tmp.write_text(f"v{len(calls)}")
        os.replace(tmp, f)
        raise OSError("truncated read (corrupt file?)")

    with pytest.raises(ScoreframeError, match="replaced while it was read, 3 times in a row"):
        consistent_read(f, read, attempts=3)
    assert len(calls) == 3
    with pytest.raises(OSError, match="corrupt"):  # an unchanged file's failure is its own
        consistent_read(f, lambda: (_ for _ in ()).throw(OSError("corrupt")), attempts=3)
