"""Text files as a column of lines: decompression, encoding and field-count checks.

I/O layer. Every text reader (BOSARIS/Kaldi whitespace files, CSV, TSV, NIST) starts here, so
the same input problems get the same messages everywhere, each naming the file and the
1-based line:

* a missing file, an empty file;
* gzip input that is truncated or corrupt (decompressed once, here, with :mod:`gzip`);
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

import polars as pl

from scoreframe.errors import FormatError, message

__all__ = ["CONTROL_CHARS", "count_fields", "first_bad_line", "read_lines", "read_source"]

#: Control characters refused inside a line (tab is allowed; CR/LF end lines).
CONTROL_CHARS = r"[\x00-\x08\x0b-\x1f\x7f]"
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
        return gzip.decompress(p.read_bytes())
    except EOFError:
        raise FormatError(message("truncated gzip file", where=f"`{p}`",
                                  expected="a complete gzip stream",
                                  got="the data ends before the end-of-stream marker",
                                  hint="The file was cut short (interrupted download or "
                                       "copy?); fetch it again.")) from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise FormatError(message("corrupt gzip file", where=f"`{p}`",
                                  expected="a valid gzip stream", got=str(exc))) from None


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
    try:
        raw = pl.read_csv(src, has_header=False, separator=_SEP, quote_char=None,
                          schema={"line": pl.String, "rest": pl.String}, comment_prefix=None,
                          raise_if_empty=False, truncate_ragged_lines=True,
                          missing_columns="insert")
    except pl.exceptions.ComputeError as exc:
        if "utf-8" in str(exc).lower() or "utf8" in str(exc).lower():
            raise _utf8_error(src, path) from None
        raise FormatError(message("cannot read text", where=f"`{path}`",
                                  got=str(exc).splitlines()[0])) from None
    lines = raw.with_row_index("lineno", offset=1)
    bad = first_bad_line(lines, pl.col("rest").is_not_null()
                         | pl.col("line").str.contains(CONTROL_CHARS))
    if bad is not None:
        raise FormatError(message("control character in a line", where=f"`{path}` line {bad}",
                                  expected="printable text, fields separated by the format's "
                                           "separator",
                                  got="a control byte (NUL, ESC, \\x1f, ...)",
                                  hint="The file is binary or corrupt; identifiers cannot "
                                       "hold control characters."))
    return lines.select("line", pl.col("lineno").cast(pl.Int64))


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
