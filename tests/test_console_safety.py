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


def run(argv: list[str], cwd: Path, *, code: int = 0) -> str:
    """Run the script; check its exit status and every byte it printed; return the text."""
    res = subprocess.run([str(BIN), *argv], capture_output=True, timeout=300, env=ENV, cwd=cwd)
    raw = res.stdout + res.stderr
    text = raw.decode("utf-8")  # strict: printed text is valid UTF-8
    assert res.returncode == code, text[-3000:]
    assert b"Traceback" not in raw, text[-3000:]
    bad = UNSAFE.search(text)
    assert bad is None, (hex(ord(bad.group())), text[max(bad.start() - 80, 0):bad.end() + 80])
    long = [len(line) for line in text.splitlines() if len(line) > MAX_LINE]
    assert long == [], long
    if code:
        assert res.stderr.decode().count("\n") == 1 and not res.stdout, text
    return text


def shows(text: str, *values: str) -> None:
    missing = [v for v in values if v not in text]
    assert missing == [], (missing, text[:3000])


ALL_SHOWN = list(VALUES.values())


def test_info(data: Path):
    text = run(["info", f"{FILE}.parquet"], data)
    shows(text, *ALL_SHOWN, COLUMN_SHOWN, FILE_SHOWN, *SYSTEMS_SHOWN, "L" * 100 + "…")


def test_evaluate_conditions(data: Path):
    shows(run(["evaluate", f"{FILE}.parquet", "--by", "cond"], data), *ALL_SHOWN,
          *SYSTEMS_SHOWN)


def test_evaluate_column_names(data: Path):
    text = run(["evaluate", "one.parquet", "--by", COLUMN, "--bootstrap", "20"], data)
    shows(text, COLUMN_SHOWN, *ALL_SHOWN)
    shows(run(["evaluate", "one.parquet", "--by", LONG], data), "L" * 100 + "… (10,000")


def test_evaluate_warning_names_the_group(data: Path):
    text = run(["evaluate", "lonely.parquet", "--by", "cond"], data)
    warning = [line for line in text.splitlines() if line.startswith("scoreframe: warning:")]
    assert len(warning) == 1, warning
    shows(warning[0], "cond=[/]", "no non-targets", "eer", "are null")


def test_compare(data: Path):
    text = run(["compare", f"{FILE}.parquet", "--systems", *SYSTEMS, "--by", "cond",
                "--bootstrap", "20"], data)
    shows(text, *SYSTEMS_SHOWN, *ALL_SHOWN)


def test_query(data: Path):
    shows(run(["query", "by_cond.sql", f"{FILE}.parquet"], data), *ALL_SHOWN, *SYSTEMS_SHOWN)


def test_calibrate_and_fuse_summaries(data: Path, tmp_path: Path):
    model = tmp_path / f"{FILE}.json"
    text = run(["calibrate", "train", f"{FILE}.parquet", "--system", SYSTEMS[0], "-o",
                str(model)], data)
    shows(text, FILE_SHOWN, SYSTEMS_SHOWN[0], "model written to")
    text = run(["calibrate", "apply", str(model), "one.parquet", "-o",
                str(tmp_path / f"{FILE}.out.parquet")], data)
    shows(text, FILE_SHOWN, SYSTEMS_SHOWN[0])
    fused = tmp_path / "fused.json"
    text = run(["fuse", "train", f"{FILE}.parquet", "-o", str(fused)], data)
    shows(text, *SYSTEMS_SHOWN, FILE_SHOWN, "llr = ")
    text = run(["fuse", "apply", str(fused), f"{FILE}.parquet", "-o",
                str(tmp_path / "fused.parquet")], data)
    shows(text, FILE_SHOWN, "fused scores written")


def test_report_and_convert_messages(data: Path, tmp_path: Path):
    text = run(["report", "one.parquet", "--by", "cond", "-o", str(tmp_path / f"{FILE}.html")],
               data)
    shows(text, "report written to", FILE_SHOWN)
    text = run(["convert", f"{FILE}.parquet", "-o", str(tmp_path / f"{FILE}.c.parquet")], data)
    shows(text, "wrote", FILE_SHOWN)


def test_multiclass(data: Path, tmp_path: Path):
    text = run(["multiclass", "evaluate", "mc_scores.parquet", "--truth", "mc_truth.parquet",
                "--by", "cond"], data)
    shows(text, *ALL_SHOWN)
    text = run(["multiclass", "calibrate", "train", "mc_scores.parquet", "--truth",
                "mc_truth.parquet", "-o", str(tmp_path / f"{FILE}.json")], data)
    shows(text, FILE_SHOWN)


@pytest.mark.parametrize("argv, needles", [
    (["evaluate", f"{FILE}.missing"], [FILE_SHOWN[:20]]),
    (["evaluate", f"{FILE}.parquet", "--where", "cond = '\x1b[31m:x:[/]"], ["\\x1b[31m:x:[/]"]),
    (["evaluate", f"{FILE}.parquet", "--by", COLUMN + "zz"], [COLUMN_SHOWN]),
    (["evaluate", f"{FILE}.parquet", "--by", LONG + "zz"], ["LLL…"]),
    (["compare", f"{FILE}.parquet", "--systems", SYSTEMS[0], "\x1b[2J" + LONG], ["\\x1b[2J"]),
    (["evaluate", f"{FILE}.parquet", "--bogus\x1b[2J"], ["\\x1b[2J"]),
])
def test_errors(data: Path, argv: list[str], needles: list[str]):
    text = run(argv, data, code=2)
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


@pytest.mark.parametrize("extra", [[], ["--format", "csv"]])
def test_on_a_terminal_data_never_drives_it(data: Path, extra: list[str]):
    """On a terminal rich styles its own output, but no sequence of the data gets through."""
    text = _on_a_terminal(["query", "by_cond.sql", f"{FILE}.parquet", *extra], data)
    for raw in ("\x1b[31mred", "\x1b]0;title", "\x07", "\u202e", "\u200f", "\x1b[32ms2",
                "\u274c"):
        assert raw not in text, raw
    shows(text, "\\x1b[31mred", "\\x1b]0;title\\x07", "[b]x", ":x:", "root:x:0:0")
