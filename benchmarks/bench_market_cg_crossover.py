"""Benchmark: where ``method="auto"`` should switch from dense Newton to Newton-CG (issue #13 §1).

For each utility mix, belief family and shape (K goods x A agents), the CPU time per item of the dense
Newton direction (a K x K Cholesky per step) and of the matrix-free Newton-CG direction on the same
market, their ratio, and the method ``auto`` takes (``markets.equilibrium.CG_MIN_GOODS``). Session 45's
sweep (``benchmarks/results/session45-cg-vs-dense-sweep.txt``) moved the switch from 64 goods to 16.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_market_cg_crossover.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_markets_grid import family, utilities  # noqa: E402
from harness import cpu_timed  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--utilities", default="2,10,mix,exp")
    ap.add_argument("--families", default="logit,dirichlet,dups")
    ap.add_argument("--ks", default="12,16,24,32")
    ap.add_argument("--as", dest="as_", default="2,10,100,1000")
    ap.add_argument("--budget", type=float, default=3e5, help="items x agents x goods per shape")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args(argv)
    from aggregators.validation import as_log_probs
    from markets import equilibrium

    print("| utilities | family | K | A | items | newton µs | newton_cg µs | cg / newton | auto |")
    print("|---" * 9 + "|")
    for spec in args.utilities.split(","):
        for fam in args.families.split(","):
            for K in (int(k) for k in args.ks.split(",")):
                for A in (int(a) for a in args.as_.split(",")):
                    n = int(max(4, min(3000, args.budget // (A * K))))
                    lp = as_log_probs(family(fam, n, A, K))
                    u = utilities(spec, A)
                    w = np.random.default_rng(1).uniform(0.2, 1.0, A)
                    t = {}
                    for m in ("newton", "newton_cg"):
                        equilibrium(lp, u, w, method=m, check=False)  # compile / load
                        t[m] = cpu_timed(lambda m=m: equilibrium(lp, u, w, method=m, check=False), args.calls)[0]
                    auto = equilibrium(lp, u, w, check=False, max_iter=0).method
                    print(
                        f"| {spec} | {fam} | {K} | {A} | {n} | {t['newton'] / n * 1e6:.1f} | "
                        f"{t['newton_cg'] / n * 1e6:.1f} | {t['newton_cg'] / t['newton']:.2f} | {auto} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
