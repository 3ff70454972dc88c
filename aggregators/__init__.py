"""Agora's pools: every aggregator of seed 000, chapter 2, as scikit-learn-style estimators.

Import what you need from here::

    from aggregators import make_pool, aggregate, POOL_METHODS
    from aggregators import SimpleAverage, TopKAverage, BMA, PowerBMA
    from aggregators import log_loss, perplexity, kl_divergence, brier_score, reliability

The learnt pools (``LinearPool``, ``LogPool``, ``RenyiPool``) live in their own modules
(:mod:`aggregators.linear`, :mod:`aggregators.logpool`, :mod:`aggregators.renyi`) and are also
reachable here by name, imported on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

import solvers.kernel_cache  # noqa: F401  (keys numba's cache by the sources before any kernel compiles)

from .average import SimpleAverage, TopKAverage, simple_average
from .base import Pool, PredictInfo
from .bma import BMA, PowerBMA
from .metrics import brier_score, kl_divergence, log_loss, perplexity, reliability
from .registry import POOL_METHODS, aggregate, make_pool
from .validation import (
    DEFAULT_FLOOR,
    PROB_SUM_TOL,
    PredictionError,
    Predictions,
    apply_floor,
    as_labels,
    as_log_probs,
    validate,
)

_LAZY = {
    "LinearPool": "aggregators.linear",
    "linear_pool": "aggregators.linear",
    "LogPool": "aggregators.logpool",
    "log_pool": "aggregators.logpool",
    "RenyiPool": "aggregators.renyi",
    "renyi_aggregate": "aggregators.renyi",
}

__all__ = [
    "BMA",
    "DEFAULT_FLOOR",
    "POOL_METHODS",
    "PROB_SUM_TOL",
    "Pool",
    "PowerBMA",
    "PredictInfo",
    "PredictionError",
    "Predictions",
    "SimpleAverage",
    "TopKAverage",
    "aggregate",
    "apply_floor",
    "as_labels",
    "as_log_probs",
    "brier_score",
    "kl_divergence",
    "log_loss",
    "make_pool",
    "perplexity",
    "reliability",
    "simple_average",
    "validate",
    *_LAZY,
]


def __getattr__(name: str) -> Any:  # PEP 562: the learnt pools load on first access
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aggregators' has no attribute {name!r}")
