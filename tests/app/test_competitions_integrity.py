"""Integrity of a competition's leaderboard over the API: invitations, the per-address rate limit,
the Ladder against the score-oracle attack of issue 14, and the zero-probability rule."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient

from aggregators.metrics import log_loss, perplexity
from app.competitions import parsing
from app.competitions.models import Competition, Submission
from app.main import create_app
from app.settings import Settings
from evaluation.split import public_private_split

from .conftest import competition_body, finished_job

ADMIN = "test-admin-key-integrity"
N = 100  # the attacked competition of the issue had 100 test items


@pytest.fixture()
def client(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path}/t.db", admin_key=ADMIN, job_workers=1)
    with TestClient(create_app(settings)) as c:
        c.app_ref = c.app
        yield c


def H(key):
    return {"Authorization": f"Bearer {key}"}


def _create(client, y, k, **kw):
    body = competition_body(y, k, **{"title": "probe me", "daily_cap": 1000, **kw})
    r = client.post("/v1/competitions", json=body, headers=H(ADMIN))
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _join(client, cid, name, invitation=None):
    body = {"name": name} if invitation is None else {"name": name, "invitation": invitation}
    return client.post(f"/v1/competitions/{cid}/participants", json=body)


def _upload(client, cid, token, probs):
    r = client.post(
        f"/v1/competitions/{cid}/submissions?kind=probs",
        content=parsing.to_npy(np.arange(len(probs)), probs),
        headers=H(token),
    )
    assert r.status_code == 201, r.text
    return r.json()


def _split(client, cid):
    with client.app_ref.state.db.sessions() as s:
        c = s.get(Competition, cid)
        return public_private_split(c.n_items, c.public_fraction, c.split_seed)


def _attack(client, cid, new_token):
    """The issue's probe: a uniform baseline, then one upload per item that puts 0.9 on class 0 of
    that item alone. A shown score equal to the baseline says 'private'; lower says 'public, label
    0'; higher 'public, label 1'. ``new_token()`` gives the token for the next upload (a fresh
    participant per upload beats any per-participant cap)."""
    uniform = np.full((N, 2), 0.5)
    base = _upload(client, cid, new_token(), uniform)["public_perplexity"]
    guess_public = np.zeros(N, bool)
    guess_label = np.full(N, -1)
    for i in range(N):
        p = uniform.copy()
        p[i] = [0.9, 0.1]
        s = _upload(client, cid, new_token(), p)["public_perplexity"]
        if s != base:
            guess_public[i] = True
            guess_label[i] = 0 if s < base else 1
    return guess_public, guess_label


def _recovered(client, cid, y, guess_public, guess_label):
    pub = _split(client, cid)
    split_acc = float((guess_public == pub).mean())
    labels = int(((guess_label == y) & pub).sum())
    return split_acc, labels, int(pub.sum())


def test_the_score_oracle_attack_recovers_everything_from_exact_scores(client):
    """The attack is real: with open joins and exact scores it recovers the split and every label."""
    y = np.random.default_rng(1).integers(0, 2, N)
    cid = _create(client, y, 2)
    client.app_ref.state.settings.competition_joins_per_hour = 10_000
    client.app_ref.state.settings.competition_submissions_per_hour = 10_000
    names = iter(range(10_000))
    g_pub, g_lab = _attack(client, cid, lambda: _join(client, cid, f"sock{next(names)}").json()["token"])
    split_acc, labels, n_pub = _recovered(client, cid, y, g_pub, g_lab)
    assert split_acc == 1.0 and labels == n_pub == 50


def test_invitations_and_the_ladder_stop_the_attack(client):
    y = np.random.default_rng(1).integers(0, 2, N)
    cid = _create(client, y, 2, join_policy="invite", score_mechanism="ladder", score_step=0.1)
    # identities cost an invitation: no code, a made-up code, a used code are all refused
    assert _join(client, cid, "sock").status_code == 403
    assert _join(client, cid, "sock", "agi_made-up").status_code == 403
    r = client.post(f"/v1/competitions/{cid}/invitations", json={"n": 2, "note": "lab"}, headers=H(ADMIN))
    assert r.status_code == 201, r.text
    codes = [c["code"] for c in r.json()["items"]]
    r = _join(client, cid, "mallory", codes[0])
    assert r.status_code == 201
    token = r.json()["token"]
    assert _join(client, cid, "sock", codes[0]).status_code == 403  # single use
    listed = client.get(f"/v1/competitions/{cid}/invitations", headers=H(ADMIN)).json()["items"]
    assert [x["used"] for x in listed] == [True, False] and all("code" not in x for x in listed)
    assert client.post(f"/v1/competitions/{cid}/invitations", json={"n": 1}, headers=H(token)).status_code == 403
    # another organiser's code does not open this competition
    other = _create(client, y, 2, join_policy="invite")
    code_other = client.post(f"/v1/competitions/{other}/invitations", json={}, headers=H(ADMIN)).json()
    assert _join(client, cid, "sock", code_other["items"][0]["code"]).status_code == 403

    # the one identity the attacker has, with a cap high enough to let every probe through
    g_pub, g_lab = _attack(client, cid, lambda: token)
    split_acc, labels, n_pub = _recovered(client, cid, y, g_pub, g_lab)
    assert labels == 0  # no public label recovered
    assert split_acc == pytest.approx(1 - n_pub / N)  # every item looks private: no better than a constant guess

    # the organiser still sees the exact public scores; the participant and the board only the shown one
    org = client.get(f"/v1/competitions/{cid}/submissions", headers=H(ADMIN)).json()["items"]
    assert len({m["exact_public_perplexity"] for m in org}) > 2 and {m["public_perplexity"] for m in org} == {2.0}
    mine = client.get(f"/v1/competitions/{cid}/submissions", headers=H(token)).json()["items"]
    assert all("exact_public_perplexity" not in m and m["public_perplexity"] == 2.0 for m in mine)
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()
    assert lb["rows"][0]["score"] == 2.0

    # an honest improvement by more than the margin does show, rounded to it
    p = np.where(np.arange(2)[None, :] == y[:, None], 0.8, 0.2)
    shown = _upload(client, cid, token, p)["public_perplexity"]
    pub = _split(client, cid)
    exact = perplexity(np.log(p[pub]), y[pub])
    assert shown == pytest.approx(round(exact / 0.1) * 0.1) and shown < 2.0 - 0.1


def test_rounding_shows_scores_on_the_grid(client):
    y = np.random.default_rng(2).integers(0, 3, 40)
    cid = _create(client, y, 3, score_mechanism="round", score_step=0.05)
    token = _join(client, cid, "ann").json()["token"]
    p = np.full((40, 3), 0.2)
    p[np.arange(40), y] = 0.6
    s = _upload(client, cid, token, p)["public_perplexity"]
    assert s == pytest.approx(round(perplexity(np.log(p), y) / 0.05) * 0.05)  # every row scores alike
    assert round(s / 0.05, 9) == round(s / 0.05)


@pytest.mark.parametrize(
    "body,field",
    [
        ({"score_mechanism": "ladder"}, "score_step"),  # no step
        ({"score_mechanism": "round", "score_step": -1}, "score_step"),
        ({"score_mechanism": "exact", "score_step": 0.1}, "score_step"),
        ({"score_mechanism": "coin"}, "score_mechanism"),
        ({"join_policy": "closed"}, "join_policy"),
    ],
)
def test_bad_integrity_settings_are_422(client, body, field):
    b = {"title": "t", "n_classes": 2, "labels": [0, 1] * 5, "deadline": "2099-01-01T00:00:00Z", **body}
    r = client.post("/v1/competitions", json=b, headers=H(ADMIN))
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"].endswith(field)


def test_rate_limit_per_client_address(client):
    client.app_ref.state.settings.competition_joins_per_hour = 3
    client.app_ref.state.settings.competition_submissions_per_hour = 2
    y = np.random.default_rng(3).integers(0, 2, 20)
    cid = _create(client, y, 2)
    tokens = [_join(client, cid, f"p{i}").json()["token"] for i in range(3)]
    r = _join(client, cid, "p3")
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
    assert r.json()["type"].endswith("rate-limited")
    p = np.full((20, 2), 0.5)
    _upload(client, cid, tokens[0], p)
    _upload(client, cid, tokens[1], p)  # the limit is per address, whoever the participant
    r = client.post(
        f"/v1/competitions/{cid}/submissions?kind=probs", content=parsing.to_npy(np.arange(20), p), headers=H(tokens[2])
    )
    assert r.status_code == 429
    with client.app_ref.state.db.sessions() as s:
        assert s.query(Submission).count() == 2


@pytest.mark.parametrize("part", ["public", "private"])
def test_zero_probability_on_a_true_label_is_floored(client, part):
    """The rule: zeros are floored at 1e-9 (the pools' policy), on public and private items alike;
    the submission is stored with finite scores and the report says how many entries were floored."""
    k, n = 3, 30
    y = np.random.default_rng(4).integers(0, k, n)
    cid = _create(client, y, k)
    token = _join(client, cid, "zed").json()["token"]
    pub = _split(client, cid)
    i = int(np.flatnonzero(pub if part == "public" else ~pub)[0])
    p = np.full((n, k), 0.25)
    p[np.arange(n), y] = 0.5
    p[i] = 0.5
    p[i, y[i]] = 0.0  # zero on the true label
    r = client.post(
        f"/v1/competitions/{cid}/submissions?kind=probs", content=parsing.to_csv(np.arange(n), p), headers=H(token)
    )
    assert r.status_code == 201, r.text
    sub = r.json()
    assert [w["count"] for w in sub["report"]["warnings"] if w["code"] == "floored"] == [1]
    # independent reference: the zero becomes 1e-9 and the rest of its row keeps its proportions
    q = p.copy()
    q[i] = np.where(np.arange(k) == y[i], 1e-9, p[i] * (1 - 1e-9))
    lq = np.log(q)
    org = client.get(f"/v1/competitions/{cid}/submissions/{sub['id']}", headers=H(ADMIN)).json()
    assert org["public_perplexity"] == pytest.approx(perplexity(lq[pub], y[pub]), rel=1e-6)
    assert org["private_perplexity"] == pytest.approx(perplexity(lq[~pub], y[~pub]), rel=1e-6)
    assert org["private_log_loss"] == pytest.approx(log_loss(lq[~pub], y[~pub]), rel=1e-6)
    assert np.isfinite([org["public_perplexity"], org["private_perplexity"]]).all()
    lb = client.get(f"/v1/competitions/{cid}/leaderboard?which=private", headers=H(ADMIN)).json()
    assert np.isfinite(lb["rows"][0]["score"])


def test_item_ids_are_exact_64_bit_integers_end_to_end(client):
    big = [2**53 + 1, 2**63 - 1, -(2**63), 12345678901234567]
    y = [0, 1, 0, 1]
    r = client.post(
        "/v1/competitions",
        json={"title": "ids", "n_classes": 2, "labels": y, "item_ids": big, "deadline": "2099-01-01T00:00:00Z"},
        headers=H(ADMIN),
    )
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    assert client.get(f"/v1/competitions/{cid}/items").json()["item_ids"] == big
    csv_ids = [
        int(line.split(",")[0]) for line in client.get(f"/v1/competitions/{cid}/items?format=csv").text.split()[1:]
    ]
    assert csv_ids == big
    # a CSV submission keyed by the exact ids is accepted; one id off by one (2^53 + 2) is unknown
    token = _join(client, cid, "ann").json()["token"]
    p = np.full((4, 2), 0.5)
    r = client.post(f"/v1/competitions/{cid}/submissions?kind=probs", content=parsing.to_csv(big, p), headers=H(token))
    assert r.status_code == 201, r.text
    off = [big[0] + 1, *big[1:]]
    r = client.post(f"/v1/competitions/{cid}/submissions?kind=probs", content=parsing.to_csv(off, p), headers=H(token))
    assert r.status_code == 422
    errs = {e["code"]: e for e in r.json()["report"]["errors"]}
    assert errs["unknown_ids"]["items"] == [2**53 + 2] and errs["missing_ids"]["items"] == [2**53 + 1]
    # ids that do not fit, or floats beyond 2^53, are refused, never rounded or wrapped
    for bad in ([2**70, 1, 2, 3], [2.0**60, 1, 2, 3], [0.5, 1, 2, 3]):
        r = client.post(
            "/v1/competitions",
            json={"title": "ids", "n_classes": 2, "labels": y, "item_ids": bad, "deadline": "2099-01-01T00:00:00Z"},
            headers=H(ADMIN),
        )
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == "item_ids", r.text
    # a .npy whose float id column holds an id beyond 2^53 is refused (it may have been rounded)
    r = client.post(
        f"/v1/competitions/{cid}/submissions?kind=probs", content=parsing.to_npy(np.array(big), p), headers=H(token)
    )
    assert r.status_code == 422 and r.json()["report"]["errors"][0]["code"] == "bad_ids"


def test_deadline_in_the_past_is_refused_and_the_upload_body_is_documented(client):
    r = client.post(
        "/v1/competitions",
        json={"title": "late", "n_classes": 2, "labels": [0, 1], "deadline": "2001-01-01T00:00:00Z"},
        headers=H(ADMIN),
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "deadline"
    op = client.get("/openapi.json").json()["paths"]["/v1/competitions/{competition_id}/submissions"]["post"]
    content = op["requestBody"]["content"]
    assert content["multipart/form-data"]["schema"]["properties"]["file"]["format"] == "binary"
    assert {"text/csv", "application/octet-stream"} <= set(content)


def test_withdraw_and_exclude(client):
    y = np.random.default_rng(5).integers(0, 2, 40)
    cid = _create(client, y, 2, daily_cap=2)
    ann, bob = (_join(client, cid, n).json()["token"] for n in ("ann", "bob"))
    good = np.where(np.arange(2)[None, :] == y[:, None], 0.8, 0.2)
    a1 = _upload(client, cid, ann, good)["id"]
    b1 = _upload(client, cid, bob, np.where(np.arange(2)[None, :] == y[:, None], 0.7, 0.3))["id"]
    url = f"/v1/competitions/{cid}/submissions"
    assert client.post(f"{url}/{a1}/withdrawal", headers=H(bob)).status_code == 404  # not bob's
    r = client.post(f"{url}/{a1}/withdrawal", headers=H(ann))
    assert r.status_code == 200 and r.json()["status"] == "withdrawn"
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()["rows"]
    assert [x["participant"] for x in lb] == ["bob"]
    r = client.post(f"{url}/{a1}/selection", json={"selected": True}, headers=H(ann))
    assert r.status_code == 409
    # a withdrawal does not give the upload back: the cap (2) still counts it
    _upload(client, cid, ann, good)
    r = client.post(f"{url}?kind=probs", content=parsing.to_npy(np.arange(40), good), headers=H(ann))
    assert r.status_code == 429
    # the organiser excludes bob's entry with a reason bob sees, then restores it
    assert client.post(f"{url}/{b1}/exclusion", json={"reason": "x"}, headers=H(bob)).status_code == 403
    r = client.post(f"{url}/{b1}/exclusion", json={"reason": "copied from ann"}, headers=H(ADMIN))
    assert r.status_code == 200 and r.json()["status"] == "excluded"
    mine = client.get(url, headers=H(bob)).json()["items"]
    assert mine[0]["status"] == "excluded" and mine[0]["status_reason"] == "copied from ann"
    assert [x["participant"] for x in client.get(f"/v1/competitions/{cid}/leaderboard").json()["rows"]] == ["ann"]
    # one active entry left that beats uniform: too few to aggregate
    assert client.post(f"/v1/competitions/{cid}/aggregations", json={}, headers=H(ADMIN)).status_code == 409
    r = client.post(f"{url}/{b1}/exclusion", json={"excluded": False}, headers=H(ADMIN))
    assert r.json()["status"] == "active"
    assert len(client.get(f"/v1/competitions/{cid}/leaderboard").json()["rows"]) == 2
    assert client.post(f"{url}/{a1}/exclusion", json={}, headers=H(ADMIN)).status_code == 409  # withdrawn


def test_a_run_leaves_out_withdrawn_and_excluded_entries_with_the_reason():
    from types import SimpleNamespace as S

    from app.competitions.service import choose_submissions

    t = datetime(2026, 1, 1, tzinfo=UTC)
    subs = [
        S(id="a", public_perplexity=1.5, created_at=t, status="active", status_reason=""),
        S(
            id="b",
            public_perplexity=1.2,
            created_at=t,
            status="withdrawn",
            status_reason="withdrawn by the participant",
        ),
        S(id="c", public_perplexity=1.4, created_at=t, status="excluded", status_reason="copied"),
        S(id="d", public_perplexity=2.0, created_at=t, status="active", status_reason=""),
        S(id="e", public_perplexity=1.9, created_at=t, status="active", status_reason=""),
    ]
    used, left = choose_submissions(subs, 2)
    assert [x.id for x in used] == ["a", "e"]
    assert [(x.id, why) for x, why in left] == [
        ("b", "withdrawn by the participant"),
        ("c", "copied"),
        ("d", "public perplexity not below 2 (a uniform guess)"),
    ]


def _run(client, cid, methods):
    r = client.post(f"/v1/competitions/{cid}/aggregations", json={"methods": methods}, headers=H(ADMIN))
    j = finished_job(client, r, ADMIN, poll=0.05)
    assert j["state"] == "succeeded", j
    return r.json()["id"]


def test_the_organiser_pins_the_final_run(client):
    y = np.random.default_rng(6).integers(0, 3, 60)
    cid = _create(client, y, 3)
    probs, subs, toks = [], [], []
    for i, s in enumerate((0.7, 0.6, 0.5)):
        tok = _join(client, cid, f"p{i}").json()["token"]
        probs.append(np.where(np.arange(3)[None, :] == y[:, None], s, (1 - s) / 2))
        subs.append(_upload(client, cid, tok, probs[-1])["id"])
        toks.append(tok)
    final = _run(client, cid, ["average", "linear"])
    # the pooled forecast on every item, downloadable as .npz and CSV (organiser only)
    base = f"/v1/competitions/{cid}/aggregations/{final}/predictions"
    assert client.get(f"{base}/average", headers=H(tok)).status_code == 403
    assert client.get(f"{base}/market", headers=H(ADMIN)).status_code == 404  # not in this run
    r = client.get(f"{base}/average", headers=H(ADMIN))
    with np.load(io.BytesIO(r.content)) as z:
        np.testing.assert_array_equal(z["ids"], np.arange(60))
        np.testing.assert_allclose(z["log_probs"], np.log(np.mean(probs, axis=0)), atol=1e-12)  # Eq. (2.1)
    csv = np.loadtxt(
        io.StringIO(client.get(f"{base}/linear?format=csv", headers=H(ADMIN)).text), delimiter=",", skiprows=1
    )
    np.testing.assert_allclose(np.exp(csv[:, 1:]).sum(axis=1), 1.0, atol=1e-12)
    # every fitted pool of the run is a /v1/pools resource that predicts on new items
    res = client.get(f"/v1/competitions/{cid}/aggregations/{final}", headers=H(ADMIN)).json()["result"]
    assert set(res["pools"]) == {"average", "linear"}
    order = [u["submission_id"] for u in res["used"]]
    stored = []
    for sid in order:
        with np.load(
            io.BytesIO(client.get(f"/v1/competitions/{cid}/submissions/{sid}/data", headers=H(ADMIN)).content)
        ) as z:
            stored.append(z["log_probs"])
    new_items = np.stack(stored, axis=1)[:7]  # (7 items, 3 agents, 3 classes)
    pool = client.get(f"/v1/pools/{res['pools']['linear']}", headers=H(ADMIN)).json()
    assert pool["status"] == "ready" and pool["n_agents"] == 3
    r = client.post(
        f"/v1/pools/{res['pools']['linear']}/predict", json={"predictions": new_items.tolist()}, headers=H(ADMIN)
    )
    assert r.status_code == 200, r.text
    with np.load(io.BytesIO(client.get(f"{base}/linear", headers=H(ADMIN)).content)) as z:
        np.testing.assert_allclose(np.asarray(r.json()["aggregate"]), z["log_probs"][:7], atol=1e-9)
    # a submission as stored: its participant and the organiser may download it
    url = f"/v1/competitions/{cid}/submissions/{subs[0]}/data"
    assert client.get(url, headers=H(toks[1])).status_code == 404
    assert client.get(url).status_code == 401
    for who in (toks[0], ADMIN):
        with np.load(io.BytesIO(client.get(url, headers=H(who)).content)) as z:
            np.testing.assert_allclose(np.exp(z["log_probs"]), probs[0], atol=1e-6)  # stored as float32
    url = f"/v1/competitions/{cid}/pinned-aggregation"
    assert client.put(url, json={"aggregation_id": final}, headers=H(tok)).status_code == 403
    assert client.put(url, json={"aggregation_id": "agg_nope"}, headers=H(ADMIN)).status_code == 404
    r = client.put(url, json={"aggregation_id": final}, headers=H(ADMIN))
    assert r.status_code == 200 and r.json()["pinned_aggregation_id"] == final
    later = _run(client, cid, ["average"])  # an exploratory run does not replace the pinned rows
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()
    assert lb["aggregation_id"] == final and lb["aggregation_pinned"] is True
    assert {r["method"] for r in lb["aggregates"]} == {"best_single", "average", "linear"}
    assert client.put(url, json={"aggregation_id": None}, headers=H(ADMIN)).status_code == 200
    lb = client.get(f"/v1/competitions/{cid}/leaderboard").json()
    assert lb["aggregation_id"] == later and lb["aggregation_pinned"] is False


def test_lifecycle_edit_split_files_delete(client):
    y = np.random.default_rng(7).integers(0, 2, 30)
    cid = _create(client, y, 2)
    tok = _join(client, cid, "ann").json()["token"]
    url = f"/v1/competitions/{cid}"
    # edit: a new deadline (future only), cap and description; participants cannot
    new_dl = (datetime.now(UTC) + timedelta(days=9)).isoformat()
    assert client.patch(url, json={"daily_cap": 9}, headers=H(tok)).status_code == 403
    r = client.patch(url, json={"deadline": new_dl, "daily_cap": 9, "description": "v2"}, headers=H(ADMIN))
    assert r.status_code == 200 and r.json()["daily_cap"] == 9 and r.json()["description"] == "v2"
    assert datetime.fromisoformat(r.json()["deadline"]) == datetime.fromisoformat(new_dl)
    r = client.patch(url, json={"deadline": "2001-01-01T00:00:00Z"}, headers=H(ADMIN))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "deadline"
    # the organiser sees the split, nobody else does
    assert client.get(f"{url}/split", headers=H(tok)).status_code == 403
    split = client.get(f"{url}/split", headers=H(ADMIN)).json()
    assert split["public_item_ids"] == [int(i) for i in np.flatnonzero(_split(client, cid))]
    # data files: the organiser publishes, anyone lists and downloads
    assert client.put(f"{url}/files/train.csv", content=b"x,y\n1,0\n", headers=H(tok)).status_code == 403
    assert client.put(f"{url}/files/..%2Fetc", content=b"x", headers=H(ADMIN)).status_code in (404, 422)
    r = client.put(f"{url}/files/train.csv", content=b"x,y\n1,0\n", headers=H(ADMIN))
    assert r.status_code == 201 and r.json() == {"name": "train.csv", "bytes": 8}
    assert client.get(f"{url}/files").json()["items"] == [{"name": "train.csv", "bytes": 8}]
    assert client.get(f"{url}/files/train.csv").content == b"x,y\n1,0\n"
    assert client.get(url).json()["extra"]["files"] == ["train.csv"]
    # delete: everything goes, hidden labels included
    _upload(client, cid, tok, np.full((30, 2), 0.5))
    assert client.delete(url, headers=H(tok)).status_code == 403
    assert client.delete(url, headers=H(ADMIN)).status_code == 204
    assert client.get(url).status_code == 404
    from app.models import Blob

    with client.app_ref.state.db.sessions() as s:
        assert s.query(Submission).count() == 0
        assert s.query(Blob).filter(Blob.owner_id == cid).count() == 0


def test_aggregate_rows_quote_the_shown_score_of_the_best_entry_not_the_exact_one(client):
    y = np.random.default_rng(8).integers(0, 3, 60)
    cid = _create(client, y, 3, score_mechanism="ladder", score_step=0.1)
    for i, s in enumerate((0.7, 0.5)):
        tok = _join(client, cid, f"p{i}").json()["token"]
        _upload(client, cid, tok, np.where(np.arange(3)[None, :] == y[:, None], s, (1 - s) / 2))
    aid = _run(client, cid, ["average"])
    exact = {
        m["id"]: m["exact_public_perplexity"]
        for m in client.get(f"/v1/competitions/{cid}/submissions", headers=H(ADMIN)).json()["items"]
    }
    for rows in (
        client.get(f"/v1/competitions/{cid}/leaderboard").json()["aggregates"],
        client.get(f"/v1/competitions/{cid}/aggregations/{aid}").json()["result"]["rows"],
    ):
        best = next(r for r in rows if r["method"] == "best_single")
        v = best["public_perplexity"]
        assert abs(v / 0.1 - round(v / 0.1)) < 1e-9 and v != exact[best["params"]["submission_id"]]
