"""Elementary functions of the field (MATH.md section 1): sigmoid, logit, probit, softplus.

numpy/scipy only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, ndtri

__all__ = [
    "effective_prior",
    "logit",
    "neglogsigmoid",
    "operating_points",
    "probit",
    "sigmoid",
    "softplus",
]


def sigmoid(x: ArrayLike) -> NDArray[np.float64]:
    """Logistic sigmoid ``1 / (1 + exp(-x))``; ``sigmoid(-inf) = 0``, ``sigmoid(inf) = 1``."""
    return np.asarray(expit(np.asarray(x, dtype=np.float64)))


def logit(p: ArrayLike) -> NDArray[np.float64]:
    """Log odds ``log(p / (1 - p))``; ``logit(0) = -inf``, ``logit(1) = inf``."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def probit(p: ArrayLike) -> NDArray[np.float64]:
    """Inverse of the standard normal CDF; ``probit(0) = -inf``, ``probit(1) = inf``."""
    return np.asarray(ndtri(np.asarray(p, dtype=np.float64)))


def softplus(x: ArrayLike) -> NDArray[np.float64]:
    """``log(1 + exp(x))`` evaluated stably; ``softplus(-inf) = 0``, ``softplus(inf) = inf``."""
    return np.logaddexp(0.0, np.asarray(x, dtype=np.float64))


def neglogsigmoid(x: ArrayLike) -> NDArray[np.float64]:
    """``-log(sigmoid(x)) = softplus(-x)``."""
    return softplus(-np.asarray(x, dtype=np.float64))


def effective_prior(p_target: ArrayLike, c_miss: ArrayLike = 1.0,
                    c_fa: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Effective target prior ``p c_miss / (p c_miss + (1 - p) c_fa)`` (seed 000, eq 10).

    Examples
    --------
    >>> float(effective_prior(0.01, 10, 1))
    0.09174311926605505
    """
    p = np.asarray(p_target, dtype=np.float64)
    a = p * np.asarray(c_miss, dtype=np.float64)
    return a / (a + (1.0 - p) * np.asarray(c_fa, dtype=np.float64))


def operating_points(*, p_target: ArrayLike | None = None,
                     prior_log_odds: ArrayLike | None = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return ``(p, 1 - p, threshold)`` for effective priors or prior log odds.

    The Bayes threshold on llrs is ``-prior_log_odds``, taken directly when log odds are given
    (never through a sigmoid/logit round trip, MATH.md section 1).
    """
    if (p_target is None) == (prior_log_odds is None):
        raise TypeError("give exactly one of `p_target` and `prior_log_odds`")
    if prior_log_odds is not None:
        plo = np.atleast_1d(np.asarray(prior_log_odds, dtype=np.float64))
        return sigmoid(plo), sigmoid(-plo), -plo
    p = np.atleast_1d(np.asarray(p_target, dtype=np.float64))
    return p, 1.0 - p, -logit(p)
