"""Simple average (Eq. 2.1) and the top-k average with k chosen by cross-validation."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators import SimpleAverage, TopKAverage, simple_average
from aggregators.average import check_agents, kfold_indices
from aggregators.validation import PredictionError


def make_agents(n=200, a=6, k=5, seed=0, noise=None):
    """Agents = noisy versions of a true conditional distribution; lower index = less noise."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    truth = np.exp(logits - logits.max(1, keepdims=True))
    truth /= truth.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=t) for t in truth])
    noise = np.linspace(0.2, 3.0, a) if noise is None else np.asarray(noise)
    lp = logits[:, None, :] + noise[None, :, None] * rng.normal(size=(n, a, k))
    lp -= np.log(np.exp(lp).sum(2, keepdims=True))
    return lp, y


def test_simple_average_matches_probability_mean():
    lp, _ = make_agents(n=20, a=4)
    ref = np.log(np.exp(lp).mean(axis=1))
    np.testing.assert_allclose(simple_average(lp), ref, atol=1e-13)
    np.testing.assert_allclose(simple_average(lp, [2, 0]), np.log(np.exp(lp[:, [0, 2]]).mean(1)), atol=1e-13)
    np.testing.assert_allclose(SimpleAverage().predict(lp), ref, atol=1e-13)
    est = SimpleAverage().fit(lp)
    np.testing.assert_allclose(est.weights_, 0.25)
    np.testing.assert_allclose(est.predict_proba(np.exp(lp), kind="probs"), np.exp(ref), atol=1e-13)


def test_simple_average_keeps_zeros_legal_and_tiny_values():
    p = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.5, 0.5], [1.0, 0.0]]])
    with np.errstate(divide="ignore"):
        out = simple_average(np.log(p))
    np.testing.assert_allclose(np.exp(out), [[1.0, 0.0], [0.75, 0.25]], atol=1e-15)
    tiny = np.full((1, 2, 2), -2000.0)  # unnormalised, exp underflows: normalised to 1/2 each
    np.testing.assert_allclose(np.exp(simple_average(tiny)), 0.5, atol=1e-15)


def test_check_agents_rejections():
    for bad in [[], [0, 0], [7], [-1], [0.5], [[0, 1]], "ab"]:
        with pytest.raises(PredictionError):
            check_agents(bad, 6)
    assert check_agents([3.0, 1.0], 6).tolist() == [3, 1]


def test_kfold_partition():
    folds = kfold_indices(23, 5, 0)
    tests = np.sort(np.concatenate([t for _, t in folds]))
    np.testing.assert_array_equal(tests, np.arange(23))
    for tr, te in folds:
        assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == 23
    assert len(kfold_indices(3, 5)) == 3  # capped: leave-one-out
    with pytest.raises(PredictionError):
        kfold_indices(1, 5)
    with pytest.raises(PredictionError):
        kfold_indices(10, 1)


def test_topk_ranking_and_fixed_k():
    lp, y = make_agents()
    est = TopKAverage(k=3).fit(lp, y)
    scores = np.array([lp[np.arange(len(y)), i, y].mean() for i in range(lp.shape[1])])
    np.testing.assert_allclose(est.agent_scores_, scores, atol=1e-13)
    np.testing.assert_array_equal(est.ranking_, np.argsort(-scores))
    assert est.k_ == 3 and est.validation_curve_ is None
    np.testing.assert_allclose(est.predict(lp), simple_average(lp, np.argsort(-scores)[:3]), atol=1e-13)
    assert est.weights_.sum() == pytest.approx(1.0) and (est.weights_ > 0).sum() == 3


def _brute_force_cv_curve(lp, y, n_folds, seed):
    """Independent reference: for each fold and k, rank on train, average with simple_average, score test."""
    folds = kfold_indices(len(y), n_folds, seed)
    a = lp.shape[1]
    tot = np.zeros(a)
    for tr, te in folds:
        order = np.argsort(-np.array([lp[tr, i, y[tr]].mean() for i in range(a)]), kind="stable")
        for k in range(1, a + 1):
            agg = simple_average(lp[te][:, order[:k]])
            tot[k - 1] += agg[np.arange(len(te)), y[te]].sum()
    return tot / len(y)


def test_topk_cv_curve_matches_brute_force_and_picks_its_max():
    lp, y = make_agents(noise=[0.3, 0.35, 0.4, 0.45, 2.5, 3.0])
    est = TopKAverage(n_folds=4, random_state=3).fit(lp, y)
    ref = _brute_force_cv_curve(lp, y, 4, 3)
    np.testing.assert_allclose(est.validation_curve_["score"], ref, atol=1e-10)
    np.testing.assert_array_equal(est.validation_curve_["k"], np.arange(1, 7))
    assert est.k_ == int(np.argmax(ref)) + 1
    # four good agents, two bad ones: averaging several good ones helps, including the bad ones hurts
    assert 2 <= est.k_ <= 4


def test_topk_k_grid_and_errors():
    lp, y = make_agents(n=50)
    est = TopKAverage(k_grid=[1, 6]).fit(lp, y)
    assert est.k_ in (1, 6) and est.validation_curve_["k"].tolist() == [1, 6]
    for bad in [dict(k=0), dict(k=7), dict(k=2.5), dict(k_grid=[0, 2]), dict(k_grid=[9]), dict(k_grid=[])]:
        with pytest.raises(PredictionError):
            TopKAverage(**bad).fit(lp, y)
    with pytest.raises(PredictionError):
        TopKAverage().fit(lp, None)
    with pytest.raises(PredictionError):  # predict on a different number of agents than fitted
        TopKAverage(k=2).fit(lp, y).predict(lp[:, :4])


def test_topk_progress_reports_reach_one():
    lp, y = make_agents(n=40)
    seen = []
    TopKAverage(n_folds=3).fit(lp, y, progress=seen.append)
    assert seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen) and seen == sorted(seen)
