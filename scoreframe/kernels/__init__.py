"""Numerical kernels: pure functions on numpy arrays.

This package may import only numpy, scipy and numba (never polars, duckdb or altair; numba
only through :mod:`scoreframe.kernels.compiled`, when a compiled loop first runs: the
replicates' and the ECE sums'). Every binary metric
starts from one :class:`~scoreframe.kernels.sorted_scores.SortedScores` (the scores of one group,
targets and non-targets each sorted once) and its PAV blocks; see DESIGN.md section 3.

May import: errors, checks (and numpy, scipy, numba; never a dataframe library).
"""

from scoreframe.kernels.sorted_scores import Blocks, SortedScores, pav_blocks, sort_scores

__all__ = ["Blocks", "SortedScores", "pav_blocks", "sort_scores"]
