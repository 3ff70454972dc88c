"""Every submission's leave-one-out log pool with the learnt weights renormalised, in one pass.

The competition credits submission ``a`` with the private perplexity of the log pool (seed 000
Eq. 2.5) without it, its weights ``w_b / (1 - w_a)`` over the others: the "renormalised" credit of
:func:`evaluation.aggregation.aggregate_submissions` when refitting each pool is too dear. Done one
submission at a time, that is a pass over the whole ``(items, agents, classes)`` array per
submission, ``O(N·A²·K)``: 0.64 s a submission, 172 s for 269 submissions of 2,000 × 64 (measured
in session 12). Here the weighted sum over agents is formed once, ``S = Σ_b w_b log P_b``, and
each submission's pool is ``(S - w_a log P_a) / (1 - w_a)`` normalised over the classes, an
``O(N·K)`` update: ``O(N·A·K)`` in all.

The subtraction loses digits when ``w_a`` is close to one (``S`` is then mostly ``w_a log P_a``):
for ``w_a > DIRECT_ABOVE`` the pool is summed over the others directly (at most one such
submission). A submission of weight zero leaves the pool as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from aggregators.validation import DEFAULT_FLOOR, as_floored_log_probs, check_weights

__all__ = ["loo_log_pool_perplexities", "DIRECT_ABOVE"]

DIRECT_ABOVE = 0.5
"""Above this weight a submission's leave-one-out pool is summed directly (no subtraction)."""


def _label_log_prob(s: np.ndarray, rows: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log q(y_n)`` of the normalised pool whose unnormalised log is ``s`` ``(n_items, n_classes)``."""
    return s[rows, y] - logsumexp(s, axis=1)


def loo_log_pool_perplexities(
    log_probs: Any, y: Any, weights: Any, *, floor: float | None = DEFAULT_FLOOR
) -> np.ndarray:
    """Private perplexity of the log pool without each agent, the other weights renormalised.

    Parameters
    ----------
    log_probs : ``(n_items, n_agents, n_classes)`` log-probabilities (or validated
        :class:`~aggregators.validation.Predictions`), floored with ``floor`` as the log pool does.
    y : ``(n_items,)`` labels.
    weights : ``(n_agents,)`` the log pool's weights on the simplex (at least two agents).

    Returns
    -------
    ``(n_agents,)``: entry ``a`` is ``perplexity(log_pool(log_probs[:, keep], w[keep] / w[keep].sum()), y)``
    with ``keep`` every agent but ``a`` (the full pool's perplexity when ``w_a = 0``); equal to that
    per-agent computation to rounding (tested to 1e-10). A :class:`ValueError` when one agent holds
    all the weight (as that computation fails then).
    """
    L = as_floored_log_probs(log_probs, floor=floor).log_probs
    N, A, _ = L.shape
    if A < 2:
        raise ValueError("leave-one-out needs at least two agents")
    w = check_weights(weights, A)
    labels = np.asarray(y, dtype=np.int64)
    if labels.shape != (N,):
        raise ValueError(f"y must have shape ({N},); got {labels.shape}")
    rows = np.arange(N)
    active = np.flatnonzero(w > 0)
    S = np.einsum("nak,a->nk", L[:, active, :], w[active])
    full = float(np.exp(-_label_log_prob(S, rows, labels).mean()))
    out = np.full(A, full)
    for a in active:
        if w[a] >= 1.0:
            raise ValueError(f"agent {a} holds all the weight: the pool without it has no weight left")
        if w[a] > DIRECT_ABOVE:
            others = active[active != a]
            s = np.einsum("nak,a->nk", L[:, others, :], w[others])
        else:
            s = S - w[a] * L[:, a, :]
        out[a] = np.exp(-_label_log_prob(s / (1.0 - w[a]), rows, labels).mean())
    return out
