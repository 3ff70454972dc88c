"""Probe: the cost of one Woodbury Newton direction of the market's general path
(:func:`markets.kernels.woodbury.woodbury_direction`) in one source tree, for an A/B of that kernel alone
(issue #13 §1; session 54: the direction of a 10-agent ``spread-low`` market cost about one evaluation).

Run once per tree (``--root``: the tree to import, with its own ``NUMBA_CACHE_DIR``), alternating trees
process by process, and compare the printed lines. For ``m`` agents of distinct orders below one and ``K``
goods (random effective beliefs, fixed seed), the direction is computed ``N`` times in a compiled loop;
the best of seven loops is printed in µs per direction, with the largest entry of the direction (the
same in both trees to rounding). Trees before session 54 take no scratch argument; the probe passes one
only where the signature has it.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=/tmp/base/.numba_cache \\
        .venv/bin/python benchmarks/probe_woodbury_direction.py --root /tmp/base
    ... --root . (with this tree's NUMBA_CACHE_DIR)
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the source tree to import")
    ap.add_argument("--ms", default="3,7,10", help="agents of order below one (rows m + 2)")
    ap.add_argument("--ks", default="64,256,1024,4096")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.root))
    from numba import njit

    from markets.kernels import woodbury as wbm

    scratch = "S" in inspect.signature(wbm.woodbury_direction.py_func).parameters
    f = wbm.woodbury_direction

    if scratch:

        @njit
        def loop(N, kind, ie, W, Q, c, dg, h, b, d, V, Ew, S):
            ok = True
            for _ in range(N):
                ok &= f(kind, ie, W, Q, c, dg, h, 1.0, b, d, V, Ew, S)
            return ok

    else:

        @njit
        def loop(N, kind, ie, W, Q, c, dg, h, b, d, V, Ew, S):
            ok = True
            for _ in range(N):
                ok &= f(kind, ie, W, Q, c, dg, h, 1.0, b, d, V, Ew)
            return ok

    tag = os.path.basename(os.path.abspath(args.root))
    for m in (int(v) for v in args.ms.split(",")):
        for K in (int(v) for v in args.ks.split(",")):
            rng = np.random.default_rng(m * 10_000 + K)
            kind = np.ones(m, np.int64)
            ie = rng.uniform(0.33, 0.99, m)
            W = rng.uniform(0.2, 1.0, m)
            W /= W.sum()
            Q = rng.dirichlet(np.ones(K), m)
            c = rng.dirichlet(np.ones(K))
            dg, h = (W * ie) @ Q, W @ Q
            b = rng.standard_normal(K) * 1e-3
            rows = m + 2
            V, Ew, d = np.empty((rows + 2, K)), np.empty((rows, rows)), np.empty(K)
            S = np.empty((rows + 1) ** 2 + rows)
            assert loop(1, kind, ie, W, Q, c, dg, h, b, d, V, Ew, S)
            N = max(50, 20_000_000 // (rows * rows * K))
            best = np.inf
            for _ in range(7):
                t0 = time.process_time()
                loop(N, kind, ie, W, Q, c, dg, h, b, d, V, Ew, S)
                best = min(best, (time.process_time() - t0) / N)
            print(f"{tag} | m={m} K={K} | {best * 1e6:.2f} us/direction | max|d| {np.abs(d).max():.6e}", flush=True)


if __name__ == "__main__":
    main()
