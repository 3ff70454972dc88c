"""How the Rényi grid's ratio depends on the number of items in a cell (issue [core-at-scale] §1; session 57).

``bench_renyi_grid.py`` sizes a cell at about ``--budget / (A K)`` items: 4 items at 4,096 classes x 22
agents. This script times one shape at several item counts: our ``solve_fixed_point`` (the solve chosen
by shape, as the grid's ``auto`` row) against the grid's NumPy peer (``numpy_fixed_point``, vectorised
over items), both on the same beliefs, in interleaved rounds (CPU seconds, medians). It prints the
per-item time of each side, the peer's sweeps, the beliefs' size in MB and the ratio. The peer
runs every sweep over the whole ``(n, A, K)`` array; ours solves one item at a time in cache.

    PYTHONPATH=$PWD NUMBA_CACHE_DIR=$PWD/.numba_cache OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/renyi_items_sweep.py --family pixel-pairs --K 4096 --A 22 --items 2 4 8 16 32
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aggregators.renyi_fixed_point import solve_fixed_point  # noqa: E402
from benchmarks.bench_renyi_grid import TOL, make_family, numpy_fixed_point  # noqa: E402
from benchmarks.harness import interleaved  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", default="pixel-pairs")
    ap.add_argument("--K", type=int, default=4096)
    ap.add_argument("--A", type=int, default=22)
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--items", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    print(f"# load: {os.getloadavg()}; tol {TOL}; {a.family} K={a.K} A={a.A} gamma={a.gamma}")
    print("| items | MB | numpy s | ours s | numpy us/item | ours us/item | sweeps np / ours (max) | ratio | max err |")
    print("|---|---|---|---|---|---|---|---|---|")
    L0 = make_family(a.family, 3, a.A, a.K, a.seed)  # compile / load the cache
    w0 = np.full(a.A, 1.0 / a.A)
    solve_fixed_point(L0, w0, np.full(a.A, a.gamma), tol=TOL, check_finite=False)
    for n in a.items:
        L = make_family(a.family, n, a.A, a.K, a.seed)
        rng = np.random.default_rng(a.seed + 1)
        w = rng.dirichlet(np.ones(a.A))
        gam = np.full(a.A, a.gamma)
        _, (t_np, t_us), ((r_np, sw), fp) = interleaved(
            [
                lambda: numpy_fixed_point(L, w, gam),
                lambda: solve_fixed_point(L, w, gam, tol=TOL, check_finite=False),
            ],
            a.reps,
            a.reps,
        )
        err = float(np.abs(fp.log_q - r_np).max())
        print(
            f"| {n} | {L.nbytes / 1e6:.1f} | {t_np:.4f} | {t_us:.4f} | {1e6 * t_np / n:.0f} | {1e6 * t_us / n:.0f} "
            f"| {sw} / {fp.max_sweeps} | {t_us / t_np:.3f} | {err:.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
