"""The weight posterior through the pool API: POST /v1/pools with ``posterior`` runs the fit and the
sampler as a job with progress, the pool shows the credible intervals, and predict can pool with the
posterior-predictive aggregate. The numbers are the library's (evaluation.weight_posterior) on the
same data and seed; bad requests are 422 naming the field."""

from __future__ import annotations

import time

import numpy as np
import pytest

from aggregators.registry import make_pool
from evaluation.weight_posterior import fit_posterior, predict_posterior

POST = {"samples": 300, "seed": 3, "options": {"n_leapfrog": 5}}


def _data(seed=0, n=200, k=3):
    """Three agents: a sharp good one, a blurred copy of it and pure noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    good = np.full((n, k), 0.1 / (k - 1))
    good[np.arange(n), y] = 0.9
    good = 0.85 * good + 0.15 * rng.dirichlet(np.ones(k), n)
    blur = 0.5 * good + 0.5 / k
    noise = rng.dirichlet(np.ones(k), n)
    return np.stack([good, blur, noise], axis=1), y


def _wait(client, loc, timeout=120.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        j = client.get(loc).json()
        if j["state"] in ("succeeded", "failed", "cancelled"):
            return j
        time.sleep(0.1)
    raise AssertionError(f"job stuck: {j}")


@pytest.mark.parametrize("method", ["log", "linear", "renyi"])
def test_posterior_is_a_job_and_matches_the_library(client, method):
    p, y = _data()
    params = {"gamma": 0.3} if method == "renyi" else {}
    body = {"method": method, "kind": "probs", "predictions": p.tolist(), "labels": y.tolist(), "posterior": POST}
    r = client.post("/v1/pools", json=body | {"params": params})
    assert r.status_code == 202, r.text
    j = _wait(client, r.headers["location"])
    assert j["state"] == "succeeded" and j["progress"] == 1.0, j
    view = client.get(f"/v1/pools/{j['resource_id']}").json()
    post = view["posterior"]

    ref_pool = make_pool(method, **params).fit(p, y, kind="probs")
    ref = fit_posterior(ref_pool, p, y, kind="probs", **POST)
    np.testing.assert_allclose(post["mean"], ref["mean"], rtol=1e-10)
    np.testing.assert_allclose(post["intervals"], ref["intervals"], rtol=1e-10)
    np.testing.assert_allclose(post["log_loss_interval"], ref["log_loss_interval"], rtol=1e-10)
    lo, hi = np.array(post["intervals"]).T
    assert np.all(lo <= post["mean"]) and np.all(np.array(post["mean"]) <= hi) and abs(sum(post["mean"]) - 1) < 1e-9
    assert post["level"] == 0.95 and post["n_draws"] == 300 and post["method"] == "hmc"
    # the good agent carries most weight, and it is sure of it
    assert post["mean"][0] > 0.5 and lo[0] > 0.3
    # the fitted (maximum-likelihood) loss lies at or below the posterior's mean log loss
    fitted_loss = -float(np.mean(np.log(ref_pool.predict_proba(p, kind="probs")[np.arange(len(y)), y])))
    assert fitted_loss <= post["log_loss_mean"] + 1e-9 and post["log_loss_interval"][1] > fitted_loss

    q = client.post(
        f"/v1/pools/{j['resource_id']}/predict",
        json={"kind": "probs", "predictions": p[:20].tolist(), "output": "log_probs", "posterior_predictive": True},
    )
    assert q.status_code == 200, q.text
    agg, _ = predict_posterior(ref_pool, p[:20], kind="probs")
    np.testing.assert_allclose(np.array(q.json()["aggregate"], dtype=float), agg, rtol=1e-9, atol=1e-12)
    point = ref_pool.predict_proba(p[:20], kind="probs")
    assert np.abs(np.exp(agg) - point).max() < 0.1  # the posterior-predictive stays near the fitted pool


def test_bad_posterior_requests_are_422(client):
    p, y = _data(n=30)
    base = {"kind": "probs", "predictions": p.tolist(), "labels": y.tolist()}
    cases = [
        ({"method": "bma", "posterior": POST}, "posterior"),
        ({"method": "log", "posterior": POST, "sample_weight": [1.0] * 30}, "posterior"),
        ({"method": "log", "posterior": POST, "background": False}, "background"),
        ({"method": "log", "posterior": {"samples": 10}}, "posterior.samples"),
        ({"method": "log", "posterior": {"method": "nuts"}}, "posterior.method"),
        ({"method": "log", "posterior": {"level": 1.5}}, "posterior.level"),
        ({"method": "log", "posterior": {"alpha": -1.0}}, "posterior.alpha"),
    ]
    for extra, field in cases:
        r = client.post("/v1/pools", json=base | extra)
        assert r.status_code == 422, (extra, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert any(e["field"].startswith(field) for e in r.json()["errors"]), (field, r.json())
    r = client.post("/v1/pools", json=base | {"method": "log"})
    assert r.status_code == 201
    q = client.post(f"/v1/pools/{r.json()['id']}/predict", json={**base, "posterior_predictive": True})
    assert q.status_code == 422 and q.json()["errors"][0]["field"] == "posterior_predictive"


def test_a_sampler_that_fails_fails_the_job_with_its_reason(client):
    p, y = _data(n=30)
    body = {"method": "log", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist()}
    r = client.post("/v1/pools", json=body | {"posterior": {"samples": 100, "options": {"bogus": 1}}})
    assert r.status_code == 202
    j = _wait(client, r.headers["location"])
    assert j["state"] == "failed" and "bogus" in str(j["error"]), j
    view = client.get(f"/v1/pools/{j['resource_id']}").json()
    assert view["status"] == "failed"
