"""Agora on Dask: strong scaling 1 -> 2 workers, communication per round, per-chunk costs (issue 18 §4).

Tables printed (all from this run; the machine's load is printed beside them):

1. Log-pool fit on a Zarr store (default 20,000 x 269 x 64, float64, uncompressed; blocks kept on
   the workers, or read at every pass): in-memory ``LogPool().fit`` in this process (numba on every
   core), then :func:`cluster.chunked_fit.fit_log_pool` on a ``LocalCluster`` of 1 worker (numba on
   every core, or one numba thread) and of 2 workers (one numba thread each; partial sums added on
   the workers, or every block's sent to the driver); the repetitions are interleaved; the weights
   of every run against the in-memory fit, and the pickled bytes the driver received.
2. The competition's gamma sweep (by default its own 7 etas, ``DEFAULT_ETAS``, 1.5-100; sessions 8-15
   ran 4, ``--sweep-etas 2 5 10 30``; each warm-started from the previous one's
   weights, :func:`evaluation.aggregation.warm_points`) in this process, then on 1 worker and on 2
   workers of one numba thread each, as a competition runs it
   (:meth:`cluster.fanout.CompetitionTasks.sweep`, on the arrays copied to every worker beforehand,
   off the clock and timed apart): as warm chains (``--sweep-mode chains``, the competition's
   default on a cluster: one task per chain, 1 chain on 1 worker, 2 chains on 2) and/or
   data-parallel (each gamma's fit and predictions over item blocks on every worker); with
   ``--sweep-top log`` (the default) a later chain starts from the log pool's weights as the
   competition's does (:func:`cluster.fanout.later_start`; fitted off the clock, it is another
   method's fit), with ``none`` from the pool's own start (sessions 16 and before); the seconds and
   CPU seconds of each, the busiest worker's CPU seconds, the points against the serial sweep, the
   1 -> 2 ratios last.
3. Communication per round of consensus ADMM (:func:`cluster.consensus_admm.consensus_admm`) on
   each E6 topology (24 nodes, D = 50): floats along edges per round (2D per edge) against the seed's
   3D per edge, and the bytes Dask actually moved between the worker processes per round.
4. Per-chunk costs of one pass (value+gradient, Hessian) on one block, the figures the 1e8-item plan
   in ``benchmarks/results/cluster.md`` is built from.
5. ``--latency``: the cost of one small pass of :class:`cluster.chunked_problem.ChunkedProblem` (the
   log pool's value and gradient on 2,000 x 10 x 4 items in 8 blocks) on 2 workers, for each
   ``reduce`` mode: the workers' block actors called directly, tasks added on the workers (a tree),
   a task per block to the driver; the round trip, not the work, is what this times.

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_cluster_scaling.py
    ... --n-items 5000 --sweep-items 500 --reps 1   # a quick run
    ... --skip logpool admm --sweep-items 2000 --reps 3   # the sweep's 1 -> 2 ratio, chains
    ... --skip logpool admm --sweep-items 20000 --sweep-private 2000 --reps 2   # ~12 GB at its peak
    ... --skip logpool admm --sweep-mode both --sweep-family noise   # chains and data-parallel, another family
    ... --skip logpool sweep admm --latency   # one small pass per reduce mode
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import distributed  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators import LogPool  # noqa: E402
from benchmarks.competition_data import make_competition_predictions  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402
from cluster import graphs  # noqa: E402
from cluster.chunked_fit import fit_log_pool  # noqa: E402
from cluster.chunked_problem import build_kept, group_pass  # noqa: E402
from cluster.connect import kernel_friendly_nanny  # noqa: E402
from cluster.consensus_admm import consensus_admm  # noqa: E402
from cluster.fanout import CompetitionTasks, split_etas, warm_sweep  # noqa: E402
from cluster.zarr_rows import read_rows  # noqa: E402
from evaluation.aggregation import DEFAULT_ETAS, make_pool, warm_points  # noqa: E402


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def local_cluster(n_workers: int, numba_threads: int | None = None):
    """A LocalCluster of ``n_workers`` processes, one Dask thread each; ``numba_threads`` sets the
    workers' NUMBA_NUM_THREADS (None: numba's default, every core)."""
    import dask
    from distributed import Client, LocalCluster

    env = {} if numba_threads is None else {"NUMBA_NUM_THREADS": str(numba_threads)}
    nanny = kernel_friendly_nanny()  # no MALLOC_TRIM_THRESHOLD_ in the workers
    # NUMBA_NUM_THREADS also before the spawn: given by ``env=`` alone, a worker that compiled a kernel
    # (readonly arrays received from the driver are a new signature) raised "Cannot set
    # NUMBA_NUM_THREADS to a different value once the threads have been launched" when the driver's
    # environment did not set it (the worker's environment then reads numba's default, 2)
    # Dask's Nanny also writes pre-spawn-environ into THIS process's os.environ for good, so after the
    # first cluster the driver reads NUMBA_NUM_THREADS=1 too: harmless here (the in-process rows launch
    # numba's threads before any cluster and compile nothing new later), not a library mechanism
    nanny["distributed.nanny.pre-spawn-environ"].update(env)
    with dask.config.set(nanny):
        lc = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None, env=env)
    return lc, Client(lc)


def _worker_cpu(client) -> dict[str, float]:
    """The CPU seconds (user + system) each worker's process has used so far."""
    import psutil

    return client.run(lambda: float(sum(psutil.Process().cpu_times()[:2])))


def interleaved(
    configs: list[tuple],
    local,
    on_cluster,
    warm,
    check,
    reps: int,
    columns: tuple[str, str, str] = ("passes", "bytes to the driver", "max abs diff to in-memory"),
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Run every configuration ``(label, n_workers, numba_threads, reduce)`` once per repetition, in
    turn (the order reversed every other repetition, so load drift hits all alike); ``n_workers = 0``
    is ``local()`` in this process (it returns its result and the seconds to count), else ``on_cluster(client, reduce)`` on a fresh LocalCluster (after
    ``warm(client, mode)`` off the clock). Prints one row per configuration: median seconds, the runs,
    the median CPU seconds (this process, scheduler included, plus the workers' processes) and the
    busiest worker's, ``check(result)`` (three ``columns``: by default the max abs difference to the
    reference, passes, driver bytes), the 1-minute load at each run. Returns the medians of the
    seconds, the CPU seconds and the busiest worker's CPU seconds by configuration."""
    runs: dict[str, list[float]] = {c[0]: [] for c in configs}
    cpus: dict[str, list[float]] = {c[0]: [] for c in configs}
    busiest: dict[str, list[float]] = {c[0]: [] for c in configs}
    loads: dict[str, list[float]] = {c[0]: [] for c in configs}
    outs: dict[str, object] = {}
    for r in range(reps):
        for label, n_workers, threads, reduce in configs if r % 2 == 0 else configs[::-1]:
            if n_workers == 0:
                cpu = time.process_time()
                outs[label], seconds = local()
                runs[label].append(seconds)
                cpus[label].append(time.process_time() - cpu)
                busiest[label].append(float("nan"))
            else:
                lc, c = local_cluster(n_workers, threads)
                try:
                    warm(c, reduce)
                    before, cpu = _worker_cpu(c), time.process_time()
                    t = time.perf_counter()
                    outs[label] = on_cluster(c, reduce)
                    runs[label].append(time.perf_counter() - t)
                    used = [v - before.get(w, 0.0) for w, v in _worker_cpu(c).items()]
                    cpus[label].append(time.process_time() - cpu + sum(used))
                    busiest[label].append(max(used))
                finally:
                    c.close()
                    lc.close()
            loads[label].append(os.getloadavg()[0])
    print(
        f"| configuration | seconds (median) | runs | CPU s (median) | busiest worker's CPU s (median) "
        f"| {' | '.join(columns)} | load |"
    )
    print("|---" * (6 + len(columns)) + "|")
    med, cpu, top = ({k: float(np.median(v)) for k, v in d.items()} for d in (runs, cpus, busiest))
    for label, *_ in configs:
        cells = " | ".join(x if isinstance(x, str) else f"{x:.1e}" for x in check(outs[label]))
        print(
            f"| {label} | {med[label]:.2f} | {', '.join(f'{x:.2f}' for x in runs[label])} "
            f"| {cpu[label]:.1f} | {'-' if np.isnan(top[label]) else f'{top[label]:.1f}'} | {cells} "
            f"| {', '.join(f'{x:.1f}' for x in loads[label])} |"
        )
    return med, cpu, top


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def ratios(med: dict[str, float], two: str) -> None:
    for label, s in med.items():
        if label != two:
            print(f"- {label} / {two}: **{s / med[two]:.2f}x**")


SCALING = [
    ("in memory, this process, numba on 2 cores", 0, None, None),
    ("1 worker, numba on 2 cores", 1, None, "auto"),
    ("1 worker, 1 numba thread", 1, 1, "auto"),
    ("2 workers, 1 numba thread each", 2, 1, "auto"),
]
"""The passes' default (``reduce="auto"``: the workers' block actors called directly, session 11)."""
TASKS = [
    ("1 worker, 1 numba thread, passes as tasks", 1, 1, "workers"),
    ("2 workers, 1 numba thread each, passes as tasks", 2, 1, "workers"),
]
"""The same with every pass as tasks, their partial sums added by a task (``reduce="workers"``, the
default before session 11)."""
TWO = "2 workers, 1 numba thread each"


def paired(configs: list[tuple], args: argparse.Namespace) -> list[tuple]:
    """With ``--pair``: the in-memory run and the one-thread-per-worker clusters only."""
    if not args.pair:
        return configs
    return [c for c in configs if c[1] == 0 or (c[2] == 1 and c[3] in ("auto", "workers"))]


def write_store(path: str, lp: np.ndarray, block: int) -> None:
    import zarr

    z = zarr.create_array(path, shape=lp.shape, chunks=(block, *lp.shape[1:]), dtype="f8", compressors=None)
    for a in range(0, lp.shape[0], block):
        z[a : a + block] = lp[a : a + block]


def logpool_scaling(args: argparse.Namespace, workdir: str) -> None:
    import zarr

    N, A, K = args.n_items, args.n_agents, args.n_classes
    lp, y = make_family(args.logpool_family, N, A, K, seed=0)
    path = os.path.join(workdir, "lp.zarr")
    write_store(path, lp, args.block)
    # the store's pages written back to disk before any timing: a fresh store's dirty pages were being
    # written back while the first fits read it (the block build of one worker ranged 2.7-8.4 s for
    # the same 20 blocks; session 11)
    os.sync()
    print(
        f"\n## 1. log-pool fit, {args.logpool_family} family, {N} x {A} x {K} ({lp.nbytes / 2**30:.2f} GiB), Zarr blocks of {args.block} items, "
        f"{args.zarr_mode}, {args.reps} interleaved repetitions"
    )
    LogPool().fit(lp[:200], y[:200])  # compile the kernels off the clock
    per_chunk(lp, y, args.block, args.n_agents)
    del lp  # the driver holds the array only while it fits in memory (read from the store, as the workers)

    def in_memory() -> tuple[LogPool, float]:
        t = time.perf_counter()
        arr = zarr.open_array(path, mode="r")[:]
        read.append(time.perf_counter() - t)
        return timed(LogPool().fit, arr, y)

    read: list[float] = []
    ref = in_memory()[0]
    configs = paired(
        [*SCALING, *TASKS, ("2 workers, 1 numba thread each, every block's partial sum to the driver", 2, 1, "driver")],
        args,
    )
    med, _, _ = interleaved(
        configs,
        in_memory,
        lambda c, red: fit_log_pool(
            path, y, client=c, chunk_items=args.block, persist=args.zarr_mode == "kept", reduce=red
        ),
        lambda c, _: fit_log_pool(
            np.asarray(zarr.open_array(path, mode="r")[:400]), y[:400], client=c, chunk_items=100
        ),
        lambda pool: (
            str(pool.fit_result_.extra.get("passes_on_workers", "-")),
            str(pool.fit_result_.extra.get("driver_bytes", "-")),
            _waits(pool.fit_result_.extra),
            float(np.abs(pool.weights_ - ref.weights_).max()),
        ),
        args.reps,
        ("passes", "bytes to the driver", WAITS, "max abs diff to in-memory"),
    )
    print(f"(the in-memory rows count the fit alone; reading the store into this process took {np.median(read):.2f} s)")
    ratios(med, TWO)
    one, two = (c[0] for c in TASKS)
    if one in med and two in med:
        print(f"- passes as tasks, {one} / {two}: **{med[one] / med[two]:.2f}x**")


WAITS = "s waiting on passes (of which the first pass, blocks built)"
"""Column: the driver's wall seconds inside the chunked fit's passes (``fit_result_.extra``); the rest
of a fit's seconds is the driver's own work between passes. Last run of the configuration."""


def _waits(extra: dict) -> str:
    if "pass_seconds" not in extra:
        return "-"
    return f"{extra['pass_seconds']:.2f} ({extra['first_pass_seconds']:.2f})"


def _sweep_waits(extras: list[dict]) -> str:
    if any("pass_seconds" not in e for e in extras):
        return "-"
    return f"{sum(e['pass_seconds'] for e in extras):.2f} ({sum(e['first_pass_seconds'] for e in extras):.2f})"


def per_chunk(lp: np.ndarray, y: np.ndarray, block: int, A: int) -> None:
    print(f"\n## 4. per-chunk costs, one block of {block} items x {lp.shape[1]} x {lp.shape[2]} (this process)")
    import zarr

    d = tempfile.mkdtemp()
    z = zarr.create_array(os.path.join(d, "b.zarr"), shape=(block, *lp.shape[1:]), dtype="f8", compressors=None)
    z[:] = lp[:block]
    w = np.full(A, 1.0 / A)
    opts = {"floor": 1e-9, "dtype": "float64"}
    rows = []
    t = time.perf_counter()
    for _ in range(3):
        zarr.open_array(os.path.join(d, "b.zarr"), mode="r")[:]
    rows.append(("read the block from the Zarr store by zarr (page cache)", (time.perf_counter() - t) / 3))
    t = time.perf_counter()
    for _ in range(3):
        read_rows(os.path.join(d, "b.zarr"), 0, block)
    rows.append(
        (
            "read it as the fits do (`cluster.zarr_rows.read_rows`: the chunk file's bytes)",
            (time.perf_counter() - t) / 3,
        )
    )
    t = time.perf_counter()
    for _ in range(3):
        kept = build_kept("log", opts, lp[:block], y[:block], 0)
    rows.append(("floor + build the block's problem", (time.perf_counter() - t) / 3))
    blk = (kept, y[:block], 0)
    every = [(None, 0)]  # the block's every item, the first at position 0
    group_pass("log", opts, None, "value_and_grad", (w,), [blk], every)
    for op, cols in (("value_and_grad", None), ("hessian", None), ("hessian", np.arange(min(50, A)))):
        x = w if cols is None else np.full(cols.size, 1.0 / cols.size)
        args = (x,) if op == "value_and_grad" else (x, None, block)  # a float64 Hessian over the block
        group_pass("log", opts, cols, op, args, [blk], every)  # the working set's restriction, built once
        t = time.perf_counter()
        for _ in range(3):
            group_pass("log", opts, cols, op, args, [blk], every)
        name = op + ("" if cols is None else f" on a working set of {cols.size} agents")
        rows.append((name, (time.perf_counter() - t) / 3))
    print("| step | seconds per block | ns per item x agent x class |")
    print("|---|---|---|")
    n_vals = block * lp.shape[1] * lp.shape[2]
    for name, s in rows:
        print(f"| {name} | {s:.4f} | {1e9 * s / n_vals:.2f} |")
    print(f"[{load()}]")


SWEEP = {
    "chains": [
        ("1 worker, 1 numba thread, one warm chain", 1, 1, 1),
        ("2 workers, 1 numba thread each, two warm chains", 2, 1, 2),
    ],
    "data-parallel": [
        ("1 worker, 1 numba thread, data-parallel", 1, 1, None),
        ("2 workers, 1 numba thread each, data-parallel", 2, 1, None),
    ],
}
"""The sweep's cluster configurations ``(label, workers, numba threads, chains)`` by ``--sweep-mode``."""


def sweep_scaling(args: argparse.Namespace) -> None:
    N, A, K = args.sweep_items, args.n_agents, args.n_classes
    M = args.sweep_private or N
    lp, y = make_family(args.sweep_family, N + M, A, K, seed=1)
    data = (lp[:N], y[:N], lp[N:], y[N:])
    etas = tuple(args.sweep_etas)
    modes = ("chains", "data-parallel") if args.sweep_mode == "both" else (args.sweep_mode,)
    configs = [("in memory, this process, numba on 2 cores", 0, None, None)]
    configs += [c for m in modes for c in SWEEP[m]]
    print(
        f"\n## 2. gamma sweep, {len(etas)} etas {etas}, {args.sweep_family} family, first eta from {args.sweep_w0}, later chains from {args.sweep_top}, "
        f"{N} public + {M} private "
        f"items x {A} x {K}, {args.reps} interleaved repetitions; {' and '.join(modes)} on the cluster"
        + (f", chains {split_etas(etas, 2)}" if "chains" in modes else "")
    )
    small = (lp[:200], y[:200], lp[200:400], y[200:400])
    warm_sweep(*small, (2.0,))  # compile off the clock
    # --sweep-w0 linear: the first eta starts from the linear pool's weights, as the competition's
    # aggregation starts it (off the clock: that fit is another method's); default none (a cold start)
    w0 = list(make_pool("linear").fit(data[0], data[1]).weights_) if args.sweep_w0 == "linear" else None
    # --sweep-top log: later chains start from the log pool's weights, as the competition's aggregation
    # starts them (off the clock: that fit is the log method's); none: the pool's own start
    w_top = list(make_pool("log").fit(data[0], data[1]).weights_) if args.sweep_top == "log" else None
    ref = list(warm_points(*data, etas, w0))
    runs: dict = {"tasks": None, "scatter": {}}

    def on_workers(c, chains) -> None:
        """Off the clock, as in a competition run (its other methods use the same copies): compile on
        the workers, then copy the four arrays to every worker (the seconds are recorded)."""
        warm_sweep(*small, (2.0, 5.0), client=c, chains=chains)
        t = time.perf_counter()
        runs["tasks"] = tasks = CompetitionTasks(c, data, (), loo=False, sweep_chains=chains)
        # the copied arrays only: the data-parallel blocks are cut and floored on the clock (the
        # in-memory sweep validates its arrays on the clock too; session 12)
        distributed.wait([f for d in tasks.data for f in d.futures()])
        key = (len(c.scheduler_info(n_workers=-1)["workers"]), chains)
        runs["scatter"].setdefault(key, []).append(time.perf_counter() - t)

    def check(out: list[tuple]) -> tuple:
        return (
            max(abs(a[1] / b[1] - 1) for a, b in zip(out, ref)),
            max(abs(a[3] / b[3] - 1) for a, b in zip(out, ref)),
            max(float(np.abs(a[0].weights_ - b[0].weights_).max()) for a, b in zip(out, ref)),
            _sweep_waits([a[0].fit_result_.extra for a in out]),
        )

    med, cpu, top = interleaved(
        configs,
        lambda: timed(lambda: list(warm_points(*data, etas, w0))),
        lambda c, chains: list(runs["tasks"].sweep(etas, w0, w_top=w_top)),
        on_workers,
        check,
        args.reps,
        (
            "max rel diff public perplexity",
            "max rel diff private perplexity",
            "max abs diff weights",
            "s waiting on the fits' passes, summed over the points (first passes)",
        ),
    )
    print(
        "copying the arrays to every worker before the sweep (off the clock; medians): "
        + ", ".join(f"{w} worker(s), {m}: {np.median(v):.2f} s" for (w, m), v in runs["scatter"].items())
    )
    print(f"[{load()}]  (CPU s: this process, the scheduler included, plus the workers' processes)")
    for m in modes[::-1]:  # the chains' ratio last
        one, two = (c[0] for c in SWEEP[m])
        print(
            f"- {m}, in memory / 2 workers: **{med[configs[0][0]] / med[two]:.2f}x** wall; "
            f"{m}, 1 -> 2 workers: CPU s {cpu[one] / cpu[two]:.2f}x, 1 worker's CPU s / the busiest of 2 "
            f"{top[one] / top[two]:.2f}x (the wall ratio on two idle cores, driver and transfers aside); "
            f"wall **{med[one] / med[two]:.2f}x**"
        )


def communication(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    D, n, m = 50, 24, 200
    xt = rng.normal(size=D)
    shards = []
    for _ in range(n):
        S = rng.normal(size=(m, D))
        shards.append((S, S @ xt + 1e-2 * rng.normal(size=m)))
    rounds = args.admm_rounds
    print(f"\n## 3. consensus ADMM communication per round, 24 nodes on 2 worker processes, D = {D}, {rounds} rounds")
    print(
        "| topology | edges | floats/round along edges (2D/edge) | seed's 3D/edge | bytes between processes/round "
        "(Dask) | in-process s/round | Dask s/round |"
    )
    print("|---|---|---|---|---|---|---|")
    lc, c = local_cluster(2)
    try:

        def sent(dask_worker) -> int:
            return int(dask_worker.transfer_outgoing_bytes_total)

        for name in graphs.TOPOLOGIES:
            G = graphs.topology(name, n)
            ref = consensus_admm(G, shards, beta=1.0, max_rounds=rounds)
            before = sum(c.run(sent).values())
            res = consensus_admm(G, shards, beta=1.0, max_rounds=rounds, client=c)
            moved = (sum(c.run(sent).values()) - before) / rounds
            assert np.allclose(res.extra["node_values"], ref.extra["node_values"], atol=1e-10)
            print(
                f"| {G.name} | {G.n_edges} | {res.extra['floats_per_round']} | {3 * D * G.n_edges} | {moved:,.0f} "
                f"| {np.mean(ref.extra['round_seconds']):.4f} | {np.mean(res.extra['round_seconds']):.4f} |"
            )
    finally:
        c.close()
        lc.close()
    print(f"[{load()}]")


def pass_latency(args: argparse.Namespace) -> None:
    from cluster.chunked_fit import _groups
    from cluster.chunked_problem import ChunkedProblem

    lp, y = make_competition_predictions(2000, 10, 4, seed=0)
    opts = {"floor": 1e-9, "dtype": "float64"}
    w = np.full(10, 0.1)
    print("\n## 5. one small pass (log pool value and gradient, 2,000 x 10 x 4, 8 blocks) on 2 workers")
    print("| reduce | median ms | p10 ms | p90 ms | passes timed |")
    print("|---|---|---|---|---|")
    lc, c = local_cluster(2, 1)
    try:
        how = {"chunk_items": 250, "persist": True, "timeout": 60.0}
        groups = _groups("log", opts, lp, None, lp.shape, (y, None), c, how)
        for reduce in ("direct", "workers", "driver"):
            P = ChunkedProblem("log", opts, groups, lp.shape, client=c, reduce=reduce)
            for _ in range(20):  # warm: the actors are created at the first pass
                P.value_and_grad(w)
            ts = []
            for _ in range(200):
                t = time.perf_counter()
                P.value_and_grad(w)
                ts.append(1e3 * (time.perf_counter() - t))
            P.close()
            q = np.percentile(ts, [50, 10, 90])
            print(f"| {reduce} | {q[0]:.2f} | {q[1]:.2f} | {q[2]:.2f} | {len(ts)} |")
    finally:
        c.close()
        lc.close()
    print(f"[{load()}]")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-items", type=int, default=20_000)
    p.add_argument("--n-agents", type=int, default=269)
    p.add_argument("--n-classes", type=int, default=64)
    p.add_argument("--block", type=int, default=1_000, help="items per Zarr block / task")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument(
        "--zarr-mode",
        default="kept",
        choices=("kept", "read-per-pass"),
        help="blocks floored once and kept on the workers, or read from the store at every pass",
    )
    p.add_argument("--pair", action="store_true", help="in memory, 1 and 2 workers of one numba thread only")
    p.add_argument("--logpool-family", default="competition", choices=FAMILIES, help="the log-pool fit's data family")
    p.add_argument("--sweep-items", type=int, default=2_000, help="the sweep's public items")
    p.add_argument("--sweep-private", type=int, default=None, help="the sweep's private items (default: as public)")
    p.add_argument("--sweep-family", default="competition", choices=FAMILIES, help="the sweep's data family")
    p.add_argument(
        "--sweep-w0",
        default="none",
        choices=("none", "linear"),
        help="the first eta's start: none (a cold fit) or the linear pool's weights (as the competition)",
    )
    p.add_argument(
        "--sweep-top",
        default="log",
        choices=("log", "none"),
        help="later chains' start: the log pool's weights (as the competition) or the pool's own start",
    )
    p.add_argument(
        "--sweep-etas", type=float, nargs="+", default=list(DEFAULT_ETAS), help="the sweep's etas (the competition's)"
    )
    p.add_argument("--sweep-mode", default="chains", choices=("chains", "data-parallel", "both"))
    p.add_argument("--admm-rounds", type=int, default=20)
    p.add_argument("--skip", nargs="*", default=(), choices=("logpool", "sweep", "admm"))
    p.add_argument("--latency", action="store_true", help="also time one small pass per reduce mode")
    args = p.parse_args()
    print(f"# bench_cluster_scaling  [{load()}, {os.cpu_count()} cores]")
    with tempfile.TemporaryDirectory() as d:
        if "logpool" not in args.skip:
            logpool_scaling(args, d)
    if "sweep" not in args.skip:
        sweep_scaling(args)
    if "admm" not in args.skip:
        communication(args)
    if args.latency:
        pass_latency(args)


if __name__ == "__main__":
    main()
