"""Benchmark: a learnt-weight Rényi fit against the log-pool fit, same data, same run (issue §3).

At (n_items, n_agents, n_classes) = ``--n`` x 269 x 64 (the seed's competition shape; 20,000 items
is the target) with :func:`benchmarks.competition_data.make_competition_predictions`:

- ``LogPool().fit(X, y)`` (the reference cost);
- ``RenyiPool(gamma=g).fit(X, y)`` for each ``--gammas`` (the default SPG weight solver), with the
  number of solver iterations, fixed-point sweeps and ``converged_``;
- one value-and-gradient evaluation of the Rényi problem (cold solve + adjoint) at uniform weights,
  per Hessian solve, to show where the time of a fit goes.

Run (results in ``benchmarks/results/core-at-scale-renyi.md``)::

    PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_renyi_competition.py --n 2000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.logpool import LogPool  # noqa: E402
from aggregators.renyi import RenyiPool  # noqa: E402
from aggregators.renyi_gradient import renyi_loglik_grad  # noqa: E402
from benchmarks.competition_data import make_competition_predictions  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--agents", type=int, default=269)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--gammas", type=float, nargs="+", default=[0.1, 0.5])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-fit", action="store_true", help="only the per-evaluation timings")
    a = ap.parse_args(argv)
    X, y = make_competition_predictions(a.n, a.agents, a.classes, a.seed)
    print(f"# load {os.getloadavg()}; data {X.shape}")
    A = X.shape[1]
    w = np.full(A, 1.0 / A)
    for g in a.gammas:
        for h in ("dense", "cg", "auto"):
            gam = np.full(A, g)
            m = min(len(X), 300)  # enough items for the parallel kernels too
            renyi_loglik_grad(X[:m], y[:m], w, gam, want=("w",), hessian=h)  # compile / load
            t = time.perf_counter()
            _, _, _, sweeps = renyi_loglik_grad(X, y, w, gam, want=("w",), hessian=h)
            print(f"| eval γ={g} | hessian={h} | {time.perf_counter() - t:.2f} s | sweeps {sweeps} |", flush=True)
    if a.skip_fit:
        return
    t = time.perf_counter()
    LogPool().fit(X, y)
    t_log = time.perf_counter() - t
    print(f"| LogPool().fit | {t_log:.1f} s |", flush=True)
    for g in a.gammas:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            pool = RenyiPool(gamma=g).fit(X, y)
            dt = time.perf_counter() - t
        res = pool.fit_result_
        print(
            f"| RenyiPool(gamma={g}).fit | {dt:.1f} s | {dt / t_log:.1f}x log pool | iters {res.n_iter} | "
            f"sweeps {pool.n_fixed_point_sweeps_} | converged {pool.converged_} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
