"""Prior-weighted linear logistic regression (and any Beta-family rule) by trust-region Newton-CG.

numpy/scipy only. Minimizes the normalized objective of MATH.md 10.2 / 9.4,

    O(w) = [pi/|T| sum_T C1(x_t) + (1-pi)/|N| sum_N C2(x_t)] / O_default,   x = X w + logit(pi)

with analytic gradient and Hessian-vector products, using SciPy's ``trust-ncg`` (Steihaug CG inside
a trust region, as BOSARIS' TRNCG; seed 000 section 3.3). ``X`` holds one row per trial: the
features of an affine model (scores, a column of ones for the offset, quality products).
The llr ``X w`` excludes the prior log-odds, which enter the objective only.

If the fitted model separates the training targets from the non-targets, the optimum is at
infinity: the result says so (``converged = False``) instead of pretending.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

from scoreframe.kernels.psr import BetaRule

__all__ = ["LinearFit", "fit_linear"]

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class LinearFit:
    """Result of :func:`fit_linear`."""

    params: F64
    objective: float
    initial_objective: float
    converged: bool
    n_iter: int
    message: str
    gradient_norm: float


class _Problem:
    """The objective, its gradient and Hessian-vector products, cached at the last point."""

    def __init__(self, x_tar: F64, x_non: F64, p_target: float, rule: BetaRule,
                 l2: float) -> None:
        self.x_tar, self.x_non = x_tar, x_non
        self.tau = math.log(p_target) - math.log1p(-p_target)
        ref = rule.reference(p_target)
        self.w_tar = p_target / (x_tar.shape[0] * ref)
        self.w_non = (1.0 - p_target) / (x_non.shape[0] * ref)
        self.rule = rule
        self.l2 = l2
        self._at: F64 | None = None
        self.n_eval = 0

    def _update(self, w: F64) -> None:
        if self._at is not None and np.array_equal(w, self._at):
            return
        self.n_eval += 1
        rule = self.rule
        xt = self.x_tar @ w + self.tau
        xn = self.x_non @ w + self.tau
        value = self.w_tar * float(np.sum(rule.cost_tar(xt))) \
            + self.w_non * float(np.sum(rule.cost_non(xn)))
        if self.l2:
            value += 0.5 * self.l2 * float(w[:-1] @ w[:-1])
        self.value = value
        gt, ht = rule.derivatives(xt, target=True)
        gn, hn = rule.derivatives(xn, target=False)
        grad = self.w_tar * (gt @ self.x_tar) + self.w_non * (gn @ self.x_non)
        if self.l2:
            grad[:-1] += self.l2 * w[:-1]
        self.grad = grad
        self.h_tar = self.w_tar * ht
        self.h_non = self.w_non * hn
        self.margin_ok = bool(np.all(xt > 0.0) and np.all(xn < 0.0))
        self._at = w.copy()

    def fun(self, w: F64) -> float:
        self._update(w)
        return self.value

    def jac(self, w: F64) -> F64:
        self._update(w)
        return self.grad

    def hessp(self, w: F64, v: F64) -> F64:
        self._update(w)
        out = (self.h_tar * (self.x_tar @ v)) @ self.x_tar \
            + (self.h_non * (self.x_non @ v)) @ self.x_non
        if self.l2:
            out[:-1] += self.l2 * v[:-1]
        return out


def fit_linear(x_tar: F64, x_non: F64, *, p_target: float, rule: BetaRule,
               w0: F64, max_iter: int = 100, gtol: float = 1e-10,
               l2: float = 0.0) -> LinearFit:
    """Fit ``llr = X w`` by minimizing the prior-weighted, normalized objective.

    Parameters
    ----------
    x_tar, x_non : ndarray of shape (n, d)
        Features of the target and non-target trials (a column of ones is the offset, and must
        be the last column when ``l2`` is used: the offset is not penalized).
    p_target : float
        The training prior ``pi`` in (0, 1).
    rule : BetaRule
        The scoring rule (``psr_beta("log")`` is prior-weighted logistic regression).
    w0 : ndarray of shape (d,)
        Starting point (BOSARIS: zeros for calibration, ``1/K`` weights for fusion).
    max_iter : int
        Cap on trust-region iterations (the run always ends).
    gtol : float
        Stop when the gradient norm is below this (the objective is normalized, O(1)).
    l2 : float
        Optional L2 penalty ``l2/2 ||w_without_offset||^2``.

    Returns
    -------
    LinearFit
        ``converged`` is False when the iteration cap was hit, the optimizer failed, or the
        training data are separated by the fitted model (optimum at infinity).

    Examples
    --------
    >>> import numpy as np
    >>> from scoreframe.kernels.psr import psr_beta
    >>> tar = np.array([[-3.0, 1], [1, 1], [2, 1], [5, 1], [7, 1]])
    >>> non = np.array([[-7.0, 1], [-5, 1], [-2, 1], [-1, 1], [3, 1], [4, 1]])
    >>> fit = fit_linear(tar, non, p_target=0.5, rule=psr_beta("log"), w0=np.zeros(2))
    >>> [round(float(v), 6) for v in fit.params], round(fit.objective, 6)
    ([0.254935, -0.152622], 0.842058)
    """
    if not 0.0 < p_target < 1.0:
        raise ValueError(f"p_target must be in (0, 1), got {p_target!r}")
    if x_tar.shape[0] == 0 or x_non.shape[0] == 0:
        raise ValueError(f"training needs targets and non-targets, got {x_tar.shape[0]} "
                         f"targets and {x_non.shape[0]} non-targets")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    prob = _Problem(np.ascontiguousarray(x_tar, dtype=np.float64),
                    np.ascontiguousarray(x_non, dtype=np.float64), p_target, rule, l2)
    w0 = np.asarray(w0, dtype=np.float64)
    initial = prob.fun(w0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = optimize.minimize(prob.fun, w0, jac=prob.jac, hessp=prob.hessp, method="trust-ncg",
                                options={"gtol": gtol, "maxiter": max_iter,
                                         "initial_trust_radius": max(
                                             float(np.linalg.norm(prob.jac(w0))), 1e-3)})
    w = np.asarray(res.x, dtype=np.float64)
    value = prob.fun(w)
    gnorm = float(np.linalg.norm(prob.jac(w)))
    converged = bool(res.success) or gnorm <= gtol
    message = str(res.message)
    if prob.margin_ok and not l2:
        converged = False
        message = ("the fitted model separates the training targets from the non-targets: the "
                   "optimum is at infinity (objective -> 0); parameters are where the run stopped")
    elif not converged and res.nit >= max_iter:
        message = f"not converged after {max_iter} iterations (gradient norm {gnorm:.3g})"
    return LinearFit(params=w, objective=value, initial_objective=initial, converged=converged,
                     n_iter=int(res.nit), message=message, gradient_norm=gnorm)
