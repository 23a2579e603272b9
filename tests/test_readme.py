"""Every fenced ```python block of README.md runs as written, in order, as a chain.

So does every command-line block marked ``<!-- readme-test: run -->``: each of its
``scoreframe ...`` lines (comments dropped, ``\\`` continuations joined) runs in the same
directory, at its place in the chain, through ``scoreframe.cli.main`` and must exit 0.

The blocks run one after the other (each in a fresh namespace, warnings are errors) in ONE
directory that starts empty but for ``tests/`` and ``queries/`` (a clone's test data and SQL):
the README's quick start makes every input the later blocks read (``key.txt``, ``scores.h5``,
``models.csv``, ``segments.csv``, ``dev/``, ``eval/``), and each later block reads only what an
earlier one wrote. A block that needs a cluster is marked in the README with
``<!-- readme-test: skip (reason) -->`` and only compiled. The README's links must point at files
the repository ships.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

import scoreframe as sf

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
#: (skip reason or None, code) of every ```python block; a block that needs outside
#: infrastructure (a cluster) is preceded by ``<!-- readme-test: skip (reason) -->``.
#: A command-line block to run is preceded by ``<!-- readme-test: run -->``.
#: (kind, skip reason or None, code) of every block the test runs, kind "python" or "cli".
BLOCKS = [("python" if lang == "python" else "cli", skip or None, code)
          for mark, skip, lang, code in re.findall(
              r"(?:<!-- readme-test: (skip \((.*?)\)|run) -->\n)?^```(\w*)\n(.*?)^```",
              README.read_text(encoding="utf-8"), re.S | re.M)
          if lang == "python" or (mark == "run" and not lang)]
IEMOCAP = ROOT / "tests" / "data" / "real" / "multiclass" / "iemocap_w2v2"


class Chain:
    """The directory the blocks share and how many of them have run (in README order)."""

    def __init__(self, root: Path) -> None:
        self.root, self.done = root, 0

    def run_through(self, index: int) -> None:
        """Run every block up to ``index`` not run yet (so one block can be selected alone)."""
        cwd = os.getcwd()
        os.chdir(self.root)
        try:
            while self.done <= index:
                kind, skip, code = BLOCKS[self.done]
                label = f"README.md {kind} block {self.done + 1} ({code.strip().splitlines()[0]})"
                self.done += 1
                if kind == "cli":
                    run_commands(code, label)
                    continue
                if skip:
                    compile(code, label, "exec")  # still valid Python
                    continue
                exec(compile(code, label, "exec"), {"__name__": f"readme_block_{self.done}"})  # noqa: S102
        finally:
            os.chdir(cwd)


def run_commands(code: str, label: str) -> None:
    """Run each ``scoreframe ...`` line of a command-line block; each must exit 0."""
    from scoreframe.cli.main import main

    for line in code.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        if not argv:
            continue
        assert argv[0] == "scoreframe", f"{label}: not a scoreframe command: {line}"
        code_ = main(argv[1:])
        assert code_ == 0, f"{label}: `{line}` exited with status {code_}"


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Chain:
    d = tmp_path_factory.mktemp("readme_chain")
    for shipped in ("tests", "queries"):  # a clone's test data and example queries
        (d / shipped).symlink_to(ROOT / shipped, target_is_directory=True)
    return Chain(d)


def test_readme_has_python_blocks():
    assert sum(kind == "python" for kind, _, _ in BLOCKS) >= 8
    assert sum(skip is not None for _, skip, _ in BLOCKS) <= 3  # skipping stays the exception


def test_readme_runs_its_command_lines():
    """The CLI lines whose inputs the quick start makes (qm/qs.parquet, searches/) are run."""
    cli = "\n".join(code for kind, _, code in BLOCKS if kind == "cli")
    for line in ("scoreframe synth big_ds", "scoreframe identify searches/",
                 "--quality-model qm.parquet --quality-segment qs.parquet",
                 "scoreframe query queries/"):
        assert line in cli, line


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, chain):
    _, skip, _ = BLOCKS[index]
    chain.run_through(index)
    if skip:
        pytest.skip(f"README block {index + 1}: {skip}")


def test_the_quick_start_makes_what_the_later_blocks_read(chain):
    chain.run_through(0)
    made = {p.name for p in chain.root.iterdir()}
    assert {"key.txt", "scores.h5", "models.csv", "segments.csv", "dev", "eval", "qm.parquet",
            "qs.parquet", "searches"} <= made
    cols = sf.scan_trials(chain.root / "eval").collect_schema().names()
    assert {"system", "gender", "channel", "duration", "score", "label"} <= set(cols)
    assert os.path.getsize(chain.root / "scores.h5") > 0


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
