"""Market training (Algorithm 2.4) identities: Bayes (online, log utility), maximum-likelihood
linear pool (batch, log utility), the variational Algorithm 2.1 (batch, isoelastic), conservation."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from aggregators.linear import LinearPool
from markets import MarketPool, equilibrium, make_agents, train_market
from solvers.progress import Cancelled

from .conftest import algorithm_2_1_step, random_beliefs


def _labelled(rng, n, a, k, conc=0.7):
    lp = random_beliefs(rng, n, a, k, conc)
    # labels drawn from a mixture of the agents' beliefs, so some agents are better than others
    truth = np.exp(0.6 * lp[:, 0] + 0.4 * lp[:, 1])
    truth /= truth.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in truth])
    return lp, y


@pytest.mark.parametrize("method", ["auto", "newton"])
def test_log_utility_online_training_is_bayesian_posterior(method, rng):
    lp, y = _labelled(rng, 60, 5, 4)
    W0 = rng.uniform(0.5, 1.5, 5)
    res = train_market(lp, y, "log", W0, mode="online", max_epochs=1, method=method, record_steps=True, floor=None)
    # Bayes: posterior ∝ prior * prod_j P_i(y_j), computed in log space
    loglik = np.cumsum(lp[np.arange(60), :, y], axis=0)
    post = np.log(W0)[None, :] + loglik
    post = np.exp(post - logsumexp(post, axis=1, keepdims=True))
    np.testing.assert_allclose(res.step_history, post, rtol=1e-9, atol=1e-14)
    assert res.conservation_error < 1e-14


def _ml_linear_pool(lp, y):
    """Maximum-likelihood linear pool weights: SLSQP on the simplex (ftol 1e-16)."""
    P = np.exp(lp[np.arange(lp.shape[0]), :, y])
    A = P.shape[1]
    f = lambda w: -np.mean(np.log(P @ w))
    g = lambda w: -np.mean(P / (P @ w)[:, None], axis=0)
    out = minimize(
        f,
        np.full(A, 1 / A),
        jac=g,
        method="SLSQP",
        bounds=[(0, 1)] * A,
        constraints=({"type": "eq", "fun": lambda w: w.sum() - 1},),
        options={"ftol": 1e-16, "maxiter": 1000},
    )
    return out.x, -out.fun


def test_log_utility_batch_training_converges_to_ml_linear_pool(rng):
    lp, y = _labelled(rng, 300, 4, 5)
    res = train_market(lp, y, "log", mode="batch", max_epochs=20_000, wealth_tol=1e-13, floor=None)
    assert res.converged
    w_ref, ll_ref = _ml_linear_pool(lp, y)
    P = np.exp(lp[np.arange(300), :, y])
    ll = np.mean(np.log(P @ res.wealth))
    assert ll >= ll_ref - 1e-10
    np.testing.assert_allclose(res.wealth, w_ref, atol=1e-4)
    assert res.conservation_error < 1e-14
    # the kernel (Newton) path gives the same trajectory as the closed form (EM)
    short = train_market(lp, y, "log", mode="batch", max_epochs=5, wealth_tol=0, method="newton", floor=None)
    np.testing.assert_allclose(short.wealth_history, res.wealth_history[:6], atol=1e-12)


def test_log_utility_batch_training_matches_linear_pool_estimator(rng):
    lp, y = _labelled(rng, 300, 4, 5)
    res = train_market(lp, y, "log", mode="batch", max_epochs=20_000, wealth_tol=1e-13, floor=None)
    pool = LinearPool().fit(lp, y)
    P = np.exp(lp[np.arange(300), :, y])
    assert abs(np.mean(np.log(P @ res.wealth)) - np.mean(np.log(P @ pool.weights_))) < 1e-8


@pytest.mark.parametrize("etas", [[1.5, 3.0, 8.0, 2.0], [3.0, 3.0, 3.0, 3.0]])  # general / one-order block path
def test_isoelastic_batch_step_is_a_variational_algorithm_2_1_step(etas, rng):
    etas = np.array(etas)
    gamma = 1.0 / etas
    lp, y = _labelled(rng, 80, 4, 6)
    W = rng.uniform(0.2, 1.0, 4)
    W /= W.sum()
    res = train_market(lp, y, list(etas), W, mode="batch", max_epochs=1, wealth_tol=0, floor=None, tol=1e-13)
    np.testing.assert_allclose(res.wealth, algorithm_2_1_step(lp, y, W, gamma), atol=1e-11)


def _seed_payouts(lp, y, utils, W, log_c):
    """Each agent's payout ``r_{i,y} / c_y`` (Algorithm 2.4), computed here in NumPy from the
    beliefs ``lp`` (n, A, K), labels ``y``, wealth ``W`` and prices ``log_c`` (n, K) with the
    investments of Table 2.4: isoelastic/log ``r_k = W P_k^(1/eta) c_k^(1-1/eta) / z``, exponential
    (corrected row) ``r_k = c_k (W + log(P_k/c_k) - sum_k' c_k' log(P_k'/c_k'))``."""
    n = lp.shape[0]
    c = np.exp(log_c)
    pay = np.empty((n, len(utils)))
    for i, u in enumerate(utils):
        if u == "exp":
            a = lp[:, i] - log_c
            r = c * (W[i] + a - np.sum(c * a, axis=1, keepdims=True))
        else:
            g = 1.0 / (1.0 if u == "log" else float(u))
            z = g * lp[:, i] + (1.0 - g) * log_c
            r = W[i] * np.exp(z - logsumexp(z, axis=1, keepdims=True))
        pay[:, i] = r[np.arange(n), y] / c[np.arange(n), y]
    return pay


@pytest.mark.parametrize("utils", [[2.0, 5.0, 1.0, 30.0], [2.0, "exp", 1.0, "exp"], [4.0, 4.0, 4.0, 4.0]])
@pytest.mark.parametrize("mode", ["online", "batch"])
def test_wealth_conserved_at_every_step(utils, mode, rng):
    """Every wealth update is the seed's payout (computed independently by :func:`_seed_payouts`
    at the equilibrium prices of the wealth before the update), and the total stays one."""
    lp, y = _labelled(rng, 40, 4, 5)
    res = train_market(lp, y, utils, mode=mode, batch_size=7, max_epochs=3, wealth_tol=0, record_steps=True)
    steps = res.step_history
    assert steps is not None and steps.shape[1] == 4
    assert np.max(np.abs(steps.sum(axis=1) - 1.0)) < 1e-13 * max(1.0, np.abs(steps).max())
    assert res.conservation_error < 1e-13 * max(1.0, np.abs(steps).max())
    assert res.wealth_history.shape == (4, 4)
    np.testing.assert_allclose(res.wealth_history[-1], steps[-1])
    assert res.all_equilibria_converged
    agents = make_agents(utils, n_agents=4)
    prev = agents.wealth
    size = 1 if mode == "online" else 7
    batches = [slice(s, min(40, s + size)) for s in range(0, 40, size)]
    for k, W in enumerate(steps):
        sl = batches[k % len(batches)]
        log_c = equilibrium(lp[sl], agents.with_wealth(prev), tol=1e-13).log_prices
        expected = _seed_payouts(lp[sl], y[sl], utils, prev, log_c).mean(axis=0)
        np.testing.assert_allclose(W, expected, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(steps).max()))
        prev = W


def test_training_stops_when_wealth_stops_changing_and_reports_progress(rng):
    lp, y = _labelled(rng, 100, 3, 4)
    seen = []
    res = train_market(lp, y, 3.0, mode="batch", max_epochs=500, wealth_tol=1e-4, progress=seen.append)
    assert res.converged and res.n_epochs < 500
    assert np.max(np.abs(res.wealth_history[-1] - res.wealth_history[-2])) <= 1e-4
    assert seen == sorted(seen) and seen[-1] == 1.0

    def cancel(f):
        if f > 0.01:
            raise Cancelled()

    with pytest.raises(Cancelled):
        train_market(lp, y, 3.0, mode="batch", max_epochs=500, wealth_tol=0, progress=cancel)


def test_market_pool_estimator(rng):
    lp, y = _labelled(rng, 200, 4, 5)
    pool = MarketPool(utilities=[2.0, 4.0, 1.0, 10.0], max_epochs=30).fit(lp[:150], y[:150])
    assert pool.wealth_.shape == (4,) and abs(pool.wealth_.sum() - 1) < 1e-14
    pred = pool.predict(lp[150:])
    ref = equilibrium(lp[150:], [2.0, 4.0, 1.0, 10.0], pool.wealth_).log_prices
    np.testing.assert_allclose(pred, ref, atol=1e-12)
    np.testing.assert_allclose(np.exp(pred).sum(axis=1), 1.0, atol=1e-13)
    s = pool.score(lp[150:], y[150:])
    assert np.isclose(s, np.mean(pred[np.arange(50), y[150:]]))
    pred2, info = pool.predict_with_info(lp[150:])
    np.testing.assert_array_equal(pred2, pred)
    assert info.equilibrium.summary()["max_clearing_error"] < 1e-9 and info.n_floored == 0
    assert not hasattr(pool, "last_equilibrium_")  # predicting does not change the estimator
    with pytest.raises(RuntimeError):
        MarketPool().predict(lp)


def test_exponential_agents_wealth_may_go_negative_and_is_not_clipped(rng):
    lp, y = _labelled(rng, 200, 3, 4)
    res = train_market(lp, y, "exp", mode="online", max_epochs=3, wealth_tol=0)
    assert (res.wealth < 0).any()
    assert abs(res.wealth.sum() - 1) < 1e-12 * np.abs(res.wealth).max()


def test_market_pool_with_a_bankrupt_agent_predicts_as_the_market_without_it(rng):
    """An agent that gives zero probability to every label loses all its wealth (exactly 0) in one
    batch epoch; the fitted pool must still predict, and its prices are those of the market of
    the other agents with their trained wealth (a penniless agent moves no price)."""
    lp, y = _labelled(rng, 60, 4, 5)
    bad = np.full((60, 5), -np.inf)
    bad[np.arange(60), (y + 1) % 5] = 0.0  # all its belief on a wrong class
    lp = np.concatenate([lp, bad[:, None, :]], axis=1)
    pool = MarketPool(utilities=3.0, floor=None, max_epochs=5).fit(lp, y)
    assert pool.wealth_[4] == 0.0 and np.all(pool.wealth_[:4] > 0)
    pred = pool.predict(lp)
    ref = equilibrium(lp[:, :4], 3.0, pool.wealth_[:4], floor=None).log_prices
    np.testing.assert_allclose(pred, ref, atol=1e-9)
