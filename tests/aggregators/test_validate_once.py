"""``predict`` validates its input once: the pools hand the validated :class:`Predictions` to their
aggregates instead of the bare array (which the aggregate validated and copied again: two passes and
two copies of the input per Rényi prediction, measured in session 12 as half a 2,000 × 269 × 64
prediction's time). A :class:`Predictions` passed in is not validated again either, so a sweep can
validate its items once and predict them at every γ."""

from __future__ import annotations

import numpy as np
import pytest

import aggregators.validation as V
import aggregators.validation_kernels as vk
from aggregators import BMA, LinearPool, LogPool, RenyiPool, SimpleAverage, TopKAverage
from aggregators.validation import FAST_PATH_MIN_SIZE, apply_floor, as_floored_log_probs, as_log_probs

POOLS = {
    "average": SimpleAverage,
    "topk": lambda: TopKAverage(k=2),
    "bma": BMA,
    "linear": LinearPool,
    "log": LogPool,
    "renyi": lambda: RenyiPool(gamma=0.3),
}


@pytest.fixture
def passes(monkeypatch):
    """Counts the compiled validation passes over the data (normalise; normalise + floor) at their
    two Python entry points. (Never replace a compiled kernel in its module: a compiled caller that
    is compiled meanwhile resolves the replacement, fails, or is cached wrong.)"""
    count = {"n": 0}
    for module, name in ((vk, "normalise_log_rows"), (V, "_floor_compiled")):
        original = getattr(module, name)

        def counted(*a, _f=original, **kw):
            count["n"] += 1
            return _f(*a, **kw)

        monkeypatch.setattr(module, name, counted)
    return count


def _data(seed: int, n: int, a: int = 6, k: int = 16):
    rng = np.random.default_rng(seed)
    lp = np.log(rng.dirichlet(np.full(k, 0.7), size=(n, a))) + rng.normal(0, 2, size=(n, a, 1))  # unnormalised
    return lp, rng.integers(0, k, n)


@pytest.mark.parametrize("name", POOLS)
def test_predict_makes_one_validation_pass_and_a_validated_input_none(name, passes):
    n = FAST_PATH_MIN_SIZE // (6 * 16) + 50  # large enough for the compiled path
    lp, y = _data(1, n)
    pool = POOLS[name]().fit(lp[:200], y[:200])
    passes["n"] = 0
    out = pool.predict(lp)
    assert passes["n"] == 1
    pre = as_floored_log_probs(lp, floor=pool.floor) if pool.needs_positive else as_log_probs(lp)
    passes["n"] = 0
    again = pool.predict(pre)
    assert passes["n"] == 0
    np.testing.assert_array_equal(again, out)
    score = pool.score(lp, y)  # one pass (it validated, then floored, in two before)
    assert passes["n"] == 1
    assert score == pytest.approx(float(out[np.arange(n), y].mean()), rel=1e-12)
    prepared = pool.prepare(lp)  # once: then fit, score and predict take it as it is
    np.testing.assert_array_equal(prepared.log_probs, pre.log_probs)
    passes["n"] = 0
    refit = POOLS[name]().fit(prepared, y)
    refit.score(prepared, y)
    refit.predict(prepared)
    assert passes["n"] == 0
    # and the result is the aggregate of the validated data (exp rows sum to one)
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, atol=1e-12)


def test_flooring_floored_data_again_is_free_and_changes_nothing(passes):
    lp, _ = _data(2, FAST_PATH_MIN_SIZE // 96 + 10)
    lp[0, 0, 0] = -np.inf  # one zero probability: floored
    once = as_floored_log_probs(lp, floor=1e-6)
    assert once.n_floored >= 1 and passes["n"] == 1
    again = apply_floor(once, 1e-7)  # a lower floor: nothing is below it
    assert again.log_probs is once.log_probs and again.n_floored == 0 and passes["n"] == 1
    assert apply_floor(once, None) is once  # floored data holds no zero: no check pass
    higher = apply_floor(once, 1e-3)  # a higher floor does change entries
    assert higher.n_floored > 0 and higher.floor == 1e-3
    assert np.exp(higher.log_probs).min() >= 1e-3 * (1 - 1e-12)


@pytest.mark.parametrize("method", ["log", "renyi", "linear", "average"])
def test_the_registry_aggregate_makes_one_validation_pass(method, passes):
    from aggregators.registry import aggregate

    lp, _ = _data(3, FAST_PATH_MIN_SIZE // 96 + 10)
    w = np.full(6, 1 / 6)
    kw = {"gamma": 0.5} if method == "renyi" else {}
    agg, info = aggregate(method, lp, weights=None if method == "average" else w, **kw)
    assert passes["n"] == 1
    assert info["floor"] == (1e-9 if method in ("log", "renyi") else None)
    np.testing.assert_allclose(np.exp(agg).sum(axis=1), 1.0, atol=1e-12)
