"""A competition's aggregation job belongs to its organiser: another ``write`` key may not read or
cancel it (403 saying why), a participant token gets 403 saying it is a participant token, the
organiser lists, reads and cancels it."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from app.competitions import parsing
from app.main import create_app

from .conftest import ADMIN, competition_body, make_settings

K, N = 4, 120


def H(key):
    return {"Authorization": f"Bearer {key}"}


def test_only_the_organiser_or_an_admin_cancels_an_aggregation_job(tmp_path):
    with TestClient(create_app(make_settings(f"sqlite:///{tmp_path}/t.db", job_workers=1))) as c:
        keys = [c.post("/v1/keys", json={"scopes": ["read", "write"]}, headers=H(ADMIN)).json()["key"] for _ in "ab"]
        organiser, other = keys
        rng = np.random.default_rng(0)
        y = rng.integers(0, K, N)
        body = competition_body(y, K, title="t", daily_cap=3, n_select=1)
        r = c.post("/v1/competitions", json=body, headers=H(organiser))
        assert r.status_code == 201, r.text
        cid = r.json()["id"]
        for i in range(3):
            tok = c.post(f"/v1/competitions/{cid}/participants", json={"name": f"p{i}"}).json()["token"]
            s = rng.normal(size=(N, K))
            s[np.arange(N), y] += 1.0
            r = c.post(f"/v1/competitions/{cid}/submissions", content=parsing.to_npy(np.arange(N), s), headers=H(tok))
            assert r.status_code == 201, r.text
        r = c.post(
            f"/v1/competitions/{cid}/aggregations",
            json={"etas": [10], "methods": ["renyi", "market", "log", "linear"]},
            headers=H(organiser),
        )
        assert r.status_code == 202, r.text
        job = r.headers["Location"]
        for path in (job, job + "/cancel"):
            r = c.request("POST" if path.endswith("cancel") else "GET", path, headers=H(other))
            assert r.status_code == 403 and "belongs to another API key" in r.json()["detail"], r.text
        r = c.get(job, headers=H(tok))
        assert r.status_code == 403 and "participant token" in r.json()["detail"], r.text
        assert job.rsplit("/", 1)[1] not in {j["id"] for j in c.get("/v1/jobs", headers=H(other)).json()["items"]}
        assert job.rsplit("/", 1)[1] in {j["id"] for j in c.get("/v1/jobs", headers=H(organiser)).json()["items"]}
        assert c.get(job, headers=H(organiser)).status_code == 200
        assert c.post(job + "/cancel", headers=H(organiser)).status_code == 202
