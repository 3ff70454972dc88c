"""Markets with short sales converge at their rounding floor (session 45).

Exponential agents short goods they believe unlikely; without a floor (log-beliefs down to -700) they
short hundreds of units and isoelastic agents hold thousands of the cheapest goods, so the clearing
residual ``|sum_i x_ik - sum_i W_i|`` is a difference of sums of that size. Every method stopped a little
above ``tol = 1e-10`` there (the same prices), and the items were reported unconverged. The general
path's convergence test is now ``res <= tol max(1, G)`` with ``G`` the largest gross volume of a good
(:func:`markets.kernels.equilibrium.at_rounding_floor`); markets without short sales are unchanged.

The prices are checked independently: the equilibrium conditions recomputed from Table 2.4's closed
forms in extended precision (``np.longdouble``), not by the solver's evaluation."""

import numpy as np
import pytest

from benchmarks.bench_markets_grid import family
from markets import equilibrium, make_agents
from markets.kernels.equilibrium import at_rounding_floor, gross_units
from markets.kernels.potential import EXP, ISO


def _market(n=8, A=100, K=64):
    lp = family("dirichlet", n, A, K)
    lp = lp - np.logaddexp.reduce(lp, axis=2, keepdims=True)
    utilities = ["exp" if i % 2 else 10.0 for i in range(A)]
    wealth = np.random.default_rng(1).uniform(0.2, 1.0, A)
    return lp, utilities, wealth


def _units_longdouble(L, U, utilities, W):
    """Units ``x_ik`` of every agent (Table 2.4) at log-prices ``U`` in extended precision: isoelastic
    ``W_i P^g c^(1-g) / (z_i c)`` (``g = 1/eta``), exponential ``W_i + log(P/c) - sum_k c log(P/c)``."""
    L = L.astype(np.longdouble)
    U = U.astype(np.longdouble)
    c = np.exp(U)
    X = np.empty(L.shape, np.longdouble)
    for i, spec in enumerate(utilities):
        if spec == "exp":
            a = L[i] - U
            X[i] = W[i] + a - (c * a).sum()
        else:
            g = np.longdouble(1.0) / np.longdouble(spec)
            q = np.exp(g * L[i] + (1 - g) * U)
            X[i] = W[i] * q / q.sum() / c
    return X


@pytest.mark.parametrize("method", ["newton", "newton_cg"])
def test_short_sales_without_a_floor_converge_to_a_checked_equilibrium(method):
    lp, utilities, wealth = _market()
    W = wealth / wealth.sum()
    r = equilibrium(lp, utilities, wealth, method=method, floor=None)
    assert r.all_converged
    assert np.any(r.clearing_error > r.tol)  # the case of this test: above tol, at the floor
    assert r.n_iter.max() < 60  # stopped at the floor, not ground against the 100-step cap
    for j in range(lp.shape[0]):
        X = _units_longdouble(lp[j], r.log_prices[j], utilities, W)
        gross = np.abs(X).sum(axis=0).max()
        assert gross > 100  # large short positions: the case of this test
        clearing = np.abs(X.sum(axis=0) - 1).max()
        assert clearing <= 1e-10 * gross, (j, float(clearing), float(gross))
        budget = np.abs((X * np.exp(r.log_prices[j].astype(np.longdouble))).sum(axis=1) - W).max()
        assert budget < 1e-12


def test_dense_newton_and_newton_cg_agree_at_the_floor():
    lp, utilities, wealth = _market()
    a = equilibrium(lp, utilities, wealth, method="newton", floor=None)
    b = equilibrium(lp, utilities, wealth, method="newton_cg", floor=None)
    np.testing.assert_allclose(a.log_prices, b.log_prices, rtol=0, atol=1e-9)


def test_a_residual_above_the_floor_is_not_converged():
    """One Newton step from the default start is far from the answer: unconverged, as before."""
    lp, utilities, wealth = _market()
    r = equilibrium(lp, utilities, wealth, method="newton_cg", floor=None, max_iter=1)
    assert not r.converged.any()


def test_the_floor_test_is_res_below_tol_without_exponential_agents():
    """No short sales: the gross volume is not consulted; ``res <= tol`` decides, as before."""
    rng = np.random.default_rng(0)
    A, K = 4, 6
    kind = np.full(A, ISO, np.int64)
    W = np.full(A, 0.25)
    B = rng.normal(0, 100, (A, K))  # would give a huge gross volume if it were read
    T = np.exp(rng.normal(0, 1, K))
    u = np.log(T / T.sum())
    assert at_rounding_floor(0.9e-10, 1e-10, kind, W, B, T, u)
    assert not at_rounding_floor(1.1e-10, 1e-10, kind, W, B, T, u)
    assert not at_rounding_floor(np.inf, 1e-10, kind, W, B, T, u)
    assert not at_rounding_floor(np.nan, 1e-10, kind, W, B, T, u)


def test_gross_units_counts_short_positions_twice():
    """``sum_i |x_ik| = T_k / c_k + 2 sum_exp max(0, -x_ik)``, against the units summed directly."""
    rng = np.random.default_rng(2)
    A, K = 5, 7
    kind = np.array([ISO, EXP, ISO, EXP, EXP], np.int64)
    W = rng.uniform(0.1, 0.3, A)
    u = rng.normal(-2, 1, K)
    c = np.exp(u)
    X = np.where(kind[:, None] == ISO, rng.uniform(0, 3, (A, K)), rng.normal(0, 50, (A, K)))
    B = X - W[:, None]  # exponential agents: x = W + B
    T = (X * c).sum(axis=0)
    expect = np.abs(X).sum(axis=0).max()
    assert gross_units(kind, W, B, T, u) == pytest.approx(expect, rel=1e-12)
    assert at_rounding_floor(0.9e-10 * expect, 1e-10, kind, W, B, T, u)
    assert not at_rounding_floor(1.1e-10 * expect, 1e-10, kind, W, B, T, u)


def test_floored_markets_with_exponential_agents_still_reach_tol():
    """With the default floor the positions are small and Newton goes below ``tol`` itself."""
    lp, utilities, wealth = _market()
    r = equilibrium(lp, utilities, wealth)
    assert r.all_converged and r.summary()["max_clearing_error"] <= 1e-10
    assert make_agents(utilities, wealth, len(utilities)).has_exponential
