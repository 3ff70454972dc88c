"""The competition lab's weight chart draws the log pool's credible bands (the weight posterior of
evaluation.weight_posterior), in a real browser (Playwright + Chromium against a live server)."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest

from .test_dashboard_browser import ADMIN, K, N, _agent, _api_competition, browser, server, wide_page  # noqa: F401

pytestmark = pytest.mark.browser


def _finished(base: str, job: str, hdr: dict, timeout: float = 600.0) -> dict:
    """The job once it has left the queue and finished running (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while (j := httpx.get(f"{base}/v1/jobs/{job}", headers=hdr).json())["state"] in ("queued", "running"):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return j


def test_lab_weight_chart_draws_credible_bands(server, browser):  # noqa: F811
    base, _ = server
    y = np.random.default_rng(4).integers(0, K, N)
    cid = _api_competition(base, y, [_agent(y, s, 40 + i) for i, s in enumerate((2.0, 1.2, 0.6))])
    hdr = {"Authorization": f"Bearer {ADMIN}"}
    r = httpx.post(f"{base}/v1/competitions/{cid}/aggregations", json={"methods": ["linear", "log"]}, headers=hdr)
    assert r.status_code == 202, r.text
    assert _finished(base, r.json()["job_id"], hdr)["state"] == "succeeded"
    res = httpx.get(f"{base}/v1/competitions/{cid}/aggregations/latest", headers=hdr).json()["result"]
    assert "credible" in res["weight_bands"], res["weight_bands"]
    for c in res["credit"]:
        lo, hi = c["weight_log_interval"]
        assert 0 <= lo <= c["weight_log_mean"] <= hi <= 1
    page = wide_page(browser)
    page.goto(base + "/")
    page.fill("#apikey", ADMIN)
    page.click("#savekey")
    page.wait_for_selector("#createform")  # the list the saved key renders, before moving to the lab
    page.goto(f"{base}/#/c/{cid}/lab")
    # one whisker per submission the run used: the weakest of the three is left out when the random
    # public/private split makes its public perplexity no better than a uniform guess
    used = len(res["credit"])
    assert used >= 2, res["credit"]
    page.wait_for_selector(f"#weightchart[data-bands='{used}']", state="attached")
    assert "credible intervals of the log pool's weights" in page.inner_text("#weightbands")
    top = page.evaluate("Object.values(Chart.instances).find(c => c.canvas.id === 'weightchart').scales.y.max")
    assert top >= max(c["weight_log_interval"][1] for c in res["credit"]) - 1e-9  # whiskers are not cut off
