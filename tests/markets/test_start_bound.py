"""The lower bound on isoelastic markets' prices (:mod:`markets.kernels.start_bound`) and warm
starts lifted to it: the bound checked at equilibria the seed's fixed point finds (not started from
it), starts far below the equilibrium solved in few Newton steps, and starts at or above the bound
left bit for bit as they were."""

import numpy as np
import pytest
from scipy.special import logsumexp

from markets import equilibrium, make_agents
from markets.kernels.start_bound import START_FLOOR, bound_coefficients, lift_starts


def _market(rng, A, K, orders):
    lp = rng.normal(0, rng.uniform(1, 6), (A, K))
    lp -= logsumexp(lp, axis=1, keepdims=True)
    W = rng.uniform(0.05, 1.0, A)
    etas = [float(e) for e in rng.choice(orders, A)]
    return lp, W, etas


def _bound(lp, W, etas):
    g = 1.0 / np.asarray(etas)
    return np.max(lp + (np.log(W / W.sum()) / g)[:, None], axis=0)


@pytest.mark.parametrize("orders", [(10.0,), (2.0,), (1.0,), (1.0, 2.0, 10.0, 30.0), (1.2, 200.0)])
def test_the_bound_holds_at_the_seeds_fixed_point(orders):
    """``log c_k >= max_i log P_ik + log(W_i / sum W) / g_i`` at the equilibrium of random markets of
    one and of several orders (the fixed point from its own start, tol 1e-13)."""
    rng = np.random.default_rng(11)
    slack = []
    for _ in range(40):
        A, K = int(rng.integers(2, 12)), int(rng.integers(2, 40))
        lp, W, etas = _market(rng, A, K, orders)
        r = equilibrium(lp[None], etas, W, method="fixed_point", tol=1e-13, floor=None, max_iter=200_000)
        assert r.all_converged
        gap = r.log_prices[0] - _bound(lp, W, etas)
        assert gap.min() > -1e-9
        slack.append(gap.min())
    assert min(slack) < 0.5 * max(orders)  # not vacuous: the bound's looseness grows with eta = 1/g


@pytest.mark.parametrize("method", ["newton", "anderson"])
@pytest.mark.parametrize("etas", [[10.0, 10.0, 10.0], [2.0, 10.0, 1.0], [2.0, 2.0, 2.0], [1.0, 30.0, 1.0]])
def test_far_starts_cost_no_more_steps_than_near_ones(method, etas):
    """Starts 100-800 log-units below the equilibrium on three goods (800: a price of exactly zero in
    double precision, where Newton stopped after one step with an infinite clearing error before the
    lift) reach the fixed point's answer with the default iteration cap; Newton in at most 20 steps
    (before the lift: 59-410 steps from 100-400 units, measured session 44)."""
    rng = np.random.default_rng(5)
    lp, W, _ = _market(rng, 3, 43, (2.0,))
    ref = equilibrium(lp[None], etas, W, method="fixed_point", tol=1e-13, floor=None, max_iter=200_000)
    for depth in (100.0, 400.0, 800.0):
        start = rng.normal(0, 2, 43)
        start[:3] = -depth
        r = equilibrium(lp[None], etas, W, method=method, tol=1e-12, floor=None, start=start[None])
        assert r.all_converged
        np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-9)
        assert r.summary()["max_clearing_error"] < 1e-10
        if method == "newton":
            assert r.n_iter[0] <= 20


def test_a_zero_price_start_with_an_exponential_agent_is_recovered():
    """No bound with an exponential agent; a start below ``-745`` (a zero price) is raised to
    :data:`START_FLOOR` and Newton reaches tâtonnement's answer (before: one step, unconverged)."""
    rng = np.random.default_rng(2)
    lp, W, _ = _market(rng, 2, 20, (2.0,))
    utilities = ["exp", 10.0]
    ref = equilibrium(lp[None], utilities, W, method="tatonnement", tol=1e-12, floor=None)
    start = rng.normal(0, 2, 20)
    start[:2] = -800.0
    r = equilibrium(lp[None], utilities, W, method="newton", tol=1e-12, floor=None, start=start[None], max_iter=500)
    assert r.all_converged
    np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-8)


def test_starts_above_the_bound_are_not_touched():
    """At the equilibrium (and anywhere above the bound) the start is kept bit for bit; below it the
    lifted coordinates sit on the bound up to the renormalisation."""
    rng = np.random.default_rng(3)
    n, A, K = 30, 6, 25
    lp = rng.normal(0, 3, (n, A, K))
    lp -= logsumexp(lp, axis=2, keepdims=True)
    W = rng.uniform(0.1, 1.0, A)
    etas = [2.0, 10.0, 1.0, 2.0, 30.0, 1.5]
    ag = make_agents(etas, W, A)
    U = equilibrium(lp, etas, W, method="fixed_point", tol=1e-13, floor=None, max_iter=200_000).log_prices
    V = U.copy()
    assert lift_starts(lp, ag.kind, ag.inv_eta, ag.wealth, V) == 0
    assert np.array_equal(U, V)
    low = U.copy()
    low[:, 0] = -500.0
    low -= logsumexp(low, axis=1, keepdims=True)
    assert lift_starts(lp, ag.kind, ag.inv_eta, ag.wealth, low) == n
    b = np.array([_bound(lp[j], W, etas) for j in range(n)])
    assert np.all(low[:, 0] <= b[:, 0] + 1e-12) and np.all(low[:, 0] > b[:, 0] - 1.0)
    np.testing.assert_allclose(logsumexp(low, axis=1), 0.0, atol=1e-12)


def test_no_bound_with_an_exponential_agent_or_no_wealth():
    """The coefficients are refused (empty) with an exponential agent or zero total wealth; a
    bankrupt isoelastic agent contributes nothing (``-inf``)."""
    exp_ag = make_agents(["exp", 2.0], [1.0, 1.0], 2)
    assert bound_coefficients(exp_ag.kind, exp_ag.inv_eta, exp_ag.wealth).shape == (0,)
    ag = make_agents([2.0, 10.0], [1.0, 1.0], 2)
    assert bound_coefficients(ag.kind, ag.inv_eta, np.zeros(2)).shape == (0,)
    c = bound_coefficients(ag.kind, ag.inv_eta, np.array([0.0, 2.0]))
    assert c[0] == -np.inf and c[1] == 0.0
    U = np.array([[-800.0, 0.0, -1.0]])
    U -= logsumexp(U, axis=1, keepdims=True)
    lift_starts(np.zeros((1, 2, 3)) - np.log(3.0), exp_ag.kind, exp_ag.inv_eta, exp_ag.wealth, U)
    assert U[0, 0] > START_FLOOR - 1.0 and abs(logsumexp(U[0])) < 1e-12
