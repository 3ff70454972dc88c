"""Spectral projected gradient (SPG) with a non-monotone line search.

Birgin, Martínez & Raydan (2000), "Nonmonotone spectral projected gradient methods on convex sets",
algorithm SPG2: from ``x`` with gradient ``g`` and spectral (Barzilai-Borwein) step ``λ``,

    d = P(x - λ g) - x,      x+ = x + t d,

with ``t`` from backtracking until ``f(x + t d) <= max_{j<M} f(x_{k-j}) + c t <g, d>`` (the last
``M`` values: non-monotone; the constant is the option ``armijo_c``), and ``λ = <s, s>/<s, y>`` clipped to ``[λ_min, λ_max]``.

Needs only ``value_and_grad`` (and ``value``) and ``project(x)`` (the Euclidean projection onto the
feasible set; the identity when the problem has none and ``constraint == "none"``). Applies to any
closed convex set with a projection: ``"simplex"``, ``"box"`` and ``"product"`` (a product of such
sets, e.g. pool weights on the simplex times a box for γ).

Stopping: on the simplex, the Frank-Wolfe gap ``<g, x> - min_i g_i`` (an upper bound on
``f(x) - f*`` for convex ``f``); otherwise the projected-gradient norm ``||P(x - g) - x||_∞``.
Either is compared with ``tol * max(1, |f|)``. One pass = one ``value_and_grad`` or ``value`` call.
"""

from __future__ import annotations

from collections import deque
from typing import Unpack

import numpy as np

from ..checks import check_count, check_tol
from ..errors import InputError
from ..linesearch import gap_progress, rel_tol_scale
from ..monitor import Run, Stop
from ..problem import constraint_of, offers, start_point
from ..registry import register
from ..result import SolveResult
from ..simplex import fw_gap


def _projector(problem):
    if offers(problem, "project"):
        return problem.project
    if constraint_of(problem) != "none":
        raise InputError(
            "problem", f"{type(problem).__name__} has constraint {constraint_of(problem)!r} but no project(x)"
        )
    return lambda x: x


@register("projected_gradient", constraints=("none", "simplex", "box", "product"), tol=1e-8, max_iter=1000)
def projected_gradient(
    problem,
    x0=None,
    *,
    memory=10,
    armijo_c=1e-4,
    step_min=1e-12,
    step_max=1e12,
    step0: float | None = None,
    **stop: Unpack[Stop],
) -> SolveResult:
    """Spectral projected gradient (SPG2) with a non-monotone Armijo line search.

    Options: ``memory`` (M, how many past values the non-monotone test uses; 1 is monotone),
    ``armijo_c`` (the sufficient-decrease constant of the Armijo test), ``step_min``/``step_max`` (clip of the spectral step),
    ``step0`` (first step; default ``1/||P(x - g) - x||_∞``).
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(tol, positive=True)
    check_count(memory, field="memory", minimum=1)
    run = Run("projected_gradient", **stop)
    proj = _projector(problem)
    simplex = constraint_of(problem) == "simplex"
    x = proj(start_point(problem, x0))
    f, g = problem.value_and_grad(x)
    run.passes = 1.0
    run.record(f)
    recent: deque[float] = deque([f], maxlen=memory)

    def measure(x, g):
        if simplex:
            return fw_gap(x, g)
        return float(np.max(np.abs(proj(x - g) - x))) if x.size else 0.0

    gap = measure(x, g)
    gap0 = gap
    if step0 is None:
        pg = float(np.max(np.abs(proj(x - g) - x))) if x.size else 0.0
        lam = 1.0 / pg if pg > 0 else 1.0
    else:
        lam = float(step0)
    lam = min(step_max, max(step_min, lam))
    converged, message, it = False, "maximum number of iterations reached", 0
    for it in range(1, max_iter + 1):
        target = tol * rel_tol_scale(f)
        if gap_progress(run.progress, gap0, gap, target):
            converged, message, it = True, "gap below tolerance", it - 1
            break
        # on the simplex, shifting g by a constant changes neither the projection nor <g, d> in exact
        # arithmetic; centring it at <g, x> removes the large common component before rounding
        gc = g - float(g @ x) if simplex else g
        d = proj(x - lam * gc) - x
        slope = float(gc @ d)
        if slope >= 0:
            converged = gap <= 10 * target
            message, it = "no descent direction (precision limit)", it - 1
            break
        fmax = max(recent)
        t = 1.0
        while True:
            x_new = x + t * d
            f_new = problem.value(x_new)
            run.passes += 1
            if np.isfinite(f_new) and f_new <= fmax + armijo_c * t * slope:
                break
            # safeguarded quadratic interpolation, as in SPG2
            denom = 2.0 * (f_new - f - t * slope)
            t_q = -slope * t * t / denom if np.isfinite(f_new) and denom > 0 else 0.5 * t
            t = min(0.9 * t, max(0.1 * t, t_q))
            if t < 1e-14:
                break
        if t < 1e-14:
            converged = gap <= 10 * target
            message = "line search made no progress (precision limit)"
            break
        f_new, g_new = problem.value_and_grad(x_new)
        run.passes += 1
        s = x_new - x
        yv = g_new - g
        sy = float(s @ yv)
        lam = step_max if sy <= 0 else min(step_max, max(step_min, float(s @ s) / sy))
        x, f, g = x_new, f_new, g_new
        recent.append(f)
        gap = measure(x, g)
        run.record(f, gap=gap, step=t)
        if run.callback_stops(x):
            message = "stopped by callback"
            break
    else:
        target = tol * rel_tol_scale(f)
        if gap <= target:
            converged, message = True, "gap below tolerance"
    return run.result(x, float(f), it, converged, message, gap=float(gap))
