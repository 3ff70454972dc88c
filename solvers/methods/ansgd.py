"""ANSGD, accelerated nonsmooth stochastic gradient descent (seed 002, Ouyang, ch. II, Alg. 1, L596-608).

For ``Phi = f + g`` with ``f`` nonsmooth and max-structured (eq. 22) and ``g`` ``L_g``-smooth and
``mu``-strongly convex, each step draws one sample ``xi_{t+1}``, smooths its loss with
``gamma_{t+1}`` (eq. 23) and takes Nesterov's step on the surrogate:

    y_t     = [(1 - a_t)(mu + theta_t) x_t + a_t theta_t v_t] / [mu (1 - a_t) + theta_t]
    G       = grad f_{gamma_{t+1}}(y_t, xi_{t+1}) + grad g(y_t)
    x_{t+1} = y_t - eta_t G
    v_{t+1} = [theta_t v_t + mu y_t - G] / (mu + theta_t)

and outputs ``x_{t+1}`` (no averaging). Schedules (``schedule=``), all with ``gamma_{t+1} = a_t``:

- ``"convex"`` (Thm 5, L780): ``a_t = 2/(t+2)``, ``theta_t = L_g a_t + Omega/sqrt(a_t) + E|A|^2/zeta``,
  ``eta_t = a_t / theta_t``, with ``mu = 0`` in the updates (the theorem's case). ``Omega`` is the
  tuned constant (best ``sigma / D``, L836); default 1. Bound (eq. 45): ``O(1/t^2) + O(1/t) + O(1/sqrt t)``.
- ``"strongly_convex"`` (Thm 6, L846): ``a_t = 2/(t+1)``, ``theta_t = L_g a_t + mu/(2 a_t) + E|A|^2/zeta
  - mu``, ``eta_t = a_t / (mu + theta_t)``. **Typo fixed** (notes 002 section 7.1): the seed's
  ``a_0 = 2`` breaks ``0 <= a <= 1`` (its proof uses ``1 - a_1 = 0``), so the count starts at the
  seed's ``t = 1``: here ``a_t = 2/(t+2)`` for ``t = 0, 1, ...`` (``a_0 = 1``). Bound (eq. 54): ``O(1/t)``.
- ``"practical"`` (L938, L1014): Thm 6 with the third term ``E|A|^2 / (Omega zeta)``; the default
  ``Omega = E|A|^2 / zeta`` makes it 1, the seed's "almost parameter-free" ``theta_t = L_g a_t +
  mu/(2 a_t) + 1 - mu``. Lemma 4 wants ``mu + theta_t - a_t L_{t+1} > 0``, whose mean is
  ``mu/(2 a_t) + 1 - E|A|^2`` here: normalise the rows (``E|s|^2 <= 1``) before using it.

The problem offers ``smoothed_term_grad(i, x, gamma)`` and ``nesterov_smoothing`` (``L_g``, ``mu``,
``zeta`` and the sampled ``E|A_xi|^2``; :class:`~solvers.problems.smoothable.SmoothableLinearModel`).
``max_iter`` counts epochs of ``n_terms`` single-sample steps; the trace records ``Phi(x_{t+1})``
once per epoch. Cost per step: one row's dot product and O(dim) vector updates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..checks import check_choice, check_positive
from ..errors import InputError
from ..smoothing import SmoothingConstants
from ._incremental_common import start
from ._stochastic_approximation import run_steps, sa_method

SCHEDULES = ("convex", "strongly_convex", "practical")


@dataclass(frozen=True)
class ANSGDSchedule:
    """The step-``t`` constants ``(alpha_t, gamma_{t+1}, theta_t, eta_t, mu)`` of one schedule (see the module)."""

    kind: str
    L_g: float
    mu: float
    a2: float  # E|A_xi|^2 / zeta
    omega: float

    def at(self, t: int) -> tuple[float, float, float, float, float]:
        alpha = 2.0 / (t + 2)
        if self.kind == "convex":
            theta = self.L_g * alpha + self.omega / math.sqrt(alpha) + self.a2
            return alpha, alpha, theta, alpha / theta, 0.0
        third = self.a2 if self.kind == "strongly_convex" else self.a2 / self.omega
        theta = self.L_g * alpha + self.mu / (2 * alpha) + third - self.mu
        return alpha, alpha, theta, alpha / (self.mu + theta), self.mu


def make_schedule(kind: str, c: SmoothingConstants, omega: float | None = None) -> ANSGDSchedule:
    """The schedule ``kind`` of :data:`SCHEDULES` for the constants ``c`` (``omega``: Thm 5's Omega, or the
    practical schedule's; defaults 1 and ``E|A|^2/zeta``)."""
    check_choice(kind, SCHEDULES, field="schedule")
    a2 = c.mean_sq_norm / c.zeta
    if kind != "convex" and not c.mu > 0:
        raise InputError("schedule", f"schedule {kind!r} needs mu > 0 (a strongly convex g); got mu = {c.mu}")
    if omega is None:
        omega = 1.0 if kind != "practical" else max(a2, 1e-300)
    check_positive(omega, field="omega")
    s = ANSGDSchedule(kind, float(c.L_g), float(c.mu), float(a2), float(omega))
    _, _, theta, _, mu = s.at(0)
    if not theta + mu > 0:
        raise InputError("schedule", f"theta_0 + mu = {theta + mu:.3g} <= 0 (L_g < mu/2?); use 'convex'")
    return s


class ANSGDState(NamedTuple):
    """``x_t``, ``v_t`` and the step count ``t``."""

    x: np.ndarray
    v: np.ndarray
    t: int


def ansgd_init(x0: np.ndarray) -> ANSGDState:
    """``x_0 = v_0 = x0`` (Alg. 1 step 0)."""
    return ANSGDState(x0, x0.copy(), 0)


def ansgd_step(
    state: ANSGDState, grad: Callable[[np.ndarray, float], np.ndarray], schedule: ANSGDSchedule
) -> ANSGDState:
    """One step of Alg. 1; ``grad(y, gamma)`` is the smoothed stochastic gradient of ``f + g`` at ``y``."""
    x, v, t = state
    alpha, gamma, theta, eta, mu = schedule.at(t)
    y = ((1 - alpha) * (mu + theta) * x + alpha * theta * v) / (mu * (1 - alpha) + theta)
    G = grad(y, gamma)
    return ANSGDState(y - eta * G, (theta * v + mu * y - G) / (mu + theta), t + 1)


@sa_method("ansgd", needs=("smoothed_term_grad", "nesterov_smoothing"))
def ansgd(problem, x0=None, *, schedule: str | None = None, omega: float | None = None, **common):
    """ANSGD (Ouyang Alg. 1): ``schedule`` "convex" | "strongly_convex" | "practical"; ``common``: the
    options of :func:`~solvers.methods._stochastic_approximation.run_steps` (``max_iter`` epochs, ``tol``,
    ``callback``, ``progress``, ``order``, ``seed``)."""
    c: SmoothingConstants = problem.nesterov_smoothing
    kind = schedule if schedule is not None else ("strongly_convex" if c.mu > 0 else "convex")
    sched = make_schedule(kind, c, omega)
    sg = problem.smoothed_term_grad
    state, mon, epochs = run_steps(
        problem,
        "ansgd",
        ansgd_init(start(problem, x0)),
        lambda s, j: ansgd_step(s, lambda y, gam: sg(j, y, gam), sched),
        lambda s: s.x,
        **common,
    )
    return mon.result(state.x, epochs, schedule=kind, omega=sched.omega, mean_sq_norm=c.mean_sq_norm, steps=state.t)
