"""The third-order correction of the general path's Newton step (:mod:`markets.kernels.corrector`):
the predicted spending against the evaluated one (its error is third order in the step), the
Woodbury re-solve against a dense solve, the step-count rule, and a corrected step's cubic rate."""

import numpy as np
import pytest

from benchmarks.bench_markets_grid import family, utilities
from markets import equilibrium, make_agents
from markets.kernels.corrector import corrector_rhs, newton_steps, predicted_spending, use_corrector
from markets.kernels.line_search import trial
from markets.kernels.newton_cg import cg_scratch_size, cg_solve, general_diagonal, newton_rhs
from markets.kernels.potential import evaluate, newton_direction, powers
from markets.kernels.woodbury import woodbury_direction, woodbury_resolve, woodbury_rows, woodbury_scratch_size
from solvers.special import logsumexp

from .conftest import random_beliefs

MIXES = {
    "mixed": [2.0, 10.0, 30.0, "log", 2.0, 10.0],
    "one_order": [10.0] * 5,
    "log_heavy": ["log", "log", 1.05, 3.0, "log", 2.0],
    "below_one": [0.5, 2.0, "log", 30.0],
}


def _market(utils, K, rng):
    A = len(utils)
    agents = make_agents(utils, rng.uniform(0.2, 1.0, A), A)
    L = random_beliefs(rng, 1, A, K)[0]
    Pg = np.zeros((A, K))
    powers(L, agents.kind, agents.inv_eta, Pg)
    return agents.kind, agents.inv_eta, agents.wealth, L, Pg


def _spending(kind, inv_eta, W, L, Pg, u):
    A, K = L.shape
    Q, B, T, cp = np.zeros((A, K)), np.zeros((A, K)), np.zeros(K), np.zeros(K)
    r = evaluate(L, kind, inv_eta, W, W.sum(), u, Pg, Q, B, T, cp)
    return T, Q, r


@pytest.mark.parametrize("mix", list(MIXES))
@pytest.mark.parametrize("K", [3, 40, 300])
def test_predicted_spending_is_second_order(mix, K, rng):
    """``|T(u + t d) - Tp(t d)|`` falls as ``t^3`` (halving ``t`` divides it by about 8), and is far
    below the first-order prediction's error, which falls as ``t^2``."""
    kind, inv_eta, W, L, Pg = _market(MIXES[mix], K, rng)
    u = rng.normal(0.0, 1.0, K)
    u -= logsumexp(u)
    d = rng.normal(0.0, 1.0, K)
    T, Q, _ = _spending(kind, inv_eta, W, L, Pg, u)
    errs, errs1 = [], []
    for t in (1e-2, 5e-3, 2.5e-3):
        Tn = _spending(kind, inv_eta, W, L, Pg, u + t * d)[0]
        Tp = np.empty(K)
        predicted_spending(kind, inv_eta, W, Q, T, t * d, Tp)
        errs.append(np.abs(Tn - Tp).max() / np.abs(T).max())
        # first order alone: the same formula's linear part, by a symmetric difference of it
        Tm = np.empty(K)
        predicted_spending(kind, inv_eta, W, Q, T, -t * d, Tm)
        errs1.append(np.abs(Tn - (T + (Tp - Tm) / 2)).max() / np.abs(T).max())
    r1, r2 = errs[0] / errs[1], errs[1] / errs[2]
    assert 6.0 < r1 < 10.0 and 6.0 < r2 < 10.0, errs
    assert errs[2] < 0.05 * errs1[2]
    assert 3.0 < errs1[1] / errs1[2] < 5.0


@pytest.mark.parametrize("K", [20, 400])
def test_woodbury_resolve_is_the_dense_solution_for_another_rhs(K, rng):
    """After one :func:`woodbury_direction`, :func:`woodbury_resolve` solves the same matrix for a
    new right-hand side: both against the dense Newton direction's matrix (Cholesky)."""
    kind, inv_eta, W, L, Pg = _market(MIXES["mixed"], K, rng)
    u = rng.normal(0.0, 1.0, K)
    u -= logsumexp(u)
    T, Q, _ = _spending(kind, inv_eta, W, L, Pg, u)
    B = np.zeros_like(Q)
    dg, h = np.empty(K), np.empty(K)
    general_diagonal(kind, inv_eta, W, Q, u, dg, h)
    reg = W.sum()
    rows = woodbury_rows(kind, inv_eta, W)
    V, Ew = np.empty((rows + 2, K)), np.empty((rows, rows))
    b, c = np.empty(K), np.empty(K)
    newton_rhs(u, T, W.sum(), False, b, c, np.empty(K))
    d = np.empty(K)
    S = np.full(woodbury_scratch_size(rows), np.nan)  # scratch: its contents must not matter
    assert woodbury_direction(kind, inv_eta, W, Q, c, dg, h, reg, b, d, V, Ew, S)
    dense = np.empty(K)
    assert newton_direction(
        kind, inv_eta, W, u, Q, B, T, W.sum(), dense, np.empty((K, K)), np.empty((K, K)), np.empty(K)
    )
    np.testing.assert_allclose(d, dense, rtol=1e-9, atol=1e-10 * np.abs(dense).max())
    # a second right-hand side: the dense direction of a perturbed spending solves M x = b2
    T2 = T * np.exp(rng.normal(0.0, 0.1, K))
    b2 = T2 - W.sum() * c
    x = np.empty(K)
    S[:] = np.nan
    assert woodbury_resolve(V, Ew, b2, x, S)
    x_dense = np.empty(K)
    assert newton_direction(
        kind, inv_eta, W, u, Q, B, T2, W.sum(), x_dense, np.empty((K, K)), np.empty((K, K)), np.empty(K)
    )
    np.testing.assert_allclose(x, x_dense, rtol=1e-9, atol=1e-10 * np.abs(x_dense).max())


def test_step_count_rule():
    """Newton from 3e-5 at ``res' = 0.4 res^2`` needs two steps to 1e-10 (3.6e-10 first), one
    corrected step reaches it (``0.5 * 2.7e-14``): the correction is taken; from 1e-6 one Newton
    step is enough and it is not; nor at or above a residual of 1, nor at the tolerance."""
    assert newton_steps(3e-5, 0.4, 1e-10) == 2
    assert newton_steps(1e-6, 0.4, 1e-10) == 1
    assert newton_steps(0.5, 4.0, 1e-10) == 30  # 4 * 0.5 >= 1: no quadratic convergence predicted
    assert use_corrector(3e-5, 0.4, 0.5, 1e-10)
    assert not use_corrector(1e-6, 0.4, 0.5, 1e-10)
    assert not use_corrector(1.5, 0.4, 0.5, 1e-10)
    assert not use_corrector(1e-10, 0.4, 0.5, 1e-10)


def _steps_from(kind, inv_eta, W, L, Pg, u):
    """Residuals at ``u`` and after one Newton step and one corrected step from it (CG solved
    tightly: the comparison is of the methods, not of the linear solves)."""
    A, K = L.shape
    Wsum = W.sum()
    T, Q, (_, res, _) = _spending(kind, inv_eta, W, L, Pg, u)
    dg, h = np.empty(K), np.empty(K)
    general_diagonal(kind, inv_eta, W, Q, u, dg, h)
    scr = np.empty(cg_scratch_size(K, A))
    no1, no2 = np.empty(0), np.empty((0, 0))
    d = np.empty(K)
    b = np.empty(K)
    newton_rhs(u, T, Wsum, True, b, np.empty(K), np.empty(K))
    ok, _ = cg_solve(False, u, b, Wsum, 1e-16, d, scr, no2, 0.0, T, no1, no1, no1, kind, inv_eta, W, Q, dg, h)
    assert ok
    b2, d2 = np.empty(K), np.empty(K)
    assert corrector_rhs(kind, inv_eta, W, Wsum, Q, T, u, d, b2, np.empty(4 * K))
    ok, _ = cg_solve(False, u, b2, Wsum, 1e-17, d2, scr, no2, 0.0, T, no1, no1, no1, kind, inv_eta, W, Q, dg, h)
    assert ok
    un, x = np.empty(K), np.empty(K)
    trial(u, d, 1.0, un, x)
    res_newton = _spending(kind, inv_eta, W, L, Pg, un)[2][1]
    trial(u, d + d2, 1.0, un, x)
    res_corr = _spending(kind, inv_eta, W, L, Pg, un)[2][1]
    return res, res_newton, res_corr


@pytest.mark.parametrize("fam", ["dirichlet", "logit", "dups"])
@pytest.mark.parametrize("A", [10, 100])
def test_corrected_step_is_third_order(fam, A):
    """At points ``u* + e v`` near the equilibrium, halving ``e`` divides the residual after a
    corrected step by about 8 (third order) and after a Newton step by about 4 (second order),
    and the corrected step lands far below Newton's."""
    K = 256
    lp = family(fam, 1, A, K, seed=3)
    utils = utilities("mix", A)
    agents = make_agents(utils, np.random.default_rng(1).uniform(0.2, 1.0, A), A)
    kind, inv_eta, W = agents.kind, agents.inv_eta, agents.wealth
    L = np.maximum(lp[0], np.log(1e-9))
    L -= logsumexp(L, axis=1)[:, None]
    star = equilibrium(L[None], utils, W, method="newton_cg", tol=1e-13, check=False)
    assert star.all_converged
    Pg = np.zeros((A, K))
    powers(L, kind, inv_eta, Pg)
    v = np.random.default_rng(4).normal(0.0, 1.0, K)
    out = []
    for e in (4e-3, 2e-3, 1e-3):
        u = star.log_prices[0] + e * v
        u -= logsumexp(u)
        out.append(_steps_from(kind, inv_eta, W, L, Pg, u))
    res, newton, corr = np.array(out).T
    assert np.all(corr < 0.2 * newton), out
    assert np.all(corr[:-1] / corr[1:] > 6.0) and np.all(corr[:-1] / corr[1:] < 11.0), out
    assert np.all(newton[:-1] / newton[1:] > 3.0) and np.all(newton[:-1] / newton[1:] < 5.5), out


def test_corrected_equilibria_match_the_fixed_point():
    """``newton_cg`` and ``auto`` (which take corrected steps on these mixed markets) reach the
    seed's fixed point's equilibrium, at A = 10 (Woodbury's re-solve) and A = 100 (CG's)."""
    for A in (10, 100):
        lp = family("logit", 3, A, 300, seed=5)
        u = utilities("mix", A)
        w = np.random.default_rng(2).uniform(0.2, 1.0, A)
        fp = equilibrium(lp, u, w, method="fixed_point", tol=1e-12, check=False)
        for m in ("newton_cg", "auto"):
            r = equilibrium(lp, u, w, method=m, tol=1e-11, check=False)
            assert r.all_converged and fp.all_converged
            np.testing.assert_allclose(r.log_prices, fp.log_prices, atol=1e-9)
