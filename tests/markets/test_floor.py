"""The market's probability floor (:mod:`markets.kernels.floor`) against the pools' rule
(:func:`aggregators.validation.apply_floor`): same entries floored, same beliefs to rounding."""

import numpy as np
import pytest

from aggregators.validation import Predictions, apply_floor, as_log_probs
from markets import equilibrium
from markets.agents import floor_beliefs

from .conftest import random_beliefs


@pytest.mark.parametrize("conc", [0.01, 0.1, 1.0])
@pytest.mark.parametrize("floor", [1e-9, 1e-4, 0.02])
def test_floor_matches_apply_floor(rng, conc, floor):
    """Sparse Dirichlet rows (many entries below the floor, several rounds of the rule at the
    large floors), exact zeros and rows with nothing to floor."""
    lp = random_beliefs(rng, 40, 6, 12, conc)
    lp[0, 1, 3] = -np.inf
    lp[2, :, 0] = -np.inf
    preds = as_log_probs(lp)
    ref = apply_floor(preds, floor)
    got = floor_beliefs(preds, floor)
    assert got.n_floored == ref.n_floored > 0 and got.floor == ref.floor
    np.testing.assert_allclose(got.log_probs, ref.log_probs, rtol=0, atol=1e-13)
    assert np.all(got.log_probs >= np.log(floor) - 1e-15)
    np.testing.assert_allclose(np.exp(got.log_probs).sum(axis=2), 1.0, atol=1e-14)
    assert np.array_equal(preds.log_probs, as_log_probs(lp).log_probs)  # the input is not written


def test_nothing_below_the_floor_is_not_copied(rng):
    preds = as_log_probs(random_beliefs(rng, 10, 3, 5, conc=50.0))
    got = floor_beliefs(preds, 1e-9)
    assert got.n_floored == 0 and got.log_probs is preds.log_probs


def test_equilibrium_reports_the_floor_count(rng):
    lp = random_beliefs(rng, 30, 4, 8, conc=0.05)
    ref = apply_floor(as_log_probs(lp), 1e-6)
    res = equilibrium(lp, 3.0, method="newton", floor=1e-6, tol=1e-12)
    exact = equilibrium(Predictions(ref.log_probs), 3.0, method="newton", floor=None, tol=1e-12)
    assert res.n_floored == ref.n_floored > 0
    np.testing.assert_allclose(res.log_prices, exact.log_prices, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["newton", "newton_cg", "fixed_point", "anderson"])
def test_fused_floor_in_the_one_order_driver(rng, method):
    """One-order markets floor each item inside the parallel driver: same prices and count as
    solving the beliefs floored first by ``apply_floor`` (1e-10), with and without the check."""
    lp = random_beliefs(rng, 25, 5, 9, conc=0.05)
    lp[3, 2, :4] = -np.inf
    ref = apply_floor(as_log_probs(lp), 1e-6)
    W = rng.uniform(0.5, 2.0, 5)
    exact = equilibrium(Predictions(ref.log_probs), 4.0, W, method=method, floor=None, tol=1e-12)
    for check in (True, False):
        res = equilibrium(lp, 4.0, W, method=method, floor=1e-6, tol=1e-12, check=check)
        assert res.n_floored == ref.n_floored > 0 and res.all_converged
        np.testing.assert_allclose(res.log_prices, exact.log_prices, rtol=0, atol=1e-10)
    assert res.summary()["max_clearing_error"] <= 1e-12


GENERAL_MARKETS = {
    "iso_log": ([2.0, "log", 10.0, 30.0, "log"], ["newton", "newton_cg", "fixed_point", "anderson"]),
    "exp_iso": (["exp", 10.0, 2.0, "exp", 3.0], ["newton", "newton_cg"]),
    "all_log": ("log", ["auto", "closed_form", "newton", "fixed_point"]),
    "all_exp": ("exp", ["newton", "newton_cg"]),
}


@pytest.mark.parametrize("market", list(GENERAL_MARKETS))
def test_fused_floor_on_the_general_path(rng, market):
    """Mixed markets (the general kernels ``solve_items``) and the all-logarithmic closed form
    (``start_prices``) floor each item inside their parallel loop too: same prices (1e-10) and
    count as solving the beliefs floored first by ``apply_floor``, with and without the check."""
    utils, methods = GENERAL_MARKETS[market]
    lp = random_beliefs(rng, 25, 5, 9, conc=0.05)
    lp[3, 2, :4] = -np.inf
    ref = apply_floor(as_log_probs(lp), 1e-6)
    W = rng.uniform(0.5, 2.0, 5)
    for method in methods:
        exact = equilibrium(Predictions(ref.log_probs), utils, W, method=method, floor=None, tol=1e-12)
        for check in (True, False):
            res = equilibrium(lp, utils, W, method=method, floor=1e-6, tol=1e-12, check=check)
            assert res.n_floored == ref.n_floored > 0 and res.all_converged, method
            np.testing.assert_allclose(res.log_prices, exact.log_prices, rtol=0, atol=1e-10)
        assert res.summary()["max_clearing_error"] <= 1e-11, method


@pytest.mark.parametrize("floor", [0.0, 1e-9, 1e-3])
def test_floor_with_powers_is_the_floor_then_the_powers_bit_for_bit(rng, floor):
    """:func:`markets.kernels.floor.floor_powers_item` (the general path's fused floor and powers) gives
    exactly :func:`floor_item` (or the copy, without a floor) then :func:`markets.kernels.potential.powers`,
    with an exponential agent, whose row of powers it must leave alone."""
    from markets.kernels.floor import floor_item, floor_powers_item
    from markets.kernels.potential import ISO, powers

    lp = np.ascontiguousarray(as_log_probs(random_beliefs(rng, 1, 7, 40, 0.05)).log_probs[0])
    kind = np.array([ISO, ISO, 0, ISO, ISO, ISO, ISO], np.int64)
    inv_eta = np.array([1.0, 0.5, 0.0, 0.1, 1 / 30, 0.77, 1.0])
    e = np.empty(40)
    ref = lp.copy()
    n_ref = floor_item(lp, ref, floor, e) if floor > 0 else 0
    pg_ref = np.full((7, 40), -1.0)
    powers(ref, kind, inv_eta, pg_ref)
    out = np.empty_like(lp)
    pg = np.full((7, 40), -1.0)
    n = floor_powers_item(lp, out, floor, e, kind, inv_eta, pg)
    assert n == n_ref and (floor == 0.0 or n > 0)
    assert np.array_equal(out, ref) and np.array_equal(pg, pg_ref)
    assert np.all(pg[2] == -1.0)
