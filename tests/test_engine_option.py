"""The one engine option (issue 21 item 4) and its bad input (issue 21, "Bad input").

``engine=`` takes ``"auto" | "memory" | "streaming" | "dask"`` or an ``Engine(...)``; every
entry point that reads trials accepts it; results never depend on it.
"""

from __future__ import annotations

import inspect
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scoreframe as sf
from scoreframe.errors import EngineError, ScoreframeError
from scoreframe.metrics import Intervals
from scoreframe.stats import Engine, as_engine

ROOT = Path(__file__).parents[1]


def trials(n: int = 2000, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < 0.3
    return pl.DataFrame({"score": np.round(rng.normal(size=n) + 2 * lab, 3), "label": lab,
                         "g": rng.choice(["a", "b"], n),
                         "model": [f"m{i % 50}" for i in range(n)],
                         "segment": [f"s{i // 50}" for i in range(n)]})


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "scoreframe", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_every_entry_point_that_reads_trials_takes_engine_and_no_repeated_keyword():
    from scoreframe.identification import identify
    from scoreframe.multiclass import evaluate_multiclass
    from scoreframe.results.before_after import before_after
    from scoreframe.views.report import build_report

    entry = [sf.evaluate, sf.compare, sf.bootstrap_evaluate, build_report, sf.tandem_t_dcf,
             before_after, sf.differentials, sf.epc_curve, identify, sf.normalize,
             sf.cohort_statistics, evaluate_multiclass]
    for f in entry:
        params = inspect.signature(f).parameters
        assert params["engine"].default == "auto", f.__name__
        assert not {"memory_limit", "workers", "scheduler", "spill_dir"} & set(params), f
    for f in (sf.evaluate, sf.compare, sf.bootstrap_evaluate):  # issue 25 item 3
        kw = [p for p in inspect.signature(f).parameters.values() if p.kind == p.KEYWORD_ONLY]
        assert len(kw) <= 10, (f.__name__, len(kw))


@pytest.mark.parametrize("kind", ["auto", "memory", "streaming"])
def test_kinds_give_identical_results_and_force_the_path(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    df = trials()
    ref = sf.evaluate(df, by="g", operating_points=[0.1, 0.5], engine=Engine("memory"))
    got = sf.evaluate(df, by="g", operating_points=[0.1, 0.5],
                      engine=Engine(kind, memory_limit="64KiB", workers=2))
    assert got.equals(ref)
    from scoreframe.results.evaluate import group_statistics

    stats, _ = group_statistics(df, by="g", engine=Engine(kind, memory_limit="64KiB"))
    # auto: 2000 trials x the bytes per trial exceed 64 KiB, so out of core
    assert stats.engine == ("memory" if kind == "memory" else "out-of-core")
    big, _ = group_statistics(df, by="g", engine=kind)  # 1 GiB: auto stays in memory
    assert big.engine == ("out-of-core" if kind == "streaming" else "memory")


def test_auto_threshold_follows_the_measured_constant(monkeypatch):
    from scoreframe.results.evaluate import group_statistics
    from scoreframe.stats import engine as eng

    df = trials(4000)
    need = 4000 * eng.bytes_per_trial(read=False, grouped=False, replicate_columns=0)
    fits, _ = group_statistics(df, engine=Engine(memory_limit=need + 1024))
    over, _ = group_statistics(df, engine=Engine(memory_limit=need - 1024))
    assert (fits.engine, over.engine) == ("memory", "out-of-core")


@pytest.mark.parametrize("bad", ["local", "gpu", "", 3, None])
def test_unknown_engine_lists_the_choices(bad):
    with pytest.raises(EngineError, match="'auto', 'memory', 'streaming', 'dask'") as e:
        sf.evaluate(trials(100), engine=bad)  # type: ignore[arg-type]
    assert e.value.parameter == "engine" and "\n" not in str(e.value).split("\n\n")[0]
    if bad == "local":
        assert "engine='auto'" in str(e.value)


@pytest.mark.parametrize(("kw", "match"), [
    ({"workers": 0}, "bad `workers`"), ({"workers": 5000}, "bad `workers`"),
    ({"memory_limit": "lots"}, "bad `memory_limit`"), ({"spill_dir": ""}, "bad `spill_dir`"),
    ({"scheduler": "tcp://h:8786"}, "bad `scheduler`.*'dask'"),
])
def test_bad_engine_settings_say_what(kw, match):
    with pytest.raises(ScoreframeError, match=match):
        Engine(**kw)


def test_dask_not_installed_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails
    with pytest.raises(EngineError, match=r"pip install 'scoreframe\[dask\]'"):
        sf.evaluate(trials(100), engine="dask")
    with pytest.raises(EngineError, match=r"pip install 'scoreframe\[dask\]'"):
        as_engine("dask")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_scheduler_is_an_error_within_10_s(tmp_path):
    pytest.importorskip("distributed")
    path = tmp_path / "t.parquet"
    trials(200).write_parquet(path)
    t = time.monotonic()
    with pytest.raises(EngineError, match="cannot reach the dask scheduler"):
        sf.evaluate(str(path), engine=Engine("dask", scheduler=f"tcp://127.0.0.1:{_closed_port()}"))
    assert time.monotonic() - t < 10


@pytest.mark.parametrize(("kw", "match"), [
    ({"bootstrap": 0}, "`bootstrap`"), ({"bootstrap": -1}, "`bootstrap`"),
    ({"bootstrap": 100_001}, r"`bootstrap`.*\[2, 100000\]"), ({"ci": 0.0}, "`ci`"),
    ({"ci": 1.0}, "`ci`"), ({"ci": 1.5}, "`ci`"), ({"method": "normal"}, "`method`"),
])
def test_bad_intervals_say_what(kw, match):
    with pytest.raises(ScoreframeError, match=match):
        Intervals(**kw)


def test_missing_resample_column_names_it():
    with pytest.raises(ScoreframeError, match="`speaker`"):
        sf.evaluate(trials(100), intervals=Intervals(bootstrap=10, resample=["speaker"]))


@pytest.mark.parametrize(("args", "match"), [
    (["--engine", "local"], "invalid choice: 'local'"),
    (["--bootstrap", "0"], "--bootstrap"), (["--bootstrap", "100001"], "--bootstrap"),
    (["--bootstrap", "10", "--ci", "1.5"], "--ci"),
    (["--bootstrap", "10", "--resample", "speaker"], "speaker"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --engine dask"),
    (["--workers", "0"], "--workers"),
])
def test_cli_bad_input_is_one_line_exit_2_nothing_written(args, match, tmp_path):
    trials(200).write_parquet(tmp_path / "t.parquet")
    r = cli(["evaluate", "t.parquet", "--format", "json", "-o", "out.json", *args], tmp_path)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert match in r.stderr
    assert not (tmp_path / "out.json").exists()


def test_cli_unreachable_scheduler_exits_2_within_10_s(tmp_path):
    pytest.importorskip("distributed")
    trials(200).write_parquet(tmp_path / "t.parquet")
    t = time.monotonic()  # start-up and imports alone: the same command failing at once
    cli(["evaluate", "t.parquet", "--engine", "dask", "--scheduler", "tcp://h:1",
         "--ci", "2"], tmp_path)
    startup, t = time.monotonic() - t, time.monotonic()
    r = cli(["evaluate", "t.parquet", "--engine", "dask", "--scheduler",
             f"tcp://127.0.0.1:{_closed_port()}", "-o", "out.json", "--format", "json"],
            tmp_path)
    assert r.returncode == 2 and "cannot reach the dask scheduler" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert time.monotonic() - t < startup + 10
    assert not (tmp_path / "out.json").exists()


def test_cli_engine_options_build_one_engine():
    from scoreframe.cli.main import build_parser
    from scoreframe.cli.options import engine_of

    p = build_parser()
    a = p.parse_args(["evaluate", "ds", "--engine", "streaming", "--memory-limit", "2GB",
                      "--workers", "3", "--spill-dir", "/tmp"])
    assert engine_of(a) == Engine("streaming", memory_limit="2GB", workers=3, spill_dir="/tmp")
