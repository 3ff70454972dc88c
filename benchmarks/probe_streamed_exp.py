"""Probe: the vectorised exp reading a streamed array against one in cache, and the lean market path's powers
(issue #13 §1, session 47).

Part 1 (``--part exp``): ``solvers.kernels.fastexp.exp_scaled`` over the rows of a 160 MB array straight from
memory (``direct``), after copying each row into a cache-sized buffer (``copy+inplace``), and over one row in
cache; ns per element, best of 5. Part 2 (``--part powers``): ``markets.kernels.isoelastic.iso_powers`` of the
source tree ``--root`` over streamed items of several shapes (agents x goods), ns per element, best of 5:
run once per tree (a ``git worktree`` of the base with its own ``NUMBA_CACHE_DIR``) and compare.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/probe_streamed_exp.py --part exp
    ... --part powers --root /tmp/base   (NUMBA_CACHE_DIR of that tree)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np


def _best(fn, *args, reps=5):
    fn(*args)
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


def part_exp():
    from numba import njit

    from solvers.kernels.fastexp import exp_scaled, exp_scaled_inplace

    @njit
    def direct(big, out):
        for j in range(big.shape[0]):
            exp_scaled(big[j], 0.1, out)

    @njit
    def copy_inplace(big, out):
        for j in range(big.shape[0]):
            r = big[j]
            for k in range(r.shape[0]):
                out[k] = r[k]
            exp_scaled_inplace(out, 0.1)

    @njit
    def in_cache(big, out, buf):
        for _ in range(big.shape[0]):
            exp_scaled(buf, 0.1, out)

    for row in (1000, 8192, 100000):
        n = int(2e7 // row)
        big = np.random.default_rng(0).normal(-3, 2, (n, row))
        out = np.empty(row)
        cells = [
            f"direct {_best(direct, big, out) / 2e7 * 1e9:.2f}",
            f"copy+inplace {_best(copy_inplace, big, out) / 2e7 * 1e9:.2f}",
            f"in cache {_best(in_cache, big, out, big[0].copy()) / 2e7 * 1e9:.2f}",
        ]
        print(f"row {row} | " + " | ".join(cells) + " ns/element", flush=True)


def part_powers(root):
    sys.path.insert(0, os.path.abspath(root))
    from numba import njit

    from markets.kernels.isoelastic import iso_powers

    @njit
    def loop(big, g, PgT, flat):
        for j in range(big.shape[0]):
            iso_powers(big[j], g, PgT, flat)

    out = []
    for A, K in ((100, 10), (10, 100), (1000, 16), (100, 256), (2, 4096), (1000, 1024), (10, 4096)):
        n = max(1, int(2e7 // (A * K)))
        big = np.random.default_rng(0).normal(-3, 2, (n, A, K))
        PgT, flat = np.empty((K, A)), np.empty(A * K)
        out.append(f"{A}x{K} {_best(loop, big, 0.1, PgT, flat) / (n * A * K) * 1e9:.2f}")
    print(f"{os.path.basename(os.path.abspath(root))} iso_powers ns/element | " + " | ".join(out), flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("exp", "powers"), default="exp")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the source tree (powers)")
    args = ap.parse_args(argv)
    if args.part == "exp":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        part_exp()
    else:
        part_powers(args.root)


if __name__ == "__main__":
    main()
