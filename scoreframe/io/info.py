"""What a trial table holds: rows, schema, and target / non-target counts per condition.

Frame layer: aggregations on a LazyFrame, no metrics. The command ``scoreframe info`` prints
:func:`dataset_info`'s result; notebooks can use it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from scoreframe.checks import check_positive_int
from scoreframe.frames.lazy import Data, as_lazy

__all__ = ["ID_COLUMNS", "DatasetInfo", "condition_columns", "dataset_info"]

#: Canonical columns that are never conditions.
ID_COLUMNS = ("model", "segment", "score", "label")


@dataclass(frozen=True)
class DatasetInfo:
    """The summary of a trial table.

    Attributes
    ----------
    rows
        Number of rows (trials).
    schema
        Column names and types.
    targets, non_targets, unknown
        Label counts (``None`` when the table has no ``label`` column).
    conditions
        For every condition column with at most ``max_values`` distinct values, a frame
        ``<column>, targets, non-targets, unknown`` sorted by value.
    too_many_values
        Condition columns with more distinct values than ``max_values``, and how many.
    """

    rows: int
    schema: pl.Schema
    targets: int | None = None
    non_targets: int | None = None
    unknown: int | None = None
    conditions: dict[str, pl.DataFrame] = field(default_factory=dict)
    too_many_values: dict[str, int] = field(default_factory=dict)

    @property
    def has_labels(self) -> bool:
        """True when the table has a ``label`` column."""
        return self.targets is not None


def condition_columns(schema: pl.Schema) -> list[str]:
    """Columns that can be conditions: strings, integers, booleans, categoricals (no ids).

    Examples
    --------
    >>> condition_columns(pl.Schema({"model": pl.String, "score": pl.Float64,
    ...                              "gender": pl.String, "snr": pl.Float64, "year": pl.Int32}))
    ['gender', 'year']
    """
    return [c for c, t in schema.items() if c not in ID_COLUMNS
            and (t == pl.String or t.is_integer() or t == pl.Boolean
                 or isinstance(t, pl.Categorical | pl.Enum))]


def _label_counts() -> list[pl.Expr]:
    return [pl.col("label").sum().alias("targets"),
            (~pl.col("label")).sum().alias("non-targets"),
            pl.col("label").is_null().sum().alias("unknown")]


def dataset_info(data: Data, *, where: str | None = None, max_values: int = 50) -> DatasetInfo:
    """Rows, schema and label counts overall and per condition value, in two scans.

    Parameters
    ----------
    data
        Trials: a path, a Polars/pandas frame, a LazyFrame or a pyarrow Table.
    where
        Optional SQL predicate selecting trials first.
    max_values
        Condition columns with more distinct values than this are counted, not listed.

    Examples
    --------
    >>> df = pl.DataFrame({"model": ["a", "a", "b"], "segment": ["x", "y", "x"],
    ...                    "label": [True, False, False], "gender": ["f", "f", "m"]})
    >>> info = dataset_info(df)
    >>> info.rows, info.targets, info.non_targets
    (3, 1, 2)
    >>> info.conditions["gender"].rows()
    [('f', 1, 1, 0), ('m', 0, 1, 0)]
    """
    max_values = check_positive_int(max_values, name="max_values", minimum=0)
    lf = as_lazy(data, where=where)
    schema = lf.collect_schema()
    conds = condition_columns(schema)
    labelled = "label" in schema
    first = [pl.len().alias("__rows"), *(pl.col(c).n_unique().alias(f"__n_{c}") for c in conds)]
    if labelled:
        first += _label_counts()
    head = lf.select(first).collect().row(0, named=True)
    listed = [c for c in conds if head[f"__n_{c}"] <= max_values] if labelled else []
    tables = pl.collect_all([lf.group_by(c).agg(_label_counts()).sort(c) for c in listed])
    return DatasetInfo(
        rows=int(head["__rows"]), schema=schema,
        targets=int(head["targets"]) if labelled else None,
        non_targets=int(head["non-targets"]) if labelled else None,
        unknown=int(head["unknown"]) if labelled else None,
        conditions=dict(zip(listed, tables, strict=True)),
        too_many_values={c: int(head[f"__n_{c}"]) for c in conds
                         if labelled and head[f"__n_{c}"] > max_values})
