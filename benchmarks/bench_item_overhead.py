"""Benchmark: the per-item cost of the Rényi aggregate in one source tree, for an A/B of per-item
overhead (issue #13 §1; session 34's kernels without numba's reference counts).

Run once per tree (``--root``: the tree to import, e.g. a ``git worktree`` of the base commit) and compare
the printed lines. For each cell (family of :mod:`benchmarks.bench_renyi_grid`, classes, agents, items)
``solve_fixed_point`` at γ = 0.5 is called once untimed (a worktree compiles its own kernels) and then
``--calls`` times; the CPU minimum and median per item are printed, in µs. With ``--fit`` also
``RenyiPool(gamma=0.5).fit`` on gaussian-logit ``--fit-items`` × 269 × 64 (:mod:`benchmarks.logpool_families`),
one untimed and ``--fits`` timed (CPU seconds).

Run (results in ``benchmarks/results/session34.md`` §1)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache \\
        .venv/bin/python benchmarks/bench_item_overhead.py --root /tmp/base --fit
    ... --root . --fit
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

CELLS = ("near_dup:64:10:5000", "dirichlet:16:10:20000", "gauss_logit:256:100:100")


def _cpu(fn, calls):
    ts = []
    for _ in range(calls):
        t = time.process_time()
        fn()
        ts.append(time.process_time() - t)
    return min(ts), float(np.median(ts))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the source tree to time")
    ap.add_argument("--cells", nargs="+", default=list(CELLS), help="family:classes:agents:items")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--fit", action="store_true", help="also time RenyiPool(gamma=0.5).fit")
    ap.add_argument("--fit-items", type=int, default=5000)
    ap.add_argument("--fits", type=int, default=4)
    a = ap.parse_args(argv)
    sys.path.insert(0, a.root)
    from aggregators import RenyiPool
    from aggregators.renyi_fixed_point import solve_fixed_point
    from benchmarks.bench_renyi_grid import make_family as grid_family
    from benchmarks.logpool_families import make_family

    print(f"# tree {a.root}")
    for cell in a.cells:
        fam, K, A, n = cell.split(":")
        K, A, n = int(K), int(A), int(n)
        L = grid_family(fam, n, A, K, 0)
        rng = np.random.default_rng(1)
        w = rng.dirichlet(np.ones(A))
        gam = np.full(A, 0.5)
        solve_fixed_point(L, w, gam, tol=1e-10, check_finite=False)
        lo, med = _cpu(lambda: solve_fixed_point(L, w, gam, tol=1e-10, check_finite=False), a.calls)
        print(f"{fam} K={K} A={A} n={n}: aggregate {lo / n * 1e6:.2f} µs an item (min), {med / n * 1e6:.2f} (median)")
    if a.fit:
        X, y = make_family("gaussian-logit", a.fit_items, 269, 64, 0)
        P = np.exp(X)
        del X
        RenyiPool(gamma=0.5).fit(P, y)
        lo, med = _cpu(lambda: RenyiPool(gamma=0.5).fit(P, y), a.fits)
        print(f"RenyiPool(gamma=0.5).fit gaussian-logit {a.fit_items} x 269 x 64: {lo:.3f} s (min), {med:.3f} (median)")


if __name__ == "__main__":
    main()
