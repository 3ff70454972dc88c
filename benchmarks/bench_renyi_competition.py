"""Benchmark: the learnt-weight Rényi fit against the log-pool fit, same data, same run (issue #13 §3).

For every family of :mod:`benchmarks.logpool_families` in ``--families`` and every ``--n`` (items;
``--agents`` x ``--classes`` = 269 x 64 by default, the seed's competition shape):

- ``LogPool().fit(X, y)``: the reference cost (best of ``--reps``);
- ``RenyiPool(gamma=g).fit(X, y)`` for each ``--gammas``, with the default solver (``auto``:
  working-set Newton with the Gauss-Newton matrix of :mod:`aggregators.renyi_weight_hessian`): time,
  ratio to the log pool, Newton iterations, working-set sizes, fixed-point sweeps per item, active
  agents, ``converged_``;
- with ``--spg``: the same fit by spectral projected gradient (the previous default), and the gap
  between the two optima (mean log-likelihood);
- with ``--sweep``: ``RenyiPool(gamma="grid")`` over 10 log-spaced γ in [0.01, 1] (each fit
  warm-started from the previous one), time and ratio to the log pool.

Run (results in ``benchmarks/results/core-at-scale-session6.md``)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python \\
        benchmarks/bench_renyi_competition.py --families competition gaussian-logit noise --n 2000 5000
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
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402

SWEEP = tuple(float(g) for g in np.logspace(-2, 0, 10))


def _timed(make, X, y, reps=1):
    best, pool = np.inf, None
    for _ in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            pool = make().fit(X, y)
            best = min(best, time.perf_counter() - t)
    return best, pool


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=["competition"], choices=FAMILIES)
    ap.add_argument("--n", type=int, nargs="+", default=[2000])
    ap.add_argument("--agents", type=int, default=269)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--gammas", type=float, nargs="+", default=[0.1, 0.5])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--spg", action="store_true", help="also fit by projected gradient (slow)")
    ap.add_argument("--sweep", action="store_true", help="also the 10-value γ sweep")
    a = ap.parse_args(argv)
    print(f"# load {os.getloadavg()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    # compile / load every kernel on a small problem first
    Xs, ys = make_family("competition", 200, 30, a.classes, 1)
    LogPool().fit(Xs, ys)
    RenyiPool(gamma=0.3).fit(Xs, ys)
    print(
        "| family | n | fit | s | x log pool | iters | working sets | sweeps/item | active | converged | Δ loglik vs SPG |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for n in a.n:
            X, y = make_family(fam, n, a.agents, a.classes, a.seed)
            t_log, lp = _timed(LogPool, X, y, a.reps)
            row = f"| {fam} | {n} |"
            print(
                f"{row} LogPool | {t_log:.2f} | 1 | {lp.fit_result_.n_iter} | | | {np.count_nonzero(lp.weights_)} | "
                f"{lp.fit_result_.converged} | |",
                flush=True,
            )
            for g in a.gammas:
                dt, pool = _timed(lambda g=g: RenyiPool(gamma=g), X, y, a.reps)
                res = pool.fit_result_
                ws = res.extra.get("working_set_sizes", "")
                sweeps = pool.n_fixed_point_sweeps_ / n
                gap = ""
                if a.spg:
                    ds, spg = _timed(lambda g=g: RenyiPool(gamma=g, solver="projected_gradient"), X, y)
                    gap = f"{pool.loglik_ - spg.loglik_:.1e}"
                    print(
                        f"{row} Rényi γ={g} SPG | {ds:.2f} | {ds / t_log:.1f} | {spg.fit_result_.n_iter} | | "
                        f"{spg.n_fixed_point_sweeps_ / n:.0f} | {np.count_nonzero(spg.weights_)} | "
                        f"{spg.converged_} | |",
                        flush=True,
                    )
                print(
                    f"{row} Rényi γ={g} Newton | {dt:.2f} | {dt / t_log:.1f} | {res.n_iter} | {ws} | {sweeps:.0f} | "
                    f"{np.count_nonzero(pool.weights_)} | {pool.converged_} | {gap} |",
                    flush=True,
                )
            if a.sweep:
                dt, pool = _timed(lambda: RenyiPool(gamma="grid", gamma_grid=SWEEP), X, y)
                print(
                    f"{row} Rényi 10-γ sweep (best γ {pool.gamma_:.3g}) | {dt:.2f} | {dt / t_log:.1f} | "
                    f"{pool.fit_result_.n_iter} | | {pool.n_fixed_point_sweeps_ / n:.0f} | "
                    f"{np.count_nonzero(pool.weights_)} | {pool.converged_} | |",
                    flush=True,
                )
            del X, y
    print(f"# load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
