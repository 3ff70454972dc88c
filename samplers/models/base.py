"""The model interface every sampler runs on (seed 000 section 4.1, Eq. 4.1-4.3 and 4.27).

A model is a posterior ``pi(theta) ∝ p(theta) prod_i p(x_i | theta)`` over ``theta`` in R^D with
N data items. It offers

* ``dim`` (D) and ``n_data`` (N);
* ``log_prior(theta)`` and ``grad_log_prior(theta)``;
* ``loglik_grads(theta, idx)``: the per-example likelihood gradients ``grad log p(x_i | theta)`` of
  the items ``idx`` as an ``(len(idx), D)`` matrix (CCAdL estimates its covariance from these rows,
  Eq. 4.46);
* ``log_post(theta)`` and ``grad_log_post(theta)`` over the full data (MH, MALA, HMC);
* ``in_support(theta)``: False outside the posterior's support (the Normal-Gamma precision must stay
  positive).

The potential is ``U = -log_post``; the mini-batch estimate of its gradient (Eq. 4.27) is
``grad U~ = -grad log p(theta) - (N/n) sum_{i in batch} grad log p(x_i | theta)``
(:func:`minibatch_grad`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Model(Protocol):
    dim: int
    n_data: int

    def log_prior(self, theta: np.ndarray) -> float: ...

    def grad_log_prior(self, theta: np.ndarray) -> np.ndarray: ...

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray: ...

    def log_post(self, theta: np.ndarray) -> float: ...

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray: ...

    def in_support(self, theta: np.ndarray) -> bool: ...


class GaussianPrior:
    """The prior ``N(0, prior_var I)`` on all of R^D (so every ``theta`` is in the support), for the
    models that inherit it and set ``prior_var``."""

    prior_var: float

    def in_support(self, theta: np.ndarray) -> bool:
        return True

    def log_prior(self, theta: np.ndarray) -> float:
        return float(-0.5 * (theta @ theta) / self.prior_var)

    def grad_log_prior(self, theta: np.ndarray) -> np.ndarray:
        return -theta / self.prior_var


def minibatch_grad(model: Model, theta: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(grad U~(theta), G)``: the mini-batch potential gradient of Eq. (4.27) and the per-example
    likelihood gradients ``G`` (``(n, D)``) it was built from."""
    G = model.loglik_grads(theta, idx)
    return -model.grad_log_prior(theta) - (model.n_data / len(idx)) * G.sum(axis=0), G
