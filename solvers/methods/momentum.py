"""Heavy-ball and Nesterov momentum (seed 003 section 6.4 "momentum" and accelerated proximal gradient).

Heavy ball: ``x+ = prox(x - t grad f(x) + b (x - x_prev))``. Defaults: on quadratics (least squares /
ridge) Polyak's ``t = 4/(sqrt L + sqrt mu)^2``, ``b = ((sqrt L - sqrt mu)/(sqrt L + sqrt mu))^2``;
otherwise ``t = 1/L``, ``b = 0.45``, inside the region ``t < 2(1 - b)/L`` where heavy ball converges
globally on smooth convex problems (Ghadimi et al. 2015) -- Polyak's tuning can cycle on
non-quadratics (the Lessard-Recht-Packard example of seed 003).

Nesterov / FISTA: ``y = x + b_k (x - x_prev)``, ``x+ = prox(y - t grad f(y))``, ``t = 1/L``, with
``b = (sqrt L - sqrt mu)/(sqrt L + sqrt mu)`` when mu > 0 and ``b_k = (k - 1)/(k + 2)`` otherwise
(seed 003 accelerated proximal gradient, O(1/k^2)).
"""

from __future__ import annotations

import math

from ..errors import InputError
from ..problem import capability
from ..registry import register
from ._incremental_common import Monitor, constant, require_smooth, start

DEFAULT_TOL = 1e-10


def _L(problem, method):
    L = constant(problem, "L")
    if L is None:
        raise InputError("step", f"solver {method!r} needs the problem's L (or give step=)")
    return L


@register("heavy_ball", needs=("L",), constraints=("none", "simplex", "box"))
def heavy_ball(problem, x0=None, *, tol: float = DEFAULT_TOL, max_iter: int = 5000, callback=None, progress=None,
               step: float | None = None, momentum: float | None = None, off_clock: bool = False):
    """Heavy-ball momentum (seed 003), defaults in the module docstring."""
    require_smooth(problem, "heavy_ball")
    L = _L(problem, "heavy_ball")
    mu = constant(problem, "mu", 0.0) or 0.0
    quad = capability(problem, "loss") == "squared" and not capability(problem, "l1", 0.0) and mu > 0
    if quad:
        t0 = 4.0 / (math.sqrt(L) + math.sqrt(mu)) ** 2
        b0 = ((math.sqrt(L) - math.sqrt(mu)) / (math.sqrt(L) + math.sqrt(mu))) ** 2
    else:
        t0, b0 = 1.0 / L, 0.45
    t = t0 if step is None else float(step)
    b = b0 if momentum is None else float(momentum)
    if not (t > 0 and 0 <= b < 1):
        raise InputError("step", f"must be > 0 and momentum in [0, 1); got {t}, {b}")
    mon = Monitor(problem, "heavy_ball", tol=tol, max_iter=max_iter, callback=callback, progress=progress)
    mon.off_clock = off_clock
    prox = mon.prox
    x = prox(start(problem, x0), t)
    xp = x.copy()
    vg = problem.value_and_grad(x)
    mon.passes += 1
    it = 0
    while not mon.check(x, it, value_grad=vg):
        xn = prox(x - t * vg[1] + b * (x - xp), t)
        xp, x = x, xn
        vg = problem.value_and_grad(x)
        mon.passes += 1
        it += 1
    return mon.result(x, it, step=t, momentum=b)


@register("nesterov", needs=("L",), constraints=("none", "simplex", "box"))
def nesterov(problem, x0=None, *, tol: float = DEFAULT_TOL, max_iter: int = 5000, callback=None, progress=None,
             step: float | None = None, momentum: float | None = None, off_clock: bool = False):
    """Nesterov's accelerated (proximal) gradient / FISTA (seed 003), ``t = 1/L``."""
    require_smooth(problem, "nesterov")
    L = _L(problem, "nesterov")
    mu = constant(problem, "mu", 0.0) or 0.0
    t = 1.0 / L if step is None else float(step)
    if not t > 0:
        raise InputError("step", f"must be > 0; got {step}")
    if momentum is None and mu > 0:
        momentum = (math.sqrt(L) - math.sqrt(mu)) / (math.sqrt(L) + math.sqrt(mu))
    mon = Monitor(problem, "nesterov", tol=tol, max_iter=max_iter, callback=callback, progress=progress)
    mon.off_clock = off_clock
    prox = mon.prox
    x = prox(start(problem, x0), t)
    xp = x.copy()
    it = 0
    while not mon.check(x, it):
        b = momentum if momentum is not None else (it - 1) / (it + 2) if it > 0 else 0.0
        y = x + b * (x - xp)
        xn = prox(y - t * problem.grad(y), t)
        xp, x = x, xn
        mon.passes += 1
        it += 1
    return mon.result(x, it, step=t)
