"""CG preconditioned by each order's mean agent (:mod:`markets.kernels.order_pcg`): the rows the
evaluation collects, the preconditioner's algebra, and the direction against the dense Newton solve."""

import numpy as np
import pytest

from markets import equilibrium, make_agents
from markets.kernels.newton_cg import cg_direction, cg_scratch_size
from markets.kernels.order_pcg import MIN_AGENTS, order_direction, order_rows
from markets.kernels.potential import evaluate_into, newton_direction, powers
from markets.kernels.woodbury import woodbury_rows
from solvers.special import logsumexp

from .conftest import random_beliefs

MIXES = {
    "grid": [2.0, 10.0, 30.0, "log"] * 6,  # the grid's mixed market, orders interleaved
    "with_exp": [2.0, "exp", 10.0, "log", 30.0, "exp"] * 3,
    "near_log": [1.05, 3.0, "log", 0.7, 3.0, 1.05, 2.0] * 2,  # an order above one (eta < 1): no row
}


def _point(utils, K, rng, dups=False):
    """A market of ``utils`` at random prices away from its equilibrium, evaluated with the order
    rows: ``(kind, inv_eta, W, u, Q, T, D, G)``."""
    A = len(utils)
    agents = make_agents(utils, rng.uniform(0.2, 1.0, A), A)
    kind, inv_eta, W = agents.kind, agents.inv_eta, agents.wealth
    if dups:  # agents that nearly agree: five base beliefs plus small noise
        base = random_beliefs(rng, 1, 5, K)[0]
        L = base[np.arange(A) % 5] + 0.05 * rng.standard_normal((A, K))
        L -= logsumexp(L, axis=1)[:, None]
    else:
        L = random_beliefs(rng, 1, A, K)[0]
    u = rng.normal(0.0, 1.0, K)
    u -= logsumexp(u)
    G = order_rows(kind, inv_eta, K)
    Pg, Q, B, T, cp = np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K)), np.zeros(K), np.zeros(K)
    D = np.full((3 + G, K), np.nan)
    powers(L, kind, inv_eta, Pg)
    evaluate_into(L, kind, inv_eta, W, W.sum(), u, Pg, Q, B, T, cp, D)
    return kind, inv_eta, W, u, Q, T, D, G


def test_order_rows_counts_distinct_orders_below_one():
    def rows(utils, K=64):
        ag = make_agents(utils, None, len(utils))
        return order_rows(ag.kind, ag.inv_eta, K)

    assert rows([2.0, 10.0, 30.0, "log"] * 3) == 3
    assert rows(["log", "exp", "log"]) == 0
    assert rows([2.0, 0.5, 2.0, "exp"]) == 1  # eta = 0.5: order 2, above one
    assert rows([2.0, 10.0], K=15) == 0  # below GROUP_MIN_GOODS the evaluation keeps no orders


@pytest.mark.parametrize("mix", list(MIXES))
def test_evaluation_rows_are_the_orders_scaled_spending(mix, rng):
    """Rows ``3 ..`` of the evaluation's ``D``: ``sqrt((1 - g) / W_g) sum_{i: g_i = g} W_i Q_i`` per
    order ``g < 1`` in the order of its first agent, from NumPy on ``Q``."""
    K = 40
    kind, inv_eta, W, u, Q, T, D, G = _point(MIXES[mix], K, rng)
    want = []
    seen = []
    for i in range(len(W)):
        g = inv_eta[i]
        if kind[i] != 1 or g >= 1.0 or g in seen:
            continue
        seen.append(g)
        m = (kind == 1) & (inv_eta == g)
        want.append(np.sqrt((1 - g) / W[m].sum()) * (W[m, None] * Q[m]).sum(axis=0))
    assert G == len(want)
    np.testing.assert_allclose(D[3:], np.array(want).reshape(G, K), rtol=1e-12, atol=1e-15)


def _dense(kind, inv_eta, W, u, Q, D, G):
    """``M`` and the preconditioner ``P`` formed densely (module docstring of ``order_pcg``)."""
    K = u.shape[0]
    c = np.exp(u)
    n_exp = int(np.sum(kind == 0))
    dg, h = D[0], D[1]
    S = np.diag(dg).copy()
    for i in np.flatnonzero(kind == 1):
        S += W[i] * (1.0 - inv_eta[i]) * np.outer(Q[i], Q[i])
    S1 = np.diag(dg) + sum(np.outer(v, v) for v in D[3 : 3 + G]) if G else np.diag(dg)
    reg = abs(W.sum()) + n_exp
    beta = reg + h.sum()

    def proj(X):
        return X - np.outer(c, h) - np.outer(h, c) + beta * np.outer(c, c)

    assert K == S.shape[0]
    return proj(S), proj(S1), reg


@pytest.mark.parametrize("mix", ["grid", "with_exp"])
def test_preconditioner_is_below_the_newton_matrix_and_keeps_its_h(mix, rng):
    """``-S'`` has the same ``h = -S' 1`` as ``-S``; ``P`` is positive definite and ``M - P`` positive
    semi-definite: the eigenvalues of ``P^(-1) M`` are at least 1."""
    kind, inv_eta, W, u, Q, T, D, G = _point(MIXES[mix], 48, rng)
    M, P, _ = _dense(kind, inv_eta, W, u, Q, D, G)
    S1 = np.diag(D[0]) + sum(np.outer(v, v) for v in D[3 : 3 + G])
    np.testing.assert_allclose(S1.sum(axis=1), D[1], rtol=1e-11)
    assert np.linalg.eigvalsh(P).min() > 0
    ev = np.linalg.eigvals(np.linalg.solve(P, M)).real
    assert ev.min() > 1 - 1e-9


@pytest.mark.parametrize("mix", list(MIXES))
@pytest.mark.parametrize("K", [20, 70])
def test_order_direction_is_the_dense_newton_direction(mix, K, rng):
    kind, inv_eta, W, u, Q, T, D, G = _point(MIXES[mix], K, rng)
    A = len(W)
    d_dense = np.empty(K)
    assert newton_direction(
        kind, inv_eta, W, u, Q, np.zeros((A, K)), T, W.sum(), d_dense, np.empty((K, K)), np.empty((K, K)), np.empty(K)
    )
    n_exp = int(np.sum(kind == 0))
    d = np.empty(K)
    ok, n = order_direction(
        u, T, W.sum(), abs(W.sum()) + n_exp, 1e-9, 1e-300, d, np.empty(cg_scratch_size(K, A)), kind, inv_eta, W, Q,
        D[0], D[1], D[3:], G, False,
    )  # fmt: skip
    assert ok and n >= 1
    np.testing.assert_allclose(d, d_dense, rtol=1e-10, atol=1e-10 * np.abs(d_dense).max())


def test_preconditioned_cg_takes_fewer_products_where_agents_of_an_order_agree(rng):
    """Near-duplicate agents (the grid's third family): the same accuracy in fewer products than CG
    scaled by the diagonal alone."""
    K = 256
    kind, inv_eta, W, u, Q, T, D, G = _point(MIXES["grid"], K, rng, dups=True)
    A = len(W)
    no1 = np.empty(0)
    n_plain, n_pre = [], []
    for res in (1e-1, 1e-3):
        d = np.empty(K)
        ok1, n1 = cg_direction(
            False, u, T, W.sum(), W.sum(), res, 1e-300, d, np.empty(cg_scratch_size(K, A)),
            np.empty((0, 0)), 0.0, no1, no1, no1, kind, inv_eta, W, Q, D[0], D[1],
        )  # fmt: skip
        ok2, n2 = order_direction(
            u, T, W.sum(), W.sum(), res, 1e-300, d, np.empty(cg_scratch_size(K, A)), kind, inv_eta, W, Q,
            D[0], D[1], D[3:], G, False,
        )  # fmt: skip
        assert ok1 and ok2
        n_plain.append(n1)
        n_pre.append(n2)
    assert sum(n_pre) < sum(n_plain), (n_pre, n_plain)


@pytest.mark.parametrize("utils", [[2.0, 10.0, 30.0, "log"] * 22, [2.0, "exp", 10.0, 30.0] * 22])
def test_newton_cg_with_the_preconditioner_matches_the_fixed_point_and_dense_newton(utils, rng):
    """Markets of at least ``order_pcg.MIN_AGENTS`` agents of order below one (Newton-CG then solves
    by the preconditioned CG): the same equilibria as dense Newton (1e-10) and, without exponential
    agents, the seed's fixed point."""
    A = len(utils)
    ag = make_agents(utils, None, A)
    assert woodbury_rows(ag.kind, ag.inv_eta, ag.wealth) - 2 >= MIN_AGENTS
    lp = random_beliefs(rng, 3, A, 80)
    W = rng.uniform(0.2, 1.0, A)
    a = equilibrium(lp, utils, W, tol=1e-12, method="newton_cg")
    b = equilibrium(lp, utils, W, tol=1e-12, method="newton")
    assert a.all_converged and b.all_converged
    np.testing.assert_allclose(a.log_prices, b.log_prices, atol=1e-10)
    if "exp" not in utils:
        f = equilibrium(lp, utils, W, tol=1e-12, method="fixed_point")
        np.testing.assert_allclose(a.log_prices, f.log_prices, atol=1e-10)
