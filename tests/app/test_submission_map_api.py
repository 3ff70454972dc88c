"""GET /v1/competitions/{id}/submission-map: the organiser's map of which submissions are alike."""

from __future__ import annotations

import numpy as np

from app.competitions import parsing

from .test_competitions_api import ADMIN, H, N, _agent, _create, _data, _join, client  # noqa: F401


def _submit(client, token, lp):  # noqa: F811
    r = client.post(
        f"/v1/competitions/{client.cid}/submissions", content=parsing.to_npy(np.arange(N), lp), headers=H(token)
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_submission_map_finds_each_teams_near_copies(client):  # noqa: F811
    y = _data()
    client.cid = cid = _create(client, y)["id"]
    url = f"/v1/competitions/{cid}/submission-map"
    alice, bob, carol = (_join(client, cid, n) for n in ("alice", "bob", "carol"))
    rng = np.random.default_rng(7)
    a, b = _agent(y, 1.5, 11), _agent(y, 1.5, 12)
    ids = [_submit(client, alice, a), _submit(client, alice, a + 0.1 * rng.normal(size=a.shape))]
    r = client.get(url, headers=H(ADMIN))  # two submissions: too few for a map
    assert r.status_code == 409 and r.headers["content-type"].startswith("application/problem+json")
    assert "3 submissions" in r.json()["detail"]
    ids += [_submit(client, bob, b), _submit(client, bob, b + 0.1 * rng.normal(size=b.shape))]
    ids.append(_submit(client, carol, _agent(y, 1.5, 13)))

    assert client.get(url).status_code == 401
    assert client.get(url, headers=H(alice)).status_code == 403
    r = client.get(url, headers=H(ADMIN))
    assert r.status_code == 200, r.text
    m = r.json()
    assert len(m["nodes"]) == 5 and {n["participant"] for n in m["nodes"]} == {"alice", "bob", "carol"}
    node_of = {n["submission_id"]: i for i, n in enumerate(m["nodes"])}
    found = sorted(sorted(f) for f in m["families"])
    planted = sorted(sorted(node_of[s] for s in f) for f in (ids[:2], ids[2:4], ids[4:]))
    assert found == planted
    assert all(len(e["pair"]) == 2 and -1 <= e["weight"] <= 1 for e in m["edges"])
