"""Prior-weighted linear logistic regression (and any Beta-family rule) by trust-region Newton-CG.

numpy/scipy only. Minimizes the normalized objective of MATH.md 10.2 / 9.4,

    O(w) = [pi/|T| sum_T C1(x_t) + (1-pi)/|N| sum_N C2(x_t)] / O_default,   x = X w + logit(pi)

with the analytic gradient and Hessian-vector products, using SciPy's ``trust-ncg`` (Steihaug CG
inside a trust region, as BOSARIS' TRNCG; seed 000 section 3.3). The parameter count d is small,
so the exact d x d Hessian is formed once per iterate (one pass over the trials, in row chunks)
and every CG product reuses it. ``X`` holds one row per trial: the
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
from scipy import optimize, special
from scipy.special import logsumexp

from scoreframe.kernels.psr import BetaRule

__all__ = ["LinearFit", "MulticlassFit", "fit_affine", "fit_linear"]

_CHUNK = 1 << 20  # rows per block when forming the Hessian (bounded temporary memory)

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

    def _costs(self, x: F64, *, target: bool) -> tuple[float, F64, F64]:
        """Sum of costs, first and second derivatives at posterior log-odds ``x``."""
        rule = self.rule
        if (rule.alpha, rule.beta) == (1.0, 1.0):  # the log rule: one expit, one log1p
            p = special.expit(x)
            e = -np.abs(x)
            np.exp(e, out=e)
            np.log1p(e, out=e)
            total = float(np.sum(e)) + float(np.sum(np.maximum(-x if target else x, 0.0)))
            h = p * (1.0 - p)
            g = p - 1.0 if target else p
            return total, g, h
        cost = rule.cost_tar(x) if target else rule.cost_non(x)
        g, h = rule.derivatives(x, target=target)
        return float(np.sum(cost)), g, h

    def _update(self, w: F64) -> None:
        if self._at is not None and np.array_equal(w, self._at):
            return
        self.n_eval += 1
        ct, gt, ht = self._costs(self.x_tar @ w + self.tau, target=True)
        cn, gn, hn = self._costs(self.x_non @ w + self.tau, target=False)
        value = self.w_tar * ct + self.w_non * cn
        if self.l2:
            value += 0.5 * self.l2 * float(w[:-1] @ w[:-1])
        self.value = value
        grad = self.w_tar * (gt @ self.x_tar) + self.w_non * (gn @ self.x_non)
        if self.l2:
            grad[:-1] += self.l2 * w[:-1]
        self.grad = grad
        self._h = (ht, hn)
        self._hess: F64 | None = None
        self._at = w.copy()

    def _separated(self, w: F64) -> bool:
        return bool(np.all(self.x_tar @ w + self.tau > 0.0)
                    and np.all(self.x_non @ w + self.tau < 0.0))

    def hessian(self, w: F64) -> F64:
        """The exact Hessian ``X' diag(weight * C'') X`` (d x d), in row chunks."""
        self._update(w)
        if self._hess is None:
            d = self.x_tar.shape[1]
            hess = np.zeros((d, d))
            for x, h, wt in ((self.x_tar, self._h[0], self.w_tar),
                             (self.x_non, self._h[1], self.w_non)):
                for i in range(0, x.shape[0], _CHUNK):
                    xs = x[i:i + _CHUNK]
                    hess += wt * ((xs * h[i:i + _CHUNK, None]).T @ xs)
            if self.l2:
                hess[np.arange(d - 1), np.arange(d - 1)] += self.l2
            self._hess = hess
        return self._hess

    def fun(self, w: F64) -> float:
        self._update(w)
        return self.value

    def jac(self, w: F64) -> F64:
        self._update(w)
        return self.grad

    def hessp(self, w: F64, v: F64) -> F64:
        return self.hessian(w) @ v


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
                                             float(np.linalg.norm(prob.jac(w0))), 1.0)})
    w = np.asarray(res.x, dtype=np.float64)
    value = prob.fun(w)
    gnorm = float(np.linalg.norm(prob.jac(w)))
    converged = bool(res.success) or gnorm <= gtol
    message = str(res.message)
    if not converged and res.nit < max_iter and gnorm <= 1e-7:
        # the trust region collapsed because no step can lower the objective in floating point
        converged = True
        message = f"converged to machine precision (gradient norm {gnorm:.3g})"
    if not l2 and prob._separated(w):
        converged = False
        message = ("the fitted model separates the training targets from the non-targets: the "
                   "optimum is at infinity (objective -> 0); parameters are where the run stopped")
    elif not converged and res.nit >= max_iter:
        message = f"not converged after {max_iter} iterations (gradient norm {gnorm:.3g})"
    return LinearFit(params=w, objective=value, initial_objective=initial, converged=converged,
                     n_iter=int(res.nit), message=message, gradient_norm=gnorm)


I64 = NDArray[np.int64]


def _check_multiclass(w: F64, y: I64, prior: F64 | None) -> tuple[F64, I64, F64]:
    w = np.asarray(w, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if w.ndim != 2 or w.shape[1] < 2:
        raise ValueError(f"scores must be an (N, K) matrix with K >= 2, got shape {w.shape}")
    k = w.shape[1]
    if y.shape != (w.shape[0],) or (y.size and (y.min() < 0 or y.max() >= k)):
        raise ValueError(f"labels must be N integers in 0..{k - 1}")
    p = np.full(k, 1.0 / k) if prior is None else np.asarray(prior, dtype=np.float64)
    if p.shape != (k,) or np.any(p < 0) or not math.isclose(p.sum(), 1.0, rel_tol=1e-9):
        raise ValueError(f"prior must be {k} non-negative numbers summing to 1, got {p}")
    counts = np.bincount(y, minlength=k)
    empty = np.flatnonzero((counts == 0) & (p > 0))
    if empty.size:
        raise ValueError(f"classes {empty.tolist()} have prior > 0 but no trials")
    return w, y, p


def _class_trial_weights(y: I64, prior: F64) -> F64:
    counts = np.bincount(y, minlength=prior.shape[0]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_class = np.where(counts > 0, prior / counts, 0.0)
    return per_class[y]


def _entropy_bits(prior: F64) -> float:
    p = prior[prior > 0]
    return float(-(p * np.log2(p)).sum())


@dataclass(frozen=True)
class MulticlassFit:
    """Result of :func:`fit_affine`: ``alpha`` per system, ``beta`` per class (last = 0)."""

    alpha: F64
    beta: F64
    objective: float
    initial_objective: float
    converged: bool
    n_iter: int
    message: str


def fit_affine(systems: list[F64], y: I64, prior: F64 | None = None, *,
               alpha0: F64 | None = None, max_iter: int = 100,
               gtol: float = 1e-10) -> MulticlassFit:
    """Multiclass logistic regression ``w' = sum_m alpha_m w_m + beta`` (MATH.md 11.2).

    Minimizes the prior-weighted Cmxe normalized by ``H(prior)`` (1 = default system) with
    SciPy's trust-region Newton-CG, analytic gradient and Hessian-vector products. ``beta`` of
    the last class is fixed at 0 (the objective is invariant to a common shift). Starting point:
    ``alpha = 1`` for a single system (calibration), ``0`` for fusion, ``beta = 0``.
    """
    if not systems:
        raise ValueError("fit_affine needs at least one score matrix")
    w0, y, p = _check_multiclass(systems[0], y, prior)
    ws = [w0] + [_check_multiclass(w, y, p)[0] for w in systems[1:]]
    if any(w.shape != w0.shape for w in ws):
        raise ValueError("all systems must have the same (N, K) shape")
    n, k = w0.shape
    m = len(ws)
    v = _class_trial_weights(y, p)
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    with np.errstate(divide="ignore"):
        logp = np.log(p)
    norm = _entropy_bits(p) * math.log(2.0)
    cache: dict[str, object] = {}

    def unpack(theta: F64) -> tuple[F64, F64]:
        return theta[:m], np.concatenate([theta[m:], [0.0]])

    def update(theta: F64) -> None:
        if cache.get("theta") is not None and np.array_equal(cache["theta"], theta):
            return
        a, b = unpack(theta)
        z = sum(ai * wi for ai, wi in zip(a, ws, strict=True)) + b + logp
        lse = logsumexp(z, axis=1, keepdims=True)
        post = np.exp(z - lse)
        ll = (z - lse)[np.arange(n), y]
        cache["value"] = float(-(v * ll).sum() / norm)
        r = v[:, None] * (post - onehot) / norm  # dO/dz
        grad = np.concatenate([[float((r * wi).sum()) for wi in ws], r.sum(axis=0)[:-1]])
        cache.update(theta=theta.copy(), post=post, grad=grad)

    def fun(theta: F64) -> float:
        update(theta)
        return cache["value"]  # type: ignore[return-value]

    def jac(theta: F64) -> F64:
        update(theta)
        return cache["grad"]  # type: ignore[return-value]

    def hessp(theta: F64, d: F64) -> F64:
        update(theta)
        post = cache["post"]
        da, db = unpack(d)
        dz = sum(ai * wi for ai, wi in zip(da, ws, strict=True)) + db
        dpost = post * (dz - (post * dz).sum(axis=1, keepdims=True))  # type: ignore[operator]
        r = v[:, None] * dpost / norm
        return np.concatenate([[float((r * wi).sum()) for wi in ws], r.sum(axis=0)[:-1]])

    a0 = np.full(m, 1.0 if m == 1 else 0.0) if alpha0 is None else np.asarray(alpha0, float)
    theta0 = np.concatenate([a0, np.zeros(k - 1)])
    initial = fun(theta0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = optimize.minimize(fun, theta0, jac=jac, hessp=hessp, method="trust-ncg",
                                options={"gtol": gtol, "maxiter": max_iter,
                                         "initial_trust_radius": 1.0})
    theta = np.asarray(res.x, dtype=np.float64)
    value = fun(theta)
    gnorm = float(np.linalg.norm(jac(theta)))
    converged = bool(res.success) or gnorm <= 1e-7
    message = str(res.message) if res.success else (
        f"converged to machine precision (gradient norm {gnorm:.3g})" if converged else
        f"not converged after {res.nit} iterations (gradient norm {gnorm:.3g})")
    a, b = unpack(theta)
    z = sum(ai * wi for ai, wi in zip(a, ws, strict=True)) + b + logp
    if value < 1e-6 and np.all(np.argmax(z, axis=1) == y):
        converged = False
        message = ("the training data are separated by the model: the optimum is at infinity "
                   "(objective -> 0); parameters are where the run stopped")
    return MulticlassFit(alpha=a, beta=b, objective=value, initial_objective=initial,
                         converged=converged, n_iter=int(res.nit), message=message)
