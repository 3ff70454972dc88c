"""A model's gradients by reverse-mode automatic differentiation (:mod:`solvers.autodiff`).

:class:`TapeGradients` wraps any model that writes its per-example log-likelihood once with the
tape's primitives, as ``loglik_terms(theta, idx) -> (n,)`` (:class:`~samplers.models.logistic.
LogisticRegression`, :class:`~samplers.models.drbm.DRBM`), and is itself a :class:`Model`: its
per-example gradients (the ``(n, D)`` matrix of Eq. 4.46) come from one reverse sweep
(:func:`solvers.autodiff.per_example_grads`), its full gradient from another. Every sampler runs on
it, so a new model needs only its log density; a hand-written gradient is then an optimisation
checked against the tape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers import autodiff as ad


class TapeGradients:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.dim, self.n_data = model.dim, model.n_data

    def in_support(self, theta: np.ndarray) -> bool:
        return bool(self.model.in_support(theta))

    def log_prior(self, theta: np.ndarray) -> float:
        return float(self.model.log_prior(theta))

    def grad_log_prior(self, theta: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.grad_log_prior(theta))

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return ad.per_example_grads(lambda rows: self.model.loglik_terms(rows, idx), theta, len(idx))[1]

    def log_post(self, theta: np.ndarray) -> float:
        return float(self.model.log_post(theta))

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        g = ad.grad(lambda t: ad.sum(self.model.loglik_terms(t, slice(None))))(theta)
        return self.grad_log_prior(theta) + g
