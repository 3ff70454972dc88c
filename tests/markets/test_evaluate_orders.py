"""The general path's evaluation (:func:`markets.kernels.potential.evaluate`) takes the agents of one
order together (one ``c^(1-g)`` per distinct order, from ``GROUP_MIN_GOODS`` goods). Checked against a
NumPy evaluation of the seed's effective beliefs and spending (seed 000 Eq. 2.35) and the potential of
``docs/markets.md`` for markets whose orders alternate agent by agent, below and above the threshold,
with logarithmic, exponential and near-logarithmic agents; and the equilibrium of every method does not
depend on the order in which the agents are listed. The chains of agents of one order
(:func:`markets.kernels.potential.order_links`) against brute force, and markets where every agent has its
own order (``eta`` learnt per agent: until session 48 the grouping cost ``A^2 / 2`` comparisons an
evaluation there)."""

import numpy as np
import pytest

from markets import equilibrium, make_agents
from markets.kernels.potential import (
    CHAIN_SCAN_MAX,
    FEW_ORDERS,
    GROUP_MIN_GOODS,
    evaluate,
    evaluate_spending,
    link_head,
    link_next,
    order_links,
    powers,
)
from markets.utilities import EXPONENTIAL, ISOELASTIC
from solvers.special import logsumexp

from .conftest import random_beliefs

# eta 1.05: the log1p branch of the potential (|1 - 1/eta| < 0.1); orders alternate agent by agent
SPECS = [2.0, 10.0, "log", 30.0, "exp", 2.0, 1.05, 10.0, "exp", 30.0, "log", 2.0, 1.05, 10.0]


def _reference(lp, kinds, g, W, u):
    """Spending ``T``, effective beliefs ``Q`` (isoelastic rows) and potential ``phi`` in NumPy."""
    c = np.exp(u)
    T = np.zeros_like(c)
    Q = np.zeros_like(lp)
    phi = 0.0
    for i in range(lp.shape[0]):
        if kinds[i] == ISOELASTIC:
            p = np.exp(lp[i])
            if g[i] == 1.0:
                Q[i] = p
                phi += W[i] * np.sum(p * u)
            else:
                z = np.sum(p ** g[i] * c ** (1.0 - g[i]))
                Q[i] = p ** g[i] * c ** (1.0 - g[i]) / z
                phi += W[i] / (1.0 - g[i]) * np.log(z)
            T += W[i] * Q[i]
        else:  # exponential agent: r_ik = c_k (W_i + log(P_ik / c_k) - KL(c || P_i))
            a = lp[i] - u
            s = np.sum(c * a)
            phi += s
            T += c * (W[i] + a - s)
    return T, Q, phi


def _evaluate_as_reference(lp, kinds, g, W, u):
    """:func:`evaluate` at ``u``, checked against :func:`_reference` (spending and effective beliefs to
    1e-12, the potential to 1e-11, the residual to 1e-10); returns ``(phi, nneg, T, Q, B, cp)``."""
    A, K = lp.shape
    Pg, Q, B = np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K))
    T, cp = np.zeros(K), np.zeros(K)
    powers(lp, kinds, g, Pg)
    phi, res, nneg = evaluate(lp, kinds, g, W, W.sum(), u, Pg, Q, B, T, cp)
    T_ref, Q_ref, phi_ref = _reference(lp, kinds, g, W, u)
    np.testing.assert_allclose(T, T_ref, rtol=1e-12, atol=0)
    iso = kinds == ISOELASTIC
    np.testing.assert_allclose(Q[iso], Q_ref[iso], rtol=1e-12, atol=1e-300)
    assert phi == pytest.approx(phi_ref, rel=1e-11, abs=1e-12)
    c = np.exp(u)
    assert res == pytest.approx(np.max(np.abs(T_ref - W.sum() * c) / c), rel=1e-10)
    return phi, nneg, T, Q, B, cp


@pytest.mark.parametrize("K", [5, GROUP_MIN_GOODS - 1, GROUP_MIN_GOODS, 200])
def test_evaluate_equals_a_numpy_evaluation_with_alternating_orders(K, rng):
    A = len(SPECS)
    ag = make_agents(SPECS, rng.uniform(0.3, 2.0, A))
    kinds, g, W = ag.kind.astype(np.int64), ag.inv_eta.astype(np.float64), ag.wealth.astype(np.float64)
    assert set(kinds) == {EXPONENTIAL, ISOELASTIC} and len(set(g[kinds == ISOELASTIC])) == 5
    lp = random_beliefs(rng, 1, A, K, conc=1.5)[0]
    u = rng.normal(0.0, 1.0, K)
    u -= logsumexp(u)
    phi, nneg, T, Q, B, cp = _evaluate_as_reference(lp, kinds, g, W, u)
    # listing the agents in another order changes nothing but rounding
    perm = rng.permutation(A)
    Pg2, Q2, T2 = np.zeros((A, K)), np.zeros((A, K)), np.zeros(K)
    powers(lp[perm], kinds[perm], g[perm], Pg2)
    phi2, res2, nneg2 = evaluate(lp[perm], kinds[perm], g[perm], W[perm], W.sum(), u, Pg2, Q2, B, T2, cp)
    np.testing.assert_allclose(T2, T, rtol=1e-13, atol=0)
    np.testing.assert_allclose(Q2[np.argsort(perm)], Q, rtol=1e-13, atol=1e-300)
    assert phi2 == pytest.approx(phi, rel=1e-12, abs=1e-13) and nneg2 == nneg


@pytest.mark.parametrize("K", [5, GROUP_MIN_GOODS, 200])
def test_the_fixed_points_evaluation_without_the_potential_fills_the_same_buffers(K, rng):
    """:func:`evaluate_spending` (the fixed point's and Anderson's pass, session 54) skips only the
    potential: the spending, effective beliefs, exponential agents' rows, residual and short count are
    :func:`evaluate`'s to rounding (each compiled function vectorises its sums its own way: 1 ulp seen),
    with log, near-log (the potential's log1p form) and exponential agents."""
    A = len(SPECS)
    ag = make_agents(SPECS, rng.uniform(0.3, 2.0, A))
    kinds, g, W = ag.kind.astype(np.int64), ag.inv_eta.astype(np.float64), ag.wealth.astype(np.float64)
    lp = random_beliefs(rng, 1, A, K, conc=1.5)[0]
    u = rng.normal(0.0, 1.0, K)
    u -= logsumexp(u)
    Pg = np.zeros((A, K))
    powers(lp, kinds, g, Pg)
    out = []
    for f in (evaluate, evaluate_spending):
        Q, B, T, cp = np.full((A, K), np.nan), np.full((A, K), np.nan), np.full(K, np.nan), np.full(K, np.nan)
        phi, res, nneg = f(lp, kinds, g, W, W.sum(), u, Pg, Q, B, T, cp)
        out.append((phi, res, nneg, T, Q, B))
    (phi, res, nneg, T, Q, B), (phi0, res0, nneg0, T0, Q0, B0) = out
    assert phi0 == 0.0 and phi != 0.0
    assert res0 == pytest.approx(res, rel=1e-13) and nneg0 == nneg
    np.testing.assert_allclose(T0, T, rtol=1e-14, atol=0)
    iso, ex = kinds == ISOELASTIC, kinds == EXPONENTIAL
    np.testing.assert_allclose(Q0[iso], Q[iso], rtol=1e-14, atol=0)
    np.testing.assert_allclose(B0[ex], B[ex], rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("method", ["fixed_point", "anderson", "newton", "newton_cg", "auto"])
@pytest.mark.parametrize("K", [8, 96])
def test_equilibrium_does_not_depend_on_the_agents_order(method, K, rng):
    """Isoelastic and log agents of four orders, interleaved against sorted by order: the same
    prices to 1e-9 in log-price at ``tol = 1e-12``, every item converged."""
    specs = [[2.0, 10.0, 30.0, "log"][i % 4] for i in range(24)]
    W = rng.uniform(0.2, 1.0, 24)
    lp = random_beliefs(rng, 6, 24, K, conc=1.0)
    order = np.argsort([i % 4 for i in range(24)], kind="stable")
    a = equilibrium(lp, specs, W, method=method, tol=1e-12, floor=None)
    b = equilibrium(lp[:, order], [specs[i] for i in order], W[order], method=method, tol=1e-12, floor=None)
    assert a.all_converged and b.all_converged
    assert a.clearing_error.max() <= 1e-11 and b.clearing_error.max() <= 1e-11
    np.testing.assert_allclose(a.log_prices, b.log_prices, rtol=0, atol=1e-9)


def _links_reference(kinds, g):
    """``(head, next)`` of :func:`markets.kernels.potential.order_links` by brute force."""
    A = len(kinds)
    head, nxt = np.zeros(A, bool), np.full(A, -1)
    for i in range(A):
        if kinds[i] != ISOELASTIC:
            continue
        same = [j for j in range(A) if kinds[j] == ISOELASTIC and g[j] == g[i]]
        head[i] = same[0] == i
        later = [j for j in same if j > i]
        nxt[i] = later[0] if later else -1
    return head, nxt


def _many_orders(rng, A, n_distinct):
    """Orders of ``A`` agents: ``n_distinct`` values (log's 1 among them), repeated in random places,
    so that orders met early come back after many others (past ``FEW_ORDERS`` distinct ones)."""
    values = np.concatenate([[1.0], rng.uniform(0.01, 0.99, n_distinct - 1)])
    return values[rng.integers(0, n_distinct, A)]


@pytest.mark.parametrize("A", [2, 7, CHAIN_SCAN_MAX, CHAIN_SCAN_MAX + 1, 300])
@pytest.mark.parametrize("n_distinct", [1, 4, FEW_ORDERS + 1, 250])
def test_order_links_chain_the_agents_of_each_order(A, n_distinct, rng):
    """Every regime of :func:`order_links` (scan, short list, list then hash) against brute force,
    exponential agents (whose ``inv_eta`` is ignored) among them."""
    g = _many_orders(rng, A, n_distinct)
    kinds = np.where(rng.random(A) < 0.15, EXPONENTIAL, ISOELASTIC).astype(np.int64)
    link = order_links(kinds, g)
    head, nxt = _links_reference(kinds, g)
    iso = kinds == ISOELASTIC
    np.testing.assert_array_equal([link_head(link, i) for i in range(A)], head)
    np.testing.assert_array_equal(np.array([link_next(link, i) for i in range(A)])[iso], nxt[iso])
    assert np.all(link[~iso] == 0)


@pytest.mark.parametrize("A", [40, 150])
@pytest.mark.parametrize("K", [GROUP_MIN_GOODS, 70])
def test_evaluate_with_an_order_per_agent(A, K, rng):
    """Orders learnt per agent (each agent its own, some repeated, log and exponential agents among
    them), past the scan and the short list of :func:`order_links`: the NumPy evaluation to the same
    tolerances as the alternating orders above."""
    g = _many_orders(rng, A, A // 2 + 3)
    kinds = np.where(rng.random(A) < 0.1, EXPONENTIAL, ISOELASTIC).astype(np.int64)
    W = rng.uniform(0.3, 2.0, A)
    W /= W.sum()
    lp = random_beliefs(rng, 1, A, K, conc=1.5)[0]
    u = rng.normal(0.0, 1.0, K)
    u -= logsumexp(u)
    _evaluate_as_reference(lp, kinds, g, W, u)


@pytest.mark.parametrize("K", [16, 300])
def test_equilibrium_with_an_order_per_agent(K, rng):
    """A market of 100 agents each with its own eta (1.2-40) and five log agents: every method
    converges to the same prices (1e-9 in log-price at ``tol = 1e-12``)."""
    etas = list(np.exp(rng.uniform(np.log(1.2), np.log(40.0), 100))) + ["log"] * 5
    W = rng.uniform(0.2, 1.0, len(etas))
    lp = random_beliefs(rng, 3, len(etas), K, conc=1.0)
    ref = equilibrium(lp, etas, W, method="fixed_point", tol=1e-12, floor=None)
    assert ref.all_converged and ref.clearing_error.max() <= 1e-11
    for method in ["auto", "newton_cg", "anderson"]:
        r = equilibrium(lp, etas, W, method=method, tol=1e-12, floor=None)
        assert r.all_converged and r.clearing_error.max() <= 1e-11, method
        np.testing.assert_allclose(r.log_prices, ref.log_prices, rtol=0, atol=1e-9)
