"""Equilibrium identities (seed 000 section 2.8; note 000-ch2, market half), each against an
independent reference: closed forms computed here, a direct convex solve of the Rényi objective
(Eq. 2.6), the seed's own fixed point, and the implicit homogeneous form (Eq. 2.32-2.33)."""

import numpy as np
import pytest
from scipy.optimize import minimize, root
from scipy.special import logsumexp

from aggregators import renyi
from markets import equilibrium, investments, make_agents

from .conftest import random_beliefs

TIGHT = 1e-9


def _renyi_direct(lp_item, w, gamma):
    """Direct solve of Eq. (2.6): argmin_Q sum_i w_i/gamma_i * D_{gamma_i}(P_i || Q), Q on the simplex
    (softmax parametrisation, BFGS with an analytic gradient, gtol 1e-13). Independent of markets."""
    A, K = lp_item.shape

    def f(v):
        lq = v - logsumexp(v)
        z = gamma[:, None] * lp_item + (1 - gamma[:, None]) * lq[None, :]
        lz = logsumexp(z, axis=1)
        one = gamma == 1.0  # D_1 = KL(P_i || Q): -sum_k P_ik log Q_k up to a constant
        coef = np.where(one, 0.0, w / gamma / np.where(one, 2.0, gamma - 1))
        val = np.sum(coef * lz) - np.sum(w[one][:, None] * np.exp(lp_item[one]) * lq[None, :])
        qi = np.exp(z - lz[:, None])
        qi[one] = np.exp(lp_item[one])
        # d val / d lq_k = sum_i w_i/gamma_i/(gamma_i-1) (1-gamma_i) Q_ik = -sum_i (w_i/gamma_i) Q_ik
        dlq = -np.sum((w / gamma)[:, None] * qi, axis=0)
        q = np.exp(lq)
        grad = dlq - q * dlq.sum()
        return val, grad

    best = None
    for v0 in (lp_item.mean(axis=0), np.log(np.exp(lp_item).mean(axis=0))):
        out = minimize(f, v0, jac=True, method="BFGS", options={"gtol": 1e-13, "maxiter": 10_000})
        if best is None or out.fun < best.fun:
            best = out
    return best.x - logsumexp(best.x)


def test_log_utility_equilibrium_is_wealth_weighted_linear_pool(rng):
    lp = random_beliefs(rng, 200, 5, 7)
    W = rng.uniform(0.1, 3.0, 5)
    ref = np.log(np.einsum("i,nik->nk", W / W.sum(), np.exp(lp)))
    for method in ("closed_form", "newton", "fixed_point"):
        res = equilibrium(lp, "log", W, method=method, floor=None)
        np.testing.assert_allclose(res.log_prices, ref, atol=TIGHT)
        assert res.all_converged


def test_exponential_equilibrium_is_unweighted_log_pool_whatever_the_wealth(rng):
    lp = random_beliefs(rng, 200, 6, 5)
    ref = lp.mean(axis=1)
    ref -= logsumexp(ref, axis=1, keepdims=True)
    for W in (np.ones(6), rng.uniform(0.01, 10.0, 6), np.array([100.0, 1, 1, 1, 1, 0.001])):
        for method in ("closed_form", "newton"):
            res = equilibrium(lp, "exp", W, method=method)
            np.testing.assert_allclose(res.log_prices, ref, atol=TIGHT)
            s = res.summary()
            assert s["max_clearing_error"] < 1e-9 and s["max_budget_error"] < 1e-12
            assert s["n_negative_positions"] > 0  # short sales are reported, not clipped
    r = investments(lp, ref, make_agents("exp", np.ones(6)))
    assert (r < 0).any()


@pytest.mark.parametrize("etas", [[3.0] * 4, [1.0, 2.0, 5.0, 30.0], [0.5, 1.5, 4.0, 12.0]])
def test_isoelastic_equilibrium_is_renyi_aggregate_direct_solve(etas, rng):
    """Eq. (2.36): gamma_i = 1/eta_i, mixture coefficient W_i/sum W, i.e. w_i ∝ W_i gamma_i in Eq. (2.6)."""
    A, K = len(etas), 6
    lp = random_beliefs(rng, 4, A, K)
    W = rng.uniform(0.2, 2.0, A)
    gamma = 1.0 / np.array(etas)
    res = equilibrium(lp, etas, W, method="newton", floor=None)
    assert res.all_converged
    w = W * gamma / np.sum(W * gamma)
    for n in range(lp.shape[0]):
        ref = _renyi_direct(lp[n], w, gamma)
        np.testing.assert_allclose(res.log_prices[n], ref, atol=2e-8)
    if len(set(etas)) > 1:  # the uncorrected weights w_i ∝ W_i are measurably wrong
        wrong = _renyi_direct(lp[0], W / W.sum(), gamma)
        assert np.max(np.abs(wrong - res.log_prices[0])) > 1e-4


def test_isoelastic_equilibrium_matches_renyi_aggregate_of_aggregators(rng):
    etas = np.array([1.5, 2.0, 6.0, 20.0, 3.0])
    lp = random_beliefs(rng, 50, 5, 8)
    W = rng.uniform(0.2, 2.0, 5)
    gamma = 1.0 / etas
    res = equilibrium(lp, list(etas), W, floor=None)
    w = W * gamma / np.sum(W * gamma)  # Eq. (2.8) mixes with w'_i ∝ w_i/gamma_i = W_i
    agg = renyi.renyi_aggregate(lp, w, gamma, tol=1e-12)
    np.testing.assert_allclose(res.log_prices, agg, atol=1e-8)


@pytest.mark.parametrize("eta", [2.0, 10.0, 30.0])
def test_newton_agrees_with_the_seeds_fixed_point(eta, rng):
    lp = random_beliefs(rng, 300, 10, 8)
    W = rng.uniform(0.1, 1.0, 10)
    a = equilibrium(lp, eta, W, method="newton", tol=1e-12)
    b = equilibrium(lp, eta, W, method="fixed_point", tol=1e-12)
    assert a.all_converged and b.all_converged
    np.testing.assert_allclose(a.log_prices, b.log_prices, atol=1e-10)
    assert a.n_iter.max() < b.n_iter.max()


@pytest.mark.parametrize("eta", [0.5, 1.5, 3.0, 10.0, 30.0])
@pytest.mark.parametrize("A,K", [(100, 10), (40, 15), (3, 9), (2, 12), (4, 15)])
def test_dense_newton_with_refreshed_chords_agrees_with_the_fixed_point(A, K, eta, rng):
    """The dense one-order Newton reuses its Gram matrix with the rest of ``S`` rebuilt at the new
    prices where ``3 A >= K`` (a refreshed chord: the first three shapes) and its factor otherwise (the
    plain chord: the last two); either way it reaches the seed's fixed point, and where that does not
    converge (eta = 1/2: the map is no contraction) scipy's root finder on the clearing conditions."""
    from markets.kernels.direction import refreshes_gram

    assert refreshes_gram(K, A) == (3 * A >= K)
    lp = random_beliefs(rng, 40, A, K, conc=0.5)
    W = rng.uniform(0.1, 1.0, A)
    a = equilibrium(lp, eta, W, method="newton", tol=1e-12, floor=None)
    assert a.all_converged and a.summary()["max_clearing_error"] < 1e-11
    if eta > 1.0:
        b = equilibrium(lp, eta, W, method="fixed_point", tol=1e-13, floor=None)
        assert b.all_converged
        np.testing.assert_allclose(a.log_prices, b.log_prices, atol=1e-9)
        return
    Wn = W / W.sum()
    for n in range(5):  # scipy's root finder on the clearing of the first K - 1 goods (Table 2.4's investments)

        def excess(v, L=lp[n]):
            lc = np.append(v, 0.0)
            lc = lc - logsumexp(lc)
            z = L / eta + (1.0 - 1.0 / eta) * lc
            r = Wn[:, None] * np.exp(z - logsumexp(z, axis=1, keepdims=True))
            return (r.sum(axis=0) - np.exp(lc))[:-1] / np.exp(lc[:-1])

        v0 = np.log(np.exp(lp[n]).mean(axis=0))
        out = root(excess, v0[:-1] - v0[-1], method="hybr", tol=1e-14)
        assert np.max(np.abs(excess(out.x))) < 1e-10
        ref = np.append(out.x, 0.0)
        np.testing.assert_allclose(a.log_prices[n], ref - logsumexp(ref), atol=1e-9)


def test_homogeneous_implicit_form_eq_2_32_2_33(rng):
    eta = 4.0
    lp = random_beliefs(rng, 20, 6, 5)
    W = rng.uniform(0.1, 1.0, 6)
    W = W / W.sum()
    res = equilibrium(lp, eta, W, floor=None)
    c = res.prices
    P = np.exp(lp)
    # Z_i from (2.33), V_i = W_i / Z_i, then (2.32)
    inner = c ** (1.0 / eta)  # at the fixed point, sum_j V_j P_j^{1/eta} = c^{1/eta}
    Z = np.einsum("nk,nik->ni", inner ** (eta - 1.0), P ** (1.0 / eta))
    V = W[None, :] / Z
    c232 = np.einsum("ni,nik->nk", V, P ** (1.0 / eta)) ** eta
    np.testing.assert_allclose(c232, c, rtol=1e-9)
    # and Z solves (2.33) with V defined from it
    lhs = np.einsum("nk,nik->ni", np.einsum("ni,nik->nk", V, P ** (1.0 / eta)) ** (eta - 1.0), P ** (1.0 / eta))
    np.testing.assert_allclose(lhs, Z, rtol=1e-9)


def test_mixed_market_conditions_and_independent_root_find(rng):
    utils = [1.0, 2.0, "exp", 7.0, "exp", 0.5, 30.0]
    lp = random_beliefs(rng, 100, len(utils), 6)
    W = rng.uniform(0.1, 1.0, len(utils))
    res = equilibrium(lp, utils, W, method="newton")
    s = res.summary()
    assert s["all_converged"]
    assert s["max_clearing_error"] < 1e-9
    assert s["max_budget_error"] < 1e-13
    assert s["max_price_sum_error"] < 1e-13
    # short sales: only exponential agents take them; count them here from Table 2.4's corrected
    # investment r_k = c_k (W + log(P_k/c_k) - sum_k' c_k' log(P_k'/c_k')) with normalised wealth
    c = np.exp(res.log_prices)
    Wn = W / W.sum()
    shorts = 0
    for i, u in enumerate(utils):
        if u == "exp":
            a = lp[:, i] - res.log_prices
            r = c * (Wn[i] + a - np.sum(c * a, axis=1, keepdims=True))
        else:  # isoelastic: W P^(1/eta) c^(1-1/eta) / z, never negative
            z = lp[:, i] / u + (1 - 1 / u) * res.log_prices
            r = Wn[i] * np.exp(z - logsumexp(z, axis=1, keepdims=True))
        shorts += int((r < 0).sum())
    assert s["n_negative_positions"] == shorts > 0
    # independent reference: scipy's hybrid root finder on the clearing conditions of the first
    # K-1 goods (the last follows from the budgets), investments from markets.utilities only
    ag = make_agents(utils, W)
    for n in range(3):

        def excess(v):
            lc = np.append(v, 0.0)
            lc = lc - logsumexp(lc)
            r = investments(lp[n : n + 1], lc[None], ag)[0]
            return (r.sum(axis=0) - np.exp(lc))[:-1] / np.exp(lc[:-1])

        best = None  # generic root finders need a good start: keep the best of a few
        for v0 in (np.log(np.exp(lp[n]).mean(axis=0)), lp[n].mean(axis=0), np.zeros(6)):
            for m in ("hybr", "lm"):
                out = root(excess, v0[:-1] - v0[-1], method=m, tol=1e-14)
                err = np.max(np.abs(excess(out.x)))
                if best is None or err < best[0]:
                    best = (err, out)
                if err < 1e-12:
                    break
            if best[0] < 1e-12:
                break
        err, out = best
        assert err < 1e-10
        ref = np.append(out.x, 0.0)
        ref -= logsumexp(ref)
        np.testing.assert_allclose(res.log_prices[n], ref, atol=1e-9)


def test_tatonnement_for_generic_utilities(rng):
    from .test_utilities import _GenericIso

    utils = [_GenericIso(2.0), _GenericIso(4.0), 3.0]
    lp = random_beliefs(rng, 20, 3, 4)
    W = np.array([0.2, 0.5, 0.3])
    tat = equilibrium(lp, utils, W)
    assert tat.method == "tatonnement" and tat.all_converged
    ref = equilibrium(lp, [2.0, 4.0, 3.0], W, method="newton")
    np.testing.assert_allclose(tat.log_prices, ref.log_prices, atol=1e-9)


def test_potential_gradient_is_excess_spending(rng):
    """The potential maximised by Newton has the excess spending as gradient (finite differences)."""
    utils = [2.0, "exp", 5.0, 1.0]
    ag = make_agents(utils, rng.uniform(0.2, 1, 4))
    lp = random_beliefs(rng, 1, 4, 5)[0]
    gam = np.array([0.5, 0, 0.2, 1.0])

    def phi(u):
        lc = u - logsumexp(u)
        c = np.exp(lc)
        tot = 0.0
        for i, g in enumerate(gam):
            if utils[i] == "exp":
                tot -= np.sum(c * (lc - lp[i]))
            elif g == 1.0:
                tot += ag.wealth[i] * np.sum(np.exp(lp[i]) * lc)
            else:
                tot += ag.wealth[i] / (1 - g) * logsumexp(g * lp[i] + (1 - g) * lc)
        return tot

    u = rng.normal(size=5)
    lc = u - logsumexp(u)
    r = investments(lp[None], lc[None], ag)[0]
    g = r.sum(axis=0) - np.exp(lc) * ag.wealth.sum()
    eps = 1e-6
    fd = np.array([(phi(u + eps * e) - phi(u - eps * e)) / (2 * eps) for e in np.eye(5)])
    np.testing.assert_allclose(fd, g, atol=1e-8)


def test_zero_beliefs_allowed_for_isoelastic_without_floor(rng):
    lp = random_beliefs(rng, 30, 4, 5)
    lp[:, 0, 2] = -np.inf
    lp[:, 1, 3] = -np.inf
    res = equilibrium(lp, [2.0, 3.0, 1.0, 5.0], floor=None)
    assert res.all_converged and res.summary()["max_clearing_error"] < 1e-9
    r = investments(lp, res.log_prices, make_agents([2.0, 3.0, 1.0, 5.0], None))
    assert np.all(r[:, 0, 2] == 0)


def _general_path(lp, eta, W, start=None):
    """The general kernels (``solve_items``: per-item Newton without the one-order shortcut,
    forced by giving one agent an order that differs in the last bits)."""
    A = lp.shape[1]
    etas = np.full(A, float(eta))
    etas[0] = np.nextafter(eta, np.inf)
    return equilibrium(lp, list(etas), W, method="newton", tol=1e-12, floor=None, start=start)


@pytest.mark.parametrize("eta", [2.0, 30.0])
def test_one_order_block_path_matches_general_path_across_chunks(eta, rng):
    """The one-order driver (:func:`kernels.solve_iso_block`: ``P^gamma`` by the vectorised exp,
    150 items in 64 chunks of 2-3, so uneven chunk boundaries) against the general per-item
    kernels, which use NumPy-free scalar ``exp``."""
    lp = random_beliefs(rng, 150, 6, 4)
    lp[7, :, 2] = -40.0  # a good almost nobody believes in
    W = rng.uniform(0.1, 1.0, 6)
    a = equilibrium(lp, eta, W, method="newton", tol=1e-12, floor=None)
    b = _general_path(lp, eta, W)
    assert a.all_converged and b.all_converged
    np.testing.assert_allclose(a.log_prices, b.log_prices, atol=1e-9)
    f = equilibrium(lp, eta, W, method="fixed_point", tol=1e-12, floor=None)
    np.testing.assert_allclose(f.log_prices, b.log_prices, atol=1e-9)


def wild_markets(n_cases, seed=7):
    """Small one-order markets with extreme beliefs and starts far from the answer: in about one
    case in ten a full Newton step fails to halve the residual and the safeguarded phase (Armijo on
    Phi) takes over (counted by running ``_iso_newton_pg`` uncompiled, NUMBA_DISABLE_JIT=1, with
    ``_iso_pass`` instrumented: 36 of these 300 cases; the same run takes 538 chord steps, 30 of
    which fail to halve the residual and are replaced by a fresh Newton step; counted before session 49,
    whose refreshed chords (:data:`markets.kernels.direction.REFRESH_RATIO`) these small markets take)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        A = int(rng.integers(2, 6))
        K = int(rng.integers(2, 6))
        lp = rng.normal(0, rng.uniform(1, 12), (A, K))
        lp -= logsumexp(lp, axis=1, keepdims=True)
        W = rng.uniform(0.01, 1, A)
        eta = float(rng.choice([1.2, 2.0, 5.0, 30.0, 200.0]))
        start = rng.normal(0, rng.uniform(1, 30), K)
        yield lp, W / W.sum(), eta, start - logsumexp(start)


@pytest.mark.parametrize("method", ["newton", "anderson"])
def test_newton_from_far_starts_on_extreme_markets(method):
    """Newton from far starts (both of its phases are exercised, see :func:`wild_markets`) reaches
    the seed's fixed point, and the clearing conditions hold; so does the Anderson-accelerated
    fixed point (session 7) from the same starts."""
    for lp, W, eta, start in wild_markets(300):
        a = equilibrium(lp[None], eta, W, method=method, tol=1e-12, floor=None, start=start[None])
        b = equilibrium(lp[None], eta, W, method="fixed_point", tol=1e-13, floor=None)
        assert a.all_converged and b.all_converged
        np.testing.assert_allclose(a.log_prices, b.log_prices, atol=1e-9)
        s = a.summary()
        assert s["max_clearing_error"] < 1e-10 and s["max_budget_error"] < 1e-12


@pytest.mark.parametrize("method", ["newton", "fixed_point"])
def test_max_iter_zero_evaluates_the_start_only(method, rng):
    """``max_iter=0`` (the benchmark's floor) returns the power-mean start and its clearing error,
    unconverged, for both methods; a negative or non-integer cap is refused by name."""
    lp = random_beliefs(rng, 40, 5, 4)
    W = rng.uniform(0.2, 1.0, 5)
    r = equilibrium(lp, 3.0, W, method=method, max_iter=0, floor=None)
    assert np.all(r.n_iter == 0) and not r.converged.any()
    g = 1.0 / 3.0
    start = logsumexp(g * lp + np.log(W / W.sum())[None, :, None], axis=1) / g
    start -= logsumexp(start, axis=1, keepdims=True)
    np.testing.assert_allclose(r.log_prices, start, atol=1e-12)
    np.testing.assert_allclose(
        r.clearing_error,
        equilibrium(lp, 3.0, W, method=method, max_iter=0, floor=None, check=False).clearing_error,
        rtol=1e-6,
    )
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_iter"):
            equilibrium(lp, 3.0, W, method=method, max_iter=bad)


def test_newton_from_a_stale_warm_start_with_a_nearly_bankrupt_agent():
    """Regression (found by hypothesis in online training): four log agents and a gamma = 2 agent
    holding 6.6e-4 of the wealth, warm-started at the item's prices of the previous epoch. A full
    Newton step moved one log-price from -8.9 to -375; the Armijo test passed, and Newton then
    climbed back one unit per iteration and failed to converge in 100. With the line search's
    first trial capped at MAX_LOG_STEP it converges, to the seed's fixed point's answer."""
    lp = np.array(
        [
            [-3.4009563190567493, -0.16050917067957507, -4.328200743040807, -2.2854356604337305, -10.496823714537456],
            [-0.4270743391685647, -4.319196859133317, -1.1101099120819538, -5.349268242626321, -18.17894715520476],
            [-7.789119774677942, -0.015019378861562122, -6.853310989990885, -10.72301033165866, -4.311385709327605],
            [-7.2639807011044395, -4.04171664017211, -4.133915476326252, -7.397764058356297, -0.03552382067020094],
            [-2.2213679926268024, -0.12372471780016674, -4.85437800747513, -9.19330826864306, -10.79922165509696],
        ]
    )[None]
    utils = ["log", "log", "log", "log", 0.5]
    W = np.array([6.73467317e-06, 0.999332852, 6.11277504e-10, 3.95168648e-09, 0.000660409089])
    start = np.array([[-1.10899148, -0.68111764, -1.82662378, -5.82153205, -8.88625565]])
    r = equilibrium(lp, utils, W, method="newton", start=start, floor=None)
    ref = equilibrium(lp, utils, W, method="fixed_point", tol=1e-13, floor=None)
    assert r.all_converged and ref.all_converged
    assert r.n_iter[0] <= 30
    np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-9)


@pytest.mark.parametrize(
    "utils, methods",
    [
        ([2.0, "log", "exp", 10.0, "exp", 30.0], ["newton", "newton_cg"]),
        ([2.0, "log", 10.0, 30.0, "log", 2.0], ["newton_cg", "fixed_point", "anderson"]),
        ("log", ["closed_form"]),
    ],
)
def test_items_solved_together_equal_items_solved_alone(utils, methods, rng):
    """The parallel drivers allocate their buffers once per chunk of items (rows of other agent
    kinds stay zero from item to item): 300 items in one call (chunks of 4-5) give the prices and
    iteration counts of each item solved in a call of its own, with the floor fused in both. (Newton-CG
    on a mixed market of isoelastic and log agents lets the call's first item decide whether the
    others take frozen-normaliser steps, ``markets.kernels.normaliser.PROBE_RATE``: item ``j`` "alone"
    is therefore solved in a call of two, after item 0, as in the call of 300.)"""
    lp = random_beliefs(rng, 300, 6, 40, conc=0.1)
    W = rng.uniform(0.5, 2.0, 6)
    for method in methods:
        together = equilibrium(lp, utils, W, method=method, tol=1e-12, floor=1e-6, check=False)
        for j in range(0, 300, 37):
            pick = [j] if j == 0 else [0, j]
            alone = equilibrium(lp[pick], utils, W, method=method, tol=1e-12, floor=1e-6, check=False)
            np.testing.assert_allclose(together.log_prices[j], alone.log_prices[-1], rtol=0, atol=1e-13)
            assert together.n_iter[j] == alone.n_iter[-1] and together.n_floored > 0
