"""What item weights and the watched wait cost a chunked fit on Dask (issue 18 §4, session 9).

Tables printed (all from this run, on one 2-worker ``LocalCluster``, one numba thread per worker;
the repetitions are interleaved, medians reported, the load printed beside them):

1. One pass's wait: :func:`cluster.connect.gather` (checks the cluster every second while it waits,
   so that a cluster without workers or scheduler is an error, not a hang) against Dask's own
   ``client.gather``, on two tasks per pass returning a value and gradient (A + 1 floats) or an
   A x A Hessian, for A = 30, 269, 1000.
2. The chunked pool fits (:func:`cluster.chunked_fit.fit_chunked`, log pool, linear pool by Newton,
   Rényi at gamma = 0.3) without and with ``sample_weight`` (all ones, so both take the same path
   to the same weights, checked) on several data families and sizes: seconds and passes.

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_chunked_weights.py
    ... --reps 1 --sizes 2000x30x8   # a quick run
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators import LinearPool, LogPool, RenyiPool  # noqa: E402
from benchmarks.harness import interleaved  # noqa: E402
from benchmarks.logpool_families import make_family  # noqa: E402
from cluster.chunked_fit import fit_chunked  # noqa: E402
from cluster.connect import gather, kernel_friendly_nanny  # noqa: E402

POOLS = {
    "log": LogPool,
    "linear (Newton)": lambda: LinearPool(solver="newton"),
    "renyi 0.3": lambda: RenyiPool(gamma=0.3),
}


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _partial(n: int, square: bool, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.random((n, n)) if square else rng.random(n + 1)


def bench_wait(client, reps: int) -> None:
    print(f"\n## 1. One pass's wait: two tasks, their partial sums to the driver ({_load()})\n")
    print("| partial sum | connect.gather ms | client.gather ms | ratio |")
    print("|---|---|---|---|")
    for A in (30, 269, 1000):
        for square in (False, True):

            def one(wait_fn, A=A, square=square):
                futs = [client.submit(_partial, A, square, s, pure=False) for s in range(2)]
                return wait_fn(futs)

            (ours, peer), _, _ = interleaved(
                [lambda: one(lambda f: gather(client, f)), lambda: one(client.gather)], min_reps=reps * 10, budget=3.0
            )
            name = f"{A} x {A} Hessian" if square else f"{A + 1} floats"
            print(f"| {name} | {1e3 * ours:.2f} | {1e3 * peer:.2f} | {ours / peer:.2f} |")


def bench_weights(client, sizes: list[tuple[int, int, int]], families: list[str], reps: int) -> None:
    print(f"\n## 2. Chunked fits on 2 workers without and with sample_weight (all ones) ({_load()})\n")
    print("| pool | family | items x agents x classes | unweighted s | weighted s | ratio | passes | max abs diff |")
    print("|---|---|---|---|---|---|---|---|")
    for N, A, K in sizes:
        for family in families:
            lp, y = make_family(family, N, A, K, seed=0)
            chunk = max(1, N // 8)
            sw = np.ones(N)
            for name, make in POOLS.items():

                def fit(weights, make=make):
                    return fit_chunked(make(), lp, y, client=client, chunk_items=chunk, sample_weight=weights)

                (plain, weighted), _, (a, b) = interleaved([lambda: fit(None), lambda: fit(sw)], min_reps=reps)
                passes = (a.fit_result_.extra["passes_on_workers"], b.fit_result_.extra["passes_on_workers"])
                diff = float(np.abs(a.weights_ - b.weights_).max())
                print(
                    f"| {name} | {family} | {N:,} x {A} x {K} | {plain:.2f} | {weighted:.2f} | {weighted / plain:.2f} "
                    f"| {passes[0]}, {passes[1]} | {diff:.1e} |"
                )
            print(f"<!-- {_load()} -->")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", nargs="+", default=["4000x30x8", "20000x60x16"])
    ap.add_argument("--families", nargs="+", default=["gaussian-logit", "competition", "near-duplicate"])
    ap.add_argument("--skip", nargs="*", default=[], choices=["wait", "weights"])
    args = ap.parse_args()
    import dask
    import distributed

    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes]
    with dask.config.set(kernel_friendly_nanny()):
        lc = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"}
        )
    with lc, distributed.Client(lc) as client:
        print(f"# chunked fits: item weights and the watched wait ({_load()})")
        if "wait" not in args.skip:
            bench_wait(client, args.reps)
        if "weights" not in args.skip:
            bench_weights(client, sizes, args.families, args.reps)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
