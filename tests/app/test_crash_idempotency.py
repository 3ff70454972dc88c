"""kill -9 of a real ``agora serve`` during concurrent idempotent writes, on SQLite and PostgreSQL.

Clients create pools with an ``Idempotency-Key`` each from several threads; the server is SIGKILLed
while writes are in flight, restarted, and every key is retried until it answers. Asserted: 0 lost
(every acknowledged write is there and its key replays the same pool), 0 duplicated (one pool per
key), 0 keys stuck (each answers within the lease after the restart), 0 orphans (no pool left
``pending``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from .conftest import ADMIN, Server

H = {"Authorization": f"Bearer {ADMIN}"}


def _body(i: int) -> dict:
    rng = np.random.default_rng(i)
    p = rng.dirichlet(np.ones(4), size=(60, 5))
    return {
        "method": "renyi",
        "gamma": 0.5,
        "predictions": np.log(p).tolist(),
        "labels": rng.integers(0, 4, 60).tolist(),
    }


def _pools(url: str) -> list[dict]:
    out, cursor = [], None
    with httpx.Client(base_url=url, headers=H, timeout=30) as c:
        while True:
            r = c.get("/v1/pools", params={"limit": 500, **({"cursor": cursor} if cursor else {})})
            assert r.status_code == 200, r.text
            out += r.json()["items"]
            cursor = r.json()["next_cursor"]
            if not cursor:
                return out


def run_crash(db_url: str, tmp_path, n: int, threads: int = 8, kill_after: float = 0.3) -> None:
    srv = Server(db_url, tmp_path, AGORA_IDEMPOTENCY_LEASE_SECONDS="2", AGORA_JOB_THRESHOLD="1000000000").start()
    bodies = {f"crash-{i}": _body(i) for i in range(n)}
    acked: dict[str, str] = {}
    lock = threading.Lock()

    def write(key: str) -> None:
        try:
            r = httpx.post(srv.url + "/v1/pools", json=bodies[key], headers={**H, "Idempotency-Key": key}, timeout=60)
        except httpx.TransportError:
            return  # the server died under this request: unacknowledged
        if r.status_code == 201:
            with lock:
                acked[key] = r.json()["id"]

    try:
        with ThreadPoolExecutor(threads) as ex:
            futures = [ex.submit(write, k) for k in bodies]
            t0 = time.monotonic()
            while len(acked) < kill_after * n and time.monotonic() - t0 < 120:
                time.sleep(0.01)
            srv.proc.kill()  # SIGKILL, writes in flight
            srv.proc.wait(10)
            for f in futures:
                f.result()
        assert 0 < len(acked) < n, f"the kill should land mid-run; acknowledged {len(acked)} of {n}"
        srv.proc = None
        srv.start()
        final: dict[str, str] = {}
        deadline = time.monotonic() + 60  # the lease is 2 s: nothing may stay stuck longer than this
        with httpx.Client(base_url=srv.url, headers=H, timeout=60) as c:
            pending = list(bodies)
            while pending and time.monotonic() < deadline:
                later = []
                for key in pending:
                    r = c.post("/v1/pools", json=bodies[key], headers={"Idempotency-Key": key})
                    if r.status_code == 409:
                        later.append(key)
                        continue
                    assert r.status_code == 201, r.text
                    final[key] = r.json()["id"]
                    if key in acked:  # an acknowledged write replays, it is not made again
                        assert r.headers.get("idempotent-replayed") == "true"
                pending = later
                if pending:
                    time.sleep(0.5)
            assert not pending, f"{len(pending)} keys stuck in progress"
        lost = [k for k, pid in acked.items() if final[k] != pid]
        assert not lost, f"acknowledged writes lost or remade: {lost}"
        pools = _pools(srv.url)
        ids = [p["id"] for p in pools]
        assert len(ids) == len(set(ids)) == n, f"{len(ids)} pools for {n} keys (duplicates or losses)"
        assert set(ids) == set(final.values())
        orphans = [p["id"] for p in pools if p["status"] != "ready"]
        assert not orphans, f"orphan pools: {orphans}"
    finally:
        srv.stop()


def test_sigkill_during_idempotent_writes(db_url, tmp_path):
    run_crash(db_url, tmp_path, n=40)


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_sigkill_during_300_idempotent_writes(db_url, tmp_path, round_):
    run_crash(db_url, tmp_path, n=300, threads=16, kill_after=0.2 + 0.3 * round_)
