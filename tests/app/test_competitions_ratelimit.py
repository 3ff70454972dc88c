"""The per-address rate limit is kept in the database: two real server processes on one SQLite
file share one budget, and the sliding window counts the previous window's events (on SQLite and
PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from app.competitions.ratelimit import RateLimiter
from app.db import Database

from .conftest import ADMIN, Server


def test_the_window_slides_and_names_when_to_retry(db_url):
    db = Database.from_url(db_url)  # SQLite, and PostgreSQL when installed
    db.migrate()
    lim = RateLimiter(db, "join", 4, window=100)
    t = 10_000.0  # the start of a window
    assert [lim.allow("1.2.3.4", t + i) for i in range(5)] == [True] * 4 + [False]
    assert lim.allow("5.6.7.8", t + 5)  # another address has its own budget
    assert RateLimiter(db, "submit", 4, window=100).allow("1.2.3.4", t + 5)  # and another action
    assert lim.retry_after("1.2.3.4", t + 30) == 70  # the end of the current window
    # the next window still counts the previous one's events by the share of it within 100 s
    # (rounded up): 10 s in, 4 x 0.9 -> 4 used, no room; 60 s in, 4 x 0.4 -> 2 used, room for 2
    assert not lim.allow("1.2.3.4", t + 110)
    assert lim.allow("1.2.3.4", t + 160) and lim.allow("1.2.3.4", t + 161)
    assert not lim.allow("1.2.3.4", t + 162)
    assert lim.allow("1.2.3.4", t + 400)  # two windows later the budget is whole again


def test_two_server_processes_share_one_budget(tmp_path):
    url = f"sqlite:///{tmp_path}/agora.db"
    env = {"AGORA_COMPETITION_JOINS_PER_HOUR": "4"}
    a = Server(url, tmp_path, **env).start()
    b = Server(url, tmp_path, **env).start()
    try:
        body = {
            "title": "shared budget",
            "n_classes": 2,
            "labels": [0, 1] * 10,
            "deadline": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
        }
        r = httpx.post(a.url + "/v1/competitions", json=body, headers={"Authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 201, r.text
        cid = r.json()["id"]
        codes = []
        for i in range(8):  # alternate between the two processes
            s = (a, b)[i % 2]
            r = httpx.post(f"{s.url}/v1/competitions/{cid}/participants", json={"name": f"p{i}"}, timeout=30)
            codes.append(r.status_code)
            if r.status_code == 429:
                assert r.headers["content-type"].startswith("application/problem+json")
                assert int(r.headers["Retry-After"]) >= 1
        # a per-process budget would let 4 through each (8 in all); the shared one lets 4 through in all
        assert codes == [201] * 4 + [429] * 4, codes
        n = httpx.get(f"{b.url}/v1/competitions/{cid}").json()["n_participants"]
        assert n == 4
    finally:
        a.stop()
        b.stop()


def test_concurrent_events_never_exceed_the_budget(db_url):
    """Eight threads, each with its own connection, race for one key's window (the first events
    race to open it): exactly ``limit`` events are let through."""
    from concurrent.futures import ThreadPoolExecutor

    db = Database.from_url(db_url)
    db.migrate()
    lim = RateLimiter(db, "submit", 25, window=3600)
    now = 7200.0 + 5.0
    with ThreadPoolExecutor(8) as ex:
        allowed = list(ex.map(lambda _: lim.allow("9.9.9.9", now), range(80)))
    assert sum(allowed) == 25
