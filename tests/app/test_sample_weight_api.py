"""``sample_weight`` on the API's fit resources (POST /v1/pools, POST /v1/markets/{id}/train):
integer weights fit as repeated items; bad weights answer 422 naming ``sample_weight``."""

from __future__ import annotations

import numpy as np
import pytest


def _data(seed, n=20, a=3, k=4):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=(n, a))
    y = rng.integers(0, k, n)
    c = rng.integers(0, 4, n)
    return p, y, c


def test_pool_fit_with_sample_weight_equals_repetition(client):
    p, y, c = _data(1)
    rep = np.repeat(np.arange(len(y)), c)
    base = {"method": "linear", "kind": "probs"}
    r = client.post(
        "/v1/pools", json={**base, "predictions": p.tolist(), "labels": y.tolist(), "sample_weight": c.tolist()}
    )
    assert r.status_code == 201, r.text
    r2 = client.post("/v1/pools", json={**base, "predictions": p[rep].tolist(), "labels": y[rep].tolist()})
    assert r2.status_code == 201, r2.text
    np.testing.assert_allclose(r.json()["weights"], r2.json()["weights"], rtol=0, atol=1e-8)


def test_market_training_with_sample_weight_equals_repetition(client):
    p, y, c = _data(2)
    rep = np.repeat(np.arange(len(y)), c)
    wealth = []
    for body in (
        {"predictions": p.tolist(), "labels": y.tolist(), "sample_weight": c.tolist()},
        {"predictions": p[rep].tolist(), "labels": y[rep].tolist()},
    ):
        r = client.post("/v1/markets", json={"n_agents": 3, "utilities": "log", "max_epochs": 200})
        assert r.status_code == 201, r.text
        mid = r.json()["id"]
        r = client.post(f"/v1/markets/{mid}/train", json={"kind": "probs", **body})
        assert r.status_code == 200, r.text
        wealth.append(r.json()["wealth"])
    np.testing.assert_allclose(wealth[0], wealth[1], rtol=0, atol=1e-10)


@pytest.mark.parametrize("bad", [[-1.0] + [1.0] * 19, [1.0] * 19, [0.0] * 20, ["x"] * 20])
def test_bad_sample_weight_is_422_naming_the_field(client, bad):
    p, y, _ = _data(3)
    r = client.post(
        "/v1/pools",
        json={"method": "log", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist(), "sample_weight": bad},
    )
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"].startswith("sample_weight")
    mid = client.post("/v1/markets", json={"n_agents": 3, "utilities": "log"}).json()["id"]
    r = client.post(
        f"/v1/markets/{mid}/train",
        json={"kind": "probs", "predictions": p.tolist(), "labels": y.tolist(), "sample_weight": bad},
    )
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"].startswith("sample_weight")
