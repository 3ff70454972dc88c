"""Nesterov smoothing of the max-structured losses of seed 002 (Ouyang) chapter II.

A loss with the structure of eq. (22), ``f(x, xi) = max_{u in U} <A_xi x, u> - Q(u)``, has the smooth
surrogate of eq. (23),

    f_gamma(x, xi) = max_{u in U} <A_xi x, u> - Q(u) - gamma omega(u),

with ``omega(u) = u^2 / 2`` (zeta = 1 strongly convex) for both instances here, so ``D_U = max_U omega
= 1/2`` [derived] and Nesterov's sandwich ``f_gamma <= f <= f_gamma + gamma D_U`` holds. The maximiser
``u*`` has a closed form (a clipped ratio), which gives the value and the gradient at once:

- **smoothed hinge** (eq. 70-71, L978-982): margin ``m = y z``, ``U = [0, 1]``,
  ``u* = clip((1 - m) / gamma, 0, 1)``, ``f_gamma = u* (1 - m) - gamma u*^2 / 2``, i.e. 0 for m >= 1,
  ``(1 - m)^2 / (2 gamma)`` for ``1 - gamma <= m < 1``, ``1 - m - gamma/2`` below; ``d/dz = -y u*``.
- **smoothed absolute loss** (eq. 72-73, L996-1000): residual ``r = y - z``, ``U = [-1, 1]``,
  ``u* = clip(r / gamma, -1, 1)``, ``f_gamma = u* r - gamma u*^2 / 2`` (``r^2 / (2 gamma)`` for
  ``|r| < gamma``, ``|r| - gamma / 2`` outside); ``d/dz = -u*``. (It is Huber's loss only at gamma = 1/2.)

``gamma = 0`` gives the nonsmooth loss and ``u*`` a subgradient multiplier (``u* = 1[m < 1]``,
``sign(r)``), the oracle of the subgradient baselines. For a linear model ``A_xi = y s^T`` (hinge) or
``s^T`` (absolute), so ``|A_xi| = |s|`` and the surrogate is ``|s|^2 / gamma``-smooth (Lemma 1, L558);
``E|A_xi|^2`` is estimated by the mean of ``|s_i|^2`` over ``k`` random samples (L986, k = 100).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError

SMOOTHABLE_LOSSES = ("hinge", "absolute")


@dataclass(frozen=True)
class SmoothedLoss:
    """The Nesterov-smoothed ``hinge`` or ``absolute`` loss of a linear score ``z`` (see the module docstring)."""

    kind: str
    #: ``max_U omega`` with ``omega(u) = u^2/2`` on ``U = [0, 1]`` or ``[-1, 1]``
    D_U: float = 0.5
    #: strong convexity of ``omega``
    zeta: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in SMOOTHABLE_LOSSES:
            raise InputError("loss", f"must be one of {SMOOTHABLE_LOSSES}; got {self.kind!r}")

    def _w(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The linear part ``<A_xi x, u>`` per unit ``u``: ``1 - m`` (hinge) or ``r`` (absolute)."""
        return 1.0 - y * z if self.kind == "hinge" else y - z

    def u_star(self, z: np.ndarray, y: np.ndarray, gamma: float) -> np.ndarray:
        """The maximiser of eq. (23): ``clip(w / gamma, lo, 1)``; at ``gamma = 0`` the subgradient multiplier."""
        w = self._w(z, y)
        lo = 0.0 if self.kind == "hinge" else -1.0
        if gamma == 0:
            return (w > 0).astype(float) if self.kind == "hinge" else np.sign(w)
        return np.clip(w / gamma, lo, 1.0)

    def values(self, z: np.ndarray, y: np.ndarray, gamma: float) -> np.ndarray:
        """``f_gamma`` per term (``gamma = 0``: the hinge / absolute loss itself)."""
        u = self.u_star(z, y, gamma)
        return u * self._w(z, y) - 0.5 * gamma * u * u

    def derivs(self, z: np.ndarray, y: np.ndarray, gamma: float) -> np.ndarray:
        """``d f_gamma / dz`` per term (``gamma = 0``: a subgradient)."""
        u = self.u_star(z, y, gamma)
        return -y * u if self.kind == "hinge" else -u


def check_gamma(gamma: float) -> float:
    """A smoothing parameter: a finite number ``>= 0``."""
    if not (np.isfinite(gamma) and gamma >= 0):
        raise InputError("gamma", f"must be a finite number >= 0; got {gamma!r}")
    return float(gamma)


@dataclass(frozen=True)
class SmoothingConstants:
    """What ANSGD's schedules read of ``Phi = f + g`` (seed 002 Table 1, Thms 5-6).

    ``L_g`` and ``mu``: smoothness and strong convexity of ``g``; ``D_U``, ``zeta``: of ``omega``;
    ``mean_sq_norm``: the estimate of ``E|A_xi|^2`` (L986).
    """

    L_g: float
    mu: float
    D_U: float
    zeta: float
    mean_sq_norm: float


def estimate_mean_sq_norm(sqnorms: np.ndarray, k: int = 100, seed: int | np.random.Generator | None = 0) -> float:
    """``E|A_xi|^2`` estimated as the mean of ``|s_i|^2`` over ``k`` samples drawn with replacement (L986)."""
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise InputError("k", f"must be an integer >= 1; got {k!r}")
    rng = np.random.default_rng(seed)
    return float(np.mean(sqnorms[rng.integers(0, sqnorms.shape[0], size=int(k))]))
