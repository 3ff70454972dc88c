"""The service under load while it works (issue #15 §4): small ``POST /v1/aggregate`` requests from
64 clients for 60 s while a competition's aggregation job runs in a job worker process.

Starts ``agora serve --demo`` (fresh SQLite database, the demo's data cache reused): loading the demo
queues the closed pixel competition's aggregation (4,000 test pixels x 22 submissions x 64 classes:
every pool, the Rényi sweep, leave-one-out credit; minutes of work) as a background job, which the
serve's job worker process runs. Once that job is ``running``, one asyncio load-generator process
(this one; raw keep-alive sockets, pre-built requests: :func:`benchmarks.bench_api.drive`) sends the
small payload (1 item x 10 agents x 10 classes, method "average") from ``--clients`` connections for
``--seconds``; a thread samples ``/health`` latency every 0.5 s over its own connection. A run
counts only if the job was still running at the end of the window (else it is marked so).

Target (#15 §4): >= 1,000 req/s, p99 < 100 ms, 0 errors on 2 cores. Configurations swept: HTTP
processes (``--workers``) and the job worker's niceness (``--job-nice``).

    python benchmarks/bench_load.py                               # full: 60 s per configuration
    python benchmarks/bench_load.py --seconds 10 --configs 1:10   # one configuration, short
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_api import drive, free_port, payload  # noqa: E402

ADMIN = "bench-load-admin"


def start(tmp: Path, workers: int, nice: int, *, demo: bool = True, timeout: float = 900.0, **env: str):
    """``agora serve`` on a free port (``--demo`` queues the competition's aggregation job)."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp}/load-{port}.db",
        "AGORA_ADMIN_KEY": ADMIN,
        "AGORA_LOG_LEVEL": "warning",
        "AGORA_DEMO_KEY_FILE": f"{tmp}/demo-key-{port}.txt",
        "AGORA_DEMO_CACHE": os.environ.get("AGORA_DEMO_CACHE", str(REPO / "var" / "demo-cache")),
        "OMP_NUM_THREADS": "1",
        **env,
    }
    cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", str(workers)]
    cmd += ["--job-nice", str(nice)] + (["--demo"] if demo else [])
    log = open(tmp / f"serve-{port}.log", "wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError((tmp / f"serve-{port}.log").read_text()[-3000:])
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, port, url
        except httpx.TransportError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("server did not start")


def running_job(url: str, timeout: float = 300.0) -> dict:
    """The first running background job (the demo's aggregation), waiting for the worker to claim it."""
    h = {"Authorization": f"Bearer {ADMIN}"}
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        items = httpx.get(url + "/v1/jobs", params={"state": "running"}, headers=h, timeout=10).json()["items"]
        if items:
            return items[0]
        time.sleep(0.5)
    raise RuntimeError("no job started running")


def get_job(url: str, jid: str) -> dict:
    return httpx.get(f"{url}/v1/jobs/{jid}", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30).json()


class HealthProbe(threading.Thread):
    """``GET /health`` every ``every`` seconds on its own connection; keeps the latencies (s)."""

    def __init__(self, url: str, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.url, self.every = url, every
        self.latencies: list[float] = []
        self.failures = 0
        self.done = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=30) as c:
            while not self.done.wait(self.every):
                t0 = time.perf_counter()
                try:
                    ok = c.get(self.url + "/health").status_code == 200
                except httpx.TransportError:
                    ok = False
                self.latencies.append(time.perf_counter() - t0)
                self.failures += not ok

    def stop(self) -> None:
        self.done.set()
        self.join(60)


def load_while_job_runs(url: str, clients: int, seconds: float, jid: str) -> dict:
    """Drive small /v1/aggregate requests for ``seconds`` while job ``jid`` runs; the figures."""
    port = int(url.rsplit(":", 1)[1])
    before = get_job(url, jid)
    probe = HealthProbe(url)
    probe.start()
    load0 = os.getloadavg()[0]
    r = asyncio.run(drive(port, payload(1), 10**9, clients, seconds))
    probe.stop()
    after = get_job(url, jid)
    hl = np.array(probe.latencies or [np.nan]) * 1000
    return r | {
        "load_before": load0,
        "job_before": f"{before['state']} {before['percent']:.0f}%",
        "job_after": f"{after['state']} {after['percent']:.0f}%",
        "job_ran_throughout": after["state"] == "running",
        "worker": after.get("worker"),
        "health_p50_ms": float(np.nanpercentile(hl, 50)),
        "health_max_ms": float(np.nanmax(hl)),
        "health_failures": probe.failures,
    }


HEADER = (
    "| HTTP processes | job nice | load avg before | requests | req/s | p50 ms | p99 ms | errors | /health p50 / max ms "
    "| job before -> after |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
)


def row(workers: int, nice: int, r: dict) -> str:
    mark = "" if r["job_ran_throughout"] else " (finished early: not a valid run)"
    return (
        f"| {workers} | {nice} | {r['load_before']:.1f} | {r['requests']} | {r['rps']:.0f} | {r['p50_ms']:.1f} "
        f"| {r['p99_ms']:.1f} | {r['errors']} | {r['health_p50_ms']:.1f} / {r['health_max_ms']:.0f} "
        f"| {r['job_before']} -> {r['job_after']}{mark} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--configs", nargs="*", default=["1:0", "1:10", "2:10"], help="HTTP processes:job worker niceness")
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(
        f"# {args.clients} clients x {args.seconds:.0f} s of POST /v1/aggregate (1 x 10 x 10 probabilities, "
        f"'average') while the demo competition's aggregation job runs in the job worker; "
        f"{os.cpu_count()} CPUs; uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"
    )
    print(HEADER)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for cfg in args.configs:
            workers, nice = (int(x) for x in cfg.split(":"))
            proc, _port, url = start(tmp, workers, nice)
            try:
                job = running_job(url)
                asyncio.run(drive(int(url.rsplit(":", 1)[1]), payload(1), 500, args.clients, 10))  # warm-up
                r = load_while_job_runs(url, args.clients, args.seconds, job["id"])
                print(row(workers, nice, r), flush=True)
            finally:
                proc.terminate()
                proc.wait(60)


if __name__ == "__main__":
    main()
