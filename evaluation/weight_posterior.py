"""The posterior over a fitted pool's weights, for the pool API and the competition's weight chart.

:func:`samplers.pool_weights.sample_weight_posterior` samples the weights of a log or linear pool
(or a Rényi pool at its fitted γ, :mod:`evaluation.renyi_posterior`) under a Dirichlet prior on the
simplex (softmax coordinates with the Jacobian). This module applies it to a
fitted :class:`aggregators.base.Pool`: the pool's own input handling (the log pool's probability
floor), the fitted weights as the chain's start (moved inside the simplex), and the result kept on
the estimator as learnt state (``posterior_``: the summary; ``posterior_weights_``: the draws), so a
stored pool carries its posterior and predicts with it (:func:`predict_posterior`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from samplers.pool_weights import POOLS, PoolWeightsModel, posterior_predictive, sample_weight_posterior
from solvers.errors import InputError
from solvers.progress import ProgressFn

#: the draws a stored pool keeps for its posterior-predictive aggregate
MAX_STORED_DRAWS = 2000

#: the numbers (``n_items x n_agents x n_classes``) the competition's credible bands sample on (800
#: HMC draws of 8 leapfrog steps: about 7,000 gradients); a bigger validation part is subsampled
BANDS_BUDGET = 200_000


def _start(pool: Any) -> np.ndarray:
    """The fitted weights moved a tenth of the way to uniform (softmax coordinates need w > 0)."""
    w = np.asarray(pool.weights_, dtype=float)
    return 0.9 * w / w.sum() + 0.1 / w.size


def fit_posterior(
    pool: Any,
    log_probs: Any,
    y: Any,
    *,
    samples: int = 2000,
    alpha: Any = 1.0,
    level: float = 0.95,
    method: str = "hmc",
    step: float | None = None,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    progress: ProgressFn | None = None,
    kind: str = "log_probs",
) -> dict[str, Any]:
    """Sample the weight posterior of the fitted log, linear or Rényi ``pool`` on ``(log_probs, y)``
    (the data it was fitted on; a Rényi pool's at its fitted γ and λ,
    :mod:`evaluation.renyi_posterior`), store it on the pool (``posterior_``, ``posterior_weights_``)
    and return the summary (:meth:`samplers.pool_weights.WeightPosterior.summary`). HMC defaults to
    10 leapfrog steps."""
    preds = pool.prepare(log_probs, kind)
    opts = dict(options or {})
    if method == "hmc":
        opts.setdefault("n_leapfrog", 10)
    post = sample_weight_posterior(
        _model(pool, preds.log_probs, y, alpha),
        method=method,
        n_samples=samples,
        step=step,
        level=level,
        w0=_start(pool),
        seed=seed,
        progress=progress,
        **opts,
    )
    keep = np.linspace(0, len(post.weights) - 1, min(MAX_STORED_DRAWS, len(post.weights))).astype(int)
    pool.posterior_ = post.summary() | {"alpha": np.broadcast_to(np.asarray(alpha, float), (pool.n_agents_,)).tolist()}
    pool.posterior_weights_ = post.weights[keep]
    return pool.posterior_


def _model(pool: Any, log_probs: np.ndarray, y: Any, alpha: Any = 1.0) -> PoolWeightsModel:
    """The weight posterior's model of a fitted pool: log, linear, or Rényi at its fitted γ and λ
    (``y`` None: a model to aggregate with only), else an InputError naming ``posterior``."""
    from aggregators.linear import LinearPool
    from aggregators.logpool import LogPool
    from aggregators.renyi import RenyiPool

    labels = np.zeros(len(log_probs), dtype=int) if y is None else y
    if type(pool) is RenyiPool:
        from .renyi_posterior import RenyiWeightsModel

        lam = getattr(pool, "lam_", None)
        return RenyiWeightsModel(log_probs, labels, gamma=pool.gamma_, lam=lam, alpha=alpha)
    for cls, name in ((LogPool, "log"), (LinearPool, "linear")):
        if type(pool) is cls:
            return PoolWeightsModel(log_probs, labels, pool=name, alpha=alpha)
    raise InputError("posterior", f"is offered for the pools {POOLS + ('renyi',)}; got {type(pool).__name__}")


def predict_posterior(pool: Any, log_probs: Any, *, kind: str = "log_probs") -> tuple[np.ndarray, int]:
    """The posterior-predictive aggregate of a pool fitted with a posterior, and the number of
    floored entries (the pool's own input handling)."""
    draws = getattr(pool, "posterior_weights_", None)
    if draws is None:
        raise InputError("posterior_predictive", "the pool was fitted without a posterior", code="no_posterior")
    preds = pool.prepare(log_probs, kind)
    pool._check_fitted_shape(preds)
    aggregate = _model(pool, preds.log_probs, None).aggregate
    return posterior_predictive(preds.log_probs, np.asarray(draws), aggregate), preds.n_floored


def credit_bands(
    credit: list[dict[str, Any]],
    pool: Any,
    log_probs: np.ndarray,
    y: np.ndarray,
    progress: ProgressFn | None = None,
    *,
    budget: int = BANDS_BUDGET,
    seed: int = 0,
) -> str:
    """Add ``weight_log_interval`` (95 % credible interval) and ``weight_log_mean`` to each
    submission's ``credit`` from the fitted log ``pool``'s weight posterior on the validation part
    (Dirichlet(1) prior, 800 HMC draws, reported to ``progress``). Above ``budget`` numbers
    (``n_items x n_agents x n_classes``) the posterior is the one given a random ``m`` of the ``n``
    items (``m = budget // (n_agents n_classes)``, the items drawn with ``seed``): an exact posterior
    given less data, so its intervals are wider than those given every item, by about
    ``sqrt(n/m)`` for a weight inside the simplex (the posterior's sd shrinks as ``1/sqrt(items)``)
    and up to ``n/m`` for a weight pressed against 0 (there it shrinks as ``1/items``); the
    message says so (measured: ``tests/evaluation/test_weight_bands.py``).
    Returns what was done."""
    n, M, K = log_probs.shape
    m = min(n, budget // (M * K))
    if m < 2:
        return f"not computed: one item has {M * K} numbers, the budget is {budget}"
    idx = np.sort(np.random.default_rng(seed).choice(n, m, replace=False)) if m < n else np.arange(n)
    try:
        s = fit_posterior(pool, log_probs[idx], y[idx], samples=800, options={"n_leapfrog": 8}, progress=progress)
    except (InputError, ValueError, ArithmeticError) as exc:
        return f"failed: {exc}"
    for c, mean, iv in zip(credit, s["mean"], s["intervals"], strict=True):
        c["weight_log_mean"], c["weight_log_interval"] = mean, iv
    what = f"95 % credible intervals of the log pool's weights: Dirichlet(1) prior, {s['n_draws']} HMC draws"
    if m == n:
        return what
    return (
        f"{what}, given a random {m} of the {n} validation items (a budget of {budget} numbers): "
        f"about {np.sqrt(n / m):.1f}x wider than given all of them (up to {n / m:.1f}x for a weight near 0)"
    )
