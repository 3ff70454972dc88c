"""Gauss-Seidel (multi-block) ADMM on ``min sum_j f_j(X_j)`` s.t. ``sum_j X_j = B`` (seed 000 Eq. 3.24, l.1699).

The q-block form (:class:`~solvers.problems.admm_form.ConsensusSplit`, the ``multi_block``
capability; RPCA is Eq. 3.60-3.61 with q = 3) and its augmented Lagrangian in scaled form,
``sum_j f_j(X_j) + (rho/2)|sum_j X_j - B + U|^2``, minimised one block at a time in the order
``j = 1..q``, each block seeing the blocks already updated in this sweep (Hong & Luo 2012, the
"GSADMM" of Table 3.3):

    X_j+ = argmin f_j(X_j) + (rho/2)|X_j - (B - U - sum_{k<j} X_k+ - sum_{k>j} X_k)|^2 = prox_{f_j/rho}(.)
    U+   = U + sum_j X_j+ - B

For q = 2 this is the classical two-block ADMM; for q >= 3 it has no general convergence guarantee
(the seed says so, l.1699), which the trace lets one watch. One pass = one sweep (every block once).
Stopping (Boyd et al. 2011 section 3.3, with the multi-block dual residual
``S_j = rho sum_{k>j} (X_k+ - X_k)``): ``|sum_j X_j - B| <= tol max(|sum_j X_j|, |B|)`` and
``|S| <= tol rho sqrt(q) |U|``. Trace: objective, the constraint residual, primal and dual residuals.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np

from ..checks import check_count, check_positive
from ..errors import InputError
from ..monitor import Run, Stop
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop


@register("gauss_seidel_admm", needs=("multi_block",), tol=1e-8, max_iter=10000)
def gauss_seidel_admm(problem, x0=None, *, rho=1.0, check_every=1, **stop: Unpack[Stop]) -> SolveResult:
    """Gauss-Seidel ADMM: one block after the other, then the scaled dual step; ``max_iter`` counts sweeps.

    Options: ``rho`` (> 0, the penalty), ``check_every`` (sweeps between trace records).
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    rho = check_positive(rho, field="rho")
    split = problem.multi_block()
    q, B = split.q, split.B.ravel()
    x = np.zeros(split.dim_x) if x0 is None else np.array(x0, dtype=float)
    if x.shape != (split.dim_x,):
        raise InputError("x0", f"must have shape ({split.dim_x},); got {x.shape}")
    X = split.blocks(x)
    total = X.sum(axis=0)
    u = np.zeros_like(B)
    run = Run("gauss_seidel_admm", **stop)
    converged, message, k = False, f"max_iter ({max_iter}) reached", 0
    for k in range(1, max_iter + 1):
        X_old = X.copy()
        for j in range(q):
            new = split.block_step(j, B - u - (total - X[j]), rho)
            total += new - X[j]
            X[j] = new
        u = u + total - B
        run.passes += 1
        if k % check_every and k < max_iter:
            continue
        r_pri = float(np.linalg.norm(total - B))
        later = np.cumsum((X - X_old)[::-1], axis=0)[::-1]  # sum_{k >= j} (X_k+ - X_k)
        r_dual = rho * float(np.linalg.norm(later[1:]))  # S_j = rho sum_{k > j}, j = 1..q-1 (S_q = 0)
        fx = float(split.objective(x))
        done = r_pri <= tol * max(float(np.linalg.norm(total)), float(np.linalg.norm(B))) and (
            r_dual <= tol * rho * math.sqrt(q) * float(np.linalg.norm(u))
        )
        extra = {"residual": r_pri, "primal_residual": r_pri, "dual_residual": r_dual}
        why = record_and_stop(run, x, fx, "converged: residuals below tolerance" if done else None, **extra)
        if why:
            converged, message = done, why
            break
    return run.result(x, float(split.objective(x)), k, converged, message, u=u, rho=rho)
