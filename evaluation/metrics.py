"""The quality summary reported for a pool on labelled items: log loss, perplexity (Eq. 2.26 of
seed 000), Brier score and accuracy of an aggregate, all from :mod:`aggregators.metrics`."""

from __future__ import annotations

from typing import Any

import numpy as np

from aggregators.metrics import brier_score, log_loss, perplexity


def metrics_of(log_probs: np.ndarray, y: Any) -> dict[str, float]:
    """``log_loss``, ``perplexity``, ``brier_score`` and ``accuracy`` of the aggregate ``log_probs``
    (normalised, ``(n_items, n_classes)``) on the labels ``y``."""
    out = {
        "log_loss": float(log_loss(log_probs, y)),
        "perplexity": float(perplexity(log_probs, y)),
        "brier_score": float(brier_score(log_probs, y)),
    }
    out["accuracy"] = float((log_probs.argmax(axis=1) == y).mean())
    return out
