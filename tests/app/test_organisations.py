"""Organisations of API keys, on SQLite and PostgreSQL: every key of an organisation sees, uses and
deletes what any key of it owns; nothing leaks to another organisation or to a key outside one, in
either direction; detaching a key ends its access; only admins manage organisations."""

from __future__ import annotations

import numpy as np
import pytest


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _key(c, name: str) -> tuple[str, str]:
    r = c.post("/v1/keys", json={"name": name, "scopes": ["read", "write"]})
    assert r.status_code == 201, r.text
    return r.json()["id"], r.json()["key"]


def _org(c, name: str, *key_ids: str) -> str:
    r = c.post("/v1/organisations", json={"name": name})
    assert r.status_code == 201, r.text
    oid = r.json()["id"]
    for k in key_ids:
        r = c.put(f"/v1/organisations/{oid}/keys/{k}")
        assert r.status_code == 200 and k in r.json()["keys"], r.text
    return oid


def _resources(c, key: str, seed: int) -> dict[str, str]:
    """A pool, a market, an upload and a job created by ``key``: their URLs."""
    rng = np.random.default_rng(seed)
    lp = np.log(rng.dirichlet(np.ones(3), size=(12, 2)))
    y = rng.integers(0, 3, 12)
    body = {"method": "bma", "predictions": lp.tolist(), "labels": y.tolist()}
    pool = c.post("/v1/pools", json=body, headers=_h(key))
    job = c.post("/v1/pools", json=body | {"background": True}, headers=_h(key))
    market = c.post("/v1/markets", json={"n_agents": 2, "utilities": "log"}, headers=_h(key))
    arr = c.post("/v1/arrays", content=_npy(lp), headers=_h(key) | {"content-type": "application/x-npy"})
    assert (pool.status_code, job.status_code, market.status_code, arr.status_code) == (201, 202, 201, 201), (
        pool.text,
        job.text,
        market.text,
        arr.text,
    )
    return {
        "pools": f"/v1/pools/{pool.json()['id']}",
        "jobs": f"/v1/jobs/{job.json()['id']}",
        "markets": f"/v1/markets/{market.json()['id']}",
        "arrays": f"/v1/arrays/{arr.json()['id']}",
    }


def _npy(arr) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _listed(c, key: str, collection: str) -> set[str]:
    r = c.get(f"/v1/{collection}", headers=_h(key))
    assert r.status_code == 200, r.text
    return {f"/v1/{collection}/{item['id']}" for item in r.json()["items"]}


def _sees(c, key: str, urls: dict[str, str]) -> dict[str, bool]:
    """Per collection: whether ``key`` reads the resource, uses it by id, and finds it in its list."""
    out = {}
    for coll, url in urls.items():
        got = c.get(url, headers=_h(key)).status_code
        assert got in (200, 403), (url, got)
        listed = url in _listed(c, key, coll) if coll != "arrays" else got == 200
        assert (got == 200) == listed, (key, url, got, listed)
        out[coll] = got == 200
    aid = urls["arrays"].rsplit("/", 1)[1]
    used = c.post("/v1/aggregate", json={"method": "average", "predictions": {"array_id": aid}}, headers=_h(key))
    assert used.status_code in (200, 422), used.text
    assert (used.status_code == 200) == out["arrays"], used.text
    return out


ALL = {"pools": True, "jobs": True, "markets": True, "arrays": True}
NONE = {k: False for k in ALL}


@pytest.fixture
def c(make_client, db_url):
    return make_client(db_url)


def test_organisation_members_share_and_nothing_leaks_either_way(c):
    (a1, a1s), (a2, a2s), (b1, b1s), (_, loner) = (_key(c, n) for n in ("a1", "a2", "b1", "loner"))
    org_a = _org(c, "A", a1, a2)
    _org(c, "B", b1)
    mine_a = _resources(c, a1s, 1)
    mine_b = _resources(c, b1s, 2)
    mine_loner = _resources(c, loner, 3)
    assert _sees(c, a1s, mine_a) == ALL and _sees(c, a2s, mine_a) == ALL  # a1's things: every key of A
    assert _sees(c, b1s, mine_a) == NONE and _sees(c, loner, mine_a) == NONE  # not B, not a key outside
    assert _sees(c, a1s, mine_b) == NONE and _sees(c, a2s, mine_b) == NONE  # the other way round
    assert _sees(c, a1s, mine_loner) == NONE and _sees(c, b1s, mine_loner) == NONE
    assert _sees(c, loner, mine_loner) == ALL
    # a key of A acts on what another key of A created: cancels its job, trains and deletes its market
    assert c.post(mine_a["jobs"] + "/cancel", headers=_h(a2s)).status_code in (200, 202)
    assert c.delete(mine_a["markets"], headers=_h(a2s)).status_code == 204
    assert c.delete(mine_b["pools"], headers=_h(a2s)).status_code == 403
    # admins see all
    assert _sees(c, "test-admin-key", mine_b) == ALL
    # detached, a2 no longer sees A's things (and a1 does not see a2's new ones)
    assert c.delete(f"/v1/organisations/{org_a}/keys/{a2}").status_code == 204
    assert _sees(c, a2s, {k: v for k, v in mine_a.items() if k != "markets"}) == {
        "pools": False,
        "jobs": False,
        "arrays": False,
    }
    after = _resources(c, a2s, 4)
    assert _sees(c, a1s, after) == NONE
    org = c.get(f"/v1/organisations/{org_a}").json()
    assert org["keys"] == [a1]
    assert {k["id"]: k["organisation_id"] for k in c.get("/v1/keys").json()}[a1] == org_a


def test_only_admins_manage_organisations(c):
    (k, ks) = _key(c, "k")
    org = _org(c, "O")
    for method, url, body in (
        ("POST", "/v1/organisations", {"name": "x"}),
        ("GET", "/v1/organisations", None),
        ("GET", f"/v1/organisations/{org}", None),
        ("PUT", f"/v1/organisations/{org}/keys/{k}", None),
        ("DELETE", f"/v1/organisations/{org}/keys/{k}", None),
    ):
        r = c.request(method, url, json=body, headers=_h(ks))
        assert r.status_code == 403 and "admin" in r.json()["detail"], (method, url, r.text)
    assert c.put(f"/v1/organisations/{org}/keys/key_nope").status_code == 404
    r = c.put(f"/v1/organisations/org_nope/keys/{k}")
    assert r.status_code == 404 and r.json()["errors"][0]["field"] == "organisation_id"
    assert c.delete(f"/v1/organisations/{org}/keys/{k}").status_code == 404  # not one of its keys
    r = c.post("/v1/organisations", json={"name": "x", "owner": "me"})
    assert r.status_code == 422


def test_a_competition_is_organised_by_every_key_of_its_organisers_organisation(c):
    """The organiser's rights on a competition (here: reading its split) extend to the keys of the
    organiser's organisation, and to no other key."""
    from .conftest import competition_body

    (a1, a1s), (a2, a2s), (_, loner) = (_key(c, n) for n in ("a1", "a2", "loner"))
    _org(c, "A", a1, a2)
    y = np.random.default_rng(0).integers(0, 3, 40)
    comp = c.post("/v1/competitions", json=competition_body(y, 3), headers=_h(a1s))
    assert comp.status_code == 201, comp.text
    split = f"/v1/competitions/{comp.json()['id']}/split"
    assert c.get(split, headers=_h(a1s)).status_code == 200
    assert c.get(split, headers=_h(a2s)).status_code == 200  # another key of the same organisation
    assert c.get(split, headers=_h(loner)).status_code == 403
