"""Bounded memory on odd input: over-long lines, oversized HDF5 datasets and Parquet row groups,
a full spill disk (issue 26, items 2 and 6).

The memory tests run the reader in a subprocess under an address-space limit
(``resource.setrlimit(RLIMIT_AS)``), set after the interpreter, polars and its thread pool
are warmed up, with a headroom far below the input's size: a reader that loads the whole
line (or file) fails with ``MemoryError``/``ENOMEM`` instead of swapping, and the test fails.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import polars as pl
import pytest

import scoreframe.io as sio
from scoreframe.errors import FormatError, ScoreframeError
from scoreframe.io.lines import DEFAULT_MAX_LINE_BYTES, check_line_lengths, max_line_bytes
from scoreframe.stats import Engine

HEADROOM = 128 << 20  # address space allowed beyond the warmed-up interpreter
BIG = 3 * HEADROOM  # the over-long line: three times what the reader may map or allocate
HUGE = 2 * 10**9  # the case (slow): a 2 GB line

PROBE = textwrap.dedent(r"""
    import json, resource, sys
    import polars as pl
    import scoreframe.io as sio
    from scoreframe.errors import ScoreframeError
    path, fmt, headroom, cli = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    warm = path + ".warm.txt"
    open(warm, "w").write("m1 s1 target\nm1 s2 nontarget\n")
    sio.read_any(warm)  # polars' thread pool exists before the limit
    if cli:  # the CLI's imports are not what is probed: loaded before the limit too
        from scoreframe.cli.main import main
    vsz = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vsz + headroom, vsz + headroom))
    if cli:
        sys.exit(main(["info", path, "--from", fmt]))
    try:
        df = sio.read_any(path, fmt=fmt)
        out = {"ok": True, "rows": df.height}
    except ScoreframeError as exc:
        out = {"ok": False, "type": type(exc).__name__, "message": str(exc)}
    except MemoryError:
        out = {"ok": False, "type": "MemoryError", "message": ""}
    print(json.dumps(out))
""")


def _probe(path: Path, fmt: str, *, cli: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           "NO_COLOR": "1", "POLARS_MAX_THREADS": "2",
           # each malloc arena reserves 64 MiB of address space: their number would follow
           # the threads' timing (the machine's load), not the reader
           "MALLOC_ARENA_MAX": "2"}
    return subprocess.run([sys.executable, "-c", PROBE, str(path), fmt, str(HEADROOM),
                           "1" if cli else "0"], capture_output=True, text=True, timeout=300,
                          env=env)


def _write_line(path: Path, head: bytes, n: int, tail: bytes = b"") -> None:
    """``head`` then ``n`` bytes of ``a`` (no line end) then ``tail``, written fast."""
    block = b"a" * (8 << 20)
    with path.open("wb") as fh:
        fh.write(head)
        for _ in range(n // len(block)):
            fh.write(block)
        fh.write(block[:n % len(block)])
        fh.write(tail)


@pytest.fixture(scope="module")
def huge_lines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    d = tmp_path_factory.mktemp("huge")
    first = d / "noline.txt"  # one line, no line end at all
    _write_line(first, b"", BIG)
    second = d / "second.tsv"  # a header, then a huge second line
    _write_line(second, b"modelid\tsegmentid\ttargettype\n", BIG, b"\n")
    gz = d / "noline.txt.gz"  # 2 GiB of one line: one 64 MiB gzip member, 32 times
    member = gzip.compress(b"a" * (64 << 20), compresslevel=1)
    with gz.open("wb") as fh:
        for _ in range(32):
            fh.write(member)
    yield {"first": first, "second": second, "gz": gz}
    for p in (first, second, gz):
        p.unlink()


@pytest.mark.parametrize(("case", "fmt", "line"), [("first", "bosaris-txt", 1),
                                                   ("second", "nist", 2),
                                                   ("second", "tsv", 2),
                                                   ("gz", "kaldi", 1)])
def test_huge_line_is_refused_in_bounded_memory(huge_lines: dict[str, Path], case: str,
                                                 fmt: str, line: int) -> None:
    res = _probe(huge_lines[case], fmt)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert not out["ok"] and out["type"] == "FormatError", out
    msg = out["message"]
    # the file and line first (the error's attributes), then the bare message
    assert msg.startswith(f"`{huge_lines[case]}` line {line}: line too long"), msg
    assert f"at most {DEFAULT_MAX_LINE_BYTES} bytes" in msg
    assert len(msg) < 600  # quotes at most 80 characters of the line


@pytest.mark.slow
@pytest.mark.parametrize("second", [False, True])
def test_2gb_line_is_refused_in_bounded_memory(tmp_path: Path, second: bool) -> None:
    """The issue's inputs: 2 GB without a line end (15.5 GB resident before), or as line 2."""
    p = tmp_path / "huge.txt"
    _write_line(p, b"m1 s1 target\n" if second else b"", HUGE)
    res = _probe(p, "bosaris-txt")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["type"] == "FormatError" and f"line {2 if second else 1}:" in out["message"]
    assert len(out["message"]) < 600


def test_huge_line_through_the_cli_is_one_short_line(huge_lines: dict[str, Path]) -> None:
    res = _probe(huge_lines["first"], "bosaris-txt", cli=True)
    assert res.returncode == 2, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "line too long" in lines[0] and "--max-line-bytes" in lines[0]
    assert len(lines[0]) < 600 and "Traceback" not in res.stderr


def test_the_limit_is_what_fails_without_the_check(huge_lines: dict[str, Path]) -> None:
    """The probe's limit is tight: reading the huge line whole under it fails."""
    code = textwrap.dedent("""
        import resource, sys
        vsz = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
        h = int(sys.argv[2])
        resource.setrlimit(resource.RLIMIT_AS, (vsz + h, vsz + h))
        try:
            open(sys.argv[1], "rb").readline()
        except MemoryError:
            print("MemoryError")
    """)
    res = subprocess.run([sys.executable, "-c", code, str(huge_lines["first"]), str(HEADROOM)],
                         capture_output=True, text=True, timeout=300)
    assert "MemoryError" in res.stdout


# --- every text format, small limits (fast) -------------------------------------------------

LONG = "x" * 300


@pytest.mark.parametrize(("name", "text", "fmt", "line"), [
    ("k.txt", f"m1 s1 target\nm1 {LONG} nontarget\n", "bosaris-txt", 2),
    ("trials", f"m1 s1 target\nm2 s2 target\nm1 {LONG} nontarget\n", "kaldi", 3),
    ("k.tsv", f"modelid\tsegmentid\ttargettype\nm1\t{LONG}\ttarget\n", "nist", 2),
    ("t.csv", f"model,segment,score,label\nm1,s1,1.0,target\nm1,{LONG},0.5,target\n",
     "csv", 3),
    ("t.tsv", f"model\tsegment\tscore\n{LONG}\ts1\t1.0\n", "tsv", 2),
    ("h.csv", f"model,{LONG}\n", "csv", 1),
    ("q.csv", f'model,segment,score\nm1,"{LONG},x",1.0\n', "csv", 2),
])
@pytest.mark.parametrize("compressed", [False, True])
def test_long_line_in_every_text_format(tmp_path: Path, name: str, text: str, fmt: str,
                                        line: int, compressed: bool) -> None:
    path = tmp_path / (name + (".gz" if compressed else ""))
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    with pytest.raises(FormatError) as info:
        sio.read_any(path, fmt=fmt, max_line_bytes=200)
    msg = str(info.value)
    assert f"`{path}` line {line}" in msg and "at most 200 bytes" in msg
    assert "x" * 81 not in msg  # at most 80 characters of the line are quoted
    with max_line_bytes(200), pytest.raises(FormatError, match="line too long"):
        sio.read_any(path, fmt=fmt)  # the context sets it for every reader
    if name != "h.csv" and name != "q.csv":
        assert sio.read_any(path, fmt=fmt).height >= 1  # the default limit reads it


def test_multiclass_reader_is_bounded(tmp_path: Path) -> None:
    from scoreframe.io.multiclass import read_multiclass_scores

    p = tmp_path / "s.tsv"
    p.write_text("segment\tclass\tscore\n" + "s1\teng\t" + "1" * 500 + "\n")
    with max_line_bytes(100), pytest.raises(
            FormatError, match=r"s\.tsv` line 2: line too long: expected at most 100"):
        read_multiclass_scores(p)


def test_line_at_the_limit_is_read_and_one_more_byte_is_not(tmp_path: Path) -> None:
    for n, ok in ((64, True), (65, False)):
        body = b"m1 s1 " + b"9" * (n - 6)  # a score line of exactly n bytes
        for tail in (b"\n", b"\r\n", b""):
            p = tmp_path / "s.txt"
            p.write_bytes(b"m0 s0 1\n" + body + tail)
            if ok and tail != b"\r\n":  # a CR counts as a byte of the line
                check_line_lengths(p, max_line_bytes=64)
            elif not ok:
                with pytest.raises(FormatError, match="line 2"):
                    check_line_lengths(p, max_line_bytes=64)


def test_line_lengths_twin(tmp_path: Path) -> None:
    """The block scan agrees with a direct split on random files and limits."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(0, 400))
        data = bytes(rng.choice(np.frombuffer(b"ab\n", np.uint8), size=n,
                                p=[0.45, 0.45, 0.10]))
        limit = int(rng.integers(1, 60))
        lines = data.split(b"\n")
        bad = next((i + 1 for i, ln in enumerate(lines) if len(ln) > limit), None)
        p = tmp_path / "r.txt"
        p.write_bytes(data)
        for path in (p, _gz(p, data)):
            try:
                sio.lines.read_source(path, max_line_bytes=limit)
                got = None
            except FormatError as exc:
                got = int(str(exc).split("` line ")[1].split(":")[0])
            assert got == bad, (data, limit)


def _gz(p: Path, data: bytes) -> Path:
    g = p.with_suffix(".gz")
    g.write_bytes(gzip.compress(data))
    return g


def test_bad_limits_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "k.txt"
    p.write_text("m1 s1 target\n")
    for bad in (0, -1, 1.5, True, 1 << 31):
        with pytest.raises(ScoreframeError, match="max_line_bytes"):
            sio.read_any(p, max_line_bytes=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "code"), [("0", 2), ("-3", 2), ("1e400", 2), ("", 2),
                                             ("abc", 2), ("2GiB", 2), ("64", 2),
                                             ("1MiB", 0), ("4096", 0)])
def test_cli_max_line_bytes(tmp_path: Path, value: str, code: int,
                            capsys: pytest.CaptureFixture[str]) -> None:
    from scoreframe.cli.main import main

    p = tmp_path / "k.txt"
    p.write_text("m1 s1 target\nm1 s2 nontarget\n" + "m2 " + "s" * 70 + " target\n")
    assert main(["info", str(p), "--max-line-bytes", value]) == code
    err = capsys.readouterr().err.strip()
    if code:
        assert len(err.splitlines()) == 1 and "--max-line-bytes" in err or "line 3" in err


# --- HDF5 datasets and Parquet row groups larger than the limit ------------------------------

def test_hdf5_dataset_over_the_memory_limit_is_refused_before_reading(tmp_path: Path) -> None:
    p = tmp_path / "scores.h5"
    n = 200_000
    with h5py.File(p, "w") as f:  # declared 200,000 x 200,000: 360 GB, never written
        f.create_dataset("ID/row_ids", shape=(n,), dtype="S8")
        f.create_dataset("ID/column_ids", shape=(n,), dtype="S8")
        f.create_dataset("scores", shape=(n, n), dtype="f8", chunks=(64, 64))
        f.create_dataset("score_mask", shape=(n, n), dtype="u1", chunks=(64, 64))
    assert p.stat().st_size < 1 << 20
    with pytest.raises(FormatError) as info:
        sio.read_bosaris_hdf5(p, "scores")
    msg = str(info.value)
    assert f"`{p}`" in msg and "200000 models x 200000 segments" in msg and len(msg) < 600
    with pytest.raises(FormatError, match="declared sizes too large"):
        sio.read_any(p)
    small = tmp_path / "small.h5"
    df = pl.DataFrame({"model": ["a", "b"], "segment": ["x", "y"], "score": [1.0, 2.0]})
    sio.write_bosaris_hdf5(df, small, "scores")
    with pytest.raises(FormatError, match="declared sizes too large"):
        sio.read_bosaris_hdf5(small, max_dense_bytes=10)
    assert sio.read_bosaris_hdf5(small, max_dense_bytes=64).height == 2


def test_parquet_row_group_over_the_memory_limit_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "t.parquet"
    n = 200_000
    sio.write_trials(pl.DataFrame({"model": [f"m{i}" for i in range(n)],
                                   "segment": [f"s{i}" for i in range(n)],
                                   "score": np.linspace(-1, 1, n)}), p)
    with pytest.raises(FormatError) as info:
        sio.read_trials(p, max_row_group_bytes=1 << 20)
    msg = str(info.value)
    assert f"`{p}`" in msg and "row group" in msg and len(msg) < 600
    assert sio.read_trials(p).height == n


# --- a full spill disk ------------------------------------------------------------------------

def test_full_spill_disk_says_where_how_much_and_what_to_do(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from scoreframe import evaluate
    from scoreframe.stats import outofcore

    def full(self: object, name: str, data: np.ndarray) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outofcore._Writer, "write", full)
    spill = tmp_path / "spill"
    spill.mkdir()
    n = 20_000
    df = pl.DataFrame({"model": [f"m{i}" for i in range(n)], "segment": ["s"] * n,
                       "score": np.linspace(-3, 3, n), "label": np.arange(n) % 3 == 0})
    with pytest.raises(ScoreframeError) as info:
        evaluate(df, engine=Engine(memory_limit="256KB", workers=1, spill_dir=str(spill)))
    msg = str(info.value)
    assert info.value.path == str(spill)
    assert msg.startswith(f"`{spill}`: no space left for the out-of-core spill")
    assert "--spill-dir" in msg and "free" in msg
    assert "MB" in msg or "KB" in msg
    assert list(spill.iterdir()) == []  # the spill directory is removed


def test_full_spill_disk_through_numpy_short_write(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A short write reported with ENOSPC by the file object (not numpy's errno-less message)."""
    from scoreframe.stats import outofcore

    writer = outofcore._Writer(str(tmp_path), 0)

    class Full:
        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            pass

    writer.files["r00000"] = Full()
    with pytest.raises(OSError) as info:
        writer.write("r00000", np.zeros(4, outofcore.RECORD))
    assert info.value.errno == errno.ENOSPC
    err = outofcore.spill_full_error(str(tmp_path / "x"), 1858, info.value)
    assert "`" + str(tmp_path) + "`" in str(err) and "1.9 KB" in str(err)


def test_gzip_read_whatever_size_its_trailer_states(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The trailer's size is a hint for one read: a lie or several members change nothing."""
    from scoreframe.io import lines

    rows = [f"m{i % 7} s{i} {'target' if i % 3 else 'nontarget'}" for i in range(20_000)]
    text = ("\n".join(rows) + "\n").encode()
    want = sio.read_key_txt(_write(tmp_path / "k.txt", text))
    half = len(text) // 2
    cut = text.rindex(b"\n", 0, half) + 1
    members = gzip.compress(text[:cut]) + gzip.compress(text[cut:])  # the trailer: 2nd only
    honest = gzip.compress(text)
    cases = {"honest": honest, "members": members,
             "small": honest[:-4] + (100).to_bytes(4, "little"),
             "large": honest[:-4] + (len(text) * 9).to_bytes(4, "little"),
             "zero": honest[:-4] + (0).to_bytes(4, "little")}
    monkeypatch.setattr(lines, "_GZIP_CHUNK", 4096)  # the chunks after the first read
    for name, blob in cases.items():
        p = tmp_path / f"{name}.txt.gz"
        p.write_bytes(blob)
        if name in ("honest", "large"):
            assert lines.gzip_size_hint(p) in (len(text), len(text) * 9)
        if name in ("small", "large", "zero"):  # the stream's own check refuses the lie
            with pytest.raises(FormatError, match="gzip"):
                sio.read_key_txt(p)
            continue
        assert sio.read_key_txt(p).equals(want), name
    tiny = tmp_path / "tiny.gz"
    tiny.write_bytes(b"\x1f\x8b")
    assert lines.gzip_size_hint(tiny) is None


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p
