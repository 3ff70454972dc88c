"""RenyiPool: the estimator (fixed, grid, learnt γ; annealing λ)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators.renyi import RenyiPool, renyi_aggregate
from aggregators.renyi_gradient import renyi_loglik_grad
from aggregators.validation import PredictionError


def biased_agents(n=300, a=5, k=8, seed=0):
    """Agents that see a shared truth through individual biases (so the best γ is inside (0, 1))."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n, k)) * 1.5
    y = np.array([rng.choice(k, p=np.exp(t - logsumexp(t))) for t in truth])
    bias = rng.normal(size=(1, a, k)) * 1.2
    lp = truth[:, None, :] + bias + 0.5 * rng.normal(size=(n, a, k))
    return lp - logsumexp(lp, axis=2, keepdims=True), y


def test_fit_predict_shapes_and_state():
    lp, y = biased_agents()
    pool = RenyiPool(gamma=0.2).fit(lp, y)
    assert pool.weights_.shape == (5,) and pool.weights_.min() >= 0
    assert pool.weights_.sum() == pytest.approx(1.0)
    assert pool.gamma_ == 0.2 and pool.fit_result_.converged
    out = pool.predict(lp)
    np.testing.assert_allclose(logsumexp(out, axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(out, renyi_aggregate(lp, pool.weights_, 0.2), atol=1e-10)
    assert pool.score(lp, y) == pytest.approx(pool.loglik_, abs=1e-9)
    np.testing.assert_allclose(pool.predict_proba(lp), np.exp(out))


def test_grid_curve_and_learnt_gamma_is_a_stationary_point():
    lp, y = biased_agents(seed=1)
    grid = [1.0, 0.3, 0.1, 0.03, 0.01]
    g_pool = RenyiPool(gamma="grid", gamma_grid=grid).fit(lp, y)
    curve = g_pool.validation_curve_
    assert curve["gamma"] == grid and len(curve["loglik"]) == 5
    np.testing.assert_allclose(curve["perplexity"], np.exp(-np.array(curve["loglik"])))
    assert g_pool.gamma_ == grid[int(np.argmax(curve["loglik"]))]
    assert g_pool.loglik_ == pytest.approx(max(curve["loglik"]), abs=1e-9)

    l_pool = RenyiPool(gamma="learn", gamma_grid=grid).fit(lp, y)
    assert l_pool.loglik_ >= g_pool.loglik_ - 1e-10
    # the curvature models passed from one γ's fit to the next are not kept in the result
    assert "model" not in l_pool.fit_result_.extra and "model" not in g_pool.fit_result_.extra
    g = l_pool.gamma_
    if 0.01 < g < 1.0:
        # profile-likelihood stationarity: refitting the weights at γ(1 ± 2%) does not do better
        for f in (0.98, 1.02):
            other = RenyiPool(gamma=g * f).fit(lp, y)
            assert other.loglik_ <= l_pool.loglik_ + 1e-7
        # and the envelope derivative is ~0 there
        _, gr, _, _ = renyi_loglik_grad(lp, y, l_pool.weights_, np.full(5, g), want=("gamma",))
        assert abs(g * gr["gamma"].sum()) < 1e-4


def test_grid_cross_validation_records_held_out_curve():
    lp, y = biased_agents(n=150, seed=2)
    pool = RenyiPool(gamma="grid", gamma_grid=[1.0, 0.1, 0.01], cv=3).fit(lp, y)
    c = pool.validation_curve_
    assert c["criterion"] == "cv_loglik" and len(c["cv_loglik"]) == 3
    assert pool.gamma_ == c["gamma"][int(np.argmax(c["cv_loglik"]))]
    # held-out log-likelihood is below the in-sample fit
    assert np.all(np.array(c["cv_loglik"]) <= np.array(c["loglik"]) + 1e-12)


def test_learnt_annealing_recovers_an_overconfident_agent():
    """One agent reporting P*^2 (over-confident): the learnt λ is the MLE temperature, about 1/2."""
    rng = np.random.default_rng(3)
    n, k = 4000, 6
    logits = rng.normal(size=(n, k)) * 1.5
    truth = logits - logsumexp(logits, axis=1, keepdims=True)
    y = (rng.random((n, 1)) > np.cumsum(np.exp(truth), axis=1)).sum(axis=1)
    lp = 2.0 * truth[:, None, :]
    pool = RenyiPool(gamma=0.5, learn_lam=True).fit(lp, y)
    assert pool.lam_[0] == pytest.approx(0.5, abs=0.04)
    base = RenyiPool(gamma=0.5).fit(lp, y)
    assert pool.loglik_ > base.loglik_


def test_per_agent_gamma_and_fixed_weights():
    lp, y = biased_agents(n=150, seed=4)
    pool = RenyiPool(gamma=[0.1, 0.2, 0.5, 1.0, 0.05]).fit(lp, y)
    assert isinstance(pool.gamma_, np.ndarray) and pool.gamma_.shape == (5,)
    fixed = RenyiPool(gamma=0.3, learn_weights=False, weights=[1, 1, 1, 1, 0]).fit(lp, y)
    np.testing.assert_allclose(fixed.weights_, [0.25, 0.25, 0.25, 0.25, 0])
    per = RenyiPool(gamma="learn_per_agent", gamma_grid=[1.0, 0.1], max_iter=60).fit(lp, y)
    shared = RenyiPool(gamma="learn", gamma_grid=[1.0, 0.1]).fit(lp, y)
    assert per.gamma_.shape == (5,) and np.all((per.gamma_ >= 1e-4) & (per.gamma_ <= 1))
    assert per.loglik_ >= shared.loglik_ - 1e-9


def test_bad_gamma_and_shape_mismatch():
    lp, y = biased_agents(n=20)
    with pytest.raises(PredictionError):
        RenyiPool(gamma="sometimes").fit(lp, y)
    with pytest.raises(PredictionError):
        RenyiPool(gamma=2.0).fit(lp, y)
    pool = RenyiPool(gamma=0.5).fit(lp, y)
    with pytest.raises(PredictionError):
        pool.predict(lp[:, :3])
