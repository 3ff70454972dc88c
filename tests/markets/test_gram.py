"""``method="gram"``: eta = 2 markets solved as a symmetric scaling of the agents' Gram matrix
(:mod:`markets.kernels.gram`). Checked against the seed's fixed point (an independent iteration in the
space of prices), against scipy's solution of the A-dimensional convex problem, by the equilibrium
conditions recomputed from the investments, and through training and the fall-backs."""

import numpy as np
import pytest
from scipy.optimize import minimize

from benchmarks.bench_markets_grid import family
from markets import equilibrium, train_market
from markets.agents import make_agents
from markets.equilibrium import auto_newton, gram_max_agents
from markets.kernels import solve_item
from markets.kernels.gram import gram_rows, scaling_newton
from solvers.errors import InputError

from .conftest import random_beliefs


@pytest.mark.parametrize("fam", ["dirichlet", "logit", "dups"])
@pytest.mark.parametrize("K,A", [(2, 2), (3, 5), (16, 2), (16, 10), (70, 40), (300, 7)])
def test_gram_equals_the_seeds_fixed_point_and_the_dense_newton(fam, K, A):
    lp = family(fam, 4, A, K, seed=K + A)
    w = np.random.default_rng(A).uniform(0.1, 1.0, A)
    ref = equilibrium(lp, 2.0, w, method="fixed_point", tol=1e-13)
    got = equilibrium(lp, 2.0, w, method="gram", tol=1e-10)
    assert got.method == "gram" and got.all_converged and ref.all_converged
    np.testing.assert_allclose(got.log_prices, ref.log_prices, atol=1e-10, rtol=0)
    if K <= 70:  # and the dense Newton in the space of prices
        dense = equilibrium(lp, 2.0, w, method="newton", tol=1e-12)
        np.testing.assert_allclose(got.log_prices, dense.log_prices, atol=1e-10, rtol=0)
    # the equilibrium conditions, recomputed from the investments (check=True)
    assert got.clearing_error.max() <= 1e-10
    assert got.budget_error.max() <= 1e-10
    assert got.price_sum_error.max() <= 1e-12


def test_the_scaling_is_the_minimiser_of_the_convex_problem_scipy_finds(rng):
    """The A-dimensional problem on its own: ``s * (G s) = b`` minimises
    ``f(x) = 1/2 e^x' G e^x - b'x``; scipy's BFGS on ``f`` (with its exact gradient) finds the same
    ``x``, and the prices ``(p^T s)^2`` sum to one when ``b = W`` with ``sum W = 1``."""
    A, K = 6, 25
    P = rng.dirichlet(np.full(K, 0.6), size=A)
    p = np.sqrt(P)
    G = np.empty((A, A))
    gram_rows(p.ravel(), A, K, G)
    np.testing.assert_allclose(G, p @ p.T, rtol=1e-13)
    np.testing.assert_allclose(np.diag(G), 1.0, rtol=1e-13)  # G_ii = sum_k P_ik
    W = rng.uniform(0.2, 1.0, A)
    W /= W.sum()
    x = np.log(W)
    it, rel = scaling_newton(G, W.copy(), x, 100, np.empty(2 * A * A + 6 * A))
    assert rel <= 1e-14 and 1 <= it <= 20

    def f(y):
        e = np.exp(y)
        return 0.5 * e @ G @ e - W @ y, e * (G @ e) - W

    ref = minimize(f, np.zeros(A), jac=True, method="BFGS", options={"gtol": 1e-13, "maxiter": 10_000})
    np.testing.assert_allclose(x, ref.x, atol=1e-7)
    s = np.exp(x)
    np.testing.assert_allclose(s * (G @ s), W, rtol=1e-13)
    c = (p.T @ s) ** 2
    assert abs(c.sum() - 1.0) <= 1e-13


def test_max_iter_zero_gives_the_power_mean_start_of_the_other_methods(rng):
    lp = random_beliefs(rng, 3, 4, 12)
    w = rng.uniform(0.3, 1.0, 4)
    a = equilibrium(lp, 2.0, w, method="gram", max_iter=0, check=False)
    b = equilibrium(lp, 2.0, w, method="newton_cg", max_iter=0, check=False)
    assert (a.n_iter == 0).all() and not a.converged.any()
    np.testing.assert_allclose(a.log_prices, b.log_prices, atol=1e-12)
    np.testing.assert_allclose(a.clearing_error, b.clearing_error, rtol=1e-9)


def test_a_warm_start_at_the_answer_takes_no_step_and_keeps_it(rng):
    lp = random_beliefs(rng, 5, 3, 40)
    r = equilibrium(lp, 2.0, method="gram")
    again = equilibrium(lp, 2.0, method="gram", start=r.log_prices)
    assert again.all_converged and (again.n_iter <= 1).all()
    np.testing.assert_allclose(again.log_prices, r.log_prices, atol=1e-13)


def test_extreme_markets_clear(rng):
    """Sharp agents (logits of scale 40), wealth spread over six orders of magnitude, near-duplicate
    agents: every item clears to ``tol`` and agrees with the fixed point."""
    n, A, K = 6, 8, 50
    z = 40.0 * rng.standard_normal((n, A, K))
    z[:, 4:] = z[:, :4] + 1e-9 * rng.standard_normal((n, 4, K))
    lp = z - np.log(np.exp(z - z.max(2, keepdims=True)).sum(2, keepdims=True)) - z.max(2, keepdims=True)
    w = 10.0 ** rng.uniform(-6, 0, A)
    got = equilibrium(lp, 2.0, w, method="gram")
    ref = equilibrium(lp, 2.0, w, method="fixed_point", tol=1e-13)
    assert got.all_converged and got.clearing_error.max() <= 1e-10
    np.testing.assert_allclose(got.log_prices, ref.log_prices, atol=1e-9)


def test_a_tolerance_below_rounding_hands_over_to_newton_cg_and_says_so(rng):
    """At ``tol = 1e-17`` no method clears: the scaling stops at rounding, Newton-CG takes over from its
    prices (more iterations than the scaling's own), and the result reports not converged, with
    prices still the equilibrium's."""
    lp = random_beliefs(rng, 3, 3, 30)
    loose = equilibrium(lp, 2.0, method="gram")
    tight = equilibrium(lp, 2.0, method="gram", tol=1e-17, max_iter=20)
    assert not tight.converged.any()
    assert (tight.n_iter > loose.n_iter).all()
    np.testing.assert_allclose(tight.log_prices, loose.log_prices, atol=1e-12)


def test_zero_beliefs_without_a_floor(rng):
    """Without a floor some agents rule goods out (``P_ik = 0``): the scaling still applies (``G``'s
    entries are sums of products of non-negative powers) and agrees with the fixed point."""
    lp = random_beliefs(rng, 3, 4, 8)
    lp[:, 1, 2] = -np.inf
    lp[:, 3, 5] = -np.inf
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    got = equilibrium(lp, 2.0, method="gram", floor=None)
    ref = equilibrium(lp, 2.0, method="fixed_point", floor=None, tol=1e-13)
    assert got.all_converged and got.clearing_error.max() <= 1e-10
    np.testing.assert_allclose(got.log_prices, ref.log_prices, atol=1e-10)


def test_an_item_the_gram_path_declines_goes_to_the_general_path(rng):
    """A good nobody believes in (which validation refuses, so only a kernel caller can send it) has
    price zero: the Gram kernel declines the item and the general path answers exactly as it does for
    Newton-CG (method code 2)."""
    L = np.log(rng.dirichlet(np.ones(6), size=3))
    L[:, 2] = -np.inf
    L -= np.log(np.exp(L).sum(axis=1, keepdims=True))
    ag = make_agents(2.0, n_agents=3)
    out = {}
    for code in (2, 4):
        u = np.zeros(6)
        out[code] = (solve_item(L, ag.kind, ag.inv_eta, ag.wealth, 1e-10, 100, code, u, False), u)
    assert out[4][0] == out[2][0]
    np.testing.assert_array_equal(out[4][1], out[2][1])
    assert np.exp(out[4][1][2]) == 0.0


@pytest.mark.parametrize("utilities", [10.0, [2.0, 2.0, "log"], [2.0, "exp", 2.0], 1.999])
def test_other_markets_are_refused_by_name(utilities, rng):
    lp = random_beliefs(rng, 2, 3, 5)
    with pytest.raises(InputError) as e:
        equilibrium(lp, utilities, method="gram")
    assert e.value.field == "method"
    with pytest.raises(InputError):
        train_market(lp, np.zeros(2, int), utilities, method="gram", max_epochs=1)


def test_auto_takes_gram_for_eta_2_with_few_agents_only():
    two = lambda a: make_agents(2.0, n_agents=a)  # noqa: E731
    assert auto_newton(256, two(10)) == "gram"
    assert auto_newton(4096, two(64)) == "gram"
    assert auto_newton(256, two(64)) != "gram" and auto_newton(16, two(16)) != "gram"
    assert auto_newton(2, two(2)) == "gram" and auto_newton(2, two(3)) != "gram"
    assert auto_newton(256, make_agents(10.0, n_agents=10)) != "gram"
    assert gram_max_agents(64) == 16 and gram_max_agents(256) == 32 and gram_max_agents(1024) == 64


@pytest.mark.parametrize("mode", ["batch", "online"])
def test_training_with_gram_equals_training_with_newton(mode, rng):
    lp = random_beliefs(rng, 30, 4, 9)
    y = rng.integers(0, 9, 30)
    a = train_market(lp, y, 2.0, mode=mode, method="gram", max_epochs=3, batch_size=10)
    b = train_market(lp, y, 2.0, mode=mode, method="newton", max_epochs=3, batch_size=10)
    np.testing.assert_allclose(a.wealth, b.wealth, rtol=1e-9, atol=1e-14)
    assert abs(a.wealth.sum() - 1.0) <= 1e-12


def test_at_the_edge_of_the_auto_rule_sharp_agents_and_skewed_wealth_clear(rng):
    """The largest markets ``auto`` sends to ``gram`` (64 agents at 1,024 goods), with sharp agents (logits of
    scale 8) and wealth over six orders of magnitude: converged, clearing error <= tol, prices the fixed
    point's."""
    n, A, K = 2, gram_max_agents(1024), 1024
    z = 8.0 * rng.standard_normal((n, A, K))
    lp = z - z.max(axis=2, keepdims=True)
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    w = 10.0 ** rng.uniform(-6, 0, A)
    got = equilibrium(lp, 2.0, w)
    ref = equilibrium(lp, 2.0, w, method="fixed_point", tol=1e-13)
    assert got.method == "gram" and got.all_converged
    assert got.clearing_error.max() <= 1e-10 and got.budget_error.max() <= 1e-10
    np.testing.assert_allclose(got.log_prices, ref.log_prices, atol=1e-9)


def test_the_kernels_never_apply_the_scaling_to_another_order(rng):
    """A kernel caller that passes the Gram method code for an eta = 10 market (the public functions refuse
    it) gets Newton-CG's answer, not a scaling that holds at eta = 2 only."""
    L = np.log(rng.dirichlet(np.ones(20), size=4))
    ag = make_agents(10.0, n_agents=4)
    out = {}
    for code in (2, 4):
        u = np.zeros(20)
        out[code] = (solve_item(L, ag.kind, ag.inv_eta, ag.wealth, 1e-10, 100, code, u, False), u)
    assert out[4][0] == out[2][0] and out[4][0][1]
    np.testing.assert_array_equal(out[4][1], out[2][1])
