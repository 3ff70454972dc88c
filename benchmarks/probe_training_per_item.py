"""Probe: the per-item cost of market training (one online epoch, one batch epoch) beside one
``equilibrium`` call on the same items, in one source tree (for A/B runs of two trees).

Session 51 used it to ask whether the online epoch's per-item buffers (allocated by
``markets.kernels.solve_item`` for every item) cost anything: a version that shared one set of buffers
across the epoch's items ran within the noise of the one that allocates (``results/session51-training-buffers-ab.txt``),
so it was not kept. CPU seconds, the minimum of three rounds, single-threaded.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/probe_training_per_item.py --root .
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

CELLS = [
    ("logit", 20000, 10, 10, "10"),
    ("logit", 20000, 3, 4, "mix"),
    ("dups", 4000, 10, 64, "mix"),
    ("logit", 2000, 100, 64, "spread-low"),
]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".", help="the source tree to import")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path[:0] = [args.root, args.root + "/benchmarks"]
    from bench_markets_grid import family, utilities

    from markets import equilibrium, train_market

    for fam, n, A, K, spec in CELLS:
        lp = family(fam, n, A, K)
        y = np.random.default_rng(2).integers(0, K, n)
        u = utilities(spec, A)
        w = np.random.default_rng(1).uniform(0.2, 1.0, A)
        for mode in ("online", "batch"):  # compile / load the cache
            train_market(lp[:50], y[:50], u, w, mode=mode, max_epochs=1)
        equilibrium(lp[:50], u, w, check=False)
        out = []
        for _ in range(args.rounds):
            t = time.process_time()
            train_market(lp, y, u, w, mode="online", max_epochs=1)
            a = time.process_time() - t
            t = time.process_time()
            train_market(lp, y, u, w, mode="batch", max_epochs=1)
            b = time.process_time() - t
            t = time.process_time()
            equilibrium(lp, u, w, check=False)
            c = time.process_time() - t
            out.append((a, b, c))
        a, b, c = np.min(out, axis=0) / n * 1e6
        print(f"{fam} {n}x{A}x{K} {spec}: online {a:.2f} us/item, batch epoch {b:.2f}, equilibrium {c:.2f}", flush=True)


if __name__ == "__main__":
    main()
