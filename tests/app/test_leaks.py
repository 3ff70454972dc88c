"""Leak tests: before the deadline no route, page, log line, error message or export reveals the
hidden labels, the server's split seed or a private score, and participants see only their own
submissions. Every route of the app is called as an anonymous visitor, as a participant, as a
participant of another competition and as another organiser, with real ids in the path."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.auth import create_key
from app.competitions import parsing
from app.competitions import service as svc
from app.competitions.models import AggregationRun, Competition, Submission
from app.main import create_app
from app.settings import Settings

ADMIN = "leak-test-admin-key"
HIDDEN_KEYS = re.compile(
    r'"(labels|split_seed|private_perplexity|private_log_loss|perplexity_mean|loo_gain|credit)"\s*:'
)
K, N = 5, 200


def H(k):
    return {"Authorization": f"Bearer {k}"} if k else {}


@pytest.fixture()
def world(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path}/leak.db", admin_key=ADMIN, job_workers=1))
    with TestClient(app) as c:
        rng = np.random.default_rng(11)
        y = rng.integers(0, K, N)
        dl = (datetime.now(UTC) + timedelta(days=2)).isoformat()
        cid = c.post(
            "/v1/competitions",
            json={"title": "secret cup", "n_classes": K, "labels": y.tolist(), "deadline": dl},
            headers=H(ADMIN),
        ).json()["id"]
        other = c.post(
            "/v1/competitions",
            json={"title": "other cup", "n_classes": K, "labels": y[:50].tolist(), "deadline": dl},
            headers=H(ADMIN),
        ).json()["id"]
        toks, subs = {}, {}
        for i, name in enumerate(["alice", "bob"]):
            toks[name] = c.post(f"/v1/competitions/{cid}/participants", json={"name": name}).json()["token"]
            s = rng.normal(size=(N, K))
            s[np.arange(N), y] += 1.0 + i
            r = c.post(
                f"/v1/competitions/{cid}/submissions", content=parsing.to_npy(np.arange(N), s), headers=H(toks[name])
            )
            assert r.status_code == 201
            subs[name] = r.json()["id"]
        toks["carol"] = c.post(f"/v1/competitions/{other}/participants", json={"name": "carol"}).json()["token"]
        with app.state.db.sessions() as s:
            _, other_org = create_key(s, "another organiser", ["read", "write"])
            comp = s.get(Competition, cid)
            run = svc.new_aggregation(s, comp, {"methods": ["topk", "linear", "log"]})
            agg_id = run.id
        svc.run_aggregation(app.state.db, agg_id)
        r = c.post(f"/v1/competitions/{cid}/aggregations", json={"methods": ["topk"]}, headers=H(ADMIN))
        job_id = r.headers["Location"].rsplit("/", 1)[1]
        # the hidden things
        with app.state.db.sessions() as s:
            comp = s.get(Competition, cid)
            seed = comp.split_seed
            priv = [v for x in s.query(Submission).all() for v in (x.private_perplexity, x.private_log_loss)]
            res = s.get(AggregationRun, agg_id).result
        for row in res["rows"]:
            priv += [
                row[k]
                for k in ("private_perplexity", "private_log_loss", "perplexity_mean", "perplexity_std")
                if k in row
            ]
        priv += [cr["loo_gain"] for cr in res["credit"] if "loo_gain" in cr]
        yield dict(
            client=c,
            app=app,
            cid=cid,
            other=other,
            toks=toks,
            subs=subs,
            agg_id=agg_id,
            job_id=job_id,
            other_org=other_org,
            y=y,
            seed=seed,
            priv=priv,
            caplog=caplog,
        )


def _secrets(w):
    y = w["y"]
    pats = [",".join(map(str, y[:40])), ", ".join(map(str, y[:40])), json.dumps(y[:40].tolist())[1:-1], str(w["seed"])]
    for v in w["priv"]:
        if v is None or not np.isfinite(v) or abs(v) < 1e-3:
            continue
        pats += [repr(float(v)), f"{v:.6f}", f"{v:.5f}"]
    return pats


def _fill(path, w, who):
    vals = {
        "competition_id": w["cid"],
        "aggregation_id": w["agg_id"],
        "job_id": w["job_id"],
        "submission_id": w["subs"]["bob" if who == "alice" else "alice"],
        "name": "train.npz",
    }
    return re.sub(r"{(\w+)(:\w+)?}", lambda m: vals.get(m.group(1), "does-not-exist"), path)


def test_no_route_leaks_before_the_deadline(world):
    c, w = world["client"], world
    pats = _secrets(w)
    callers = {
        "anonymous": None,
        "alice": w["toks"]["alice"],
        "carol": w["toks"]["carol"],
        "other-organiser": w["other_org"],
    }
    seen_paths = set()
    bodies = []
    extra = [
        ("GET", "/"),
        ("GET", "/static/app.js"),
        ("GET", "/static/index.html"),
        ("GET", f"/v1/competitions/{w['cid']}/leaderboard?which=private"),
        ("GET", f"/v1/competitions/{w['cid']}/aggregations/latest"),
        ("GET", f"/v1/competitions/{w['cid']}/items?format=csv"),
    ]
    calls = []
    # every documented operation (the OpenAPI schema lists the routes of every included router)
    for path, ops in w["app"].openapi()["paths"].items():
        for method in ops:
            if method.upper() in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                calls.append((method.upper(), path))
    for who, key in callers.items():
        for method, path in calls + extra:
            url = _fill(path, w, who)
            seen_paths.add(path)
            if method == "GET":
                r = c.get(url, headers=H(key))
            elif method == "DELETE":
                r = c.delete(url, headers=H(key))
            else:
                r = c.request(method, url, json={}, headers=H(key))
            assert r.status_code < 500, (who, method, url, r.text[:300])
            text = r.text + " " + " ".join(f"{k}: {v}" for k, v in r.headers.items())
            bodies.append((who, method, url, text))
            if (
                path.startswith("/v1/competitions/{competition_id}/submissions")
                and who == "alice"
                and r.status_code == 200
                and method == "GET"
            ):
                data = r.json()
                items = data.get("items", [data])
                assert all(it.get("participant_id") != _pid(w, "bob") for it in items)
    # submissions are attempted too: bob's own listing shows only bob
    r = c.get(f"/v1/competitions/{w['cid']}/submissions", headers=H(w["toks"]["bob"]))
    assert [s["id"] for s in r.json()["items"]] == [w["subs"]["bob"]]
    assert all("private_perplexity" not in s for s in r.json()["items"])
    # nothing hidden anywhere in what came back, nor in the logs
    for who, method, url, text in bodies:
        for p in pats:
            assert p not in text, f"{who} {method} {url} reveals {p!r}"
        if url.startswith(("/v1/competitions", "/v1/jobs")):  # our data (code, schemas, solver docs name such fields)
            assert not HIDDEN_KEYS.search(text), (who, method, url, HIDDEN_KEYS.search(text).group(0))
    log_text = "\n".join(r.getMessage() for r in w["caplog"].records)
    for p in pats:
        assert p not in log_text
    assert sum("/v1/competitions" in p for p in seen_paths) >= 10 and len(calls) > 20


def _pid(w, name):
    with w["app"].state.db.sessions() as s:
        sub = s.get(Submission, w["subs"][name])
        return sub.participant_id


def test_rejected_uploads_and_errors_reveal_nothing(world):
    c, w = world["client"], world
    pats = _secrets(w)
    bad = np.zeros((N, K))
    bad[5, 1] = np.nan
    for payload in (
        parsing.to_npy(np.arange(N) + 3, bad),
        b"garbage",
        parsing.to_csv(np.arange(N), np.zeros((N, K + 1))),
    ):
        r = c.post(f"/v1/competitions/{w['cid']}/submissions", content=payload, headers=H(w["toks"]["alice"]))
        assert r.status_code == 422
        for p in pats:
            assert p not in r.text
    # a probe by alice on bob's entry looks exactly like a missing one
    a = c.get(f"/v1/competitions/{w['cid']}/submissions/{w['subs']['bob']}", headers=H(w["toks"]["alice"]))
    b = c.get(f"/v1/competitions/{w['cid']}/submissions/sub_0000", headers=H(w["toks"]["alice"]))
    assert a.status_code == b.status_code == 404
    assert a.json()["detail"].replace(w["subs"]["bob"], "X") == b.json()["detail"].replace("sub_0000", "X")
