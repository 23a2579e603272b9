"""Whitespace-separated text trial lists: BOSARIS text Key/Ndx/Scores and Kaldi trials/scores.

I/O layer. The formats are one line per trial:

* key (BOSARIS ``Key.read_txt``, Kaldi ``trials``): ``model segment target|nontarget``
* ndx (BOSARIS ``Ndx.read_txt``): ``model segment``
* scores (BOSARIS ``Scores.read_txt``, Kaldi score files): ``model segment score``

Files are parsed with polars (no Python loop over lines); blank lines are skipped; a line with
the wrong number of fields is an error naming the file and line. Labels must be ``target`` or
``nontarget`` (any case, or the other spellings of
:func:`scoreframe.frames.schema.normalize_label`).
Writers write full float precision (BOSARIS' own ``save_txt`` keeps only 6 decimals).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from scoreframe.errors import FormatError, Place, message
from scoreframe.frames.schema import Kind, validate_trials
from scoreframe.io.atomic import atomic_output, final_path
from scoreframe.io.lines import (
    byte_array,
    check_control_bytes,
    count_fields,
    first_bad_line,
    line_numbers,
    quote,
    read_lines,
    read_source,
    utf8_or_format_error,
)

__all__ = [
    "read_kaldi_scores",
    "read_kaldi_trials",
    "read_key_txt",
    "read_ndx_txt",
    "read_scores_txt",
    "fields_kind",
    "read_text_trials",
    "write_text_trials",
]

_FIELDS: dict[Kind, tuple[str, ...]] = {
    "key": ("model", "segment", "label"),
    "ndx": ("model", "segment"),
    "scores": ("model", "segment", "score"),
    "trials": ("model", "segment", "score", "label"),
}


def fields_kind(order: Sequence[str]) -> Kind:
    """The kind of a headerless list from its column order (a permutation of a kind's fields).

    Examples
    --------
    >>> fields_kind(["label", "model", "segment"])
    'key'
    """
    for kind, fields in _FIELDS.items():
        if sorted(order) == sorted(fields) and len(order) == len(fields):
            return kind
    raise FormatError(message(
        "bad column order", expected="the columns of a key (model, segment, label), an ndx "
        "(model, segment), scores (model, segment, score) or trials (all four), each once, "
        "in the file's order", got=", ".join(order) or "nothing"))


def read_text_trials(path: str | Path, kind: Kind, *, fmt: str = "BOSARIS text",
                     validate: bool = True, order: Sequence[str] | None = None,
                     max_line_bytes: int | None = None) -> pl.DataFrame:
    r"""Read a whitespace-separated trial list of the given kind (see the module docstring).

    Parameters
    ----------
    path
        The text file (gzip-compressed files are read too).
    kind
        ``"key"``, ``"ndx"`` or ``"scores"``: the number and meaning of the fields.
    fmt
        Format name used in messages (``"BOSARIS text"``, ``"Kaldi"``).
    validate
        Run the data checks of :func:`scoreframe.frames.schema.validate_trials` (labels, NaN
        scores, duplicate trials), reporting line numbers.
    order
        The fields of a line in the file's order, when they are not ``kind``'s usual order
        (VoxCeleb lists are ``label model segment``); a permutation of ``kind``'s fields.
    max_line_bytes
        Longest line accepted, in bytes (default :func:`scoreframe.io.lines.line_limit`,
        1 MiB): a longer line is an error found without reading it whole.

    Raises
    ------
    FormatError
        Naming the file and the 1-based line: wrong number of fields, a score that is not a
        number, a line longer than ``max_line_bytes``, control characters, invalid UTF-8,
        truncated gzip.
    SchemaError
        Bad labels, NaN scores, duplicate trials (with line numbers).

    See Also
    --------
    write_text_trials : The writer.
    read_key_txt, read_scores_txt : The BOSARIS layouts.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> _ = p.write_text("m1 s1 target\nm1 s2\n")
    >>> read_text_trials(p, "key")
    Traceback (most recent call last):
    ...
    scoreframe.errors.FormatError: `...key.txt` line 2: ragged BOSARIS text key line: ...
    """
    path = Path(path)
    fields = tuple(order) if order else _FIELDS[kind]
    if order and fields_kind(fields) != kind:
        raise FormatError(message(f"column order {', '.join(fields)} is not a {kind}",
                                  expected=", ".join(_FIELDS[kind])))
    where = Place(path)
    src = read_source(path, max_line_bytes=max_line_bytes)
    n_tab, n_cr = check_control_bytes(byte_array(src), path)
    df = _single_spaced(src, path, fields) if not (n_tab or n_cr) else None
    if df is None:  # the lines' numbers in a column (blank lines skipped)
        df = _split_lines(path, src, fields, kind, fmt)
    if "score" in fields and df.schema["score"] == pl.String:
        if "lineno" not in df.columns:
            df = df.with_columns(line_numbers(df, 1, "lineno"))
        raw = pl.col("score")
        df = df.with_columns(raw.cast(pl.Float64, strict=False).alias("__score"))
        ln = first_bad_line(df, pl.col("__score").is_null())
        if ln is not None:
            raw_value = df.filter(pl.col("lineno") == ln)["score"][0]
            raise FormatError(message(f"bad score in {fmt} {kind}", where=where.at(ln),
                                      expected="a number", got=quote(raw_value)))
        df = df.with_columns(pl.col("__score").alias("score")).drop("__score")
    numbered = "lineno" in df.columns  # else row i is line i + 1, numbered on demand
    if order:  # the canonical column order, whatever the file's
        df = df.select(*_FIELDS[kind], *(["lineno"] if numbered else []))
    if not validate:
        return validate_trials(df, kind=kind, where=where, check_data=False).drop(
            "lineno", strict=False).collect()
    return validate_trials(df, kind=kind, where=where,
                           line_column="lineno" if numbered else None,
                           first_line=None if numbered else 1).collect()


def _single_spaced(src: bytes | Path, path: Path,
                   fields: tuple[str, ...]) -> pl.DataFrame | None:
    """Parse a file without tabs or CRs with a single-space separator, directly.

    A space-separated file parses exactly this way unless a line has leading, trailing or
    repeated spaces, is blank or is ragged: each of these gives an empty (null) field or a
    parse error, and then None (the line-by-line path handles it and names the line).
    """
    def read(schema: dict[str, type[pl.DataType]]) -> pl.DataFrame:
        return pl.read_csv(src, separator=" ", has_header=False, quote_char=None,
                           schema=schema, comment_prefix=None, raise_if_empty=False,
                           truncate_ragged_lines=False)

    schema: dict[str, type[pl.DataType]] = dict.fromkeys(fields, pl.String)
    try:
        if "score" in fields:  # parsed as read (the parser reads every text the cast of a
            try:  # string reads, to the same float); a score that is not: as text (checked)
                df = read(schema | {"score": pl.Float64})
            except pl.exceptions.ComputeError as exc:
                if "could not parse" not in str(exc):
                    raise
                df = read(schema)
        else:
            df = read(schema)
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError,
            pl.exceptions.ShapeError) as exc:
        if "utf" in str(exc).lower():
            raise utf8_or_format_error(exc, src, path) from None
        return None  # ragged (too many fields somewhere, or too few on the first line)
    if any(s.null_count() for s in df.get_columns()):  # null counts are kept: no pass
        return None  # an empty field (repeated, leading space), a short row or a blank line
    return df  # row i is line i + 1 (no blank line): numbered only for a message


def _split_lines(path: Path, src: bytes | Path, fields: tuple[str, ...], kind: Kind,
                 fmt: str) -> pl.DataFrame:
    """Tokenize line by line (any run of spaces and tabs separates), checking field counts."""
    where = Place(path)
    lines = read_lines(path, src=src).filter(pl.col("line").str.strip_chars(" \t") != "")
    line = pl.col("line")
    messy = lines.select((line.str.contains("\t", literal=True)
                          | line.str.contains("  ", literal=True)
                          | line.str.starts_with(" ") | line.str.ends_with(" ")).any()).item()
    if messy:
        line = line.str.strip_chars(" \t").str.replace_all(r"[ \t]+", " ")
        lines = lines.with_columns(line)
        line = pl.col("line")
    n = lines.select(count_fields(line, " ").alias("n"))["n"]
    bad = lines.filter(n != len(fields))
    if bad.height:
        first = bad.row(0, named=True)
        got = first["line"].split(" ")
        raise FormatError(message(
            f"ragged {fmt} {kind} line", where=where.at(first['lineno']),
            expected=f"{len(fields)} fields ({' '.join(fields)})",
            got=f"{len(got)} field(s): {quote(first['line'])}"
                + (f" ({bad.height} bad lines in all)" if bad.height > 1 else "")))
    return (lines.select(line.str.split_exact(" ", len(fields) - 1)
                         .struct.rename_fields(list(fields)), "lineno")
            .unnest("line"))


def read_key_txt(path: str | Path) -> pl.DataFrame:
    r"""BOSARIS text Key: ``model segment target|nontarget`` -> ``model, segment, label``.

    Parameters
    ----------
    path
        The text file (gzip-compressed files are read too).

    Returns
    -------
    polars.DataFrame
        ``model``, ``segment`` (text) and ``label`` (boolean), checked as
        :func:`read_text_trials` checks them.

    See Also
    --------
    read_scores_txt : The matching scores.
    read_ndx_txt : A trial list without labels.
    scoreframe.align : Join key and scores.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> _ = p.write_text("m1 s1 target\nm1 s2 nontarget\n")
    >>> read_key_txt(p)["label"].to_list()
    [True, False]
    """
    return read_text_trials(path, "key")


def read_ndx_txt(path: str | Path) -> pl.DataFrame:
    r"""BOSARIS text Ndx: ``model segment`` -> ``model, segment``.

    Parameters
    ----------
    path
        The text file (gzip-compressed files are read too).

    Returns
    -------
    polars.DataFrame
        ``model`` and ``segment`` (text), one row per trial.

    See Also
    --------
    read_key_txt : The labelled trial list.
    read_scores_txt : Scores of the listed trials.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "trials.ndx"
    >>> _ = p.write_text("m1 s1\nm1 s2\n")
    >>> read_ndx_txt(p).rows()
    [('m1', 's1'), ('m1', 's2')]
    """
    return read_text_trials(path, "ndx")


def read_scores_txt(path: str | Path) -> pl.DataFrame:
    r"""BOSARIS text Scores: ``model segment score`` -> ``model, segment, score``.

    Parameters
    ----------
    path
        The text file (gzip-compressed files are read too).

    Returns
    -------
    polars.DataFrame
        ``model``, ``segment`` (text) and ``score`` (float64); a NaN score is an error.

    See Also
    --------
    read_key_txt : The matching key.
    scoreframe.align : Join key and scores.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "scores.txt"
    >>> _ = p.write_text("m1 s1 2.5\nm1 s2 -1\n")
    >>> read_scores_txt(p)["score"].to_list()
    [2.5, -1.0]
    """
    return read_text_trials(path, "scores")


def read_kaldi_trials(path: str | Path) -> pl.DataFrame:
    r"""Kaldi trials file ``enroll test target|nontarget`` -> ``model, segment, label``.

    Parameters
    ----------
    path
        The text file (gzip-compressed files are read too).

    Returns
    -------
    polars.DataFrame
        ``model`` (the enrollment id), ``segment`` (the test utterance) and ``label``.

    See Also
    --------
    read_kaldi_scores : The matching scores.
    scoreframe.align : Join key and scores.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "trials"
    >>> _ = p.write_text("spk1 utt1 target\nspk1 utt2 nontarget\n")
    >>> read_kaldi_trials(p).rows()
    [('spk1', 'utt1', True), ('spk1', 'utt2', False)]
    """
    return read_text_trials(path, "key", fmt="Kaldi")


def read_kaldi_scores(path: str | Path) -> pl.DataFrame:
    r"""Kaldi score file ``enroll test score`` -> ``model, segment, score``.

    Parameters
    ----------
    path
        The text file (gzip-compressed files are read too).

    Returns
    -------
    polars.DataFrame
        ``model`` (the enrollment id), ``segment`` (the test utterance) and ``score``.

    See Also
    --------
    read_kaldi_trials : The matching trial list.
    scoreframe.align : Join key and scores.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "scores"
    >>> _ = p.write_text("spk1 utt1 3.25\nspk1 utt2 -0.5\n")
    >>> read_kaldi_scores(p).rows()
    [('spk1', 'utt1', 3.25), ('spk1', 'utt2', -0.5)]
    """
    return read_text_trials(path, "scores", fmt="Kaldi")


def write_text_trials(data: pl.DataFrame, path: str | Path, kind: Kind, *,
                      overwrite: bool = False, order: Sequence[str] | None = None,
                      labels: tuple[str, str] = ("target", "nontarget")) -> None:
    r"""Write ``model segment [target|nontarget | score]`` lines atomically.

    ``order`` writes the fields in another order (a permutation of ``kind``'s fields) and
    ``labels`` spells target and non-target (VoxCeleb lists: ``("1", "0")``). Rows with a
    null label cannot be written as a key and are an error.

    Parameters
    ----------
    data
        The trials, with the columns of ``kind`` (``model, segment`` and ``label`` or
        ``score``).
    path
        The file written (atomically; an existing file only with ``overwrite=True``).
    kind
        ``"key"``, ``"ndx"`` or ``"scores"``.

    See Also
    --------
    read_text_trials : The reader.
    scoreframe.write_any : Any registered format.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "key.txt"
    >>> key = pl.DataFrame({"model": ["m1", "m1"], "segment": ["s1", "s2"],
    ...                     "label": [True, False]})
    >>> write_text_trials(key, p, "key")
    >>> p.read_text()
    'm1 s1 target\nm1 s2 nontarget\n'
    >>> write_text_trials(key, p, "key", order=["label", "model", "segment"], labels=("1", "0"),
    ...                   overwrite=True)
    >>> p.read_text().splitlines()
    ['1 m1 s1', '0 m1 s2']
    """
    fields = tuple(order) if order else _FIELDS[kind]
    missing = [c for c in fields if c not in data.columns]
    if missing:
        raise FormatError(message(f"cannot write a {kind} file", where=Place(final_path(path)),
                                  expected=f"columns {', '.join(fields)}",
                                  got=f"no {', '.join(missing)}"))
    df = data.select(fields)
    if "label" in fields:
        if df["label"].null_count():
            raise FormatError(message("cannot write unknown (null) labels to a text key",
                                      got=f"{df['label'].null_count()} null label(s)"))
        df = df.with_columns(pl.when(pl.col("label")).then(pl.lit(labels[0]))
                             .otherwise(pl.lit(labels[1])).alias("label"))
    with atomic_output(path, overwrite=overwrite) as out:
        df.write_csv(out, separator=" ", include_header=False, quote_style="never")
