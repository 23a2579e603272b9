"""Text files as a column of lines: decompression, encoding and field-count checks.

I/O layer. Every text reader (BOSARIS/Kaldi whitespace files, CSV, TSV, NIST) starts here, so
the same input problems get the same messages everywhere, each naming the file and the
1-based line:

* a missing file, an empty file;
* gzip input that is truncated or corrupt (decompressed once, here, with ISA-L);
* bytes that are not UTF-8, and control characters (NUL, ESC, ...) inside a line;
* rows whose number of fields differs from the header or the format (never padded, never
  shifted).

All checks are vectorized polars expressions over the column of lines: no Python loop over
lines. A byte-order mark and CRLF line ends are accepted (polars strips them).
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import polars as pl

from scoreframe.errors import FormatError, message

__all__ = ["byte_array", "check_control_bytes", "count_fields", "field_counts", "first_bad_line",
           "read_lines", "read_source", "utf8_or_format_error"]

_SEP = "\x1f"  # a control character: any line holding one is refused anyway
_GZIP_MAGIC = b"\x1f\x8b"


def read_source(path: str | Path, *, what: str = "file") -> bytes | Path:
    """The file to hand to a polars reader: the path itself, or the decompressed bytes of gzip.

    Raises
    ------
    FormatError
        The file does not exist, is a directory, or is a truncated or corrupt gzip stream.
    """
    p = Path(path)
    if not p.exists():
        raise FormatError(message(f"no such file `{p}`"))
    if not p.is_file():
        raise FormatError(message(f"`{p}` is not a file", expected=f"a {what}",
                                  got="a directory" if p.is_dir() else "a special file"))
    with p.open("rb") as fh:
        magic = fh.read(2)
    if magic != _GZIP_MAGIC:
        return p
    try:
        return _gunzip(p.read_bytes())
    except EOFError:
        raise FormatError(message("truncated gzip file", where=f"`{p}`",
                                  expected="a complete gzip stream",
                                  got="the data ends before the end-of-stream marker",
                                  hint="The file was cut short (interrupted download or "
                                       "copy?); fetch it again.")) from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise FormatError(message("corrupt gzip file", where=f"`{p}`",
                                  expected="a valid gzip stream", got=str(exc))) from None


def _gunzip(raw: bytes) -> bytes:
    """Decompress gzip with ISA-L (~2.5x faster than zlib); errors as the standard library's.

    Any failure of ISA-L is decompressed again by :mod:`gzip`, whose exceptions tell a
    truncated stream (:class:`EOFError`) from a corrupt one.
    """
    try:
        from isal import igzip
    except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
        return gzip.decompress(raw)
    try:
        return igzip.decompress(raw)
    except Exception:  # noqa: BLE001 - classified by the standard library below
        return gzip.decompress(raw)


def _utf8_error(src: bytes | Path, path: Path) -> FormatError:
    """Locate the first line that is not valid UTF-8 (only on the error path)."""
    lossy = pl.read_csv(src, has_header=False, separator=_SEP, quote_char=None,
                        schema={"line": pl.String, "rest": pl.String}, comment_prefix=None,
                        raise_if_empty=False, truncate_ragged_lines=True,
                        missing_columns="insert", encoding="utf8-lossy")
    hit = (lossy.with_row_index("lineno", offset=1)
           .filter(pl.col("line").str.contains("\ufffd", literal=True)
                   | pl.col("rest").str.contains("\ufffd", literal=True)))
    where = f"`{path}`" + (f" line {hit['lineno'][0]}" if hit.height else "")
    return FormatError(message("invalid UTF-8", where=where, expected="UTF-8 text",
                               got="bytes that are not UTF-8",
                               hint="Re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)."))


def byte_array(src: bytes | Path) -> np.ndarray:
    """The file's bytes as a read-only uint8 array (memory-mapped for a file)."""
    if isinstance(src, bytes):
        return np.frombuffer(src, dtype=np.uint8)
    if src.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.memmap(src, dtype=np.uint8, mode="r")


_CONTROL = np.zeros(256, dtype=bool)
_CONTROL[[*range(0, 9), *range(11, 13), *range(14, 32), 127]] = True


def check_control_bytes(arr: np.ndarray, path: Path) -> tuple[int, int]:
    """Refuse control bytes (and a CR not ending a line), naming the first line holding one.

    A few counting passes over the bytes in the common case; positions only on the error path.
    Returns the numbers of tabs and of carriage returns.
    """
    n_tab = int(np.count_nonzero(arr == 9))
    n_lf = int(np.count_nonzero(arr == 10))
    n_low = int(np.count_nonzero(arr < 32))
    # no CR (the usual case) when the bytes below 32 are the line feeds and tabs alone
    n_cr = 0 if n_low == n_lf + n_tab else int(np.count_nonzero(arr == 13))
    ok = n_low == n_lf + n_tab + n_cr
    ok = ok and not np.count_nonzero(arr == 127)
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
    raise FormatError(message("control character in a line", where=f"`{path}` line {line}",
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
    return FormatError(message("cannot read text", where=f"`{path}`",
                               got=str(exc).splitlines()[0]))


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
