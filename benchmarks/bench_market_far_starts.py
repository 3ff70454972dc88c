"""Benchmark: warm starts far from the equilibrium (issue #13 §1, "never slower than the seed's fixed point").

A user (or market training) passes ``start=`` log-prices. Newton on the potential recovers a log-price started
far below its equilibrium only a few units per step, so before session 44 a start 400 units low cost Newton
200-400 steps against the fixed point's 50-300, and a start below ``-745`` (a price of zero in double
precision) stopped every method after one step. Session 44 raises a warm start to the lower bound of
isoelastic prices (``markets.kernels.start_bound``). This script prints, per family, market, shape and depth
(``--depths``: how far below the rest three goods of every item start; the rest is the equilibrium plus noise
of 0.05, or with ``--start random`` log-prices drawn N(0, 2)), CPU time per item and iterations for ``auto`` and for the seed's fixed point from the same start,
their ratio, and the items converged within the default caps (``auto`` 100 steps, the fixed point 100,000).
``--markets exp`` (half exponential agents, half eta = 10) compares with tatonnement instead (the FP columns).

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_market_far_starts.py
    ... --root /tmp/base (a worktree of another commit, with its own NUMBA_CACHE_DIR)
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

if "--root" in sys.argv:  # another tree's markets, imported before bench_markets_grid imports this tree's
    sys.path.insert(0, os.path.abspath(sys.argv[sys.argv.index("--root") + 1]))
    import markets  # noqa: E402, F401

from bench_markets_grid import family, utilities  # noqa: E402
from harness import cpu_timed as cpu  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default="logit,dirichlet,dups")
    ap.add_argument("--markets", default="2,10,mix")
    ap.add_argument("--shapes", default="16x10,256x10,64x100,1024x100")
    ap.add_argument("--depths", default="0,30,100,400,800")
    ap.add_argument("--budget", type=float, default=5e5, help="items x agents x goods per shape")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--root", default=None, help="the tree to import markets from (a worktree of another commit)")
    ap.add_argument("--floor", default="default", help="'default' (1e-9) or 'none' (no floor)")
    ap.add_argument(
        "--start",
        default="equilibrium",
        choices=("equilibrium", "random"),
        help="the rest of the start: the equilibrium plus noise of 0.05, or log-prices N(0, 2)",
    )
    args = ap.parse_args(argv)
    import markets
    from markets import equilibrium
    from solvers.special import logsumexp

    fl = {} if args.floor == "default" else {"floor": None}
    print(
        f"markets from {os.path.dirname(os.path.dirname(markets.__file__))}; floor: {args.floor}; start: {args.start}"
    )
    print(f"threads: OMP={os.environ.get('OMP_NUM_THREADS')} NUMBA={os.environ.get('NUMBA_NUM_THREADS')}")
    print(
        "| family | market | K | A | items | depth | auto µs | FP µs | auto / FP | auto steps (max) | FP steps (median) "
        "| converged auto / FP |"
    )
    print("|---" * 12 + "|")
    for name in args.families.split(","):
        for spec in args.markets.split(","):
            for shape in args.shapes.split(","):
                K, A = (int(v) for v in shape.split("x"))
                n = int(max(4, min(500, args.budget // (A * K))))
                lp = family(name, n, A, K)
                u = utilities(spec, A)
                # the seed's fixed point is for isoelastic and log agents; with exponential agents ("exp":
                # half of them, half eta = 10) the reference is tatonnement, the other method that takes them
                ref = "tatonnement" if spec == "exp" else "fixed_point"
                w = np.random.default_rng(1).uniform(0.2, 1.0, A)
                eq = equilibrium(
                    lp, u, w, method="newton" if spec == "exp" else "fixed_point", tol=1e-10, check=False, **fl
                ).log_prices
                rng = np.random.default_rng(3)
                for depth in (float(d) for d in args.depths.split(",")):
                    noise = rng.normal(0.0, 0.05 if args.start == "equilibrium" else 2.0, eq.shape)
                    start = eq + noise if args.start == "equilibrium" else noise
                    start[:, :3] -= depth
                    start -= logsumexp(start, axis=1, keepdims=True)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        equilibrium(lp, u, w, start=start, check=False, **fl)  # compile / load
                        ta, ra = cpu(lambda: equilibrium(lp, u, w, start=start, check=False, **fl), args.calls)
                        tf, rf = cpu(
                            lambda: equilibrium(lp, u, w, method=ref, start=start, check=False, **fl),
                            args.calls,
                        )
                    print(
                        f"| {name} | {spec} | {K} | {A} | {n} | {depth:g} | {ta / n * 1e6:.0f} | {tf / n * 1e6:.0f} "
                        f"| {ta / tf:.2f} | {int(ra.n_iter.max())} | {int(np.median(rf.n_iter))} "
                        f"| {int(ra.converged.sum())} / {int(rf.converged.sum())} of {n} |",
                        flush=True,
                    )
    print("(CPU time per item; depth: log-units below the equilibrium of three goods per item)")


if __name__ == "__main__":
    main()
