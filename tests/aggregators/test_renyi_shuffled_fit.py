"""The Rényi fit's items in a random order (``RenyiPool._fit_shuffle``): the floor pass writes them
shuffled, the Newton solver's warm start then takes prefixes (random subsets) as views, and the fit is
the fit of the items as given (a mean over items does not depend on their order)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators import renyi_pool
from aggregators.renyi import RenyiPool
from aggregators.renyi_weight_hessian import RenyiWeightProblem
from aggregators.validation import as_floored_log_probs


def data(n, a, k, seed):
    rng = np.random.default_rng(seed)
    sharp = rng.uniform(0.3, 3.0, a)
    truth = rng.normal(size=(n, k)) * 2.0
    y = np.array([rng.choice(k, p=np.exp(t - logsumexp(t))) for t in truth])
    lp = sharp[None, :, None] * (
        truth[:, None, :] + rng.normal(size=(n, a, k)) * rng.uniform(0.5, 3.0, a)[None, :, None]
    )
    lp -= logsumexp(lp, axis=2, keepdims=True)
    lp[:, 0, 0] = -40.0  # some entries below the floor
    return lp, y


def test_the_floor_pass_writes_the_items_in_the_order_it_reports():
    lp, _ = data(1200, 12, 8, seed=1)
    plain = as_floored_log_probs(lp)
    shuffled = as_floored_log_probs(lp, shuffle=5)
    assert plain.order is None and shuffled.order is not None
    assert np.array_equal(np.sort(shuffled.order), np.arange(1200)) and not np.array_equal(
        shuffled.order, np.arange(1200)
    )
    assert np.array_equal(shuffled.log_probs, plain.log_probs[shuffled.order])  # bit for bit
    assert shuffled.n_floored == plain.n_floored > 0
    # a small input takes the same compiled pass (serial since session 55): shuffled too, bit for bit
    small = as_floored_log_probs(lp[:20], shuffle=5)
    assert small.order is not None and np.array_equal(np.sort(small.order), np.arange(20))
    assert np.array_equal(small.log_probs, as_floored_log_probs(lp[:20]).log_probs[small.order])
    assert np.array_equal(small.log_probs, plain.log_probs[:20][small.order])  # alone = in the large call


@pytest.mark.parametrize("gamma,sample_weight", [(0.5, False), (0.5, True), ("per_agent", False)])
def test_a_shuffled_fit_takes_views_and_equals_the_fit_in_the_given_order(monkeypatch, gamma, sample_weight):
    lp, y = data(2000, 48, 6, seed=2)  # more than 40 agents: the working-set Newton
    rng = np.random.default_rng(3)
    sw = rng.integers(0, 4, 2000).astype(float) if sample_weight else None
    g = np.linspace(0.3, 0.8, 48) if gamma == "per_agent" else gamma
    views = []
    subsample = RenyiWeightProblem.subsample

    def spy(self, items):
        sub = subsample(self, items)
        views.append(np.shares_memory(sub.L, self.L))
        return sub

    monkeypatch.setattr(RenyiWeightProblem, "subsample", spy)
    monkeypatch.setattr(renyi_pool, "SHUFFLE_MIN_ENTRIES", 1)  # small data, shuffled as large data are
    monkeypatch.setattr(renyi_pool, "SHUFFLE_MIN_ITEM", 1)
    shuffled = RenyiPool(gamma=g, tol=1e-11).fit(lp, y, sample_weight=sw)
    assert views and all(views)  # the warm start's subsets (2000 -> 500) read the data in place
    views.clear()
    given = RenyiPool(gamma=g, tol=1e-11).fit(as_floored_log_probs(lp), y, sample_weight=sw)  # validated: not shuffled
    assert views and not any(views)  # random subsets, copied
    assert shuffled.converged_ and given.converged_
    # the same optimum (to the tolerance: the weights move along near-flat directions by up to 1e-4)
    assert abs(shuffled.loglik_ - given.loglik_) <= 1e-10 * abs(given.loglik_)
    assert np.abs(shuffled.weights_ - given.weights_).max() <= 1e-4
    # predictions come back in the given order: the same log-likelihood item by item, to the tolerance
    ll_s = shuffled.predict(lp)[np.arange(y.size), y]
    ll_g = given.predict(lp)[np.arange(y.size), y]
    np.testing.assert_allclose(ll_s, ll_g, atol=5e-4)
    assert abs(np.average(ll_s, weights=sw) - np.average(ll_g, weights=sw)) <= 1e-9


def test_fits_that_do_not_subsample_keep_the_given_order():
    big = np.broadcast_to(np.zeros(1), ((1 << 25) // 4096 + 1, 64, 64))  # past the size, no memory
    assert big.size >= renyi_pool.SHUFFLE_MIN_ENTRIES
    assert RenyiPool(gamma=0.1)._fit_shuffle(big) is None  # starts from the log pool's weights
    assert RenyiPool(gamma="grid")._fit_shuffle(big) is None
    assert RenyiPool(gamma=0.5, weights=np.ones(3))._fit_shuffle(big) is None
    assert RenyiPool(gamma=0.5, solver="projected_gradient")._fit_shuffle(big) is None
    assert RenyiPool(gamma=0.5, random_state=7)._fit_shuffle(big) == 7
    assert RenyiPool(gamma=0.5)._fit_shuffle(big[:100]) is None  # small: the solver's own random subsets
    assert RenyiPool(gamma=0.5)._fit_shuffle([[[0.0]]]) is None  # not an array
    small_items = np.broadcast_to(np.zeros(1), ((1 << 25) // 400 + 1, 50, 8))  # 400 numbers an item
    assert small_items.size >= renyi_pool.SHUFFLE_MIN_ENTRIES
    assert RenyiPool(gamma=0.5)._fit_shuffle(small_items) is None  # the gather would cost more than it saves
    few_agents = np.broadcast_to(np.zeros(1), ((1 << 25) // 4096 + 1, 40, 4096 // 40 + 1))
    assert RenyiPool(gamma=0.5)._fit_shuffle(few_agents) is None  # 40 agents: no working set, no warm start
    assert RenyiPool(gamma=0.5, solver_options={"ws_min": 20})._fit_shuffle(few_agents) == 0
