"""Gradient descent and proximal gradient (seed 003 section 6.4: theta+ = prox_{t h}(theta - t grad f)).

Step ``t = 1/L`` by default (seed 003: convergence for t <= 1/L, rate O(1/k); linear when
strongly convex, seed 001 App. A.17 with 2/(L+mu)); ``step="2/(L+mu)"`` selects the strongly
convex choice; when the problem offers no L, Beck-Teboulle backtracking (halve t until
``f(x+) <= f(x) + <g, x+ - x> + |x+ - x|^2/(2t)``). Works on any protocol problem: the prox is the
problem's ``prox`` or ``project`` (projected gradient on the simplex), the identity otherwise.
``gd`` and ``proximal_gradient`` are the same function (GD when there is no prox).
"""

from __future__ import annotations

from typing import Unpack

from ..errors import InputError
from ..monitor import Stop
from ..registry import register
from ._incremental_common import Monitor, constant, require_smooth, smooth_value, start

DEFAULT_TOL = 1e-10


def _gd(problem, x0, *, method, step, off_clock=False, **stop: Unpack[Stop]):
    require_smooth(problem, method)
    mon = Monitor(problem, method, **stop)
    mon.off_clock = off_clock
    prox = mon.prox
    L = constant(problem, "L")
    mu = constant(problem, "mu", 0.0) or 0.0
    backtrack = False
    if step is None:
        if L is None:
            backtrack, t = True, 1.0
        else:
            t = 1.0 / L
    elif step == "2/(L+mu)":
        if L is None:
            raise InputError("step", "step '2/(L+mu)' needs the problem's L")
        t = 2.0 / (L + mu)
    else:
        t = float(step)
        if not t > 0:
            raise InputError("step", f"must be > 0; got {step}")
    x = start(problem, x0)
    x = prox(x, t)
    it = 0
    vg = problem.value_and_grad(x)
    mon.passes += 1
    while not mon.check(x, it, value_grad=vg):
        g = vg[1]
        if backtrack:
            fx = smooth_value(problem, x)
            while True:
                xn = prox(x - t * g, t)
                dx = xn - x
                if smooth_value(problem, xn) <= fx + g @ dx + (dx @ dx) / (2 * t) + 1e-12 * abs(fx):
                    break
                t *= 0.5
                mon.passes += 1
                if t < 1e-20:
                    break
        else:
            xn = prox(x - t * g, t)
        x = xn
        vg = problem.value_and_grad(x)
        mon.passes += 1
        it += 1
    return mon.result(x, it, step=t)


def _gradient_solver(name: str, doc: str):
    """Register ``name`` as :func:`_gd` under its own method label (one driver, two names)."""

    def solver(problem, x0=None, *, step=None, off_clock: bool = False, **stop: Unpack[Stop]):
        return _gd(problem, x0, method=name, step=step, off_clock=off_clock, **stop)

    solver.__name__ = solver.__qualname__ = name
    solver.__doc__ = doc
    return register(name, constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=5000)(solver)


gd = _gradient_solver("gd", "Gradient descent / projected gradient, step 1/L by default (seed 003 section 6.4).")
proximal_gradient = _gradient_solver(
    "proximal_gradient", "Proximal gradient / ISTA ``prox_{t h}(x - t grad f)``, t = 1/L (seed 003 section 6.4)."
)
