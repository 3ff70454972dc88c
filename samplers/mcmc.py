"""The exact (full-data, Metropolis-corrected) samplers of seed 000 section 4.2: random-walk
Metropolis-Hastings (Alg. 4.1, Eq. 4.5), MALA and its preconditioned form (Eq. 4.11-4.13) and HMC
(leapfrog, Eq. 4.18-4.20, accepted with ``min(1, exp(H - H*))``, l.1998; Eq. 4.23 omits the exp).

MALA's proposal is a gradient step plus noise: it is :func:`solvers.methods.sgd.sgd_step` on the
(preconditioned) potential gradient ``M grad U`` with a constant step ``h``, plus ``sqrt(2h) M^{1/2}
xi`` (the seed prints ``sqrt(2hN)`` and ``sqrt(2M) h``: typos).

A proposal outside the model's support or with a non-finite log density (an overflowing leapfrog
path) is rejected and counted in ``n_rejected_nonfinite``: the chain itself never holds a
non-finite value.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from solvers.errors import InputError
from solvers.methods.sgd import SGDState, sgd_step

from .kernel import Kernel, positive, spd_factor
from .models.base import Model

_IDENTITY = lambda x, t: x  # no prox: the samplers are unconstrained


class MCMCState(NamedTuple):
    """Position, its log posterior and gradient (the gradient is empty for MH), the step count, the
    number of accepted proposals and of proposals rejected for a non-finite density."""

    theta: np.ndarray
    logp: float
    grad: np.ndarray
    k: int
    n_accepted: int
    n_rejected_nonfinite: int


def _mass(model: Model, mass: Any) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(M, chol M, M^{-1})`` or Nones for the identity."""
    if mass is None:
        return None, None, None
    M, L = spd_factor("mass", mass, model.dim)
    return M, L, np.linalg.inv(M)


def _finite_logp(model: Model, theta: np.ndarray) -> float:
    if not (np.isfinite(theta).all() and model.in_support(theta)):
        return -np.inf
    lp = model.log_post(theta)
    return lp if np.isfinite(lp) else -np.inf


def _accept(state: MCMCState, theta, logp, grad, log_ratio: float, rng: np.random.Generator) -> MCMCState:
    """The Metropolis-Hastings decision ``u <= min(1, exp(log_ratio))`` (Eq. 4.5)."""
    k = state.k + 1
    if not np.isfinite(log_ratio):
        return state._replace(k=k, n_rejected_nonfinite=state.n_rejected_nonfinite + 1)
    if np.log(rng.random()) <= log_ratio:
        return MCMCState(theta, logp, grad, k, state.n_accepted + 1, state.n_rejected_nonfinite)
    return state._replace(k=k)


def _init(model: Model, theta0: np.ndarray, rng: np.random.Generator, cfg: dict[str, Any]) -> MCMCState:
    g = model.grad_log_post(theta0) if cfg["uses_grad"] else np.zeros(0)
    return MCMCState(theta0, model.log_post(theta0), g, 0, 0, 0)


# random-walk Metropolis-Hastings
def mh_configure(model: Model, step: float, mass: Any = None) -> dict[str, Any]:
    """Proposal ``theta* = theta + step L xi``, ``L L^T = mass`` (identity by default)."""
    return {"h": positive("step", step), "L": _mass(model, mass)[1], "uses_grad": False}


def mh_step(model: Model, state: MCMCState, rng: np.random.Generator, cfg: dict[str, Any]) -> MCMCState:
    xi = rng.standard_normal(model.dim)
    prop = state.theta + cfg["h"] * (xi if cfg["L"] is None else cfg["L"] @ xi)
    lp = _finite_logp(model, prop)
    return _accept(state, prop, lp, state.grad, lp - state.logp, rng)


# MALA
def mala_configure(model: Model, step: float, mass: Any = None) -> dict[str, Any]:
    """Step ``h``; ``mass`` is the preconditioner M of Eq. (4.13) (identity by default)."""
    M, L, Minv = _mass(model, mass)
    return {"h": positive("step", step), "M": M, "L": L, "Minv": Minv, "uses_grad": True}


def _mala_mean(theta: np.ndarray, grad_logp: np.ndarray, cfg: dict[str, Any]) -> np.ndarray:
    """The gradient step of the proposal: :func:`sgd_step` on ``M grad U = -M grad log pi``."""
    d = -grad_logp if cfg["M"] is None else -(cfg["M"] @ grad_logp)
    return sgd_step(SGDState(theta, 0, np.zeros(0)), d, _IDENTITY, step=cfg["h"], schedule=0, mu=0.0, avg_from=0).x


def _mala_logq(to: np.ndarray, mean: np.ndarray, cfg: dict[str, Any]) -> float:
    """``log N(to | mean, 2h M)`` up to the constant that cancels in the ratio (Eq. 4.12)."""
    r = to - mean
    return float(-(r @ (r if cfg["Minv"] is None else cfg["Minv"] @ r)) / (4.0 * cfg["h"]))


def mala_step(model: Model, state: MCMCState, rng: np.random.Generator, cfg: dict[str, Any]) -> MCMCState:
    mean = _mala_mean(state.theta, state.grad, cfg)
    xi = rng.standard_normal(model.dim)
    prop = mean + np.sqrt(2.0 * cfg["h"]) * (xi if cfg["L"] is None else cfg["L"] @ xi)
    lp = _finite_logp(model, prop)
    if not np.isfinite(lp):
        return _accept(state, prop, lp, state.grad, -np.inf, rng)
    g = model.grad_log_post(prop)
    if not np.isfinite(g).all():
        return _accept(state, prop, lp, g, np.nan, rng)
    back = _mala_mean(prop, g, cfg)
    log_ratio = lp - state.logp + _mala_logq(state.theta, back, cfg) - _mala_logq(prop, mean, cfg)
    return _accept(state, prop, lp, g, log_ratio, rng)


# HMC
def hmc_configure(model: Model, step: float, n_leapfrog: int = 10, mass: Any = None) -> dict[str, Any]:
    """Leapfrog step ``h``, ``n_leapfrog`` (L) steps per proposal, mass matrix ``mass`` (M)."""
    if not (isinstance(n_leapfrog, int | np.integer) and n_leapfrog >= 1):
        raise InputError("n_leapfrog", f"must be an integer >= 1; got {n_leapfrog!r}")
    M, L, Minv = _mass(model, mass)
    return {"h": positive("step", step), "n_leapfrog": int(n_leapfrog), "L": L, "Minv": Minv, "uses_grad": True}


def hmc_step(model: Model, state: MCMCState, rng: np.random.Generator, cfg: dict[str, Any]) -> MCMCState:
    """Resample ``p ~ N(0, M)``, run L leapfrog steps on ``H = U + p^T M^{-1} p/2`` (Eq. 4.15-4.20)."""
    h, Minv = cfg["h"], cfg["Minv"]
    xi = rng.standard_normal(model.dim)
    p = xi if cfg["L"] is None else cfg["L"] @ xi
    kinetic = lambda q: 0.5 * float(q @ (q if Minv is None else Minv @ q))
    H0 = -state.logp + kinetic(p)
    theta, g = state.theta, state.grad
    with np.errstate(over="ignore", invalid="ignore"):
        pn = p + 0.5 * h * g  # g = grad log pi = -grad U
        for i in range(cfg["n_leapfrog"]):
            theta = theta + h * (pn if Minv is None else Minv @ pn)
            if not (np.isfinite(theta).all() and model.in_support(theta)):
                return _accept(state, theta, -np.inf, g, np.nan, rng)
            g = model.grad_log_post(theta)
            pn = pn + (h if i < cfg["n_leapfrog"] - 1 else 0.5 * h) * g
    lp = _finite_logp(model, theta)
    if not (np.isfinite(lp) and np.isfinite(g).all() and np.isfinite(pn).all()):
        return _accept(state, theta, lp, g, np.nan, rng)
    return _accept(state, theta, lp, g, H0 - (-lp + kinetic(pn)), rng)


def _position(state: MCMCState) -> np.ndarray:
    return state.theta


def _no_momentum(state: MCMCState, cfg: dict[str, Any]) -> None:
    return None


def _no_stats(state: MCMCState) -> dict[str, float]:
    return {}


MH = Kernel(mh_configure, _init, mh_step, _position, _no_momentum, _no_stats, True)
MALA = Kernel(mala_configure, _init, mala_step, _position, _no_momentum, _no_stats, True)
HMC = Kernel(hmc_configure, _init, hmc_step, _position, _no_momentum, _no_stats, True)
