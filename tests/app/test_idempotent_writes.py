"""Which keyed POSTs are safe after a crash (#15 §6), on SQLite and PostgreSQL.

Every POST route outside the competitions is one of:

* **covered**: what it writes (a pool, market, upload, job, API key, organisation, or a market's inline
  training) is named on its ``Idempotency-Key`` record by the transaction that writes it. The test
  puts each record in the state a kill -9 between that commit and the answer leaves it in (pending,
  no stored answer, lease ended) and retries: the retry answers with the same resource, and nothing
  is created or trained twice;
* **stateless**: it stores nothing (row counts of every table but the idempotency records are
  unchanged), so running it again is harmless;
* **idempotent by nature**: cancelling a job twice is cancelling it once.

A new POST route fails :func:`test_every_post_route_is_classified` until it is placed in one of them.
"""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import func, select, update

from app.db import Base
from app.models import IdempotencyRecord, MarketRow, utcnow

COVERED = {
    "/v1/pools",
    "/v1/markets",
    "/v1/arrays",
    "/v1/keys",
    "/v1/organisations",
    "/v1/markets/{market_id}/train",
    "/v1/solve",  # inline: stateless; in the background: a job (covered)
}
STATELESS = {
    "/v1/aggregate",
    "/v1/markets/equilibrium",
    "/v1/pools/{pool_id}/predict",
    "/v1/markets/{market_id}/predict",
    "/v1/solve",
}
BY_NATURE = {"/v1/jobs/{job_id}/cancel"}


def _data(seed: int = 0, n: int = 12, a: int = 2, k: int = 3):
    rng = np.random.default_rng(seed)
    return np.log(rng.dirichlet(np.ones(k), size=(n, a))).tolist(), rng.integers(0, k, n).tolist()


def _npy() -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.arange(6.0).reshape(2, 3))
    return buf.getvalue()


def test_every_post_route_is_classified(client):
    paths = client.get("/openapi.json").json()["paths"]
    posts = {p for p, ops in paths.items() if "post" in ops and not p.startswith("/v1/competitions")}
    assert posts == COVERED | STATELESS | BY_NATURE


def _counts(c) -> dict[str, int]:
    with c.app.state.db.sessions() as s:
        return {
            t.name: s.scalar(select(func.count()).select_from(t))
            for t in Base.metadata.sorted_tables
            if t.name != "idempotency"
        }


def _as_if_killed_before_the_answer(c, key: str) -> str:
    """Rewind the record of ``key`` to what a kill -9 after the write's commit leaves; its resource."""
    with c.app.state.db.sessions() as s:
        rec = s.scalars(select(IdempotencyRecord).where(IdempotencyRecord.key == key)).one()
        assert rec.resource, f"{key}: the write did not name its resource on the record"
        s.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.id == rec.id)
            .values(state="pending", headers=None, body=None, lease_until=utcnow() - timedelta(seconds=1))
        )
        s.commit()
        return rec.resource


def _finished(c, jid: str) -> None:
    t0 = time.monotonic()
    while c.get(f"/v1/jobs/{jid}").json()["state"] in ("queued", "running"):
        assert time.monotonic() - t0 < 60
        time.sleep(0.05)


@pytest.fixture
def c(make_client, db_url):
    return make_client(db_url)


def test_covered_writes_replay_after_a_crash_between_commit_and_answer(c):
    lp, y = _data()
    market = c.post("/v1/markets", json={"n_agents": 2, "utilities": "log"}).json()["id"]
    cases = [
        ("pool", "/v1/pools", {"json": {"method": "bma", "predictions": lp, "labels": y}}),
        ("job", "/v1/pools", {"json": {"method": "bma", "predictions": lp, "labels": y, "background": True}}),
        ("market", "/v1/markets", {"json": {"n_agents": 2, "utilities": "log"}}),
        ("upload", "/v1/arrays", {"content": _npy(), "headers": {"content-type": "application/x-npy"}}),
        ("api key", "/v1/keys", {"json": {"name": "k", "scopes": ["read"]}}),
        ("organisation", "/v1/organisations", {"json": {"name": "o"}}),
        ("training", f"/v1/markets/{market}/train", {"json": {"predictions": lp, "labels": y, "background": False}}),
    ]
    for what, url, kw in cases:
        key = f"crash-{what}"
        headers = {"Idempotency-Key": key, **kw.pop("headers", {})}
        first = c.post(url, headers=headers, **kw)
        assert first.status_code in (200, 201, 202), (what, first.text)
        if first.status_code == 202:  # let the job finish (it deletes its inputs) before counting rows
            _finished(c, first.json()["id"])
        before = _counts(c)
        trained = c.get(f"/v1/markets/{market}").json()["n_trained"]
        resource = _as_if_killed_before_the_answer(c, key)
        again = c.post(url, headers=headers, **kw)
        assert again.status_code == first.status_code, (what, again.text)
        assert again.headers["idempotent-replayed"] == "true", what
        assert again.json()["id"] == first.json()["id"], what
        assert resource.endswith(first.json()["id"]), (what, resource)
        assert _counts(c) == before, what  # nothing created twice
        assert c.get(f"/v1/markets/{market}").json()["n_trained"] == trained, what  # nor trained twice
    key = c.get(f"/v1/keys/{c.post('/v1/keys', json={'scopes': ['read']}).json()['id']}").json()
    assert key["key"] is None  # a key's secret is never shown again


def test_stateless_keyed_requests_store_nothing(c):
    lp, y = _data(1)
    pool = c.post("/v1/pools", json={"method": "bma", "predictions": lp, "labels": y}).json()["id"]
    market = c.post("/v1/markets", json={"n_agents": 2, "utilities": "log"}).json()["id"]
    assert c.post(f"/v1/markets/{market}/train", json={"predictions": lp, "labels": y}).status_code == 200
    cases = [
        ("/v1/aggregate", {"method": "average", "predictions": lp}),
        ("/v1/markets/equilibrium", {"predictions": lp}),
        (f"/v1/pools/{pool}/predict", {"predictions": lp}),
        (f"/v1/markets/{market}/predict", {"predictions": lp}),
        ("/v1/solve", {"problem": "ConditionalLogLinear.from_log_probs", "data": {"log_probs": lp, "labels": y}}),
    ]
    for i, (url, body) in enumerate(cases):
        before = _counts(c)
        r = c.post(url, json=body, headers={"Idempotency-Key": f"stateless-{i}"})
        assert r.status_code == 200, (url, r.text)
        assert _counts(c) == before, url
    with c.app.state.db.sessions() as s:
        assert s.get(MarketRow, market).n_trained == len(y)  # the one training before, none since
