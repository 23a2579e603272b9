"""Which statistics an evaluation needs: base groups, and the units and pooled rows built from them.

No dataframe library here. A *base group* is one combination of the grouping columns present
in the data (``system``, the ``by`` columns and the ``equalize_by`` columns); its trials are
sorted once. A *unit* is one row of the results: a base group, the union of the base groups
that differ only in ``equalize_by`` columns, or the pooled row of a system (the union of all
its base groups). Units are built by merging their members' statistics, never by re-sorting
raw scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["POOLED", "GroupPlan", "Unit", "class_plan", "plan_units"]

#: Value of the condition columns in a pooled row.
POOLED = "all"


@dataclass(frozen=True)
class Unit:
    """One result row: its key (column -> value) and the indices of its member base groups."""

    key: dict[str, str | None]
    members: tuple[int, ...]
    pooled: bool = False


@dataclass(frozen=True)
class GroupPlan:
    """Grouping of one evaluation (see the module docstring)."""

    group_cols: tuple[str, ...]  # base-group columns: system?, by..., equalize...
    row_cols: tuple[str, ...]  # result-row columns: system?, by...
    units: tuple[Unit, ...]


def plan_units(keys: Sequence[dict[str, str | None]], *, row_cols: Sequence[str],
               system_cols: Sequence[str], pooled: bool) -> list[Unit]:
    """Units of an evaluation from its base-group keys (in sorted order).

    Examples
    --------
    >>> keys = [{"g": "f", "ch": "a"}, {"g": "f", "ch": "b"}, {"g": "m", "ch": "a"}]
    >>> [(u.key, u.members) for u in plan_units(keys, row_cols=["g"], system_cols=[],
    ...                                         pooled=True)]
    [({'g': 'f'}, (0, 1)), ({'g': 'm'}, (2,)), ({'g': 'all'}, (0, 1, 2))]
    """
    rows: dict[tuple[str | None, ...], list[int]] = {}
    for i, k in enumerate(keys):
        rows.setdefault(tuple(k[c] for c in row_cols), []).append(i)
    units = [Unit(dict(zip(row_cols, rk, strict=True)), tuple(ix)) for rk, ix in rows.items()]
    cond = [c for c in row_cols if c not in system_cols]
    if pooled and cond:
        per_sys: dict[tuple[str | None, ...], list[int]] = {}
        for i, k in enumerate(keys):
            per_sys.setdefault(tuple(k[c] for c in system_cols), []).append(i)
        for sk, ix in per_sys.items():
            key = dict(zip(system_cols, sk, strict=True)) | dict.fromkeys(cond, POOLED)
            units.append(Unit({c: key[c] for c in row_cols}, tuple(ix), pooled=True))
    return units


def class_plan(keys: Sequence[dict[str, str | None]], class_col: str | None
               ) -> tuple[list[str | None] | None, list[int] | None]:
    """Each base group's class value, and its partition (its key without the class column).

    >>> class_plan([{"c": "a", "t": "x"}, {"c": "a", "t": "y"}, {"c": "b", "t": "x"}], "t")
    (['x', 'y', 'x'], [0, 0, 1])
    """
    if class_col is None:
        return None, None
    seen: dict[tuple[object, ...], int] = {}
    part = [seen.setdefault(tuple((c, v) for c, v in k.items() if c != class_col), len(seen))
            for k in keys]
    return [k.get(class_col) for k in keys], part
