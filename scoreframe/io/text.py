"""Whitespace-separated text trial lists: BOSARIS text Key/Ndx/Scores and Kaldi trials/scores.

I/O layer. The formats are one line per trial:

* key (BOSARIS ``Key.read_txt``, Kaldi ``trials``): ``model segment target|nontarget``
* ndx (BOSARIS ``Ndx.read_txt``): ``model segment``
* scores (BOSARIS ``Scores.read_txt``, Kaldi score files): ``model segment score``

Files are parsed with polars (no Python loop over lines); blank lines are skipped; a line with
the wrong number of fields is an error naming the file and line. Labels must be ``target`` or
``nontarget`` (any case, or the other spellings of
:func:`scoreframe.schema.normalize_label`).
Writers write full float precision (BOSARIS' own ``save_txt`` keeps only 6 decimals).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from scoreframe.errors import FormatError, message
from scoreframe.io.atomic import atomic_output
from scoreframe.schema import Kind, validate_trials

__all__ = [
    "read_kaldi_scores",
    "read_kaldi_trials",
    "read_key_txt",
    "read_ndx_txt",
    "read_scores_txt",
    "read_text_trials",
    "write_text_trials",
]

_FIELDS: dict[str, tuple[str, ...]] = {
    "key": ("model", "segment", "label"),
    "ndx": ("model", "segment"),
    "scores": ("model", "segment", "score"),
}


def read_text_trials(path: str | Path, kind: Kind, *, fmt: str = "BOSARIS text") -> pl.DataFrame:
    """Read a whitespace-separated trial list of the given kind (see the module docstring)."""
    path = Path(path)
    fields = _FIELDS[kind]
    if not path.is_file():
        raise FormatError(message(f"no such file `{path}`"))
    try:
        lines = pl.read_csv(path, has_header=False, separator="\x1f", quote_char=None,
                            new_columns=["line"], schema={"line": pl.String},
                            comment_prefix=None, raise_if_empty=False)
    except pl.exceptions.ComputeError as exc:
        raise FormatError(message(f"cannot read {fmt} {kind}", where=f"`{path}`",
                                  got=str(exc).splitlines()[0])) from None
    parts = (lines.with_row_index("lineno", offset=1)
             .with_columns(pl.col("line").str.strip_chars().str.replace_all(r"\s+", " ")
                           .str.split(" "))
             .filter(pl.col("line").list.first() != ""))
    bad = parts.filter(pl.col("line").list.len() != len(fields))
    if bad.height:
        first = bad.row(0, named=True)
        raise FormatError(message(
            f"ragged {fmt} {kind} line", where=f"`{path}` line {first['lineno']}",
            expected=f"{len(fields)} fields ({' '.join(fields)})",
            got=f"{len(first['line'])} field(s): {' '.join(first['line'])!r}"
                + (f" ({bad.height} bad lines in all)" if bad.height > 1 else "")))
    df = parts.select(
        [pl.col("line").list.get(i).alias(name) for i, name in enumerate(fields)] + ["lineno"])
    if kind == "scores":
        score = pl.col("score").str.strip_chars().cast(pl.Float64, strict=False)
        df = df.with_columns(score)
        badnum = df.filter(pl.col("score").is_null())
        if badnum.height:
            ln = badnum["lineno"][0]
            raw = parts.filter(pl.col("lineno") == ln)["line"][0][2]
            raise FormatError(message(f"bad score in {fmt} scores", where=f"`{path}` line {ln}",
                                      expected="a number", got=repr(raw)))
    df = df.drop("lineno")
    return validate_trials(df, kind=kind, where=f"`{path}`").collect()


def read_key_txt(path: str | Path) -> pl.DataFrame:
    """BOSARIS text Key: ``model segment target|nontarget`` -> ``model, segment, label``."""
    return read_text_trials(path, "key")


def read_ndx_txt(path: str | Path) -> pl.DataFrame:
    """BOSARIS text Ndx: ``model segment`` -> ``model, segment``."""
    return read_text_trials(path, "ndx")


def read_scores_txt(path: str | Path) -> pl.DataFrame:
    """BOSARIS text Scores: ``model segment score`` -> ``model, segment, score``."""
    return read_text_trials(path, "scores")


def read_kaldi_trials(path: str | Path) -> pl.DataFrame:
    """Kaldi trials file ``enroll test target|nontarget`` -> ``model, segment, label``."""
    return read_text_trials(path, "key", fmt="Kaldi")


def read_kaldi_scores(path: str | Path) -> pl.DataFrame:
    """Kaldi score file ``enroll test score`` -> ``model, segment, score``."""
    return read_text_trials(path, "scores", fmt="Kaldi")


def write_text_trials(data: pl.DataFrame, path: str | Path, kind: Kind, *,
                      overwrite: bool = False) -> None:
    """Write ``model segment [target|nontarget | score]`` lines atomically.

    Rows with a null label cannot be written as a key and are an error.
    """
    fields = _FIELDS[kind]
    df = data.select(fields)
    if kind == "key":
        if df["label"].null_count():
            raise FormatError(message("cannot write unknown (null) labels to a text key",
                                      got=f"{df['label'].null_count()} null label(s)"))
        df = df.with_columns(pl.when(pl.col("label")).then(pl.lit("target"))
                             .otherwise(pl.lit("nontarget")).alias("label"))
    with atomic_output(path, overwrite=overwrite) as out:
        df.write_csv(out, separator=" ", include_header=False, quote_style="never")
