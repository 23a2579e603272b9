"""Every option value of every command is checked by one mechanism (issue 26 item 5).

The cases are generated from the parser itself: every sub-command, every option that takes a
value. Each option declares its kind (:func:`scoreframe.cli.options.option_kind`: an
``OptionType`` made by a factory of :mod:`scoreframe.cli.options`, or argparse ``choices``);
an option added later without a declared kind fails :func:`test_every_value_option_declares_a_kind`,
and once declared it is fed the bad values of its kind here automatically.

For numbers the test decides on its own (from the declared range, with its own parsing) which of
zero, a negative, a huge value (``1e400``, ``10**30``), NaN/inf, a non-number and an empty
value are invalid, feeds each of those, and expects exit status 2, exactly one stderr line that
names the option, no traceback and nothing written; the valid ones must parse. The cases run
in-process on one parser; a handful run as subprocesses, as a user meets them.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

from scoreframe.cli import build_parser, main
from scoreframe.cli.options import ENGINE_OPTIONS, KINDS, ListAction, OptionType, option_kind

CLI_MAIN = importlib.import_module("scoreframe.cli.main")
PARSER = build_parser()

#: A valid command line of each leaf command, without the option under test. ``{ds}`` is a small
#: synthetic dataset, ``{sql}`` an SQL file, ``{mc}`` / ``{truth}`` multiclass inputs (never read:
#: every case fails while parsing), ``{model}`` a model path; outputs are relative (cwd).
BASE = {
    "convert": ["{ds}", "-o", "out.parquet"],
    "info": ["{ds}"],
    "query": ["{sql}", "{ds}"],
    "synth": ["out_ds"],
    "evaluate": ["{ds}"],
    "compare": ["{ds}", "--systems", "sys1", "sys2"],
    "calibrate train": ["{ds}", "-o", "model.json"],
    "calibrate apply": ["{model}", "{ds}", "-o", "out.parquet"],
    "fuse train": ["{ds}", "-o", "model.json"],
    "fuse apply": ["{model}", "{ds}", "-o", "out.parquet"],
    "report": ["{ds}", "-o", "report.html"],
    "multiclass evaluate": ["{mc}", "--truth", "{truth}"],
    "multiclass calibrate train": ["{mc}", "--truth", "{truth}", "-o", "model.json"],
    "multiclass calibrate apply": ["{model}", "{mc}", "-o", "out.parquet"],
    "multiclass fuse train": ["{mc}", "--truth", "{truth}", "-o", "model.json"],
    "multiclass fuse apply": ["{model}", "{mc}", "-o", "out.parquet"],
    "demo": [],
    "identify": ["{ds}"],
    "clean": [],
    "norm": ["{ds}", "--statistics", "stats.parquet"],
    "differentials": ["{ds}", "--by", "gender", "--fmr", "0.01"],
}

#: Values that are never valid for a kind of free-text value.
WORDS = ["", "   ", "a\0b"]
#: A value far too long for any option (the message quotes it cut short).
LONG = "x" * 10_000
#: Numbers and non-numbers fed to every number option (the invalid ones for its range).
NUMBERS = ["0", "-1", "-3", "1e400", "-1e400", str(10**30), "1e23", "1e12", "nan", "inf",
           "-inf", "abc", "", " ", "1.5"]
#: Extra bad values of options whose text has a form of its own.
EXTRA = {
    "--missing": ["nan", "inf", "1e400", "maybe"],
    "--objective": ["nope", "1,x"],
    "--columns": ["model", "=llr", "model="],
    "--scheduler": ["not a url", "tcp://127.0.0.1", "tcp://host:0", "tcp://host:99999",
                    "1e400", "http://host:8786/path"],
}


def leaf_parsers(p: argparse.ArgumentParser = PARSER, path: tuple[str, ...] = ()
                 ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), p
    for action in subs:
        for name, sub in action.choices.items():
            yield from leaf_parsers(sub, (*path, name))


def value_actions(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions of ``p`` that take a value (options and positionals)."""
    return [a for a in p._actions if a.nargs != 0
            and not isinstance(a, argparse._HelpAction | argparse._VersionAction
                               | argparse._SubParsersAction)]


def value_type(action: argparse.Action) -> OptionType | None:
    t = getattr(action, "converter", None) or action.type
    return t if isinstance(t, OptionType) else None


def number(text: str, integer: bool) -> Decimal | None:
    """The test's own reading of a number (independent of the option types)."""
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not d.is_finite() or (integer and d != d.to_integral_value()):
        return None
    return d


def is_valid(t: OptionType, text: str) -> bool:
    """Whether ``text`` is valid for the number option type ``t`` by its declared range."""
    if t.none and text.strip().lower() == "none":
        return True
    d = number(text, integer=t.kind == "integer")
    if d is None:
        return False
    if t.kind == "real" and not math.isfinite(float(d)):
        return False
    lo, hi = Decimal(str(t.lo)), Decimal(str(t.hi))
    return (d > lo if t.lo_open else d >= lo) and (d < hi if t.hi_open else d <= hi)


def bad_values(action: argparse.Action) -> list[str]:
    """The invalid values this option is fed, from its declared kind."""
    kind = option_kind(action)
    t = value_type(action)
    name = action.option_strings[-1]
    if kind == "choice":
        choices = list(action.choices or ())
        return [v for v in ["", "0", "-1", "1e400", "abc", " ", LONG] if v not in choices]
    assert t is not None
    if kind in ("integer", "real", "size"):
        values = [v for v in [*NUMBERS, "9" * 10_000] if not is_valid(t, v)]
        values += ["5XB", "1e400GB", "-1GB"] if kind == "size" else []
    else:
        values = [*WORDS, *EXTRA.get(name, [])]
        values += [LONG] if kind == "address" or name in ("--missing", "--objective") else []
    if t.distinct and isinstance(action, ListAction):
        ok = {"real": "0.25", "name": "sys1", "column": "gender"}[t.kind]
        values.append(f"{ok},{ok}")
    return values


def argv_of(command: str, action: argparse.Action, value: str, inputs: dict[str, str]
            ) -> list[str]:
    base = [a.format(**inputs) for a in BASE[command]]
    n = action.nargs if isinstance(action.nargs, int) else 1
    if n == 1 and value.startswith("-"):  # argparse takes -1e15 for an option: --opt=-1e15
        return [*command.split(), *base, f"{action.option_strings[-1]}={value}"]
    return [*command.split(), *base, action.option_strings[-1], *([value] * n)]


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("options_inputs")
    assert main(["synth", str(root / "ds"), "--trials", "400", "--systems", "2"]) == 0
    (root / "q.sql").write_text("SELECT count(*) AS n FROM trials")
    for name in ("mc.tsv", "truth.tsv", "model.json"):
        (root / name).write_text("not read: every case fails while parsing\n")
    return {"ds": str(root / "ds"), "sql": str(root / "q.sql"), "mc": str(root / "mc.tsv"),
            "truth": str(root / "truth.tsv"), "model": str(root / "model.json")}


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*")}


@pytest.fixture
def cwd(tmp_path, monkeypatch) -> Path:
    """An empty working directory, and ``main`` on the one parser (parsing does not change it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(CLI_MAIN, "build_parser", lambda: PARSER)
    return tmp_path


def assert_usage_error(argv: list[str], option: list[str], capsys, cwd: Path) -> str:
    capsys.readouterr()
    code = main(argv)
    cap = capsys.readouterr()
    assert code == 2, (argv, code, cap.err)
    assert cap.err.count("\n") == 1 and cap.err.endswith("\n"), (argv, cap.err)
    assert "Traceback" not in cap.err and cap.out == "", (argv, cap)
    assert any(f": error: argument {o}:" in cap.err for o in ("/".join(option), option[-1])), \
        (argv, cap.err)
    assert len(cap.err) < 400, cap.err
    assert os.listdir(cwd) == [], (argv, os.listdir(cwd))
    return cap.err


# --- the parser declares every value ------------------------------------------------------------
LEAVES = list(leaf_parsers())
OPTIONS = [(cmd, a) for cmd, p in LEAVES for a in value_actions(p) if a.option_strings]


def test_every_command_has_a_base_command_line():
    assert {cmd for cmd, _ in LEAVES} == set(BASE), "add the new command to BASE"
    for cmd, _ in LEAVES:
        ns = PARSER.parse_args([*cmd.split(), *(a.format(ds="d", sql="q", mc="m", truth="t",
                                                         model="m") for a in BASE[cmd])])
        assert ns.func is not None


def test_every_value_option_declares_a_kind():
    undeclared = [f"{cmd} {a.option_strings or a.dest}" for cmd, p in LEAVES
                  for a in value_actions(p) if option_kind(a) not in (*KINDS, "choice")]
    assert not undeclared, ("declare these options' values with a type from "
                            f"scoreframe.cli.options (int_in, path_arg, ...): {undeclared}")


def test_number_options_declare_finite_ranges_shown_in_help():
    for cmd, p in LEAVES:
        shown = " ".join(p.format_help().split())
        for a in value_actions(p):
            t = value_type(a)
            if t is not None and t.kind in ("integer", "real", "size"):
                assert t.lo is not None and t.hi is not None, (cmd, a.option_strings)
                assert math.isfinite(t.lo) and t.hi < 1e30, (cmd, a.option_strings)
                assert t.expected in shown, (cmd, a.option_strings)


@pytest.mark.parametrize("cmd,action", OPTIONS,
                         ids=[f"{c}:{a.option_strings[-1]}" for c, a in OPTIONS])
def test_bad_values_are_one_line_exit_2(cmd, action, inputs, cwd, capsys):
    before = tree(Path(inputs["ds"]).parent)
    values = bad_values(action)
    assert values, "every option has invalid values to try"
    for value in values:
        err = assert_usage_error(argv_of(cmd, action, value, inputs),
                                 action.option_strings, capsys, cwd)
        if value and value.strip() and "\0" not in value and not value.startswith("-") \
                and len(value) < 20:
            assert repr(value)[:20] in err or "twice" in err or "invalid choice" in err, err
    assert tree(Path(inputs["ds"]).parent) == before, "an input changed"


@pytest.mark.parametrize("cmd,action", [(c, a) for c, a in OPTIONS
                                        if option_kind(a) in ("integer", "real", "size")],
                         ids=[f"{c}:{a.option_strings[-1]}" for c, a in OPTIONS
                              if option_kind(a) in ("integer", "real", "size")])
def test_valid_numbers_parse(cmd, action, inputs):
    """The positive control: the values the declared range admits are accepted."""
    t = value_type(action)
    assert t is not None
    middle = str((Decimal(str(t.lo)) + Decimal(str(t.hi))) / 2)
    valid = [v for v in [*NUMBERS, str(t.lo), str(t.hi), middle] if is_valid(t, v)]
    assert valid, (cmd, action.option_strings)
    for v in valid:
        ns = PARSER.parse_args(argv_of(cmd, action, v, inputs))
        got = getattr(ns, action.dest)
        got = got[-1] if isinstance(got, list) else got
        assert got is not None and math.isclose(float(got), float(Decimal(v)), rel_tol=1e-12)


def test_empty_positionals_are_refused(inputs, cwd, capsys):
    for argv, name in [(["evaluate", ""], "DATASET"), (["query", "", inputs["ds"]], "sql"),
                       (["calibrate", "apply", inputs["model"], " ", "-o", "x.parquet"],
                        "EVAL"),
                       (["fuse", "train", inputs["ds"], "", "-o", "m.json"], "DEV")]:
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"argument {name}" in err, err
        assert os.listdir(cwd) == []


# --- one definition of the engine options -------------------------------------------------------
def _library_call(cmd: str):
    from scoreframe.demo import run_demo
    from scoreframe.estimators.calibration import LinearCalibration
    from scoreframe.estimators.fusion import LinearFusion
    from scoreframe.frames.sql import query
    from scoreframe.identification import identify
    from scoreframe.io.convert import convert_trials
    from scoreframe.io.info import dataset_info
    from scoreframe.multiclass import evaluate_multiclass
    from scoreframe.norm import normalize
    from scoreframe.results._differentials import differentials
    from scoreframe.results.compare import compare
    from scoreframe.results.evaluate import evaluate
    from scoreframe.views.report import build_report

    return {"evaluate": evaluate, "compare": compare, "report": build_report,
            "identify": identify, "differentials": differentials, "norm": normalize,
            "multiclass evaluate": evaluate_multiclass,
            "info": dataset_info, "convert": convert_trials, "query": query,
            "calibrate train": LinearCalibration.fit, "fuse train": LinearFusion.fit,
            "demo": run_demo}[cmd]


@pytest.mark.parametrize("cmd", ["evaluate", "compare", "report", "identify", "differentials",
                                 "norm", "multiclass evaluate", "info", "convert", "query",
                                 "calibrate train", "fuse train", "demo"])
def test_engine_options_follow_the_library_call(cmd):
    """A command has exactly the engine options its library call accepts (issue 21 item 4).

    A library call that takes ``engine=`` gets every engine option (``--engine``,
    ``--memory-limit``, ``--workers``, ``--scheduler``, ``--spill-dir``, which build one
    :class:`~scoreframe.Engine`); one that does not gets none.
    """
    p = dict(LEAVES)[cmd]
    on_cli = {a.dest for a in p._actions if a.dest in ENGINE_OPTIONS}
    takes_engine = "engine" in inspect.signature(_library_call(cmd)).parameters
    assert on_cli == (set(ENGINE_OPTIONS) if takes_engine else set())


def test_engine_options_are_defined_once():
    seen: dict[str, tuple[object, ...]] = {}
    for cmd, a in OPTIONS:
        if a.dest in ENGINE_OPTIONS:
            t = value_type(a)
            spec = (a.option_strings, a.help, a.default, a.choices,
                    t.expected if t else None)
            assert seen.setdefault(a.dest, spec) == spec, (cmd, a.dest)
    assert set(seen) == set(ENGINE_OPTIONS)


# --- the cases of the issue, end to end -----------------------------------------------------------
def run(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "scoreframe", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc, time.monotonic() - t


ISSUE_CASES = [
    (["compare", "{ds}", "--systems", "sys1", "sys2", "--workers", "0"],
     "argument --workers: expected an integer in [1, 4096]; got '0'"),
    (["compare", "{ds}", "--systems", "sys1", "sys2", "--workers", "-3"],
     "argument --workers: expected an integer in [1, 4096]; got '-3'"),
    (["evaluate", "{ds}", "--bootstrap", "1e12"],
     "argument --bootstrap: expected an integer in [2, 100000]; got '1e12'"),
    (["evaluate", "{ds}", "--bootstrap", "1e23"],
     "argument --bootstrap: expected an integer in [2, 100000]; got '1e23'"),
    (["evaluate", "{ds}", "--memory-limit", "1e400"], "argument --memory-limit: expected a size"),
    (["convert", "{ds}", "--to", "bosaris-h5", "-o", "x.h5", "--max-dense-bytes", "1e400"],
     "argument --max-dense-bytes: expected a size"),
    (["compare", "{ds}", "--systems", "sys1", "sys2", "--resample", "model", "model"],
     "argument --resample: 'model' is given twice"),
    (["evaluate", "{ds}", "--engine", "dask", "--scheduler", "not a url"],
     "argument --scheduler: expected a scheduler address such as tcp://host:8786"),
    (["evaluate", "{ds}", "--engine", "dask", "--scheduler", "tcp://127.0.0.1"],
     "argument --scheduler: expected a scheduler address such as tcp://host:8786"),
]


@pytest.mark.parametrize("argv,says", ISSUE_CASES)
def test_issue_cases(argv, says, inputs, cwd, capsys):
    err = assert_usage_error([a.format(**inputs) for a in argv], [says.split()[1][:-1]],
                             capsys, cwd)
    assert says in err


@pytest.mark.parametrize("case", [0, 7])
def test_issue_cases_in_a_subprocess(case, inputs, tmp_path):
    argv, says = ISSUE_CASES[case]
    proc, _ = run([a.format(**inputs) for a in argv], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr
    assert proc.stdout == "" and os.listdir(tmp_path) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_scheduler_is_one_line_within_10_s(inputs, cwd, capsys):
    pytest.importorskip("dask.distributed")
    import dask.distributed  # noqa: F401 (imported before the clock starts)

    port = _free_port()
    t = time.monotonic()
    assert main(["evaluate", inputs["ds"], "--engine", "dask", "--scheduler",
                 f"tcp://127.0.0.1:{port}"]) == 2
    took = time.monotonic() - t
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"cannot reach the dask scheduler in tcp://127.0.0.1:{port}" in err
    assert "Connection refused" in err  # a refused port is answered at once, not retried
    assert took < 10, took
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4,
    b"\xff" * 64,  # binary garbage, not a Dask frame
])
def test_a_server_that_is_no_scheduler_is_one_line(inputs, cwd, capsys, reply):
    """Something listens but does not speak Dask: an error at once, no 60 s hang at exit."""
    pytest.importorskip("dask.distributed")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def answer() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(reply)
            conn.recv(1024)

    threading.Thread(target=answer, daemon=True).start()
    port = srv.getsockname()[1]
    t = time.monotonic()
    try:
        assert main(["evaluate", inputs["ds"], "--engine", "dask", "--scheduler",
                     f"tcp://127.0.0.1:{port}"]) == 2
    finally:
        srv.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"tcp://127.0.0.1:{port}" in err, err
    assert "dask scheduler" in err and "Traceback" not in err
    assert "Unable to allocate" not in err  # the cause is named, not a parser's symptom
    assert time.monotonic() - t < 20
    assert os.listdir(cwd) == []
