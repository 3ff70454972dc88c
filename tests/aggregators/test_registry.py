"""The pool registry: names, estimators by name, and stateless pooling (POST /v1/aggregate)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aggregators
from aggregators import BMA, POOL_METHODS, PowerBMA, SimpleAverage, TopKAverage, aggregate, make_pool, simple_average
from aggregators.registry import pool_class
from aggregators.validation import PredictionError

from .test_average import make_agents


def test_names_are_the_agreed_ones():
    assert POOL_METHODS == ("average", "topk", "bma", "power_bma", "linear", "log", "renyi")


def test_make_pool_simple_methods():
    assert isinstance(make_pool("average"), SimpleAverage)
    t = make_pool("topk", k=2)
    assert isinstance(t, TopKAverage) and t.k == 2
    assert isinstance(make_pool("bma"), BMA)
    assert make_pool("power_bma", alpha=0.1).alpha == 0.1 and isinstance(make_pool("power_bma"), PowerBMA)


def test_make_pool_errors_name_the_problem():
    with pytest.raises(PredictionError) as ei:
        make_pool("median")
    assert ei.value.code == "unknown_method" and "renyi" in ei.value.reason
    with pytest.raises(PredictionError) as ei:
        make_pool("topk", gamma=0.5)
    assert ei.value.code == "unknown_parameter" and "gamma" in ei.value.reason


def test_a_broken_pool_module_is_a_bug_not_bad_input(monkeypatch):
    """The registry imports its own modules plainly: an import error is the library's bug and
    propagates as itself (never an input error that the API would turn into a 422)."""
    from aggregators import registry

    monkeypatch.setitem(registry._CLASSES, "renyi", ("aggregators.does_not_exist", "RenyiPool"))
    with pytest.raises(ModuleNotFoundError, match="aggregators.does_not_exist") as ei:
        make_pool("renyi")
    assert not isinstance(ei.value, PredictionError)


def test_stateless_average_and_info():
    lp, _ = make_agents(n=10, a=3)
    out, info = aggregate("average", np.exp(lp), kind="probs")
    np.testing.assert_allclose(out, simple_average(lp), atol=1e-12)
    json.dumps(info)
    assert info["n_floored"] == 0 and info["floor"] is None and info["weights"] == [1 / 3] * 3
    assert (info["n_items"], info["n_agents"], info["n_classes"]) == (10, 3, 5)
    with pytest.raises(PredictionError) as ei:
        aggregate("average", lp, weights=[1, 2, 3])
    assert ei.value.field == "weights"


def test_stateless_topk():
    lp, _ = make_agents(n=10, a=4)
    out, info = aggregate("topk", lp, agents=[3, 1])
    np.testing.assert_allclose(out, simple_average(lp, [1, 3]), atol=1e-12)
    assert info["weights"] == [0.0, 0.5, 0.0, 0.5] and info["agents"] == [3, 1]
    out2, info2 = aggregate("topk", lp, k=2, ranking=[3, 1, 0, 2])
    np.testing.assert_allclose(out2, out, atol=1e-14)
    for kw in [
        dict(),
        dict(k=2),
        dict(ranking=[0, 1]),
        dict(k=3, ranking=[0, 1]),
        dict(agents=[0], k=1),
        dict(agents=[4]),
        dict(k=2, ranking=[0, 0, 1]),
    ]:
        with pytest.raises(PredictionError):
            aggregate("topk", lp, **kw)


def test_stateless_bma_equals_fitted_estimator():
    lp, y = make_agents(n=60, a=4)
    est = PowerBMA(alpha=0.05).fit(lp, y)
    out, info = aggregate("power_bma", lp, log_evidence=est.log_evidence_, alpha=0.05)
    np.testing.assert_allclose(out, est.predict(lp), atol=1e-12)
    np.testing.assert_allclose(info["weights"], est.weights_, atol=1e-12)
    b = BMA().fit(lp, y)
    out_b, _ = aggregate("bma", lp, log_evidence=b.log_evidence_.tolist())
    np.testing.assert_allclose(out_b, b.predict(lp), atol=1e-12)
    for method, kw in [
        ("bma", {}),
        ("power_bma", dict(log_evidence=[0.0] * 4)),
        ("bma", dict(log_evidence=[0.0])),
        ("bma", dict(log_evidence=[0.0] * 4, alpha=2.0)),
        ("power_bma", dict(log_evidence=[0] * 4, alpha=-1)),
    ]:
        with pytest.raises(PredictionError):
            aggregate(method, lp, **kw)


def test_stateless_rejects_bad_input_with_location():
    lp, _ = make_agents(n=4, a=2)
    lp[3, 1, 0] = np.nan
    with pytest.raises(PredictionError) as ei:
        aggregate("average", lp)
    assert (ei.value.item, ei.value.agent, ei.value.code) == (3, 1, "nan")
    with pytest.raises(PredictionError):
        aggregate("nope", lp)


def test_lazy_names_on_the_package():
    with pytest.raises(AttributeError):
        aggregators.NoSuchPool  # noqa: B018


# -- the learnt pools (aggregators.linear / logpool / renyi) -------------------------------------------
def test_make_pool_learnt_methods():
    from aggregators.linear import LinearPool
    from aggregators.logpool import LogPool
    from aggregators.renyi import RenyiPool

    assert isinstance(make_pool("linear"), LinearPool)
    assert isinstance(make_pool("log"), LogPool)
    r = make_pool("renyi", gamma=0.25)
    assert isinstance(r, RenyiPool) and r.gamma == 0.25
    assert pool_class("renyi") is RenyiPool and aggregators.RenyiPool is RenyiPool


def _with_zeros(seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(5), size=(6, 3))
    p[0, 1] = [0.5, 0.5, 0.0, 0.0, 0.0]
    p[4, 2, 3] = 0.0
    return p / p.sum(axis=2, keepdims=True)


def test_stateless_linear_and_log_against_numpy():
    p = _with_zeros()
    w = np.array([2.0, 1.0, 1.0])  # rescaled onto the simplex
    out, info = aggregate("linear", p, kind="probs", weights=w)
    np.testing.assert_allclose(np.exp(out), np.einsum("i,nik->nk", w / 4, p), atol=1e-14)
    assert info["n_floored"] == 0 and info["floor"] is None and info["weights"] == [0.5, 0.25, 0.25]
    out, info = aggregate("log", p, kind="probs", weights=w, floor=1e-6)
    assert info["n_floored"] == 4 and info["floor"] == 1e-6
    pf = np.exp(aggregators.apply_floor(aggregators.as_log_probs(p, kind="probs"), 1e-6).log_probs)
    ref = np.exp(np.einsum("i,nik->nk", w / 4, np.log(pf)))
    np.testing.assert_allclose(np.exp(out), ref / ref.sum(1, keepdims=True), atol=1e-13)
    with pytest.raises(PredictionError) as ei:
        aggregate("log", p, kind="probs", floor=None)
    assert ei.value.code == "zero_probability" and (ei.value.item, ei.value.agent) == (0, 1)
    for bad in [[1, 1], [-1, 1, 1], [0, 0, 0], [np.nan, 1, 1]]:
        with pytest.raises(PredictionError) as ei:
            aggregate("linear", p, kind="probs", weights=bad)
        assert ei.value.field == "weights"


def test_stateless_renyi_limits_and_errors():
    p = _with_zeros(1)
    w = [0.2, 0.3, 0.5]
    lin, _ = aggregate("linear", p, kind="probs", weights=w)
    out1, info = aggregate("renyi", p, kind="probs", weights=w, gamma=1.0)
    # gamma = 1 is the linear pool of the *floored* beliefs (floor 1e-9 moves mass by ~1e-9)
    np.testing.assert_allclose(np.exp(out1), np.exp(lin), atol=1e-8)
    assert info["n_floored"] == 4 and info["gamma"] == 1.0
    logp, _ = aggregate("log", p, kind="probs", weights=w)
    out0, _ = aggregate("renyi", p, kind="probs", weights=w, gamma=1e-7)
    np.testing.assert_allclose(np.exp(out0), np.exp(logp), atol=1e-4)  # gamma -> 0 is the log pool
    with pytest.raises(PredictionError) as ei:
        aggregate("renyi", p, kind="probs")
    assert ei.value.field == "gamma"
    with pytest.raises(PredictionError):
        aggregate("renyi", p, kind="probs", gamma=1.5)
    with pytest.raises(PredictionError):
        aggregate("log", p, kind="probs", gamma=0.5)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(POOL_METHODS))
def test_every_stateless_pool_is_normalised(seed, method):
    rng = np.random.default_rng(seed)
    n, a, k = rng.integers(1, 4), rng.integers(1, 4), rng.integers(2, 6)
    p = rng.dirichlet(np.full(k, 0.5), size=(n, a))
    p[rng.random(p.shape) < 0.2] = 0.0
    p[..., 0] += p.sum(axis=2) == 0
    p /= p.sum(axis=2, keepdims=True)
    kw = {
        "topk": dict(agents=[0]),
        "bma": dict(log_evidence=rng.normal(size=a) * 10),
        "power_bma": dict(log_evidence=rng.normal(size=a) * 10, alpha=0.3),
        "linear": dict(weights=rng.random(a) + 0.01),
        "log": dict(weights=rng.random(a) + 0.01),
        "renyi": dict(weights=rng.random(a) + 0.01, gamma=float(rng.uniform(0.01, 1.0))),
    }.get(method, {})
    out, info = aggregate(method, p, kind="probs", **kw)
    assert out.shape == (n, k)
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, atol=1e-9)
    assert not np.isnan(out).any()
    np.testing.assert_allclose(sum(info["weights"]), 1.0, atol=1e-12)
    json.dumps(info)
