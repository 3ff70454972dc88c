"""ADMM in scaled form on the two-block split ``f(x) + g(z)`` s.t. ``A x - z = 0`` (seed 003 section 6.7; Boyd et al. 2011 section 3.1.1).

    x+ = argmin_x f(x) + (rho/2) |A x - z + u|^2           (the split's x_step(z - u, rho))
    z+ = prox_{g/rho}(alpha A x+ + (1 - alpha) z + u)      (z_step; alpha: over-relaxation, 1 = none)
    u+ = u + alpha A x+ + (1 - alpha) z - z+

Instances (:mod:`solvers.problems.admm_form`): the lasso (``A = I``, the x-step a cached Cholesky
solve), the generalised lasso (``A = D``) and RPCA (consensus form, the x-step three proxes). Stopping
(Boyd et al. section 3.3.1): primal residual ``|A x - z| <= eps_pri`` and dual residual
``rho |A^T (z - z_old)| <= eps_dual`` with ``eps = sqrt(n) tol_abs + tol |.|``; when the problem
offers ``duality_gap``, the gap ``<= tol`` instead. One pass = one x-step (a product with the data).
Trace: objective, primal and dual residuals, the gap and the original constraint's residual where
defined.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np

from ..checks import check_count, check_positive, check_tol
from ..errors import InputError
from ..monitor import Run, Stop
from ..problem import offers
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop, splitting_columns


@register("admm", needs=("splitting",), tol=1e-8, max_iter=10000)
def admm(problem, x0=None, *, rho=1.0, alpha=1.0, tol_abs=0.0, check_every=1, **stop: Unpack[Stop]) -> SolveResult:
    """ADMM (scaled form, Boyd et al. 2011) with penalty ``rho`` and over-relaxation ``alpha``.

    Options: ``rho`` (> 0), ``alpha`` (in (0, 2)), ``tol_abs`` (the absolute part of Boyd's
    stopping tolerances; ``tol`` is the relative part), ``check_every``.
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(tol_abs, field="tol_abs")
    check_count(check_every, field="check_every", minimum=1)
    rho = check_positive(rho, field="rho")
    if not 0.0 < alpha < 2.0:
        raise InputError("alpha", f"must be in (0, 2); got {alpha!r}")
    split = problem.splitting()
    has_gap = offers(problem, "duality_gap")
    run = Run("admm", **stop)
    x = np.zeros(split.dim_x) if x0 is None else np.array(x0, dtype=float)
    if x.shape != (split.dim_x,):
        raise InputError("x0", f"must have shape ({split.dim_x},); got {x.shape}")
    z = split.Ax(x).copy()
    u = np.zeros(split.dim_z)
    converged, message, k = False, f"max_iter ({max_iter}) reached", 0
    for k in range(1, max_iter + 1):
        x = split.x_step(z - u, rho)
        run.passes += 1
        Ax = split.Ax(x)
        Ax_hat = alpha * Ax + (1.0 - alpha) * z
        z_old = z
        z = split.z_step(Ax_hat + u, rho)
        u = u + Ax_hat - z
        if k % check_every and k < max_iter:
            continue
        r_pri = float(np.linalg.norm(Ax - z))
        r_dual = float(rho * np.linalg.norm(split.ATz(z - z_old)))
        fx = float(split.objective(x))
        extra, done = splitting_columns(problem, x, r_pri, r_dual, split.residual(x), tol)
        if done is None:
            n = math.sqrt(split.dim_z)
            eps_pri = n * tol_abs + tol * max(float(np.linalg.norm(Ax)), float(np.linalg.norm(z)))
            eps_dual = math.sqrt(split.dim_x) * tol_abs + tol * rho * float(np.linalg.norm(split.ATz(u)))
            done = r_pri <= eps_pri and r_dual <= eps_dual
        ok = "converged: " + ("duality gap <= tol" if has_gap else "residuals below tolerance")
        why = record_and_stop(run, x, fx, ok if done else None, **extra)
        if why:
            converged, message = done, why
            break
    return run.result(x, float(split.objective(x)), k, converged, message, z=z, u=u, rho=rho)
