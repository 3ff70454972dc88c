"""What two processes gain on this machine: each workload alone, then two copies at once.

Issue 18 asks for 1.6x on 2 workers. A Dask worker is a process; two workers on two cores can at
best run twice as fast as one only if two copies of the work, each in its own process on its own
data, run as fast together as one alone. This script measures exactly that, with no Dask: for each
workload, one process runs it (``alone``), then two processes run it at the same moment
(``together``, a barrier starts them), interleaved ``--reps`` times. Every process builds its own
copy of the data first (as a worker holds its blocks) and runs numba on one thread. The ceiling of
any two-worker split of that work is ``2 * alone / together`` (transfers, the driver and
imbalance aside).

Workloads (``--items`` x 269 x 64 by default, the sweep benchmark's public array):

``cpu``
    a pure-Python loop: no memory traffic (the control: two cores, two times the work).
``stream``
    ``numpy.sum`` over an array of the data's size: memory bandwidth alone.
``logpool-pass``
    the log pool's value and gradient (``ConditionalLogLinear.value_and_grad``), one pass.
``renyi-pass``
    the Rényi weights' value and gradient at γ = 0.5 (``RenyiWeightProblem``), one pass.
``renyi-chain``
    :func:`evaluation.aggregation.warm_points` over η = 2, 5 from the linear pool's weights (fits and
    predictions on ``--items`` private items): a sweep chain task of ``bench_cluster_scaling.py``.

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_two_processes.py
"""

from __future__ import annotations

import os

os.environ["NUMBA_NUM_THREADS"] = "1"  # every process: numba on one thread, as the benchmark's workers
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import multiprocessing as mp  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORKLOADS = ("cpu", "stream", "logpool-pass", "renyi-pass", "renyi-chain")


def _workload(name: str, n: int, a: int, k: int, family: str):
    """A callable running the workload once (its data built now, its code compiled off the clock)."""
    import numpy as np

    if name == "cpu":

        def run() -> float:
            s = 0
            for i in range(3_000_000):
                s += i * i
            return float(s)

        return run
    if name == "stream":
        x = np.ones(n * a * k)
        return lambda: float(x.sum())
    from benchmarks.logpool_families import make_family

    lp, y = make_family(family, 2 * n, a, k, seed=0)
    if name == "logpool-pass":
        from solvers.problems.loglinear import ConditionalLogLinear

        p = ConditionalLogLinear.from_log_probs(np.ascontiguousarray(lp[:n]), y[:n])
        w = np.full(a, 1.0 / a)
        p.value_and_grad(w)
        return lambda: p.value_and_grad(w)[0]
    if name == "renyi-pass":
        from aggregators.renyi_weight_hessian import RenyiWeightProblem

        q = RenyiWeightProblem(np.ascontiguousarray(lp[:n]), y[:n], np.full(a, 0.5), None, tol=1e-9)
        ws = [np.full(a, 1.0 / a), np.linspace(1.0, 2.0, a) / np.linspace(1.0, 2.0, a).sum()]
        q.value_and_grad(ws[0])
        calls = [0]

        def renyi() -> float:  # two points in turn: the problem keeps the last point's solution
            calls[0] += 1
            return q.value_and_grad(ws[calls[0] % 2])[0]

        return renyi
    from evaluation.aggregation import make_pool, warm_points

    v, vy, t, ty = lp[:n], y[:n], lp[n:], y[n:]
    w0 = list(make_pool("linear").fit(v, vy).weights_)
    list(warm_points(v[:200], vy[:200], t[:200], ty[:200], [2.0, 30.0], None))  # compile

    def chain() -> float:
        return float(len(list(warm_points(v, vy, t, ty, [2.0, 5.0], w0))))

    return chain


def _child(name: str, shape: tuple, family: str, calls: int, barrier, out) -> None:
    warnings.simplefilter("ignore")
    run = _workload(name, *shape, family)
    run()  # once off the clock (first touch of the pages, lazy set-up)
    barrier.wait()
    t = time.perf_counter()
    for _ in range(calls):
        run()
    out.put(time.perf_counter() - t)


def _timed(name: str, shape: tuple, family: str, calls: int, n_proc: int) -> list[float]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n_proc), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(name, shape, family, calls, barrier, out)) for _ in range(n_proc)]
    for p in procs:
        p.start()
    times = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--agents", type=int, default=269)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--family", default="competition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    args = ap.parse_args()
    shape = (args.items, args.agents, args.classes)
    calls = {"cpu": 5, "stream": 20, "logpool-pass": 10, "renyi-pass": 5, "renyi-chain": 1}
    print(f"# bench_two_processes  [load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores]")
    print(f"{args.family} {'x'.join(map(str, shape))} ({8 * args.items * args.agents * args.classes / 1e6:.0f} MB)")
    print(f"{args.reps} interleaved repetitions, medians; numba on one thread per process\n")
    print("| workload | calls | alone s | together s (mean of the two) | slowdown together | ceiling of 2 processes |")
    print("|---|---|---|---|---|---|")
    for name in args.workloads:
        alone, together = [], []
        for _ in range(args.reps):
            alone.append(_timed(name, shape, args.family, calls[name], 1)[0])
            together.append(statistics.mean(_timed(name, shape, args.family, calls[name], 2)))
        a, t = statistics.median(alone), statistics.median(together)
        print(f"| {name} | {calls[name]} | {a:.2f} | {t:.2f} | {t / a:.2f}x | **{2 * a / t:.2f}x** |", flush=True)


if __name__ == "__main__":
    main()
