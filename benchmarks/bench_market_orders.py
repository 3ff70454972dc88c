"""Markets whose agents' orders alternate, against the same markets with the agents sorted by order.

The general path of the equilibrium (mixed utilities) evaluates the effective beliefs of every
isoelastic agent from ``c^(1-g)``; until session 36 it recomputed that vector whenever the order
changed from one agent to the next, so a market listed as eta = 2, 10, 30, log, 2, 10, ... paid a
scalar exp per agent and good per evaluation. The equilibrium does not depend on the agents' order:
the time should not either. Prints, per family x shape x order (``interleaved`` / ``sorted``), the
CPU seconds (median of ``--reps``) of the seed's fixed point, ``auto`` and the methods named, with
the iterations. Run it in two trees (``PYTHONPATH=TREE``) for a before / after table.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_market_orders.py
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_markets_grid import family  # noqa: E402

from benchmarks.harness import interleaved  # noqa: E402
from markets import equilibrium  # noqa: E402

MIXES = {
    "iso-log": lambda a: [[2.0, 10.0, 30.0, "log"][i % 4] for i in range(a)],
    "exp-iso": lambda a: [["exp", 10.0, 2.0][i % 3] for i in range(a)],
}


def _cpu(f, reps):
    """Median CPU seconds of ``reps`` calls of ``f`` (:func:`harness.interleaved` with one function) and
    its last result."""
    _, cpu, outs = interleaved([f], min_reps=reps, max_reps=reps)
    return cpu[0], outs[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="16x10,64x40,256x10,1024x100,4096x10,4096x1000", help="KxA,...")
    ap.add_argument("--families", default="logit,dirichlet")
    ap.add_argument("--mixes", default="iso-log,exp-iso")
    ap.add_argument("--budget", type=float, default=4e6, help="items x agents x goods per shape")
    ap.add_argument("--methods", default="newton_cg")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    print(f"tree: {os.environ.get('PYTHONPATH', '.')}  reps: {args.reps}  load: {os.getloadavg()}")
    head = ["family", "mix", "K", "A", "items", "order", "FP s", "FP iter", "auto", "auto s"] + [
        f"{m} s" for m in methods
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for fam in args.families.split(","):
        for mix in args.mixes.split(","):
            for shape in args.shapes.split(","):
                K, A = (int(x) for x in shape.split("x"))
                n = max(1, int(args.budget // (K * A)))
                L = family(fam, n, A, K)
                specs = MIXES[mix](A)
                W = np.random.default_rng(1).uniform(0.5, 2.0, A)
                key = [str(s) for s in specs]
                order = np.argsort(key, kind="stable")
                for name, LL, uu, ww in (
                    ("interleaved", L, specs, W),
                    ("sorted", np.ascontiguousarray(L[:, order]), [specs[i] for i in order], W[order]),
                ):
                    row = [fam, mix, str(K), str(A), str(n), name]
                    if mix == "iso-log":
                        fp_s, fp = _cpu(lambda: equilibrium(LL, uu, ww, method="fixed_point", check=False), args.reps)
                        row += [f"{fp_s:.3f}", f"{fp.n_iter.mean():.1f}"]
                    else:
                        row += ["-", "-"]  # the fixed point does not apply with exponential agents
                    a_s, a = _cpu(lambda: equilibrium(LL, uu, ww, method="auto", check=False), args.reps)
                    row += [a.method, f"{a_s:.3f}"]
                    for m in methods:
                        m_s, _ = _cpu(lambda: equilibrium(LL, uu, ww, method=m, check=False), args.reps)
                        row.append(f"{m_s:.3f}")
                    print("| " + " | ".join(row) + " |", flush=True)
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
