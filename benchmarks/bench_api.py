"""Load generator for ``POST /v1/aggregate`` on loopback (the [api] issue's benchmark).

Starts ``agora serve`` (uvicorn, httptools, uvloop, no access log) on a free port with a fresh
SQLite database, then drives it with ``--clients`` concurrent keep-alive HTTP/1.1 connections from
one asyncio process (raw sockets, pre-built requests: the generator costs as little CPU as
possible, since it shares the machine's cores with the server). Two payloads:

* small: one item, 10 agents, 10 classes (probabilities, method "average");
* large: 1,000 items, 10 agents, 10 classes.

Each run is bounded in count and in time. Reports requests/s, p50/p99 latency and error count
(any non-200 answer or connection failure is an error).

    python benchmarks/bench_api.py                 # both payloads, workers 1 and 2
    python benchmarks/bench_api.py --workers 2 --small-requests 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def payload(n_items: int, n_agents: int = 10, n_classes: int = 10, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n_classes), size=(n_items, n_agents))
    p = np.round(p, 6)
    p[..., -1] = 1.0 - p[..., :-1].sum(-1)  # rows sum to one after rounding
    return json.dumps({"method": "average", "kind": "probs", "predictions": p.tolist()}).encode()


def payload_npy(n_items: int, n_agents: int = 10, n_classes: int = 10, seed: int = 0) -> bytes:
    """The same predictions as log-probabilities in binary: {"npy": base64 of the .npy file}."""
    import base64
    import io

    rng = np.random.default_rng(seed)
    lp = np.log(rng.dirichlet(np.ones(n_classes), size=(n_items, n_agents)))
    buf = io.BytesIO()
    np.save(buf, lp)
    return json.dumps(
        {
            "method": "average",
            "kind": "log_probs",
            "predictions": {"npy": base64.b64encode(buf.getvalue()).decode()},
            "format": "npy",
        }
    ).encode()


def request_bytes(port: int, body: bytes) -> bytes:
    head = (
        f"POST /v1/aggregate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    ).encode()
    return head + body


async def client(
    port: int, req: bytes, counter: list[int], stop_at: float, lat: list[float], errors: list[int]
) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        errors[0] += 1
        return
    try:
        while counter[0] > 0 and time.perf_counter() < stop_at:
            counter[0] -= 1
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            i = head.lower().find(b"content-length:")
            n = int(head[i + 15 : head.find(b"\r\n", i)])
            await reader.readexactly(n)
            lat.append(time.perf_counter() - t0)
            if status != 200:
                errors[0] += 1
    except (OSError, asyncio.IncompleteReadError, ValueError):
        errors[0] += 1
    finally:
        writer.close()


async def drive(port: int, body: bytes, n_requests: int, clients: int, max_seconds: float) -> dict:
    req = request_bytes(port, body)
    counter = [n_requests]
    lat: list[float] = []
    errors = [0]
    t0 = time.perf_counter()
    await asyncio.gather(*(client(port, req, counter, t0 + max_seconds, lat, errors) for _ in range(clients)))
    dt = time.perf_counter() - t0
    a = np.array(lat) * 1000
    return {
        "requests": len(lat),
        "seconds": dt,
        "rps": len(lat) / dt,
        "p50_ms": float(np.percentile(a, 50)) if a.size else float("nan"),
        "p99_ms": float(np.percentile(a, 99)) if a.size else float("nan"),
        "errors": errors[0],
    }


def tree_cpu_seconds(root: int) -> float:
    """user+system CPU seconds of a process and all its descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                stats[int(d)] = (int(parts[1]), (int(parts[11]) + int(parts[12])) / tick)
            except (OSError, IndexError, ValueError):
                pass
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo += [c for c, (pp, _) in stats.items() if pp == pid]
    return total


def start_server(workers: int, tmp: Path) -> tuple[subprocess.Popen, int]:
    import httpx

    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp}/bench-{port}.db",
        "AGORA_LOG_LEVEL": "warning",
        "OMP_NUM_THREADS": "1",
        "AGORA_ANONYMOUS_SCOPES": "stateless",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", str(workers)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    t0 = time.time()
    while time.time() - t0 < 120:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc, port
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--small-requests", type=int, default=20_000)
    ap.add_argument("--large-requests", type=int, default=300)
    ap.add_argument("--max-seconds", type=float, default=30.0)
    ap.add_argument(
        "--payloads", nargs="*", default=["small", "large", "large-npy"], choices=["small", "large", "large-npy"]
    )
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    small, large, large_npy = payload(1), payload(1000), payload_npy(1000)
    print(
        f"# POST /v1/aggregate, {args.clients} concurrent keep-alive clients, loopback; {os.cpu_count()} CPUs; "
        f"load average before: {os.getloadavg()[0]:.2f}; Python {platform.python_version()}"
    )
    print(
        f"# small payload {len(small)} bytes (1 x 10 x 10 JSON), large payload {len(large)} bytes (1000 x 10 x 10 JSON), "
        f"large-npy {len(large_npy)} bytes (the same size as base64 .npy in JSON, answer as .npy)"
    )
    print(
        "| workers | payload | requests | seconds | req/s | p50 ms | p99 ms | errors | server CPU ms/req | generator CPU ms/req | 2-core capacity req/s (server CPU only) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workers:
            proc, port = start_server(w, Path(tmp))
            try:
                asyncio.run(drive(port, small, 500, args.clients, 10))  # warm-up (imports, first calls)
                runs = {
                    "small": (small, args.small_requests),
                    "large": (large, args.large_requests),
                    "large-npy": (large_npy, args.large_requests),
                }
                for name in args.payloads:
                    body, n = runs[name]
                    cpu0, own0 = tree_cpu_seconds(proc.pid), time.process_time()
                    r = asyncio.run(drive(port, body, n, args.clients, args.max_seconds))
                    cpu = (tree_cpu_seconds(proc.pid) - cpu0) / max(1, r["requests"]) * 1000
                    own = (time.process_time() - own0) / max(1, r["requests"]) * 1000
                    print(
                        f"| {w} | {name} | {r['requests']} | {r['seconds']:.1f} | {r['rps']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['errors']} "
                        f"| {cpu:.2f} | {own:.2f} | {2000 / cpu:.0f} |",
                        flush=True,
                    )
            finally:
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
