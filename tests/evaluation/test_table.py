"""Perplexity (Eq. 2.26) as the competition scores it, and the statistics of Table 2.3."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from aggregators.metrics import log_loss, perplexity
from evaluation.table import subset_log_losses, table_row


def test_perplexity_uniform_is_k_and_matches_eq_2_26():
    rng = np.random.default_rng(0)
    k = 64
    y = rng.integers(0, k, 500)
    uni = np.full((500, k), -np.log(k))
    assert perplexity(uni, y) == pytest.approx(64.0, rel=1e-12)
    logits = rng.normal(size=(500, k))
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    lp = np.log(p)
    # Eq. 2.26 written out with a python loop over probabilities (independent of the vectorised code)
    s = sum(math.log(p[j, y[j]]) for j in range(500))
    assert perplexity(lp, y) == pytest.approx(math.exp(-s / 500), rel=1e-10)
    assert log_loss(lp, y) == pytest.approx(-s / 500, rel=1e-10)


def test_table_row_matches_paired_t_test():
    rng = np.random.default_rng(3)
    base = 1.05 + 0.02 * rng.normal(size=10)
    better = base - 0.02 + 0.01 * rng.normal(size=10)
    row = table_row(better, base)
    d = better - base
    t = d.mean() / (d.std(ddof=1) / math.sqrt(10))
    assert row["p_value"] == pytest.approx(stats.t.cdf(t, df=9), rel=1e-9)
    assert row["p_value"] < 0.05
    assert row["diff_mean"] == pytest.approx(d.mean())
    assert row["perplexity_mean"] == pytest.approx(np.exp(better).mean())
    worse = table_row(base + 0.03, base)
    assert worse["p_value"] == 1.0  # identical shift: no variance, reported as not better
    noisy_worse = table_row(base + 0.03 + 0.01 * rng.normal(size=10), base)
    assert noisy_worse["p_value"] > 0.99


def test_subset_log_losses_are_the_log_loss_of_each_subset():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(40, 3))
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    y = rng.integers(0, 3, 40)
    subsets = [np.arange(0, 40, 3), np.array([1, 2, 7]), np.arange(20, 40)]
    got = subset_log_losses(lp, y, subsets)
    for s, ll in zip(subsets, got):
        assert ll == pytest.approx(-sum(lp[j, y[j]] for j in s) / len(s), rel=1e-12)
