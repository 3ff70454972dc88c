"""Stochastic ADMM (seed 002 Alg. 3, L1195-1204) and its comparators online ADMM and FOBOS (L1373-1385).

On an ERM problem (:class:`~solvers.problems.erm.ERM`) ``J(x) = s sum_i phi_i(a_i^T x) + r(x)`` read as
Ouyang's eq. 74 with ``A = I``, ``B = -I``, ``b = 0``:

    min  E_i theta_1(x, i) + theta_2(y)   s.t.  x - y = 0,   theta_1(x, i) = s N phi_i(a_i^T x),  theta_2 = r,

one uniformly drawn term ``i`` per iteration. With the scaled multiplier ``zeta = lambda / beta`` (the
thesis's minus-sign Lagrangian, eq. 77) and ``g = theta_1'(x_k, i)``, iteration ``k = 0, 1, ...`` is

    x_{k+1}    = argmin <g, x> + (beta/2)|x - y_k - zeta_k|^2 + |x - x_k|^2 / (2 eta_{k+1})       (eq. 78)
               = (x_k / eta - g + beta (y_k + zeta_k)) / (beta + 1/eta)                           (eq. 95)
    y_{k+1}    = prox_{r/beta}(x_{k+1} - zeta_k)          (the soft threshold S_{gamma/beta} for l1)
    zeta_{k+1} = zeta_k - (x_{k+1} - y_{k+1})

``online_admm`` (Wang & Banerjee) minimises the sampled squared loss itself instead of its
linearisation: ``x_{k+1} = [c a a^T + (beta + 1/eta) I]^{-1} (c b_i a + beta (y_k + zeta_k) + x_k/eta)``
(``c = s N``; Sherman-Morrison, O(D)); the squared loss only. ``fobos`` (eq. 97) is the proximal
stochastic gradient step ``x_{k+1} = prox_{eta r}(x_k - eta g)`` (stochastic ADMM with ``x = y`` forced).

Step sizes ``eta_k`` (option ``schedule``; ``eta0`` scales them):

* ``"convex"`` ``eta_k = D_X / (M sqrt(2k))`` (Thm 7), ``eta0 = D_X/(M sqrt 2)``; the thesis's E3 uses 1;
* ``"strong"`` ``eta_k = 1/(k mu)`` (Thm 8), ``mu`` the strong-convexity modulus of ``E theta_1``
  (default: ``s lambda_min(A^T A)`` for the squared loss; refused when it is 0);
* ``"smooth"`` ``eta_k = 1/(L + sigma sqrt(2k)/D_X)`` (Thm 9), ``eta0 = D_X/(sigma sqrt 2)``, ``L`` the
  problem's (the Lipschitz constant of ``grad E theta_1``).

Output: the ergodic average (eq. 75) ``x_bar_t = (1/t) sum_{i=0}^{t-1} x_i``, ``y_bar_t = (1/t) sum_{i=1}^t y_i``
(the shifted index of Thms 7-8); with ``schedule="smooth"`` both over ``1..t`` (eq. 93). The same
average is the output of the comparators (``average=False``: the last iterate). The theorems bound
``theta(u_bar_t) - theta(u_*) + rho |x_bar_t - y_bar_t|``: ``O(1/sqrt t)``, ``O(log t / t)``,
``O(1/sqrt t)``. The trace (once per epoch of ``n_terms`` iterations,
:func:`~solvers.methods._stochastic_approximation.run_steps`) holds ``J(x_bar)``, and for the two ADMMs
``theta = theta_1(x_bar) + theta_2(y_bar)`` and the constraint residual ``|x_bar - y_bar|`` (the two
parts of the theorems' measure); ``max_iter`` counts epochs.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..checks import check_choice, check_positive
from ..errors import InputError
from ..problem import start_point
from ..result import SolveResult
from ._stochastic_approximation import run_steps, sa_method

SCHEDULES = ("convex", "strong", "smooth")
_NEEDS = ("A", "phi", "reg", "scale")


class SAState(NamedTuple):
    k: int  # iterations done
    x: np.ndarray
    y: np.ndarray
    zeta: np.ndarray  # the scaled multiplier lambda / beta
    x_sum: np.ndarray  # sum of the x iterates in the ergodic average
    y_sum: np.ndarray  # sum of y_1..y_k


def step_schedule(problem: Any, schedule: str, eta0: float, mu: float | None) -> Any:
    """``k -> eta_k`` (``k >= 1``) of Thm 7, 8 or 9 (see the module docstring)."""
    check_choice(schedule, SCHEDULES, field="schedule")
    check_positive(eta0, field="eta0")
    if schedule == "convex":
        return lambda k: eta0 / math.sqrt(k)
    if schedule == "smooth":
        L = float(problem.L)
        return lambda k: 1.0 / (L + math.sqrt(k) / eta0)
    if mu is None:
        mu = loss_strong_convexity(problem)
    mu = check_positive(mu, field="mu")
    return lambda k: 1.0 / (k * mu)


def loss_strong_convexity(problem: Any) -> float:
    """``mu`` of ``E theta_1 = s sum_i phi_i(a_i^T x)``: ``s lambda_min(A^T A)`` for the squared loss.

    Raises :class:`InputError` naming ``problem`` when it is 0 (fewer terms than coordinates, collinear
    columns) and ``mu`` for the other losses (not strongly convex on all of R^D: give ``mu``)."""
    if problem.phi.kind != "squared":
        raise InputError("mu", f"schedule 'strong' needs mu for the {problem.phi.kind} loss (pass mu > 0)")
    A = problem.A.toarray() if sp.issparse(problem.A) else problem.A
    lam_min = float(np.linalg.eigvalsh(A.T @ A)[0]) * problem.scale
    if not lam_min > 1e-12 * max(1.0, problem.L):
        raise InputError(
            "problem",
            f"the loss is not strongly convex (s lambda_min(A^T A) = {lam_min:.3g}); "
            "schedule 'strong' (Thm 8) needs mu > 0: use 'convex' or 'smooth'",
        )
    return lam_min


def _stochastic(
    method: str, problem: Any, x0: Any, *, schedule: str, eta0: float, mu: Any, beta: float, average: bool, common
) -> SolveResult:
    beta = check_positive(beta, field="beta")
    eta = step_schedule(problem, schedule, eta0, mu)
    if method == "online_admm" and problem.phi.kind != "squared":
        raise InputError("problem", f"online_admm minimises the sampled squared loss; got {problem.phi.kind!r}")
    A, b, phi, reg = problem.A, problem.phi.b, problem.phi, problem.reg
    c = problem.scale * problem.n_terms  # theta_1(x, i) = c phi_i(a_i^T x)
    dense = not sp.issparse(A)
    if not dense:
        A = sp.csr_matrix(A)
        indptr, indices, data = A.indptr, A.indices, A.data

    def row(i: int) -> np.ndarray:
        if dense:
            return A[i]
        a = np.zeros(A.shape[1])
        a[indices[indptr[i] : indptr[i + 1]]] = data[indptr[i] : indptr[i + 1]]
        return a

    sq = np.asarray(A.multiply(A).sum(axis=1)).ravel() if not dense else np.einsum("ij,ij->i", A, A)  # |a_i|^2
    shifted = schedule != "smooth"  # eq. 75: x averaged over x_0..x_{t-1}; eq. 93: over x_1..x_t

    def step(s: SAState, i: int) -> SAState:
        a = row(i)
        e = eta(s.k + 1)
        g = c * float(phi.derivs(float(a @ s.x), i))  # theta_1'(x_k, i) = g a
        if method == "fobos":
            x = reg.prox(s.x - e * g * a, e)
            y, zeta = x, s.zeta
        else:
            kappa = beta + 1.0 / e
            if method == "stochastic_admm":
                x = (s.x / e - g * a + beta * (s.y + s.zeta)) / kappa
            else:  # online ADMM: (c a a^T + kappa I)^{-1} r by Sherman-Morrison
                r = c * b[i] * a + beta * (s.y + s.zeta) + s.x / e
                x = (r - (c * float(a @ r) / (kappa + c * sq[i])) * a) / kappa
            y = reg.prox(x - s.zeta, 1.0 / beta)
            zeta = s.zeta - (x - y)
        x_sum = s.x_sum + (s.x if shifted else x)
        return SAState(s.k + 1, x, y, zeta, x_sum, s.y_sum + y)

    def point(s: SAState) -> np.ndarray:
        return s.x_sum / s.k if (average and s.k) else s.x

    def split_columns(s: SAState) -> dict[str, float]:
        """Ouyang's measures at ``u_bar = (x_bar, y_bar)``: ``theta_1(x_bar) + theta_2(y_bar)`` and ``|x_bar - y_bar|``."""
        if method == "fobos":
            return {}
        xb, yb = point(s), (s.y_sum / s.k if (average and s.k) else s.y)
        return {"theta": problem.smooth_value(xb) + reg.value(yb), "residual": float(np.linalg.norm(xb - yb))}

    x = start_point(problem, x0)
    zeros = np.zeros_like(x)
    state0 = SAState(0, x, x.copy(), zeros, zeros, zeros)
    state, mon, epochs = run_steps(problem, method, state0, step, point, extra=split_columns, **common)
    y_out = state.y_sum / state.k if (average and state.k) else state.y
    return mon.result(point(state).copy(), epochs, y=y_out, x_last=state.x, schedule=schedule, beta=beta)


def _variant(method: str, summary: str) -> Any:
    def solve(
        problem,
        x0=None,
        *,
        schedule: str = "convex",
        eta0: float = 1.0,
        mu: float | None = None,
        beta: float = 1.0,
        average: bool = True,
        **common,
    ):
        return _stochastic(
            method, problem, x0, schedule=schedule, eta0=eta0, mu=mu, beta=beta, average=average, common=common
        )

    solve.__name__ = solve.__qualname__ = method
    solve.__doc__ = (
        f"{summary} Options: ``schedule`` ('convex', 'strong', 'smooth': Thms 7-9), ``eta0``, ``mu``, "
        "``beta`` (the ADMM penalty; unused by fobos), ``average`` (the ergodic output, eq. 75/93); "
        "``common``: the options of :func:`~solvers.methods._stochastic_approximation.run_steps`."
    )
    return sa_method(method, needs=_NEEDS)(solve)


stochastic_admm = _variant(
    "stochastic_admm", "Stochastic ADMM (seed 002 Alg. 3): the x-step on a linearised sample loss."
)
online_admm = _variant(
    "online_admm", "Online ADMM (Wang & Banerjee; seed 002 L1381): the x-step on the sampled squared loss."
)
fobos = _variant("fobos", "FOBOS (seed 002 eq. 97): a proximal stochastic gradient step.")
