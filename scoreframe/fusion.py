"""Linear fusion of several systems (old import path of :mod:`scoreframe.estimators.fusion`).

Kept so that ``from scoreframe.fusion import LinearFusion`` goes on working.
"""

from scoreframe.estimators.fusion import (
    KEY,
    LinearFusion,
    Systems,
    check_missing,
    check_wide,
    finish_wide,
    fusion_table,
    pick_systems,
    split_systems,
    system_name,
)

__all__ = ["KEY", "LinearFusion", "Systems", "check_missing", "check_wide", "finish_wide",
           "fusion_table", "pick_systems", "split_systems", "system_name"]
