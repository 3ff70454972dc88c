"""Mean Newton steps per item of the dense one-order path (``method="newton"``, default floor, tol 1e-10) on
three belief families x six shapes x eta 1.5 / 3 / 10 / 30, 2,000 items each: one line per family and shape
with the four means. Session 49 compared the refreshed chord with its base this way
(``benchmarks/results/session49-steps.md``): run it once per tree (``PYTHONPATH=<tree>``).

    python benchmarks/probe_newton_steps.py
"""

from __future__ import annotations

import numpy as np
from bench_markets_grid import family

from markets.equilibrium import equilibrium

SHAPES = ((10, 12), (100, 12), (10, 4), (100, 4), (100, 10), (1000, 12))
ETAS = (1.5, 3.0, 10.0, 30.0)


def main():
    for fam in ("logit", "dups", "dirichlet"):
        for A, K in SHAPES:
            lp = family(fam, 2000, A, K)
            W = np.random.default_rng(1).uniform(0.2, 1, A)
            steps = [equilibrium(lp, eta, W, method="newton", check=False).n_iter.mean() for eta in ETAS]
            print(fam, A, K, " ".join(f"{s:.2f}" for s in steps), flush=True)


if __name__ == "__main__":
    main()
