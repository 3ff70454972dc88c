"""Bayesian model averaging (Eq. 2.2 of seed 000) and its power heuristic (Eq. 2.3).

Model evidence
--------------
The agents were trained elsewhere; what we can measure is how well each one predicts *our*
validation set. The evidence of agent ``j`` is therefore its validation likelihood
``P(j) ∝ Π_n P_j(y_n | x_n)`` under a uniform prior, i.e. ``log P(j) = Σ_n log P_j(y_n | x_n)``.
Everything is computed in log space: with 100 validation points the evidence is ``exp(-300)`` or
smaller, and ``P(j)^α`` would under- or overflow in probability space.

- :class:`BMA` weights agents by the posterior ``softmax_j(log P(j))``. Because the log evidence is a
  *sum* over items, the weights collapse onto the best agent as soon as the validation set is of any
  size (the seed's point, section 2.2.1.2).
- :class:`PowerBMA` anneals the evidence: ``w_j ∝ P(j)^α = exp(α · log P(j))`` (Eq. 2.3). ``α = 0`` is
  the simple average, ``α = 1`` is BMA, ``α → ∞`` picks the best agent.

Choosing α honestly
-------------------
α is chosen by K-fold cross-validation on the validation set. Within a fold the evidence is measured
on the training folds and *rescaled to the full validation size*, ``log P(j) ≈ n · mean_train``, so
that a given α means the same thing in the folds and in the final fit on all ``n`` items; each α is
scored by the held-out log-likelihood of the left-out fold. The α with the best mean held-out score
is then used with the evidence of the whole validation set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_softmax

from solvers.progress import ProgressFn, report
from solvers.special import logsumexp

from .average import kfold_indices, weighted_label_log_probs
from .base import Pool
from .validation import PredictionError, Predictions

__all__ = ["BMA", "PowerBMA", "bma_log_weights", "weighted_mixture", "DEFAULT_ALPHA_GRID"]

DEFAULT_ALPHA_GRID: np.ndarray = np.concatenate([[0.0], np.logspace(-5, 1, 31)])
"""0 and 31 log-spaced values from 1e-5 to 10 (the thesis's best α at 20,000 items was 0.0049)."""


def bma_log_weights(log_evidence: Any, alpha: float = 1.0) -> np.ndarray:
    """Normalised log-weights ``log softmax(α · log P(j))`` of Eq. (2.3) (α = 1: Eq. 2.2).

    ``log_evidence`` may hold ``-inf`` (an agent that gave a validation label probability zero) but
    not NaN or ``+inf``; at least one entry must be finite.
    """
    try:
        le = np.asarray(log_evidence, dtype=np.float64)
    except (TypeError, ValueError):
        raise PredictionError("log_evidence", "must be a list of numbers, one per agent", code="invalid") from None
    if le.ndim != 1 or le.size == 0:
        raise PredictionError("log_evidence", "must be a non-empty 1-D array (one value per agent)", code="bad_shape")
    if np.isnan(le).any() or np.isposinf(le).any():
        a = int(np.argwhere(np.isnan(le) | np.isposinf(le))[0][0])
        raise PredictionError("log_evidence", "contains NaN or +inf", agent=a, code="nan")
    if not np.isfinite(le).any():
        raise PredictionError("log_evidence", "every agent has evidence zero (-inf)", code="zero_evidence")
    alpha = _check_alpha(alpha)
    if alpha == 0.0:
        return np.full(le.shape, -np.log(le.size))
    with np.errstate(invalid="ignore"):
        return log_softmax(alpha * le)


def _check_alpha(alpha: Any, field: str = "alpha") -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise PredictionError(field, f"must be a number; got {alpha!r}", code="invalid") from None
    if not np.isfinite(a) or a < 0:
        raise PredictionError(field, f"must be a finite number >= 0; got {alpha!r}", code="invalid")
    return a


def weighted_mixture(log_probs: np.ndarray, log_weights: np.ndarray) -> np.ndarray:
    """``log Σ_j w_j P_j(y|x)`` for normalised ``log_weights`` (agents with weight 0 drop out)."""
    out = logsumexp(log_probs + log_weights[None, :, None], axis=1)
    return out - logsumexp(out, axis=1, keepdims=True)


@dataclass(eq=False, repr=False)
class BMA(Pool):
    """Bayesian model averaging, Eq. (2.2), with the validation likelihood as model evidence.

    Attributes
    ----------
    log_evidence_ : ``(n_agents,)`` ``Σ_n log P_j(y_n | x_n)`` on the validation set.
    weights_ : posterior weights ``softmax(log_evidence_)`` (in practice one-hot on the best agent).
    """

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        G, c = weighted_label_log_probs(log_probs, y, sample_weight)
        self.log_evidence_ = c @ G
        self.log_weights_ = bma_log_weights(self.log_evidence_, 1.0)
        self.weights_ = np.exp(self.log_weights_)
        report(progress, 1.0)

    def _predict(self, preds: Predictions) -> np.ndarray:
        return weighted_mixture(preds.log_probs, self._fitted("log_weights_"))


@dataclass(eq=False, repr=False)
class PowerBMA(BMA):
    """Bayesian model averaging with the power heuristic, Eq. (2.3): ``w_j ∝ P(j)^α``.

    Parameters
    ----------
    alpha : float or None
        The power; ``None`` chooses it by cross-validation over ``alpha_grid`` (see module docstring).
    alpha_grid : sequence of float or None
        Candidates for α, each ``>= 0`` (default :data:`DEFAULT_ALPHA_GRID`).
    n_folds, random_state : the cross-validation split (folds capped at the number of items).

    Attributes
    ----------
    alpha_ : the α used.
    log_evidence_ : ``(n_agents,)`` validation log-likelihood sums.
    weights_ : ``softmax(alpha_ · log_evidence_)``.
    validation_curve_ : ``{"alpha": array, "score": array}``, mean held-out log-likelihood per item for
        each candidate (only when α was chosen; ``None`` otherwise).
    """

    # ``_predict`` is BMA's: the mixture with ``log_weights_``

    alpha: float | None = None
    alpha_grid: Sequence[float] | None = None
    n_folds: int = 5
    random_state: int | None = 0

    def _grid(self) -> np.ndarray:
        if self.alpha_grid is None:
            return DEFAULT_ALPHA_GRID.copy()
        try:
            grid = np.asarray(self.alpha_grid, dtype=np.float64)
        except (TypeError, ValueError):
            raise PredictionError("alpha_grid", "must be a list of numbers", code="invalid") from None
        if grid.ndim != 1 or grid.size == 0 or not np.isfinite(grid).all() or (grid < 0).any():
            raise PredictionError("alpha_grid", "must be a non-empty list of finite numbers >= 0", code="invalid")
        return np.unique(grid)

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        G, c = weighted_label_log_probs(log_probs, y, sample_weight)
        n = float(c.sum())
        self.log_evidence_ = c @ G
        if self.alpha is not None:
            self.alpha_ = _check_alpha(self.alpha)
            self.validation_curve_ = None
        else:
            grid = self._grid()
            folds = kfold_indices(len(c), self.n_folds, self.random_state)
            total = np.zeros(len(grid))
            for f, (train, test) in enumerate(folds):
                ev = n * (c[train] @ G[train]) / c[train].sum()  # evidence rescaled to the full validation size
                for g, a in enumerate(grid):
                    lw = bma_log_weights(ev, a)
                    total[g] += c[test] @ logsumexp(G[test] + lw[None, :], axis=1)
                report(progress, (f + 1) / len(folds))
            score = total / n
            self.validation_curve_ = {"alpha": grid, "score": score}
            self.alpha_ = float(grid[int(np.argmax(score))])  # ties: the smallest α
        self.log_weights_ = bma_log_weights(self.log_evidence_, self.alpha_)
        self.weights_ = np.exp(self.log_weights_)
        report(progress, 1.0)
