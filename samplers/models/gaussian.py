"""A conjugate Gaussian: the mean ``theta`` in R^D of ``x_i ~ N(theta, s^2 I)`` under the prior
``N(0, tau^2 I)``. The posterior is ``N(m, v I)`` with ``1/v = 1/tau^2 + N/s^2`` and
``m = v sum_i x_i / s^2``: an analytic reference for every sampler.

Its mini-batch gradient noise does not depend on ``theta`` (the per-example gradients are
``(x_i - theta)/s^2``), so it is the constant-noise case of SGNHT's Proposition 3 (seed 000 l.2142):
with mini-batches of n drawn with replacement the noise of ``grad U~`` has covariance
``(N^2/n) Cov_pop(x)/s^4`` (:meth:`Gaussian.gradient_noise_cov`).
"""

from __future__ import annotations

import numpy as np

from solvers.errors import InputError

from .base import GaussianPrior


class Gaussian(GaussianPrior):
    def __init__(self, x: np.ndarray, *, s: float = 1.0, tau: float = 10.0) -> None:
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[0] < 2:
            raise InputError("x", f"must be an (N, D) array with N >= 2; got shape {x.shape}")
        if not np.isfinite(x).all():
            raise InputError("x", "must be finite", code="nan")
        if not (s > 0 and tau > 0):
            raise InputError("s", f"s and tau must be > 0; got {s}, {tau}")
        self.x, self.s2, self.prior_var = x, float(s) ** 2, float(tau) ** 2
        self.n_data, self.dim = x.shape
        self._xsum = x.sum(axis=0)

    @classmethod
    def generate(cls, n: int = 100, dim: int = 3, seed: int = 0, **kw: float) -> Gaussian:
        """``n`` points around a random mean, whitened to population covariance I (so the gradient
        noise is isotropic: ``sigma^2 I`` with ``sigma^2 = N^2/n`` when ``s = 1``)."""
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((n, dim))
        z = z - z.mean(axis=0)
        z = np.linalg.solve(np.linalg.cholesky(z.T @ z / n), z.T).T
        return cls(z + rng.normal(0.0, 2.0, dim), **kw)

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return (self.x[idx] - theta) / self.s2

    def log_post(self, theta: np.ndarray) -> float:
        r = self.x - theta
        return self.log_prior(theta) - 0.5 * float((r * r).sum()) / self.s2

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        return self.grad_log_prior(theta) + (self._xsum - self.n_data * theta) / self.s2

    def posterior_mean_var(self) -> tuple[np.ndarray, np.ndarray]:
        v = 1.0 / (1.0 / self.prior_var + self.n_data / self.s2)
        return v * self._xsum / self.s2, np.full(self.dim, v)

    def gradient_noise_cov(self, batch: int) -> np.ndarray:
        """Covariance of ``grad U~ - grad U`` for batches of ``batch`` items drawn with replacement."""
        return (self.n_data**2 / batch) * np.cov(self.x.T, bias=True).reshape(self.dim, self.dim) / self.s2**2
