"""The pool registry: every pooling method by name, as an estimator or as one stateless call.

- :func:`make_pool` builds an estimator (``make_pool("renyi", gamma=0.1).fit(lp, y)``).
- :func:`aggregate` pools given predictions with *given* parameters, learning nothing; it is what
  ``POST /v1/aggregate`` runs.

Names (:data:`POOL_METHODS`)::

    "average"    SimpleAverage          Eq. (2.1)
    "topk"       TopKAverage            Table 2.2
    "bma"        BMA                    Eq. (2.2)
    "power_bma"  PowerBMA               Eq. (2.3)
    "linear"     linear.LinearPool      Eq. (2.4)
    "log"        logpool.LogPool        Eq. (2.5)
    "renyi"      renyi.RenyiPool        Eq. (2.6)-(2.8), (2.21)-(2.22)

Modules are imported on first use (importing the registry stays light); an error while importing
one is a bug of the library and propagates as itself.

Stateless parameters of :func:`aggregate`
-----------------------------------------
Stateless pooling cannot learn from labels, so methods that normally learn take what they would
have learnt as an argument:

===========  ==================================================================================
method       parameters
===========  ==================================================================================
average      none (``weights`` is rejected: use ``linear``)
topk         ``agents`` (explicit indices to average), or ``k`` with ``ranking`` (agent indices,
             best first; the first ``k`` are averaged)
bma          ``log_evidence`` (one log model evidence per agent, e.g. validation log-likelihood sums)
power_bma    ``log_evidence`` and ``alpha`` (``w ∝ exp(alpha · log_evidence)``)
linear       ``weights`` (default uniform)
log          ``weights`` (default uniform), ``floor``
renyi        ``gamma`` (required; scalar or one per agent in (0, 1]), ``weights`` (default uniform),
             ``lam`` (annealing λ_i of Eq. 2.22, optional), ``floor``
===========  ==================================================================================

``weights`` must be non-negative and finite with a positive sum; they are rescaled onto the simplex
(``info["weights"]`` reports the rescaled values). The floor policy of
:func:`aggregators.validation.apply_floor` applies to ``log`` and ``renyi`` only (the others are
defined with zeros); ``info["n_floored"]`` counts floored entries (0 for the others).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from .base import Pool
from .validation import DEFAULT_FLOOR, Kind, PredictionError, as_floored_log_probs, as_log_probs, check_weights

__all__ = ["POOL_METHODS", "make_pool", "aggregate", "pool_class"]

_CLASSES: dict[str, tuple[str, str]] = {
    "average": ("aggregators.average", "SimpleAverage"),
    "topk": ("aggregators.average", "TopKAverage"),
    "bma": ("aggregators.bma", "BMA"),
    "power_bma": ("aggregators.bma", "PowerBMA"),
    "linear": ("aggregators.linear", "LinearPool"),
    "log": ("aggregators.logpool", "LogPool"),
    "renyi": ("aggregators.renyi", "RenyiPool"),
}

POOL_METHODS: tuple[str, ...] = tuple(_CLASSES)
"""The pooling method names, in the seed's order (simple methods first)."""


def _check_method(method: Any) -> str:
    if method not in _CLASSES:
        raise PredictionError(
            "method", f"unknown pool method {method!r}; known: {', '.join(POOL_METHODS)}", code="unknown_method"
        )
    return method


def _load(method: str, attr: str | None = None) -> Any:
    """The class (or ``attr``) registered under ``method``, imported on first use."""
    module, cls = _CLASSES[method]
    return getattr(importlib.import_module(module), attr or cls)


def pool_class(method: str) -> type[Pool]:
    """The estimator class registered under ``method``."""
    return _load(_check_method(method))


def make_pool(method: str, **params: Any) -> Pool:
    """Build the estimator for ``method`` with hyper-parameters ``params``.

    Unknown methods and parameters the estimator does not take raise
    :class:`~aggregators.validation.PredictionError` (a ``ValueError``) naming them.
    """
    cls = pool_class(method)
    import inspect

    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise PredictionError(
            "params",
            f"{cls.__name__} does not take {', '.join(map(repr, unknown))}; it takes: {', '.join(accepted) or 'nothing'}",
            code="unknown_parameter",
        )
    return cls(**params)


# -- stateless pooling -------------------------------------------------------------------------
def _reject(method: str, **given: Any) -> None:
    for name, value in given.items():
        if value is not None:
            raise PredictionError(name, f"is not a parameter of the {method!r} pool", code="unknown_parameter")


def aggregate(
    method: str,
    log_probs: Any,
    *,
    kind: Kind = "log_probs",
    weights: Any = None,
    gamma: Any = None,
    lam: Any = None,
    floor: float | None = DEFAULT_FLOOR,
    k: int | None = None,
    alpha: float | None = None,
    agents: Any = None,
    ranking: Any = None,
    log_evidence: Any = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Pool ``log_probs`` with the given parameters (no learning). See the module docstring.

    Returns
    -------
    agg : ``(n_items, n_classes)`` normalised log-probabilities.
    info : JSON-ready dict: ``method``, ``n_items``, ``n_agents``, ``n_classes``, ``n_floored``,
        ``floor`` (applied, or ``None``), ``weights`` (the mixture/pool weights used, on the simplex),
        plus the method's own parameters (``gamma``, ``lam``, ``agents``, ``alpha``).
    """
    _check_method(method)
    floored = method in ("log", "renyi")  # validated and floored in one pass
    preds = as_floored_log_probs(log_probs, kind=kind, floor=floor) if floored else as_log_probs(log_probs, kind=kind)
    n_agents = preds.n_agents
    info: dict[str, Any] = {
        "method": method,
        "n_items": preds.n_items,
        "n_agents": n_agents,
        "n_classes": preds.n_classes,
        "n_floored": 0,
        "floor": None,
    }
    if floored:
        info["n_floored"] = preds.n_floored
        info["floor"] = floor
    lp = preds.log_probs

    if method == "average":
        _reject(
            method,
            weights=weights,
            gamma=gamma,
            lam=lam,
            k=k,
            alpha=alpha,
            agents=agents,
            ranking=ranking,
            log_evidence=log_evidence,
        )
        from .average import simple_average

        agg = simple_average(preds)
        info["weights"] = [1.0 / n_agents] * n_agents
    elif method == "topk":
        _reject(method, weights=weights, gamma=gamma, lam=lam, alpha=alpha, log_evidence=log_evidence)
        from .average import check_agents, simple_average

        if agents is not None:
            if k is not None or ranking is not None:
                raise PredictionError("agents", "give either 'agents' or 'k' with 'ranking', not both", code="invalid")
            idx = check_agents(agents, n_agents)
        else:
            if k is None or ranking is None:
                raise PredictionError(
                    "k",
                    "stateless top-k pooling needs 'agents' (indices to average) or 'k' with 'ranking' (agent "
                    "indices, best first); to rank agents on labelled data, fit TopKAverage instead",
                    code="missing",
                )
            order = check_agents(ranking, n_agents, field="ranking")
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(order):
                raise PredictionError(
                    "k", f"must be an integer in 1..{len(order)} (the ranking's length); got {k!r}", code="invalid"
                )
            idx = order[: int(k)]
        agg = simple_average(preds, idx)
        w = np.zeros(n_agents)
        w[idx] = 1.0 / len(idx)
        info["weights"] = w.tolist()
        info["agents"] = [int(i) for i in idx]
    elif method in ("bma", "power_bma"):
        _reject(method, weights=weights, gamma=gamma, lam=lam, k=k, agents=agents, ranking=ranking)
        from .bma import bma_log_weights, weighted_mixture

        if log_evidence is None:
            raise PredictionError(
                "log_evidence",
                f"stateless {method!r} pooling needs 'log_evidence' (one log model evidence per agent, e.g. the sum "
                "of its validation log-likelihoods); to measure it on labelled data, fit the estimator instead",
                code="missing",
            )
        if method == "bma":
            _reject(method, alpha=alpha)
            a = 1.0
        else:
            if alpha is None:
                raise PredictionError("alpha", "stateless 'power_bma' pooling needs 'alpha' (>= 0)", code="missing")
            a = alpha
        lw = bma_log_weights(log_evidence, a)
        if lw.shape != (n_agents,):
            raise PredictionError(
                "log_evidence", f"must have one entry per agent ({n_agents}); got {lw.size}", code="shape_mismatch"
            )
        agg = weighted_mixture(lp, lw)
        info["weights"] = np.exp(lw).tolist()
        info["alpha"] = float(a)
    elif method in ("linear", "log"):
        _reject(
            method, gamma=gamma, lam=lam, k=k, alpha=alpha, agents=agents, ranking=ranking, log_evidence=log_evidence
        )
        w = check_weights(weights, n_agents)
        agg = _load(method, f"{method}_pool")(preds, w)  # validated: no second pass
        info["weights"] = w.tolist()
    else:  # renyi
        _reject(method, k=k, alpha=alpha, agents=agents, ranking=ranking, log_evidence=log_evidence)
        if gamma is None:
            raise PredictionError(
                "gamma", "the 'renyi' pool needs 'gamma' in (0, 1] (scalar or one per agent)", code="missing"
            )
        w = check_weights(weights, n_agents)
        agg = _load("renyi", "renyi_aggregate")(preds, w, gamma, lam=lam, floor=None)  # floored above
        info["weights"] = w.tolist()
        info["gamma"] = np.asarray(gamma, dtype=np.float64).tolist()
        if lam is not None:
            info["lam"] = np.asarray(lam, dtype=np.float64).tolist()
    return np.asarray(agg), info
