"""The ``agora`` command line: ``agora serve``, ``agora fit``, ``agora keys``.

``agora serve [--host H] [--port P] [--workers N] [--job-processes J] [--demo]`` runs migrations, then
uvicorn (N HTTP processes) and J job worker processes (default 1; 0 runs jobs inside the HTTP process);
``--demo`` loads the demo data (:func:`app.demo.load_demo`).
``agora worker [--threads T] [--nice K]`` runs one more job worker process (:mod:`app.worker`), on this
machine or another sharing the database.
``agora fit --method renyi --predictions val.npy --labels y.npy [--gamma 0.1 | --gamma 0.01,0.1,1]``
fits a pool locally with a progress bar (or on a server with ``--server URL``, following its job).
``agora keys create --scopes read,write [--name N]`` prints a new API key once (stored hashed).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _settings():
    from .settings import get_settings

    return get_settings()


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .db import Database

    settings = _settings()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    db = Database.from_url(settings.database_url)
    db.migrate()  # once, before any worker starts
    if args.demo:
        from .demo import load_demo

        load_demo(db, settings=settings)
        print("agora: demo data loaded", file=sys.stderr)
    db.dispose()
    if not args.no_warmup:
        t0 = time.perf_counter()
        from .warmup import warm

        warm()
        print(f"agora: kernels warm ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    os.environ["AGORA_MIGRATE_ON_STARTUP"] = "false"  # done once above, not again in every worker
    workers = None
    if args.job_processes > 0:  # jobs run in their own processes, not in the HTTP server's
        os.environ["AGORA_RUN_JOBS"] = "false"
        from .worker import WorkerProcesses

        workers = WorkerProcesses(args.job_processes, nice=args.job_nice).start()
    from .settings import get_settings

    get_settings.cache_clear()  # the HTTP app (built in this process when --workers 1) reads the above
    print(
        f"agora: serving on http://{args.host}:{args.port} (docs at /docs), database {settings.database_url}, "
        f"{args.job_processes or 'no'} job worker process(es)",
        file=sys.stderr,
    )
    try:
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=settings.log_level.lower(),
            access_log=args.access_log,
        )
    finally:
        if workers is not None:
            workers.stop()
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from .worker import run_worker

    return run_worker(args.threads, args.nice, args.parent)


def cmd_warmup(args: argparse.Namespace) -> int:
    """Compile (or load from ``NUMBA_CACHE_DIR``) every kernel the service's routes call, with a
    progress bar; ``make install`` runs it so that a new process never compiles."""
    from tqdm import tqdm

    from solvers import kernel_cache

    from .warm_cache import write_manifest
    from .warmup import _calls, warm

    # importing the library keyed numba's cache by the sources (solvers/kernel_cache.py): the manifest
    # describes the user's folder, in which the warm-up first removes the caches of other sources
    cache = kernel_cache.base_dir()
    if cache is not None:
        removed = kernel_cache.prune(cache, Path(os.environ[kernel_cache.ENV]))
        if removed:
            print(f"agora: removed {len(removed)} cache(s) of other sources from {cache}", file=sys.stderr)
    from_empty = cache is not None and not any(p.is_file() for p in cache.rglob("*"))
    calls = list(_calls())
    bar = tqdm(total=len(calls), desc="agora warmup", unit="call", file=sys.stderr)
    times = warm(lambda name, seconds: (bar.set_postfix_str(name[:40]), bar.update()), calls)
    bar.close()
    failed = sorted(name for name, t in times.items() if t < 0)
    total = sum(t for t in times.values() if t > 0)
    print(f"agora: {len(times)} warm-up calls in {total:.1f} s; failed: {failed or 'none'}", file=sys.stderr)
    if cache is not None and not failed:
        write_manifest(cache, from_empty)
    return 1 if failed else 0


def _load_array(path: str) -> np.ndarray:
    if path.endswith(".npy"):
        return np.load(path, allow_pickle=False)
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return z[z.files[0]]
    with open(path) as f:
        return np.asarray(json.load(f))


def _looks_like_probabilities(x: np.ndarray) -> bool:
    """Every row (last axis) non-negative and summing to 1 (as the competition upload checks)."""
    x = np.asarray(x)
    return x.dtype.kind in "iuf" and x.size > 0 and bool((x >= 0).all()) and np.allclose(x.sum(-1), 1.0, atol=1e-3)


def _gamma(s: str | None) -> Any:
    if s is None:
        return None
    parts = [p for p in s.split(",") if p.strip()]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        return s
    return vals if len(vals) > 1 else vals[0]


def cmd_fit(args: argparse.Namespace) -> int:
    lp = _load_array(args.predictions)
    y = _load_array(args.labels)
    if args.kind == "log_probs" and _looks_like_probabilities(lp):
        print(
            "agora: warning: every row of --predictions is non-negative and sums to 1: these look like "
            "probabilities, but they are read as log-probabilities; pass --kind probs if so",
            file=sys.stderr,
        )
    params: dict[str, Any] = json.loads(args.params) if args.params else {}
    if args.server:
        if args.gamma is not None:
            params["gamma"] = _gamma(args.gamma)
        if args.solver is not None:
            params["solver"] = args.solver
        return _fit_remote(args, lp, y, params)
    from .pool_service import build_params

    # as on the server: a list of γ values is a sweep (the estimator's grid mode over them)
    params = build_params(args.method, _gamma(args.gamma), args.solver, params)
    from aggregators.registry import make_pool
    from solvers.progress import tqdm_progress

    from . import estimator_store as store

    pool = make_pool(args.method, **params)
    with tqdm_progress(f"fit {args.method}", disable=args.quiet) as cb:
        pool.fit(lp, y, kind=args.kind, progress=cb)
        cb(1.0)
    st, arrays = store.dump(pool)
    out = {"method": args.method, "params": params, "score": pool.score(lp, y, kind=args.kind)}
    out.update({k: store.public(v) for k, v in st.items() if k in ("weights_", "gamma_", "n_floored_")})
    for k, v in arrays.items():
        if k in ("weights_", "gamma_"):
            out[k] = v.tolist()
    fit = st.get("fit_result_")
    if fit is not None:
        f = store.public(fit)
        out["fit"] = {k: f.get(k) for k in ("method", "fun", "n_iter", "n_passes", "converged", "message", "seconds")}
    _emit(out, args.out)
    return 0


def _emit(out: dict[str, Any], path: str | None) -> None:
    """Print the result (JSON) and, with ``--out``, write it there too."""
    text = json.dumps(out, indent=2, default=str)
    if path:
        with open(path, "w") as fh:
            fh.write(text + "\n")
    print(text)


def _fit_remote(args: argparse.Namespace, lp: np.ndarray, y: np.ndarray, params: dict[str, Any]) -> int:
    from tqdm import tqdm

    from .client import AgoraClient

    with AgoraClient(args.server, api_key=args.api_key or os.environ.get("AGORA_API_KEY")) as c:
        gamma = params.pop("gamma", None)
        solver = params.pop("solver", None)
        res = c.create_pool(
            args.method,
            lp,
            y,
            kind=args.kind,
            gamma=gamma,
            solver=solver,
            params=params,
            background=True if args.background else None,
            wait=False,
        )
        if res.get("kind") == "pool_fit" and "state" in res:  # a job
            bar = tqdm(
                total=100,
                desc=f"fit {args.method} (server)",
                disable=args.quiet,
                bar_format="{l_bar}{bar}| {elapsed}<{remaining}",
            )
            job = c.wait_job(res["id"], on_progress=lambda j: bar.update(max(0.0, j["percent"] - bar.n)))
            bar.close()
            if job["state"] != "succeeded":
                print(json.dumps(job, indent=2), file=sys.stderr)
                return 1
            res = c.get_pool(job["result"]["pool_id"])
        out = {k: res.get(k) for k in ("id", "method", "weights", "gamma", "metrics")}
        out["fit"] = {
            k: (res.get("fit") or {}).get(k)
            for k in ("method", "fun", "n_iter", "n_passes", "converged", "message", "seconds")
        }
        _emit(out, args.out)
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from .auth import create_key, revoke_key
    from .db import Database
    from .models import ApiKey

    db = Database.from_url(_settings().database_url)
    db.migrate()
    with db.sessions() as s:
        if args.action == "create":
            row, secret = create_key(s, args.name or "", [x.strip() for x in args.scopes.split(",") if x.strip()])
            print(json.dumps({"id": row.id, "name": row.name, "scopes": row.scopes.split(","), "key": secret}))
        elif args.action == "list":
            for r in s.query(ApiKey).order_by(ApiKey.created_at):
                print(json.dumps({"id": r.id, "name": r.name, "scopes": r.scopes.split(","), "revoked": r.revoked}))
        elif args.action == "revoke":
            if not revoke_key(s, args.id):
                print(f"no key {args.id}", file=sys.stderr)
                return 1
    db.dispose()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agora", description="Agora: pool probabilistic predictions.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the REST service")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--workers", type=int, default=1, help="HTTP (uvicorn) worker processes")
    s.add_argument(
        "--job-processes",
        type=int,
        default=1,
        help="job worker processes started beside the HTTP server (0: run jobs inside the HTTP process)",
    )
    s.add_argument("--job-nice", type=int, default=0, help="CPU niceness added to the job worker processes")
    s.add_argument("--demo", action="store_true", help="load the demo data (app.demo) before serving")
    s.add_argument("--access-log", action="store_true", help="log every request")
    s.add_argument("--no-warmup", action="store_true", help="do not compile the kernels before serving")
    s.set_defaults(fn=cmd_serve)
    jw = sub.add_parser("worker", help="run background jobs of the configured database (no HTTP)")
    jw.add_argument("--threads", type=int, help="jobs run at once (default: AGORA_JOB_WORKERS)")
    jw.add_argument("--nice", type=int, default=0, help="CPU niceness to add (lower priority than the HTTP server)")
    jw.add_argument("--parent", type=int, help=argparse.SUPPRESS)  # set by `agora serve`: exit with it
    jw.set_defaults(fn=cmd_worker)
    w = sub.add_parser("warmup", help="compile the numba kernels the service calls (into NUMBA_CACHE_DIR)")
    w.set_defaults(fn=cmd_warmup)
    f = sub.add_parser("fit", help="fit a pool on validation predictions (.npy/.npz/.json) with a progress bar")
    f.add_argument("--method", required=True, choices=["average", "topk", "bma", "power_bma", "linear", "log", "renyi"])
    f.add_argument("--predictions", required=True, help="(n_items, n_agents, n_classes) array file")
    f.add_argument("--labels", required=True, help="(n_items,) integer labels file")
    f.add_argument("--kind", default="log_probs", choices=["probs", "log_probs"])
    f.add_argument("--gamma", help="Rényi γ: a value, or comma-separated values to sweep")
    f.add_argument("--solver", help="solver name (default: the pool's own, usually 'auto')")
    f.add_argument("--params", help="other hyper-parameters as a JSON object")
    f.add_argument("--out", help="also write the result (JSON) here")
    f.add_argument("--server", help="fit on this Agora server instead of locally, following its job")
    f.add_argument("--api-key", help="API key for --server (default: $AGORA_API_KEY)")
    f.add_argument("--background", action="store_true", help="with --server: always run as a job")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.set_defaults(fn=cmd_fit)
    k = sub.add_parser("keys", help="manage API keys in the configured database")
    k.add_argument("action", choices=["create", "list", "revoke"])
    k.add_argument("--scopes", default="stateless,read,write", help="comma-separated scopes (create)")
    k.add_argument("--name", help="a label for the key (create)")
    k.add_argument("--id", help="the key id (revoke)")
    k.set_defaults(fn=cmd_keys)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import httpx

    from .client import AgoraError

    try:
        return args.fn(args)
    except AgoraError as exc:  # the server's answer, one line (a wrong key: 401 unknown or revoked API key)
        print(f"agora: error: the server answered {exc}", file=sys.stderr)
        return 1
    except httpx.TransportError as exc:  # the server is down or unreachable
        where = getattr(args, "server", None) or "the server"
        print(f"agora: error: cannot reach {where}: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"agora: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
