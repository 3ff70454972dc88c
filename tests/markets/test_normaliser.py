"""The frozen-normaliser step (:mod:`markets.kernels.normaliser`): each good's equation against an
independent root finder, the fixed point at the equilibrium, the contraction it buys over the diagonal
step, when Newton-CG takes it, and the equilibria it leads to against the dense Newton and the seed's
fixed point."""

import numpy as np
import pytest
from scipy.optimize import brentq

from markets import equilibrium, make_agents
from markets.kernels.jacobi import jacobi_log_step
from markets.kernels.normaliser import (
    INNER_STEPS,
    NEXT_FACTOR,
    frozen_normaliser_step,
    order_groups,
    scratch_size,
    take_frozen_step,
)
from markets.kernels.order_pcg import order_rows
from markets.kernels.potential import evaluate_into, init_prices, powers
from solvers.special import logsumexp

from .conftest import random_beliefs

GRID_MIX = [2.0, 10.0, 30.0, "log"]


def _market(utils, A, K, rng, sharp=None):
    """Agents ``utils`` (cycled to A) with Dirichlet beliefs, or Gaussian-logit ones of sharpness up
    to ``sharp``: ``(L, kind, inv_eta, W)``."""
    ag = make_agents([utils[i % len(utils)] for i in range(A)], rng.uniform(0.2, 1.0, A), A)
    if sharp is None:
        L = random_beliefs(rng, 1, A, K)[0]
    else:
        L = rng.uniform(0.3, sharp, A)[:, None] * rng.standard_normal((A, K))
        L -= logsumexp(L, axis=1)[:, None]
    return L, ag.kind, ag.inv_eta, ag.wealth


def _evaluated(L, kind, inv_eta, W, u):
    """The evaluation at ``u`` with the order rows: ``(res, T, D, G)``."""
    A, K = L.shape
    G = order_rows(kind, inv_eta, K)
    Pg, Q, B, T, cp = np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K)), np.zeros(K), np.zeros(K)
    D = np.full((3 + G, K), np.nan)
    powers(L, kind, inv_eta, Pg)
    _, res, _ = evaluate_into(L, kind, inv_eta, W, W.sum(), u, Pg, Q, B, T, cp, D)
    return res, T, D, G


def _start(L, kind, inv_eta, W):
    A, K = L.shape
    Pg = np.zeros((A, K))
    powers(L, kind, inv_eta, Pg)
    u = np.zeros(K)
    init_prices(L, kind, inv_eta, W, Pg, u)
    return u


def _step(L, kind, inv_eta, W, u, res_arg=None):
    """The step from ``u``: ``(ok, un, res, T, D, gs, fs, has_log)``."""
    res, T, D, G = _evaluated(L, kind, inv_eta, W, u)
    gs, fs = np.empty(G), np.empty(G)
    n, has_log, usable = order_groups(kind, inv_eta, W, gs, fs)
    assert usable and n == G
    un = np.empty_like(u)
    ok = frozen_normaliser_step(
        u,
        T,
        W.sum(),
        D[0],
        D[3:],
        gs,
        fs,
        has_log,
        res if res_arg is None else res_arg,
        un,
        np.empty(scratch_size(len(u), G)),
    )
    return ok, un, res, T, D, gs, fs, has_log


def _order_spending(L, kind, inv_eta, W, u):
    """NumPy: each order's spending ``T_g`` at ``u`` (log agents as order one), from the beliefs."""
    c = np.exp(u)
    out = {}
    for i in range(len(W)):
        g = inv_eta[i]
        q = np.exp(g * L[i]) * c ** (1.0 - g)
        out[g] = out.get(g, 0.0) + W[i] * q / q.sum()
    return out


def _roots(L, kind, inv_eta, W, u):
    """Each good's frozen equation ``sum_g T_gk exp(-g x) = Wsum c_k`` solved by scipy's brentq."""
    Tg = _order_spending(L, kind, inv_eta, W, u)
    c = np.exp(u)
    x = np.empty(len(u))
    for k in range(len(u)):
        f = lambda t, k=k: np.log(sum(T[k] * np.exp(-g * t) for g, T in Tg.items())) - np.log(W.sum() * c[k])  # noqa: E731
        x[k] = brentq(f, -200.0, 200.0, xtol=1e-14, rtol=1e-15)
    return x


def test_order_groups_orders_factors_and_usability():
    ag = make_agents(GRID_MIX * 3, np.linspace(0.2, 1.0, 12), 12)
    gs, fs = np.empty(3), np.empty(3)
    n, has_log, usable = order_groups(ag.kind, ag.inv_eta, ag.wealth, gs, fs)
    assert (n, has_log, usable) == (3, True, True)
    np.testing.assert_allclose(gs, [0.5, 0.1, 1.0 / 30.0])
    for j, g in enumerate(gs):
        wg = ag.wealth[ag.inv_eta == g].sum()
        np.testing.assert_allclose(fs[j], np.sqrt(wg / (1.0 - g)), rtol=1e-15)
    for utils in (["exp", 2.0, "log"], [2.0, 0.5, "log"]):  # an exponential agent; an order above one
        ag = make_agents(utils, None, 3)
        assert not order_groups(ag.kind, ag.inv_eta, ag.wealth, np.empty(3), np.empty(3))[2]


@pytest.mark.parametrize("sharp", [None, 2.0])
@pytest.mark.parametrize("A", [4, 12])
def test_step_solves_each_goods_frozen_equation(A, sharp, rng):
    """Near the equilibrium (the seed's fixed point run part of the way) the inner Newton steps
    converge: the step moves every log-price by brentq's root of its good's equation, up to the
    normalisation's common shift, to 1e-9."""
    L, kind, inv_eta, W = _market(GRID_MIX, A, 48, rng, sharp)
    r = equilibrium(L[None], [GRID_MIX[i % 4] for i in range(A)], W, method="fixed_point", max_iter=5, check=False)
    u = r.log_prices[0]
    ok, un, res, *_ = _step(L, kind, inv_eta, W, u, res_arg=1e-30)  # res tiny: every inner step taken
    assert ok
    x = _roots(L, kind, inv_eta, W, u)
    shift = un - u - x
    assert np.ptp(shift) < 1e-9
    np.testing.assert_allclose(logsumexp(un), 0.0, atol=1e-13)


def test_step_lies_between_the_diagonal_step_and_the_root(rng):
    """Newton on each good's convex decreasing equation from the diagonal step rises monotonically
    to the root: from the start of a market far from equilibrium the step's move ``x`` lies between
    the diagonal step's and the root, good by good (before the normalisation's shift)."""
    L, kind, inv_eta, W = _market(GRID_MIX, 10, 64, rng, sharp=3.0)
    u = _start(L, kind, inv_eta, W)
    ok, un, res, T, D, *_ = _step(L, kind, inv_eta, W, u)
    assert ok and res > 0.1
    root = _roots(L, kind, inv_eta, W, u)
    diag = np.log(T / W.sum()) - u
    diag *= T / D[0]
    assert np.abs(root).max() < 10.0 and np.abs(diag).max() < 10.0  # no cap in play
    assert np.all(diag <= root + 1e-12)  # the diagonal step undershoots (convexity)
    # the step's own move up to the normalisation's shift: x <= root everywhere and x = root where the
    # inner steps have converged, so the shift is the largest of move - root
    move = un - u
    x = move - np.max(move - root)
    assert np.all(x >= diag - 1e-9)
    assert np.max(root - x) <= 0.05 * np.max(root - diag)


def test_equilibrium_is_the_steps_fixed_point(rng):
    L, kind, inv_eta, W = _market(GRID_MIX, 8, 40, rng)
    r = equilibrium(L[None], [GRID_MIX[i % 4] for i in range(8)], W, method="newton", tol=1e-13, check=False)
    u = r.log_prices[0]
    ok, un, res, *_ = _step(L, kind, inv_eta, W, u)
    assert ok and res < 1e-12
    np.testing.assert_allclose(un, u, atol=1e-11)


@pytest.mark.parametrize("A", [10, 100])
def test_one_step_clears_far_more_than_the_diagonal_step(A):
    """From the start of the grid's Gaussian-logit mixed markets (``benchmarks/bench_markets_grid.py``,
    five items of 256 goods) the step lowers the clearing residual at least tenfold and to at most half
    of what the diagonal step of :mod:`markets.kernels.jacobi` reaches (medians; measured: 1.1 -> 0.028
    against 0.63 at 10 agents x 1,024 goods). Not on every family: with Student-t logits the step can
    be undone (:data:`markets.kernels.normaliser.PROBE_RATE`)."""
    from benchmarks.bench_markets_grid import family

    K = 256
    lp = family("logit", 5, A, K)
    ag = make_agents([GRID_MIX[i % 4] for i in range(A)], np.random.default_rng(1).uniform(0.2, 1.0, A), A)
    kind, inv_eta, W = ag.kind, ag.inv_eta, ag.wealth
    frozen, diag = [], []
    for L in lp:
        u = _start(L, kind, inv_eta, W)
        ok, un, res, T, D, *_ = _step(L, kind, inv_eta, W, u)
        assert ok
        frozen.append(_evaluated(L, kind, inv_eta, W, un)[0] / res)
        uj = np.empty(K)
        assert jacobi_log_step(u, T, W.sum(), D[0], uj, np.empty(K))
        diag.append(_evaluated(L, kind, inv_eta, W, uj)[0] / res)
    assert np.median(frozen) < 0.1
    assert np.median(frozen) < 0.5 * np.median(diag)


def test_probe_switch_and_record(rng):
    """``fz[0] = 0`` switches the steps off (the item then takes the diagonal and Newton steps as
    before them, and ``fz[1]`` stays NaN); with them on, ``fz[1]`` is the first step's contraction."""
    from markets.kernels.equilibrium import _general_buffers, general_item, spending_rows

    A, K = 12, 64
    L, kind, inv_eta, W = _market(GRID_MIX, A, K, rng, sharp=3.0)
    rows = spending_rows(kind, inv_eta, W, K)
    assert rows == 3
    out = {}
    for on in (1.0, 0.0):
        fz = np.array([on, np.nan])
        u = np.zeros(K)
        r = general_item(
            L, kind, inv_eta, W, W.sum(), 1e-11, 100, 2, u, False, _general_buffers(A, K), np.empty((3 + rows, K)), fz
        )
        assert r[1]
        out[on] = (u, r[0], fz[1])
    assert 0.0 < out[1.0][2] < 0.25 and np.isnan(out[0.0][2])
    assert out[1.0][1] < out[0.0][1]
    np.testing.assert_allclose(out[1.0][0], out[0.0][0], atol=1e-10)


def test_take_frozen_step_rules():
    tol = 1e-10
    finish = (tol / 0.5) ** (1.0 / 3.0)
    assert take_frozen_step(50.0, 0.0, tol, True)  # the global phase: the first always
    assert take_frozen_step(50.0, 0.4, tol, False) and not take_frozen_step(50.0, 0.6, tol, False)
    assert take_frozen_step(0.5, 0.0, tol, True)
    assert not take_frozen_step(0.9 * finish, 0.0, tol, True)  # one corrected Newton step finishes
    assert take_frozen_step(1e-2, 0.9 * finish / (NEXT_FACTOR * 1e-2), tol, False)
    assert not take_frozen_step(1e-2, 1.1 * finish / (NEXT_FACTOR * 1e-2), tol, False)
    assert INNER_STEPS >= 2


def _mixed(rng, n, A, K, family):
    if family == "logit":
        b = rng.uniform(0.3, 3.0, A)
        L = b[None, :, None] * rng.standard_normal((n, A, K))
        return L - logsumexp(L, axis=2)[..., None]
    if family == "dups":
        base = rng.standard_normal((n, 5, K)) * rng.uniform(0.5, 2.0, 5)[None, :, None]
        L = base[:, np.arange(A) % 5, :] + 1e-3 * rng.standard_normal((n, A, K))
        return L - logsumexp(L, axis=2)[..., None]
    return random_beliefs(rng, n, A, K)


@pytest.mark.parametrize("family", ["logit", "dups", "dirichlet"])
@pytest.mark.parametrize("A", [10, 70])
def test_newton_cg_with_frozen_steps_matches_dense_newton_and_fixed_point(family, A, rng):
    """Newton-CG (which now starts with frozen-normaliser steps on these markets) converges to the
    dense Newton's and the seed's fixed point's prices to 1e-10, in fewer iterations than five."""
    K = 48
    lp = _mixed(rng, 3, A, K, family)
    utils = [GRID_MIX[i % 4] for i in range(A)]
    w = rng.uniform(0.2, 1.0, A)
    cg = equilibrium(lp, utils, w, method="newton_cg", tol=1e-12)
    dense = equilibrium(lp, utils, w, method="newton", tol=1e-12)
    fp = equilibrium(lp, utils, w, method="fixed_point", tol=1e-12)
    assert cg.all_converged and dense.all_converged and fp.all_converged
    np.testing.assert_allclose(cg.log_prices, dense.log_prices, atol=1e-10)
    np.testing.assert_allclose(cg.log_prices, fp.log_prices, atol=1e-10)
    if family != "dirichlet":
        assert cg.n_iter.max() <= 4
