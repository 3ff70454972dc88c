"""Which keyed POSTs are safe after a crash (#15 §6), on SQLite and PostgreSQL.

Every POST route is one of:

* **covered**: what it writes (a pool, market, upload, job, API key, organisation, a market's inline
  training; a competition, a batch of invitations, a participant, a submission, an aggregation run)
  is named on its ``Idempotency-Key`` record by the transaction that writes it. The test
  puts each record in the state a kill -9 between that commit and the answer leaves it in (pending,
  no stored answer, lease ended) and retries: the retry answers with the same resource, and nothing
  is created or trained twice;
* **stateless**: it stores nothing (row counts of every table but the idempotency records are
  unchanged), so running it again is harmless;
* **idempotent by nature**: cancelling a job twice is cancelling it once; selecting, withdrawing or
  excluding a submission sets its state.

A new POST route fails :func:`test_every_post_route_is_classified` until it is placed in one of them.
"""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import func, select, update

from app.competitions import parsing
from app.db import Base
from app.models import IdempotencyRecord, MarketRow, utcnow

from .conftest import competition_body

COVERED = {
    "/v1/pools",
    "/v1/markets",
    "/v1/arrays",
    "/v1/keys",
    "/v1/organisations",
    "/v1/markets/{market_id}/train",
    "/v1/solve",  # inline: stateless; in the background: a job (covered)
    "/v1/competitions",
    "/v1/competitions/{competition_id}/invitations",
    "/v1/competitions/{competition_id}/participants",
    "/v1/competitions/{competition_id}/submissions",
    "/v1/competitions/{competition_id}/aggregations",
}
STATELESS = {
    "/v1/aggregate",
    "/v1/markets/equilibrium",
    "/v1/pools/{pool_id}/predict",
    "/v1/markets/{market_id}/predict",
    "/v1/solve",
}
SUBMISSION = "/v1/competitions/{competition_id}/submissions/{submission_id}"
BY_NATURE = {
    "/v1/jobs/{job_id}/cancel",
    f"{SUBMISSION}/selection",
    f"{SUBMISSION}/withdrawal",
    f"{SUBMISSION}/exclusion",
}


def _data(seed: int = 0, n: int = 12, a: int = 2, k: int = 3):
    rng = np.random.default_rng(seed)
    return np.log(rng.dirichlet(np.ones(k), size=(n, a))).tolist(), rng.integers(0, k, n).tolist()


def _entry(y: list[int], seed: int) -> bytes:
    """A submission better than a uniform guess: extra log-mass on the true class, plus noise."""
    s = np.random.default_rng(seed).normal(size=(len(y), 3))
    s[np.arange(len(y)), y] += 2.0
    return parsing.to_npy(np.arange(len(y)), s)


def _npy() -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.arange(6.0).reshape(2, 3))
    return buf.getvalue()


def test_every_post_route_is_classified(client):
    paths = client.get("/openapi.json").json()["paths"]
    posts = {p for p, ops in paths.items() if "post" in ops}
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


def _ids(body: dict) -> object:
    """What a created resource is known by: its id, a participant's id, or a batch's ids."""
    return body.get("id") or body.get("participant_id") or [x["id"] for x in body["items"]]


def _replay_after_a_crash(c, cases, market: str) -> list:
    """For each (what, url, request): run it keyed, rewind its record as a kill -9 between commit and
    answer leaves it, retry; the retry answers with the same resource and writes no row. The retries."""
    out = []
    for what, url, kw in cases:
        key = f"crash-{what}"
        headers = {"Idempotency-Key": key, **kw.pop("headers", {})}
        first = c.post(url, headers=headers, **kw)
        assert first.status_code in (200, 201, 202), (what, first.text)
        if first.status_code == 202:  # let the job finish (it deletes its inputs) before counting rows
            _finished(c, first.headers["location"].rsplit("/", 1)[1])
        before = _counts(c)
        trained = c.get(f"/v1/markets/{market}").json()["n_trained"]
        resource = _as_if_killed_before_the_answer(c, key)
        again = c.post(url, headers=headers, **kw)
        assert again.status_code == first.status_code, (what, again.text)
        assert again.headers["idempotent-replayed"] == "true", what
        assert _ids(again.json()) == _ids(first.json()), what
        assert resource.replace("?batch=", "/").rsplit("/", 1)[1] in str(_ids(first.json())), (what, resource)
        assert _counts(c) == before, what  # nothing created twice
        assert c.get(f"/v1/markets/{market}").json()["n_trained"] == trained, what  # nor trained twice
        out.append(again.json())
    return out


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
    _replay_after_a_crash(c, cases, market)
    key = c.get(f"/v1/keys/{c.post('/v1/keys', json={'scopes': ['read']}).json()['id']}").json()
    assert key["key"] is None  # a key's secret is never shown again


def test_competition_writes_replay_after_a_crash_between_commit_and_answer(c):
    y = _data(2, n=30)[1]
    body = competition_body(y, 3, join_policy="invite")
    cid = c.post("/v1/competitions", json=body).json()["id"]
    codes = [x["code"] for x in c.post(f"/v1/competitions/{cid}/invitations", json={"n": 4}).json()["items"]]
    bearer = []  # the participants' headers
    for i in range(3):
        got = c.post(f"/v1/competitions/{cid}/participants", json={"name": f"p{i}", "invitation": codes[i]})
        bearer.append({"Authorization": f"Bearer {got.json()['token']}"})
    for i in (1, 2):  # two entries to aggregate
        got = c.post(f"/v1/competitions/{cid}/submissions", content=_entry(y, i), headers=bearer[i])
        assert got.status_code == 201, got.text
    market = c.post("/v1/markets", json={"n_agents": 2, "utilities": "log"}).json()["id"]
    sub = {"content": _entry(y, 0), "headers": bearer[0]}
    cases = [
        ("competition", "/v1/competitions", {"json": body}),
        ("invitations", f"/v1/competitions/{cid}/invitations", {"json": {"n": 2, "note": "n"}}),
        ("join", f"/v1/competitions/{cid}/participants", {"json": {"name": "p3", "invitation": codes[3]}}),
        ("submission", f"/v1/competitions/{cid}/submissions", sub),
        ("aggregation", f"/v1/competitions/{cid}/aggregations", {"json": {"methods": ["average", "linear"]}}),
    ]
    invitations, joined = _replay_after_a_crash(c, cases, market)[1:3]
    # the secrets shown once are not shown again: no invitation code, no participant token
    assert all("code" not in x for x in invitations["items"])
    assert joined["token"] is None and joined["name"] == "p3"
    listed = c.get(f"/v1/competitions/{cid}/invitations").json()["items"]
    assert len(listed) == 6 and sum(x["used"] for x in listed) == 4


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
