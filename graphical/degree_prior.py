"""The convex scale-free prior of seed 001 Ch 7 (Defazio & Caetano 2012): Ω, its prox, its priors.

A degree prior ``F(E) = Σ_v h(d_E(v))`` with a *tractable* ``h`` (non-decreasing, concave; Prop 7.1)
is submodular, and its convex envelope on the l∞ ball is the Lovász extension (Prop 7.2, l.2641)

    Ω(X) = Σ_i Σ_{k=0}^{p-2} (h(k+1) - h(k)) |X_{i,(k)}|,

each row's off-diagonal entries sorted by decreasing ``|.|``: a sum of OWL norms, one per row
(:mod:`graphical.owl`). The priors of §7.4: the ERG log ``h(i) = log(i + ε)``, its smoothed form
``log(i + ε) + βi`` and the square root ``sqrt(i + 1) - 1 + βi``, each shifted so ``h(0) = 0``.

The prox ``argmin_X s Ω(X) + ½|X - Z|_F^2`` over symmetric X is computed by dual decomposition
(Alg 7.1, l.2699-2717): the symmetry constraint is dualised with an antisymmetric ``V``, each row is
then the OWL prox of Alg 7.2 at ``Z_i - V_i``, and ``V`` does gradient ascent ``V += η(X - X^T)``
(η = 0.9) until ``|X - X^T|_F < tol``; then ``X = ½(X + X^T)`` and entries below 1e-15 are zeroed.
:func:`prox_subgradient` is the subgradient baseline of Fig 7.3.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.checks import check_choice, check_count, check_positive
from solvers.errors import InputError
from solvers.result import SolveResult

from .admm import penalised_likelihood_admm
from .checks import as_covariance, as_degree_weights
from .owl import owl_norm_rows, owl_prox_rows


def degree_function(kind: str, n: int, *, eps: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """``h(0..n-1)`` of a §7.4 prior, shifted so ``h(0) = 0``: ``"log"`` (ERG, ``log(i + ε)``),
    ``"smoothed_log"`` (``log(i + ε) + βi``) or ``"sqrt"`` (``sqrt(i + 1) - 1 + βi``)."""
    check_choice(kind, ("log", "smoothed_log", "sqrt"), field="kind")
    eps = check_positive(eps, field="eps")
    if not beta >= 0:
        raise InputError("beta", f"must be >= 0; got {beta!r}")
    i = np.arange(n, dtype=float)
    if kind == "sqrt":
        return np.sqrt(i + 1.0) - 1.0 + beta * i
    return np.log(i + eps) - np.log(eps) + (beta * i if kind == "smoothed_log" else 0.0)


def lovasz_omega(X: np.ndarray, c: np.ndarray) -> float:
    """Prop 7.2: ``Ω(X) = Σ_i Σ_k c_k |X_{i,(k)}|`` with the increments ``c_k = h(k+1) - h(k)``."""
    return float(np.sum(owl_norm_rows(X, c)))


def prox_dual_decomposition(
    Z: np.ndarray,
    c: np.ndarray,
    s: float,
    *,
    V: np.ndarray | None = None,
    eta: float = 0.9,
    tol: float = 1e-6,
    max_iter: int = 10000,
    history: list[float] | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Alg 7.1: ``argmin_X s Ω(X) + ½|X - Z|_F^2`` over symmetric X, for a symmetric ``Z``.

    ``V``: a starting antisymmetric dual (warm start; zero by default). Returns ``(X, V, iterations)``;
    ``history`` (when given) receives ``|X - X^T|_F`` after each iteration.
    """
    V = np.zeros_like(Z) if V is None else V.copy()
    X = Z
    k = 0
    while k < max_iter:
        k += 1
        X = owl_prox_rows(Z - V, c, s)
        A = X - X.T
        asym = float(np.linalg.norm(A))
        if history is not None:
            history.append(asym)
        if asym < tol:
            break
        V += eta * A
    X = 0.5 * (X + X.T)
    X[np.abs(X) < 1e-15] = 0.0
    return X, V, k


def prox_subgradient(
    Z: np.ndarray, c: np.ndarray, s: float, *, n_iter: int = 1000, history: list[float] | None = None
) -> np.ndarray:
    """The subgradient baseline of Fig 7.3 for the same prox problem (1-strongly convex): steps
    ``1/(k+1)`` along a symmetric subgradient ``s sym(G) + X - Z`` (``G_ij = sign(X_ij) c_rank_i(j)``).

    ``history`` receives the prox objective after each step. Slow (O(log k / k)), as the seed says.
    """
    p = Z.shape[0]
    off = ~np.eye(p, dtype=bool)
    X = Z.copy()
    cc = np.concatenate([c[: p - 1], [0.0]])  # the diagonal sorts last (set to -1 below): weight 0
    rows = np.arange(p)[:, None]
    for k in range(1, n_iter + 1):
        A = np.where(off, np.abs(X), -1.0)
        rank = np.empty((p, p), dtype=np.int64)
        rank[rows, np.argsort(-A, axis=1, kind="stable")] = np.arange(p)
        G = np.sign(X) * cc[rank] * off
        g = s * 0.5 * (G + G.T) + (X - Z)
        g[~off] = 0.0
        X = X - g / (k + 1.0)
        if history is not None:
            history.append(prox_objective(X, Z, c, s))
    return X


def prox_objective(X: np.ndarray, Z: np.ndarray, c: np.ndarray, s: float) -> float:
    """``s Ω(X) + ½|X - Z|_F^2`` (the prox problem Alg 7.1 solves)."""
    return s * lovasz_omega(X, c) + 0.5 * float(np.sum((X - Z) ** 2))


class ScaleFreePrior:
    """``α Ω(X)`` as an ADMM penalty (:func:`graphical.admm.penalised_likelihood_admm`).

    ``h``: a §7.4 kind (``"log"``, ``"smoothed_log"``, ``"sqrt"``; with ``eps``, ``beta``) or the
    values ``h(0), h(1), ..., h(p-1)`` of a tractable degree function (checked: non-decreasing,
    concave). The prox warm-starts the dual decomposition from the previous call's ``V`` (rescaled to
    the new step), which is what makes one prox per ADMM iteration cheap.
    """

    def __init__(
        self,
        alpha: float,
        h: Any,
        p: int,
        *,
        eps: float = 1.0,
        beta: float = 0.0,
        prox_tol: float = 1e-6,
        prox_max_iter: int = 10000,
    ) -> None:
        if not (np.isfinite(alpha) and alpha >= 0):
            raise InputError("alpha", f"must be finite and >= 0; got {alpha!r}")
        values = degree_function(h, p, eps=eps, beta=beta) if isinstance(h, str) else h
        c = as_degree_weights(values, field="prior")
        if c.size < p - 1:
            raise InputError("prior", f"needs h(0..{p - 1}) for p = {p} nodes; got {c.size + 1} values")
        self.alpha = float(alpha)
        self.c = c[: p - 1]
        self.prox_tol = check_positive(prox_tol, field="prox_tol")
        self.prox_max_iter = check_count(prox_max_iter, field="prox_max_iter", minimum=1)
        self._V: np.ndarray | None = None
        self._s = 1.0
        #: dual-decomposition iterations of each prox call (for the reproduction's cost accounting)
        self.prox_iterations: list[int] = []

    def value(self, X: np.ndarray) -> float:
        return self.alpha * lovasz_omega(X, self.c)

    def prox(self, V: np.ndarray, t: float) -> np.ndarray:
        s = self.alpha * t
        V0 = None if self._V is None else self._V * (s / self._s)
        X, self._V, k = prox_dual_decomposition(V, self.c, s, V=V0, tol=self.prox_tol, max_iter=self.prox_max_iter)
        self._s = s
        self.prox_iterations.append(k)
        return X


def scale_free_precision(
    covariance: Any, alpha: float, prior: Any = "sqrt", *, eps: float = 1.0, beta: float = 0.0, **options: Any
) -> SolveResult:
    """``min_X <X, C> - log det X + α Ω(X)`` (§7.3) by the ADMM of §7.3.1 with the Alg 7.1 prox.

    ``prior``: as :class:`ScaleFreePrior`'s ``h``. ``options``: the ADMM's; ``tol`` is the seed's
    residual rule (``|X - Z|_F`` and ``|Z - Z_old|_F`` below it; 1e-4 in the runtime row, §7.5.4).
    ``result.extra["prox_iterations"]`` lists the dual-decomposition iterations of each prox.
    """
    C = as_covariance(covariance)
    pen = ScaleFreePrior(alpha, prior, C.shape[0], eps=eps, beta=beta)
    res = penalised_likelihood_admm(C, pen, method="scale_free_prior", **options)
    res.extra["prox_iterations"] = pen.prox_iterations
    return res
