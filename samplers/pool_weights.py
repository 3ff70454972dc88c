"""A posterior over pool weights: how sure is a pool of the weights it learnt?

The pools of ``aggregators/`` fit one weight vector ``w`` on the simplex. Here ``w`` gets a
Dirichlet(alpha) prior and the pool's likelihood of the labels, and the posterior is sampled on
additive log-ratio (softmax) coordinates ``z`` in R^(M-1): ``w = softmax([z, 0])``. The change of
variables brings the Jacobian ``|dw/dz| = prod_m w_m``, so the prior density on ``z`` is
``prod_m w_m^alpha_m`` (the Dirichlet's ``alpha_m - 1`` plus one from the Jacobian), with gradient
``alpha_j - w_j sum(alpha)``. Pools (``log_probs``: ``(n_items, n_agents, n_classes)``, normalised
log-probabilities as everywhere in Agora):

* ``"log"``: ``log p(y | w) = sum_m w_m l_{m,y} - logsumexp_k sum_m w_m l_{m,k}`` (seed 000 Eq. 2.x,
  the log opinion pool);
* ``"linear"``: ``log p(y | w) = log sum_m w_m p_{m,y}``.

Per-item gradients with respect to ``z`` are ``J^T g = w * (g - <w, g>)`` (``solvers.simplex``), so
the model is a :class:`samplers.models.base.Model` and every sampler of :func:`samplers.sample` runs
on it (mini-batch SGHMC/SGNHT/CCAdL for many items). :func:`weight_posterior` returns the weight
draws, equal-tailed credible intervals for every weight and for the aggregate's mean log loss, and
the posterior-predictive aggregate.

This package imports ``solvers`` only, so the predictions are checked here (finite, 3-D, at least
two agents and two classes) and normalised with logsumexp; the pools' own validator lives upstream
in ``aggregators.validation``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.checks import as_labels
from solvers.errors import InputError
from solvers.simplex import softmax
from solvers.special import logsumexp

from .run import SampleResult, sample

POOLS = ("log", "linear")


def _check_log_probs(log_probs: Any) -> np.ndarray:
    lp = np.asarray(log_probs, dtype=float)
    if lp.ndim != 3 or lp.shape[1] < 2 or lp.shape[2] < 2 or lp.shape[0] < 1:
        raise InputError("log_probs", f"must be (n_items, n_agents >= 2, n_classes >= 2); got {lp.shape}")
    if np.isnan(lp).any() or np.isposinf(lp).any():
        item, agent = (int(v) for v in np.argwhere(np.isnan(lp) | np.isposinf(lp))[0][:2])
        raise InputError("log_probs", "must not hold NaN or +inf", code="nan", item=item, agent=agent)
    norm = logsumexp(lp, axis=2, keepdims=True)
    if not np.isfinite(norm).all():
        item, agent = (int(v) for v in np.argwhere(~np.isfinite(norm[..., 0]))[0])
        raise InputError("log_probs", "a row is -inf everywhere", code="zero-probability", item=item, agent=agent)
    return lp - norm


def to_weights(z: np.ndarray) -> np.ndarray:
    """``w = softmax([z, 0])`` for one ``(M-1,)`` point or rows ``(n, M-1)``."""
    z = np.asarray(z, dtype=float)
    return softmax(np.concatenate([z, np.zeros(z.shape[:-1] + (1,))], axis=-1))


def to_coordinates(w: np.ndarray) -> np.ndarray:
    """The inverse of :func:`to_weights`: ``z_j = log w_j - log w_M``."""
    lw = np.log(np.asarray(w, dtype=float))
    return lw[..., :-1] - lw[..., -1:]


def pooled_log_probs(log_probs: np.ndarray, w: np.ndarray, pool: str) -> np.ndarray:
    """The pool's normalised log-probabilities ``(n_items, n_classes)`` at weights ``w``."""
    if pool == "log":
        s = np.einsum("imk,m->ik", log_probs, w)
        return s - logsumexp(s, axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.log(np.einsum("imk,m->ik", np.exp(log_probs), w))


class PoolWeightsModel:
    """The posterior over a pool's weights on softmax coordinates (module docstring)."""

    def __init__(self, log_probs: Any, y: Any, *, pool: str = "log", alpha: Any = 1.0) -> None:
        if pool not in POOLS:
            raise InputError("pool", f"must be one of {POOLS}; got {pool!r}")
        self.log_probs = _check_log_probs(log_probs)
        n, M, K = self.log_probs.shape
        self.y = as_labels(y, n, K, field="y")
        a = np.broadcast_to(np.asarray(alpha, dtype=float), (M,)).copy() if np.ndim(alpha) <= 1 else None
        if a is None or a.shape != (M,) or not (np.isfinite(a).all() and (a > 0).all()):
            raise InputError("alpha", f"must be > 0, a scalar or one per agent ({M}); got {alpha!r}")
        self.pool, self.alpha = pool, a
        self.n_data, self.dim, self.n_agents = n, M - 1, M
        self._ly = self.log_probs[np.arange(n), :, self.y]  # (n, M): each agent's log-prob of the label
        self._py = np.exp(self._ly)

    def in_support(self, theta: np.ndarray) -> bool:
        return True

    def log_prior(self, theta: np.ndarray) -> float:
        return float(self.alpha @ np.log(to_weights(theta)))

    def grad_log_prior(self, theta: np.ndarray) -> np.ndarray:
        w = to_weights(theta)
        return self.alpha[:-1] - w[:-1] * self.alpha.sum()

    def _loglik_w_grads(self, w: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-item log-likelihoods and their gradients with respect to ``w`` (``(n,)``, ``(n, M)``)."""
        if self.pool == "log":
            lp = self.log_probs[idx]
            s = np.einsum("imk,m->ik", lp, w)
            q = np.exp(s - logsumexp(s, axis=1, keepdims=True))
            ll = s[np.arange(len(idx)), self.y[idx]] - logsumexp(s, axis=1)
            return ll, self._ly[idx] - np.einsum("imk,ik->im", lp, q)
        py = self._py[idx]
        mix = py @ w
        with np.errstate(divide="ignore"):
            return np.log(mix), py / mix[:, None]

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        w = to_weights(theta)
        _, G = self._loglik_w_grads(w, idx)
        return (w * (G - (G @ w)[:, None]))[:, :-1]

    def log_post(self, theta: np.ndarray) -> float:
        ll, _ = self._loglik_w_grads(to_weights(theta), np.arange(self.n_data))
        return self.log_prior(theta) + float(ll.sum())

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        return self.grad_log_prior(theta) + self.loglik_grads(theta, np.arange(self.n_data)).sum(axis=0)

    def mean_log_loss(self, w: np.ndarray) -> float:
        """The aggregate's mean log loss ``-(1/n) sum log p(y_i | w)`` on the fitting data."""
        return float(-self._loglik_w_grads(w, np.arange(self.n_data))[0].mean())

    def aggregate(self, log_probs: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The pool's normalised log-probabilities ``(n_items, n_classes)`` at weights ``w``."""
        return pooled_log_probs(log_probs, w, self.pool)


@dataclass
class WeightPosterior:
    """Weight draws ``(n, M)``, their mean, equal-tailed credible intervals ``(M, 2)`` at ``level``,
    the aggregate's mean log loss per (thinned) draw and its interval, and the sampler's result."""

    weights: np.ndarray
    mean: np.ndarray
    intervals: np.ndarray
    log_loss: np.ndarray
    log_loss_interval: np.ndarray
    level: float
    pool: str
    result: SampleResult
    model: PoolWeightsModel

    def predict(self, log_probs: Any, max_draws: int = 500) -> np.ndarray:
        """The posterior-predictive aggregate (:func:`posterior_predictive`) of these draws."""
        return posterior_predictive(log_probs, self.weights, self.model.aggregate, max_draws)

    def summary(self) -> dict[str, Any]:
        """What the API stores and shows: the mean and interval of every weight and of the mean log
        loss, the level, the sampler's acceptance rate, ESS of the weights and seconds."""
        from .diagnostics import ess_all

        r = self.result
        return {
            "pool": self.pool,
            "method": r.method,
            "level": self.level,
            "n_draws": int(len(self.weights)),
            "mean": self.mean.tolist(),
            "intervals": self.intervals.tolist(),
            "log_loss_mean": float(self.log_loss.mean()),
            "log_loss_interval": self.log_loss_interval.tolist(),
            "ess": ess_all(self.weights).tolist() if len(self.weights) >= 4 else None,
            "accept_rate": r.accept_rate,
            "seconds": r.seconds,
        }


def posterior_predictive(
    log_probs: Any,
    weights: np.ndarray,
    pool: str | Callable[[np.ndarray, np.ndarray], np.ndarray],
    max_draws: int = 500,
) -> np.ndarray:
    """The posterior-predictive aggregate ``log (1/S) sum_s p(. | w_s)`` over (up to ``max_draws``
    evenly spaced) weight draws ``(n, M)``: ``(n_items, n_classes)`` normalised log-probabilities.
    ``pool``: "log", "linear", or a function ``(log_probs, w) -> pooled log-probabilities`` (a
    model's ``aggregate``)."""
    lp = _check_log_probs(log_probs)
    if lp.shape[1] != weights.shape[1]:
        raise InputError("log_probs", f"has {lp.shape[1]} agents; the posterior has {weights.shape[1]}")
    draws = weights[np.linspace(0, len(weights) - 1, min(max_draws, len(weights))).astype(int)]
    pooled = pool if callable(pool) else (lambda a, w: pooled_log_probs(a, w, str(pool)))
    stack = np.stack([pooled(lp, w) for w in draws])
    return logsumexp(stack, axis=0) - np.log(len(draws))


def weight_posterior(log_probs: Any, y: Any, *, pool: str = "log", alpha: Any = 1.0, **options: Any) -> WeightPosterior:
    """Sample the weight posterior of a ``pool`` ("log" or "linear") under a Dirichlet(``alpha``)
    prior: :func:`sample_weight_posterior` on :class:`PoolWeightsModel` (its options)."""
    return sample_weight_posterior(PoolWeightsModel(log_probs, y, pool=pool, alpha=alpha), **options)


def sample_weight_posterior(
    model: PoolWeightsModel,
    *,
    method: str = "hmc",
    n_samples: int = 4000,
    step: float | None = None,
    level: float = 0.95,
    w0: Any = None,
    seed: int = 0,
    progress: Any = None,
    max_loss_draws: int = 1000,
    **options: Any,
) -> WeightPosterior:
    """Sample the weight posterior of ``model`` (a :class:`PoolWeightsModel`, or a subclass with
    another pool's likelihood) with any sampler of :func:`samplers.sample` on softmax coordinates;
    ``step`` defaults to ``0.5 / sqrt(n_items)`` (the posterior's scale shrinks as ``1/sqrt(n)``),
    burn-in to a tenth of ``n_samples``, ``w0`` to the uniform weights."""
    if not 0 < level < 1:
        raise InputError("level", f"must be in (0, 1); got {level!r}")
    M = model.n_agents
    w_start = np.full(M, 1.0 / M) if w0 is None else np.asarray(w0, dtype=float)
    if w_start.shape != (M,) or not (np.isfinite(w_start).all() and (w_start > 0).all()):
        raise InputError("w0", f"must be {M} positive weights")
    theta0 = to_coordinates(w_start / w_start.sum())
    h = 0.5 / np.sqrt(model.n_data) if step is None else step
    options.setdefault("burn_in", n_samples // 10)
    r = sample(model, method, n_samples, theta0=theta0, step=h, seed=seed, progress=progress, **options)
    if not r.ok:
        raise InputError("step", f"the sampler stopped: {r.message}", code="diverged")
    W = to_weights(r.samples)
    q = [(1 - level) / 2, (1 + level) / 2]
    sub = W[np.linspace(0, len(W) - 1, min(max_loss_draws, len(W))).astype(int)]
    loss = np.array([model.mean_log_loss(w) for w in sub])
    return WeightPosterior(
        weights=W,
        mean=W.mean(axis=0),
        intervals=np.quantile(W, q, axis=0).T,
        log_loss=loss,
        log_loss_interval=np.quantile(loss, q),
        level=level,
        pool=model.pool,
        result=r,
        model=model,
    )
