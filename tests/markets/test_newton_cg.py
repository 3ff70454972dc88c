"""The matrix-free Newton-CG path of the equilibrium (issue [core-at-scale] section 1): its direction
equals the dense Newton direction, its equilibrium equals the dense Newton's and the seed's fixed
point's, market training on it conserves wealth and keeps the Algorithm 2.1 identity, and it answers
at K = 2 and at thousands of goods."""

import numpy as np
import pytest

from aggregators.validation import as_log_probs
from benchmarks.bench_markets_grid import family, utilities
from markets import equilibrium, make_agents, train_market
from markets.agents import floor_beliefs
from markets.equilibrium import CG_MIN_GOODS, FP_MIN_AGENTS, auto_newton, check_equilibrium
from markets.kernels.direction import direction_from_S
from markets.kernels.isoelastic import iso_gram, iso_pass, iso_powers, iso_S
from markets.kernels.newton_cg import cg_direction, cg_scratch_size, general_diagonal
from markets.kernels.potential import evaluate, evaluate_into, newton_direction, powers
from solvers.special import logsumexp

from .conftest import algorithm_2_1_step, random_beliefs

MIXES = {
    "iso2": 2.0,
    "iso10": 10.0,
    "iso30": 30.0,
    "iso1.5": 1.5,
    "iso_half": 0.5,
    "iso_log": [2.0, "log", 10.0, 30.0, "log", 5.0, 2.0],
    "log_heavy": ["log", "log", 1.05, 3.0, "log", 2.0, "log"],
    "exp_iso": ["exp", 10.0, 2.0, "exp", 30.0, 3.0, "exp"],
    "all_kinds": [2.0, "log", "exp", 0.7, 30.0, "exp", 10.0],
}


def _u(rng, K):
    u = rng.normal(0.0, 1.0, K)
    return u - logsumexp(u)


@pytest.mark.parametrize("K,A", [(2, 3), (7, 4), (30, 12), (90, 5)])
@pytest.mark.parametrize("eta", [2.0, 10.0, 30.0, 0.5])
def test_cg_direction_is_the_dense_newton_direction_one_order(K, A, eta, rng):
    """At a point away from the equilibrium, CG solved tightly gives the dense (Cholesky) direction."""
    L = random_beliefs(rng, 1, A, K)[0]
    W = rng.uniform(0.2, 1.0, A)
    g = 1.0 / eta
    Pg = np.empty((K, A))
    iso_powers(L, g, Pg, np.empty(A * K))
    u = _u(rng, K)
    z, s, T, cp = np.empty(A), np.empty(A), np.empty(K), np.empty(K)
    iso_pass(Pg, g, W, W.sum(), u, z, s, T, cp, False)
    d_cg = np.empty(K)
    ok, n = cg_direction(
        True, u, T, W.sum(), W.sum(), 1e-9, 1e-300, d_cg, np.empty(cg_scratch_size(K, A)), Pg, g, cp, z, s,
        np.empty(0, np.int64), np.empty(0), W, np.empty((0, 0)), np.empty(0), T,
    )  # fmt: skip
    assert ok and n >= 1
    G, H, Lc = np.empty((K, K)), np.empty((K, K)), np.empty((K, K))
    iso_gram(Pg, z.copy(), s.copy(), G)
    iso_S(g, T, cp, G, H)
    d = np.empty(K)
    assert direction_from_S(u, T, W.sum(), W.sum(), d, H, Lc, np.empty(K), np.empty(2 * K))
    np.testing.assert_allclose(d_cg, d, rtol=1e-10, atol=1e-10 * np.abs(d).max())


def general_point(utils, K, rng):
    """A general-path market of ``utils`` at random prices away from its equilibrium, evaluated:
    ``(kind, inv_eta, W, u, Q, T, d)`` with ``d`` the dense Newton direction (Cholesky of the K x K
    matrix, :func:`markets.kernels.potential.newton_direction`)."""
    A = len(utils)
    agents = make_agents(utils, rng.uniform(0.2, 1.0, A), A)
    kind, inv_eta, W = agents.kind, agents.inv_eta, agents.wealth
    L = random_beliefs(rng, 1, A, K)[0]
    u = _u(rng, K)
    Pg, Q, B, T, cp = np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K)), np.zeros(K), np.zeros(K)
    powers(L, kind, inv_eta, Pg)
    evaluate(L, kind, inv_eta, W, W.sum(), u, Pg, Q, B, T, cp)
    d = np.empty(K)
    assert newton_direction(kind, inv_eta, W, u, Q, B, T, W.sum(), d, np.empty((K, K)), np.empty((K, K)), np.empty(K))
    return kind, inv_eta, W, u, Q, T, d


@pytest.mark.parametrize("mix", ["iso_log", "exp_iso", "all_kinds"])
@pytest.mark.parametrize("K", [3, 20, 70])
def test_cg_direction_is_the_dense_newton_direction_general_path(mix, K, rng):
    kind, inv_eta, W, u, Q, T, d = general_point(MIXES[mix], K, rng)
    A = len(W)
    dg, h = np.empty(K), np.empty(K)
    n_exp = general_diagonal(kind, inv_eta, W, Q, u, dg, h)
    assert n_exp == int(np.sum(kind == 0))
    # h = -S 1 (every effective belief sums to one), against -S formed densely (Eq. 2.34-2.36)
    S = np.zeros((K, K))
    for i in np.flatnonzero(kind == 1):
        g = inv_eta[i]
        S -= W[i] * (g * np.diag(Q[i]) + (1.0 - g) * np.outer(Q[i], Q[i]))
    S -= n_exp * np.diag(np.exp(u))
    np.testing.assert_allclose(h, -S.sum(axis=1), rtol=1e-12, atol=1e-15)
    rank_one_diag = sum(W[i] * (1.0 - inv_eta[i]) * Q[i] ** 2 for i in np.flatnonzero(kind == 1))
    np.testing.assert_allclose(dg, -np.diag(S) - rank_one_diag, rtol=1e-11, atol=1e-15)
    d_cg = np.empty(K)
    no1 = np.empty(0)
    ok, _ = cg_direction(
        False, u, T, W.sum(), abs(W.sum()) + n_exp, 1e-9, 1e-300, d_cg, np.empty(cg_scratch_size(K, A)),
        np.empty((0, 0)), 0.0, no1, no1, no1, kind, inv_eta, W, Q, dg, h,
    )  # fmt: skip
    assert ok
    np.testing.assert_allclose(d_cg, d, rtol=1e-10, atol=1e-10 * np.abs(d).max())


@pytest.mark.parametrize("mix", list(MIXES))
@pytest.mark.parametrize("K", [3, 15, 16, 70])
def test_evaluate_into_gives_the_diagonal_and_h_without_a_pass(mix, K, rng):
    """``evaluate_into``'s ``D[0]``, ``D[1]`` (from per-order spending: session 38) equal the diagonal
    and ``h = -S 1`` that :func:`general_diagonal` forms by its pass over ``Q``, agents of one order
    scattered through the list (grouped from 16 goods, agent by agent below); and the evaluation
    itself (potential, residual, spending, effective beliefs) equals :func:`evaluate`'s."""
    utils = MIXES[mix] if isinstance(MIXES[mix], list) else [MIXES[mix]] * 5
    utils = list(utils) + list(utils[::-1])  # each order appears apart from its other agents
    A = len(utils)
    agents = make_agents(utils, rng.uniform(0.2, 1.0, A), A)
    kind, inv_eta, W = agents.kind, agents.inv_eta, agents.wealth
    L = random_beliefs(rng, 1, A, K)[0]
    u = _u(rng, K)
    Pg = np.zeros((A, K))
    powers(L, kind, inv_eta, Pg)
    out = []
    for D in (np.empty((0, 0)), np.full((3, K), np.nan)):
        Q, B, T, cp = np.zeros((A, K)), np.zeros((A, K)), np.zeros(K), np.zeros(K)
        r = evaluate_into(L, kind, inv_eta, W, W.sum(), u, Pg, Q, B, T, cp, D)
        out.append((r, Q, T, D))
    (r0, Q0, T0, _), (r1, Q1, T1, D) = out
    assert r1[2] == r0[2]
    np.testing.assert_allclose(r1[:2], r0[:2], rtol=1e-13)
    np.testing.assert_array_equal(Q1[kind == 1], Q0[kind == 1])
    np.testing.assert_allclose(T1, T0, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(evaluate(L, kind, inv_eta, W, W.sum(), u, Pg, Q0, B, T0, cp), r0, rtol=0)
    dg, h = np.empty(K), np.empty(K)
    general_diagonal(kind, inv_eta, W, Q0, u, dg, h)
    scale = np.abs(T0) + np.exp(u) * np.sum(kind == 0)
    np.testing.assert_allclose(D[0], dg, rtol=1e-12, atol=1e-13 * scale.max())
    np.testing.assert_allclose(D[1], h, rtol=1e-12, atol=1e-13 * scale.max())
    assert np.all(D[0] > 0)


@pytest.mark.parametrize("mix", list(MIXES))
@pytest.mark.parametrize("K", [2, 5, 40, 130])
def test_newton_cg_equilibrium_matches_dense_newton_and_fixed_point(mix, K, rng):
    utils = MIXES[mix]
    A = 7
    lp = random_beliefs(rng, 6, A, K)
    W = rng.uniform(0.2, 1.0, A)
    kw = dict(tol=1e-13, floor=1e-9)
    cg = equilibrium(lp, utils, W, method="newton_cg", **kw)
    dense = equilibrium(lp, utils, W, method="newton", **kw)
    assert cg.all_converged and dense.all_converged
    assert cg.summary()["max_clearing_error"] < 1e-12
    assert cg.summary()["max_budget_error"] < 1e-12
    np.testing.assert_allclose(cg.log_prices, dense.log_prices, atol=1e-10)
    if mix not in ("exp_iso", "all_kinds", "iso_half"):  # the fixed points: iso/log agents with eta >= 1
        fp = equilibrium(lp, utils, W, method="fixed_point", **kw)
        aa = equilibrium(lp, utils, W, method="anderson", **kw)  # session 7: the accelerated one too
        assert fp.all_converged and aa.all_converged
        assert aa.summary()["max_clearing_error"] < 1e-12 and aa.summary()["max_budget_error"] < 1e-12
        np.testing.assert_allclose(cg.log_prices, fp.log_prices, atol=1e-10)
        np.testing.assert_allclose(aa.log_prices, fp.log_prices, atol=1e-10)
        np.testing.assert_allclose(aa.log_prices, dense.log_prices, atol=1e-10)


def test_auto_takes_newton_cg_from_the_threshold_and_it_clears_tiny_prices(rng):
    """With floor=None Dirichlet beliefs can put prices near 1e-230: CG must stop on the relative
    clearing error of every good (a 2-norm test ignored them and did not converge)."""
    assert auto_newton(CG_MIN_GOODS - 1) == "newton" and auto_newton(CG_MIN_GOODS) == "newton_cg"
    K, A = 256, 10
    truth = rng.dirichlet(np.ones(K), size=4)
    s = np.exp(rng.uniform(np.log(2), np.log(50), A))
    gam = np.maximum(rng.standard_gamma(s[None, :, None] * truth[:, None, :] + 1e-3), 1e-300)
    lp = np.log(gam / gam.sum(axis=2, keepdims=True))
    W = rng.uniform(0.2, 1.0, A)
    res = equilibrium(lp, 10.0, W, floor=None)
    assert res.method == "newton_cg" and res.all_converged
    assert res.log_prices.min() < -100
    fp = equilibrium(lp, 10.0, W, floor=None, method="fixed_point")
    assert np.max(np.abs(res.log_prices - fp.log_prices)) < 1e-8


@pytest.mark.parametrize("K,A", [(4096, 3), (2048, 40)])
def test_large_k_smoke(K, A, rng):
    lp = random_beliefs(rng, 2, A, K, conc=0.5)
    res = equilibrium(lp, [10.0, "log", "exp"] * (A // 3) + [2.0] * (A % 3))
    assert res.method == "newton_cg" and res.all_converged
    assert res.summary()["max_clearing_error"] < 1e-9 and res.summary()["max_budget_error"] < 1e-12
    one = equilibrium(lp, 30.0)
    assert one.all_converged and one.n_iter.max() <= 10


def test_k2_all_methods_agree(rng):
    lp = random_beliefs(rng, 50, 5, 2)
    r = {m: equilibrium(lp, 10.0, method=m, tol=1e-13).log_prices for m in ("newton", "newton_cg", "fixed_point")}
    np.testing.assert_allclose(r["newton_cg"], r["newton"], atol=1e-10)
    np.testing.assert_allclose(r["newton_cg"], r["fixed_point"], atol=1e-10)


def _labelled(rng, n, a, k):
    lp = random_beliefs(rng, n, a, k)
    truth = np.exp(0.6 * lp[:, 0] + 0.4 * lp[:, 1])
    truth /= truth.sum(axis=1, keepdims=True)
    return lp, np.array([rng.choice(k, p=p) for p in truth])


@pytest.mark.parametrize("utils", [[2.0, 5.0, 1.0, 30.0], [2.0, "exp", 1.0, "exp"], [4.0, 4.0, 4.0, 4.0]])
@pytest.mark.parametrize("mode", ["online", "batch"])
def test_training_on_the_cg_path_conserves_wealth_and_matches_dense(utils, mode, rng):
    K = CG_MIN_GOODS + 6  # auto takes Newton-CG
    lp, y = _labelled(rng, 30, 4, K)
    kw = dict(mode=mode, batch_size=7, max_epochs=2, wealth_tol=0, record_steps=True, tol=1e-13)
    res = train_market(lp, y, utils, **kw)
    dense = train_market(lp, y, utils, method="newton", **kw)
    assert res.all_equilibria_converged
    steps = res.step_history
    assert np.max(np.abs(steps.sum(axis=1) - 1.0)) < 1e-13 * max(1.0, np.abs(steps).max())
    np.testing.assert_allclose(steps, dense.step_history, rtol=1e-9, atol=1e-11)


def test_cg_path_batch_step_is_a_variational_algorithm_2_1_step(rng):
    """One batch epoch at K >= CG_MIN_GOODS (Newton-CG) = one step of Algorithm 2.1 with w' ∝ w/gamma
    (the same check as tests/markets/test_training.py, at many goods)."""
    etas = np.array([1.5, 3.0, 8.0, 2.0])
    gamma = 1.0 / etas
    K, n = CG_MIN_GOODS + 16, 20
    lp, y = _labelled(rng, n, 4, K)
    W = rng.uniform(0.2, 1.0, 4)
    W /= W.sum()
    res = train_market(lp, y, list(etas), W, mode="batch", max_epochs=1, wealth_tol=0, floor=None, tol=1e-13)
    np.testing.assert_allclose(res.wealth, algorithm_2_1_step(lp, y, W, gamma), atol=1e-11)


def test_auto_takes_the_accelerated_fixed_point_for_many_fast_contracting_agents(rng):
    """Session 7: where auto took the seed's plain fixed point it takes the Anderson-accelerated one
    (same answer, fewer passes)."""
    lp = random_beliefs(rng, 3, FP_MIN_AGENTS, 5)
    res = equilibrium(lp, 2.0)
    assert res.method == "anderson" and res.all_converged
    np.testing.assert_allclose(res.log_prices, equilibrium(lp, 2.0, method="newton").log_prices, atol=1e-9)
    fp = equilibrium(lp, 2.0, method="fixed_point")
    np.testing.assert_allclose(res.log_prices, fp.log_prices, atol=1e-9)
    assert res.n_iter.mean() < fp.n_iter.mean()
    assert equilibrium(lp, 3.0).method == "newton"  # contracts slower: Newton
    assert equilibrium(lp, [2.0] * (FP_MIN_AGENTS - 1) + ["exp"]).method == "newton"
    wide = random_beliefs(rng, 1, 100, 256)
    assert equilibrium(wide, 2.0).method == "anderson" and equilibrium(wide, 10.0).method == "newton_cg"
    assert equilibrium(wide[:, :99], 2.0).method == "newton_cg"


def test_newton_cg_does_not_stall_near_the_answer_at_many_goods():
    """Regression (the grid benchmark, Dirichlet family, K = 4,096, two agents eta = 2 and 10): the
    potential sums K terms, so near the answer every trial step lost about 2e-13 of it to rounding;
    the line search's rounding allowance (1e-13) refused the full Newton step, and Newton-CG crept
    from a clearing error of 3.4e-10 to 2.6e-10 in 100 iterations. With an allowance that grows
    with K it converges in 6, to the seed's fixed point's answer."""
    rng = np.random.default_rng(0)  # benchmarks/bench_markets_grid.py's Dirichlet family, its item 13
    K, n = 4096, 122
    truth = rng.dirichlet(np.ones(K), size=n)
    s = np.exp(rng.uniform(np.log(2), np.log(50), 2))
    g = np.maximum(rng.standard_gamma(s[None, :, None] * truth[:, None, :] + 1e-3), 1e-300)
    lp = np.log(g / g.sum(axis=2, keepdims=True))[13:14]
    W = np.random.default_rng(1).uniform(0.2, 1.0, 2)
    r = equilibrium(lp, [2.0, 10.0], W, method="newton_cg")
    fp = equilibrium(lp, [2.0, 10.0], W, method="fixed_point")
    assert r.all_converged and fp.all_converged and r.n_iter.max() <= 12
    np.testing.assert_allclose(r.log_prices, fp.log_prices, atol=1e-9)


@pytest.mark.parametrize("A", [20, 100])
def test_log_rhs_clears_badly_priced_goods_in_few_steps(A):
    """Mixed markets (eta 2/10/30 and log agents) on the market grid's Dirichlet beliefs, started at
    the power mean of all beliefs at the wealth-averaged order (the default start until session 39,
    whose per-order start is within 1 of clearing here), are at a clearing error of 12-180 (goods
    priced far below their demand). Newton-CG with the logarithmic right-hand side
    (:mod:`markets.kernels.newton_cg`) reaches 1e-12 in at most 7 steps per item (the plain
    right-hand side took 8-10 here) and agrees with the seed's fixed point to 1e-10. Since session 44
    ``equilibrium`` first lifts a warm start to the price bound of :mod:`markets.kernels.start_bound`
    (clearing error 1.6-3.1 here) and replaces one whose residual exceeds the wealth by the default start
    (``START_CHECK``; below 1 here), so Newton-CG no longer starts from this point through the public
    call; the test keeps the call's answer and step count from it."""
    lp = family("dirichlet", 4, A, 256, seed=3)
    W = np.random.default_rng(1).uniform(0.2, 1.0, A)
    utils = utilities("mix", A)
    w = W / W.sum()
    gbar = (w * make_agents(utils, w).inv_eta).sum()
    fl = floor_beliefs(as_log_probs(lp), 1e-9).log_probs  # the beliefs the default floor gives the market
    u0 = logsumexp(np.log(w)[None, :, None] + gbar * fl, axis=1) / gbar
    u0 -= logsumexp(u0, axis=1, keepdims=True)
    agents = make_agents(utils, W)
    assert check_equilibrium(fl, u0, agents)[0].max() > 10  # the start as given
    cg = equilibrium(lp, utils, W, method="newton_cg", tol=1e-12, start=u0)
    fp = equilibrium(lp, utils, W, method="fixed_point", tol=1e-12, start=u0)
    assert cg.all_converged and fp.all_converged and cg.n_iter.max() <= 7
    assert cg.summary()["max_clearing_error"] <= 1e-12
    np.testing.assert_allclose(cg.log_prices, fp.log_prices, rtol=0, atol=1e-10)
