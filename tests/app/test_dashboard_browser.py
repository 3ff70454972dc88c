"""The dashboard in a real browser: Playwright drives Debian's Chromium against a live uvicorn server.

An organiser creates a competition, two participants join and upload (a good and a bad file), the
leaderboard fills, the organiser runs the aggregation with its live progress bar and sees Table 2.3
and the plots; the playground pools pasted predictions. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from app.competitions import parsing

from .conftest import competition_body

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ART = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ADMIN = "browser-test-admin-key"
K, N = 4, 240

sync_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip("Chromium is not installed (make test installs it: scripts/system-deps.sh)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dash")
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp}/dash.db",
        "AGORA_ADMIN_KEY": ADMIN,
        "AGORA_JOB_WORKERS": "1",
        "AGORA_LOG_LEVEL": "warning",
        "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".numba_cache")),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "server.log", "wb"),
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError((tmp / "server.log").read_text())
        time.sleep(0.1)
    yield base, tmp
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _shot(page, name):
    ART.mkdir(exist_ok=True)
    page.screenshot(path=str(ART / f"{name}.png"), full_page=True)


def _agent(y, strength, seed):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(len(y), K))
    s[np.arange(len(y)), y] += strength
    return s


#: a fresh clone compiles the numba kernels on the server's first requests (measured: the competition
#: test takes 35 s alone with a cold cache, 8 s warm; more while the other test worker compiles too),
#: so the competition's pages wait up to two minutes for an element instead of Playwright's 30 s
COLD_START_MS = 120_000


def wide_page(browser):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(COLD_START_MS)
    return page


def run_aggregation(page, timeout_ms: int = 150_000) -> None:
    """Click "Run aggregation", check that the server queued the run, wait for Table 2.3.

    The POST's answer is awaited and checked, and a run that never shows its table fails with what
    the page's job line says: an earlier intermittent failure ("no #table23 after 150 s", no run in
    the database) left nothing to diagnose it with."""
    with page.expect_response(lambda r: r.url.endswith("/aggregations") and r.request.method == "POST") as resp:
        page.click("#runagg")
    assert resp.value.status == 202, f"POST aggregations: {resp.value.status} {resp.value.text()}"
    try:
        page.wait_for_selector("#table23", timeout=timeout_ms)
    except sync_api.TimeoutError as e:
        said = page.evaluate(
            "() => ['jobtext', 'jobstage', 'labresult'].map((i) => document.getElementById(i)?.innerText)"
        )
        raise AssertionError(f"no Table 2.3 after {timeout_ms / 1000:.0f} s; the page says {said}") from e


def test_organiser_and_participants_run_a_competition(server, browser, tmp_path):
    base, _ = server
    y = np.random.default_rng(0).integers(0, K, N)
    labels = tmp_path / "labels.csv"
    labels.write_text("id,label\n" + "".join(f"{1000 + i},{v}\n" for i, v in enumerate(y)))
    ids = np.arange(N) + 1000

    # -- the organiser creates the competition in the browser
    org = wide_page(browser)
    org.goto(base + "/")
    org.fill("#apikey", ADMIN)
    org.click("#savekey")
    org.fill("#createform input[name=title]", "Browser cup")
    org.fill("#createform input[name=n_classes]", str(K))
    org.set_input_files("#createform input[name=labels]", str(labels))
    org.fill("#createform input[name=daily_cap]", "10")
    org.select_option("#createform select[name=join_policy]", "open")  # the form defaults to invitations only
    org.click("#createbtn")
    org.wait_for_selector("#comptitle")
    assert "Browser cup" in org.inner_text("#comptitle") and "organiser" in org.inner_text("#comptitle")
    cid = org.url.split("#/c/")[1].split("/")[0]

    # -- participants join and upload, each in their own browser context
    strengths = {"alice": 2.0, "bob": 1.2, "carol": 0.8}
    for i, (name, st) in enumerate(strengths.items()):
        page = wide_page(browser)
        page.goto(f"{base}/#/c/{cid}/submit")
        page.fill("#joinform input[name=name]", name)
        page.click("#joinbtn")
        page.wait_for_selector("#newtoken")
        good = tmp_path / f"{name}.csv"
        good.write_bytes(parsing.to_csv(ids, _agent(y, st, i) + 3.0))  # unnormalised rows
        page.set_input_files("#uploadform input[name=file]", str(good))
        page.fill("#uploadform input[name=description]", f"{name}'s model")
        page.click("#uploadbtn")
        page.wait_for_selector("#uploadok")
        assert "Public perplexity" in page.inner_text("#uploadok")
        if name == "bob":
            bad_lp = _agent(y, st, 9)
            bad_lp[3, 1] = np.nan
            bad = tmp_path / "bad.csv"
            bad.write_bytes(parsing.to_csv(ids[:-2], bad_lp[:-2]))
            page.set_input_files("#uploadform input[name=file]", str(bad))
            page.click("#uploadbtn")
            page.wait_for_selector("#uploaderror")
            text = page.inner_text("#uploaderror")
            assert "nothing was stored" in text and "NaN" in text and "no row" in text and "1003" in text
            _shot(page, "upload-rejected")
            page.click("a[data-tab=mine]")
            page.wait_for_selector("#mysubs")
            assert page.locator("#mysubs tbody tr").count() == 1  # only bob's own accepted entry
            assert "alice" not in page.inner_text("#mysubs")
        if name == "alice":
            page.click("a[data-tab=leaderboard]")
            page.wait_for_selector("#leaderboard")
            _shot(page, "participant-leaderboard")

    # -- the public leaderboard has everyone, ranked by strength
    org.goto(f"{base}/#/c/{cid}/leaderboard")
    org.wait_for_selector("#leaderboard tbody tr >> nth=2")
    names = [org.inner_text(f"#leaderboard tbody tr:nth-child({i}) td:nth-child(2)") for i in (1, 2, 3)]
    assert names == ["alice", "bob", "carol"]

    # -- the organiser runs the aggregation and watches the job
    org.click("a[data-tab=lab]")
    org.wait_for_selector("#runagg")
    org.fill("#etas", "10")  # one Rényi fit keeps the test short
    run_aggregation(org)
    assert "succeeded" in org.inner_text("#jobtext")
    table = org.inner_text("#table23")
    assert "Best single entry" in table and "Top-k average" in table
    assert org.locator("#verdict").count() == 1
    # the γ sweep, the weights, the LOO gains and the market wealth are drawn by Chart.js
    assert org.evaluate("Object.keys(Chart.instances).length") == 4
    assert (
        org.evaluate("Object.values(Chart.instances).map(c => c.canvas.id).sort().join()")
        == "loochart,sweepchart,wealthchart,weightchart"
    )
    # the submission map shows each submission's log-pool weight from this run
    org.wait_for_function(
        "[...document.querySelectorAll('#submapnodes td.num')].filter(td => td.textContent !== '—').length === 3"
    )
    assert all(float(w) >= 0 for w in org.locator("#submapnodes td.num").all_inner_texts())
    assert org.locator("#submapsvg g.node").count() == 3
    _shot(org, "aggregation-lab")
    org.goto(f"{base}/#/c/{cid}/leaderboard")
    org.wait_for_selector("#aggregates")
    _shot(org, "organiser-leaderboard")

    # -- an anonymous visitor sees no private numbers and no lab before the deadline
    anon = browser.new_context().new_page()
    anon.goto(f"{base}/#/c/{cid}/leaderboard")
    anon.wait_for_selector("#aggregates")
    assert "Private" not in anon.inner_text("#aggregates thead")
    assert anon.locator("a[data-tab=lab]").count() == 0


def _api_competition(base, y, predictions):
    """A competition made over the API: one participant per row of ``predictions`` (each a
    ``(N, K)`` array of log-probabilities), each with one submission; returns its id."""
    auth = {"Authorization": f"Bearer {ADMIN}"}
    r = httpx.post(f"{base}/v1/competitions", json=competition_body(y, K, daily_cap=5), headers=auth, timeout=60)
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    for i, lp in enumerate(predictions):
        r = httpx.post(f"{base}/v1/competitions/{cid}/participants", json={"name": f"p{i}"}, timeout=60)
        token = {"Authorization": f"Bearer {r.json()['token']}"}
        r = httpx.post(
            f"{base}/v1/competitions/{cid}/submissions",
            content=parsing.to_npy(np.arange(N), lp),
            headers=token,
            timeout=COLD_START_MS / 1000,
        )
        assert r.status_code == 201, r.text
    return cid


def test_lab_draws_the_submission_map(server, browser):
    base, _ = server
    y = np.random.default_rng(1).integers(0, K, N)
    base_lp = _agent(y, 1.5, 20)
    copies = [base_lp + 0.1 * np.random.default_rng(30 + i).normal(size=base_lp.shape) for i in range(2)]
    cid = _api_competition(base, y, [*copies, _agent(y, 1.5, 21), _agent(y, 1.5, 22)])
    page = wide_page(browser)
    page.goto(base + "/")
    page.fill("#apikey", ADMIN)
    page.click("#savekey")
    page.goto(f"{base}/#/c/{cid}/lab")
    page.wait_for_selector("#submapsvg")
    assert page.locator("#submapsvg g.node").count() == 4
    assert page.locator("#submapedges tbody tr").count() == page.locator("#submapsvg line.edge").count() >= 1
    assert page.locator("#submapnodes tbody tr").count() == 4  # beside each node its pool weight (none yet)
    assert "1 family of near-copies" in page.inner_text("#submap")
    _shot(page, "submission-map")


def test_playground_pools_side_by_side(server, browser):
    base, _ = server
    page = wide_page(browser)
    page.goto(base + "/#/playground")
    page.wait_for_selector("#pooltable tbody tr >> nth=3")
    text = page.inner_text("#pooltable")
    assert "simple average" in text
    # the simple average of the example's first class is (0.7 + 0.5 + 0.1) / 3
    first = page.inner_text("#pooltable tbody tr:nth-child(1) td:nth-child(2)")
    if "error" not in text.lower():
        assert float(first) == pytest.approx(1.3 / 3, abs=1e-4)
    assert page.locator("canvas#playchart").count() == 1
    _shot(page, "playground")


def test_docs_and_redoc_render_offline(server, browser):
    """/docs (Swagger UI) and /redoc (ReDoc) load from the server itself: with every other host blocked, they render."""
    base, _ = server
    page = browser.new_page()
    outside: list[str] = []

    def only_local(route):
        if route.request.url.startswith(base):
            return route.continue_()
        outside.append(route.request.url)
        return route.abort()

    page.route("**/*", only_local)
    page.goto(base + "/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    assert page.locator(".opblock-summary-path", has_text="/v1/aggregate").count() >= 1
    assert not outside, outside
    # ReDoc too: its bundle from the server, no web fonts
    page.goto(base + "/redoc")
    page.wait_for_selector("[data-section-id^='operation/']", timeout=60_000)
    assert page.get_by_text("/v1/aggregate").count() >= 1
    assert page.locator("h2", has_text="Service health").count() >= 1
    assert not outside, outside
    page.close()
