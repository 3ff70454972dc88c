"""Property tests (hypothesis): random markets clear, spend their wealth, and conserve it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from markets import equilibrium, train_market

utility = st.one_of(st.just("log"), st.just("exp"), st.floats(min_value=0.3, max_value=50.0, allow_nan=False))


@st.composite
def markets(draw):
    A = draw(st.integers(2, 6))
    K = draw(st.integers(2, 7))
    n = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    conc = draw(st.floats(0.1, 5.0))
    rng = np.random.default_rng(seed)
    lp = np.log(np.clip(rng.dirichlet(np.full(K, conc), size=(n, A)), 1e-12, None))
    utils = draw(st.lists(utility, min_size=A, max_size=A))
    W = np.array(draw(st.lists(st.floats(0.01, 10.0), min_size=A, max_size=A)))
    y = rng.integers(0, K, n)
    return lp, utils, W, y


@settings(max_examples=40, deadline=None)
@given(markets())
def test_random_markets_clear(m):
    lp, utils, W, _ = m
    res = equilibrium(lp, utils, W)
    s = res.summary()
    assert s["all_converged"]
    assert s["max_clearing_error"] <= 1e-9
    assert s["max_budget_error"] <= 1e-12
    assert s["max_price_sum_error"] <= 1e-12


@settings(max_examples=20, deadline=None)
@given(markets(), st.sampled_from(["online", "batch"]))
def test_random_markets_conserve_wealth(m, mode):
    lp, utils, W, y = m
    res = train_market(lp, y, utils, W, mode=mode, batch_size=2, max_epochs=2, wealth_tol=0, record_steps=True)
    scale = max(1.0, float(np.abs(res.step_history).max()))
    assert np.max(np.abs(res.step_history.sum(axis=1) - 1.0)) <= 1e-13 * scale
    assert res.all_equilibria_converged
    iso = np.array([u != "exp" for u in utils])
    assert (res.step_history[:, iso] >= 0).all()


@st.composite
def eta2_markets(draw):
    """eta = 2 markets of any shape the Gram path takes or declines (A up to 40, K up to 300), with
    concentrated or flat beliefs and wealth over four orders of magnitude."""
    A = draw(st.integers(2, 40))
    K = draw(st.integers(2, 300))
    n = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    conc = draw(st.floats(0.05, 5.0))
    lp = np.log(np.clip(rng.dirichlet(np.full(K, conc), size=(n, A)), 1e-300, None))
    W = 10.0 ** rng.uniform(-4, 0, A)
    return lp, W


@settings(max_examples=40, deadline=None)
@given(eta2_markets())
def test_eta_2_markets_clear_by_gram_as_by_the_fixed_point(m):
    """``method="gram"`` (the scaling of the agents' Gram matrix) clears every eta = 2 market to the
    tolerance and gives the seed's fixed point's prices."""
    lp, W = m
    got = equilibrium(lp, 2.0, W, method="gram")
    ref = equilibrium(lp, 2.0, W, method="fixed_point", tol=1e-12)
    assert got.summary()["all_converged"] and got.summary()["max_clearing_error"] <= 1e-10
    assert got.summary()["max_budget_error"] <= 1e-12
    np.testing.assert_allclose(got.log_prices, ref.log_prices, atol=1e-9)
