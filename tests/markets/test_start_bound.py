"""The lower bound on isoelastic markets' prices (:mod:`markets.kernels.start_bound`) and warm
starts lifted to it: the bound checked at equilibria the seed's fixed point finds (not started from
it), starts far below the equilibrium solved in few Newton steps, and starts at or above the bound
left bit for bit as they were."""

import numpy as np
import pytest
from scipy.special import logsumexp

from markets import equilibrium, make_agents
from markets.kernels.start_bound import START_FLOOR, bound_coefficients, lift_starts, price_box, project_into


def _market(rng, A, K, orders):
    lp = rng.normal(0, rng.uniform(1, 6), (A, K))
    lp -= logsumexp(lp, axis=1, keepdims=True)
    W = rng.uniform(0.05, 1.0, A)
    etas = [float(e) for e in rng.choice(orders, A)]
    return lp, W, etas


def _solved(rng, orders):
    """A random market of 2-11 agents x 2-39 goods and its equilibrium to 1e-13: the seed's fixed point from
    its own start, or dense Newton with orders above one (eta < 1), where the fixed point does not converge."""
    A, K = int(rng.integers(2, 12)), int(rng.integers(2, 40))
    lp, W, etas = _market(rng, A, K, orders)
    meth = "newton" if min(etas) < 1.0 else "fixed_point"
    r = equilibrium(lp[None], etas, W, method=meth, tol=1e-13, floor=None, max_iter=200_000)
    assert r.all_converged
    return lp, W, etas, r


def _bound(lp, W, etas):
    g = 1.0 / np.asarray(etas)
    b = lp + (np.log(W / W.sum()) / g)[:, None]
    return np.max(np.where((g <= 1.0)[:, None], b, -np.inf), axis=0)  # no term for an order above one


@pytest.mark.parametrize("orders", [(10.0,), (2.0,), (1.0,), (1.0, 2.0, 10.0, 30.0), (1.2, 200.0), (0.5, 2.0)])
def test_the_bound_holds_at_the_seeds_fixed_point(orders):
    """``log c_k >= max_i log P_ik + log(W_i / sum W) / g_i`` at the equilibrium of random markets of
    one and of several orders (the fixed point from its own start, tol 1e-13; dense Newton with orders above
    one, eta < 1, where the fixed point does not converge, and whose agents give no term: session 46 found
    the bound above the equilibrium by up to 1.34 log-units with their terms in, eta 0.5 with 2)."""
    rng = np.random.default_rng(11)
    slack = []
    for _ in range(40):
        lp, W, etas, r = _solved(rng, orders)
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


def _gl(lp, etas):
    g = 1.0 / np.asarray(etas, dtype=float)
    return np.ascontiguousarray(g[:, None] * lp), g


@pytest.mark.parametrize("orders", [(10.0,), (2.0,), (1.0,), (1.0, 2.0, 10.0, 30.0), (1.2, 200.0), (0.5, 2.0), (0.5,)])
def test_the_price_box_holds_at_the_seeds_fixed_point(orders):
    """``price_box``: ``lo <= log c <= hi`` at the equilibrium of random markets (the fixed point from its
    own start, tol 1e-13), orders below and above one; the lower bound at least the one-pass bound of
    ``bound_coefficients``; the upper one below 0 (a normalised price is at most 1)."""
    rng = np.random.default_rng(12)
    for _ in range(40):
        lp, W, etas, r = _solved(rng, orders)
        K = lp.shape[1]
        GL, g = _gl(lp, etas)
        lo, hi = np.empty(K), np.empty(K)
        ok = price_box(GL, g, W, lo, hi)
        if min(etas) >= 1.0 or max(etas) > 1.0:
            assert ok
        else:  # only orders above one: no lower bound to start from, no box
            assert not ok
            continue
        x = r.log_prices[0]
        assert np.all(lo <= x + 1e-9) and np.all(x <= hi + 1e-9)
        assert np.all(lo >= _bound(lp, W, etas) - 1e-12) and np.all(hi <= 0.0)  # _bound: orders up to one


def test_the_price_box_is_tight_on_one_order_with_one_agent():
    """One agent: the equilibrium prices are its beliefs, and for an order up to one both bounds reach them
    (``z = 1`` at the first lower bound); for an order above one (``eta = 0.5``) there is no box."""
    rng = np.random.default_rng(3)
    lp = rng.normal(0, 2, (1, 9))
    lp -= logsumexp(lp)
    for eta in (1.0, 3.0, 30.0):
        GL, g = _gl(lp, [eta])
        lo, hi = np.empty(9), np.empty(9)
        assert price_box(GL, g, np.array([0.7]), lo, hi)
        np.testing.assert_allclose(lo, lp[0], atol=1e-12)
        np.testing.assert_allclose(hi, lp[0], atol=1e-12)
    GL, g = _gl(lp, [0.5])  # an order above one: no lower bound (no z <= 1), so no box
    assert not price_box(GL, g, np.array([0.7]), np.empty(9), np.empty(9))


@pytest.mark.parametrize("upper", [False, True])
def test_the_order_root_brackets_brentq(upper):
    """``_order_root``: a lower bound (Newton from the left) or an upper one (``+ f / g_min``) on the root of
    ``log sum_i exp(a_i - g_i x) = 0``, within ``ROOT_TOL / g_min`` of it; scipy's ``brentq`` the reference."""
    from scipy.optimize import brentq

    from markets.kernels.start_bound import ROOT_TOL, _order_root

    rng = np.random.default_rng(4)
    for _ in range(200):
        A = int(rng.integers(1, 8))
        a = rng.normal(0, 20, A)
        g = rng.choice([1 / 30, 0.1, 0.5, 1.0, 2.0], A)
        a[rng.random(A) < 0.2] = -np.inf
        if np.all(a == -np.inf):
            assert _order_root(a, g, g.min(), upper) == -np.inf
            continue
        gmin = g[a > -np.inf].min()
        f = lambda x: logsumexp(a - g * x)  # noqa: E731
        root = brentq(f, -1e5, 1e5, xtol=1e-13)
        x = _order_root(a, g, gmin, upper)
        if upper:
            assert root <= x + 1e-9 and x - root <= ROOT_TOL / gmin + 1e-9
        else:
            assert x <= root + 1e-9 and root - x <= ROOT_TOL / gmin + 1e-9


def test_project_into_clips_with_one_shift_and_normalises():
    """``project_into``: ``u`` becomes ``clip(u + s, lo, hi)`` for one shift ``s`` with ``logsumexp = 0``."""
    rng = np.random.default_rng(5)
    for _ in range(50):
        K = int(rng.integers(2, 60))
        x = rng.normal(0, 3, K)
        x -= logsumexp(x)  # a normalised point inside the box
        lo = x - rng.uniform(0, 5, K)
        hi = np.minimum(x + rng.uniform(0, 5, K), 0.0)
        u = rng.normal(0, 30, K)
        v = u.copy()
        project_into(v, lo, hi)
        assert abs(logsumexp(v)) < 1e-12
        # the shift is found to 1e-13 of its size (shifts here reach ~100): the clipped point's bounds to 1e-10
        assert np.all(v >= lo - 1e-10) and np.all(v <= hi + 1e-10)
        free = (v > lo + 1e-9) & (v < hi - 1e-9)
        if free.sum() >= 2:
            s = v[free] - u[free]
            np.testing.assert_allclose(s, s[0], atol=1e-9)


def test_far_starts_above_the_equilibrium_are_boxed():
    """Session 46: random starts on Dirichlet beliefs without a floor leave goods hundreds of log-units too
    dear (their clearing residual is at most ``Wsum``: the start check keeps them); Newton moved them 10
    units a step (up to 73-76 steps per item). The box brings them to at most 10 steps here; near starts are
    not gated (``overpriced`` False), so they are used as given."""
    from benchmarks.bench_markets_grid import family, utilities

    rng = np.random.default_rng(3)
    for spec, A, K in [("mix", 3, 64), ("30", 2, 64)]:
        n = 200
        lp = family("dirichlet", n, A, K)
        w = np.random.default_rng(1).uniform(0.2, 1.0, A)
        u = utilities(spec, A)
        s = rng.normal(0.0, 2.0, (n, K))
        s[:, :3] -= 30.0
        s -= logsumexp(s, axis=1, keepdims=True)
        ref = equilibrium(lp, u, w, method="fixed_point", tol=1e-12, floor=None, max_iter=100_000)
        r = equilibrium(lp, u, w, start=s, method="newton_cg", floor=None)
        assert r.all_converged
        assert r.n_iter.max() <= 12
        np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-8)
        near = ref.log_prices + np.random.default_rng(2).normal(0, 0.3, ref.log_prices.shape)
        near -= logsumexp(near, axis=1, keepdims=True)
        r0 = equilibrium(lp, u, w, start=near, method="newton_cg", floor=None, max_iter=0)
        ag = make_agents(u, w)
        lifted = near.copy()  # what the start gets apart from the box: raised to the lower bound
        L = np.ascontiguousarray(lp - logsumexp(lp, axis=2, keepdims=True))
        lift_starts(L, ag.kind, ag.inv_eta, ag.wealth, lifted)
        assert np.abs(lifted - near).max() > 0.1  # some near starts lie below the bound
        np.testing.assert_allclose(r0.log_prices, lifted, atol=1e-12)  # not boxed, not replaced
