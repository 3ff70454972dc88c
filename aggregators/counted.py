"""Counted data: unconditional models fitted on class counts instead of labelled items.

In an *unconditional* model every item carries the same agent distributions ``P_i(y)`` and only
the label differs (the seed's synthetic studies, a forecast of one event observed many times). The
fit then depends on the labels only through their counts ``c_y``, so the data collapse to one item
per observed class with ``sample_weight = c_y`` (scikit-learn's convention: an integer weight
counts the item that many times) and every pool fits in time independent of the number of labelled
items: ``pool.fit(*counted_items(log_beliefs, counts))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.checks import as_labels

from .validation import PredictionError, as_log_probs

__all__ = ["counted_items", "collapse_unconditional"]


def counted_items(log_beliefs: Any, counts: Any, *, field: str = "counts") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log_probs, y, sample_weight)``: one item per class with a positive count.

    ``log_beliefs``: ``(n_agents, n_classes)`` log-probabilities shared by every item (validated and
    normalised); ``counts``: ``(n_classes,)`` finite non-negative label counts with a positive sum.
    ``log_probs`` is ``(n_observed, n_agents, n_classes)``, a read-only broadcast view (no copy).
    """
    lb = as_log_probs(np.asarray(log_beliefs, dtype=np.float64)[None], field="log_beliefs").log_probs[0]
    A, K = lb.shape
    try:
        c = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise PredictionError(field, "must be a 1-D numeric array, one count per class", code="bad_counts") from None
    if c.shape != (K,):
        raise PredictionError(field, f"must have one count per class ({K}); got shape {c.shape}", code="shape_mismatch")
    if not np.isfinite(c).all() or (c < 0).any() or not c.sum() > 0:
        raise PredictionError(field, "must be finite, non-negative, with a positive sum", code="bad_counts")
    y = np.flatnonzero(c > 0)
    return np.broadcast_to(lb, (y.size, A, K)), y, c[y]


def collapse_unconditional(
    log_probs: Any, y: Any, sample_weight: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counted form of labelled data whose items all carry the same agent distributions.

    Checks (one pass) that every item equals the first within 1e-12 and raises
    :class:`PredictionError` naming ``predictions`` otherwise; returns :func:`counted_items` of the
    first item and the (weighted) label counts.
    """
    preds = as_log_probs(log_probs)
    lp = preds.log_probs
    labels = as_labels(y, preds.n_items, preds.n_classes, field="labels")
    first = lp[0]
    with np.errstate(invalid="ignore"):
        same = (lp == first[None]) | (np.abs(lp - first[None]) <= 1e-12)
    if not same.all():
        item = int(np.flatnonzero(~same.reshape(preds.n_items, -1).all(axis=1))[0])
        raise PredictionError(
            "predictions", "items differ: the data are not unconditional", item=item, code="not_unconditional"
        )
    from .validation import check_sample_weight

    sw = check_sample_weight(sample_weight, preds.n_items)
    counts = np.bincount(labels, weights=sw, minlength=preds.n_classes)
    return counted_items(first, counts)
