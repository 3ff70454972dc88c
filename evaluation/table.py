"""The statistics of Table 2.3 (seed 000, section 2.7.3.1): perplexity mean ± std over the private
subsets and the one-sided paired t-test against the linear pool.

Conventions: predictions are normalised log-probabilities of shape ``(n_items, n_classes)``;
labels are integer classes; logs are natural.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from aggregators.metrics import log_loss


def subset_log_losses(log_probs: np.ndarray, labels: np.ndarray, subsets: list[np.ndarray]) -> np.ndarray:
    """Log loss (log perplexity, Eq. 2.26) on each subset of items."""
    return np.array([log_loss(log_probs[s], labels[s]) for s in subsets])


def table_row(log_losses: np.ndarray, baseline_log_losses: np.ndarray | None) -> dict:
    """One column of Table 2.3 from per-subset log perplexities of a method and of the baseline.

    Returns ``perplexity_mean``/``perplexity_std`` over subsets (sample std, ``ddof=1``), the
    paired log-perplexity difference from the baseline (``diff_mean``/``diff_std``) and the
    one-sided paired t-test p-value of the alternative "the method has lower log perplexity than
    the baseline" (``p_value``; 1.0 when the method is the baseline itself).
    """
    ppl = np.exp(log_losses)
    ddof = 1 if len(ppl) > 1 else 0
    row: dict[str, float | None] = {"perplexity_mean": float(ppl.mean()), "perplexity_std": float(ppl.std(ddof=ddof))}
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
