"""Quasi-Newton: L-BFGS (unconstrained) and projected BFGS (simplex), with Armijo backtracking.

Unconstrained (``lbfgs``): two-loop recursion with the last ``memory`` pairs (Nocedal & Wright,
Alg. 7.4), initial scaling ``sᵀy / yᵀy``, Armijo backtracking from ``t = 1`` (the unit step is
evaluated with its gradient, reused when accepted: one evaluation per unit step; when its objective
change is at rounding level it is accepted if the slope along the direction shrank,
``|<g(x+d), d>| <= 0.9 |<g(x), d>|``, so the gradient keeps converging below the objective's
resolution); pairs with
``sᵀy <= 1e-12 |s||y|`` are skipped. Stops when ``||g||_inf <= tol * max(1, |f|)``, or when the
objective stops changing (two successive relative changes below 1e-15: the precision limit).

Simplex (projected quasi-Newton): a dense BFGS model ``B`` of the Hessian (damped update, Powell
1978, so ``B`` stays positive definite), the step solves the quadratic model on the simplex in the
``B`` metric (:func:`solvers.simplex.solve_simplex_qp`), then Armijo along ``z - x``. Stops when
the Frank-Wolfe gap ``<g, x> - min_i g_i <= tol * max(1, |f|)``, or (not converged) when the
objective has not changed by more than 1e-15 relative for three iterations. Meant for dimensions up
to a few hundred (``B`` is dense).
"""

from __future__ import annotations

from collections import deque
from typing import Unpack

import numpy as np

from ..linesearch import armijo, gap_progress, rel_tol_scale
from ..monitor import Run, Stop
from ..problem import constraint_of, offers, start_point
from ..registry import register, register_auto_rule
from ..result import SolveResult
from ..simplex import fw_gap, solve_simplex_qp


@register("lbfgs", constraints=("none", "simplex"), tol=1e-9, max_iter=1000)
def lbfgs(
    problem, x0=None, *, memory: int = 10, alpha: float = 1e-4, beta: float = 0.5, **stop: Unpack[Stop]
) -> SolveResult:
    """L-BFGS with Armijo backtracking; projected dense BFGS on the simplex (see the module docstring)."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    if constraint_of(problem) == "simplex":
        return _projected_bfgs(problem, x0, **stop, alpha=alpha, beta=beta)
    run = Run("lbfgs", **stop)
    x = start_point(problem, x0)
    f, g = problem.value_and_grad(x)
    run.passes = 1.0
    run.record(f)
    S: deque = deque(maxlen=memory)
    Y: deque = deque(maxlen=memory)
    gn0 = float(np.max(np.abs(g)))
    converged, message, it, flat = False, "maximum number of iterations reached", 0, 0
    for it in range(1, max_iter + 1):
        gn = float(np.max(np.abs(g)))
        target = tol * rel_tol_scale(f)
        if gap_progress(run.progress, gn0, gn, target):
            converged, message, it = True, "gradient norm below tolerance", it - 1
            break
        q = g.copy()
        coefs = []
        for s, y in zip(reversed(S), reversed(Y)):
            rho = 1.0 / float(y @ s)
            a = rho * float(s @ q)
            q -= a * y
            coefs.append((rho, a))
        if S:
            q *= float(S[-1] @ Y[-1]) / float(Y[-1] @ Y[-1])
        else:
            q /= max(float(np.linalg.norm(g)), 1e-300)
        for (s, y), (rho, a) in zip(zip(S, Y), reversed(coefs)):
            b = rho * float(y @ q)
            q += (a - b) * s
        d = -q
        slope = float(g @ d)
        if slope >= 0:  # lost descent: restart from steepest descent
            S.clear()
            Y.clear()
            d = -g / max(float(np.linalg.norm(g)), 1e-300)
            slope = float(g @ d)
        # unit step first, evaluated with its gradient (reused when accepted: one evaluation per
        # accepted unit step). Accepted by Armijo, or -- when the objective change is at rounding
        # level, where Armijo cannot decide -- by the gradient: |<g(x + d), d>| <= 0.9 |<g(x), d>|
        # (the slope along d shrank; for a convex f this also certifies f(x + d) <= f(x) + O(eps)).
        x1 = x + d
        f1, g1 = problem.value_and_grad(x1)
        run.passes += 1
        by_grad = False
        if f1 <= f + alpha * slope:
            t, f_new = 1.0, f1
        elif abs(f1 - f) <= 1e-14 * rel_tol_scale(f) and abs(float(g1 @ d)) <= 0.9 * abs(slope):
            t, f_new, by_grad = 1.0, f1, True
        else:
            t, f_new, n_ev, ok = armijo(lambda t: problem.value(x + t * d), f, slope, t0=beta, alpha=alpha, beta=beta)
            run.passes += n_ev
            if not ok and f1 < min(f, f_new if t > 0 else f):
                t, f_new = 1.0, f1
        if t == 0.0:
            message = "line search made no progress (precision limit)"
            converged = gn <= 100 * target
            break
        f_old = f
        if t == 1.0:
            x_new, f, g_new = x1, f_new, g1
        else:
            x_new = x + t * d
            f, g_new = problem.value_and_grad(x_new)
            run.passes += 1
        s, y = x_new - x, g_new - g
        if float(s @ y) > 1e-12 * float(np.linalg.norm(s) * np.linalg.norm(y)):
            S.append(s)
            Y.append(y)
        x, g = x_new, g_new
        run.record(f, step=t)
        # flat objective: stop after two such steps, unless the gradient certified the step
        flat = 0 if by_grad else (flat + 1 if abs(f_old - f) <= 1e-15 * rel_tol_scale(f) else 0)
        if flat >= 2:
            message = "objective stopped changing (precision limit)"
            converged = float(np.max(np.abs(g))) <= 100 * target
            break
        if run.callback_stops(x):
            message = "stopped by callback"
            break
    else:
        converged = float(np.max(np.abs(g))) <= tol * rel_tol_scale(f)
    return run.result(x, f, it, converged, message, grad_norm=float(np.max(np.abs(g))))


def _projected_bfgs(problem, x0, *, alpha, beta, **stop: Unpack[Stop]) -> SolveResult:
    tol, max_iter = stop["tol"], stop["max_iter"]
    run = Run("lbfgs", **stop)
    x = start_point(problem, x0)
    x = problem.project(x) if offers(problem, "project") else x
    n = x.size
    f, g = problem.value_and_grad(x)
    run.passes = 1.0
    run.record(f)
    B = None
    flat, f_prev = 0, f
    gap0 = fw_gap(x, g)
    gap = gap0
    converged, message, it = False, "maximum number of iterations reached", 0
    for it in range(1, max_iter + 1):
        gap = fw_gap(x, g)
        target = tol * rel_tol_scale(f)
        if gap_progress(run.progress, gap0, gap, target):
            converged, message, it = True, "gap below tolerance", it - 1
            break
        if B is None:
            # first step: a projected-gradient step of length ~1 in the simplex
            Bk = max(float(np.max(np.abs(g - g.mean()))), 1e-12) * np.eye(n)
        else:
            Bk = B
        z, _ = solve_simplex_qp(Bk, g - Bk @ x, x)
        d = z - x
        slope = float(g @ d)
        if slope >= 0:
            if B is not None:
                B = None  # reset the model and retry with a gradient step
                continue
            message, converged = "no descent direction (precision limit)", gap <= 10 * target
            it -= 1
            break
        t, f_new, n_ev, ok = armijo(lambda t: problem.value(x + t * d), f, slope, alpha=alpha, beta=beta)
        run.passes += n_ev
        if t == 0.0:
            if B is not None:
                B = None
                continue
            message, converged = "line search made no progress (precision limit)", gap <= 10 * target
            break
        x_new = x + t * d
        x_new[x_new < 0] = 0.0
        x_new /= x_new.sum()
        f, g_new = problem.value_and_grad(x_new)
        run.passes += 1
        s, y = x_new - x, g_new - g
        sy = float(s @ y)
        if B is None:
            yy = float(y @ y)
            B = (yy / sy if sy > 1e-300 else 1.0) * np.eye(n)
        Bs = B @ s
        sBs = float(s @ Bs)
        if sBs > 1e-300:
            theta = 1.0 if sy >= 0.2 * sBs else 0.8 * sBs / (sBs - sy)  # Powell damping
            r = theta * y + (1 - theta) * Bs
            sr = float(s @ r)
            if sr > 1e-300:
                B = B - np.outer(Bs, Bs) / sBs + np.outer(r, r) / sr
        flat = flat + 1 if abs(f_prev - f) <= 1e-15 * rel_tol_scale(f) else 0
        f_prev = f
        x, g = x_new, g_new
        run.record(f, gap=gap, step=t)
        if flat >= 3:
            gap = fw_gap(x, g)
            converged = gap <= tol * rel_tol_scale(f)
            message = "gap below tolerance" if converged else "objective stopped changing (precision limit)"
            break
        if run.callback_stops(x):
            message = "stopped by callback"
            break
    else:
        gap = fw_gap(x, g)
        converged = gap <= tol * rel_tol_scale(f)
        if converged:
            message = "gap below tolerance"
    return run.result(x, f, it, converged, message, gap=float(fw_gap(x, g)))


def _auto_rule(problem) -> str | None:
    """``auto`` without a Hessian: quasi-Newton (projected BFGS on small simplices)."""
    if offers(problem, "hessian"):
        return None
    c = constraint_of(problem)
    if c == "none" or (c == "simplex" and problem.dim <= 500):
        return "lbfgs"
    return None


register_auto_rule("quasi_newton", _auto_rule)
