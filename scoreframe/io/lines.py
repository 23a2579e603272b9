"""Text files as a column of lines: decompression, encoding and field-count checks.

I/O layer. Every text reader (BOSARIS/Kaldi whitespace files, CSV, TSV, NIST) starts here, so
the same input problems get the same messages everywhere, each naming the file and the
1-based line:

* a missing file, an empty file;
* a line longer than the maximum line length (:data:`DEFAULT_MAX_LINE_BYTES`, set per call
  or with :func:`max_line_bytes`), found by scanning the file in bounded blocks before any
  parser sees it: an over-long line is never read into memory whole;
* gzip input that is truncated or corrupt (decompressed once, here, with ISA-L, in chunks
  checked for over-long lines as they come);
* bytes that are not UTF-8, and control characters (NUL, ESC, ...) inside a line;
* rows whose number of fields differs from the header or the format (never padded, never
  shifted).

All checks are vectorized polars expressions over the column of lines: no Python loop over
lines. A byte-order mark and CRLF line ends are accepted (polars strips them).
"""

from __future__ import annotations

import gzip
import mmap
import os
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import numpy as np
import polars as pl

from scoreframe._cores import usable_cores
from scoreframe.errors import FormatError, Place, message

__all__ = ["DEFAULT_MAX_LINE_BYTES", "byte_array", "check_control_bytes", "check_line_lengths",
           "contains_byte", "count_fields", "field_counts", "first_bad_line", "line_limit",
           "line_numbers", "max_line_bytes", "quote", "read_lines", "read_source",
           "utf8_or_format_error"]

#: The default maximum length of a line of a text input, in bytes (line end excluded): 1 MiB,
#: thousands of times a trial line's length.
DEFAULT_MAX_LINE_BYTES = 1 << 20
#: The largest maximum accepted (1 GiB): beyond it the bound would bound nothing.
MAX_MAX_LINE_BYTES = 1 << 30
_LIMIT: ContextVar[int] = ContextVar("scoreframe_max_line_bytes", default=DEFAULT_MAX_LINE_BYTES)
_WINDOW = 64 << 20  # bytes of a file mapped at once while scanning for line ends
_GZIP_CHUNK = 16 << 20  # decompressed bytes produced at once
_QUOTE = 80  # characters of an offending line quoted in a message

_SEP = "\x1f"  # a control character: any line holding one is refused anyway
_GZIP_MAGIC = b"\x1f\x8b"


def quote(value: object, limit: int = _QUOTE) -> str:
    """A value for a message: ``repr`` of at most ``limit`` characters of it, ``...`` if cut.

    Messages never echo unbounded input.

    Examples
    --------
    >>> quote("abc"), quote("x" * 100, 5)
    ("'abc'", "'xxxxx'...")
    """
    text = value if isinstance(value, str) else str(value)
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def _checked_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not (
            1 <= limit <= MAX_MAX_LINE_BYTES):
        raise FormatError(message("bad `max_line_bytes`",
                                  expected="an integer number of bytes in "
                                           f"[1, {MAX_MAX_LINE_BYTES}]",
                                  got=repr(limit)[:_QUOTE]))
    return limit


def line_limit(limit: int | None = None) -> int:
    """The maximum line length in force.

    ``limit`` when given, else the one set by :func:`max_line_bytes`, else
    :data:`DEFAULT_MAX_LINE_BYTES`.

    Examples
    --------
    >>> line_limit(), line_limit(80)
    (1048576, 80)
    """
    return _checked_limit(_LIMIT.get() if limit is None else limit)


@contextmanager
def max_line_bytes(limit: int | None) -> Iterator[int]:
    """Set the maximum line length of every text reader inside the block (None: leave it).

    The readers' ``max_line_bytes=`` argument overrides it for one call; the command line
    sets it from ``--max-line-bytes``.

    Parameters
    ----------
    limit
        Longest line, in bytes; None keeps the current limit.

    See Also
    --------
    scoreframe.io.read_text_trials : A reader it bounds.
    scoreframe.io.read_table : Another reader it bounds.

    Examples
    --------
    >>> with max_line_bytes(4096):
    ...     line_limit()
    4096
    >>> line_limit()
    1048576
    """
    token = _LIMIT.set(_checked_limit(_LIMIT.get() if limit is None else limit))
    try:
        yield _LIMIT.get()
    finally:
        _LIMIT.reset(token)


class _LineScan:
    """Find a line longer than ``limit`` in a stream of byte blocks, looking only near block ends.

    Blocks of at most ``limit`` bytes are fed in order. Inside such a block no line can exceed
    the limit, so only the first and last line end of each block matter: ``bytes.find`` and
    ``rfind`` from the two ends touch a few bytes of a normal block, and a block without any
    line end settles the question as soon as the open line passes the limit.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.last = -1  # offset of the last line end seen

    def feed(self, buf: mmap.mmap | bytes, start: int, end: int, base: int) -> int | None:
        """Scan ``buf[start:end]`` (file offset ``base + start``); the bad line's start or None."""
        step = self.limit
        for s in range(start, end, step):
            e = min(s + step, end)
            first = buf.find(b"\n", s, e)
            if first < 0:
                if base + e - self.last - 1 > self.limit:
                    return self.last + 1
                continue
            if base + first - self.last - 1 > self.limit:
                return self.last + 1
            self.last = base + buf.rfind(b"\n", s, e)
        return None

    def finish(self, size: int) -> int | None:
        """At the end of the data: the start of a last line (without line end) too long, or None."""
        return self.last + 1 if size - self.last - 1 > self.limit else None


def _line_too_long(path: Path, limit: int, lineno: int, head: bytes) -> FormatError:
    head = head.split(b"\n", 1)[0]
    quoted = head[:_QUOTE].decode("utf-8", errors="replace")
    return FormatError(message(
        "line too long", where=Place(path, line=lineno),
        expected=f"at most {limit} bytes per line",
        got=f"a longer line starting {quoted!r}" + ("..." if len(head) > _QUOTE else ""),
        hint="The file is not a trial list (binary, or missing line ends?). A genuine longer "
             "line can be allowed with max_line_bytes (CLI: --max-line-bytes)."))


def check_line_lengths(path: str | Path, *, max_line_bytes: int | None = None) -> None:
    r"""Refuse a file with a line longer than the limit, reading only bounded blocks of it.

    The file is mapped 64 MiB at a time and only the first and last line end of each block of
    ``max_line_bytes`` bytes are looked for, so a normal file is checked in a few
    milliseconds per gigabyte and a file without line ends is refused after the limit.

    Raises
    ------
    FormatError
        Naming the file, the 1-based line number and the limit, quoting at most 80 characters
        of the line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "k.txt"
    >>> _ = p.write_bytes(b"m1 s1 target\n" + b"x" * 100 + b"\n")
    >>> check_line_lengths(p, max_line_bytes=64)
    Traceback (most recent call last):
    ...
    scoreframe.errors.FormatError: `...k.txt` line 2: line too long: expected at most 64 ...
    """
    p = Path(path)
    limit = line_limit(max_line_bytes)
    size = p.stat().st_size
    if size <= limit:
        return
    scan = _LineScan(limit)
    bad: int | None = None
    with p.open("rb") as fh:
        fd = fh.fileno()
        gran = mmap.ALLOCATIONGRANULARITY
        window = -(-max(_WINDOW, limit) // gran) * gran
        for off in range(0, size, window):
            length = min(window, size - off)
            with mmap.mmap(fd, length, offset=off, access=mmap.ACCESS_READ) as mm:
                bad = scan.feed(mm, 0, length, off)
            if bad is not None:
                break
        if bad is None:
            bad = scan.finish(size)
        if bad is None:
            return
        lineno = 1 + _count_line_ends(fd, bad)
        head = os.pread(fd, _QUOTE + 1, bad)
    raise _line_too_long(p, limit, lineno, head)


def _count_line_ends(fd: int, end: int) -> int:
    """Line ends before offset ``end`` of a file, counted in bounded chunks (error path)."""
    n = 0
    for off in range(0, end, _WINDOW):
        n += os.pread(fd, min(_WINDOW, end - off), off).count(b"\n")
    return n


def read_source(path: str | Path, *, what: str = "file",
                max_line_bytes: int | None = None) -> bytes | Path:
    """The file to hand to a polars reader: the path itself, or the decompressed bytes of gzip.

    Every line is checked against the maximum line length (``max_line_bytes``, default
    :func:`line_limit`) before anything is parsed, in bounded memory.

    Raises
    ------
    FormatError
        The file does not exist, is a directory, has a line longer than the limit, or is a
        truncated or corrupt gzip stream.
    """
    limit = line_limit(max_line_bytes)
    p = Path(path)
    if not p.exists():
        raise FormatError(message("no such file", path=p))
    if not p.is_file():
        raise FormatError(message("not a file", path=p, expected=f"a {what}",
                                  got="a directory" if p.is_dir() else "a special file"))
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic != _GZIP_MAGIC:
        check_line_lengths(p, max_line_bytes=limit)
        return p
    try:
        return _gunzip(p, limit)
    except EOFError:
        raise FormatError(message("truncated gzip file", where=Place(p),
                                  expected="a complete gzip stream",
                                  got="the data ends before the end-of-stream marker",
                                  hint="The file was cut short (interrupted download or "
                                       "copy?); fetch it again.")) from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise FormatError(message("corrupt gzip file", where=Place(p),
                                  expected="a valid gzip stream", got=str(exc))) from None


def _gunzip(path: Path, limit: int) -> bytes:
    """Decompress gzip in chunks with ISA-L (~2.5x faster than zlib), checking line lengths.

    Each chunk is scanned for an over-long line as it comes, so a stream that decompresses to
    one endless line is refused after ``limit`` bytes of it. Any failure of ISA-L is
    decompressed again by :mod:`gzip`, whose exceptions tell a truncated stream
    (:class:`EOFError`) from a corrupt one.
    """
    try:
        from isal import igzip
    except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
        return _gunzip_with(gzip.open, path, limit)
    try:
        return _gunzip_with(igzip.open, path, limit)
    except FormatError:
        raise
    except Exception:  # noqa: BLE001 - classified by the standard library below
        return _gunzip_with(gzip.open, path, limit)


#: Largest decompressed size, as the gzip trailer gives it, read in one piece (no chunks to
#: join: the join was 0.3 s of a 0.9 s decompression of 432 MB).
_GZIP_ONE_READ_MAX = 1 << 30


def gzip_size_hint(path: Path) -> int | None:
    """The decompressed size the gzip trailer states, or None for a file too short for one.

    ``ISIZE``: the last member's size modulo 2**32. Only a hint: a file may lie.
    """
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() < 18:  # a 10-byte header and the 8-byte trailer
            return None
        fh.seek(-4, os.SEEK_END)
        return int.from_bytes(fh.read(4), "little")


def _gunzip_with(opener: object, path: Path, limit: int) -> bytes:
    scan = _LineScan(limit)
    chunks: list[bytes] = []
    size = 0
    bad: int | None = None
    hint = gzip_size_hint(path)
    # the stated size (and one byte more, to see the end) in one read when it is plausible;
    # a file that holds more goes on in chunks, every one scanned for over-long lines
    first = hint + 1 if hint is not None and 0 < hint <= _GZIP_ONE_READ_MAX else _GZIP_CHUNK
    with opener(path, "rb") as fh:  # type: ignore[operator]  # gzip.open or an isal opener, typed object
        while bad is None:
            chunk = fh.read(first if not chunks else _GZIP_CHUNK)
            if not chunk:
                bad = scan.finish(size)
                break
            chunks.append(chunk)
            bad = scan.feed(chunk, 0, len(chunk), size)
            size += len(chunk)
    if bad is None:
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    lineno, pos, head = 1, 0, b""
    for c in chunks:
        if pos + len(c) <= bad:
            lineno += c.count(b"\n")
        else:
            lineno += c.count(b"\n", 0, max(bad - pos, 0))
            head += c[max(bad - pos, 0):max(bad - pos, 0) + _QUOTE + 1 - len(head)]
            if len(head) > _QUOTE:
                break
        pos += len(c)
    raise _line_too_long(path, limit, lineno, head)


def _utf8_error(src: bytes | Path, path: Path) -> FormatError:
    """Locate the first line that is not valid UTF-8 (only on the error path)."""
    lossy = pl.read_csv(src, has_header=False, separator=_SEP, quote_char=None,
                        schema={"line": pl.String, "rest": pl.String}, comment_prefix=None,
                        raise_if_empty=False, truncate_ragged_lines=True,
                        missing_columns="insert", encoding="utf8-lossy")
    hit = (lossy.with_row_index("lineno", offset=1)
           .filter(pl.col("line").str.contains("\ufffd", literal=True)
                   | pl.col("rest").str.contains("\ufffd", literal=True)))
    where = Place(path, line=hit["lineno"][0] if hit.height else None)
    return FormatError(message("invalid UTF-8", where=where, expected="UTF-8 text",
                               got="bytes that are not UTF-8",
                               hint="Re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)."))


def contains_byte(src: bytes | Path, byte: bytes) -> bool:
    """Whether the file (or the bytes) holds ``byte``, found with ``memchr`` (no array pass).

    Examples
    --------
    >>> contains_byte(b'a,"b"', b'"'), contains_byte(b"a,b", b'"')
    (True, False)
    """
    if isinstance(src, bytes):
        return src.find(byte) >= 0
    with src.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return False
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return mm.find(byte) >= 0


def byte_array(src: bytes | Path) -> np.ndarray:
    """The file's bytes as a read-only uint8 array (memory-mapped for a file)."""
    if isinstance(src, bytes):
        return np.frombuffer(src, dtype=np.uint8)
    if src.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.memmap(src, dtype=np.uint8, mode="r")


_CONTROL = np.zeros(256, dtype=bool)
_CONTROL[[*range(0, 9), *range(11, 13), *range(14, 32), 127]] = True


#: Bytes scanned per task by :func:`check_control_bytes` (cache-sized: each comparison pass
#: re-reads the block from cache, not from memory).
_SCAN_BLOCK = 1 << 22


def _byte_counts(b: np.ndarray) -> np.ndarray:
    """Counts of tabs, line feeds, bytes below 32, carriage returns and DEL in ``b``."""
    n_lf = np.count_nonzero(b == 10)
    n_low = np.count_nonzero(b < 32)
    # no tab either (no pass for them) when the bytes below 32 are the line feeds alone
    n_tab = 0 if n_low == n_lf else np.count_nonzero(b == 9)
    # no CR (the usual case) when the bytes below 32 are the line feeds and tabs alone
    n_cr = 0 if n_low == n_lf + n_tab else np.count_nonzero(b == 13)
    return np.array([n_tab, n_lf, n_low, n_cr, np.count_nonzero(b == 127)], dtype=np.int64)


def check_control_bytes(arr: np.ndarray, path: Path) -> tuple[int, int]:
    """Refuse control bytes (and a CR not ending a line), naming the first line holding one.

    A few counting passes over the bytes in the common case; positions only on the error path.
    Returns the numbers of tabs and of carriage returns.
    """
    counts = np.zeros(5, dtype=np.int64)  # tab, line feed, below 32, CR, DEL
    blocks = range(0, arr.size, _SCAN_BLOCK)
    if len(blocks) > 1:  # numpy releases the GIL: both cores, integer counts in any order
        with ThreadPoolExecutor(max_workers=min(usable_cores(), 4)) as pool:
            for c in pool.map(lambda i: _byte_counts(arr[i:i + _SCAN_BLOCK]), blocks):
                counts += c
    elif arr.size:
        counts += _byte_counts(arr)
    n_tab, n_lf, n_low, n_cr, n_del = (int(c) for c in counts)
    ok = n_low == n_lf + n_tab + n_cr and not n_del
    lone_cr = np.zeros(0, dtype=np.int64)
    if n_cr:
        cr = np.flatnonzero(arr == 13)
        lone_cr = cr[(cr + 1 >= arr.size) | (arr[np.minimum(cr + 1, arr.size - 1)] != 10)]
    if ok and not lone_cr.size:
        return n_tab, n_cr
    mask = _CONTROL[arr]
    mask[lone_cr] = True
    pos = int(np.argmax(mask))
    line = int(np.count_nonzero(arr[:pos] == 10)) + 1
    raise FormatError(message("control character in a line", where=Place(path, line=line),
                              expected="printable text, fields separated by the format's "
                                       "separator",
                              got=f"byte 0x{int(arr[pos]):02x}",
                              hint="The file is binary or corrupt; identifiers cannot "
                                   "hold control characters."))


def read_lines(path: str | Path, *, src: bytes | Path | None = None) -> pl.DataFrame:
    r"""The file's lines as columns ``line`` (String; null for an empty line) and ``lineno``.

    ``lineno`` is the 1-based line number. Lines holding control characters (other than tab)
    are refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "k.txt"
    >>> _ = p.write_bytes(b"\xef\xbb\xbfm1 s1 target\r\n\r\nm2 s2 nontarget\r\n")
    >>> read_lines(p).rows()
    [('m1 s1 target', 1), (None, 2), ('m2 s2 nontarget', 3)]
    """
    path = Path(path)
    src = read_source(path) if src is None else src
    check_control_bytes(byte_array(src), path)
    try:
        raw = pl.read_csv(src, has_header=False, separator=_SEP, quote_char=None,
                          schema={"line": pl.String}, comment_prefix=None,
                          raise_if_empty=False)
    except pl.exceptions.ComputeError as exc:
        raise utf8_or_format_error(exc, src, path) from None
    return raw.with_row_index("lineno", offset=1).select(
        "line", pl.col("lineno").cast(pl.Int64))


def utf8_or_format_error(exc: Exception, src: bytes | Path, path: Path) -> FormatError:
    """The FormatError for a polars CSV error: invalid UTF-8 located by line, or the cause."""
    if "utf-8" in str(exc).lower() or "utf8" in str(exc).lower():
        return _utf8_error(src, path)
    return FormatError(message("cannot read text", where=Place(path),
                               got=str(exc).splitlines()[0]))


def line_numbers(frame: pl.DataFrame, first: int, name: str) -> pl.Series:
    """Line numbers ``first, first + 1, ...`` for the rows of ``frame``, chunked like its columns.

    A parsed frame's columns come in the parser's chunks; a column chunked otherwise (one
    chunk of line numbers) would make Polars copy every column into one chunk before the next
    ``select`` or multi-column expression (0.2-0.4 s at 10^7 parsed rows).

    >>> df = pl.concat([pl.DataFrame({"a": [1, 2]}), pl.DataFrame({"a": [3]})], rechunk=False)
    >>> s = line_numbers(df, 2, "line")
    >>> s.to_list(), s.n_chunks()
    ([2, 3, 4], 2)
    """
    numbers = np.arange(first, first + frame.height, dtype=np.int64)
    if not frame.width:
        return pl.Series(name, numbers)
    ends = np.cumsum([c.len() for c in frame.to_series(0).get_chunks()])[:-1]
    return pl.concat([pl.Series(name, part) for part in np.split(numbers, ends)],
                     rechunk=False)


def first_bad_line(lines: pl.DataFrame, cond: pl.Expr) -> int | None:
    """The ``lineno`` of the first line where ``cond`` holds, or None."""
    hit = lines.select(pl.col("lineno").filter(cond).first()).item()
    return None if hit is None else int(hit)


def count_fields(line: pl.Expr, separator: str, *, quoted: bool = False) -> pl.Expr:
    """Number of ``separator``-separated fields of each line (quoted separators skipped).

    Examples
    --------
    >>> df = pl.DataFrame({"line": ['a,b,c', 'a,"b,c"', 'x']})
    >>> df.select(count_fields(pl.col("line"), ",", quoted=True))["line"].to_list()
    [3, 2, 1]
    """
    if quoted:
        line = line.str.replace_all(r'"(?:[^"]|"")*"', "")
    return line.str.count_matches(separator, literal=True) + 1


def field_counts(arr: np.ndarray, separator: str) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    r"""Fields per line of an unquoted delimited file, from its bytes.

    Returns a frame ``lineno, n, blank`` (``n`` = separators + 1; ``blank`` for an empty line,
    a lone CR included) and each line's start and end byte offsets (end excludes LF and CR).

    Examples
    --------
    >>> arr = np.frombuffer(b"a,b,c\r\n\nx,y\n", dtype=np.uint8)
    >>> counts, starts, ends = field_counts(arr, ",")
    >>> counts.rows()
    [(1, 3, False), (2, 1, True), (3, 2, False)]
    """
    nl = np.flatnonzero(arr == 10)
    starts = np.r_[0, nl + 1]
    starts = starts[starts < arr.size]
    ends = np.r_[nl, arr.size][: starts.size]
    cr = (ends > starts) & (arr[np.maximum(ends - 1, 0)] == 13)
    ends = ends - cr
    empty = ends == starts
    where_sep = np.flatnonzero(arr == ord(separator))
    seps = np.diff(np.searchsorted(where_sep, np.r_[starts, arr.size]))
    counts = pl.DataFrame({"lineno": np.arange(1, starts.size + 1, dtype=np.int64),
                           "n": seps + 1, "blank": empty})
    return counts, starts, ends
