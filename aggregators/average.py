"""Simple averaging (Eq. 2.1 of seed 000) and the top-k average of the competition study (Table 2.2).

All arrays are log-probabilities of shape ``(n_items, n_agents, n_classes)``; results are normalised
log-probabilities ``(n_items, n_classes)``. Averaging happens in probability space, computed with
``logsumexp`` so that tiny probabilities do not underflow.

Choosing k honestly
-------------------
:class:`TopKAverage` ranks agents by their mean log-likelihood on the validation set. If ``k`` is not
given, it is chosen by K-fold cross-validation *on that same validation set*: in each fold the
agents are ranked on the other folds only, and every candidate k is scored by the held-out
log-likelihood of the top-k average on the left-out fold. The k with the best mean held-out score
wins; the final ranking (``ranking_``) is then recomputed on the whole validation set. Ranking and
scoring on the same points would favour small k (the top agent looks best on the points that made
it top), which is what the folds avoid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from solvers.progress import ProgressFn, report
from solvers.special import logsumexp

from .base import Pool
from .validation import PredictionError, Predictions, as_log_probs

__all__ = ["simple_average", "SimpleAverage", "TopKAverage", "kfold_indices"]


def _lp(log_probs: Any) -> np.ndarray:
    return as_log_probs(log_probs, kind="log_probs").log_probs


def simple_average(log_probs: Any, agents: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Eq. (2.1): ``P(y|x) = 1/N_A Σ_j P_j(y|x)``, optionally over a subset ``agents`` only.

    Parameters
    ----------
    log_probs : array ``(n_items, n_agents, n_classes)`` of (possibly unnormalised) log-probabilities;
        validated by :func:`aggregators.validation.as_log_probs`.
    agents : indices of the agents to average (default: all). Duplicates are rejected.

    Returns
    -------
    ``(n_items, n_classes)`` normalised log-probabilities.
    """
    lp = _lp(log_probs)
    if agents is not None:
        idx = check_agents(agents, lp.shape[1])
        lp = lp[:, idx, :]
    out = logsumexp(lp, axis=1) - np.log(lp.shape[1])
    # each agent row is normalised, so the mean is too; renormalise only against rounding
    return out - logsumexp(out, axis=1, keepdims=True)


def check_agents(agents: Any, n_agents: int, *, field: str = "agents") -> np.ndarray:
    """Validate a list of agent indices (non-empty, integer, distinct, in ``0..n_agents-1``)."""
    try:
        arr = np.asarray(agents)
    except (ValueError, TypeError):
        raise PredictionError(field, "must be a list of agent indices", code="invalid") from None
    if arr.ndim != 1 or arr.size == 0:
        raise PredictionError(field, "must be a non-empty 1-D list of agent indices", code="invalid")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise PredictionError(field, "must hold integer agent indices", code="invalid")
    if (arr < 0).any() or (arr >= n_agents).any():
        bad = int(arr[(arr < 0) | (arr >= n_agents)][0])
        raise PredictionError(field, f"agent index {bad} is outside 0..{n_agents - 1}", agent=bad, code="invalid")
    if len(np.unique(arr)) != len(arr):
        raise PredictionError(field, "agent indices must be distinct", code="invalid")
    return arr.astype(np.int64)


def kfold_indices(n_items: int, n_folds: int, random_state: int | None = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Shuffled K-fold split of ``range(n_items)``: a list of ``(train, test)`` index arrays.

    ``n_folds`` is capped at ``n_items`` (leave-one-out when there are few items). Needs at least two
    items, since a model choice cannot be validated on held-out data otherwise.
    """
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise PredictionError("n_folds", f"must be an integer >= 2; got {n_folds!r}", code="invalid")
    if n_items < 2:
        raise PredictionError(
            "labels",
            "choosing a hyper-parameter by cross-validation needs at least 2 validation items",
            code="too_few_items",
        )
    n_folds = min(int(n_folds), n_items)
    perm = np.random.default_rng(random_state).permutation(n_items)
    folds = np.array_split(perm, n_folds)
    out = []
    for f in range(n_folds):
        train = np.concatenate([folds[g] for g in range(n_folds) if g != f])
        out.append((np.sort(train), np.sort(folds[f])))
    return out


def label_log_probs(lp: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``G[n, i] = log P_i(y_n | x_n)``: each agent's log-likelihood of each label, ``(n_items, n_agents)``."""
    return lp[np.arange(lp.shape[0]), :, y]


def weighted_label_log_probs(
    lp: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``(G, c)``: :func:`label_log_probs` of the items with positive weight and their weights ``c``
    (ones without ``sample_weight``). Items of weight 0 are dropped, so ``c @ G`` is the weighted
    sum even where an agent gave a label probability 0 (``G = -inf``)."""
    G = label_log_probs(lp, y)
    if sample_weight is None:
        return G, np.ones(G.shape[0])
    keep = sample_weight > 0
    return G[keep], sample_weight[keep]


def _rank(scores: np.ndarray) -> np.ndarray:
    """Agents best first (higher mean log-likelihood); ties keep index order."""
    return np.argsort(-scores, kind="stable")


@dataclass(eq=False, repr=False)
class SimpleAverage(Pool):
    """Eq. (2.1) as an estimator: no parameters to learn. ``fit`` only records the shape and
    ``weights_`` (uniform); ``predict`` also works without ``fit``."""

    supervised = False

    def fit(self, log_probs: Any, y: Any = None, **kw: Any) -> Self:  # labels are optional
        return super().fit(log_probs, y, **kw)

    def _fit(
        self,
        log_probs: np.ndarray,
        y: np.ndarray | None,
        progress: ProgressFn | None,
        *,
        sample_weight: np.ndarray | None = None,
    ) -> None:
        self.weights_ = np.full(log_probs.shape[1], 1.0 / log_probs.shape[1])
        report(progress, 1.0)

    def _predict(self, preds: Predictions) -> np.ndarray:
        return simple_average(preds)


@dataclass(eq=False, repr=False)
class TopKAverage(Pool):
    """Average of the k agents with the best validation log-likelihood (seed 000, Table 2.2).

    Parameters
    ----------
    k : int or None
        Number of agents to average. ``None`` chooses it by cross-validation over ``k_grid``.
    k_grid : sequence of int or None
        Candidates for k (default ``1..n_agents``); values above ``n_agents`` are rejected.
    n_folds : int
        Folds of the cross-validation that chooses k (capped at the number of items).
    random_state : int or None
        Seed of the fold shuffle.

    Attributes
    ----------
    agent_scores_ : ``(n_agents,)`` mean validation log-likelihood of each agent (whole validation set).
    ranking_ : agent indices, best first (ranked on the whole validation set).
    k_ : the k used.
    agents_ : the chosen agents, ``ranking_[:k_]``.
    weights_ : ``1/k_`` on the chosen agents, 0 elsewhere.
    validation_curve_ : ``{"k": array, "score": array}``, the mean held-out log-likelihood per item
        for each candidate k (only when k was chosen; ``None`` otherwise).
    """

    k: int | None = None
    k_grid: Sequence[int] | None = None
    n_folds: int = 5
    random_state: int | None = 0

    def _grid(self, n_agents: int) -> np.ndarray:
        if self.k_grid is None:
            return np.arange(1, n_agents + 1)
        grid = np.asarray(self.k_grid)
        if grid.ndim != 1 or grid.size == 0 or grid.dtype.kind not in "iu":
            raise PredictionError("k_grid", "must be a non-empty list of integers", code="invalid")
        if (grid < 1).any() or (grid > n_agents).any():
            raise PredictionError("k_grid", f"values must lie in 1..{n_agents} (the number of agents)", code="invalid")
        return np.unique(grid)

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        n_agents = log_probs.shape[1]
        G, c = weighted_label_log_probs(log_probs, y, sample_weight)
        self.agent_scores_ = (c @ G) / c.sum()
        self.ranking_ = _rank(self.agent_scores_)
        if self.k is not None:
            if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or not 1 <= self.k <= n_agents:
                raise PredictionError("k", f"must be an integer in 1..{n_agents}; got {self.k!r}", code="invalid")
            self.k_ = int(self.k)
            self.validation_curve_ = None
        else:
            grid = self._grid(n_agents)
            folds = kfold_indices(len(c), self.n_folds, self.random_state)
            total = np.zeros(len(grid))
            for f, (train, test) in enumerate(folds):
                order = _rank(c[train] @ G[train] / c[train].sum())
                # log of the running sum of held-out label probabilities over ranked agents
                cum = np.logaddexp.accumulate(G[test][:, order], axis=1)
                held = cum[:, grid - 1] - np.log(grid)[None, :]
                total += c[test] @ held
                report(progress, (f + 1) / len(folds))
            score = total / c.sum()
            self.validation_curve_ = {"k": grid, "score": score}
            self.k_ = int(grid[int(np.argmax(score))])  # ties: the smallest k
        self.agents_ = self.ranking_[: self.k_].copy()
        w = np.zeros(n_agents)
        w[self.agents_] = 1.0 / self.k_
        self.weights_ = w
        report(progress, 1.0)

    def _predict(self, preds: Predictions) -> np.ndarray:
        return simple_average(preds, self._fitted("agents_"))
