"""The pool registry: names, estimators by name, and stateless pooling (POST /v1/aggregate)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

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


def test_unavailable_module_gives_clear_error(monkeypatch):
    from aggregators import registry

    monkeypatch.setitem(registry._CLASSES, "renyi", ("aggregators.does_not_exist", "RenyiPool"))
    with pytest.raises(PredictionError) as ei:
        make_pool("renyi")
    assert ei.value.code == "method_unavailable" and "aggregators.does_not_exist" in ei.value.reason


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
    for kw in [dict(), dict(k=2), dict(ranking=[0, 1]), dict(k=3, ranking=[0, 1]), dict(agents=[0], k=1),
               dict(agents=[4]), dict(k=2, ranking=[0, 0, 1])]:
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
    for method, kw in [("bma", {}), ("power_bma", dict(log_evidence=[0.0] * 4)), ("bma", dict(log_evidence=[0.0])),
                       ("bma", dict(log_evidence=[0.0] * 4, alpha=2.0)), ("power_bma", dict(log_evidence=[0] * 4,
                                                                                            alpha=-1))]:
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
