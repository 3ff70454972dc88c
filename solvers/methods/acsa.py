"""AC-SA, the accelerated stochastic approximation of Lan and Ghadimi (seed 002's third baseline, L1030).

The seed gives no parameters ("Prop. 8 and 9 in Lan and Ghadimi [2011]", L1030: ``O(1/sqrt t)`` for the
nonsmooth part when ``mu = 0``, ``O(1/t)`` when ``mu > 0``); the rules here are [external]: Ghadimi and
Lan 2012 (SIAM J. Optim. 22(4), 1469-1492, the generic AC-SA, its Algorithm 1 with the Euclidean
distance ``V(x, z) = |z - x|^2 / 2`` and ``X = R^d``) and Lan 2012 (Math. Program. 133, the AC-SA for
``mu = 0``, Cor. 1). The update, one sampled (sub)gradient ``G`` per step, output ``x^ag``:

    x^md_t = [(1 - a_t)(mu + c_t) x^ag_{t-1} + a_t ((1 - a_t) mu + c_t) x_{t-1}] / [c_t + (1 - a_t^2) mu]
    x_t    = argmin_x a_t [<G(x^md_t), x> + mu V(x^md_t, x)] + [(1 - a_t) mu + c_t] V(x_{t-1}, x)
           = [a_t mu x^md_t + ((1 - a_t) mu + c_t) x_{t-1} - a_t G(x^md_t)] / (mu + c_t)
    x^ag_t = a_t x_t + (1 - a_t) x^ag_{t-1}

(``c_t`` is Ghadimi-Lan's ``gamma_t``, renamed to keep ``gamma`` for Lan's step), with ``a_t = 2/(t+1)``,
``t = 1..N``, and

- convex (``mu = 0``, Lan 2012 Cor. 1): the update is Lan's ``x^md_t = a_t x_{t-1} + (1 - a_t) x^ag_{t-1}``,
  ``x_t = x_{t-1} - gamma_t G`` with ``gamma_t = a_t / c_t = (t+1) gamma / 2`` and
  ``gamma = min{1/(4L), Omega / (N+2)^{3/2}}``; ``Omega`` stands for the constant of Lan's optimal
  ``gamma*_N`` (a multiple of ``D / sqrt(M^2 + sigma^2)``) and is tuned, as the seed tunes every baseline
  (default 1). Rate ``O(L D^2 / N^2) + O(D sqrt(M^2 + sigma^2) / sqrt N)``;
- strongly convex (Ghadimi-Lan Prop. 9 of the report the seed cites): ``c_t = 4 Omega / (t (t+1))``
  with ``Omega = L`` by default; rate ``4 L V(x_0, x*) / (N (N+1)) + 4 (M^2 + sigma^2) / (mu (N+1))``.

Checked (tests/solvers/test_stochastic_smoothing.py): the step against the prox subproblem solved by
scipy and, at ``mu = 0``, against Lan's step; the fitted slope of ``log(Phi(x^ag_N) - Phi*)`` (cvxpy's
``Phi*``) against ``log N`` near -1 (strongly convex, one run read every epoch) and near -1/2 (convex,
one run per horizon ``N``, since the step depends on it), and Prop. 9's bound at ``N`` with an upper
estimate of ``M^2 + sigma^2``. The papers' text was not retrievable offline this session (only their
abstracts), so the constants are those of the lead's derivation; the tests are what vouches for them.

``L`` is the Lipschitz constant of the smooth part: ``L_g`` of ``nesterov_smoothing`` when the problem
offers it (the ridge of a hinge model), else the problem's ``L``, else the ``L=`` option. ``N`` is the
horizon ``max_iter * n_terms`` (the convex step depends on it).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..checks import check_count, check_positive
from ..errors import InputError
from ..problem import capability, constant
from ._incremental_common import start
from ._stochastic_approximation import DEFAULT_EPOCHS, run_steps, sa_method


class ACSAState(NamedTuple):
    """``x_{t-1}``, ``x^ag_{t-1}`` and the number of steps taken."""

    x: np.ndarray
    x_ag: np.ndarray
    t: int


def acsa_step(state: ACSAState, grad, *, mu: float, c: float) -> ACSAState:
    """One AC-SA step with ``a_t = 2/(t+1)`` and the prox weight ``c = c_t``; ``grad(x_md)`` samples ``G``."""
    x, xag, t0 = state
    t = t0 + 1
    a = 2.0 / (t + 1)
    xmd = ((1 - a) * (mu + c) * xag + a * ((1 - a) * mu + c) * x) / (c + (1 - a * a) * mu)
    xn = (a * mu * xmd + ((1 - a) * mu + c) * x - a * grad(xmd)) / (mu + c)
    return ACSAState(xn, a * xn + (1 - a) * xag, t)


@sa_method("acsa", needs=("term_grad",))
def acsa(
    problem,
    x0=None,
    *,
    omega: float | None = None,
    strongly_convex: bool | None = None,
    L: float | None = None,
    **common,
):
    """AC-SA (Lan 2012; Ghadimi-Lan 2012 Prop. 9 when strongly convex); ``common``: the options of
    :func:`~solvers.methods._stochastic_approximation.run_steps` (``max_iter`` epochs fixes the horizon)."""
    sm = capability(problem, "nesterov_smoothing")
    if L is None:
        L = sm.L_g if sm is not None else constant(problem, "L")
    if L is None:
        raise InputError("L", "the problem offers no L of its smooth part; give L=")
    mu = constant(problem, "mu", 0.0) or 0.0
    sc = mu > 0 if strongly_convex is None else bool(strongly_convex)
    if sc and not mu > 0:
        raise InputError("strongly_convex", f"needs mu > 0; the problem has mu = {mu}")
    N = int(check_count(common.get("max_iter", DEFAULT_EPOCHS), field="max_iter")) * problem.n_terms
    if sc:
        om = check_positive(L if omega is None else omega, field="omega")

        def weight(t: int) -> float:
            return 4.0 * om / (t * (t + 1))

        m = mu
    else:
        om = check_positive(1.0 if omega is None else omega, field="omega")
        gam = min(1.0 / (4.0 * L) if L > 0 else np.inf, om / (N + 2) ** 1.5)

        def weight(t: int) -> float:
            return (2.0 / (t + 1)) / ((t + 1) * gam / 2.0)

        m = 0.0
    tg = problem.term_grad
    x = start(problem, x0)
    state, mon, epochs = run_steps(
        problem,
        "acsa",
        ACSAState(x, x.copy(), 0),
        lambda s, j: acsa_step(s, lambda z: tg(j, z), mu=m, c=weight(s.t + 1)),
        lambda s: s.x_ag,
        **common,
    )
    return mon.result(state.x_ag, epochs, omega=om, strongly_convex=sc, L=L)
