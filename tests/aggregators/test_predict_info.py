"""Predicting does not change a pool: what a prediction learns about its input (the floor count)
is returned by ``predict_with_info``, so one fitted pool can be shared by threads (as the service's
pool cache shares it)."""

import threading

import numpy as np

from aggregators import PredictInfo
from aggregators.logpool import LogPool
from aggregators.registry import POOL_METHODS, make_pool


def _data(seed, n=40, A=3, K=4, n_zeros=0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, A, K))
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    lp[:n_zeros, 0, 0] = -np.inf  # zero probabilities, one in each of the first n_zeros items
    return lp, rng.integers(0, K, n)


def test_predict_with_info_returns_the_floor_count_and_leaves_the_pool_unchanged():
    lp, y = _data(0)
    pool = LogPool().fit(lp, y)
    before = dict(vars(pool))
    zeros, _ = _data(1, n_zeros=7)
    agg, info = pool.predict_with_info(zeros)
    assert isinstance(info, PredictInfo) and info.n_floored == 7
    np.testing.assert_array_equal(agg, pool.predict(zeros))
    assert vars(pool).keys() == before.keys()
    assert not any(k.endswith("_predict_") for k in vars(pool))


def test_every_registered_pool_predicts_without_changing_itself():
    lp, y = _data(2)
    zeros, _ = _data(3, n_zeros=5)
    for method in POOL_METHODS:
        params = {"gamma": 0.5} if method == "renyi" else {}
        pool = make_pool(method, **params).fit(lp, y)
        keys = set(vars(pool))
        agg, info = pool.predict_with_info(zeros)
        assert set(vars(pool)) == keys, method
        assert info.n_floored == (5 if pool.needs_positive else 0), method
        np.testing.assert_array_equal(agg, pool.predict(zeros))


def test_two_threads_sharing_one_pool_get_their_own_floor_counts():
    lp, y = _data(4)
    pool = LogPool().fit(lp, y)
    inputs = {"none": _data(5)[0], "many": _data(6, n_zeros=31)[0]}
    expected = {"none": 0, "many": 31}
    barrier = threading.Barrier(2)
    seen: dict[str, list[int]] = {"none": [], "many": []}

    def work(name):
        for _ in range(200):
            barrier.wait()  # both threads predict at the same moment, every round
            _, info = pool.predict_with_info(inputs[name])
            seen[name].append(info.n_floored)

    threads = [threading.Thread(target=work, args=(name,)) for name in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in inputs:
        assert seen[name] == [expected[name]] * 200, name
