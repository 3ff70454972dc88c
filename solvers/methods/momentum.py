"""Heavy-ball and Nesterov momentum (seed 003 section 6.4 "momentum" and accelerated proximal gradient).

Heavy ball: ``x+ = prox(x - t grad f(x) + b (x - x_prev))``. Defaults: on quadratics (least squares /
ridge) Polyak's ``t = 4/(sqrt L + sqrt mu)^2``, ``b = ((sqrt L - sqrt mu)/(sqrt L + sqrt mu))^2``;
otherwise ``t = 1/L``, ``b = 0.45``, inside the region ``t < 2(1 - b)/L`` where heavy ball converges
globally on smooth convex problems (Ghadimi et al. 2015) -- Polyak's tuning can cycle on
non-quadratics (the Lessard-Recht-Packard example of seed 003).

Nesterov / FISTA: ``y = x + b_k (x - x_prev)``, ``x+ = prox(y - t grad f(y))``, ``t = 1/L``, with
``b = (sqrt L - sqrt mu)/(sqrt L + sqrt mu)`` when mu > 0 and ``b_k = (k - 1)/(k + 2)`` otherwise
(seed 003 accelerated proximal gradient, O(1/k^2)).

Both are small state machines in the spirit of optax (``optax/_src/base.py``): an immutable
``NamedTuple`` state, ``*_init(problem, x0, ...) -> state`` and ``*_step(problem, state, ...) ->
state``; the registered functions ``heavy_ball(problem, x0, ...)`` / ``nesterov(...)`` drive them
under the shared :class:`~solvers.monitor.Monitor` and return a ``SolveResult``. A sampler is then a
step plus noise: SGHMC is :func:`heavy_ball_step` on stochastic gradients with Gaussian noise added
to the velocity ``x - x_prev``, with no change here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, Unpack

import numpy as np

from ..errors import InputError
from ..monitor import Stop
from ..problem import capability
from ..registry import register
from ._incremental_common import Monitor, constant, require_smooth, start

DEFAULT_TOL = 1e-10

Prox = Callable[[np.ndarray, float], np.ndarray]


class HeavyBallState(NamedTuple):
    """The iterate, the previous one and ``(f, grad f)`` at the iterate."""

    x: np.ndarray
    x_prev: np.ndarray
    value_grad: tuple[float, np.ndarray]


class NesterovState(NamedTuple):
    """The iterate, the previous one and the number of steps taken (for ``b_k = (k-1)/(k+2)``)."""

    x: np.ndarray
    x_prev: np.ndarray
    k: int


def heavy_ball_init(problem, x0: np.ndarray, prox: Prox, step: float) -> HeavyBallState:
    """Start at ``prox(x0)`` with no velocity (one value+gradient pass)."""
    x = prox(x0, step)
    return HeavyBallState(x, x.copy(), problem.value_and_grad(x))


def heavy_ball_step(problem, state: HeavyBallState, prox: Prox, step: float, momentum: float) -> HeavyBallState:
    """``x+ = prox(x - t grad f(x) + b (x - x_prev))`` (one value+gradient pass)."""
    x, xp, vg = state
    xn = prox(x - step * vg[1] + momentum * (x - xp), step)
    return HeavyBallState(xn, x, problem.value_and_grad(xn))


def nesterov_init(x0: np.ndarray, prox: Prox, step: float) -> NesterovState:
    x = prox(x0, step)
    return NesterovState(x, x.copy(), 0)


def nesterov_step(problem, state: NesterovState, prox: Prox, step: float, momentum: float | None) -> NesterovState:
    """``y = x + b_k (x - x_prev)``, ``x+ = prox(y - t grad f(y))`` (one gradient pass)."""
    x, xp, k = state
    b = momentum if momentum is not None else (k - 1) / (k + 2) if k > 0 else 0.0
    y = x + b * (x - xp)
    return NesterovState(prox(y - step * problem.grad(y), step), x, k + 1)


def _setup(problem, method: str, step: float | None) -> tuple[float, float]:
    """``(L, mu)`` of a smooth problem; ``L`` is needed unless a step is given."""
    require_smooth(problem, method)
    L = constant(problem, "L")
    if L is None:
        raise InputError("step", f"solver {method!r} needs the problem's L (or give step=)")
    return L, constant(problem, "mu", 0.0) or 0.0


@register("heavy_ball", needs=("L",), constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=5000)
def heavy_ball(problem, x0=None, *, step=None, momentum=None, off_clock=False, **stop: Unpack[Stop]):
    """Heavy-ball momentum (seed 003), defaults in the module docstring."""
    L, mu = _setup(problem, "heavy_ball", step)
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
    mon = Monitor(problem, "heavy_ball", **stop)
    mon.off_clock = off_clock
    state = heavy_ball_init(problem, start(problem, x0), mon.prox, t)
    mon.passes += 1
    it = 0
    while not mon.check(state.x, it, value_grad=state.value_grad):
        state = heavy_ball_step(problem, state, mon.prox, t, b)
        mon.passes += 1
        it += 1
    return mon.result(state.x, it, step=t, momentum=b)


@register("nesterov", needs=("L",), constraints=("none", "simplex", "box"), tol=DEFAULT_TOL, max_iter=5000)
def nesterov(problem, x0=None, *, step=None, momentum=None, off_clock=False, **stop: Unpack[Stop]):
    """Nesterov's accelerated (proximal) gradient / FISTA (seed 003), ``t = 1/L``."""
    L, mu = _setup(problem, "nesterov", step)
    t = 1.0 / L if step is None else float(step)
    if not t > 0:
        raise InputError("step", f"must be > 0; got {step}")
    if momentum is None and mu > 0:
        momentum = (math.sqrt(L) - math.sqrt(mu)) / (math.sqrt(L) + math.sqrt(mu))
    mon = Monitor(problem, "nesterov", **stop)
    mon.off_clock = off_clock
    state = nesterov_init(start(problem, x0), mon.prox, t)
    while not mon.check(state.x, state.k):
        state = nesterov_step(problem, state, mon.prox, t, momentum)
        mon.passes += 1
    return mon.result(state.x, state.k, step=t)
