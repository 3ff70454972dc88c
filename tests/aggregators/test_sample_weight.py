"""``sample_weight`` in every pool's fit (scikit-learn's convention): integer weights fit as the
data with items repeated, weight 0 as the data without the item, bad weights raise InputError; and
the counted form of unconditional data fits as the full data."""

import numpy as np
import pytest

from aggregators.average import TopKAverage
from aggregators.bma import BMA, PowerBMA
from aggregators.counted import collapse_unconditional, counted_items
from aggregators.linear import LinearPool
from aggregators.logpool import LogPool
from aggregators.renyi_pool import RenyiPool
from solvers.errors import InputError

from .test_logpool import _agents


def _data(seed=0, N=60, A=5, K=4):
    lp, y = _agents(seed, N, A, K)
    counts = np.random.default_rng(seed + 100).integers(0, 4, size=N)
    counts[:3] = [0, 3, 1]
    return lp, y, counts


POOLS = [
    ("linear-em", lambda: LinearPool(tol=1e-13)),
    ("linear-newton", lambda: LinearPool(solver="newton", tol=1e-13)),
    ("log-newton", lambda: LogPool(tol=1e-14)),
    ("log-lbfgs", lambda: LogPool(solver="lbfgs", tol=1e-14)),
    ("renyi", lambda: RenyiPool(gamma=0.3, tol=1e-12, max_iter=3000)),
    ("bma", BMA),
    ("power-bma", lambda: PowerBMA(alpha=0.05)),
    ("topk", lambda: TopKAverage(k=2)),
]


def _learnt(pool):
    return np.asarray(pool.weights_)


@pytest.mark.parametrize("name, make", POOLS, ids=[p[0] for p in POOLS])
def test_integer_weights_equal_repetition(name, make):
    lp, y, counts = _data()
    rep = np.repeat(np.arange(len(y)), counts)
    weighted = make().fit(lp, y, sample_weight=counts)
    repeated = make().fit(lp[rep], y[rep])
    tol = 1e-6 if name in ("renyi", "log-lbfgs", "linear-newton") else 1e-8
    np.testing.assert_allclose(_learnt(weighted), _learnt(repeated), rtol=0, atol=tol)
    # the weights are not those of the unweighted fit (the test can fail)
    if name not in ("bma",):
        assert np.abs(_learnt(make().fit(lp, y)) - _learnt(weighted)).max() > 10 * tol
    # predictions agree too
    np.testing.assert_allclose(weighted.predict(lp), repeated.predict(lp), rtol=0, atol=max(tol, 1e-8) * 100)


@pytest.mark.parametrize("name, make", POOLS, ids=[p[0] for p in POOLS])
def test_zero_weight_equals_dropping(name, make):
    lp, y, _ = _data(seed=1)
    sw = np.ones(len(y))
    sw[::3] = 0.0
    keep = sw > 0
    a = make().fit(lp, y, sample_weight=sw)
    b = make().fit(lp[keep], y[keep])
    tol = 1e-6 if name in ("renyi", "log-lbfgs", "linear-newton") else 1e-8
    np.testing.assert_allclose(_learnt(a), _learnt(b), rtol=0, atol=tol)


def test_weights_equal_in_fit_of_scaled_weights():
    lp, y, counts = _data(seed=2)
    a = LogPool(tol=1e-14).fit(lp, y, sample_weight=counts)
    b = LogPool(tol=1e-14).fit(lp, y, sample_weight=0.1 * counts)
    np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-8)


def test_zero_weight_item_with_zero_probability_is_ignored_by_the_linear_pool():
    lp, y, _ = _data(seed=3)
    lp = lp.copy()
    lp[0, :, y[0]] = -np.inf  # every agent rules out item 0's label: infinite loss unless it weighs 0
    lp[0] -= np.log(np.exp(lp[0]).sum(axis=1, keepdims=True))
    sw = np.ones(len(y))
    sw[0] = 0.0
    a = LinearPool(tol=1e-13).fit(lp, y, sample_weight=sw)
    b = LinearPool(tol=1e-13).fit(lp[1:], y[1:])
    np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-8)
    with pytest.raises(InputError):
        LinearPool().fit(lp, y)


@pytest.mark.parametrize(
    "bad, code",
    [
        (lambda n: -np.ones(n), "negative"),
        (lambda n: np.r_[np.nan, np.ones(n - 1)], "nan"),
        (lambda n: np.r_[np.inf, np.ones(n - 1)], "nan"),
        (lambda n: np.ones(n + 1), "shape_mismatch"),
        (lambda n: np.ones((n, 1)), "shape_mismatch"),
        (lambda n: np.zeros(n), "bad_weights"),
        (lambda n: ["a"] * n, "bad_weights"),
    ],
)
@pytest.mark.parametrize("name, make", POOLS[::2], ids=[p[0] for p in POOLS[::2]])
def test_bad_weights_raise_naming_sample_weight(name, make, bad, code):
    lp, y, _ = _data()
    with pytest.raises(InputError) as e:
        make().fit(lp, y, sample_weight=bad(len(y)))
    assert e.value.field == "sample_weight"
    assert e.value.code == code


@pytest.mark.parametrize("name, make", POOLS, ids=[p[0] for p in POOLS])
def test_counted_unconditional_fit_equals_full_fit(name, make):
    rng = np.random.default_rng(4)
    A, K, N = 4, 6, 500
    lb = rng.normal(size=(A, K)) * rng.uniform(0.5, 3, size=(A, 1))
    lb -= np.log(np.exp(lb).sum(axis=1, keepdims=True))
    y = rng.choice(K, size=N, p=np.exp(0.7 * lb[0] + 0.3 * lb[1]) / np.exp(0.7 * lb[0] + 0.3 * lb[1]).sum())
    full_lp = np.broadcast_to(lb, (N, A, K)).copy()
    full = make().fit(full_lp, y)
    counted = make().fit(*collapse_unconditional(full_lp, y)[:2], sample_weight=collapse_unconditional(full_lp, y)[2])
    tol = 1e-6 if name in ("renyi", "log-lbfgs", "linear-newton") else 1e-8
    np.testing.assert_allclose(_learnt(counted), _learnt(full), rtol=0, atol=tol)
    lp_c, y_c, c = counted_items(lb, np.bincount(y, minlength=K))
    assert lp_c.shape[0] == np.count_nonzero(np.bincount(y, minlength=K)) and c.sum() == N
    np.testing.assert_allclose(_learnt(make().fit(lp_c, y_c, sample_weight=c)), _learnt(full), rtol=0, atol=tol)


def test_collapse_rejects_conditional_data():
    lp, y, _ = _data()
    with pytest.raises(InputError) as e:
        collapse_unconditional(lp, y)
    assert e.value.field == "predictions" and e.value.item == 1


def test_counted_items_checks_counts():
    lb = np.log(np.full((2, 3), 1 / 3))
    for bad in ([1, 2], [-1, 1, 1], [0, 0, 0], [np.nan, 1, 1]):
        with pytest.raises(InputError) as e:
            counted_items(lb, bad)
        assert e.value.field == "counts"
