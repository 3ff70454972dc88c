"""Averaged SGD with the step rules of seed 002's baselines (Ouyang ch. II, L1016-1026).

The iterates are plain SGD steps ``x_{t+1} = prox(x_t - eta_t f'(x_t))`` on one sampled term (the
state machine of :mod:`solvers.methods.sgd`), and the output is the average of *all* iterates
``xbar_t = (1/t) sum_{i<=t} x_i`` (Polyak averaging), with

- ``mu = 0``: ``eta_t = Omega / sqrt(t)`` (Bach and Moulines 2011);
- ``mu > 0``: ``eta_t = 1 / (Omega (1 + mu t / Omega)^{3/4})`` (Xu 2011).

The seed's plain-SGD baselines are :func:`solvers.methods.sgd.sgd`: ``Omega/sqrt(t)`` is
``schedule="inverse_sqrt", step=Omega`` and SGD2's ``1/(mu (t + Omega))`` (Bottou) is
``schedule="inverse", step=1/(mu Omega)``. (``sgd(average=True)`` averages the second half only, with
those schedules; this module is the seed's averaged variant.) ``max_iter`` counts epochs of
``n_terms`` single-sample steps.
"""

from __future__ import annotations

import math

from ..checks import check_positive
from ..errors import InputError
from ..problem import constant, prox_of
from ._incremental_common import start
from ._stochastic_approximation import run_steps, sa_method
from .sgd import sgd_init, sgd_step


def asgd_step_size(t: int, omega: float, mu: float) -> float:
    """``eta_t`` (``t >= 1``): ``Omega/sqrt(t)`` when ``mu = 0``, Xu's ``1/(Omega (1 + mu t/Omega)^{3/4})`` else."""
    return omega / math.sqrt(t) if mu == 0 else 1.0 / (omega * (1.0 + mu * t / omega) ** 0.75)


@sa_method("asgd", needs=("term_grad",), constraints=("none", "simplex", "box"))
def asgd(problem, x0=None, *, omega: float = 1.0, strongly_convex: bool | None = None, **common):
    """Averaged SGD (seed 002 L1016-1026): Bach-Moulines ``Omega/sqrt t`` or Xu's step when strongly convex;
    ``common``: the options of :func:`~solvers.methods._stochastic_approximation.run_steps`."""
    check_positive(omega, field="omega")
    mu = constant(problem, "mu", 0.0) or 0.0
    sc = mu > 0 if strongly_convex is None else bool(strongly_convex)
    if sc and not mu > 0:
        raise InputError("strongly_convex", f"needs mu > 0; the problem has mu = {mu}")
    m = mu if sc else 0.0
    prox = prox_of(problem)
    tg = problem.term_grad

    def step(s, j):
        eta = asgd_step_size(s.k + 1, omega, m)
        return sgd_step(s, tg(j, s.x), prox, step=eta, schedule=0, mu=0.0, avg_from=0)

    state, mon, epochs = run_steps(
        problem,
        "asgd",
        sgd_init(start(problem, x0), average=True),
        step,
        lambda s: s.xavg if s.k else s.x,
        **common,
    )
    return mon.result(state.xavg.copy() if state.k else state.x, epochs, omega=omega, strongly_convex=sc)
