"""Prior-weighted proper scoring rules of the Beta family ([BD13]; docs/math.md section 9).

numpy/scipy only. A rule is ``Beta(alpha, beta)`` in Brümmer's convention (logarithmic = (1, 1),
Brier = (2, 2), boosting = (1/2, 1/2), asymmetric = (2, 1)). Costs are functions of the posterior
log-odds ``x = llr + logit(p_target)``; first and second derivatives in ``x`` are analytic, so the
same rule is an evaluation metric and a training objective for the optimizers of
:mod:`scoreframe.kernels.logreg`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

__all__ = ["RULES", "BetaRule", "from_buja", "psr_beta", "psr_objective"]

F64 = NDArray[np.float64]

#: Named rules: ``name -> (alpha, beta)`` in Brümmer's convention (docs/math.md 9.2-9.3).
RULES: dict[str, tuple[float, float]] = {
    "log": (1.0, 1.0),
    "brier": (2.0, 2.0),
    "boost": (0.5, 0.5),
    "asym": (2.0, 1.0),
}


def _log_sig(x: F64) -> F64:
    return -np.logaddexp(0.0, -x)


@dataclass(frozen=True)
class BetaRule:
    """The proper scoring rule whose threshold weighting is ``Beta(alpha, beta)``.

    ``cost_tar(x)`` and ``cost_non(x)`` are ``C(q, H1)`` and ``C(q, H2)`` at ``q = sigmoid(x)``
    (docs/math.md 9.2, with the ``1/B(alpha, beta)`` factor), ``x`` the posterior log-odds.
    """

    alpha: float
    beta: float

    def __post_init__(self) -> None:
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"psr_beta: {name} must be a finite number > 0, got {v!r}")

    @property
    def name(self) -> str:
        """The rule's name (``log``, ``brier``, ``boost``, ``asym``) or ``beta(a,b)``."""
        for k, ab in RULES.items():
            if ab == (self.alpha, self.beta):
                return k
        return f"beta({self.alpha:g},{self.beta:g})"

    @property
    def _log_b(self) -> float:
        return float(special.betaln(self.alpha, self.beta))

    # --- costs -----------------------------------------------------------------------------
    def cost_tar(self, x: ArrayLike) -> F64:
        """Cost of a target trial, ``C(sigmoid(x), H1)``."""
        x = np.asarray(x, dtype=np.float64)
        a, b = self.alpha, self.beta
        if (a, b) == (1.0, 1.0):
            cost: F64 = np.logaddexp(0.0, -x)
            return cost
        if (a, b) == (0.5, 0.5):
            return (2.0 / np.pi) * np.exp(-0.5 * x)
        if a > 1.0:
            # 1 - I_q(a-1, b) = I_{1-q}(b, a-1), computed from 1-q = sigmoid(-x) without cancelling
            cost = (a + b - 1.0) / (a - 1.0) * special.betainc(b, a - 1.0, special.expit(-x))
            return cost
        if a < 1.0:
            # B_u(b, a-1) = ((a+b-1)/(a-1)) B_u(b, a) - u^b q^(a-1)/(a-1), u = 1-q (DLMF 8.17)
            log_q, log_u = _log_sig(x), _log_sig(-x)
            cost = (a + b - 1.0) / (a - 1.0) * special.betainc(b, a, np.exp(log_u)) \
                + np.exp(b * log_u + (a - 1.0) * log_q - self._log_b) / (1.0 - a)
            return cost
        return b * _log_tail(x, b)

    def cost_non(self, x: ArrayLike) -> F64:
        """Cost of a non-target trial, ``C(sigmoid(x), H2)``."""
        # symmetry: C_{a,b}(q, H2) = C_{b,a}(1-q, H1)
        return BetaRule(self.beta, self.alpha).cost_tar(-np.asarray(x, dtype=np.float64))

    # --- derivatives in x --------------------------------------------------------------------
    def _power(self, x: F64, m: float, n: float) -> F64:
        """``sigmoid(x)^m sigmoid(-x)^n / B(alpha, beta)``, in the log domain."""
        with np.errstate(invalid="ignore"):
            return np.exp(m * _log_sig(x) + n * _log_sig(-x) - self._log_b)

    def derivatives(self, x: ArrayLike, *, target: bool) -> tuple[F64, F64]:
        """First and second derivatives of the cost in ``x`` (for targets or non-targets)."""
        x = np.asarray(x, dtype=np.float64)
        a, b = self.alpha, self.beta
        sp, sn = special.expit(x), special.expit(-x)
        if target:
            g = -self._power(x, a - 1.0, b)
            h = g * ((a - 1.0) * sn - b * sp)
        else:
            g = self._power(x, a, b - 1.0)
            h = g * (a * sn - (b - 1.0) * sp)
        return g, h

    def reference(self, p_target: float) -> float:
        """Objective of the default system (llr = 0) at prior ``p_target``: the normalizer."""
        tau = math.log(p_target) - math.log1p(-p_target)
        return float(p_target * self.cost_tar(tau) + (1.0 - p_target) * self.cost_non(tau))


def _log_tail(x: F64, b: float) -> F64:
    """``integral_q^1 (1-c)^(b-1)/c dc`` at ``q = sigmoid(x)`` (the ``alpha = 1`` rules)."""
    m = b - 1.0
    u = special.expit(-x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        near_one = np.power(u, b) / b * special.hyp2f1(b, 1.0, b + 1.0, u)  # accurate for u <= 1/2
        half = 0.5**b / b * special.hyp2f1(b, 1.0, b + 1.0, 0.5)
        k = np.arange(1, 80, dtype=np.float64)
        coef = special.binom(m, k) * (-1.0) ** k / k
        q = np.minimum(special.expit(x), 0.5)
        series = np.polynomial.polynomial.polyval(q, np.concatenate([[0.0], coef]))
        series_half = float(np.polynomial.polynomial.polyval(0.5, np.concatenate([[0.0], coef])))
        small_q = -math.log(2.0) - _log_sig(x) + series_half - series + half
    tail: F64 = np.where(u <= 0.5, near_one, small_q)
    return tail


def psr_beta(alpha: float | str, beta: float | None = None) -> BetaRule:
    """A Beta-family proper scoring rule, by name or by ``(alpha, beta)`` (Brümmer's convention).

    Parameters
    ----------
    alpha : float or str
        ``alpha`` (left-tail weight), or a rule name: ``log``, ``brier``, ``boost``, ``asym``.
    beta : float, optional
        ``beta`` (right-tail weight); required when ``alpha`` is a number.

    Examples
    --------
    >>> rule = psr_beta("brier")
    >>> (rule.alpha, rule.beta)
    (2.0, 2.0)
    >>> round(float(rule.cost_tar(0.0)), 6)   # 3 (1 - q)^2 at q = 1/2
    0.75
    """
    if isinstance(alpha, str):
        if alpha not in RULES:
            raise ValueError(f"unknown scoring rule {alpha!r}: expected one of {sorted(RULES)}")
        if beta is not None:
            raise ValueError("psr_beta: give a rule name or (alpha, beta), not both")
        return BetaRule(*RULES[alpha])
    if beta is None:
        raise ValueError("psr_beta: beta is required with a numeric alpha")
    return BetaRule(float(alpha), float(beta))


def from_buja(a: float, b: float) -> BetaRule:
    """The rule that Buja et al. (and R's ``scoring::betafam``) call ``(a, b)``: ``(a+1, b+1)``.

    >>> from_buja(0, 0).name
    'log'
    """
    return BetaRule(float(a) + 1.0, float(b) + 1.0)


def psr_objective(tar: F64, non: F64, p_target: float, rule: BetaRule, *,
                  normalize: bool = False) -> float:
    """Prior-weighted objective ``pi mean_T C(q,H1) + (1-pi) mean_N C(q,H2)`` (docs/math.md 9.4).

    ``tar``/``non`` are llrs; ``q = sigmoid(llr + logit(p_target))``. With ``normalize`` the value
    is divided by the default system's (1 = useless; for the log rule at 1/2 it is Cllr).
    """
    tau = math.log(p_target) - math.log1p(-p_target)
    value = float(p_target * np.mean(rule.cost_tar(tar + tau))
                  + (1.0 - p_target) * np.mean(rule.cost_non(non + tau)))
    return value / rule.reference(p_target) if normalize else value
