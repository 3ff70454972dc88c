"""/v1/markets in process: stateless equilibrium, stored markets trained on labelled data, wealth
history, predictions, background training. Checked against closed forms of seed 000 §2.8."""

from __future__ import annotations

import time

import numpy as np


def _data(seed, n=40, a=3, k=4):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=(n, a))
    return p, rng.integers(0, k, n)


def test_log_agents_equilibrium_is_the_wealth_weighted_linear_pool(client):
    p, _ = _data(0, n=5)
    w = np.array([0.5, 0.3, 0.2])
    r = client.post(
        "/v1/markets/equilibrium",
        json={"kind": "probs", "predictions": p.tolist(), "utilities": "log", "wealth": w.tolist()},
    )
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["prices"], np.einsum("nak,a->nk", p, w), rtol=1e-9)
    assert r.json()["summary"]["all_converged"]


def test_exponential_agents_price_like_the_unweighted_log_pool(client):
    p, _ = _data(1, n=4)
    r = client.post(
        "/v1/markets/equilibrium",
        json={
            "kind": "probs",
            "predictions": p.tolist(),
            "utilities": "exp",
            "wealth": [0.7, 0.2, 0.1],
            "output": "probs",
        },
    )
    assert r.status_code == 200, r.text
    geo = np.exp(np.log(p).mean(axis=1))
    np.testing.assert_allclose(r.json()["prices"], geo / geo.sum(1, keepdims=True), rtol=1e-7)


def test_bad_market_input_is_422(client):
    p, _ = _data(2, n=2)
    r = client.post("/v1/markets/equilibrium", json={"kind": "probs", "predictions": p.tolist(), "utilities": "gold"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "utility"
    r = client.post("/v1/markets/equilibrium", json={"kind": "probs", "predictions": p.tolist(), "wealth": [1, -1, 1]})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "wealth"
    r = client.post("/v1/markets", json={"n_agents": 3, "utilities": [1.0, 2.0]})
    assert r.status_code == 422


def test_online_training_of_log_agents_is_bayesian_model_averaging(client):
    p, y = _data(3)
    r = client.post(
        "/v1/markets", json={"n_agents": 3, "utilities": "log", "mode": "online", "max_epochs": 1, "name": "bma"}
    )
    assert r.status_code == 201, r.text
    mid = r.json()["id"]
    assert r.headers["location"] == f"/v1/markets/{mid}"
    r = client.post(
        f"/v1/markets/{mid}/train", json={"kind": "probs", "predictions": p[:25].tolist(), "labels": y[:25].tolist()}
    )
    assert r.status_code == 200, r.text
    r = client.post(
        f"/v1/markets/{mid}/train", json={"kind": "probs", "predictions": p[25:].tolist(), "labels": y[25:].tolist()}
    )
    m = r.json()
    ll = np.log(p[np.arange(40), :, y]).sum(0)
    post = np.exp(ll - ll.max())
    post /= post.sum()
    np.testing.assert_allclose(m["wealth"], post, rtol=1e-8, atol=1e-14)  # two trainings chain from the stored wealth
    assert m["n_trained"] == 40 and len(m["trainings"]) == 2
    hist = np.array(client.get(f"/v1/markets/{mid}/wealth").json()["history"])
    assert hist.shape == (3, 3)
    np.testing.assert_allclose(hist[0], 1 / 3)
    np.testing.assert_allclose(hist[-1], post, rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(hist.sum(1), 1.0, atol=1e-12)  # wealth is conserved
    q, _ = _data(4, n=3)
    r = client.post(f"/v1/markets/{mid}/predict", json={"kind": "probs", "predictions": q.tolist(), "output": "probs"})
    np.testing.assert_allclose(r.json()["prices"], np.einsum("nak,a->nk", q, post), rtol=1e-8, atol=1e-14)
    r = client.post(
        f"/v1/markets/{mid}/train",
        json={"kind": "probs", "predictions": _data(5, a=2)[0].tolist(), "labels": y.tolist()},
    )
    assert r.status_code == 422
    ids = [x["id"] for x in client.get("/v1/markets").json()["items"]]
    assert mid in ids
    assert client.delete(f"/v1/markets/{mid}").status_code == 204
    assert client.get(f"/v1/markets/{mid}").status_code == 404


def test_batch_training_in_the_background_converges_to_the_ml_linear_pool(make_client):
    from scipy.optimize import minimize as sp_min

    c = make_client(job_threshold=10)
    p, y = _data(6, n=60)
    mid = c.post(
        "/v1/markets",
        json={"n_agents": 3, "utilities": "log", "mode": "batch", "max_epochs": 3000, "wealth_tol": 1e-12},
    ).json()["id"]
    r = c.post(f"/v1/markets/{mid}/train", json={"kind": "probs", "predictions": p.tolist(), "labels": y.tolist()})
    assert r.status_code == 202, r.text
    assert c.get(f"/v1/markets/{mid}").json()["status"] == "training"
    # a second training while the first runs is refused
    assert (
        c.post(
            f"/v1/markets/{mid}/train", json={"kind": "probs", "predictions": p.tolist(), "labels": y.tolist()}
        ).status_code
        == 409
    )
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        j = c.get(r.headers["location"]).json()
        if j["state"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.05)
    assert j["state"] == "succeeded", j
    m = c.get(f"/v1/markets/{mid}").json()
    Q = p[np.arange(60), :, y]
    ref = sp_min(
        lambda w: -np.mean(np.log(Q @ w)),
        np.full(3, 1 / 3),
        method="SLSQP",
        bounds=[(0, 1)] * 3,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
        options={"ftol": 1e-15, "maxiter": 500},
    )
    obj = lambda w: -np.mean(np.log(Q @ np.asarray(w)))
    assert obj(m["wealth"]) <= ref.fun + 1e-6


def test_newton_cg_and_anderson_are_offered_by_name_and_agree_with_the_dense_newton(client):
    """``newton_cg`` (the matrix-free direction) and ``anderson`` (the accelerated fixed point) through the
    API: the stateless equilibrium and a stored market's training give the dense Newton's answer."""
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(70) * 0.5, size=(6, 3))
    y = rng.integers(0, 70, 6)
    prices = {}
    for m in ("newton", "newton_cg", "anderson"):
        r = client.post(
            "/v1/markets/equilibrium",
            json={"kind": "probs", "predictions": p.tolist(), "utilities": [2.0, 10.0, 30.0], "method": m},
        )
        assert r.status_code == 200, r.text
        prices[m] = np.array(r.json()["prices"])
    for m in ("newton_cg", "anderson"):
        np.testing.assert_allclose(prices[m], prices["newton"], rtol=1e-8, atol=1e-12)
    wealth = {}
    for m in ("newton", "newton_cg", "anderson"):
        r = client.post("/v1/markets", json={"n_agents": 3, "utilities": [2.0, 10.0, 30.0], "method": m})
        assert r.status_code == 201, r.text
        mid = r.json()["id"]
        r = client.post(
            f"/v1/markets/{mid}/train",
            json={"kind": "probs", "predictions": p.tolist(), "labels": y.tolist()},
        )
        assert r.status_code == 200, r.text
        wealth[m] = np.array(r.json()["wealth"])
    for m in ("newton_cg", "anderson"):
        np.testing.assert_allclose(wealth[m], wealth["newton"], rtol=1e-8, atol=1e-12)
    r = client.post("/v1/markets", json={"n_agents": 3, "utilities": "log", "method": "bogus"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "method"


def test_gram_is_offered_for_eta_2_markets_and_refused_for_others(client):
    """``gram`` (the Gram-matrix scaling, eta = 2 only) through the API: the dense Newton's prices for an
    eta = 2 market; for another market a 4xx problem naming ``method``, never a 500."""
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(40) * 0.5, size=(5, 4))
    prices = {}
    for m in ("newton", "gram"):
        r = client.post(
            "/v1/markets/equilibrium",
            json={"kind": "probs", "predictions": p.tolist(), "utilities": 2.0, "method": m},
        )
        assert r.status_code == 200, r.text
        prices[m] = np.array(r.json()["prices"])
    np.testing.assert_allclose(prices["gram"], prices["newton"], rtol=1e-8, atol=1e-12)
    r = client.post(
        "/v1/markets/equilibrium",
        json={"kind": "probs", "predictions": p.tolist(), "utilities": 10.0, "method": "gram"},
    )
    assert 400 <= r.status_code < 500 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["errors"][0]["field"] == "method"
