"""Bayesian logistic regression (seed 000 section 4.4.2, l.2289-2308): labels ``y_i in {-1, +1}``,
likelihood ``prod_i 1/(1 + exp(-y_i w^T x_i))``, prior ``N(0, sigma0^2 I)`` (the seed's
``exp(-w^T w/2)`` is ``sigma0 = 1``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, log_expit

from solvers import autodiff as ad
from solvers.errors import InputError

from .base import GaussianPrior


class LogisticRegression(GaussianPrior):
    def __init__(self, X: np.ndarray, y: np.ndarray, *, prior_std: float = 1.0) -> None:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        if X.ndim != 2 or X.shape[0] < 1:
            raise InputError("X", f"must be an (N, D) array; got shape {X.shape}")
        if not np.isfinite(X).all():
            raise InputError("X", "must be finite", code="nan")
        if y.shape != (X.shape[0],) or not np.isin(y, (-1.0, 1.0)).all():
            raise InputError("y", f"must hold {X.shape[0]} labels in {{-1, +1}}", code="bad_labels")
        if not prior_std > 0:
            raise InputError("prior_std", f"must be > 0; got {prior_std}")
        self.X, self.y, self.prior_var = X, y, float(prior_std) ** 2
        self.n_data, self.dim = X.shape
        self._yX = y[:, None] * X

    @classmethod
    def generate(cls, n: int = 500, dim: int = 5, seed: int = 0, **kw: float) -> LogisticRegression:
        """Gaussian features, a random true weight vector, labels drawn from the model."""
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n, dim))
        w = rng.standard_normal(dim)
        y = np.where(rng.random(n) < expit(X @ w), 1.0, -1.0)
        return cls(X, y, **kw)

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        yX = self._yX[idx]
        return yX * expit(-(yX @ theta))[:, None]

    def loglik_terms(self, theta: Any, idx: Any) -> Any:
        """``log sigma(y_i w^T x_i)`` for the items ``idx`` (Eq. 4.51), written with the tape's
        primitives (:class:`~samplers.models.tape.TapeGradients`); ``theta`` ``(D,)`` or one row per item."""
        return ad.log_sigmoid(self.y[idx] * ad.sum(self.X[idx] * theta, axis=-1))

    def log_post(self, theta: np.ndarray) -> float:
        return self.log_prior(theta) + float(log_expit(self._yX @ theta).sum())

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        return self.grad_log_prior(theta) + self._yX.T @ expit(-(self._yX @ theta))

    def predictive_loglik(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """Mean test log-likelihood ``(1/m) sum log sigma(y_i w^T x_i)`` at ``w = theta``."""
        return float(log_expit(np.asarray(y) * (np.asarray(X) @ theta)).mean())
