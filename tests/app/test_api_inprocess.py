"""The service in process (TestClient, SQLite): errors, auth, aggregation, pools, idempotency,
arrays, pagination, jobs. Numbers are checked against direct NumPy formulas, not the library."""

from __future__ import annotations

import base64
import io
import time

import numpy as np
import pytest

PROBLEM = "application/problem+json"


def npy(arr) -> dict:
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return {"npy": base64.b64encode(buf.getvalue()).decode()}


def probs(rng, n, a, k):
    return rng.dirichlet(np.ones(k), size=(n, a))


def labelled(rng, n, a, k):
    """``probs(rng, n, a, k)`` and ``n`` labels drawn uniformly after them."""
    return probs(rng, n, a, k), rng.integers(0, k, n)


# -- errors -------------------------------------------------------------------------------------------
def test_malformed_json_is_400_problem(client):
    r = client.post(
        "/v1/aggregate",
        content=b'{"method": "average", "predictions": [[[0.5,',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["status"] == 400 and body["errors"]


def test_wrong_types_name_the_field(client):
    r = client.post("/v1/aggregate", json={"method": "average", "kind": "probabilities", "predictions": [[[0.5, 0.5]]]})
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    assert any(e["field"] == "kind" for e in r.json()["errors"])
    r = client.post("/v1/aggregate", json={"method": "average", "predictions": "nope"})
    assert r.status_code == 422
    assert any(e["field"].startswith("predictions") for e in r.json()["errors"])
    r = client.post("/v1/aggregate", json={"method": "average", "predictions": [[["a", "b"]]]})
    assert r.status_code == 422
    assert r.json()["errors"][0]["field"] == "predictions"


def test_validator_errors_arrive_as_422_with_item_and_agent(client):
    p = np.full((3, 2, 4), 0.25)
    p[2, 1, 0] = 0.5  # row sums to 1.25
    r = client.post("/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": p.tolist()})
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    err = r.json()["errors"][0]
    assert (err["field"], err["item"], err["agent"], err["code"]) == ("predictions", 2, 1, "not_normalised")
    p = np.full((2, 2, 3), 1 / 3)
    p[1, 0, 2] = -0.1
    r = client.post("/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": p.tolist()})
    assert r.status_code == 422 and r.json()["errors"][0]["code"] == "negative"


def test_unknown_parameters_and_methods_are_422(client):
    p = np.full((1, 2, 3), 1 / 3).tolist()
    r = client.post(
        "/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": p, "params": {"gamma": 0.5}}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "gamma"
    r = client.post("/v1/aggregate", json={"method": "median", "kind": "probs", "predictions": p})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "method"
    r = client.post(
        "/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": p, "params": {"nonsense": 1}}
    )
    assert r.status_code == 422


def test_oversize_body_is_413(make_client):
    c = make_client(max_body_bytes=10_000)
    big = np.full((200, 2, 10), 0.1).tolist()
    r = c.post("/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": big})
    assert r.status_code == 413 and r.headers["content-type"] == PROBLEM
    assert r.json()["errors"][0]["field"] == "body"

    # a chunked body without Content-Length is counted as it arrives
    def gen():
        for _ in range(50):
            yield b" " * 1000

    r = c.post("/v1/aggregate", content=gen(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_too_many_numbers_is_413(make_client):
    c = make_client(max_array_elements=100)
    r = c.post(
        "/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": np.full((20, 2, 5), 0.2).tolist()}
    )
    assert r.status_code == 413 and r.json()["errors"][0]["field"] == "predictions"


def test_unknown_resources_are_404_problems(client):
    for path in ("/v1/pools/pool_nope", "/v1/jobs/job_nope", "/v1/arrays/arr_nope", "/nowhere"):
        r = client.get(path)
        assert r.status_code == 404 and r.headers["content-type"] == PROBLEM, path


# -- aggregation against direct formulas ----------------------------------------------------------------
def test_aggregate_average_and_linear_match_mixtures(client):
    rng = np.random.default_rng(1)
    p = probs(rng, 5, 3, 4)
    r = client.post("/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": p.tolist()})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["kind"] == "probs"
    np.testing.assert_allclose(np.array(d["aggregate"]), p.mean(axis=1), rtol=1e-12)
    # log-probs in, log-probs out, npy transport both ways
    r = client.post(
        "/v1/aggregate", json={"method": "average", "kind": "log_probs", "predictions": npy(np.log(p)), "format": "npy"}
    )
    agg = np.load(io.BytesIO(base64.b64decode(r.json()["aggregate"]["npy"])))
    np.testing.assert_allclose(agg, np.log(p.mean(axis=1)), rtol=1e-12)


def test_aggregate_linear_and_log_with_weights(client):
    rng = np.random.default_rng(2)
    p = probs(rng, 4, 3, 5)
    w = np.array([0.5, 0.3, 0.2])
    r = client.post(
        "/v1/aggregate",
        json={"method": "linear", "kind": "probs", "predictions": p.tolist(), "params": {"weights": w.tolist()}},
    )
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["aggregate"], np.einsum("nak,a->nk", p, w), rtol=1e-10)
    r = client.post(
        "/v1/aggregate",
        json={"method": "log", "kind": "probs", "predictions": p.tolist(), "params": {"weights": w.tolist()}},
    )
    geo = np.exp(np.einsum("nak,a->nk", np.log(p), w))
    np.testing.assert_allclose(r.json()["aggregate"], geo / geo.sum(1, keepdims=True), rtol=1e-9)


# -- auth ---------------------------------------------------------------------------------------------
def test_scopes(make_client):
    c = make_client()
    anon = {"Authorization": ""}
    p = np.full((2, 2, 2), 0.5).tolist()
    average = {"method": "average", "kind": "probs", "predictions": p}
    body = {**average, "labels": [0, 1]}
    # anonymous: stateless only
    assert c.post("/v1/aggregate", json=average, headers=anon).status_code == 200
    r = c.post("/v1/pools", json=body, headers=anon)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert c.get("/v1/pools", headers=anon).status_code == 401
    # a wrong key is 401 even on a stateless endpoint
    assert c.post("/v1/aggregate", json=average, headers={"Authorization": "Bearer nope"}).status_code == 401
    # admin creates a read-only key; the secret is shown once and stored hashed
    r = c.post("/v1/keys", json={"name": "reader", "scopes": ["read"]})
    assert r.status_code == 201
    secret, kid = r.json()["key"], r.json()["id"]
    from app.auth import hash_key
    from app.models import ApiKey

    with c.app.state.db.sessions() as s:
        row = s.get(ApiKey, kid)
        assert row.key_hash == hash_key(secret) and secret not in (row.key_hash, row.name, row.scopes)
    reader = {"Authorization": f"Bearer {secret}"}
    assert c.get("/v1/pools", headers=reader).status_code == 200
    r = c.post("/v1/pools", json=body, headers=reader)
    assert r.status_code == 403 and "write" in r.json()["detail"]
    assert c.get("/v1/keys", headers=reader).status_code == 403
    assert all("key" not in k or k["key"] is None for k in c.get("/v1/keys").json())
    # X-API-Key works too; revocation takes effect
    assert c.get("/v1/pools", headers={"Authorization": "", "X-API-Key": secret}).status_code == 200
    assert c.delete(f"/v1/keys/{kid}").status_code == 204
    assert c.get("/v1/pools", headers=reader).status_code == 401


def test_anonymous_access_is_configurable(make_client):
    anon = {"Authorization": ""}
    average = {"method": "average", "kind": "probs", "predictions": np.full((1, 2, 2), 0.5).tolist()}
    closed = make_client(anonymous_scopes="")
    assert closed.post("/v1/aggregate", json=average, headers=anon).status_code == 401
    open_ = make_client(anonymous_scopes="stateless,read,write")
    r = open_.post(
        "/v1/pools",
        json={**average, "predictions": np.full((2, 2, 2), 0.5).tolist(), "labels": [0, 1]},
        headers=anon,
    )
    assert r.status_code == 201


# -- pools, arrays, pagination, idempotency --------------------------------------------------------------
def test_pool_roundtrip_bma_matches_direct_formula(client):
    rng = np.random.default_rng(3)
    p, y = labelled(rng, 30, 3, 4)
    r = client.post(
        "/v1/pools",
        json={"method": "bma", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist(), "name": "b"},
    )
    assert r.status_code == 201, r.text
    pool = r.json()
    assert r.headers["location"] == f"/v1/pools/{pool['id']}"
    # BMA weights: posterior ∝ Π_n P_a(y_n) (uniform prior), Eq. (2.2)
    ll = np.log(p[np.arange(30), :, y]).sum(0)
    w = np.exp(ll - ll.max())
    w /= w.sum()
    np.testing.assert_allclose(pool["weights"], w, rtol=1e-8, atol=1e-12)
    val = np.einsum("nak,a->nk", p, w)
    np.testing.assert_allclose(
        pool["metrics"]["validation"]["log_loss"], -np.log(val[np.arange(30), y]).mean(), rtol=1e-8
    )
    q = probs(rng, 6, 3, 4)
    r = client.post(
        f"/v1/pools/{pool['id']}/predict",
        json={"kind": "probs", "predictions": q.tolist(), "output": "probs", "labels": [0, 1, 2, 3, 0, 1]},
    )
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["aggregate"], np.einsum("nak,a->nk", q, w), rtol=1e-8)
    assert r.json()["metrics"]["accuracy"] == pytest.approx(
        np.mean(np.einsum("nak,a->nk", q, w).argmax(1) == [0, 1, 2, 3, 0, 1])
    )
    # the fitted pool refuses predictions of another shape
    r = client.post(
        f"/v1/pools/{pool['id']}/predict", json={"kind": "probs", "predictions": probs(rng, 2, 2, 4).tolist()}
    )
    assert r.status_code == 422
    assert client.delete(f"/v1/pools/{pool['id']}").status_code == 204
    assert client.get(f"/v1/pools/{pool['id']}").status_code == 404


def test_uploaded_npy_arrays_are_reusable(client):
    rng = np.random.default_rng(4)
    p = probs(rng, 10, 2, 3)
    buf = io.BytesIO()
    np.save(buf, np.log(p))
    r = client.post("/v1/arrays", content=buf.getvalue(), headers={"content-type": "application/x-npy"})
    assert r.status_code == 201, r.text
    aid = r.json()["id"]
    assert r.json()["shape"] == [10, 2, 3]
    got = np.load(io.BytesIO(client.get(f"/v1/arrays/{aid}/data").content))
    np.testing.assert_array_equal(got, np.log(p))
    r = client.post("/v1/aggregate", json={"method": "average", "predictions": {"array_id": aid}, "output": "probs"})
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["aggregate"], p.mean(1), rtol=1e-12)
    # multipart upload; pickled object arrays are refused
    r = client.post("/v1/arrays", files={"file": ("y.npy", _npy_bytes(np.arange(10) % 3))})
    assert r.status_code == 201
    r = client.post(
        "/v1/arrays",
        content=_npy_bytes(np.array([{"a": 1}], dtype=object), allow_pickle=True),
        headers={"content-type": "application/x-npy"},
    )
    assert r.status_code == 422
    r = client.post("/v1/arrays", content=b"not npy", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = client.post("/v1/aggregate", json={"method": "average", "predictions": {"array_id": "arr_missing"}})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "predictions"


def _npy_bytes(arr, allow_pickle=False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def test_cursor_pagination_sees_every_pool_once(client):
    ids = set()
    for i in range(7):
        r = client.post(
            "/v1/pools",
            json={
                "method": "average",
                "kind": "probs",
                "predictions": np.full((2, 2, 2), 0.5).tolist(),
                "labels": [0, 1],
                "name": f"p{i}",
            },
        )
        ids.add(r.json()["id"])
    seen, cursor, pages = [], None, 0
    while True:
        r = client.get("/v1/pools", params={"limit": 3, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200
        seen += [x["id"] for x in r.json()["items"]]
        cursor = r.json()["next_cursor"]
        pages += 1
        if not cursor:
            break
    assert pages == 3 and len(seen) == 7 and set(seen) == ids
    assert client.get("/v1/pools", params={"cursor": "garbage!"}).status_code == 422


def test_idempotent_retries(client):
    body = {"method": "average", "kind": "probs", "predictions": np.full((2, 2, 2), 0.5).tolist(), "labels": [0, 1]}
    r1 = client.post("/v1/pools", json=body, headers={"Idempotency-Key": "k-1"})
    r2 = client.post("/v1/pools", json=body, headers={"Idempotency-Key": "k-1"})
    assert r1.status_code == r2.status_code == 201
    assert r1.json()["id"] == r2.json()["id"] and r2.headers["idempotent-replayed"] == "true"
    assert len(client.get("/v1/pools").json()["items"]) == 1
    # same key, different request: refused
    r3 = client.post("/v1/pools", json={**body, "name": "other"}, headers={"Idempotency-Key": "k-1"})
    assert r3.status_code == 422 and r3.json()["errors"][0]["field"] == "Idempotency-Key"
    # keys are per caller: another key holder's "k-1" is a different request
    key = client.post("/v1/keys", json={"scopes": ["read", "write"]}).json()["key"]
    r4 = client.post("/v1/pools", json=body, headers={"Idempotency-Key": "k-1", "Authorization": f"Bearer {key}"})
    assert r4.status_code == 201 and r4.json()["id"] != r1.json()["id"]
    # an error answer is replayed too (no double processing), a 401 is not stored
    bad = {**body, "labels": [0, 7]}
    e1 = client.post("/v1/pools", json=bad, headers={"Idempotency-Key": "k-2"})
    e2 = client.post("/v1/pools", json=bad, headers={"Idempotency-Key": "k-2"})
    assert e1.status_code == e2.status_code == 422 and e2.headers["idempotent-replayed"] == "true"


# -- jobs ---------------------------------------------------------------------------------------------
def _wait(client, loc, states=("succeeded", "failed", "cancelled"), timeout=120.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        j = client.get(loc).json()
        if j["state"] in states:
            return j
        time.sleep(0.05)
    raise AssertionError(f"job stuck: {j}")


def test_large_fit_becomes_a_job(make_client):
    c = make_client(job_threshold=100)
    rng = np.random.default_rng(5)
    p, y = labelled(rng, 20, 3, 4)
    r = c.post("/v1/pools", json={"method": "bma", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist()})
    assert r.status_code == 202, r.text
    loc = r.headers["location"]
    assert loc == f"/v1/jobs/{r.json()['id']}"
    pid = r.json()["resource_id"]
    j = _wait(c, loc)
    assert j["state"] == "succeeded" and j["progress"] == 1.0 and j["result"]["pool_id"] == pid
    pool = c.get(f"/v1/pools/{pid}").json()
    assert pool["status"] == "ready" and pool["job_id"] == j["id"]
    ll = np.log(p[np.arange(20), :, y]).sum(0)
    np.testing.assert_allclose(pool["weights"], np.exp(ll - ll.max()) / np.exp(ll - ll.max()).sum(), rtol=1e-8)
    # a bad fit in the background ends "failed" with the reason, and the pool says so
    r = c.post(
        "/v1/pools",
        json={"method": "topk", "kind": "probs", "predictions": p.tolist(), "labels": y.tolist(), "params": {"k": 99}},
    )
    if r.status_code == 202:
        j = _wait(c, r.headers["location"])
        assert j["state"] == "failed" and j["error"]["detail"]
        assert c.get(f"/v1/pools/{j['resource_id']}").json()["status"] == "failed"
    else:
        assert r.status_code == 422


@pytest.fixture
def slow_job_kind():
    """A job kind that reports progress every 20 ms for ~4 s (to watch progress, ETA and cancel)."""
    from app.jobs import _HANDLERS, handler

    @handler("test_slow")
    def slow(ctx):
        n = ctx.spec["steps"]
        for i in range(n):
            time.sleep(0.02)
            if ctx.progress:
                ctx.progress((i + 1) / n)
        return {"steps": n, "sum": float(ctx.inputs["x"].sum())}

    yield "test_slow"
    _HANDLERS.pop("test_slow", None)


def test_job_progress_eta_result_and_cancel(client, slow_job_kind):
    app = client.app
    with app.state.db.sessions() as s:
        job = app.state.jobs.submit(s, slow_job_kind, {"steps": 200}, {"x": np.arange(5.0)})
        jid = job.id
    j = _wait(client, f"/v1/jobs/{jid}", states=("running",))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        j = client.get(f"/v1/jobs/{jid}").json()
        if 0.1 < j["progress"] < 0.9 and j["eta_seconds"] is not None:
            break
        time.sleep(0.05)
    assert (
        0 < j["progress"] < 1 and j["eta_seconds"] > 0 and j["percent"] == pytest.approx(100 * j["progress"], abs=0.06)
    )
    r = client.post(f"/v1/jobs/{jid}/cancel")
    assert r.status_code == 202 and r.json()["cancel_requested"]
    j = _wait(client, f"/v1/jobs/{jid}")
    assert j["state"] == "cancelled" and j["progress"] < 1
    # a job that runs to the end keeps its result
    with app.state.db.sessions() as s:
        jid2 = app.state.jobs.submit(s, slow_job_kind, {"steps": 5}, {"x": np.arange(5.0)}).id
    j = _wait(client, f"/v1/jobs/{jid2}")
    assert j["state"] == "succeeded" and j["result"] == {"steps": 5, "sum": 10.0}
    listed = client.get("/v1/jobs", params={"state": "cancelled"}).json()["items"]
    assert [x["id"] for x in listed] == [jid]


def test_solve_mixture_matches_scipy(client):
    from scipy.optimize import minimize as sp_min

    rng = np.random.default_rng(6)
    p, y = labelled(rng, 40, 3, 4)
    mixture = {
        "problem": "MixtureLikelihood.from_log_probs",
        "data": {"log_probs": np.log(p).tolist(), "labels": y.tolist()},
    }
    r = client.post("/v1/solve", json={**mixture, "method": "auto"})
    assert r.status_code == 200, r.text
    d = r.json()
    Q = p[np.arange(40), :, y]
    f = lambda w: -np.mean(np.log(Q @ w))
    ref = sp_min(
        f,
        np.full(3, 1 / 3),
        method="SLSQP",
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
        bounds=[(0, 1)] * 3,
        options={"ftol": 1e-14},
    )
    assert d["fun"] == pytest.approx(ref.fun, abs=1e-7)
    assert len(d["trace"]["objective"]) >= 1 and d["method"] in d["available"]
    r = client.post("/v1/solve", json={"problem": "NoSuchProblem", "data": {}})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "problem"
    r = client.post("/v1/solve", json={**mixture, "method": "no_such_solver"})
    assert r.status_code == 422
    r = client.post("/v1/solve", json={"problem": "MixtureLikelihood", "data": {"wrong_arg": [1.0]}})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "data"


def test_unexpected_errors_are_logged_500_problems_without_details(make_client, caplog):
    from fastapi.testclient import TestClient

    c = make_client()

    @c.app.get("/boom-test")
    def boom():
        raise RuntimeError("secret internal detail")

    raw = TestClient(c.app, raise_server_exceptions=False)
    r = raw.get("/boom-test")
    assert r.status_code == 500 and r.headers["content-type"] == PROBLEM
    assert "secret" not in r.text and r.json()["status"] == 500
    assert any("boom-test" in rec.getMessage() for rec in caplog.records)


def test_zero_probabilities_give_finite_json_and_null_for_log_zero(client):
    # a linear pool keeps exact zeros: log 0 = -inf travels as null; a pool whose validation
    # log loss is infinite is still stored (metrics null, not a 500 from the JSON column)
    p = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]]])
    r = client.post(
        "/v1/aggregate", json={"method": "average", "kind": "probs", "predictions": p.tolist(), "output": "log_probs"}
    )
    assert r.status_code == 200
    assert r.json()["aggregate"][0] == [0.0, None]
    r = client.post(
        "/v1/pools", json={"method": "average", "kind": "probs", "predictions": p.tolist(), "labels": [1, 1]}
    )
    assert r.status_code == 201, r.text
    v = r.json()["metrics"]["validation"]
    assert v["log_loss"] is None and v["perplexity"] is None
    assert v["brier_score"] == pytest.approx((2.0 + 0.5) / 2)  # item 0: (1-0)^2+(0-1)^2, item 1: 2 x 0.5^2
    assert client.get(f"/v1/pools/{r.json()['id']}").status_code == 200
    # a linear pool cannot be fitted when every agent gives the truth probability 0: 422, not 500
    r = client.post(
        "/v1/pools", json={"method": "linear", "kind": "probs", "predictions": p.tolist(), "labels": [1, 1]}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "predictions"
