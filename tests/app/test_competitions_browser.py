"""The dashboard's competition page with the integrity settings, in a real browser (Playwright +
Debian's Chromium against a live uvicorn server): an invitation-only Ladder competition shows its
rules, a participant joins with an invitation code, deadlines carry their time zone."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
import pytest

from app.competitions import parsing

from .test_dashboard_browser import ADMIN, browser, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser


def test_invitation_only_ladder_competition_in_the_browser(server, browser, tmp_path):  # noqa: F811
    base, _ = server
    hdr = {"Authorization": f"Bearer {ADMIN}"}
    y = np.random.default_rng(0).integers(0, 3, 60)
    body = {
        "title": "Invite cup",
        "n_classes": 3,
        "labels": y.tolist(),
        "deadline": (datetime.now(UTC) + timedelta(days=2)).isoformat(),
        "join_policy": "invite",
        "score_mechanism": "ladder",
        "score_step": 0.05,
    }
    cid = httpx.post(base + "/v1/competitions", json=body, headers=hdr).json()["id"]
    codes = httpx.post(f"{base}/v1/competitions/{cid}/invitations", json={"n": 2}, headers=hdr).json()["items"]
    code = codes[0]

    page = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="UTC").new_page()
    page.goto(f"{base}/#/c/{cid}/submit")
    page.wait_for_selector("#joinform")
    text = page.inner_text("body")
    assert "by invitation" in text and "ladder (step 0.05)" in text
    assert "UTC" in text  # the deadline names its time zone
    # without a code the form does not submit (required); a wrong code is refused with the reason
    page.fill("#joinform input[name=name]", "ann")
    page.fill("#joinform input[name=invitation]", "agi_wrong")
    page.click("#joinbtn")
    page.wait_for_selector("#joinmsg.error")
    assert "invitation" in page.inner_text("#joinmsg")
    page.fill("#joinform input[name=invitation]", code["code"])
    page.click("#joinbtn")
    page.wait_for_selector("#newtoken")
    # the participant uploads and sees the Ladder's shown score, a multiple of the step
    p = np.full((60, 3), 0.2)
    p[np.arange(60), y] = 0.6
    path = tmp_path / "ann.csv"
    path.write_bytes(parsing.to_csv(np.arange(60), np.log(p)))
    page.set_input_files("#uploadform input[name=file]", str(path))
    page.click("#uploadbtn")
    page.wait_for_selector("#uploadok")
    shown = httpx.get(f"{base}/v1/competitions/{cid}/leaderboard").json()["rows"][0]["score"]
    assert abs(shown / 0.05 - round(shown / 0.05)) < 1e-9
    assert f"{shown:.3f}" in page.inner_text("#uploadok")

    # a second participant (over the API), then a run; the organiser's lab labels what it shows
    tok = httpx.post(
        f"{base}/v1/competitions/{cid}/participants", json={"name": "bob", "invitation": codes[1]["code"]}
    ).json()["token"]
    q = np.full((60, 3), 0.25)
    q[np.arange(60), y] = 0.5
    r = httpx.post(
        f"{base}/v1/competitions/{cid}/submissions?kind=probs",
        content=parsing.to_csv(np.arange(60), q),
        headers={"Authorization": f"Bearer {tok}"},
    )
    assert r.status_code == 201, r.text
    run = httpx.post(
        f"{base}/v1/competitions/{cid}/aggregations", json={"methods": ["average", "linear", "log"]}, headers=hdr
    ).json()
    for _ in range(1800):
        state = httpx.get(f"{base}/v1/jobs/{run['job_id']}", headers=hdr).json()["state"]
        if state in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.1)
    assert state == "succeeded"
    org = browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="UTC").new_page()
    org.goto(base + "/")
    org.fill("#apikey", ADMIN)
    org.click("#savekey")
    org.goto(f"{base}/#/c/{cid}/lab")
    org.wait_for_selector("#table23", timeout=150_000)
    assert "mean ± std over subsets" in org.inner_text("#table23").lower()
    assert "Simple average" in org.inner_text("#table23") and "-0.000" not in org.inner_text("body")
    labels = org.evaluate("Object.values(Chart.instances).find(c => c.canvas.id === 'weightchart').data.labels")
    assert labels == ["1. ann", "2. bob"]  # ranked by public perplexity: ann's entry is the sharper
