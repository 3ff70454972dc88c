"""ADMM for penalised Gaussian likelihood, ``min_Θ <C, Θ> - log det Θ + pen(Θ)`` (seed 001 §7.3.1, l.2677-2693).

Split ``Θ = X = Z``: the X-step is the prox of Eq 6.4 in closed form by one eigen-decomposition
(Scheinberg et al. 2010): with ``Q Λ Q^T = ρ(Z - U) - C``, ``X = Q diag((λ_i + sqrt(λ_i^2 + 4ρ)) / (2ρ)) Q^T``;
the Z-step is the penalty's prox ``Z = prox_{pen/ρ}(X̂ + U)`` (the text prints ``Y - U``; notes §4);
``U += X̂ - Z``, with the over-relaxed ``X̂ = a X + (1 - a) Z_old`` (Boyd et al. 2011 §3.4.3; ``relax``
``a = 1.6`` by default, measured 1.4-1.7x fewer iterations than the seed's ``a = 1`` on the
benchmark's families; ``a = 1`` is the seed's update). It starts from the diagonal solution and its dual (:func:`_diagonal_start`; the seed starts from
``Z = I``, ``U = 0``, l.2683). The penalty is pluggable: the (weighted)
l1 of :mod:`graphical.penalties` (graphical lasso, Eq 6.5, and the reweighted schemes of Eqs 6.7-6.8)
or the scale-free prior of :mod:`graphical.degree_prior` (Ch 7).

Stopping: when the penalty offers ``dual_project`` (the l1 family), the duality gap of Eq 6.5/6.6,
``gap = P(Θ) - (log det(C + Γ) + p)`` with ``Γ = ρU`` projected onto the dual box (ρU is in
``∂pen(Z)`` after every Z-step, so ``C + ρU`` is the dual iterate), ``<= tol``; otherwise the seed's
rule ``|X - Z|_F < tol`` and ``|Z - Z_old|_F < tol``. The penalty ρ follows residual balancing (Boyd
et al. 2011 §3.4.1) unless ``adaptive_rho=False`` (the seed: fixed ρ = 0.5).

Why its own ADMM rather than :func:`solvers.methods.admm.admm` on a split of
:mod:`solvers.problems.admm_form`: that driver keeps ρ fixed (its quadratic splits cache a Cholesky
factor per ρ, so a fixed ρ is right there) and measures a gap from ``x`` alone; here the X-step costs
one eigen-decomposition whatever ρ is, so residual balancing is free and is what makes the ADMM
competitive with coordinate descent, and the rigorous gap needs the scaled dual ``U`` and the
positive definite cone (``+inf`` outside it), which the flat-vector protocol does not carry. The
bookkeeping (trace, passes, clock, callback, result) is the house :class:`solvers.monitor.Run`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.blas import blas_limit
from solvers.checks import check_count, check_positive, check_tol
from solvers.errors import InputError
from solvers.methods._stopping import stop_reason
from solvers.monitor import Run
from solvers.progress import ProgressFn, report
from solvers.result import SolveResult

from .likelihood import gaussian_nll, logdet_pd


def duality_gap(C: np.ndarray, Theta: np.ndarray, penalty: Any, Gamma: np.ndarray | None = None) -> float:
    """A certified gap of the l1-penalised problem at ``Θ`` (Eqs 6.5/6.6): ``P(Θ) - max_Γ D(Γ)``.

    ``D(Γ) = log det(C + Γ) + p`` over ``|Γ_ij| <= W_ij``; the dual candidates are ``Θ^{-1} - C`` and
    ``Gamma`` (when given), each projected onto the box, so the value bounds ``P(Θ) - P*`` from above
    for any positive definite ``Θ`` whatever solver produced it (``+inf`` when neither dual point is
    positive definite). ``penalty``: a :class:`graphical.penalties.WeightedL1`.
    """
    p = C.shape[0]
    primal = gaussian_nll(C, Theta) + penalty.value(Theta)
    if not np.isfinite(primal):
        return float("inf")
    cands = [np.linalg.inv(Theta) - C] + ([] if Gamma is None else [Gamma])
    dual = max(logdet_pd(C + penalty.dual_project(0.5 * (G + G.T))) for G in cands) + p
    return float(primal - dual)


def _x_step(M: np.ndarray, rho: float) -> tuple[np.ndarray, float]:
    """``argmin_X <C,X> - log det X + (ρ/2)|X - (Z - U)|^2`` with ``M = ρ(Z - U) - C``; also ``log det X``."""
    lam, Q = np.linalg.eigh(M)
    lp = (lam + np.sqrt(lam * lam + 4.0 * rho)) / (2.0 * rho)
    return (Q * lp) @ Q.T, float(np.sum(np.log(lp)))


BALANCE = 2.5
"""Residual balancing's ratio (Boyd et al. 2011 §3.4.1 use 10): ρ doubles or halves when one residual
exceeds the other by this factor. Measured on the benchmark's families (bench_graphical_lasso.py):
2-3 cut the iterations on ER/BA (10 -> 5-6) and the sparse family (27 -> 21) against 10, and left the
ill-conditioned image patches and digits unchanged."""


def _diagonal_start(C: np.ndarray, penalty: Any, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The start ``Z = diag(1/(C_ii + W_ii))`` with, for the l1 family, the dual ``ρU = Γ``,
    ``Γ_ij = clip(-C_ij, ±W_ij)`` off the diagonal and ``Γ_ii = W_ii``: the diagonal precision and its
    subgradient, which is Eq 6.5's exact solution when every ``|C_ij| <= W_ij`` (the screening rule
    of Witten, Friedman and Simon 2011) and otherwise a dual point that is the projection of the
    optimal one's off-support pattern. Measured on the benchmark's families: 5 iterations for 10 on
    ER/BA p = 200 from the seed's ``Z = I, U = 0`` (l.2683), unchanged on the ill-conditioned ones.
    Penalties without a dual box (the scale-free prior) start from ``U = 0``.
    """
    if not hasattr(penalty, "dual_project"):
        return np.diag(1.0 / np.diag(C)), np.zeros_like(C)
    W = penalty.W
    Gamma = penalty.dual_project(-C)
    np.fill_diagonal(Gamma, np.diag(W))
    return np.diag(1.0 / (np.diag(C) + np.diag(W))), Gamma / rho


def penalised_likelihood_admm(
    C: np.ndarray,
    penalty: Any,
    *,
    rho: float = 0.5,
    tol: float = 1e-6,
    max_iter: int = 2000,
    adaptive_rho: bool = True,
    relax: float = 1.6,
    warm_start: SolveResult | None = None,
    callback: Any = None,
    progress: ProgressFn | None = None,
    method: str = "admm",
    blas_threads: int | None = 1,
) -> SolveResult:
    """Minimise ``<C, Θ> - log det Θ + penalty(Θ)`` by ADMM; ``C`` a checked covariance.

    Returns a :class:`SolveResult` whose ``x`` is the sparse iterate ``Z`` when it is positive
    definite (else ``X``), ``fun`` the objective there, and ``extra`` ``X``, ``U``, ``rho`` and the
    final ``gap`` (l1 family). ``warm_start``: a previous result on the same ``C`` (its ``Z``, ``U``
    and ``rho`` start this run; the reweighting loops use it). ``blas_threads``: the BLAS threads
    during the solve (None: leave BLAS alone). One by default: an eigen-decomposition at p <= 500
    gains little from a second thread on a quiet machine and was measured 10-60x slower with two
    threads on the shared 2-core machine (benchmarks/results/graphical-lasso.md).
    """
    with blas_limit(blas_threads, user_api=None):
        return _admm(C, penalty, rho, tol, max_iter, adaptive_rho, relax, warm_start, callback, progress, method)


def _admm(C, penalty, rho, tol, max_iter, adaptive_rho, relax, warm_start, callback, progress, method) -> SolveResult:
    check_tol(tol, positive=True)
    check_count(max_iter, minimum=1)
    rho = check_positive(rho, field="rho")
    if not 0.0 < relax < 2.0:
        raise InputError("relax", f"must be in (0, 2); got {relax!r}")
    p = C.shape[0]
    has_gap = hasattr(penalty, "dual_project")
    if warm_start is not None:
        Z, U, rho = warm_start.x.copy(), warm_start.extra["U"].copy(), float(warm_start.extra["rho"])
        if Z.shape != C.shape:
            raise InputError("warm_start", f"is for p = {Z.shape[0]}; the covariance has p = {p}")
    else:
        Z, U = _diagonal_start(C, penalty, rho)
    run = Run(method, callback=callback, progress=progress)
    converged, message, gap, k = False, f"max_iter ({max_iter}) reached", float("nan"), 0
    X = Z
    for k in range(1, max_iter + 1):
        X, logdet_x = _x_step(rho * (Z - U) - C, rho)
        run.passes += 1
        Z_old = Z
        Xh = relax * X + (1.0 - relax) * Z_old
        Z = penalty.prox(Xh + U, 1.0 / rho)
        U += Xh - Z
        r = float(np.linalg.norm(X - Z))
        dz = float(np.linalg.norm(Z - Z_old))
        fx = float(np.vdot(C, X)) - logdet_x + penalty.value(X)
        extra = {"primal_residual": r, "dual_residual": rho * dz, "rho": rho}
        if has_gap:
            fz = gaussian_nll(C, Z) + penalty.value(Z)
            dual = logdet_pd(C + penalty.dual_project(rho * U)) + p
            gap = min(fx, fz) - dual
            extra["gap"] = gap
            done = gap <= tol
        else:
            done = r < tol and dz < tol
        run.record(fx, **extra)
        report(progress, k / max_iter)
        converged = done
        why = ("converged: " + ("duality gap <= tol" if has_gap else "|X - Z| and |dZ| < tol")) if done else None
        why = why or stop_reason(run, Z, fx)
        if why:
            message = why
            break
        if adaptive_rho:
            s = rho * dz
            if r > BALANCE * s:
                rho *= 2.0
                U /= 2.0
            elif s > BALANCE * r:
                rho /= 2.0
                U *= 2.0
    run.done(converged)
    Theta = Z if np.isfinite(logdet_pd(Z)) else X
    fun = gaussian_nll(C, Theta) + penalty.value(Theta)
    return run.result(Theta, fun, k, converged, message, X=X, U=U, rho=rho, gap=gap)
