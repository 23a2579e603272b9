"""1:N identification: closed-set CMC, open-set FNIR/DIR at FPIR targets, their curves.

Implementation in :mod:`scoreframe.identification._search` (frames) over
:mod:`scoreframe.kernels.identification` (the mergeable per-probe state). See
``docs/biometrics.md``.

May import: errors, checks, kernels, io, frames, stats, metrics.
"""

from scoreframe.identification._search import (
    THRESHOLD_CONVENTIONS,
    Searches,
    cmc_curve,
    fnir_fpir_curve,
    identify,
    read_score_matrix,
    search_statistics,
)

__all__ = ["THRESHOLD_CONVENTIONS", "Searches", "cmc_curve", "fnir_fpir_curve",
           "identify", "read_score_matrix", "search_statistics"]
