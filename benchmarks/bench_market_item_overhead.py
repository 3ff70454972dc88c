"""Benchmark: the per-item cost of the market equilibrium in one source tree, for an A/B of small-item
overhead (issue #13 §1; session 39: the general path's Newton-CG at 64 goods x 2 agents was 1.2x its
session-37 base).

Run once per tree (``--root``: the tree to import, e.g. a ``git worktree`` of the base commit, with its
own ``NUMBA_CACHE_DIR``), alternating trees process by process, and compare the printed lines. For each
shape ``KxA`` the markets of :func:`benchmarks.bench_markets_grid.family` (``--family``) and
:func:`benchmarks.bench_markets_grid.utilities` (``--utilities``: ``mix`` or ``exp``), as many items as
the grid gives that shape, are solved once untimed (a fresh tree compiles its kernels) and then ``--calls``
times; the median CPU time per item is printed in µs with the mean iteration count. ``--method`` other than
``auto`` with ``--max-iters 0,1,2,...`` prints the time per item at each iteration cap instead: the cap 0
is the start alone (floor, powers, start, one evaluation), the differences the cost of each step.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=/tmp/base/.numba_cache \\
        .venv/bin/python benchmarks/bench_market_item_overhead.py --root /tmp/base --shapes 64x2,256x10
    ... --root . (with this tree's NUMBA_CACHE_DIR)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the source tree to import")
    ap.add_argument("--shapes", default="64x2,64x10,256x2,256x10", help="goods x agents, comma-separated")
    ap.add_argument("--family", default="dirichlet")
    ap.add_argument("--utilities", default="mix")
    ap.add_argument("--method", default="auto")
    ap.add_argument("--max-iters", default="", help="iteration caps to time (with --method): the cost per step")
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--no-floor", action="store_true", help="floor=None (bench_markets.py's setting) instead of 1e-9")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.root))
    from aggregators.validation import as_log_probs
    from benchmarks.bench_markets_grid import family, utilities
    from markets import equilibrium

    caps = [int(c) for c in args.max_iters.split(",") if c] or [None]
    tag = os.path.basename(os.path.abspath(args.root))
    for shape in args.shapes.split(","):
        k, a = (int(v) for v in shape.split("x"))
        n = int(max(1, min(20000, 2e6 // (a * k))))
        lp = as_log_probs(family(args.family, n, a, k))
        w = np.random.default_rng(1).uniform(0.2, 1.0, a)
        u = utilities(args.utilities, a)
        cells = []
        for cap in caps:
            kw = dict(tol=1e-10, check=False, method=args.method, **({"floor": None} if args.no_floor else {}))
            if cap is not None:
                kw["max_iter"] = cap
            r = equilibrium(lp, u, w, **kw)
            ts = []
            for _ in range(args.calls):
                t = time.process_time()
                equilibrium(lp, u, w, **kw)
                ts.append(time.process_time() - t)
            per = np.median(ts) / n * 1e6
            cells.append(f"{per:.2f} us/item" if cap is None else f"cap {cap}: {per:.2f}")
        it = f"{r.method}, {r.n_iter.mean():.2f} iterations" if caps == [None] else args.method
        fl = " no floor" if args.no_floor else ""
        print(
            f"{tag} | {args.family} {args.utilities}{fl} {k}x{a} ({n} items, {it}) | " + " | ".join(cells), flush=True
        )


if __name__ == "__main__":
    main()
