"""Scores of a competition: the public/private split, perplexity (Eq. 2.26, seed 000) and log loss,
and the statistics of Table 2.3 (mean ± std over private subsets, one-sided p-value against the
linear pool).

Conventions: predictions are normalised log-probabilities of shape ``(n_items, n_classes)``;
labels are integer classes; logs are natural.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

N_PRIVATE_SUBSETS = 10
"""The seed splits the private set into 10 subsets for mean ± std (section 2.7.3.1)."""


def public_private_split(n_items: int, public_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of the public items, fixed by the server from ``seed``.

    Exactly ``round(public_fraction * n_items)`` items are public (at least one public and one
    private item when ``n_items >= 2``); the draw depends only on ``(n_items, public_fraction,
    seed)``, so the split can be recomputed and never needs to be sent to anyone.
    """
    if n_items < 2:
        raise ValueError(f"n_items: a competition needs at least 2 test items; got {n_items}")
    if not 0.0 < public_fraction < 1.0:
        raise ValueError(f"public_fraction: must lie in (0, 1); got {public_fraction!r}")
    n_public = int(round(public_fraction * n_items))
    n_public = min(max(n_public, 1), n_items - 1)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5EED]))
    mask = np.zeros(n_items, dtype=bool)
    mask[rng.permutation(n_items)[:n_public]] = True
    return mask


def private_subsets(n_private: int, seed: int, n_subsets: int = N_PRIVATE_SUBSETS) -> list[np.ndarray]:
    """Split private item positions ``0..n_private-1`` into ``n_subsets`` disjoint random parts."""
    n_subsets = max(1, min(int(n_subsets), n_private))
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5B5E7]))
    return [np.sort(p) for p in np.array_split(rng.permutation(n_private), n_subsets)]


def label_log_likelihoods(log_probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``log P(y_j = c_j)`` per item for normalised log-probabilities ``(n_items, n_classes)``."""
    return log_probs[np.arange(len(labels)), labels]


def log_loss(log_probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean negative log-likelihood of the labels (nats); ``log(perplexity)``."""
    return float(-label_log_likelihoods(log_probs, labels).mean())


def perplexity(log_probs: np.ndarray, labels: np.ndarray) -> float:
    """Perplexity, Eq. (2.26) of seed 000: ``exp(-1/N_t sum_j log P(y_j = c_j))``; lower is better.

    A uniform prediction over K classes has perplexity K (64 for the seed's pixel task).
    """
    return float(np.exp(log_loss(log_probs, labels)))


def subset_log_losses(log_probs: np.ndarray, labels: np.ndarray, subsets: list[np.ndarray]) -> np.ndarray:
    """Log loss (log perplexity) on each subset of items."""
    ll = label_log_likelihoods(log_probs, labels)
    return np.array([-ll[s].mean() for s in subsets])


def table_row(log_losses: np.ndarray, baseline_log_losses: np.ndarray | None) -> dict:
    """One column of Table 2.3 from per-subset log perplexities of a method and of the baseline.

    Returns ``perplexity_mean``/``perplexity_std`` over subsets (sample std, ``ddof=1``), the
    paired log-perplexity difference from the baseline (``diff_mean``/``diff_std``) and the
    one-sided paired t-test p-value of the alternative "the method has lower log perplexity than
    the baseline" (``p_value``; 1.0 when the method is the baseline itself).
    """
    ppl = np.exp(log_losses)
    ddof = 1 if len(ppl) > 1 else 0
    row = {"perplexity_mean": float(ppl.mean()), "perplexity_std": float(ppl.std(ddof=ddof))}
    if baseline_log_losses is None:
        row.update(diff_mean=None, diff_std=None, p_value=None)
        return row
    diff = log_losses - baseline_log_losses
    row["diff_mean"] = float(diff.mean())
    row["diff_std"] = float(diff.std(ddof=ddof))
    if len(diff) < 2:
        row["p_value"] = 1.0
    elif np.ptp(diff) <= 1e-12 * max(1.0, abs(float(diff.mean()))):
        row["p_value"] = 0.0 if diff.mean() < 0 else 1.0  # no spread: the sign decides
    else:
        p = stats.ttest_1samp(diff, 0.0, alternative="less").pvalue
        row["p_value"] = float(p) if np.isfinite(p) else 1.0
    return row
