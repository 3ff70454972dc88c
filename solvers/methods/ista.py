"""ISTA and FISTA: proximal gradient with the constant step ``1/L``, plain and accelerated.

For ``min f(x) + r(x)`` with ``grad f`` L-Lipschitz (seed 003 section 6.6; Beck & Teboulle 2009):

* ISTA:  ``x+ = prox_{t r}(x - t grad f(x))``, ``t = 1/L``; ``F(x_k) - F* <= L |x_0 - x*|^2 / (2k)``;
* FISTA: ``x_k = prox_{t r}(w - t grad f(w))``, ``s_{k+1} = (1 + sqrt(1 + 4 s_k^2))/2``,
  ``w = x_k + ((s_k - 1)/s_{k+1}) (x_k - x_{k-1})``; ``F(x_k) - F* <= 2 L |x_0 - x*|^2 / (k+1)^2``
  (the seed's ``y = x_k + ((k-2)/(k+1))(x_k - x_{k-1})`` is the same rate with ``s_k = (k+1)/2``).

Both need ``smooth_value``, the smooth part's ``grad``, ``prox`` and ``L``. Stopping: the problem's
``duality_gap(x) <= tol`` when it offers one, else the gradient-mapping norm ``L |x - x+|``. One
pass = one gradient. The trace holds the objective, the stopping measure and the gap.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np

from ..checks import check_count
from ..monitor import Run, Stop
from ..problem import offers, start_point
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop

_NEEDS = ("prox", "smooth_value", "L")


def _proximal_gradient(problem, x0, *, accelerated, check_every, **stop: Unpack[Stop]) -> SolveResult:
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    method = "fista" if accelerated else "ista"
    run = Run(method, **stop)
    L = float(problem.L)
    t = 1.0 / L if L > 0 else 1.0
    has_gap = offers(problem, "duality_gap")
    x = start_point(problem, x0)
    w = x.copy()
    s = 1.0
    converged, message, k = False, f"max_iter ({max_iter}) reached", 0
    for k in range(max_iter + 1):
        if k % check_every == 0 or k == max_iter:
            fx = float(problem.value(x))
            if has_gap:
                measure = float(problem.duality_gap(x))
            else:
                g = problem.grad(x)
                run.passes += 1
                measure = float(np.linalg.norm(x - problem.prox(x - t * g, t)) / t)
            done = measure <= tol
            ok = f"converged: {'duality gap' if has_gap else 'gradient mapping'} {measure:.3g} <= tol"
            why = record_and_stop(run, x, fx, ok if done else None, **{"gap" if has_gap else "measure": measure})
            if why:
                converged, message = done, why
                break
        if k == max_iter:
            break
        point = w if accelerated else x
        x_new = problem.prox(point - t * problem.grad(point), t)
        run.passes += 1
        if accelerated:
            s_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * s * s))
            w = x_new + ((s - 1.0) / s_new) * (x_new - x)
            s = s_new
        x = x_new
    return run.result(x, float(problem.value(x)), k, converged, message)


@register("ista", needs=_NEEDS, constraints=("none",), tol=1e-8, max_iter=10000)
def ista(problem, x0=None, *, check_every: int = 1, **stop: Unpack[Stop]):
    """ISTA: proximal gradient with step 1/L (O(1/k))."""
    return _proximal_gradient(problem, x0, accelerated=False, check_every=check_every, **stop)


@register("fista", needs=_NEEDS, constraints=("none",), tol=1e-8, max_iter=10000)
def fista(problem, x0=None, *, check_every: int = 1, **stop: Unpack[Stop]):
    """FISTA: accelerated proximal gradient with step 1/L (O(1/k^2), Beck & Teboulle 2009)."""
    return _proximal_gradient(problem, x0, accelerated=True, check_every=check_every, **stop)
