"""A competition end to end against a real ``agora serve`` (uvicorn) process: the typed client's
competition methods and ``examples/competition.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from aggregators.metrics import perplexity
from app.client import AgoraClient, AgoraError

from .conftest import ADMIN, REPO, Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e-comp")
    # several tests join from this one address: a budget that they do not exhaust together
    s = Server(f"sqlite:///{d}/agora.db", d, AGORA_COMPETITION_JOINS_PER_HOUR="1000").start()
    s.db_file = d / "agora.db"
    yield s
    s.stop()


def _split(server, cid):
    from app.competitions.models import Competition
    from app.db import Database
    from evaluation.split import public_private_split

    db = Database.from_url(f"sqlite:///{server.db_file}")
    with db.sessions() as session:
        c = session.get(Competition, cid)
        return public_private_split(c.n_items, c.public_fraction, c.split_seed)


def test_client_competition_lifecycle(server):
    rng = np.random.default_rng(0)
    n, k = 120, 3
    y = rng.integers(0, k, n)
    ids = rng.choice(2**62, n, replace=False).astype(np.int64) + 2**62  # above 2^53: exact or refused
    deadline = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    with AgoraClient(server.url, api_key=ADMIN) as org:
        comp = org.create_competition("e2e", k, y, deadline, item_ids=ids, join_policy="invite")
        cid = comp["id"]
        codes = org.invite(cid, 3)
        with pytest.raises(AgoraError) as e:
            org.join(cid, "nobody")
        assert e.value.status == 403
        subs = []
        for a, strength in enumerate((2.0, 1.5, 1.0)):  # all clearly better than uniform, so all are used
            token = org.join(cid, f"p{a}", invitation=codes[a])["token"]
            with AgoraClient(server.url, api_key=token) as me:
                items = me.competition_items(cid)
                np.testing.assert_array_equal(items, ids)
                s = rng.normal(size=(n, k))
                s[np.arange(n), y] += strength
                sub = me.submit(cid, items, s)
                lp = s - np.log(np.exp(s).sum(1, keepdims=True))
                subs.append((sub, lp))
        pub = _split(server, cid)  # read from the server's database, to recompute every score
        org_view = {x["id"]: x for x in org.competition_submissions(cid)}
        for sub, lp in subs:
            full = org_view[sub["id"]]
            assert full["public_perplexity"] == pytest.approx(perplexity(lp[pub], y[pub]), rel=1e-6)
            assert full["private_perplexity"] == pytest.approx(perplexity(lp[~pub], y[~pub]), rel=1e-6)
            assert sub["public_perplexity"] == full["public_perplexity"]  # exact scores: shown = exact
        run = org.aggregate_competition(cid, methods=["average", "linear"])
        rows = {r["method"]: r for r in run["result"]["rows"]}
        assert len(run["result"]["used"]) == 3 and run["result"]["left_out"] == []
        mix = np.log(np.mean([np.exp(lp) for _, lp in subs], axis=0))  # Eq. (2.1) by hand
        assert rows["average"]["private_perplexity"] == pytest.approx(perplexity(mix[~pub], y[~pub]), rel=1e-5)
        assert len(run["result"]["used"]) == 3 and run["result"]["left_out"] == []
        assert org.pin_aggregation(cid, run["id"])["pinned_aggregation_id"] == run["id"]
        assert org.leaderboard(cid)["aggregation_id"] == run["id"]


def test_the_competition_example_runs_against_the_server(server):
    env = {**os.environ, "AGORA_URL": server.url, "AGORA_API_KEY": ADMIN}
    r = subprocess.run(
        [sys.executable, str(REPO / "examples" / "competition.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    out = r.stdout
    assert "joining without an invitation: 403" in out and "Simple average" in out and "rank 1" in out


def test_a_run_reports_progress_that_moves(server):
    """Issue 14 §4: progress sat at 22% for 29 s. Poll the job and the run on the live server while
    every method runs: the fraction never goes back, takes many values, the run's stage names
    the Rényi fit of the sweep, the market epoch and the leave-one-out refit as they happen, and the
    ETA tracks the time actually left."""
    rng = np.random.default_rng(4)
    n, k, n_agents = 12000, 8, 16  # long enough to poll many values on an idle machine (4,000 x 10 gave 10)
    y = rng.integers(0, k, n)
    deadline = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    with AgoraClient(server.url, api_key=ADMIN) as org:
        cid = org.create_competition("progress", k, y, deadline)["id"]
        for a in range(n_agents):
            token = org.join(cid, f"m{a}")["token"]
            s = rng.normal(scale=1.0 + 0.1 * a, size=(n, k))
            s[np.arange(n), y] += 1.5 + 0.1 * a
            with AgoraClient(server.url, api_key=token) as me:
                me.submit(cid, np.arange(n), s)
        run = org.aggregate_competition(cid, market_max_epochs=200, wait=False)  # every method, 7-point sweep
        seen, clock = [], []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 900:
            job = org.get_job(run["job_id"])
            stage = org.get_competition_aggregation(cid, run["id"])["stage"]
            seen.append((job["progress"], job["eta_seconds"], stage, job["state"]))
            clock.append(time.monotonic() - t0)
            if job["state"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.05)
    assert seen[-1][3] == "succeeded", seen[-1]
    # the ETA tracks the time actually left from a quarter of the run on: the old rule (a straight line
    # over fixed weights, with the credible bands unreported) was off by 8.8-16.9x at worst and within
    # 2x on 0-1 % of the reports (benchmarks/results/aggregation-eta.md). On an idle machine 90 % of the
    # polls are now within a factor 2; in a fresh clone's CI run (cold caches, both cores busy) half were
    # (worst 8x), so the test asserts the median within a factor 3. The stored figure only moves when
    # the run reports progress: polls with under 2 s left are not judged
    total = clock[-1]
    judged = [
        (t, p, eta, total - t)
        for t, (p, eta, stage, st) in zip(clock, seen, strict=True)
        if st == "running" and t >= 0.25 * total and total - t >= 2.0 and 0 < p < 1
    ]

    def off(eta: float | None, left: float) -> float:
        return np.inf if not eta else max(eta / left, left / eta)

    ours = np.median([off(eta, left) for _, _, eta, left in judged])
    assert judged and ours <= 3.0, (total, ours, judged)
    progress = [p for p, _, _, _ in seen]
    assert all(b >= a for a, b in zip(progress, progress[1:], strict=False)), "progress went back"
    assert progress[-1] == 1.0 and len(set(progress)) >= 15, sorted(set(progress))
    stages = [s for _, _, s, _ in seen]
    for prefix in ("renyi: fit", "market: epoch", "leave-one-out"):
        assert any(s.startswith(prefix) for s in stages), (prefix, sorted(set(stages)))
    assert len({s for s in stages if s.startswith("renyi: fit")}) >= 3  # several sweep points seen
    assert any(eta is not None and eta > 0 for p, eta, _, st in seen if st == "running" and p < 1)
    assert stages[-1] == "done"


def test_client_split_and_invitations(server):
    """The typed client's organiser methods against the live server: a grouped split made from a
    column of strings, redrawn stratified before the first submission; invitations listed and revoked."""
    rng = np.random.default_rng(5)
    n = 90
    y = rng.integers(0, 3, n)
    photos = np.repeat([f"photo{i}" for i in range(9)], 10)
    deadline = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    with AgoraClient(server.url, api_key=ADMIN) as org:
        cid = org.create_competition("split", 3, y, deadline, split="grouped", groups=photos, join_policy="invite")[
            "id"
        ]
        s = org.competition_split(cid)
        public = np.isin(np.arange(n), s["public_item_ids"])
        assert s["split"] == "grouped" and s["n_public"] % 10 == 0
        assert all(len(set(public[photos == p])) == 1 for p in set(photos))
        s = org.define_split(cid, "stratified", public_fraction=0.4)
        public = np.isin(np.arange(n), s["public_item_ids"])
        assert s["split"] == "stratified" and s["n_public"] == 36
        assert all(abs(public[y == c].sum() - 0.4 * (y == c).sum()) < 1 for c in range(3))
        codes = org.invite(cid, 2, note="lab")
        listed = org.invitations(cid)
        assert [x["used"] for x in listed] == [False, False] and all("code" not in x for x in listed)
        org.revoke_invitation(cid, listed[0]["id"])
        assert [x["id"] for x in org.invitations(cid)] == [listed[1]["id"]]
        with pytest.raises(AgoraError) as e:  # the first code was revoked (codes come in issue order)
            org.join(cid, "eve", invitation=codes[0])
        assert e.value.status == 403
        token = org.join(cid, "ann", invitation=codes[1])["token"]
        with AgoraClient(server.url, api_key=token) as me:
            me.submit(cid, np.arange(n), rng.normal(size=(n, 3)))
        with pytest.raises(AgoraError) as e:
            org.define_split(cid, "random")
        assert e.value.status == 409
