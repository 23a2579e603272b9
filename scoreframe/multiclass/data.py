"""Compatibility module: the multiclass readers and the pivot under their old names.

The readers live in :mod:`scoreframe.io.multiclass` (files) and
:mod:`scoreframe.multiclass.tables` (any input, through :func:`scoreframe.frames.lazy.as_lazy`),
which also holds :func:`score_matrices`.
"""

from __future__ import annotations

from scoreframe.io.multiclass import ID_NAMES, TRUTH_NAMES
from scoreframe.multiclass.tables import Data, Group, read_scores, read_truth, score_matrices

__all__ = ["ID_NAMES", "TRUTH_NAMES", "Data", "Group", "read_scores", "read_truth",
           "score_matrices"]
