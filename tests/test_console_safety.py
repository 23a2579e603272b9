"""Data shown as data: nothing the user's data holds is interpreted by the console.

Hostile strings — rich markup (``[b]x``, ``[/]``), emoji codes (``:x:``, ``root:x:0:0``), ANSI
sequences (``ESC[31m``, the OSC title sequence ``ESC]0;title BEL``), newlines, right-to-left
marks and 10,000-character values — go through every command that prints data, as condition
values, system names, column names and file names. Each command runs as a subprocess (the
installed ``scoreframe`` script), and the bytes it prints are checked: the value appears
literally or escaped (``\\x1b``), no control byte but the line feed, no emoji, no traceback, and
every line bounded.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from scoreframe.cli.console import shown
from scoreframe.cli.main import ERROR_LIMIT
from scoreframe.errors import clip, listing, message, printable, quote

BIN = Path(sys.executable).parent / "scoreframe"
ENV = {**os.environ, "COLUMNS": "200", "TERM": "xterm-256color"}
ENV.pop("NO_COLOR", None)
ENV.pop("FORCE_COLOR", None)

LONG = "L" * 10_000
#: The hostile values, and how each must appear in the output (literally or escaped).
VALUES = {
    "[b]x": "[b]x",
    "[/]": "[/]",
    ":x:": ":x:",
    "root:x:0:0": "root:x:0:0",
    "\x1b[31mred": "\\x1b[31mred",
    "\x1b]0;title\x07": "\\x1b]0;title\\x07",
    "a\nb": "a\\nb",
    "\u202eabc\u200f": "\\u202eabc\\u200f",
    LONG: "L" * 100 + "… (10,000 characters)",
}
SYSTEMS = ("[b]s1:x:", "\x1b[32ms2\u202e")
SYSTEMS_SHOWN = ("[b]s1:x:", "\\x1b[32ms2\\u202e")
COLUMN = "[/]c:x:\x1b[1m"  # a column name with markup, an emoji code and ESC
COLUMN_SHOWN = "[/]c:x:\\x1b[1m"
# a file name with an emoji code, OSC and RIS escape sequences, BEL, a newline and an RTL mark
# (no `/`, < 255 bytes; no `[`: Polars reads `[...]` in a path as a glob, see the README)
FILE = ":x:f\x1b]0;t\x07\x1bc\n\u202e" + "F" * 150
FILE_SHOWN = ":x:f\\x1b]0;t\\x07\\x1bc\\n\\u202eFF"  # its start (a path is cut at 100)

# what may never appear in anything printed: control characters but the line feed, C1,
# bidi and zero-width format characters, line/paragraph separators, and the emoji :x: becomes
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069"
                    "\ufeff\u274c]")
MAX_LINE = ERROR_LIMIT + 40  # rich tables are 200 wide; error lines at most this


# --- the mechanism ----------------------------------------------------------------------------
def test_escaped_characters_are_exactly_the_unsafe_unicode_categories():
    """printable() escapes exactly Cc, Cf, Zl, Zp and Cs, over every code point.

    Format characters of a newer Unicode than this Python's (unassigned here, Cn) may be
    escaped too.
    """
    unsafe = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    kept = [hex(c) for c in range(0x110000)
            if unicodedata.category(chr(c)) in unsafe and printable(chr(c)) == chr(c)]
    extra = [hex(c) for c in range(0x110000)
             if unicodedata.category(chr(c)) not in unsafe | {"Cn"} and printable(chr(c)) != chr(c)]
    assert kept == [] and extra == []


def test_escapes_are_visible_and_ascii():
    assert printable("\x1b[31m\x07\n\t\r\x9b\u202e\U000e0041") == \
        "\\x1b[31m\\x07\\n\\t\\r\\x9b\\u202e\\U000e0041"
    for s in ("[b]x", ":x:", "é ü 中文 🙂", "back\\slash"):
        assert printable(s) == s


def test_values_and_messages_are_bounded():
    assert shown(LONG) == VALUES[LONG]
    assert quote(LONG).endswith("…' (10,000 characters)") and len(quote(LONG)) < 90
    assert clip("abc", 3) == "abc"
    big = listing(range(100_000))
    assert big.endswith("… (100,000 in all)") and len(big) < 80
    text = message(LONG, expected=LONG, got=LONG, where=LONG, hint=LONG)
    assert len(text) < 1000 and "\x1b" not in message("x\x1b", got="\x1b[2J")


# --- the commands -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-system dataset with hostile conditions, systems and a hostile column, under a
    hostile file name; multiclass scores and truth with hostile conditions."""
    root = tmp_path_factory.mktemp("safety")
    rng = np.random.default_rng(0)
    n = 40 * len(VALUES)
    label = (np.arange(n) // len(VALUES)) % 3 == 0
    cond = [list(VALUES)[i % len(VALUES)] for i in range(n)]
    frames = []
    for k, system in enumerate(SYSTEMS):
        frames.append(pl.DataFrame({
            "model": [f"m{i}" for i in range(n)], "segment": [f"s{i}" for i in range(n)],
            "score": rng.normal(size=n) + (2.0 + k) * label, "label": label,
            "system": system, "cond": cond, COLUMN: cond, LONG: ["v"] * n}))
    df = pl.concat(frames)
    df.write_parquet(root / f"{FILE}.parquet")
    df.filter(pl.col("system") == SYSTEMS[0]).write_parquet(root / "one.parquet")
    # a group with no non-targets: its warning names the hostile value
    lonely = df.filter(pl.col("system") == SYSTEMS[0]).with_columns(
        label=pl.when(pl.col("cond") == "[/]").then(True).otherwise(pl.col("label")))
    lonely.write_parquet(root / "lonely.parquet")
    k, m = 3, 60 * len(VALUES)
    y = rng.integers(0, k, m)
    ll = rng.normal(0, 1, (m, k))
    ll[np.arange(m), y] += 2.0
    classes = ("c0", "c1", "c2")
    pl.DataFrame({"segment": [f"t{i}" for i in range(m) for _ in range(k)],
                  "class": list(classes) * m, "score": ll.ravel()}
                 ).write_parquet(root / "mc_scores.parquet")
    pl.DataFrame({"segment": [f"t{i}" for i in range(m)], "class": [classes[j] for j in y],
                  "cond": [list(VALUES)[i % len(VALUES)] for i in range(m)]}
                 ).write_parquet(root / "mc_truth.parquet")
    (root / "by_cond.sql").write_text(
        "select cond, system, count(*) as n from trials group by cond, system order by n")
    return root


OUT = "out"  # outputs of the commands, inside the data directory
JOBS: list[tuple[str, list[str]]] = [
    ("info", ["info", f"{FILE}.parquet"]),
    ("evaluate", ["evaluate", f"{FILE}.parquet", "--by", "cond"]),
    ("evaluate-column", ["evaluate", "one.parquet", "--by", COLUMN, "--bootstrap", "20"]),
    ("evaluate-long-column", ["evaluate", "one.parquet", "--by", LONG]),
    ("evaluate-warning", ["evaluate", "lonely.parquet", "--by", "cond"]),
    ("compare", ["compare", f"{FILE}.parquet", "--systems", *SYSTEMS, "--by", "cond",
                 "--bootstrap", "20"]),
    ("query", ["query", "by_cond.sql", f"{FILE}.parquet"]),
    ("calibrate-train", ["calibrate", "train", f"{FILE}.parquet", "--system", SYSTEMS[0], "-o",
                         f"{OUT}/{FILE}.json"]),
    ("calibrate-apply", ["calibrate", "apply", f"{OUT}/{FILE}.json", "one.parquet", "-o",
                         f"{OUT}/{FILE}.out.parquet"]),
    ("fuse-train", ["fuse", "train", f"{FILE}.parquet", "-o", f"{OUT}/fused.json"]),
    ("fuse-apply", ["fuse", "apply", f"{OUT}/fused.json", f"{FILE}.parquet", "-o",
                    f"{OUT}/fused.parquet"]),
    ("report", ["report", "one.parquet", "--by", "cond", "-o", f"{OUT}/{FILE}.html"]),
    ("convert", ["convert", f"{FILE}.parquet", "-o", f"{OUT}/{FILE}.c.parquet"]),
    ("multiclass-evaluate", ["multiclass", "evaluate", "mc_scores.parquet", "--truth",
                             "mc_truth.parquet", "--by", "cond"]),
    ("multiclass-train", ["multiclass", "calibrate", "train", "mc_scores.parquet", "--truth",
                          "mc_truth.parquet", "-o", f"{OUT}/{FILE}.mc.json"]),
    # errors: the value is escaped (and cut) in the one line
    ("error-missing-file", ["evaluate", f"{FILE}.missing"]),
    ("error-where", ["evaluate", f"{FILE}.parquet", "--where", "cond = '\x1b[31m:x:[/]"]),
    ("error-column", ["evaluate", f"{FILE}.parquet", "--by", COLUMN + "zz"]),
    ("error-long-column", ["evaluate", f"{FILE}.parquet", "--by", LONG + "zz"]),
    ("error-system", ["compare", f"{FILE}.parquet", "--systems", SYSTEMS[0], "\x1b[2J" + LONG]),
    ("error-option", ["evaluate", f"{FILE}.parquet", "--bogus\x1b[2J"]),
]

# One interpreter runs every job through `scoreframe.cli.main` with its file descriptors 1 and 2
# redirected to files, so the bytes checked are those the command writes (one start-up
# instead of one per command; the terminal tests below run the installed script itself).
DRIVER = """
import json, os, sys, traceback
from scoreframe.cli.main import main
codes = {}
for jid, argv in json.load(sys.stdin):
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    for fd, ext in ((1, "out"), (2, "err")):
        f = os.open(f"logs/{jid}.{ext}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(f, fd); os.close(f)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
        code = "exception"
    sys.stdout.flush(); sys.stderr.flush()
    for fd, s in zip((1, 2), saved):
        os.dup2(s, fd); os.close(s)
    codes[jid] = code
print(json.dumps(codes))
"""


@pytest.fixture(scope="module")
def printed(data: Path) -> dict[str, tuple[object, bytes, bytes]]:
    """Run every job in one subprocess; per job: exit status, stdout and stderr bytes."""
    (data / OUT).mkdir()
    (data / "logs").mkdir()
    res = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(JOBS), text=True,
                         capture_output=True, timeout=900, env=ENV, cwd=data)
    assert res.returncode == 0, res.stderr[-3000:]
    codes = json.loads(res.stdout.strip().splitlines()[-1])
    return {jid: (codes[jid], (data / "logs" / f"{jid}.out").read_bytes(),
                  (data / "logs" / f"{jid}.err").read_bytes()) for jid, _ in JOBS}


def check(printed: dict[str, tuple[object, bytes, bytes]], jid: str, *, code: int = 0) -> str:
    """Check a job's exit status and every byte it printed; return the text."""
    status, out, err = printed[jid]
    text = (out + err).decode("utf-8")  # strict: printed text is valid UTF-8
    assert status == code, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    bad = UNSAFE.search(text)
    assert bad is None, (hex(ord(bad.group())), text[max(bad.start() - 80, 0):bad.end() + 80])
    long = [len(line) for line in text.splitlines() if len(line) > MAX_LINE]
    assert long == [], long
    if code:
        assert err.decode().count("\n") == 1 and not out, text
    return text


def shows(text: str, *values: str) -> None:
    missing = [v for v in values if v not in text]
    assert missing == [], (missing, text[:3000])


ALL_SHOWN = list(VALUES.values())


def test_info(printed):
    shows(check(printed, "info"), *ALL_SHOWN, COLUMN_SHOWN, FILE_SHOWN, *SYSTEMS_SHOWN,
          "L" * 100 + "…")


def test_evaluate_conditions(printed):
    shows(check(printed, "evaluate"), *ALL_SHOWN, *SYSTEMS_SHOWN)


def test_evaluate_column_names(printed):
    shows(check(printed, "evaluate-column"), COLUMN_SHOWN, *ALL_SHOWN)
    shows(check(printed, "evaluate-long-column"), "L" * 100 + "… (10,000")


def test_evaluate_warning_names_the_group(printed):
    text = check(printed, "evaluate-warning")
    warning = [line for line in text.splitlines() if line.startswith("scoreframe: warning:")]
    assert len(warning) == 1, warning
    shows(warning[0], "cond=[/]", "no non-targets", "eer", "are null")


def test_compare(printed):
    shows(check(printed, "compare"), *SYSTEMS_SHOWN, *ALL_SHOWN)


def test_query(printed):
    shows(check(printed, "query"), *ALL_SHOWN, *SYSTEMS_SHOWN)


def test_calibrate_and_fuse_summaries(printed):
    shows(check(printed, "calibrate-train"), FILE_SHOWN, SYSTEMS_SHOWN[0], "model written to")
    shows(check(printed, "calibrate-apply"), FILE_SHOWN, SYSTEMS_SHOWN[0])
    shows(check(printed, "fuse-train"), *SYSTEMS_SHOWN, FILE_SHOWN, "llr = ")
    shows(check(printed, "fuse-apply"), FILE_SHOWN, "fused scores written")


def test_report_and_convert_messages(printed):
    shows(check(printed, "report"), "report written to", FILE_SHOWN)
    shows(check(printed, "convert"), "wrote", FILE_SHOWN)


def test_multiclass(printed):
    shows(check(printed, "multiclass-evaluate"), *ALL_SHOWN)
    shows(check(printed, "multiclass-train"), FILE_SHOWN)


@pytest.mark.parametrize("jid, needles", [
    ("error-missing-file", [FILE_SHOWN]),
    ("error-where", ["\\x1b[31m:x:[/]"]),
    ("error-column", [COLUMN_SHOWN]),
    ("error-long-column", ["LLL…"]),
    ("error-system", ["\\x1b[2J"]),
    ("error-option", ["\\x1b[2J"]),
])
def test_errors(printed, jid: str, needles: list[str]):
    text = check(printed, jid, code=2)
    shows(text, *needles)
    assert text.startswith(("scoreframe: error: ", "scoreframe evaluate: error: ",
                            "scoreframe compare: error: "))


def test_csv_to_a_pipe_is_the_data_byte_for_byte(data: Path):
    res = subprocess.run([str(BIN), "query", "by_cond.sql", f"{FILE}.parquet", "--format",
                          "csv"], capture_output=True, timeout=300, env=ENV, cwd=data)
    assert res.returncode == 0
    got = pl.read_csv(res.stdout)
    assert set(got["cond"]) == set(VALUES)


def _on_a_terminal(argv: list[str], cwd: Path) -> str:
    """Run the script with stdout and stderr on a pseudo-terminal; return what it printed."""
    main, child = pty.openpty()
    proc = subprocess.Popen([str(BIN), *argv], stdout=child, stderr=child, env=ENV, cwd=cwd,
                            close_fds=True)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert proc.wait(timeout=300) == 0
    return b"".join(chunks).decode("utf-8")


@pytest.mark.parametrize("argv", [
    ["query", "by_cond.sql", f"{FILE}.parquet"],
    ["query", "by_cond.sql", f"{FILE}.parquet", "--format", "csv"],
    ["evaluate", f"{FILE}.parquet", "--by", "cond"],  # with its progress bar on the terminal
], ids=["table", "csv", "evaluate"])
def test_on_a_terminal_data_never_drives_it(data: Path, argv: list[str]):
    """On a terminal rich styles its own output, but no sequence of the data gets through."""
    text = _on_a_terminal(argv, data)
    for raw in ("\x1b[31mred", "\x1b]0;title", "\x07", "\u202e", "\u200f", "\x1b[32ms2",
                "\u274c"):
        assert raw not in text, raw
    shows(text, "\\x1b[31mred", "\\x1b]0;title\\x07", "[b]x", ":x:", "root:x:0:0")


# --- messages that say what to do ---------------------------------------------------------------
def _groups_frame(n_lonely: int) -> pl.DataFrame:
    """Two sound conditions and ``n_lonely`` conditions without non-targets."""
    rng = np.random.default_rng(1)
    n = 200
    good = pl.DataFrame({"model": [f"m{i}" for i in range(n)], "segment": "s",
                         "score": rng.normal(size=n), "label": np.arange(n) // 2 % 4 == 0,
                         "cond": ["a", "b"] * (n // 2)})
    lonely = pl.DataFrame({"model": [f"x{i}" for i in range(n_lonely)], "segment": "s",
                           "score": rng.normal(size=n_lonely), "label": True,
                           "cond": [f"lonely{i}" for i in range(n_lonely)]})
    return pl.concat([good, lonely])


def test_degenerate_groups_warn_once_each_with_metrics_and_reason(tmp_path, capsys):
    from scoreframe.cli.main import main

    _groups_frame(2).write_parquet(tmp_path / "t.parquet")
    assert main(["evaluate", str(tmp_path / "t.parquet"), "--by", "cond", "--bootstrap", "20",
                 "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    # evaluate and the bootstrap both find the two groups: one line per group, not four
    assert len(lines) == 2, lines
    for k, line in enumerate(lines):
        assert line.startswith(f"scoreframe: warning: group cond=lonely{k} has no non-targets "
                               "(1 targets, 0 non-targets): eer, cllr"), line
        assert "are null (metrics need targets and non-targets)" in line


def test_many_degenerate_groups_are_counted_not_listed():
    from scoreframe.errors import WARN_GROUPS, DegenerateGroupWarning
    from scoreframe.results.evaluate import evaluate

    with pytest.warns(DegenerateGroupWarning) as rec:
        evaluate(_groups_frame(WARN_GROUPS + 30), by="cond", operating_points=0.5)
    texts = [str(w.message) for w in rec]
    assert len(texts) == WARN_GROUPS + 1
    assert texts[-1].startswith("30 more groups (not listed) lack some class")
    named = {w.message.group["cond"] for w in rec[:WARN_GROUPS]}  # type: ignore[union-attr]
    assert len(named) == WARN_GROUPS and named < {f"lonely{i}" for i in range(WARN_GROUPS + 30)}
    assert all(len(t) < 400 for t in texts)


def test_error_line_maps_attributes_not_text():
    import argparse

    from scoreframe.cli.main import error_line
    from scoreframe.errors import ScoreframeError, message

    p = argparse.ArgumentParser()
    p.add_argument("--p-target")
    ns = argparse.Namespace(parser=p, dataset="ds.parquet", model=None)
    # the parameter attribute names the option; the message does not say "bad `p_target`"
    line = error_line(ScoreframeError("`p_target` must lie in (0, 1); got 1.5",
                                      parameter="p_target"), ns)
    assert line == "scoreframe: error: `ds.parquet`: `--p-target` must lie in (0, 1); got 1.5"
    # the path attribute is the file the error is about (no other input is named then)
    line = error_line(ScoreframeError("bad row", path="other.tsv", line=3), ns)
    assert line == "scoreframe: error: `other.tsv` line 3: bad row"
    # the text is never read: a message that mentions another file and "line 7" still gets
    # the file and line of its attributes first, and its text unchanged after them
    exc = ScoreframeError("bad row (like `elsewhere.tsv` line 7)", path="other.tsv", line=3)
    assert error_line(exc, ns) == \
        "scoreframe: error: `other.tsv` line 3: bad row (like `elsewhere.tsv` line 7)"
    # ... nor searched for the input: without a path attribute the input goes first, even
    # when the text happens to name it, and no line is made up from "line 3" in the text
    assert error_line(ScoreframeError("bad `ds.parquet` line 3"), ns) == \
        "scoreframe: error: `ds.parquet`: bad `ds.parquet` line 3"
    # what a library user sees (str) and what the CLI prints come from the same attributes
    exc = ScoreframeError(message("bad row", expected="3 fields", path="d/x.tsv", line=4))
    assert (exc.text, exc.path, exc.line) == ("bad row: expected 3 fields", "d/x.tsv", 4)
    assert str(exc) == "`d/x.tsv` line 4: bad row: expected 3 fields"
    assert error_line(exc, ns) == "scoreframe: error: " + str(exc)
    # an OS error names its file (from its `filename` attribute)
    assert error_line(IsADirectoryError(21, "Is a directory", "out\x1b"), ns) == \
        "scoreframe: error: is a directory: `out\\x1b`"
    # whatever the message, the line is bounded and escaped
    line = error_line(ScoreframeError("x\x1b" * 10_000 + "\n\nhint " + "y" * 10_000), ns)
    assert len(line) <= len("scoreframe: error: ") + ERROR_LIMIT and "\x1b" not in line
    assert "(hint: hint yyy" in line and "… (50,000 characters)" in line
