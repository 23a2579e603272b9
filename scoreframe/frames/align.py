"""Aligning scores with a key (or trial list): report what does not match, then join.

Frames layer (polars, lazy). Joining scores to a key reports trials in the key with no score,
scores for trials not in the key, and duplicates on either side (counts plus a few examples).
Metadata tables (conditions per model or per segment) join with the same rule
(:func:`join_metadata`): every trial finds exactly one row, or it is an error.
The default is an error; ``missing="drop"`` or ``missing=<float>`` (BOSARIS
``set_missing_to_value``) and ``extra="drop"`` are explicit choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import polars as pl

from scoreframe.errors import AlignmentError, Place, message
from scoreframe.frames.schema import polars_frame
from scoreframe.io import load_trials

__all__ = ["AlignmentReport", "align", "alignment_report", "join_metadata", "read_metadata"]

_EXAMPLES = 3


@dataclass(frozen=True)
class AlignmentReport:
    """Counts (and a few examples) of what did not align, from :func:`alignment_report`.

    Attributes
    ----------
    n_key, n_scores
        Rows of the key and of the scores.
    n_missing, n_extra
        Key trials with no score; scores with no key trial.
    n_dup_key, n_dup_scores
        Trials that appear more than once in the key, in the scores.
    examples
        A few trials of each kind, to show in a message.

    See Also
    --------
    alignment_report : Makes one.
    align : Joins a key and scores, refusing what does not align.

    Examples
    --------
    >>> import polars as pl
    >>> key = pl.DataFrame({"model": ["m1", "m1"], "segment": ["s1", "s2"],
    ...                     "label": [True, False]})
    >>> scores = pl.DataFrame({"model": ["m1"], "segment": ["s1"], "score": [1.0]})
    >>> r = alignment_report(key, scores)
    >>> r.ok, r.n_missing, r.n_extra
    (False, 1, 0)
    """

    n_key: int
    n_scores: int
    n_missing: int
    n_extra: int
    n_dup_key: int
    n_dup_scores: int
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every key trial has exactly one score and every score a trial."""
        return not (self.n_missing or self.n_extra or self.n_dup_key or self.n_dup_scores)

    def describe(self) -> str:
        """One line listing the problems with examples."""
        parts = []
        for label, n, ex in (
            ("key trial(s) with no score", self.n_missing, "missing"),
            ("score(s) with no key trial", self.n_extra, "extra"),
            ("duplicated key trial(s)", self.n_dup_key, "dup_key"),
            ("duplicated score(s)", self.n_dup_scores, "dup_scores"),
        ):
            if n:
                parts.append(f"{n} {label} (e.g. {', '.join(self.examples.get(ex, []))})")
        return "; ".join(parts) or "aligned"


def _ex(lf: pl.LazyFrame, cols: list[str]) -> list[str]:
    rows = lf.select(cols).sort(cols).head(_EXAMPLES).collect().iter_rows()
    return ["/".join(str(v) for v in r) for r in rows]


def _count(lf: pl.LazyFrame) -> int:
    return int(lf.select(pl.len()).collect(engine="streaming").item())


def _expected(key: pl.LazyFrame, scores: pl.LazyFrame) -> tuple[pl.LazyFrame, list[str]]:
    """Key trials, crossed with the systems of ``scores`` when the key has no ``system``."""
    on = ["model", "segment"]
    if "system" in key.collect_schema().names() and "system" not in (
            scores.collect_schema().names()):
        raise AlignmentError(message(
            "the key has a `system` column but the scores do not", expected="`system` in "
            "both (the key's trials per system) or only in the scores",
            got="key columns " + ", ".join(key.collect_schema().names()),
            hint="Drop the key's system column, or add the system to the scores."))
    if "system" in scores.collect_schema().names() and "system" not in (
            key.collect_schema().names()):
        systems = scores.select("system").unique()
        return key.join(systems, how="cross"), [*on, "system"]
    return key, on + (["system"] if "system" in key.collect_schema().names() else [])


def alignment_report(key: pl.LazyFrame | pl.DataFrame,
                     scores: pl.LazyFrame | pl.DataFrame) -> AlignmentReport:
    """Count key trials without score, scores without trial and duplicates (lazy queries).

    Parameters
    ----------
    key, scores
        The key (``model``, ``segment``, ``label``) and the scores (``model``, ``segment``,
        ``score``), as frames.

    Returns
    -------
    AlignmentReport
        The counts and a few examples of each problem.

    See Also
    --------
    align : Joins the two, with the same checks.

    Examples
    --------
    >>> import polars as pl
    >>> key = pl.DataFrame({"model": ["m1"], "segment": ["s1"], "label": [True]})
    >>> scores = pl.DataFrame({"model": ["m1", "m1"], "segment": ["s1", "s1"],
    ...                        "score": [1.0, 2.0]})
    >>> alignment_report(key, scores).n_dup_scores
    1
    """
    key, scores = polars_frame(key).lazy(), polars_frame(scores).lazy()
    expected, on = _expected(key, scores)
    missing = expected.join(scores.select(on), on=on, how="anti")
    extra = scores.join(expected.select(on), on=on, how="anti")
    dup_k = expected.group_by(on).agg(pl.len()).filter(pl.col("len") > 1)
    dup_s = scores.group_by(on).agg(pl.len()).filter(pl.col("len") > 1)
    counts = pl.concat([
        missing.select(pl.len().alias("n")), extra.select(pl.len().alias("n")),
        dup_k.select(pl.len().alias("n")), dup_s.select(pl.len().alias("n")),
        expected.select(pl.len().alias("n")), scores.select(pl.len().alias("n")),
    ]).collect()["n"].to_list()
    n_missing, n_extra, n_dk, n_ds, n_key, n_scores = (int(c) for c in counts)
    examples = {}
    for name, n, lf in (("missing", n_missing, missing), ("extra", n_extra, extra),
                        ("dup_key", n_dk, dup_k), ("dup_scores", n_ds, dup_s)):
        if n:
            examples[name] = _ex(lf, on)
    return AlignmentReport(n_key, n_scores, n_missing, n_extra, n_dk, n_ds, examples)


def align(key: pl.LazyFrame | pl.DataFrame | str | Path,
          scores: pl.LazyFrame | pl.DataFrame | str | Path, *,
          missing: str | float = "error", extra: str = "error",
          check: bool = True) -> pl.LazyFrame:
    """Join scores to a key on (``model``, ``segment``[, ``system``]).

    Parameters
    ----------
    key
        Key (``model, segment, label`` + conditions) or trial list (Ndx, no ``label``): a
        frame, or a file of any registered format (read as a key).
    scores
        ``model, segment, score`` (+ ``system``: then every key trial is expected once per
        system): a frame or a file (read as scores).
    missing
        Key trials with no score: ``"error"`` (default), ``"drop"``, or a float to fill in.
    extra
        Scores with no key trial: ``"error"`` (default) or ``"drop"``.
    check
        Run the alignment report first (several lazy scans); duplicates are always errors.

    Returns
    -------
    polars.LazyFrame
        Key columns, ``score`` (and ``system``), in the canonical schema.

    Raises
    ------
    AlignmentError
        Listing counts and examples of what did not align.

    See Also
    --------
    scoreframe.alignment_report : The counts of what aligned, without joining.
    scoreframe.validate_trials : The checks applied to the aligned table.
    scoreframe.write_trials : Write the aligned trials as a Parquet dataset.

    Examples
    --------
    >>> import polars as pl
    >>> key = pl.DataFrame({"model": ["a", "a"], "segment": ["x", "y"], "label": [True, False]})
    >>> sc = pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [2.0]})
    >>> align(key, sc, missing=0.0).collect()["score"].to_list()
    [2.0, 0.0]
    """
    if missing not in ("error", "drop") and not isinstance(missing, (int, float)):
        raise AlignmentError(message("bad `missing` policy", expected="error | drop | a number",
                                     got=repr(missing)))
    if extra not in ("error", "drop"):
        raise AlignmentError(message("bad `extra` policy", expected="error | drop",
                                     got=repr(extra)))
    if isinstance(key, str | Path):
        key = load_trials(key, kind="key")
    if isinstance(scores, str | Path):
        scores = load_trials(scores, kind="scores")
    key, scores = polars_frame(key).lazy(), polars_frame(scores).lazy()
    if "score" in key.collect_schema().names():  # which score would be evaluated?
        raise AlignmentError(message(
            "the key already has a `score` column", expected="the scores only in the scores "
            "table", got="key columns " + ", ".join(key.collect_schema().names()),
            hint="Drop the key's score column, or use the key table alone as the trials."))
    expected, on = _expected(key, scores)
    if check:
        rep = alignment_report(key, scores)
        problems = []
        if rep.n_dup_key or rep.n_dup_scores:
            problems.append("duplicates")
        if rep.n_missing and missing == "error":
            problems.append("missing")
        if rep.n_extra and extra == "error":
            problems.append("extra")
        if problems:
            shown = AlignmentReport(
                rep.n_key, rep.n_scores, rep.n_missing if missing == "error" else 0,
                rep.n_extra if extra == "error" else 0, rep.n_dup_key, rep.n_dup_scores,
                rep.examples)  # the problems a policy has not handled
            raise AlignmentError(message(
                "scores do not align with the key", got=shown.describe(),
                hint="Choose a policy: missing='drop' or a fill value (CLI --missing), "
                     "extra='drop' (CLI --extra drop); duplicates must be fixed."))
    how: Literal["inner", "left"] = "inner" if missing == "drop" else "left"
    score_cols = [c for c in scores.collect_schema().names()
                  if c not in expected.collect_schema().names() or c in on]
    out = expected.join(scores.select(score_cols), on=on, how=how, maintain_order="left")
    if missing not in ("error", "drop"):
        out = out.with_columns(pl.col("score").fill_null(float(missing)))
    return out


def read_metadata(path: str | Path) -> pl.LazyFrame:
    r"""A metadata table (a key column and condition columns) from Parquet, CSV or TSV.

    Text tables are read with every column as text, so condition values such as ``01`` and
    ``1`` stay apart and ids keep their leading zeros; Parquet keeps its types.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "models.csv"
    >>> _ = p.write_text("model,gender\nm01,f\n")
    >>> read_metadata(p).collect().row(0)
    ('m01', 'f')
    """
    p = Path(path)
    if not p.exists():
        raise AlignmentError(message("no such metadata file", path=p))
    name = p.name.lower().removesuffix(".gz")
    if p.is_dir() or name.endswith(".parquet"):
        src = str(p / "**" / "*.parquet") if p.is_dir() else str(p)
        return pl.scan_parquet(src)
    if name.endswith((".csv", ".tsv", ".tab")):
        sep = "," if name.endswith(".csv") else "\t"
        try:
            return pl.read_csv(p, separator=sep, infer_schema=False).lazy()
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise AlignmentError(message("cannot read the metadata table", where=Place(p),
                                         got=str(exc).splitlines()[0][:200])) from None
    raise AlignmentError(message("unknown metadata table format", where=Place(p),
                                 expected="a .parquet file or dataset, .csv or .tsv"))


def join_metadata(trials: pl.LazyFrame, table: pl.LazyFrame | pl.DataFrame | str | Path, *,
                  on: Sequence[str], name: str | None = None) -> pl.LazyFrame:
    """Join a metadata table to the trials on key columns, refusing keys that do not match.

    Every trial must find exactly one metadata row: a key value repeated in the table, or a
    trial whose key is not in the table, is an error that names a few of them and how many
    there are (a silent inner join would drop trials; a silent left join would give null
    conditions). Checked with lazy queries that read only the key columns.

    Parameters
    ----------
    trials
        The trials (lazy).
    table
        The metadata: a frame, or a Parquet/CSV/TSV file (:func:`read_metadata`).
    on
        The key columns, present in both.
    name
        How messages name the table (default: its path).

    Returns
    -------
    polars.LazyFrame
        The trials with the table's other columns added.

    See Also
    --------
    align : Joins scores to a key.
    scoreframe.evaluate : Groups by the joined columns with ``by=``.

    Examples
    --------
    >>> trials = pl.LazyFrame({"model": ["a", "a", "b"], "segment": ["x", "y", "x"],
    ...                        "score": [1.0, 0.0, 2.0], "label": [True, False, True]})
    >>> models = pl.DataFrame({"model": ["a", "b"], "gender": ["f", "m"]})
    >>> join_metadata(trials, models, on=["model"]).collect()["gender"].to_list()
    ['f', 'f', 'm']
    """
    label = name or (f"`{table}`" if isinstance(table, str | Path) else "the metadata table")
    meta = read_metadata(table) if isinstance(table, str | Path) else polars_frame(table).lazy()
    on = list(dict.fromkeys(on))
    if not on:
        raise AlignmentError(message("a metadata join needs key columns", where=label,
                                     hint="Name them with on= (CLI --on COL)."))
    t_names = trials.collect_schema().names()
    m_schema = meta.collect_schema()
    for side, names in (("the trials", t_names), (label, m_schema.names())):
        missing = [c for c in on if c not in names]
        if missing:
            raise AlignmentError(message(
                f"key column(s) {', '.join(f'`{c}`' for c in missing)} not in {side}",
                where=label, got="columns " + ", ".join(names)))
    clash = [c for c in m_schema.names() if c not in on and c in t_names]
    if clash:
        raise AlignmentError(message(
            f"column(s) {', '.join(f'`{c}`' for c in clash)} are in both the trials and "
            "the metadata", where=label, hint="Rename or drop them in one of the tables."))
    t_types = trials.collect_schema()
    meta = meta.with_columns([pl.col(c).cast(t_types[c]) for c in on
                              if m_schema[c] != t_types[c]])
    dup = meta.group_by(on).agg(pl.len().alias("n")).filter(pl.col("n") > 1)
    n_dup = _count(dup)
    if n_dup:
        raise AlignmentError(message(
            "metadata keys are not unique", where=label,
            got=f"{n_dup} key value(s) on several rows, e.g. {', '.join(_ex(dup, on))}",
            hint="Each key value must have one row of metadata."))
    absent = trials.select(on).join(meta.select(on), on=on, how="anti", nulls_equal=True)
    n_absent = _count(absent)
    if n_absent:
        raise AlignmentError(message(
            "trials without metadata", where=label,
            got=f"{n_absent} trial(s) whose {'/'.join(on)} is not in the table, e.g. "
                + ", ".join(_ex(absent.unique(), on)),
            hint="Add the missing rows, or filter the trials first (--where)."))
    return trials.join(meta, on=on, how="left", maintain_order="left", nulls_equal=True)
