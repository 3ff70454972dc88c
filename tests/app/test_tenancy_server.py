"""Who may do what, against a real ``agora serve`` on SQLite and PostgreSQL: scopes imply less,
stored resources belong to the key that created them (admins see all), only a job's owner (or an
admin) cancels it, and a valid key without the right gets 403 with a message saying why."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from .conftest import ADMIN, Server


@pytest.fixture
def server(db_url, tmp_path):
    s = Server(db_url, tmp_path, AGORA_JOB_THRESHOLD="1000000000").start()
    yield s
    s.stop()


def _h(key: str | None) -> dict[str, str]:
    return {} if key is None else {"Authorization": f"Bearer {key}"}


def _key(c: httpx.Client, scopes: list[str]) -> str:
    r = c.post("/v1/keys", json={"name": "+".join(scopes), "scopes": scopes}, headers=_h(ADMIN))
    assert r.status_code == 201, r.text
    return r.json()["key"]


def _data(seed: int, n: int = 30, a: int = 3, k: int = 3):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=(n, a))
    return np.log(p), rng.integers(0, k, n)


def test_scopes_imply_the_anonymous_ones(server):
    lp, y = _data(0)
    with httpx.Client(base_url=server.url, timeout=60) as c:
        rw, reader = _key(c, ["read", "write"]), _key(c, ["read"])
        for key in (None, rw, reader, ADMIN):
            r = c.post("/v1/aggregate", json={"method": "average", "predictions": lp.tolist()}, headers=_h(key))
            assert r.status_code == 200, (key, r.text)
            np.testing.assert_allclose(r.json()["aggregate"], np.log(np.exp(lp).mean(1)), rtol=1e-12)
            r = c.post(
                "/v1/markets/equilibrium",
                json={"kind": "log_probs", "predictions": lp.tolist(), "utilities": "log"},
                headers=_h(key),
            )
            assert r.status_code == 200, (key, r.text)
            r = c.post(
                "/v1/solve",
                json={
                    "problem": "MixtureLikelihood.from_log_probs",
                    "data": {"log_probs": lp.tolist(), "labels": y.tolist()},
                },
                headers=_h(key),
            )
            assert r.status_code == 200, (key, r.text)
        # read does not imply write: a valid key without the scope is 403 and says which it lacks
        r = c.post(
            "/v1/pools", json={"method": "bma", "predictions": lp.tolist(), "labels": y.tolist()}, headers=_h(reader)
        )
        assert r.status_code == 403 and "lacks scope 'write'" in r.json()["detail"]
        assert r.json()["instance"] == "/v1/pools"
        # a competition participant token outside its competition: 403 saying why, not 401
        r = c.get("/v1/jobs", headers=_h("agp_not_a_key_here"))
        assert r.status_code == 403 and "participant token" in r.json()["detail"]
        # a wrong key stays 401
        assert c.get("/v1/pools", headers=_h("agora_wrong")).status_code == 401


def test_resources_belong_to_their_key_and_admins_see_all(server):
    lp, y = _data(1)
    with httpx.Client(base_url=server.url, timeout=60) as c:
        a, b = _key(c, ["read", "write"]), _key(c, ["read", "write"])
        body = {"method": "bma", "predictions": lp.tolist(), "labels": y.tolist()}
        pa = c.post("/v1/pools", json=body, headers=_h(a)).json()["id"]
        pb = c.post("/v1/pools", json=body, headers=_h(b)).json()["id"]
        ma = c.post("/v1/markets", json={"n_agents": 3, "utilities": "log"}, headers=_h(a)).json()["id"]
        from app.arrays import to_npy

        r = c.post("/v1/arrays", content=to_npy(lp), headers={**_h(a), "Content-Type": "application/x-npy"})
        assert r.status_code == 201, r.text
        arr = r.json()["id"]
        job = c.post("/v1/pools", json={**body, "background": True}, headers=_h(a))
        assert job.status_code == 202, job.text
        ja = job.json()["id"]

        def ids(path: str, key: str) -> set[str]:
            r = c.get(path, headers=_h(key))
            assert r.status_code == 200, r.text
            return {x["id"] for x in r.json()["items"]}

        assert pa in ids("/v1/pools", a) and pb not in ids("/v1/pools", a)
        assert pb in ids("/v1/pools", b) and pa not in ids("/v1/pools", b)
        assert {pa, pb} <= ids("/v1/pools", ADMIN)
        assert ma in ids("/v1/markets", a) and ma not in ids("/v1/markets", b) and ma in ids("/v1/markets", ADMIN)
        assert ja in ids("/v1/jobs", a) and ja not in ids("/v1/jobs", b) and ja in ids("/v1/jobs", ADMIN)

        # B may not read, use, train, cancel or delete what A owns: 403 naming the reason
        for method, path, kw in [
            ("GET", f"/v1/pools/{pa}", {}),
            ("POST", f"/v1/pools/{pa}/predict", {"json": {"predictions": lp.tolist()}}),
            ("DELETE", f"/v1/pools/{pa}", {}),
            ("GET", f"/v1/markets/{ma}", {}),
            ("GET", f"/v1/markets/{ma}/wealth", {}),
            ("POST", f"/v1/markets/{ma}/train", {"json": {"predictions": lp.tolist(), "labels": y.tolist()}}),
            ("DELETE", f"/v1/markets/{ma}", {}),
            ("GET", f"/v1/arrays/{arr}", {}),
            ("GET", f"/v1/arrays/{arr}/data", {}),
            ("DELETE", f"/v1/arrays/{arr}", {}),
            ("GET", f"/v1/jobs/{ja}", {}),
            ("POST", f"/v1/jobs/{ja}/cancel", {}),
        ]:
            r = c.request(method, path, headers=_h(b), **kw)
            assert r.status_code == 403, (method, path, r.status_code, r.text)
            assert "belongs to another API key" in r.json()["detail"], r.text
        # nor refer to A's uploaded array in a request of its own
        r = c.post("/v1/pools", json={**body, "predictions": {"array_id": arr}}, headers=_h(b))
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == "predictions", r.text
        # ... which A can, and the admin reads and cancels everything
        r = c.post("/v1/pools", json={**body, "predictions": {"array_id": arr}}, headers=_h(a))
        assert r.status_code == 201, r.text
        assert c.get(f"/v1/pools/{pb}", headers=_h(ADMIN)).status_code == 200
        assert c.get(f"/v1/arrays/{arr}", headers=_h(ADMIN)).status_code == 200
        assert c.post(f"/v1/jobs/{ja}/cancel", headers=_h(a)).status_code == 202
        assert c.get(f"/v1/pools/{pa}", headers=_h(a)).status_code == 200
        assert c.delete(f"/v1/pools/{pb}", headers=_h(ADMIN)).status_code == 204
        assert c.get(f"/v1/pools/{pb}", headers=_h(b)).status_code == 404
