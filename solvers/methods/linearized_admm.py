"""Linearized ADMM on the saddle form: ``min f(x) + g(A x)`` with ``A = K^T`` (Parikh & Boyd 2014 section 4.4.2).

    x+ = prox_{mu f}(x - (mu/lam) A^T (A x - z + u))
    z+ = prox_{lam g}(A x+ + u)
    u+ = u + A x+ - z+

with ``0 < mu <= lam / |A|^2`` (``|A|`` by power iteration). The x-step needs only ``prox f`` and
products with ``A`` (no linear solve, unlike ``admm``'s x-step); the z-step uses the prox of ``g``
through its conjugate, Moreau's identity ``prox_{lam g}(w) = w - lam prox_{g*/lam}(w/lam)``, so any
:class:`~solvers.problems.saddle_point.SaddlePoint` applies (ERM, generalised lasso, RPCA, basis
pursuit). Stopping: the problem's ``duality_gap <= tol`` when offered, else the primal residual
``|A x - z|`` and the dual residual ``|A^T (z - z_old)| / lam`` both ``<= tol max(1, |A x|)``. One pass =
one product with ``A`` and one with ``A^T``.
"""

from __future__ import annotations

from typing import Unpack

import numpy as np

from ..checks import check_count, check_positive
from ..errors import InputError
from ..monitor import Run, Stop
from ..problem import offers, start_point
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop, splitting_columns


@register("linearized_admm", needs=("saddle_point",), tol=1e-8, max_iter=10000)
def linearized_admm(
    problem, x0=None, *, lam: float = 1.0, mu: float | None = None, check_every: int = 1, **stop: Unpack[Stop]
) -> SolveResult:
    """Linearized ADMM (Parikh & Boyd 4.4.2): prox of f and of g, products with A; ``mu <= lam/|A|^2``.

    Options: ``lam`` (> 0), ``mu`` (default ``lam/|A|^2``), ``check_every``.
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    lam = check_positive(lam, field="lam")
    sad = problem.saddle_point()
    norm2 = sad.norm**2
    mu = lam / norm2 if mu is None else check_positive(mu, field="mu")
    if mu > lam / norm2 * (1 + 1e-9):
        raise InputError("mu", f"must be <= lam/|A|^2 = {lam / norm2:.4g}; got {mu!r}")
    g = sad.g
    has_gap = offers(problem, "duality_gap")
    run = Run("linearized_admm", **stop)
    x = np.array(start_point(sad, x0), dtype=float)
    Ax = sad.KTx(x)
    z = Ax.copy()
    u = np.zeros(sad.dual_dim)
    converged, message, k = False, f"max_iter ({max_iter}) reached", 0
    for k in range(1, max_iter + 1):
        x = sad.f.prox(x - (mu / lam) * sad.Ky(Ax - z + u), mu)
        Ax = sad.KTx(x)
        run.passes += 1
        w = Ax + u
        z_old = z
        z = w - lam * g.conj_prox(w / lam, 1.0 / lam)  # prox_{lam g}(w) by Moreau
        u = u + Ax - z
        if k % check_every and k < max_iter:
            continue
        fx = float(sad.primal(x, Ax))
        r_pri = float(np.linalg.norm(Ax - z))
        r_dual = float(np.linalg.norm(sad.Ky(z - z_old))) / lam
        extra, done = splitting_columns(problem, x, r_pri, r_dual, sad.residual(x, Ax), tol)
        if done is None:
            scale = max(1.0, float(np.linalg.norm(Ax)))
            done = r_pri <= tol * scale and r_dual <= tol * scale
        ok = "converged: " + ("duality gap <= tol" if has_gap else "residuals <= tol")
        why = record_and_stop(run, x, fx, ok if done else None, **extra)
        if why:
            converged, message = done, why
            break
    return run.result(x, float(sad.primal(x)), k, converged, message, z=z, u=u, mu=mu, lam=lam)
