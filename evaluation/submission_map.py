"""Which submissions are alike: a sparse Gaussian graphical model over their log-loss residuals.

Beyond the seeds (issue 19). On the public part, submission ``a``'s loss on item ``n`` is
``ℓ_na = -log p_a(y_n | n)`` with the probabilities floored as the log pool floors them
(:func:`aggregators.validation.as_floored_log_probs`, :data:`~aggregators.validation.DEFAULT_FLOOR`).
The residual ``r_na = ℓ_na - mean_b ℓ_nb`` removes the item's difficulty, which every submission
shares; what remains is correlated between submissions that err on the same items: one team's
near-copies, two teams sharing a model.

The structure is the graphical lasso (seed 001 Eq 6.5, :func:`graphical.glasso.graphical_lasso`) on
the correlation matrix of the residuals at ``λ = scale·sqrt(log p / n)`` (the rate of the l1
estimator's error) with ``scale = 3`` (:data:`SCALE`). Edge weights are the partial correlations
``ρ_ij = -Θ_ij / sqrt(Θ_ii Θ_jj)``; a *family* is a connected component of the edges with
``ρ_ij >= min_partial`` (:data:`MIN_PARTIAL` = 0.1; the centring makes the residuals sum to zero over
submissions, which adds negative partial correlations between unrelated submissions; these are kept
as edges but never join families).

Both settings by measurement (``benchmarks/submission_map_tuning.py``, table in
``benchmarks/results/graphical-submission-map.md``), over scale ∈ {1, 2, 3, 4, 6} × min_partial ∈
{0.05, 0.1, 0.15, 0.2, 0.3}: planted families (4, 3, 3 + 6 lone, 2,000 public items, 10 seeds) at copy
noise 0.3-2.0, scored by the adjusted Rand index against the planted families; a competition with no
family (16 lone: any family is false); the demo's 22 submissions (no truth: the largest family,
chaining). ``scale = 3, min_partial = 0.1`` recovers the planted families exactly up to copy noise 1.5
(the old ``scale = 1`` fell to ARI 0.58 there), finds no false family in the null competition, and
keeps the demo's largest family at 7 of 22 (``scale = 1`` chained 19 into one; smaller thresholds
chain at every scale, larger ones lose the noisy planted families). At noise 2.0 (copies as far from
each other as from the truth) no setting that keeps the demo readable recovers the families.

The method, by measurement (``benchmarks/submission_map_methods.py``, at ``scale = 1``): on generated competitions with planted families
(:func:`evaluation.grouping.planted_competition`: 3 families of 4, 3, 3 near-copies plus 6 lone
submissions, 2,000 public items, 10 seeds), exact recovery of the planted families was 10/10 for the
graphical lasso and 8/10 for neighbourhood selection (union rule at the same ``λ``, weights by
:func:`graphical.structure_mle.fit_on_graph`) at copy noise 0.3; 10/10 against 0/10 at copy noise 1.0;
0/10 for both at 1.5 (recovered at ``scale = 3``, above). The residuals sum to zero over
submissions, so their correlation is singular: the maximum-likelihood refit that gives neighbourhood
selection its weights breaks down on it, while the graphical lasso's penalty keeps the fit defined and
gives the partial correlations in one fit. The graphical lasso is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from aggregators.validation import DEFAULT_FLOOR, as_floored_log_probs
from graphical.glasso import graphical_lasso
from solvers.checks import as_labels
from solvers.errors import InputError

MIN_SUBMISSIONS = 3
MIN_PARTIAL = 0.1
"""Partial correlation at or above which an edge joins two submissions into one family."""
SCALE = 3.0
"""``λ = SCALE·sqrt(log p / n)`` for the graphical lasso over the submissions (tuned with ``MIN_PARTIAL``
by ``benchmarks/submission_map_tuning.py``; see the module docstring)."""


def log_loss_residuals(log_probs: Any, y: Any, *, floor: float = DEFAULT_FLOOR) -> np.ndarray:
    """``(n_items, n_submissions)``: each submission's log loss on each item minus the item's mean
    over submissions. ``log_probs`` is ``(n_items, n_submissions, K)`` (normalised or not)."""
    preds = as_floored_log_probs(log_probs, floor=floor, field="log_probs")
    lp = preds.log_probs
    if lp.shape[1] < MIN_SUBMISSIONS:
        raise InputError(
            "log_probs", f"a map needs at least {MIN_SUBMISSIONS} submissions; got {lp.shape[1]}", code="too_few"
        )
    if lp.shape[0] < 2:
        raise InputError("log_probs", f"a map needs at least 2 items; got {lp.shape[0]}", code="too_few")
    labels = as_labels(y, lp.shape[0], lp.shape[2], field="y")
    loss = -lp[np.arange(lp.shape[0]), :, labels]
    return loss - loss.mean(axis=1, keepdims=True)


def residual_correlation(R: np.ndarray) -> np.ndarray:
    """The correlation matrix of the residual columns; a constant column (a submission that loses
    the same as the mean on every item) gets unit variance and no correlation."""
    Z = R - R.mean(axis=0)
    sd = Z.std(axis=0)
    Z = Z / np.where(sd > 0, sd, 1.0)
    C = Z.T @ Z / Z.shape[0]
    np.fill_diagonal(C, 1.0)
    return C


def partial_correlations(Theta: np.ndarray) -> np.ndarray:
    """``ρ_ij = -Θ_ij / sqrt(Θ_ii Θ_jj)`` off the diagonal, 0 on it."""
    d = np.sqrt(np.diag(Theta))
    P = -Theta / np.outer(d, d)
    np.fill_diagonal(P, 0.0)
    return P


def families_of(P: np.ndarray, min_partial: float = MIN_PARTIAL) -> list[list[int]]:
    """Connected components of the edges with partial correlation ``>= min_partial``, largest first
    (ties by first member); lone submissions are families of one."""
    _, comp = connected_components(csr_matrix(P >= min_partial), directed=False)
    groups: dict[int, list[int]] = {}
    for a, c in enumerate(comp):
        groups.setdefault(int(c), []).append(a)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def submission_partials(
    log_probs: Any, y: Any, *, scale: float = SCALE, floor: float = DEFAULT_FLOOR
) -> tuple[np.ndarray, float, int]:
    """``(partial correlations, λ, n_items)`` of the graphical lasso on the residuals' correlation at
    ``λ = scale·sqrt(log p / n)``."""
    if not (np.isfinite(scale) and scale > 0):
        raise InputError("scale", f"must be a finite number > 0; got {scale!r}")
    R = log_loss_residuals(log_probs, y, floor=floor)
    n, p = R.shape
    lam = float(scale * np.sqrt(np.log(p) / n))
    return partial_correlations(graphical_lasso(residual_correlation(R), lam, tol=1e-8).x), lam, int(n)


def submission_map(
    log_probs: Any, y: Any, *, scale: float = SCALE, min_partial: float = MIN_PARTIAL, floor: float = DEFAULT_FLOOR
) -> dict[str, Any]:
    """The map of a competition's submissions from their public-part predictions and labels.

    Returns ``edges`` (``{"pair": [i, j], "weight": ρ_ij}`` for every non-zero partial correlation,
    ``i < j``, strongest first), ``families`` (lists of submission indices, see :func:`families_of`),
    ``lam`` and ``n_items``. JSON-ready.
    """
    P, lam, n = submission_partials(log_probs, y, scale=scale, floor=floor)
    i, j = np.nonzero(np.triu(np.abs(P) > 1e-6, 1))
    order = np.argsort(-np.abs(P[i, j]), kind="stable")
    edges = [{"pair": [int(i[k]), int(j[k])], "weight": float(P[i[k], j[k]])} for k in order]
    return {"edges": edges, "families": families_of(P, min_partial), "lam": lam, "n_items": n}
