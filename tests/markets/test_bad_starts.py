"""Warm starts far from the equilibrium on extreme beliefs (Dirichlet beliefs down to ``exp(-690)``, no
floor), session 44: starts too high by hundreds of log-units give way to the default start
(``markets.kernels.equilibrium.START_CHECK``), a Newton step to a price of zero is refused (the
residual is ``inf`` there), and a Newton that stalls hands the item to the seed's fixed point
(``FALLBACK_FACTOR``). Every answer is checked against the seed's fixed point from its own start."""

import warnings

import numpy as np
import pytest

from benchmarks.bench_markets_grid import family, utilities
from markets import equilibrium
from markets.kernels.equilibrium import (
    FALLBACK_CAP_MIN,
    FALLBACK_FACTOR,
    FALLBACK_MAX,
    FALLBACK_MIN_RATIO,
    _fallback_budget,
)
from markets.kernels.isoelastic import iso_pass
from markets.kernels.newton_cg import UNDER_PRICED_LOG_RHS, newton_rhs
from solvers.special import logsumexp


def _random_starts(n, K, depth=30.0, seed=3):
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, (n, K))
    s[:, :3] -= depth
    return s - logsumexp(s, axis=1, keepdims=True)


@pytest.mark.parametrize(
    "spec,A,K,n",
    [("10", 2, 16, 500), ("mix", 2, 16, 500), ("10", 10, 256, 60), ("mix", 10, 256, 60), ("10", 3, 43, 300)],
)
def test_random_starts_on_extreme_beliefs_reach_the_fixed_points_answer(spec, A, K, n):
    """Before session 44: 1 item in 500 unconverged at 16 x 2 (eta 10: a step to a log-price of -78,704
    accepted; mix: a stall at clearing error 1.0), and at 256 x 10 (eta 10) 92-96 % of the items at
    Newton's 100-step cap, 20x slower than the fixed point."""
    lp = family("dirichlet", n, A, K)
    w = np.random.default_rng(1).uniform(0.2, 1.0, A)
    u = utilities(spec, A)
    ref = equilibrium(lp, u, w, method="fixed_point", tol=1e-12, floor=None)
    assert ref.all_converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no item flagged as unresolvable
        r = equilibrium(lp, u, w, start=_random_starts(n, K), tol=1e-12, floor=None)
    assert r.all_converged
    assert r.summary()["max_clearing_error"] < 1e-10
    np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-8)


def test_the_one_order_pass_is_infinite_at_a_zero_price():
    """``iso_pass`` at a log-price of -78,704 (a price of exactly zero): the residual is ``inf``, so no
    step there passes the halving test; at -50 it is finite."""
    K, A = 16, 2
    rng = np.random.default_rng(0)
    PgT = rng.uniform(0.1, 1.0, (K, A))
    u = rng.normal(0.0, 1.0, K)
    W = np.array([0.5, 0.7])
    z, s, T, cp = np.empty(A), np.empty(A), np.empty(K), np.empty(K)
    u[0] = -78704.0
    assert iso_pass(PgT, 0.1, W, W.sum(), u, z, s, T, cp, False)[1] == np.inf
    u[0] = -50.0
    assert np.isfinite(iso_pass(PgT, 0.1, W, W.sum(), u, z, s, T, cp, False)[1])


def test_a_good_start_is_not_replaced():
    """A start at the equilibrium (a residual far below the test) is kept: no iterations."""
    lp = family("dirichlet", 50, 10, 256)
    w = np.random.default_rng(1).uniform(0.2, 1.0, 10)
    ref = equilibrium(lp, 10.0, w, method="fixed_point", tol=1e-12, floor=None)
    r = equilibrium(lp, 10.0, w, start=ref.log_prices, tol=1e-10, floor=None)
    assert r.all_converged and np.all(r.n_iter == 0)
    np.testing.assert_allclose(r.log_prices, ref.log_prices, rtol=0, atol=1e-13)  # renormalised only


def test_newton_cg_at_its_cap_far_from_the_answer_falls_back_to_the_fixed_point():
    """Session 45: from random starts on Dirichlet beliefs without a floor (eta 2/10/30/log, 3 agents,
    48 goods) Newton-CG ended 27 of 300 items at its 100-step cap with a clearing error near 1; such an
    item goes on by the seed's fixed point (FALLBACK_CAP_MIN). Session 46 removed the causes (the
    right-hand side, next test, and the price box, ``test_start_bound.py``): a search over 2 families x 4
    markets x 2-10 agents x 16-256 goods x 3 start spreads found no item above 60 steps, so the rule is
    checked on the kernel's decision, and a cap the caller sets below the default keeps its meaning."""
    tol = 1e-10
    assert _fallback_budget(False, 100, 100, 1.0, tol) == min(FALLBACK_FACTOR * 100, FALLBACK_MAX)
    assert _fallback_budget(False, 12, 100, 1.0, tol) > 0  # a stall before the cap
    assert _fallback_budget(False, 50, 50, 1.0, tol) == 0  # the caller's cap
    assert _fallback_budget(False, 99, 99, 1.0, tol) == 0 and FALLBACK_CAP_MIN == 100
    assert _fallback_budget(True, 100, 100, 1.0, tol) == 0
    assert _fallback_budget(False, 100, 100, 0.5 * FALLBACK_MIN_RATIO * tol, tol) == 0  # near the answer
    n, A, K = 300, 3, 48
    lp = family("dirichlet", n, A, K)
    w = np.random.default_rng(1).uniform(0.2, 1.0, A)
    u = utilities("mix", A)
    short = equilibrium(lp, u, w, start=_random_starts(n, K), method="newton_cg", floor=None, max_iter=2)
    assert np.any(~short.converged) and short.n_iter.max() == 2  # no fixed-point passes added


@pytest.mark.parametrize("K", [48, 64])
def test_newton_cg_from_far_starts_converges_without_the_fallback(K):
    """Session 46: from random starts on Dirichlet beliefs without a floor (eta 2/10/30, 3 agents) the full
    logarithmic right-hand side drove goods priced far above a near-zero demand *up*, and Newton-CG ground to
    its cap on 27 (48 goods) and 48 (64 goods) of 300 items; with the right-hand side logarithmic on the
    under-priced goods only after a step that barely lowered the residual (``RHS_SWITCH``), every item
    converges within a cap of 99 steps, where the fixed-point fallback does not run (``FALLBACK_CAP_MIN``), at
    the fixed point's answer; with the price box (``markets.kernels.start_bound.box_start``) in at most 20."""
    n, A = 300, 3
    lp = family("dirichlet", n, A, K)
    w = np.random.default_rng(1).uniform(0.2, 1.0, A)
    u = utilities("mix", A)
    ref = equilibrium(lp, u, w, method="fixed_point", tol=1e-12, floor=None, max_iter=100_000)
    assert ref.all_converged
    r = equilibrium(lp, u, w, start=_random_starts(n, K), method="newton_cg", floor=None, max_iter=99)
    assert r.all_converged and r.summary()["max_clearing_error"] < 1e-9
    assert r.n_iter.max() <= 20  # session 46: 76-77 steps at most before the price box, 8-9 after
    np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-8)


def test_the_under_priced_right_hand_side_against_its_formula():
    """``newton_rhs``: linear ``T - Wsum c``; logarithmic ``T log(T / (Wsum c))`` where ``T > 0``; with
    ``UNDER_PRICED_LOG_RHS`` logarithmic only where ``T > Wsum c``."""
    rng = np.random.default_rng(5)
    K, Wsum = 40, 1.7
    u = rng.normal(-4.0, 3.0, K)
    u -= logsumexp(u)
    c = np.exp(u)
    T = Wsum * c * np.exp(rng.normal(0.0, 4.0, K))
    T[:3] = 0.0
    lin = T - Wsum * c
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.where(T > 0, T * np.log(T / (Wsum * c)), lin)
    for mode, want in [(0, lin), (1, lg), (UNDER_PRICED_LOG_RHS, np.where(T > Wsum * c, lg, lin))]:
        b, cc, x = np.empty(K), np.empty(K), np.empty(K)
        newton_rhs(u, T, Wsum, mode, b, cc, x)
        np.testing.assert_allclose(cc, c, rtol=1e-14)
        np.testing.assert_allclose(b, want, rtol=1e-12, atol=1e-300)
    assert np.any((T > 0) & (T < Wsum * c)) and np.any(T > Wsum * c)  # both kinds of goods present
