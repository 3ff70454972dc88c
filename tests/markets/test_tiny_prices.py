"""Prices below ``exp(-708)`` (beliefs that small, no floor) are not resolved by the iterative
solvers in double precision: such items are reported unconverged with a warning instead of
"converged" with a clearing error of 1 or NaN (session 44). Zero beliefs and the closed forms are
unaffected."""

import numpy as np
import pytest
from scipy.special import logsumexp

from markets import equilibrium
from markets.equilibrium import LOG_PRICE_MIN


def _deep_market(depth, K=20, A=3, seed=1):
    rng = np.random.default_rng(seed)
    lp = rng.normal(0, 2, (2, A, K))
    lp[0, :, 0] = -depth + rng.normal(0, 5, A)  # item 0: one good every agent believes in at exp(-depth)
    return lp - logsumexp(lp, axis=2, keepdims=True), np.ones(A)


@pytest.mark.parametrize("method", ["newton", "fixed_point", "anderson"])
@pytest.mark.parametrize("depth", [720.0, 760.0, 900.0])
def test_unresolvable_prices_are_reported_unconverged(method, depth):
    """Item 0 (a subnormal or zero price) is unconverged with a RuntimeWarning; item 1 (ordinary)
    converges and is left alone."""
    lp, W = _deep_market(depth)
    with pytest.warns(RuntimeWarning, match="below exp"):
        r = equilibrium(lp, [2.0, 10.0, 1.0], W, method=method, tol=1e-10, floor=None)
    assert not r.converged[0] and r.converged[1]
    assert r.clearing_error[1] < 1e-9


def test_the_same_market_a_little_higher_is_solved():
    """At ``exp(-600)`` every method converges, to the same prices, checked to 1e-9 clearing error."""
    lp, W = _deep_market(600.0)
    ref = equilibrium(lp, [2.0, 10.0, 1.0], W, method="fixed_point", tol=1e-12, floor=None)
    for method in ("newton", "anderson"):
        r = equilibrium(lp, [2.0, 10.0, 1.0], W, method=method, tol=1e-12, floor=None)
        assert r.all_converged and r.summary()["max_clearing_error"] < 1e-9
        np.testing.assert_allclose(r.log_prices, ref.log_prices, atol=1e-8)
    assert ref.all_converged and ref.log_prices[0, 0] < -590


def test_closed_form_and_zero_beliefs_are_not_flagged():
    """The all-log closed form (``log sum_i W_i P_i`` in log space) gives the deep price exactly and
    is not flagged; nor is a market where one agent gives a good zero belief (the others price it).
    (A good every agent gives zero belief is refused by the validation.)"""
    lp, W = _deep_market(900.0)
    r = equilibrium(lp, "log", W, floor=None)
    expect = logsumexp(lp + np.log(W / W.sum())[None, :, None], axis=1)
    np.testing.assert_allclose(r.log_prices, expect - logsumexp(expect, axis=1, keepdims=True), atol=1e-12)
    assert r.all_converged and r.log_prices[0, 0] < LOG_PRICE_MIN
    z = _deep_market(0.0)[0]
    z[:, 0, 3] = -np.inf
    z -= logsumexp(z, axis=2, keepdims=True)
    r = equilibrium(z, [2.0, 10.0, 1.0], W, method="newton", floor=None)
    assert r.all_converged and np.all(np.isfinite(r.log_prices)) and r.summary()["max_clearing_error"] < 1e-9
