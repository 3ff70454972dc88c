"""A posterior over the weights of a Rényi pool at a fixed γ (and λ), where it is cheap.

The weighted Rényi divergence aggregate (seed 000 Eq. 2.6-2.8) is the fixed point
``P = Σ_i w'_i Q_i(P)``; its log-likelihood of the labels and the exact gradient in the weights
(implicit differentiation, :func:`aggregators.renyi_gradient.renyi_loglik_grad`) cost one
fixed-point solve and one adjoint pass over the items. With γ (and the annealing λ, Eq. 2.21-2.22)
held at the fitted pool's values, the weights get the Dirichlet(``alpha``) prior and the samplers of
:mod:`samplers` run on the softmax coordinates of :class:`samplers.pool_weights.PoolWeightsModel`
(the Jacobian folded into the prior): this module only swaps the likelihood.

Costs: the full-data density and gradient (HMC, MALA) are one batched call of
``renyi_loglik_grad`` each, warm-started from the previous aggregate; the per-item gradient rows of
the mini-batch samplers (SGLD, SGHMC, SGNHT, CCAdL) are one batched solve of the mini-batch plus one
adjoint call per item. γ itself is not sampled: the posterior is conditional on the fitted γ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aggregators.renyi import renyi_aggregate, renyi_loglik_grad
from aggregators.renyi_fixed_point import check_gamma, check_lam
from samplers.pool_weights import PoolWeightsModel, to_weights

#: tolerance of the fixed-point solves inside the likelihood (log-space residual)
TOL = 1e-11


class RenyiWeightsModel(PoolWeightsModel):
    """The posterior over the weights of the Rényi pool with orders ``gamma`` (scalar or per agent)
    and annealing ``lam`` (None: 1) on softmax coordinates; ``log_probs`` ``(n_items, n_agents,
    n_classes)``, ``y`` ``(n_items,)``."""

    def __init__(self, log_probs: Any, y: Any, *, gamma: Any, lam: Any = None, alpha: Any = 1.0) -> None:
        super().__init__(log_probs, y, pool="log", alpha=alpha)  # the shared checks of inputs and prior
        self.pool = "renyi"
        self.gamma = check_gamma(gamma, self.n_agents)
        self.lam = check_lam(lam, self.n_agents)
        self._last: tuple[bytes, float, np.ndarray] | None = None
        self._warm: np.ndarray | None = None

    def _full(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean log-likelihood of all items and its gradient in ``w`` (cached for the last ``w``)."""
        key = w.tobytes()
        if self._last is None or self._last[0] != key:
            ll, g, log_q, _ = renyi_loglik_grad(
                self.log_probs, self.y, w, self.gamma, self.lam, init=self._warm, tol=TOL
            )
            self._warm = log_q
            self._last = (key, ll, g["w"])
        return self._last[1], self._last[2]

    def _loglik_w_grads(self, w: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-item log-likelihoods and gradients in ``w`` (``(n,)``, ``(n, M)``): one solve of the
        items, then one adjoint call per item on its solved aggregate."""
        L, y = self.log_probs[idx], self.y[idx]
        _, _, log_q, _ = renyi_loglik_grad(L, y, w, self.gamma, self.lam, tol=TOL, want=())
        G = np.empty((len(idx), self.n_agents))
        for j in range(len(idx)):
            G[j] = renyi_loglik_grad(L[j : j + 1], y[j : j + 1], w, self.gamma, self.lam, solved=log_q[j : j + 1])[1][
                "w"
            ]
        return log_q[np.arange(len(idx)), y], G

    def log_post(self, theta: np.ndarray) -> float:
        return self.log_prior(theta) + self.n_data * self._full(to_weights(theta))[0]

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        w = to_weights(theta)
        g = self.n_data * self._full(w)[1]
        return self.grad_log_prior(theta) + (w * (g - g @ w))[:-1]

    def mean_log_loss(self, w: np.ndarray) -> float:
        return -self._full(w)[0]

    def aggregate(self, log_probs: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The Rényi aggregate (Eq. 2.8) of normalised ``log_probs`` at weights ``w``."""
        return renyi_aggregate(log_probs, w, self.gamma, lam=self.lam, floor=None, tol=TOL)
