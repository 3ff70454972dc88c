"""End to end against real ``agora serve`` (uvicorn) processes on loopback, through the shipped
client and raw HTTP: every resource, idempotent retries, restart persistence on SQLite and
PostgreSQL."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from app.client import AgoraClient, AgoraError

from .conftest import ADMIN, Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e")
    s = Server(f"sqlite:///{d}/agora.db", d, AGORA_JOB_THRESHOLD="5000").start()
    yield s
    s.stop()


def _data(seed, n=40, a=4, k=3):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=(n, a))
    return np.log(p), rng.integers(0, k, n)


def test_client_end_to_end(server):
    lp, y = _data(0)
    anon = AgoraClient(server.url)
    assert anon.health()["status"] == "ok"
    agg = anon.aggregate(lp, method="average")
    np.testing.assert_allclose(agg, np.log(np.exp(lp).mean(1)), rtol=1e-12)
    with pytest.raises(AgoraError) as e:
        anon.create_pool("bma", lp, y)
    assert e.value.status == 401
    with AgoraClient(server.url, api_key=ADMIN) as c:
        pool = c.create_pool("bma", lp, y, name="e2e")
        assert pool["status"] == "ready" and len(pool["weights"]) == 4
        out, metrics = c.predict(pool["id"], lp[:5], labels=y[:5])
        w = np.asarray(pool["weights"])
        np.testing.assert_allclose(np.exp(out), np.einsum("nak,a->nk", np.exp(lp[:5]), w), rtol=1e-8)
        assert set(metrics) >= {"log_loss", "perplexity", "brier_score", "accuracy"}
        assert pool["id"] in [p["id"] for p in c.list_pools(page_size=1)]
        # a big fit runs as a job; the client follows it
        big_lp, big_y = _data(1, n=600, a=4, k=3)
        aid = c.upload_array(big_lp)
        pool2 = c.create_pool("bma", aid, big_y)
        assert pool2["status"] == "ready" and pool2["job_id"]
        assert c.get_job(pool2["job_id"])["state"] == "succeeded"
        res = c.solve("MixtureLikelihood.from_log_probs", {"log_probs": lp, "labels": y})
        assert res["converged"] and abs(res["x"].sum() - 1) < 1e-8
        # a market: create, train, predict, wealth history
        m = c.create_market(4, utilities="log", mode="online", max_epochs=1)
        m = c.train_market(m["id"], lp, y)
        ll = np.log(np.exp(lp)[np.arange(len(y)), :, y]).sum(0)
        np.testing.assert_allclose(
            m["wealth"], np.exp(ll - ll.max()) / np.exp(ll - ll.max()).sum(), rtol=1e-8, atol=1e-14
        )
        assert c.wealth_history(m["id"]).shape == (2, 4)
        np.testing.assert_allclose(
            np.exp(c.market_predict(m["id"], lp[:2])),
            np.einsum("nak,a->nk", np.exp(lp[:2]), m["wealth"]),
            rtol=1e-8,
            atol=1e-14,
        )
        prices, summary = c.equilibrium(lp[:3], utilities=2.0)
        assert summary["all_converged"] and prices.shape == (3, 3)
        c.delete_pool(pool["id"])
        with pytest.raises(AgoraError) as e:
            c.get_pool(pool["id"])
        assert e.value.status == 404


def test_client_weight_posterior(server):
    """A fit with ``posterior`` through the client: the credible intervals and the posterior-predictive
    aggregate are the library's on the same data and seed; a bad option is a 422 naming it."""
    from aggregators.registry import make_pool
    from evaluation.weight_posterior import fit_posterior, predict_posterior

    lp, y = _data(2, n=60, a=3)
    opts = {"samples": 200, "seed": 1, "options": {"n_leapfrog": 5}}
    with AgoraClient(server.url, api_key=ADMIN) as c:
        pool = c.create_pool("log", lp, y, posterior=opts)
        assert pool["status"] == "ready" and pool["job_id"]
        post = c.weight_posterior(pool["id"])
        ref_pool = make_pool("log").fit(lp, y)
        ref = fit_posterior(ref_pool, lp, y, **opts)
        np.testing.assert_allclose(post["intervals"], ref["intervals"], rtol=1e-10)
        np.testing.assert_allclose(post["mean"], ref["mean"], rtol=1e-10)
        np.testing.assert_allclose(post["log_loss_interval"], ref["log_loss_interval"], rtol=1e-10)
        assert post["intervals"].shape == (3, 2) and post["level"] == 0.95 and post["n_draws"] == 200
        agg = c.predict(pool["id"], lp[:7], posterior_predictive=True)
        np.testing.assert_allclose(agg, predict_posterior(ref_pool, lp[:7])[0], rtol=1e-9, atol=1e-12)
        plain = c.create_pool("log", lp, y)
        with pytest.raises(ValueError, match="without a posterior"):
            c.weight_posterior(plain)
        with pytest.raises(AgoraError) as e:
            c.create_pool("log", lp, y, posterior={"level": 2.0})
        assert e.value.status == 422 and e.value.errors[0]["field"].startswith("posterior.level")


def test_idempotent_retry_over_http(server):
    lp, y = _data(2)
    body = {"method": "bma", "predictions": lp.tolist(), "labels": y.tolist()}
    h = {"Authorization": f"Bearer {ADMIN}", "Idempotency-Key": "retry-1"}
    r1 = httpx.post(server.url + "/v1/pools", json=body, headers=h, timeout=30)
    r2 = httpx.post(server.url + "/v1/pools", json=body, headers=h, timeout=30)
    assert r1.status_code == r2.status_code == 201
    assert r1.json()["id"] == r2.json()["id"] and r2.headers["idempotent-replayed"] == "true"
    r3 = httpx.post(server.url + "/v1/pools", json={**body, "name": "x"}, headers=h, timeout=30)
    assert r3.status_code == 422 and r3.headers["content-type"] == "application/problem+json"


def test_restart_loses_nothing(db_url, tmp_path):
    lp, y = _data(3, n=30, a=3, k=4)
    srv = Server(db_url, tmp_path).start()
    try:
        with AgoraClient(srv.url, api_key=ADMIN) as c:
            pool = c.create_pool("bma", lp, y, idempotency_key="restart-1")
            before = c.predict(pool["id"], lp[:3])
            aid = c.upload_array(lp)
            market = c.train_market(c.create_market(3, utilities="log", mode="online", max_epochs=1)["id"], lp, y)
            # acknowledged with 202 just before the stop: must be finished after the restart
            job = c.create_pool("renyi", lp, y, gamma=[0.05, 0.2, 1.0], background=True, wait=False)
            assert job["state"] in ("queued", "running", "succeeded")
            key = httpx.post(
                srv.url + "/v1/keys", json={"scopes": ["read"]}, headers={"Authorization": f"Bearer {ADMIN}"}
            ).json()["key"]
    finally:
        srv.stop()
    srv.start()
    try:
        with AgoraClient(srv.url, api_key=ADMIN) as c:
            assert c.get_pool(pool["id"])["weights"] == pool["weights"]
            np.testing.assert_array_equal(c.predict(pool["id"], lp[:3]), before)
            np.testing.assert_array_equal(c.download_array(aid), lp)
            assert c.get_market(market["id"])["wealth"] == market["wealth"]
            done = c.wait_job(job["id"], timeout=120)
            assert done["state"] == "succeeded", done
            assert c.get_pool(done["result"]["pool_id"])["status"] == "ready"
            np.testing.assert_array_equal(c.wealth_history(market["id"])[-1], market["wealth"])
            again = c.create_pool("bma", lp, y, idempotency_key="restart-1")
            assert again["id"] == pool["id"]
            assert c.health()["database"] == ("sqlite" if db_url.startswith("sqlite") else "postgresql")
        with AgoraClient(srv.url, api_key=key) as reader:  # the key survived (403, not 401): it sees only its own
            with pytest.raises(AgoraError) as e:
                reader.get_pool(pool["id"])
            assert e.value.status == 403 and "belongs to another API key" in str(e.value)
            assert list(reader.list_pools()) == []
    finally:
        srv.stop()


def test_examples_run_against_the_server(server):
    """Every script of examples/ runs end to end against a live server."""
    import os
    import subprocess
    import sys

    from .conftest import REPO

    env = {**os.environ, "AGORA_URL": server.url, "AGORA_API_KEY": ADMIN}
    for name in ("aggregate", "pool", "market", "solve"):
        r = subprocess.run(
            [sys.executable, str(REPO / "examples" / f"{name}.py")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, (name, r.stdout[-2000:], r.stderr[-3000:])
        assert r.stdout.strip(), name
