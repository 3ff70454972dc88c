"""``sample_weight`` in market training (train_market, MarketPool.fit): integer weights train as the
items repeated, weight 0 as the item left out, bad weights raise InputError naming the field."""

import numpy as np
import pytest

from markets import MarketPool, train_market
from solvers.errors import InputError

from .conftest import random_beliefs


def _data(rng, n=40, a=4, k=3):
    lp = random_beliefs(rng, n, a, k, 0.7)
    truth = np.exp(0.6 * lp[:, 0] + 0.4 * lp[:, 1])
    truth /= truth.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in truth])
    c = rng.integers(0, 4, size=n)
    c[:2] = [0, 2]
    return lp, y, c


@pytest.mark.parametrize(
    "utilities, mode",
    [("log", "batch"), ("log", "online"), ([0.5, 1.0, 2.0, 3.0], "batch"), ([0.5, 1.0, 2.0, 3.0], "online")],
)
def test_integer_weights_train_as_repeated_items(utilities, mode, rng):
    lp, y, c = _data(rng, n=8 if mode == "online" else 40)  # online Bayes concentrates fast: few items
    rep = np.repeat(np.arange(len(y)), c)
    # a fixed number of epochs (wealth_tol=0): the equivalence holds epoch by epoch
    kw = dict(mode=mode, max_epochs=1 if mode == "online" else 15, wealth_tol=0.0, floor=None)
    w = train_market(lp, y, utilities, sample_weight=c, **kw)
    r = train_market(lp[rep], y[rep], utilities, **kw)
    np.testing.assert_allclose(w.wealth, r.wealth, rtol=0, atol=1e-10)
    unweighted = train_market(lp, y, utilities, **kw)
    assert np.abs(unweighted.wealth - w.wealth).max() > 1e-6
    assert w.conservation_error < 1e-12


def test_batch_weights_may_be_fractional_and_scale_free(rng):
    lp, y, c = _data(rng)
    a = train_market(lp, y, "log", sample_weight=c, wealth_tol=0.0, max_epochs=50, floor=None)
    b = train_market(lp, y, "log", sample_weight=0.25 * c, wealth_tol=0.0, max_epochs=50, floor=None)
    np.testing.assert_allclose(a.wealth, b.wealth, rtol=0, atol=1e-12)


def test_market_pool_fit_takes_sample_weight(rng):
    lp, y, c = _data(rng)
    keep = c > 0
    a = MarketPool(utilities="log", max_epochs=50, wealth_tol=0.0).fit(lp, y, sample_weight=keep.astype(float))
    b = MarketPool(utilities="log", max_epochs=50, wealth_tol=0.0).fit(lp[keep], y[keep])
    np.testing.assert_allclose(a.wealth_, b.wealth_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("bad, mode", [(-1.0, "batch"), (np.nan, "batch"), ("short", "batch"), (0.5, "online")])
def test_bad_weights_raise(bad, mode, rng):
    lp, y, _ = _data(rng)
    sw = np.ones(len(y) - 1) if bad == "short" else np.r_[bad, np.ones(len(y) - 1)]
    with pytest.raises(InputError) as e:
        train_market(lp, y, "log", sample_weight=sw, mode=mode)
    assert e.value.field == "sample_weight"
