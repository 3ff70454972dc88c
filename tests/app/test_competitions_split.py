"""The organiser defines the public/private split (random, stratified by label, grouped by a
column) at creation or before the first submission, and downloads it; scores follow it."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators.metrics import perplexity

from .conftest import competition_body
from .test_competitions_integrity import ADMIN, H, _join, _upload, client  # noqa: F401 - fixture


def _post(client, y, k, **kw):  # noqa: F811
    return client.post("/v1/competitions", json=competition_body(y, k, **kw), headers=H(ADMIN))


def _split(client, cid):  # noqa: F811 - the fixture's name
    r = client.get(f"/v1/competitions/{cid}/split", headers=H(ADMIN))
    assert r.status_code == 200, r.text
    return r.json()


def test_stratified_split_keeps_label_shares_and_is_downloadable(client):  # noqa: F811
    rng = np.random.default_rng(0)
    y = rng.permutation(np.repeat([0, 1, 2, 3], [150, 60, 25, 5]))
    ids = (np.arange(len(y)) * 7 + 2**60).tolist()  # exact 64-bit ids
    r = _post(client, y, 4, split="stratified", public_fraction=0.3, item_ids=ids)
    assert r.status_code == 201, r.text
    comp = r.json()
    assert comp["split"] == "stratified" and comp["n_public"] == 72
    s = _split(client, comp["id"])
    public = np.isin(ids, s["public_item_ids"])
    assert s["split"] == "stratified" and s["n_public"] == public.sum() == 72
    for c in range(4):
        assert abs(public[y == c].sum() - 0.3 * (y == c).sum()) < 1.0
    # the CSV names the side of every item, in item order, and agrees with the JSON
    csv = client.get(f"/v1/competitions/{comp['id']}/split?format=csv", headers=H(ADMIN))
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    lines = csv.text.strip().split("\n")
    assert lines[0] == "id,part" and len(lines) == len(y) + 1
    assert [int(x.split(",")[0]) for x in lines[1:]] == ids
    assert [x.split(",")[1] == "public" for x in lines[1:]] == public.tolist()
    # only the organiser sees it
    assert client.get(f"/v1/competitions/{comp['id']}/split?format=csv").status_code == 401


def test_grouped_split_keeps_each_group_on_one_side_and_scores_follow_it(client):  # noqa: F811
    rng = np.random.default_rng(1)
    images = np.repeat([f"img-{i}" for i in range(8)], 15)
    y = rng.integers(0, 3, len(images))
    r = _post(client, y, 3, split="grouped", groups=images.tolist())
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    public = np.isin(np.arange(len(y)), _split(client, cid)["public_item_ids"])
    for g in np.unique(images):
        assert public[images == g].all() or not public[images == g].any(), g
    assert 0 < public.sum() < len(y) and public.sum() % 15 == 0
    # the public score a participant gets is the perplexity on exactly these items
    tok = _join(client, cid, "ann").json()["token"]
    p = rng.dirichlet(np.ones(3), len(y))
    sub = _upload(client, cid, tok, p)
    assert sub["public_perplexity"] == pytest.approx(perplexity(np.log(p[public]), y[public]), rel=1e-6)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"split": "grouped"}, "groups"),  # no group column
        ({"split": "grouped", "groups": [1, 2, 3]}, "groups"),  # not one per item
        ({"split": "grouped", "groups": [5] * 20}, "groups"),  # a single group: nothing to split
        ({"split": "grouped", "groups": [[1], [1, 2]] * 10}, "groups"),  # ragged
        ({"split": "grouped", "groups": [True, False] * 10}, "groups"),  # not integers or strings
        ({"split": "by-date"}, "split"),  # an unknown kind
        ({"split": "stratified", "labels": [1]}, "labels"),  # too few items
    ],
)
def test_bad_split_input_is_a_422_naming_the_field(client, settings, field):  # noqa: F811
    y = settings.pop("labels", [0, 1] * 10)
    r = _post(client, y, 2, **settings)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["errors"][0]["field"].endswith(field), r.json()


def test_the_split_can_be_redefined_until_the_first_submission(client):  # noqa: F811
    y = np.repeat([0, 1], [30, 10])
    cid = _post(client, y, 2).json()["id"]
    assert _split(client, cid)["split"] == "random"
    r = client.put(
        f"/v1/competitions/{cid}/split", json={"split": "stratified", "public_fraction": 0.25}, headers=H(ADMIN)
    )
    assert r.status_code == 200, r.text
    s = r.json()
    public = np.isin(np.arange(40), s["public_item_ids"])
    assert s["split"] == "stratified" and s["n_public"] == 10 and public[y == 1].sum() in (2, 3)
    assert client.get(f"/v1/competitions/{cid}").json()["n_public"] == 10
    bad = client.put(f"/v1/competitions/{cid}/split", json={"split": "grouped"}, headers=H(ADMIN))
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"].endswith("groups")
    assert _split(client, cid) == s  # a refused change leaves the split as it was
    tok = _join(client, cid, "bo").json()["token"]
    r = client.post(f"/v1/competitions/{cid}/split", json={"split": "random"}, headers=H(tok))
    assert r.status_code in (401, 403, 405)
    _upload(client, cid, tok, np.full((40, 2), 0.5))
    r = client.put(f"/v1/competitions/{cid}/split", json={"split": "random"}, headers=H(ADMIN))
    assert r.status_code == 409 and r.json()["type"].endswith("split-fixed")


def test_revoking_invitations(client):  # noqa: F811
    y = [0, 1] * 10
    cid = _post(client, y, 2, join_policy="invite").json()["id"]
    items = client.post(f"/v1/competitions/{cid}/invitations", json={"n": 2}, headers=H(ADMIN)).json()["items"]
    used, spare = items
    assert _join(client, cid, "ann", used["code"]).status_code == 201
    url = f"/v1/competitions/{cid}/invitations"
    r = client.delete(f"{url}/{used['id']}", headers=H(ADMIN))
    assert r.status_code == 409 and r.json()["type"].endswith("invitation-used")
    assert client.delete(f"{url}/{spare['id']}").status_code == 401  # the organiser only
    assert client.delete(f"{url}/{spare['id']}", headers=H(ADMIN)).status_code == 204
    assert client.delete(f"{url}/{spare['id']}", headers=H(ADMIN)).status_code == 404
    assert _join(client, cid, "bob", spare["code"]).status_code == 403  # a revoked code admits no one
    listed = client.get(url, headers=H(ADMIN)).json()["items"]
    assert [(x["id"], x["participant"]) for x in listed] == [(used["id"], "ann")]
