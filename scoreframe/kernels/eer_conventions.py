"""EER conventions of other tools, so their published numbers can be reproduced.

numpy only. The default EER of scoreframe is the ROCCH-EER
(:func:`scoreframe.kernels.rocch.rocch_eer`).

* ``steppy_eer`` (name ``"nist"``): the convention of the NIST SRE scoring software. Error rates
  are taken after each trial of the score-sorted list (``fnr_k``, ``fpr_k``, k = 1..n, optionally
  weighted per trial), and the EER is interpolated linearly between the last point with
  ``fnr < fpr`` and the first with ``fnr >= fpr``. The NIST code breaks score ties in an
  unspecified (quicksort) order; scoreframe puts targets first, as everywhere else.
* ``kaldi_eer`` (name ``"kaldi"``): Kaldi's ``compute-eer``: walk the sorted target scores; at
  target index i compare with the non-target at index ``N - 1 - floor(N i / T)`` (from the top);
  the EER is ``i / T`` for the first i where that non-target scores below the target. Kaldi reads
  scores as float32; scoreframe keeps float64, and uses exact integer division.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scoreframe.kernels.sorted_scores import SortedScores

__all__ = ["interpolated_crossing", "kaldi_eer", "steppy_eer", "weighted_steppy"]

F64 = NDArray[np.float64]


def weighted_steppy(scores: F64, labels: NDArray[np.bool_], weights: F64
                    ) -> tuple[F64, F64]:
    """Per-trial steppy ``(fnr, fpr)`` after each trial of the sorted list, with trial weights.

    Returns arrays of length n + 1 starting at ``(0, 1)``. Ties: targets first.
    """
    order = np.lexsort((~labels, scores))
    lab = labels[order]
    w = weights[order]
    wt = np.where(lab, w, 0.0)
    wn = np.where(lab, 0.0, w)
    fnr = np.concatenate(([0.0], np.cumsum(wt) / wt.sum()))
    fpr = np.concatenate(([1.0], 1.0 - np.cumsum(wn) / wn.sum()))
    return fnr, fpr


def interpolated_crossing(fnr: F64, fpr: F64) -> float:
    """EER of a per-trial ROC by linear interpolation where ``fnr - fpr`` changes sign."""
    diff = fnr - fpr  # non-decreasing from -1 to +1
    x1 = int(np.argmax(diff >= 0))
    if x1 == 0 or diff[x1] == 0:
        return float(fnr[x1])
    x2 = x1 - 1
    a = (fnr[x1] - fpr[x1]) / (fpr[x2] - fpr[x1] - (fnr[x2] - fnr[x1]))
    return float(fnr[x1] + a * (fnr[x2] - fnr[x1]))


def steppy_eer(s: SortedScores) -> float:
    """EER by linear interpolation of the per-trial steppy ROC (NIST SRE scorer convention)."""
    lab = s.merged_labels()
    a = np.cumsum(lab)
    k = np.arange(1, lab.shape[0] + 1)
    fnr = np.concatenate(([0.0], a / s.n_tar))
    fpr = np.concatenate(([1.0], 1.0 - (k - a) / s.n_non))
    return interpolated_crossing(fnr, fpr)


def kaldi_eer(s: SortedScores) -> float:
    """EER as Kaldi's ``compute-eer`` computes it (see the module docstring)."""
    t, n = s.n_tar, s.n_non
    i = np.arange(max(t - 1, 0), dtype=np.int64)
    j = np.maximum(n - 1 - (n * i) // t, 0)
    stop = s.non[j] < s.tar[i]
    pos = int(np.argmax(stop)) if stop.any() else t - 1
    return pos / t
