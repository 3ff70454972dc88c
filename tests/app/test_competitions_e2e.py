"""A competition end to end against a real ``agora serve`` (uvicorn) process: the typed client's
competition methods and ``examples/competition.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from aggregators.metrics import perplexity
from app.client import AgoraClient, AgoraError

from .conftest import ADMIN, REPO, Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e-comp")
    s = Server(f"sqlite:///{d}/agora.db", d).start()
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
