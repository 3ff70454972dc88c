"""The Normal-Gamma toy of seed 000 section 4.4.1 (l.2242-2266; Ding et al. 2014): the mean ``mu``
and precision ``gamma`` of a 1-D Gaussian, ``theta = (mu, gamma)``.

Likelihood ``N(x_i | mu, 1/gamma)``; prior ``N(mu | 0, 1/gamma) Gam(gamma | 1, 1)`` (rate form). The
posterior is Normal-Gamma with ``mu_N = N xbar/(N+1)``, ``kappa_N = N+1``, ``alpha_N = 1 + N/2``,
``beta_N = 1 + sum (x_i - xbar)^2/2 + N xbar^2/(2(1+N))``. Marginals: ``gamma ~ Gam(alpha_N, rate
beta_N)`` and ``mu ~ Student-t`` with **2 alpha_N** degrees of freedom (the seed prints "T_2", a
typo; Murphy 2007), location ``mu_N`` and squared scale ``beta_N/(alpha_N kappa_N)``.

The mini-batch gradients of the seed (``grad_mu U~ = (N+1) mu gamma - (gamma N/n) sum x``,
``grad_gamma U~ = 1 - (N+1)/(2 gamma) + mu^2/2 + (N/(2n)) sum (x - mu)^2``) are what
:func:`~samplers.models.base.minibatch_grad` builds from :meth:`NormalGamma.loglik_grads`.
``gamma <= 0`` is outside the support: :meth:`in_support` says so, the exact samplers reject such
proposals and the stochastic-gradient samplers stop and report the step.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from solvers.errors import InputError

_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


class NormalGamma:
    def __init__(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=float)
        if x.ndim != 1 or x.size < 2:
            raise InputError("x", f"must be a 1-D array of at least 2 observations; got shape {x.shape}")
        if not np.isfinite(x).all():
            raise InputError("x", "must be finite", code="nan", index=int(np.argwhere(~np.isfinite(x))[0][0]))
        self.x = x
        self.dim = 2
        self.n_data = x.size

    @classmethod
    def generate(cls, n: int = 100, seed: int = 0) -> NormalGamma:
        """The seed's data: ``n`` draws from N(0, 1)."""
        return cls(np.random.default_rng(seed).standard_normal(n))

    def in_support(self, theta: np.ndarray) -> bool:
        return bool(theta[1] > 0)

    def log_prior(self, theta: np.ndarray) -> float:
        mu, g = theta
        if g <= 0:
            return -np.inf
        return float(0.5 * np.log(g) - _HALF_LOG_2PI - 0.5 * g * mu * mu - g)

    def grad_log_prior(self, theta: np.ndarray) -> np.ndarray:
        mu, g = theta
        return np.array([-g * mu, 0.5 / g - 0.5 * mu * mu - 1.0])

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        mu, g = theta
        r = self.x[idx] - mu
        return np.column_stack([g * r, 0.5 / g - 0.5 * r * r])

    def log_post(self, theta: np.ndarray) -> float:
        mu, g = theta
        if g <= 0:
            return -np.inf
        r = self.x - mu
        return self.log_prior(theta) + float(self.n_data * (0.5 * np.log(g) - _HALF_LOG_2PI) - 0.5 * g * (r @ r))

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        return self.grad_log_prior(theta) + self.loglik_grads(theta, np.arange(self.n_data)).sum(axis=0)

    # the analytic posterior
    def posterior_params(self) -> tuple[float, float, float, float]:
        """``(mu_N, kappa_N, alpha_N, beta_N)``."""
        N, xb = self.n_data, float(self.x.mean())
        beta = 1.0 + 0.5 * float(((self.x - xb) ** 2).sum()) + N * xb * xb / (2.0 * (1 + N))
        return N * xb / (N + 1), N + 1.0, 1.0 + N / 2, beta

    def marginals(self) -> tuple[stats.rv_continuous, stats.rv_continuous]:
        """Frozen scipy marginals of ``mu`` (Student-t, 2 alpha_N dof) and ``gamma`` (Gamma)."""
        m, k, a, b = self.posterior_params()
        return stats.t(df=2 * a, loc=m, scale=np.sqrt(b / (a * k))), stats.gamma(a, scale=1.0 / b)

    def posterior_mean_var(self) -> tuple[np.ndarray, np.ndarray]:
        mu, g = self.marginals()
        return np.array([mu.mean(), g.mean()]), np.array([mu.var(), g.var()])
