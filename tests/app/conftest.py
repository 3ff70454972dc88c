"""Fixtures of the service tests: apps on SQLite or a throwaway PostgreSQL, real uvicorn servers.

PostgreSQL: ``initdb`` and ``pg_ctl`` are found under ``/usr/lib/postgresql/*/bin`` (``make test``
installs them from Debian when missing). The server refuses to run as root, so as root the cluster
belongs to an unprivileged system user (``agora-pg``, created if missing, else ``nobody``) and
commands run through ``runuser``. One cluster per xdist worker, on a free loopback port, in a
temporary folder; each test gets its own database.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from schemathesis.checks import not_a_server_error

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def assert_no_server_error(case, response) -> None:
    """A schemathesis case's answer: never a 5xx, and every 4xx is problem+json."""
    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code < 500
    if response.status_code >= 400:
        ctype = response.headers.get("content-type") or [""]
        ctype = ctype[0] if isinstance(ctype, list) else ctype
        assert ctype.startswith("application/problem+json"), (response.status_code, response.text[:300])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- PostgreSQL ---------------------------------------------------------------------------------------
def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    w = shutil.which("initdb")
    return Path(w).parent if w else None


def _pg_user() -> str | None:
    """The user to run postgres as (None: the current, non-root user)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("agora-pg")
        return "agora-pg"
    except KeyError:
        pass
    r = subprocess.run(["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", "agora-pg"], capture_output=True)
    if r.returncode == 0 or b"already exists" in r.stderr:
        return "agora-pg"
    return "nobody"


class PgCluster:
    def __init__(self) -> None:
        bindir = _pg_bin()
        if bindir is None:
            pytest.skip("PostgreSQL is not installed (make test installs it from Debian: scripts/system-deps.sh)")
        self.bindir = bindir
        self.user = _pg_user()
        self.dir = Path(tempfile.mkdtemp(prefix="agora-pg-"))
        self.data = self.dir / "data"
        self.sock = self.dir / "sock"
        self.sock.mkdir()
        self.port = free_port()
        if self.user:
            os.chmod(self.dir, 0o755)
            shutil.chown(self.dir, self.user, None)
            shutil.chown(self.sock, self.user, None)
        self._run(
            [str(bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
        )
        opts = (
            f"-p {self.port} -k {self.sock} -h 127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        )
        self._run(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                opts,
                "-l",
                str(self.dir / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, cmd: list[str]) -> None:
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {r.stdout}\n{r.stderr}")

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster():
    c = PgCluster()
    yield c
    c.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """A fresh database URL: a SQLite file, then a new database on the throwaway PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/agora.db"
    return request.getfixturevalue("pg_cluster").new_database()


# -- in-process apps ----------------------------------------------------------------------------------
ADMIN = "test-admin-key"


def make_settings(url: str, **kw):
    from app.settings import Settings

    base = dict(database_url=url, admin_key=ADMIN, anonymous_scopes="stateless", job_workers=2)
    base.update(kw)
    return Settings(**base)


def finished_job(client, response, key: str, *, poll: float = 0.1, tries: int = 600) -> dict:
    """Poll the job a 202 ``response`` points to (``Location``) until it ends; returns the job."""
    assert response.status_code == 202, response.text
    for _ in range(tries):
        job = client.get(response.headers["Location"], headers={"Authorization": f"Bearer {key}"}).json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(poll)
    return job


def competition_body(labels, n_classes: int, *, deadline: datetime | None = None, **settings) -> dict:
    """The body creating a competition on ``labels``: half the items public, open for three days
    (or until ``deadline``); ``settings`` add or replace fields."""
    deadline = deadline or datetime.now(UTC) + timedelta(days=3)
    labels = [int(v) for v in labels]
    return {
        "title": "toy",
        "n_classes": n_classes,
        "labels": labels,
        "public_fraction": 0.5,
        "deadline": deadline.isoformat(),
    } | settings


@pytest.fixture
def make_client(tmp_path):
    """Factory: a TestClient (lifespan run) for an app with the given settings overrides."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    opened = []

    def make(url: str | None = None, **kw):
        app = create_app(make_settings(url or f"sqlite:///{tmp_path}/agora.db", **kw))
        c = TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"})
        c.__enter__()
        opened.append(c)
        return c

    yield make
    for c in reversed(opened):
        c.__exit__(None, None, None)


@pytest.fixture
def client(make_client):
    return make_client()


# -- real uvicorn servers -----------------------------------------------------------------------------
class Server:
    """``python -m app.cli serve`` on a free loopback port, with its own environment."""

    def __init__(self, db_url: str, workdir: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir = workdir
        self.env = {**os.environ, "DATABASE_URL": db_url, "AGORA_ADMIN_KEY": ADMIN, "AGORA_LOG_LEVEL": "warning", **env}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> Server:  # serve warms the kernels first (~2 s warm, ~60 s cold)
        self.log = open(self.workdir / f"server-{self.port}.log", "ab")
        self.proc = subprocess.Popen(
            [PY, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=REPO,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {(self.workdir / f'server-{self.port}.log').read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
