"""Grouping near-duplicate submissions before fitting a pool, and a competition with planted families.

Beyond the seeds (issue 19): :func:`group_families` replaces each family of
:func:`evaluation.submission_map.submission_map` by one agent, the average of its members'
probabilities (the linear pool with equal weights, renormalised in log space), so that a pool sees
one vote per family. :func:`grouping_effect` fits a pool from :func:`aggregators.registry.make_pool`
on the public part with and without grouping and scores both on the private part (log loss, nats).

:func:`planted_competition` generates a competition whose families are known: the items carry true
class logits ``z_n ~ N(0, spread² I)`` and labels drawn from ``softmax(z_n)``; each *base model* sees
``z_n`` plus its own error ``N(0, base_noise²)``; a family's members are one base model plus small
independent noise ``N(0, copy_noise²)``; lone submissions are base models of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import log_softmax, logsumexp

from aggregators.metrics import log_loss
from aggregators.registry import make_pool
from aggregators.validation import as_floored_log_probs

from .submission_map import MIN_PARTIAL, submission_map


def planted_competition(
    n_items: int = 4000,
    n_classes: int = 10,
    family_sizes: Sequence[int] = (4, 3, 3),
    n_lone: int = 6,
    *,
    spread: float = 2.0,
    base_noise: float = 1.5,
    copy_noise: float = 0.3,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """``(log_probs (n_items, n_submissions, K), labels, families)``: the families first (indices
    in order), then the lone submissions, each a family of one."""
    rng = np.random.default_rng(seed)
    z = spread * rng.standard_normal((n_items, n_classes))
    p = np.exp(log_softmax(z, axis=1))
    y = (rng.random((n_items, 1)) > np.cumsum(p, axis=1)).sum(axis=1).clip(0, n_classes - 1)
    agents: list[np.ndarray] = []
    families: list[list[int]] = []
    for size in [*family_sizes, *([1] * n_lone)]:
        base = z + base_noise * rng.standard_normal(z.shape)
        families.append(list(range(len(agents), len(agents) + size)))
        for _ in range(size):
            noise = copy_noise * rng.standard_normal(z.shape) if size > 1 else 0.0
            agents.append(log_softmax(base + noise, axis=1))
    return np.stack(agents, axis=1), y, families


def group_families(log_probs: Any, families: Sequence[Sequence[int]]) -> np.ndarray:
    """``(n_items, n_families, K)``: each family's members averaged in probability space."""
    lp = as_floored_log_probs(log_probs, field="log_probs").log_probs
    return np.stack([logsumexp(lp[:, list(f)], axis=1) - np.log(len(f)) for f in families], axis=1)


def grouping_effect(
    log_probs: Any,
    y: Any,
    public: np.ndarray,
    *,
    methods: Sequence[str] = ("linear", "log"),
    min_partial: float = MIN_PARTIAL,
) -> dict[str, Any]:
    """Private log loss of each pool fitted on the public part with every submission and with one
    agent per family (the families found by :func:`submission_map` on the public part, joined by
    partial correlations ``>= min_partial``)."""
    lp = as_floored_log_probs(log_probs, field="log_probs").log_probs
    y = np.asarray(y)
    families = submission_map(lp[public], y[public], min_partial=min_partial)["families"]
    grouped = group_families(lp, families)
    rows = []
    for method in methods:
        row: dict[str, Any] = {"method": method}
        for name, X in (("all", lp), ("grouped", grouped)):
            pool = make_pool(method).fit(X[public], y[public])
            row[name] = float(log_loss(pool.predict(X[~public]), y[~public]))
        rows.append(row)
    return {"families": families, "rows": rows, "n_submissions": lp.shape[1], "n_families": len(families)}
