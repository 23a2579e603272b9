"""Prior-weighted logistic regression, binary and multiclass, by one trust-region Newton driver.

numpy/scipy only.

*Binary* (:func:`fit_linear`) minimizes the normalized objective of docs/math.md 10.2 / 9.4,

    O(w) = [pi/|T| sum_T C1(x_t) + (1-pi)/|N| sum_N C2(x_t)] / O_default,   x = X w + logit(pi)

for any Beta-family scoring rule. ``X`` holds one row per trial: the features of an affine model
(scores, a column of ones for the offset, quality products). The llr ``X w`` excludes the prior
log-odds, which enter the objective only.

*Multiclass* (:func:`fit_affine`) minimizes the prior-weighted multiclass cross-entropy of
``w' = sum_m alpha_m w_m + beta`` normalized by ``H(prior)`` (docs/math.md 11.2).

Both are small-dimensional smooth convex problems with an exact Hessian that costs one pass over
the trials. :func:`minimize_newton` runs SciPy's ``trust-ncg`` (Steihaug CG inside a trust region,
as BOSARIS' TRNCG; [BdV11] section 3.3) and then *finishes with exact Newton steps accepted on
the gradient norm*: near the optimum the objective no longer decreases in floating point (its
changes are below one ulp of the value), so a trust-region method that accepts steps on the
objective decrease stalls with the gradient at 1e-9..1e-11 and the parameters 1e-8..1e-6 away
from the optimum. Newton's method converges quadratically there, and the gradient is still
computed accurately, so the finish reaches the optimum to rounding error.

If the fitted model separates the training classes, the optimum is at infinity: the result says
so (``converged = False``) instead of pretending.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from scipy import special
from scipy.special import logsumexp

from scoreframe.kernels.multiclass import check_multiclass, prior_entropy
from scoreframe.kernels.psr import BetaRule

__all__ = ["LinearFit", "Minimum", "MulticlassFit", "SmoothProblem", "fit_affine", "fit_linear",
           "minimize_newton"]

_CHUNK = 1 << 20  # rows per block when forming a Hessian (bounded temporary memory)
_NEWTON_STEPS = 20  # cap on the Newton finish (quadratic convergence needs 2-4)

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


# --- the shared driver -------------------------------------------------------------------------
class SmoothProblem(Protocol):
    """A smooth objective with its gradient and exact Hessian (small dimension)."""

    def fun(self, x: F64) -> float:
        """The objective at ``x``."""
        ...

    def jac(self, x: F64) -> F64:
        """The gradient at ``x``."""
        ...

    def hessian(self, x: F64) -> F64:
        """The exact ``d x d`` Hessian at ``x``."""
        ...


@dataclass(frozen=True)
class Minimum:
    """Result of :func:`minimize_newton`."""

    x: F64
    objective: float
    initial_objective: float
    converged: bool
    n_iter: int
    n_newton: int
    gradient_norm: float
    message: str


def _newton_finish(problem: SmoothProblem, x: F64) -> tuple[F64, int]:
    """Exact Newton steps from ``x`` while they lower the gradient norm."""
    from scipy import linalg  # ~0.3 s to import: loaded on first use

    g = problem.jac(x)
    gnorm = float(np.linalg.norm(g))
    n = 0
    for _ in range(_NEWTON_STEPS):
        if gnorm == 0.0:
            break
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", linalg.LinAlgWarning)
                step = linalg.solve(problem.hessian(x), -g, assume_a="sym")
        except (linalg.LinAlgError, linalg.LinAlgWarning, ValueError):
            break  # singular or ill-conditioned: Newton steps would not be reliable
        if not np.all(np.isfinite(step)):
            break
        x_new = x + step
        if np.array_equal(x_new, x):
            break
        g_new = problem.jac(x_new)
        gnorm_new = float(np.linalg.norm(g_new))
        if not gnorm_new < gnorm:
            break
        x, g, gnorm = x_new, g_new, gnorm_new
        n += 1
        if np.max(np.abs(step)) <= 1e-10 * max(1.0, float(np.max(np.abs(x)))):
            break  # quadratic convergence: the next step would be ~1e-20 relative, rounding
    return x, n


def minimize_newton(problem: SmoothProblem, x0: F64, *, max_iter: int = 100,
                    gtol: float = 1e-10, finish: bool = True,
                    finish_below: float = 1e-4) -> Minimum:
    """Minimize a smooth convex objective: trust-region Newton-CG, then exact Newton steps.

    Parameters
    ----------
    problem : SmoothProblem
        ``fun``, ``jac`` and ``hessian`` (the Hessian is formed once per iterate; every CG
        product reuses it).
    x0 : ndarray
        Starting point.
    max_iter : int
        Cap on trust-region iterations (the run always ends).
    gtol : float
        Gradient-norm tolerance of the trust-region phase.
    finish : bool
        Polish with Newton steps accepted on the gradient norm (see the module docstring).
    finish_below : float
        Only finish from a point whose gradient norm is below this (near the optimum, where
        Newton's method converges quadratically; never for a diverging, separable run).

    Returns
    -------
    Minimum
        ``converged`` is True when the gradient norm reached ``gtol``, or when the trust-region
        phase ended normally and the Newton finish stopped at the floating-point floor.

    Examples
    --------
    >>> class Quartic:
    ...     def fun(self, x): return float((x[0] - 1) ** 4 + (x[0] - 1) ** 2 + x[1] ** 2)
    ...     def jac(self, x): return np.array([4 * (x[0] - 1) ** 3 + 2 * (x[0] - 1), 2 * x[1]])
    ...     def hessian(self, x): return np.diag([12 * (x[0] - 1) ** 2 + 2, 2.0])
    >>> m = minimize_newton(Quartic(), np.array([5.0, 3.0]))
    >>> m.converged, m.x.tolist()
    (True, [1.0, 0.0])
    """
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    from scipy import optimize  # ~0.5 s to import: loaded on first use

    x0 = np.asarray(x0, dtype=np.float64)
    initial = problem.fun(x0)
    radius = max(float(np.linalg.norm(problem.jac(x0))), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = optimize.minimize(problem.fun, x0, jac=problem.jac,
                                hessp=lambda x, v: problem.hessian(x) @ v, method="trust-ncg",
                                options={"gtol": gtol, "maxiter": max_iter,
                                         "initial_trust_radius": radius})
    x = np.asarray(res.x, dtype=np.float64)
    n_iter = int(res.nit)
    gnorm = float(np.linalg.norm(problem.jac(x)))
    n_newton = 0
    if finish and gnorm < finish_below and n_iter < max_iter:  # not a diverging run
        with np.errstate(all="ignore"):
            x, n_newton = _newton_finish(problem, x)
        gnorm = float(np.linalg.norm(problem.jac(x)))
    value = problem.fun(x)
    stalled = n_iter < max_iter and gnorm <= 1e-7  # the floating-point floor, not the cap
    converged = gnorm <= gtol or bool(res.success) or stalled
    if gnorm <= gtol or res.success:
        message = f"converged (gradient norm {gnorm:.3g}, {n_newton} Newton steps)"
    elif stalled:
        message = (f"converged to machine precision (gradient norm {gnorm:.3g}, "
                   f"{n_newton} Newton steps)")
    elif n_iter >= max_iter:
        message = f"not converged after {max_iter} iterations (gradient norm {gnorm:.3g})"
    else:
        message = f"{res.message} (gradient norm {gnorm:.3g})"
    return Minimum(x=x, objective=value, initial_objective=initial, converged=converged,
                   n_iter=n_iter, n_newton=n_newton, gradient_norm=gnorm, message=message)


# --- binary ------------------------------------------------------------------------------------
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
    n_newton: int = 0


class _Problem:
    """The binary objective, its gradient and Hessian, cached at the last point."""

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
            g = p - 1.0 if target else p  # absolute error ~1 ulp: enough for the optimum
            return total, g, h
        cost = rule.cost_tar(x) if target else rule.cost_non(x)
        g, h = rule.derivatives(x, target=target)
        return float(np.sum(cost)), g, h

    def _update(self, w: F64) -> None:
        if self._at is not None and np.array_equal(w, self._at):
            return
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

    def separated(self, w: F64) -> bool:
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
        return float(self.value)

    def jac(self, w: F64) -> F64:
        self._update(w)
        grad: F64 = self.grad
        return grad


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
    prob = _Problem(np.ascontiguousarray(x_tar, dtype=np.float64),
                    np.ascontiguousarray(x_non, dtype=np.float64), p_target, rule, l2)
    m = minimize_newton(prob, np.asarray(w0, dtype=np.float64), max_iter=max_iter, gtol=gtol)
    converged, message = m.converged, m.message
    if not l2 and prob.separated(m.x):
        converged = False
        message = ("the fitted model separates the training targets from the non-targets: the "
                   "optimum is at infinity (objective -> 0); parameters are where the run stopped")
    return LinearFit(params=m.x, objective=m.objective, initial_objective=m.initial_objective,
                     converged=converged, n_iter=m.n_iter, message=message,
                     gradient_norm=m.gradient_norm, n_newton=m.n_newton)


# --- multiclass --------------------------------------------------------------------------------
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
    gradient_norm: float = math.nan
    n_newton: int = 0


class _MulticlassProblem:
    """Normalized prior-weighted Cmxe of ``sum_m alpha_m w_m + beta``, with exact derivatives.

    Parameters ``theta = (alpha_1..alpha_M, beta_1..beta_{K-1})`` (``beta_K = 0``).
    """

    def __init__(self, ws: list[F64], y: I64, p: F64) -> None:
        n, k = ws[0].shape
        self.ws, self.y, self.m, self.k = ws, y, len(ws), k
        counts = np.bincount(y, minlength=k).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_class = np.where(counts > 0, p / counts, 0.0)
        norm = prior_entropy(p) * math.log(2.0)
        self.v = per_class[y] / norm  # trial weights, normalization folded in
        self.rows = np.arange(n)
        with np.errstate(divide="ignore"):
            self.logp = np.log(p)
        self._at: F64 | None = None

    def unpack(self, theta: F64) -> tuple[F64, F64]:
        return theta[:self.m], np.concatenate([theta[self.m:], [0.0]])

    def logits(self, theta: F64) -> F64:
        a, b = self.unpack(theta)
        z = a[0] * self.ws[0]
        for ai, wi in zip(a[1:], self.ws[1:], strict=True):
            z = z + ai * wi
        out: F64 = z + b + self.logp
        return out

    def _update(self, theta: F64) -> None:
        if self._at is not None and np.array_equal(theta, self._at):
            return
        z = self.logits(theta)
        logpost = z - logsumexp(z, axis=1, keepdims=True)
        post = np.exp(logpost)
        self.value = float(-(self.v * logpost[self.rows, self.y]).sum())
        # dO/dz = v (post - onehot); at the true class -(sum of the other posteriors), which
        # keeps its relative accuracy when the posterior of the true class is close to 1
        r = post.copy()
        r[self.rows, self.y] = 0.0
        r[self.rows, self.y] = -r.sum(axis=1)
        r *= self.v[:, None]
        self.grad = np.concatenate([[float((r * wi).sum()) for wi in self.ws],
                                    r.sum(axis=0)[:-1]])
        self.post = post
        self._hess: F64 | None = None
        self._at = theta.copy()

    def fun(self, theta: F64) -> float:
        self._update(theta)
        return self.value

    def jac(self, theta: F64) -> F64:
        self._update(theta)
        return self.grad

    def hessian(self, theta: F64) -> F64:
        """``sum_t v_t J_t' (diag(p_t) - p_t p_t') J_t`` with ``J_t = dz_t/dtheta``."""
        self._update(theta)
        if self._hess is None:
            m, k = self.m, self.k
            post, v = self.post, self.v
            vp = v[:, None] * post
            means = [(post * wi).sum(axis=1) for wi in self.ws]  # E_p[w_m] per trial
            hess = np.zeros((m + k - 1, m + k - 1))
            bb = np.diag(vp.sum(axis=0)) - vp.T @ post
            hess[m:, m:] = bb[:-1, :-1]
            for i, wi in enumerate(self.ws):
                hess[i, m:] = (vp * (wi - means[i][:, None])).sum(axis=0)[:-1]
                hess[m:, i] = hess[i, m:]
                for j in range(i, m):
                    wj = self.ws[j]
                    val = float((vp * wi * wj).sum() - (v * means[i] * means[j]).sum())
                    hess[i, j] = hess[j, i] = val
            self._hess = hess
        return self._hess


def fit_affine(systems: list[F64], y: I64, prior: F64 | None = None, *,
               alpha0: F64 | None = None, max_iter: int = 100,
               gtol: float = 1e-10) -> MulticlassFit:
    """Multiclass logistic regression ``w' = sum_m alpha_m w_m + beta`` (docs/math.md 11.2).

    Minimizes the prior-weighted Cmxe normalized by ``H(prior)`` (1 = default system) with
    :func:`minimize_newton` (trust-region Newton-CG, then exact Newton steps). ``beta`` of the
    last class is fixed at 0 (the objective is invariant to a common shift). Starting point:
    ``alpha = 1`` for a single system (calibration), ``0`` for fusion, ``beta = 0``.

    Examples
    --------
    >>> w = np.array([[2.0, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1],
    ...               [0, 0, 2], [-1, 0, 1], [1, 0, 0]])
    >>> fit = fit_affine([w], np.repeat([0, 1, 2], 3))
    >>> fit.converged, round(float(fit.alpha[0]), 5), fit.beta.round(5).tolist()
    (True, 0.99595, [0.12014, 0.06543, 0.0])
    """
    if not systems:
        raise ValueError("fit_affine needs at least one score matrix")
    w0, y, p = check_multiclass(systems[0], y, prior)
    ws = [w0] + [check_multiclass(w, y, p)[0] for w in systems[1:]]
    if any(w.shape != w0.shape for w in ws):
        raise ValueError("all systems must have the same (N, K) shape")
    prob = _MulticlassProblem(ws, y, p)
    m = len(ws)
    a0 = np.full(m, 1.0 if m == 1 else 0.0) if alpha0 is None else np.asarray(alpha0, float)
    theta0 = np.concatenate([a0, np.zeros(w0.shape[1] - 1)])
    res = minimize_newton(prob, theta0, max_iter=max_iter, gtol=gtol)
    a, b = prob.unpack(res.x)
    converged, message = res.converged, res.message
    if res.objective < 1e-6 and np.all(np.argmax(prob.logits(res.x), axis=1) == y):
        converged = False
        message = ("the training data are separated by the model: the optimum is at infinity "
                   "(objective -> 0); parameters are where the run stopped")
    return MulticlassFit(alpha=a, beta=b, objective=res.objective,
                         initial_objective=res.initial_objective, converged=converged,
                         n_iter=res.n_iter, message=message, gradient_norm=res.gradient_norm,
                         n_newton=res.n_newton)
