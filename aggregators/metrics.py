"""Quality measures of an aggregate prediction (seed 000, sections 2.3 and 2.7).

Every metric takes the aggregate as *normalised* log-probabilities of shape ``(n_items, n_classes)``
(what :meth:`aggregators.base.Pool.predict` returns) plus the true labels, or a known target
distribution for :func:`kl_divergence`. Inputs are checked: a wrong shape, NaN, ``+inf``, or a row
whose ``logsumexp`` is off zero by more than ``tol`` (default ``1e-6``) raises
:class:`~aggregators.validation.PredictionError` naming the item. ``-inf`` (probability zero) is legal:
a label that the aggregate gives probability zero makes the log loss ``inf``, as it should.

All logarithms are natural, so perplexity (Eq. 2.26) of the uniform distribution over K classes is K.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.special import logsumexp

from .validation import PredictionError, as_labels, as_log_probs

NORM_TOL: float = 1e-6
"""Tolerance on ``|logsumexp(row)|`` for an aggregate to count as normalised."""

__all__ = [
    "NORM_TOL",
    "Reliability",
    "brier_score",
    "check_aggregate",
    "kl_divergence",
    "log_loss",
    "perplexity",
    "reliability",
]


def check_aggregate(log_probs: Any, *, field: str = "log_probs", tol: float = NORM_TOL) -> np.ndarray:
    """Validate an aggregate: float64 ``(n_items, n_classes)`` normalised log-probabilities."""
    try:
        arr = np.asarray(log_probs, dtype=np.float64)
    except (ValueError, TypeError):
        raise PredictionError(
            field, "must be a rectangular numeric array of shape (n_items, n_classes)", code="not_numeric_or_ragged"
        ) from None
    if arr.ndim != 2:
        raise PredictionError(
            field,
            f"must have shape (n_items, n_classes); got {arr.ndim}-D array of shape {tuple(arr.shape)}",
            code="bad_shape",
        )
    # the one validator checks NaN, +inf, sizes and all--inf rows; agent index is meaningless here
    try:
        as_log_probs(arr[:, None, :], kind="log_probs", field=field)
    except PredictionError as exc:
        raise PredictionError(
            exc.field,
            exc.reason.replace("(n_items, n_agents, n_classes)", "(n_items, n_classes)"),
            item=exc.item,
            code=exc.code,
        ) from None
    lse = logsumexp(arr, axis=1)
    bad = np.abs(lse) > tol
    if bad.any():
        i = int(np.argmax(bad))
        raise PredictionError(
            field,
            f"must be normalised log-probabilities; a row has logsumexp {lse[i]:.3g} (tolerance {tol:g})",
            item=i,
            code="not_normalised",
        )
    return arr


def _label_log_probs(log_probs: Any, y: Any) -> np.ndarray:
    lp = check_aggregate(log_probs)
    labels = as_labels(y, lp.shape[0], lp.shape[1])
    return lp[np.arange(lp.shape[0]), labels]


def log_loss(log_probs: Any, y: Any) -> float:
    """Mean negative log-likelihood of the labels, ``-1/N Σ_n log P(y_n | x_n)`` (nats)."""
    return float(-_label_log_probs(log_probs, y).mean())


def perplexity(log_probs: Any, y: Any) -> float:
    """Perplexity ``exp(-1/N Σ_n log P(y_n | x_n))``, Eq. (2.26) of seed 000 (uniform over K gives K)."""
    return float(np.exp(log_loss(log_probs, y)))


def kl_divergence(target: Any, log_probs: Any, *, tol: float = 1e-6) -> float:
    """``KL(P* ‖ P)`` from a known target ``P*`` to the aggregate ``P``, averaged over items (nats).

    Parameters
    ----------
    target : probabilities, shape ``(n_classes,)`` (one target for every item) or ``(n_items, n_classes)``;
        non-negative, rows summing to one within ``tol``.
    log_probs : the aggregate, normalised log-probabilities ``(n_items, n_classes)`` (a 1-D vector is
        read as one item).

    Classes where the target is zero contribute nothing; a class the target gives mass but the
    aggregate gives probability zero makes the divergence ``inf``.
    """
    try:
        lp_in = np.asarray(log_probs, dtype=np.float64)
    except (ValueError, TypeError):
        lp_in = log_probs  # check_aggregate raises the readable error
    else:
        if lp_in.ndim == 1:
            lp_in = lp_in[None, :]
    lp = check_aggregate(lp_in)
    try:
        t = np.asarray(target, dtype=np.float64)
    except (ValueError, TypeError):
        raise PredictionError(
            "target", "must be a numeric array of probabilities", code="not_numeric_or_ragged"
        ) from None
    if t.ndim == 1 and t.shape[0] == lp.shape[1]:
        t = np.broadcast_to(t, lp.shape)
    if t.shape != lp.shape:
        raise PredictionError(
            "target",
            f"shape {tuple(np.shape(target))} does not match the aggregate's {lp.shape}",
            code="shape_mismatch",
        )
    if not np.isfinite(t).all():
        raise PredictionError("target", "contains NaN or inf", item=int(np.argwhere(~np.isfinite(t))[0][0]), code="nan")
    if (t < 0).any():
        raise PredictionError(
            "target", "contains a negative probability", item=int(np.argwhere(t < 0)[0][0]), code="negative"
        )
    sums = t.sum(axis=1)
    bad = np.abs(sums - 1.0) > tol
    if bad.any():
        i = int(np.argmax(bad))
        raise PredictionError(
            "target", f"rows must sum to one within {tol:g}; row sums to {sums[i]:.9g}", item=i, code="not_normalised"
        )
    pos = t > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pos, t * (np.log(np.where(pos, t, 1.0)) - lp), 0.0)
    return float(terms.sum(axis=1).mean())


def brier_score(log_probs: Any, y: Any) -> float:
    """Multi-class Brier score ``1/N Σ_n Σ_k (P(k | x_n) - [y_n = k])²`` (0 is perfect, at most 2)."""
    lp = check_aggregate(log_probs)
    labels = as_labels(y, lp.shape[0], lp.shape[1])
    p = np.exp(lp)
    p[np.arange(len(labels)), labels] -= 1.0
    return float((p * p).sum(axis=1).mean())


@dataclass(frozen=True)
class Reliability:
    """Reliability-diagram data for the top-label (argmax) prediction.

    ``bin_edges`` has ``n_bins + 1`` entries on [0, 1]; per bin, ``confidence`` is the mean top-label
    probability, ``accuracy`` the fraction of items whose top label is right and ``counts`` the number
    of items (empty bins hold NaN confidence and accuracy). ``ece`` is the expected calibration error
    ``Σ_b (counts_b / N) |accuracy_b - confidence_b|``.
    """

    bin_edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    counts: np.ndarray
    ece: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN of empty bins becomes ``None``)."""

        def clean(a: np.ndarray) -> list[Any]:
            return [None if not np.isfinite(v) else float(v) for v in a]

        return {
            "bin_edges": clean(self.bin_edges),
            "confidence": clean(self.confidence),
            "accuracy": clean(self.accuracy),
            "counts": [int(c) for c in self.counts],
            "ece": float(self.ece),
        }


def reliability(log_probs: Any, y: Any, *, n_bins: int = 10) -> Reliability:
    """Bin items by top-label confidence into ``n_bins`` equal-width bins of [0, 1].

    A confidence equal to a bin edge goes to the bin on its right, except 1.0 which goes to the last
    bin. Ties for the top label are broken towards the lowest class index (``argmax``).
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise PredictionError("n_bins", f"must be a positive integer; got {n_bins!r}", code="invalid")
    lp = check_aggregate(log_probs)
    labels = as_labels(y, lp.shape[0], lp.shape[1])
    top = np.argmax(lp, axis=1)
    conf = np.exp(lp[np.arange(lp.shape[0]), top])
    correct = (top == labels).astype(np.float64)
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    counts = np.bincount(idx, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(idx, weights=conf, minlength=n_bins) / counts
        acc = np.bincount(idx, weights=correct, minlength=n_bins) / counts
    nonempty = counts > 0
    ece = float(np.sum(counts[nonempty] / lp.shape[0] * np.abs(acc[nonempty] - mean_conf[nonempty])))
    return Reliability(edges, mean_conf, acc, counts, ece)
