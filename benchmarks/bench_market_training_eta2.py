"""Market training (seed 000, Algorithm 2.4, batch mode) of eta = 2 markets: each equilibrium method against the
seed's fixed point on the same data, same run.

Every epoch clears every item at the current wealth and pays the agents; from the second epoch the prices start
warm. For each shape and family: CPU seconds (medians of ``--reps`` interleaved rounds,
:func:`benchmarks.harness.interleaved`) of ``train_market(..., mode="batch", max_epochs=E, wealth_tol=0)`` with
``method`` in ``gram`` (the scaling of the agents' Gram matrix, :mod:`markets.kernels.gram`), ``newton_cg``,
``anderson``, ``auto`` and the seed's ``fixed_point``; the ratio of each to the fixed point; the largest wealth
difference from the fixed point's training (each equilibrium is within ``tol`` of the answer). Families as in
:mod:`benchmarks.bench_markets_grid`.

    PYTHONPATH=$PWD NUMBA_CACHE_DIR=$PWD/.numba_cache OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_market_training_eta2.py
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_markets_grid import family  # noqa: E402
from benchmarks.harness import against_last, interleaved  # noqa: E402
from markets import train_market  # noqa: E402

METHODS = ("gram", "newton_cg", "anderson", "auto", "fixed_point")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="2000x10x256,500x10x1024,5000x4x64,200x2x4096,1000x32x256")
    ap.add_argument("--families", default="dirichlet,logit,dups")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    small = family("logit", 3, 3, 8)
    for m in METHODS:  # compile / load the cache
        train_market(small, np.array([0, 1, 2]), 2.0, method=m, max_epochs=1)
    print(f"reps: {args.reps}  epochs: {args.epochs}  load: {os.getloadavg()}")
    head = " | ".join(f"{m} s" for m in METHODS)
    ratios = " | ".join(f"{m} / FP" for m in METHODS[:-1])
    print(f"| family | n × A × K | {head} | {ratios} | max Δ wealth |")
    print("|---" * (3 + 2 * len(METHODS)) + "|", flush=True)
    for fam in args.families.split(","):
        for shape in args.shapes.split(","):
            n, a, k = (int(v) for v in shape.split("x"))
            lp = family(fam, n, a, k)
            y = np.random.default_rng(1).integers(0, k, n)
            w0 = np.random.default_rng(2).uniform(0.2, 1.0, a)
            fns = [
                (lambda m=m: train_market(lp, y, 2.0, w0, mode="batch", method=m, max_epochs=args.epochs, wealth_tol=0))
                for m in METHODS
            ]
            _, cpu, outs = interleaved(fns, args.reps, args.reps)
            ref = outs[-1].wealth
            dw = max(float(np.abs(o.wealth - ref).max()) for o in outs)
            assert all(o.all_equilibria_converged for o in outs), (fam, shape)
            times, rel = against_last(cpu)
            print(f"| {fam} | {n} × {a} × {k} | {times} | {rel} | {dw:.1e} |", flush=True)
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
