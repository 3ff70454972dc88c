"""Stochastic gradient descent with the classical decreasing step schedules (seed 001 L392-404;
seed 003 section 6.3, Robbins-Monro).

    x_{k+1} = prox_{g_k h}( x_k - g_k f'_j(x_k) )

Schedules: ``"inverse"`` ``g_k = g0/(1 + g0 mu k)`` (the seed's theta/k with theta = 1/mu, shifted
so that ``g_0 = g0``; needs mu > 0), ``"inverse_sqrt"`` ``g0/sqrt(1 + k)``, ``"constant"``.
Default ``g0 = 1/L_max`` and "inverse" when mu > 0, else "inverse_sqrt". ``average=True`` returns
the Polyak-Ruppert average of the iterates of the second half of the run. The rate is sublinear
(E f - f* <= L|x0 - x*|^2/(2k), L400), so SGD is stopped by epochs; the gradient-mapping norm is
still recorded and a ``tol`` can stop it.

The method is a small state machine in the spirit of optax (``optax/_src/base.py``): an immutable
:class:`SGDState` ``(x, k, xavg)``, :func:`sgd_init` and :func:`sgd_step` (one stochastic step on a
given term gradient), with :func:`step_size` the schedule. The public :func:`sgd` drives it: on the
generic path one :func:`sgd_step` per term gradient, so a sampler is this plus noise (SGLD:
``x += sqrt(2 g_k) * N(0, I)`` after each step). On the compiled paths (linear models, softmax
regression, the two pool problems) one numba epoch kernel advances the same state: it updates the
state's ``x`` and ``xavg`` arrays in place and returns the new ``k``; the kernels are not split into
Python-level steps, which would cost them their speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Unpack

import numpy as np

from ..errors import InputError
from ..kernels_incremental.loglinear_saga import loglinear_sgd_epoch
from ..kernels_incremental.mixture import mixture_sgd_epoch
from ..kernels_incremental.multinomial import mn_sgd_epoch
from ..kernels_incremental.table_methods import sgd_epoch
from ..monitor import Stop
from ..problem import capability, constraint_of
from ..registry import register
from ._incremental_common import IndexDraws, Monitor, constant, start, term_family

SCHEDULES = {"constant": 0, "inverse": 1, "inverse_sqrt": 2}


class SGDState(NamedTuple):
    """The iterate, the number of steps taken and the running Polyak-Ruppert average (empty when not
    averaging)."""

    x: np.ndarray
    k: int
    xavg: np.ndarray


def sgd_init(x0: np.ndarray, *, average: bool = False) -> SGDState:
    return SGDState(x0, 0, np.zeros(x0.shape[0]) if average else np.zeros(0))


def step_size(step: float, schedule: int, mu: float, k: int) -> float:
    """``g_k`` of the schedule (codes of :data:`SCHEDULES`): constant, ``g0/(1 + g0 mu k)``, ``g0/sqrt(1 + k)``."""
    return step if schedule == 0 else (step / (1 + step * mu * k) if schedule == 1 else step / np.sqrt(1 + k))


def sgd_step(
    state: SGDState,
    grad: np.ndarray,
    prox: Callable[[np.ndarray, float], np.ndarray],
    *,
    step: float,
    schedule: int,
    mu: float,
    avg_from: int,
) -> SGDState:
    """One step ``x <- prox_{g_k h}(x - g_k grad)`` on the term gradient ``grad`` at ``state.x``; the
    average starts after ``avg_from`` steps."""
    st = step_size(step, schedule, mu, state.k)
    x = prox(state.x - st * grad, st)
    k = state.k + 1
    xavg = state.xavg
    if xavg.size and k > avg_from:
        xavg = xavg + (x - xavg) / (k - avg_from)
    return SGDState(x, k, xavg)


@register("sgd", needs=("term_grad",), constraints=("none", "simplex", "box"), tol=0.0, max_iter=50)
def sgd(
    problem,
    x0=None,
    *,
    step=None,
    schedule: str | None = None,
    average=False,
    order="random",
    seed=0,
    off_clock=False,
    **stop: Unpack[Stop],
):
    """SGD: ``step`` is g0; ``schedule`` "inverse" | "inverse_sqrt" | "constant"; ``max_iter`` epochs."""
    max_iter = stop["max_iter"]
    draw = IndexDraws(order, seed, problem.n_terms)
    mu = constant(problem, "mu", 0.0) or 0.0
    if schedule is None:
        schedule = "inverse" if mu > 0 else "inverse_sqrt"
    if schedule not in SCHEDULES:
        raise InputError("schedule", f"must be one of {sorted(SCHEDULES)}; got {schedule!r}")
    if schedule == "inverse" and mu <= 0:
        raise InputError("schedule", "schedule 'inverse' needs mu > 0")
    if step is None:
        L = constant(problem, "L_max") or constant(problem, "L")
        if L is None and capability(problem, "linear_terms") is not None:
            L = float(problem.sqnorms.max()) + problem.l2  # hinge: a subgradient step of the same scale
        if L is None:
            raise InputError("step", "the problem offers no L_max/L, so give a step size")
        step = 1.0 / L
    mon = Monitor(problem, "sgd", **stop)
    mon.off_clock = off_clock
    x = start(problem, x0)
    n = problem.n_terms
    lt = capability(problem, "linear_terms")
    mt = capability(problem, "multinomial_terms")
    # the pool problems: compiled per-term loops (log pool: conditional log-linear; linear pool: mixture)
    family = term_family(problem)
    ll, mix = family == "loglinear", family == "mixture"
    simplex = constraint_of(problem) == "simplex"
    l2 = float(capability(problem, "l2", 0.0) or 0.0)
    if ll:
        labels = np.ascontiguousarray(problem.labels, dtype=np.int64)
    avg_from = (max_iter * n) // 2
    state = sgd_init(x, average=average)
    epoch = 0
    sch = SCHEDULES[schedule]
    prox = mon.prox
    while not mon.check(state.xavg if average and state.k > avg_from else state.x, epoch):
        idx = draw()
        x, k, xavg = state
        if lt is not None:  # the compiled epochs update x and xavg in place and return the new k
            state = state._replace(
                k=sgd_epoch(
                    lt.loss,
                    *lt.args(),
                    lt.y,
                    lt.smoothing,
                    idx,
                    x,
                    k,
                    sch,
                    step,
                    problem.l2,
                    problem.l1,
                    xavg,
                    avg_from,
                )
            )
        elif mt is not None:
            state = state._replace(
                k=mn_sgd_epoch(
                    *mt.args(), mt.labels, mt.K, idx, x, k, sch, step, problem.l2, problem.l1, xavg, avg_from
                )
            )
        elif ll:
            state = state._replace(
                k=loglinear_sgd_epoch(
                    problem.features_ndk, labels, idx, x, k, sch, step, mu, l2, simplex, xavg, avg_from
                )
            )
        elif mix:
            state = state._replace(k=mixture_sgd_epoch(problem.mixture_rows, idx, x, k, sch, step, mu, xavg, avg_from))
        else:
            for j in idx:
                state = sgd_step(
                    state, problem.term_grad(int(j), state.x), prox, step=step, schedule=sch, mu=mu, avg_from=avg_from
                )
        mon.passes += 1
        epoch += 1
    x, k, xavg = state
    xr = xavg.copy() if average and k > avg_from else x
    return mon.result(xr, epoch, step=step, schedule=schedule, compiled=lt is not None or mt is not None or ll or mix)
