"""Competitions over the API (in-process TestClient, real SQLite file, real job runner)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient

from aggregators.metrics import perplexity
from app.competitions import parsing
from app.competitions.models import Competition, Submission
from app.main import create_app
from app.settings import Settings
from evaluation.split import public_private_split

from .conftest import competition_body, finished_job

ADMIN = "test-admin-key-competitions"
K = 5
N = 200


def _data(seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, N)
    return y


def _agent(y, strength, seed, unnormalised=True):
    """Log-probabilities that put extra mass on the truth (strength) plus noise, unnormalised."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(len(y), K))
    s[np.arange(len(y)), y] += strength
    return s + (5.0 if unnormalised else 0.0)


@pytest.fixture()
def client(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path}/t.db", admin_key=ADMIN, job_workers=1)
    app = create_app(settings)
    with TestClient(app) as c:
        c.app_ref = app
        yield c


def H(key):
    return {"Authorization": f"Bearer {key}"}


def _create(client, y, deadline=None, **kw):
    body = competition_body(y, K, deadline=deadline, **{"daily_cap": 3, "n_select": 1, **kw})
    r = client.post("/v1/competitions", json=body, headers=H(ADMIN))
    assert r.status_code == 201, r.text
    return r.json()


def _join(client, cid, name):
    r = client.post(f"/v1/competitions/{cid}/participants", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["token"]


def _split(client, cid):
    with client.app_ref.state.db.sessions() as s:
        c = s.get(Competition, cid)
        return public_private_split(c.n_items, c.public_fraction, c.split_seed)


def test_full_competition_over_the_api(client):
    y = _data()
    comp = _create(client, y)
    cid = comp["id"]
    assert comp["role"] == "organiser" and "labels" not in comp and "split_seed" not in str(comp)
    alice, bob = _join(client, cid, "alice"), _join(client, cid, "bob")
    assert client.post(f"/v1/competitions/{cid}/participants", json={"name": "alice"}).status_code == 409

    # a good submission: unnormalised log-probs, rows shuffled; public score at once, private hidden
    lp = _agent(y, 2.0, 1)
    perm = np.random.default_rng(5).permutation(N)
    r = client.post(
        f"/v1/competitions/{cid}/submissions?description=first",
        content=parsing.to_csv(perm, lp[perm]),
        headers={**H(alice), "Content-Type": "text/csv"},
    )
    assert r.status_code == 201, r.text
    sub = r.json()
    pub = _split(client, cid)
    ref = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    assert sub["public_perplexity"] == pytest.approx(perplexity(ref[pub], y[pub]), rel=1e-4)
    assert "private_perplexity" not in sub and "private_log_loss" not in sub

    # multipart .npy upload from bob, and a bad one that stores nothing
    r = client.post(
        f"/v1/competitions/{cid}/submissions",
        files={"file": ("b.npy", parsing.to_npy(np.arange(N), _agent(y, 1.0, 2)))},
        headers=H(bob),
    )
    assert r.status_code == 201, r.text
    bad = _agent(y, 1.0, 3)
    bad[7, 2] = np.nan
    r = client.post(
        f"/v1/competitions/{cid}/submissions", content=parsing.to_npy(np.arange(N) + 1, bad), headers=H(bob)
    )
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    rep = r.json()["report"]
    codes = {e["code"] for e in rep["errors"]}
    assert codes == {"unknown_ids", "missing_ids", "nan"}
    with client.app_ref.state.db.sessions() as s:
        assert s.query(Submission).count() == 2

    # participants see only their own submissions; anonymous sees none
    mine = client.get(f"/v1/competitions/{cid}/submissions", headers=H(bob)).json()["items"]
    assert len(mine) == 1 and all("private_perplexity" not in m for m in mine)
    assert client.get(f"/v1/competitions/{cid}/submissions").status_code == 401
    assert client.get(f"/v1/competitions/{cid}/submissions/{sub['id']}", headers=H(bob)).status_code == 404
    org = client.get(f"/v1/competitions/{cid}/submissions", headers=H(ADMIN)).json()["items"]
    assert len(org) == 2 and all("private_perplexity" in m for m in org)

    # leaderboard: public, alice (stronger agent) first; private hidden before the deadline
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()
    assert [r["participant"] for r in lb["rows"]] == ["alice", "bob"] and lb["which"] == "public"
    assert client.get(f"/v1/competitions/{cid}/leaderboard?which=private").status_code == 403
    assert client.get(f"/v1/competitions/{cid}/leaderboard?which=private", headers=H(alice)).status_code == 403
    assert client.get(f"/v1/competitions/{cid}/leaderboard?which=private", headers=H(ADMIN)).status_code == 200

    # daily cap (3): alice has used 1
    for i in range(2):
        r = client.post(
            f"/v1/competitions/{cid}/submissions",
            content=parsing.to_npy(np.arange(N), _agent(y, 1.5, 10 + i)),
            headers=H(alice),
        )
        assert r.status_code == 201
    r = client.post(
        f"/v1/competitions/{cid}/submissions",
        content=parsing.to_npy(np.arange(N), _agent(y, 1.5, 20)),
        headers=H(alice),
    )
    assert r.status_code == 429 and r.json()["errors"][0]["field"] == "file"

    # selection: n_select = 1
    s1 = client.post(
        f"/v1/competitions/{cid}/submissions/{sub['id']}/selection", json={"selected": True}, headers=H(alice)
    )
    assert s1.status_code == 200 and s1.json()["selected"]
    other = [
        m
        for m in client.get(f"/v1/competitions/{cid}/submissions", headers=H(alice)).json()["items"]
        if m["id"] != sub["id"]
    ][0]
    assert (
        client.post(
            f"/v1/competitions/{cid}/submissions/{other['id']}/selection", json={"selected": True}, headers=H(alice)
        ).status_code
        == 409
    )
    # bob cannot select alice's entry
    assert (
        client.post(
            f"/v1/competitions/{cid}/submissions/{sub['id']}/selection", json={"selected": True}, headers=H(bob)
        ).status_code
        == 404
    )


def test_aggregation_job_and_views(client):
    y = _data(1)
    cid = _create(client, y)["id"]
    lps = {}
    for i, strength in enumerate([1.5, 1.0, 0.8, 1.2]):
        tok = _join(client, cid, f"p{i}")
        raw = _agent(y, strength, 30 + i)
        r = client.post(
            f"/v1/competitions/{cid}/submissions", content=parsing.to_npy(np.arange(N), raw), headers=H(tok)
        )
        assert r.status_code == 201
        lps[r.json()["id"]] = raw - np.log(np.exp(raw).sum(1, keepdims=True))
    # a uniform entry (public perplexity = K) is left out of the run, with the reason
    r = client.post(
        f"/v1/competitions/{cid}/submissions",
        content=parsing.to_npy(np.arange(N), np.zeros((N, K))),
        headers=H(_join(client, cid, "flat")),
    )
    uniform_id = r.json()["id"]
    assert client.post(f"/v1/competitions/{cid}/aggregations", json={}, headers=H(tok)).status_code == 403
    r = client.post(
        f"/v1/competitions/{cid}/aggregations",
        json={
            "etas": [10],
            "methods": ["topk", "power_bma", "linear", "log", "renyi", "market"],
            "market_max_epochs": 3,
        },
        headers=H(ADMIN),
    )
    agg_id = r.json()["id"]
    j = finished_job(client, r, ADMIN)
    assert j["state"] == "succeeded", j
    assert set(j["result"]) == {"aggregation_id", "competition_id"}  # the job resource holds no scores
    full = client.get(f"/v1/competitions/{cid}/aggregations/{agg_id}", headers=H(ADMIN)).json()
    rows = {r["method"]: r for r in full["result"]["rows"]}
    assert "best_single" in rows and "topk" in rows and "private_perplexity" in rows["topk"]
    # the best single entry is the strongest agent, and its private score is its own submission's
    subs = client.get(f"/v1/competitions/{cid}/submissions", headers=H(ADMIN)).json()["items"]
    best = min(subs, key=lambda s: s["public_perplexity"])
    assert rows["best_single"]["params"]["submission_id"] == best["id"]
    assert rows["best_single"]["private_perplexity"] == pytest.approx(best["private_perplexity"], rel=1e-5)
    for m in ("linear", "log", "renyi", "market"):
        assert "error" not in rows[m], rows[m]
    res = full["result"]
    assert [p["eta"] for p in res["gamma_sweep"]] == [1.0, 10.0]
    assert sorted(u["submission_id"] for u in res["used"]) == sorted(lps)
    assert [(x["submission_id"], x["participant"]) for x in res["left_out"]] == [(uniform_id, "flat")]
    assert "uniform guess" in res["left_out"][0]["reason"]
    market = rows["market"]["params"]  # the organiser's epoch cap, reported with the convergence
    assert market["max_epochs"] == 3 and market["epochs"] <= 3 and isinstance(market["converged"], bool)
    assert full["stage"] == "done"
    # every fitted pool is a /v1/pools resource, the market included
    assert set(res["pools"]) == {"topk", "power_bma", "linear", "log", "renyi", "market"}
    # every method's aggregate on every item is downloadable, the market's included
    assert set(res["predictions"]) == {"best_single", "topk", "power_bma", "linear", "log", "renyi", "market"}
    r = client.get(f"/v1/competitions/{cid}/aggregations/{agg_id}/predictions/market?format=csv", headers=H(ADMIN))
    table = np.loadtxt(io.StringIO(r.text), delimiter=",", skiprows=1)
    assert table.shape == (N, K + 1) and np.allclose(np.exp(table[:, 1:]).sum(axis=1), 1.0, atol=1e-9)
    # the stored market predicts new items: on the first 9 test items it gives the run's aggregate
    stored = [
        np.load(
            io.BytesIO(
                client.get(f"/v1/competitions/{cid}/submissions/{u['submission_id']}/data", headers=H(ADMIN)).content
            )
        )["log_probs"]
        for u in res["used"]
    ]
    market_pool = client.get(f"/v1/pools/{res['pools']['market']}", headers=H(ADMIN)).json()
    assert market_pool["method"] == "market" and market_pool["n_agents"] == len(res["used"])
    r = client.post(
        f"/v1/pools/{res['pools']['market']}/predict",
        json={"predictions": np.stack(stored, axis=1)[:9].tolist()},
        headers=H(ADMIN),
    )
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(np.asarray(r.json()["aggregate"]), table[:9, 1:], atol=1e-8)
    # the linear row, recomputed by hand from the credited weights: log sum_i w_i p_i on the private part
    priv = ~_split(client, cid)
    w = np.array([c["weight_linear"] for c in res["credit"]])
    P = np.stack([np.exp(lps[c["submission_id"]][priv]) for c in res["credit"]], axis=1)
    mix = np.log(np.einsum("a,nak->nk", w, P))
    assert rows["linear"]["private_perplexity"] == pytest.approx(perplexity(mix, y[priv]), rel=1e-4)
    # the log pool by hand too: normalised sum_i w_i log p_i
    wl = np.array([c["weight_log"] for c in res["credit"]])
    s_ = np.einsum("a,nak->nk", wl, np.log(P))
    s_ -= np.log(np.exp(s_).sum(1, keepdims=True))
    assert rows["log"]["private_perplexity"] == pytest.approx(perplexity(s_, y[priv]), rel=1e-3)
    assert sum(c["weight_log"] for c in res["credit"]) == pytest.approx(1.0, abs=1e-6)
    assert sum(c["market_wealth"] for c in res["credit"]) == pytest.approx(1.0, abs=1e-6)  # wealth is conserved
    assert all("loo_gain" in c for c in res["credit"])
    # others see only public columns before the deadline
    pub = client.get(f"/v1/competitions/{cid}/aggregations/{agg_id}").json()
    assert "credit" not in pub["result"] and all("private_perplexity" not in r for r in pub["result"]["rows"])
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()
    assert lb["aggregates"] and all(
        set(r) <= {"method", "label", "params", "public_perplexity", "error", "seconds"} for r in lb["aggregates"]
    )


def test_after_deadline_private_leaderboard_and_closed(client):
    y = _data(2)
    cid = _create(client, y, deadline=datetime.now(UTC) + timedelta(hours=1))["id"]  # moved to the past below
    toks = [_join(client, cid, n) for n in ("a", "b")]
    for t, st in zip(toks, (0.5, 2.0)):
        assert (
            client.post(
                f"/v1/competitions/{cid}/submissions",
                content=parsing.to_npy(np.arange(N), _agent(y, st, 40)),
                headers=H(t),
            ).status_code
            == 201
        )
    with client.app_ref.state.db.sessions() as s:  # move the deadline to the past
        c = s.get(Competition, cid)
        c.deadline = datetime.now(UTC) - timedelta(seconds=1)
        s.commit()
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()
    assert lb["which"] == "private" and [r["participant"] for r in lb["rows"]] == ["b", "a"]
    mine = client.get(f"/v1/competitions/{cid}/submissions", headers=H(toks[0])).json()["items"]
    assert "private_perplexity" in mine[0]
    r = client.post(
        f"/v1/competitions/{cid}/submissions",
        content=parsing.to_npy(np.arange(N), _agent(y, 1, 41)),
        headers=H(toks[0]),
    )
    assert r.status_code == 409


def test_create_validation_errors(client):
    r = client.post(
        "/v1/competitions",
        json={"title": "x", "n_classes": 3, "labels": [0, 1, 5], "deadline": "2030-01-01T00:00:00Z"},
        headers=H(ADMIN),
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "labels"
    assert "5" not in r.json()["detail"].replace("0..2", "")  # the bad label value is not echoed
    r = client.post(
        "/v1/competitions", json={"title": "x", "n_classes": 3, "labels": [0, 1, 2], "deadline": "2030-01-01T00:00:00Z"}
    )
    assert r.status_code == 401
    for bad in ([[0, 1], [2]], [[0, 1], [1, 2]], ["a", "b"], [True, False], [0.5, 1.0]):
        r = client.post(
            "/v1/competitions",
            json={"title": "x", "n_classes": 3, "labels": bad, "deadline": "2030-01-01T00:00:00Z"},
            headers=H(ADMIN),
        )
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == "labels", (bad, r.text)
    # a competition that cannot aggregate yet says why
    cid = _create(client, _data(3))["id"]
    r = client.post(f"/v1/competitions/{cid}/aggregations", json={}, headers=H(ADMIN))
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "submissions"
    r = client.post(f"/v1/competitions/{cid}/aggregations", json={"etas": [0.5]}, headers=H(ADMIN))
    assert r.status_code == 422


def test_the_run_pools_belong_to_the_organiser_key(client):
    """A run's pools (the market's included) are the organiser's resources: its own ``write`` key
    reads them and predicts with them; another key gets 403."""
    from app.auth import create_key

    with client.app_ref.state.db.sessions() as s:
        _, org = create_key(s, "organiser", ["read", "write"])
        _, other = create_key(s, "someone else", ["read", "write"])
    y = _data(3)
    r = client.post("/v1/competitions", json=competition_body(y, K), headers=H(org))
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    lps = []
    for i, st in enumerate((2.5, 2.0, 1.5)):
        lps.append(_agent(y, st, 40 + i, unnormalised=False))
        r = client.post(
            f"/v1/competitions/{cid}/submissions",
            content=parsing.to_npy(np.arange(N), lps[-1]),
            headers=H(_join(client, cid, f"p{i}")),
        )
        assert r.status_code == 201, r.text
    r = client.post(f"/v1/competitions/{cid}/aggregations", json={"methods": ["linear", "market"]}, headers=H(org))
    j = finished_job(client, r, org)
    assert j["state"] == "succeeded", j
    res = client.get(f"/v1/competitions/{cid}/aggregations/{r.json()['id']}", headers=H(org)).json()["result"]
    assert set(res["pools"]) == {"linear", "market"}
    used = {u["submission_id"]: i for i, u in enumerate(res["used"])}
    assert len(used) == 3
    new = np.random.default_rng(9).dirichlet(np.ones(K), size=(4, 3))
    for method, pid in res["pools"].items():
        assert client.get(f"/v1/pools/{pid}", headers=H(org)).status_code == 200, method
        assert client.get(f"/v1/pools/{pid}", headers=H(other)).status_code == 403, method
        p = client.post(f"/v1/pools/{pid}/predict", json={"predictions": new.tolist(), "kind": "probs"}, headers=H(org))
        assert p.status_code == 200, p.text
        agg = np.asarray(p.json()["aggregate"])  # probabilities, as the input's kind
        assert agg.shape == (4, K) and np.allclose(agg.sum(axis=1), 1.0, atol=1e-9) and (agg > 0).all()
