"""Benchmark: the per-item cost of the wealth gradient's adjoint solve in one source tree, for an A/B
(issue #13 §1: "the same holds for the adjoint solve of the weight gradient").

For each family of :func:`benchmarks.bench_markets_grid.family` and shape ``KxA`` (the grid's mixed utilities,
as many items as the grid gives that shape, random labels, wealth uniform in [0.2, 1]), the equilibrium is
solved once (``tol=1e-10``), then :func:`markets.kernels.adjoint.label_gradients` (CG to ``--rtol`` of the
right-hand side, by default 1e-12 as in :func:`markets.wealth_gradient`) is timed ``--calls`` times; the median
CPU time per item is printed with the mean CG products per item, next to the equilibrium's own time per item
(``auto``, validated beliefs, no checks). Run once per tree (``--root``, a ``git worktree`` with its own
``NUMBA_CACHE_DIR``), alternating trees process by process:

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=$ROOT/.numba_cache PYTHONPATH=$ROOT \\
        .venv/bin/python benchmarks/bench_market_adjoint.py --root $ROOT
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
    ap.add_argument("--families", default="logit,dups,dirichlet")
    ap.add_argument("--shapes", default="4096x10,1024x100,256x100,256x1000", help="goods x agents, comma-separated")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=1e-12, help="CG's relative residual (wealth_gradient's cg_rtol)")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.root))
    import numba

    from aggregators.validation import as_log_probs
    from benchmarks.bench_markets_grid import family, utilities
    from markets import equilibrium, make_agents
    from markets.kernels.adjoint import label_gradients

    # trees before session 41 take no thread count
    extra = (numba.get_num_threads(),) if "threads" in inspect.signature(label_gradients.py_func).parameters else ()
    tag = Path(args.root).resolve().name
    print(f"threads: OMP={os.environ.get('OMP_NUM_THREADS')} NUMBA={os.environ.get('NUMBA_NUM_THREADS')}")
    print("| tree | family | K | A | items | adjoint us/item | CG products | equilibrium us/item |")
    print("|---|---|---|---|---|---|---|---|")
    for fam in args.families.split(","):
        for shape in args.shapes.split(","):
            k, a = (int(v) for v in shape.split("x"))
            n = int(max(1, min(20000, 2e6 // (a * k))))
            lp = np.ascontiguousarray(as_log_probs(family(fam, n, a, k)).log_probs)
            u = utilities("mix", a)
            w = np.random.default_rng(1).uniform(0.2, 1.0, a)
            ag = make_agents(u, w, a)
            W = ag.wealth / ag.wealth.sum()
            y = np.random.default_rng(2).integers(0, k, n)
            eq = equilibrium(lp, u, w, tol=1e-10, check=False, floor=None)
            G = np.empty((n, a))
            npr = np.zeros(n, np.int64)
            label_gradients(lp, y, ag.kind, ag.inv_eta, W, eq.log_prices, args.rtol, G, npr, *extra)  # compiles
            ts = []
            for _ in range(args.calls):
                t = time.process_time()
                label_gradients(lp, y, ag.kind, ag.inv_eta, W, eq.log_prices, args.rtol, G, npr, *extra)
                ts.append(time.process_time() - t)
            te = []
            for _ in range(args.calls):
                t = time.process_time()
                equilibrium(lp, u, w, tol=1e-10, check=False, floor=None)
                te.append(time.process_time() - t)
            print(
                f"| {tag} | {fam} | {k} | {a} | {n} | {np.median(ts) / n * 1e6:.1f} | {npr.mean():.1f} | "
                f"{np.median(te) / n * 1e6:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
