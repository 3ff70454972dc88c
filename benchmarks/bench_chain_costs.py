"""Where a γ-sweep chain's seconds go inside its worker, with and without NumPy's huge pages (session 17).

The competition's 7-η sweep (``evaluation.aggregation.DEFAULT_ETAS``) as warm chains on a fresh
``LocalCluster`` of 1 and 2 one-thread workers (:func:`cluster.fanout.split_etas`; the first chain up
from the linear pool's weights, a later one down from its largest η, as
:func:`cluster.fanout.chain_points` runs them). Each chain is timed from inside its task: the
validate-and-floor pass over its copies of the public and private arrays, then each point
(:func:`evaluation.aggregation.sweep_point`: fit, public and private predictions). The workers start
with ``NUMPY_MADVISE_HUGEPAGE`` set to 1 (NumPy's huge pages, its default) or 0 (none): on a VM whose
host takes freed pages back a fresh huge page is a host fault (:mod:`cluster.host_memory`). Prints
one row per run and the medians; every configuration once per repetition, in turn.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_chain_costs.py [--family F] [--reps 2]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.registry import make_pool  # noqa: E402
from benchmarks.bench_cluster_scaling import local_cluster  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402
from cluster.connect import worker_addresses  # noqa: E402
from cluster.fanout import split_etas, warm_sweep  # noqa: E402
from cluster.scattered import to_every_worker  # noqa: E402
from evaluation.aggregation import DEFAULT_ETAS  # noqa: E402


def timed_chain(val_lp, val_y, test_lp, test_y, etas, w0, down) -> dict:
    """One chain as :func:`cluster.fanout.warm_chain` runs it, timed inside the worker."""
    from aggregators.validation import as_floored_log_probs
    from evaluation.aggregation import sweep_floor, sweep_point

    t0 = time.perf_counter()
    v, te = (as_floored_log_probs(x, floor=sweep_floor()) for x in (val_lp, test_lp))
    validate = time.perf_counter() - t0
    points = []
    for eta in etas[::-1] if down else etas:
        t = time.perf_counter()
        p = sweep_point(v, val_y, te, test_y, eta, w0)
        points.append(time.perf_counter() - t)
        w0 = [float(x) for x in p[0].weights_]
    return {"validate": validate, "points": points, "total": time.perf_counter() - t0}


def run(data, w0, n_workers: int, huge: bool) -> tuple[float, list[dict]]:
    os.environ["NUMPY_MADVISE_HUGEPAGE"] = "1" if huge else "0"  # the user's setting wins in the nanny
    lc, c = local_cluster(n_workers, 1)  # the scaling benchmark's cluster (kernel_friendly_nanny)
    try:
        small = tuple(x[:200] for x in data)
        warm_sweep(*small, (2.0, 5.0), client=c, chains=n_workers)  # compile off the clock
        shared = [to_every_worker(x, c) for x in data]  # off the clock, as in the scaling benchmark
        ws = worker_addresses(c)
        parts = split_etas(DEFAULT_ETAS, n_workers)
        t = time.perf_counter()
        futures = [
            c.submit(
                timed_chain,
                *[d.on(ws[i]) for d in shared],
                part,
                w0 if i == 0 else None,
                i > 0,
                workers=[ws[i]],
                pure=False,
            )
            for i, part in enumerate(parts)
        ]
        chains = c.gather(futures)
        return time.perf_counter() - t, chains
    finally:
        c.close()
        lc.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", default="competition", choices=FAMILIES)
    p.add_argument("--items", type=int, default=2_000, help="public items (as many private)")
    p.add_argument("--n-agents", type=int, default=269)
    p.add_argument("--n-classes", type=int, default=64)
    p.add_argument("--reps", type=int, default=2)
    args = p.parse_args()
    N = args.items
    lp, y = make_family(args.family, 2 * N, args.n_agents, args.n_classes, seed=1)
    data = (lp[:N], y[:N], lp[N:], y[N:])
    w0 = list(make_pool("linear").fit(data[0], data[1]).weights_)
    configs = [(n, huge) for huge in (True, False) for n in (1, 2)]
    print(
        f"## chains of the 7-eta sweep, {args.family} {N} + {N} x {args.n_agents} x {args.n_classes}, "
        f"chains {split_etas(DEFAULT_ETAS, 2)}\n"
    )
    print("| workers | NumPy's huge pages | wall s | per chain: validate + floor s | per chain: points s | load |")
    print("|---|---|---|---|---|---|")
    walls: dict = {c: [] for c in configs}
    for r in range(args.reps):
        for n, huge in configs if r % 2 == 0 else configs[::-1]:
            wall, chains = run(data, w0, n, huge)
            walls[(n, huge)].append(wall)
            validate = ", ".join(f"{ch['validate']:.2f}" for ch in chains)
            points = ", ".join(
                f"{sum(ch['points']):.2f} (" + " ".join(f"{x:.2f}" for x in ch["points"]) + ")" for ch in chains
            )
            print(
                f"| {n} | {'on' if huge else 'off'} | {wall:.2f} | {validate} | {points} | {os.getloadavg()[0]:.1f} |",
                flush=True,
            )
    for huge in (True, False):
        one, two = np.median(walls[(1, huge)]), np.median(walls[(2, huge)])
        print(
            f"- huge pages {'on' if huge else 'off'}: 1 worker {one:.2f} s, 2 workers {two:.2f} s, 1 -> 2 **{one / two:.2f}x**"
        )


if __name__ == "__main__":
    main()
