"""The compiled equilibrium check (:mod:`markets.kernels.check`) against the NumPy reference: every
agent's investment by :meth:`markets.utilities.Utility.investment` (Table 2.4, Eq. 2.31), summed."""

import numpy as np
import pytest

from markets import check_equilibrium, equilibrium, investments, make_agents
from solvers.special import logsumexp

from .conftest import random_beliefs


def _reference(lp, lc, ag):
    r = investments(lp, lc, ag)
    c = np.exp(lc)
    clear = np.max(np.abs(r.sum(axis=1) - ag.wealth.sum() * c) / c, axis=1)
    budget = np.max(np.abs(r.sum(axis=2) - ag.wealth[None, :]), axis=1)
    return clear, budget, (r < 0).sum(axis=(1, 2))


MIXES = [
    ["log", 2.0, "exp", 0.5],
    ["exp"] * 3 + [3.0] * 4,
    [2.0, 10.0, 30.0, "log"],
    [0.3, 1.0, "exp", 2, 5, "log", "exp"],
    ["exp", "exp"],
]


@pytest.mark.parametrize("mix", MIXES)
@pytest.mark.parametrize("K", [2, 17, 300])
def test_check_matches_numpy_investments_off_equilibrium(mix, K):
    """At random prices the conditions are O(1): the compiled pass equals the reference to 1e-12
    relative, and counts the same negative positions (exponential agents sell short)."""
    rng = np.random.default_rng(K + len(mix))
    A = 2 * len(mix)
    ag = make_agents([mix[i % len(mix)] for i in range(A)], rng.uniform(0.2, 1.0, A))
    lp = random_beliefs(rng, 5, A, K)
    lc = rng.normal(size=(5, K))
    lc -= logsumexp(lc, axis=1)[:, None]
    clear, budget, psum, nneg = check_equilibrium(lp, lc, ag)
    c0, b0, n0 = _reference(lp, lc, ag)
    np.testing.assert_allclose(clear, c0, rtol=1e-12)
    np.testing.assert_allclose(budget, b0, rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(nneg, n0)
    np.testing.assert_allclose(psum, np.abs(np.exp(lc).sum(axis=1) - 1.0), atol=0)
    if "exp" in mix:
        assert n0.sum() > 0  # the count is exercised


@pytest.mark.parametrize("mix", MIXES[:4])
def test_check_at_equilibrium_agrees_with_reference_at_rounding_level(mix):
    """At the solver's equilibrium both report clearing errors below the tolerance and differ by
    rounding only (the relative errors divide by prices as small as 1e-4)."""
    rng = np.random.default_rng(7)
    A, K = 3 * len(mix), 200
    ag = make_agents([mix[i % len(mix)] for i in range(A)], rng.uniform(0.2, 1.0, A))
    lp = random_beliefs(rng, 4, A, K)
    res = equilibrium(lp, ag, tol=1e-11, check=False)
    clear, budget, _, nneg = check_equilibrium(lp, res.log_prices, ag)
    c0, b0, n0 = _reference(lp, res.log_prices, ag)
    assert np.all(clear < 1e-10) and np.all(c0 < 1e-10)
    assert np.max(np.abs(clear - c0)) < 1e-11
    assert np.max(np.abs(budget - b0)) < 1e-14
    np.testing.assert_array_equal(nneg, n0)


@pytest.mark.parametrize("mix", [[2.0, "log", 10.0], [2.0, 10.0], ["log", "log"]])
def test_check_of_failed_prices_and_zero_priced_goods(mix):
    """NaN or +inf prices (a failed solve) give NaN errors and no count; a good of price zero gives
    the reference's ``x / 0``: +inf when an agent still buys it (a log agent), NaN when none does."""
    rng = np.random.default_rng(3)
    A = len(mix)
    ag = make_agents(mix, None)
    lp = random_beliefs(rng, 3, A, 6)
    lc = np.full((3, 6), -np.log(6.0))
    lc[0, 2] = np.nan
    lc[1, 4] = np.inf
    lc[2, 1] = -np.inf
    clear, budget, _, nneg = check_equilibrium(lp, lc, ag)
    assert np.isnan(clear[:2]).all() and np.isnan(budget[:2]).all() and np.all(nneg[:2] == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        c0, b0, n0 = _reference(lp[2:], lc[2:], ag)
    np.testing.assert_equal(clear[2], c0[0])
    if "log" in mix:
        assert clear[2] == np.inf
    else:
        assert np.isnan(clear[2])
    np.testing.assert_allclose(budget[2], b0[0], atol=1e-15)
    assert nneg[2] == n0[0] == 0


def test_check_of_generic_utilities_still_uses_the_reference():
    from markets.utilities import Utility

    class Sqrt(Utility):
        def value(self, w):
            return np.sqrt(w)

        def marginal(self, w):
            return 0.5 / np.sqrt(w)

        def inverse_marginal(self, y):
            return 0.25 / np.asarray(y, float) ** 2

    rng = np.random.default_rng(4)
    ag = make_agents([Sqrt(), "log", 2.0], None)
    lp = random_beliefs(rng, 2, 3, 5)
    lc = np.full((2, 5), -np.log(5.0))
    clear, budget, _, nneg = check_equilibrium(lp, lc, ag)
    c0, b0, n0 = _reference(lp, lc, ag)
    np.testing.assert_allclose(clear, c0, rtol=1e-13)
    np.testing.assert_allclose(budget, b0, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(nneg, n0)


@pytest.mark.parametrize("mix", [[2.0, "log", 10.0, "exp"], [2.0, 10.0, 30.0, "log"]])
def test_check_floors_each_row_as_floor_beliefs_does(mix):
    """``floor=``: the conditions of the beliefs floored by :func:`markets.agents.floor_beliefs` (the
    solver's floor), computed row by row in cache; the default call's check then sees what the solver
    saw and reports a cleared market."""
    from aggregators.validation import Predictions
    from markets.agents import floor_beliefs

    rng = np.random.default_rng(5)
    A, K = 2 * len(mix), 40
    ag = make_agents([mix[i % len(mix)] for i in range(A)], rng.uniform(0.2, 1.0, A))
    with np.errstate(divide="ignore"):  # some draws are exactly zero: -inf, floored like the others
        lp = random_beliefs(rng, 6, A, K, conc=0.05)  # many entries far below 1e-6
    floored = floor_beliefs(Predictions(lp), 1e-6)
    assert floored.n_floored > 100
    lc = rng.normal(size=(6, K))
    lc -= logsumexp(lc, axis=1)[:, None]
    got = check_equilibrium(lp, lc, ag, floor=1e-6)
    want = check_equilibrium(floored.log_probs, lc, ag)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(got[3], want[3])
    res = equilibrium(lp, ag, floor=1e-6)
    assert res.n_floored == floored.n_floored
    assert np.all(res.clearing_error < 1e-10) and np.all(res.budget_error < 1e-13)
