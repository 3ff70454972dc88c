"""Benchmark: ``LinearPool().fit`` (Newton, the default since session 14) against SQUAREM EM (the seed's
algorithm and the previous default) and scipy's SLSQP, on the log-pool families, several shapes.

For every ``--families`` x ``--shapes`` (items x agents x classes) cell, same data, same run, medians of
``--reps`` interleaved fits (wall seconds of the whole ``fit``, validation included):

- ``LinearPool()``: ``solver="auto"``, the working-set Newton method on the simplex;
- ``LinearPool(solver="em")``: SQUAREM-accelerated EM to the same ``tol = 1e-10`` (its cap, 100,000
  iterations, is the registry's; a fit that stops there is marked unconverged);
- SLSQP (``scipy.optimize.minimize``) on the same mixture objective ``-mean log(Q w)`` with its exact
  gradient, on the simplex, ``ftol=1e-12``, from uniform weights: the independent peer, run only up to
  ``--slsqp-max-agents`` agents (its QP is dense in the agents).

Printed per cell: seconds and iterations of each (ours: the whole ``fit`` and, in brackets, the
solver's own seconds, ``fit_result_.seconds``, which is what SLSQP's figure counts), the ratios, each objective minus the best
of the three (a correctness check: Newton's must be within 1e-9 relative of the lowest), and the agents
each leaves at a weight above 1e-8.

Run (results in ``benchmarks/results/linear-newton-session14.md``)::

    OMP_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python \\
        benchmarks/bench_linear_pool_families.py --families competition gaussian-logit noise many-active \\
        near-duplicate --shapes 4000x269x64 2000x1000x16 2000x10x4096 20000x10x2
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

from aggregators.linear import LinearPool  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402
from solvers.problems.mixture import MixtureLikelihood  # noqa: E402


def slsqp(X: np.ndarray, y: np.ndarray) -> tuple[float, int, np.ndarray]:
    """SLSQP on the linear pool's likelihood (the same ``Q`` as ours: probabilities of the labels)."""
    from scipy.optimize import minimize

    pb = MixtureLikelihood.from_log_probs(X, y)
    A = pb.dim
    f = lambda w: pb.value(np.clip(w, 0, None))  # noqa: E731
    g = lambda w: pb.grad(np.clip(w, 0, None))  # noqa: E731
    t = time.perf_counter()
    r = minimize(
        f,
        np.full(A, 1.0 / A),
        jac=g,
        method="SLSQP",
        bounds=[(0, 1)] * A,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(A)}],
        options={"ftol": 1e-12, "maxiter": 2000},
    )
    return time.perf_counter() - t, int(r.nit), np.clip(r.x, 0, None) / np.clip(r.x, 0, None).sum()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=["competition", "gaussian-logit", "noise"], choices=FAMILIES)
    ap.add_argument("--shapes", nargs="+", default=["4000x269x64", "2000x1000x16"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slsqp-max-agents", type=int, default=300)
    a = ap.parse_args(argv)
    print(f"# load {os.getloadavg()}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    Xs, ys = make_family("competition", 50, 10, 8, 0)
    LinearPool().fit(Xs, ys)
    LinearPool(solver="em").fit(Xs, ys)  # compile / load the kernels off the clock
    print(
        "| family | shape | Newton s [solver s] (iters) | EM s [solver s] (iters) | EM / Newton | SLSQP s (iters) "
        "| SLSQP / Newton's solver | objective - best: Newton, EM, SLSQP | agents > 1e-8: Newton, EM, SLSQP |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for shape in a.shapes:
            N, A, K = (int(v) for v in shape.split("x"))
            X, y = make_family(fam, N, A, K, a.seed)
            runs: dict[str, list] = {"newton": [], "em": []}
            for _ in range(a.reps):
                for name in runs:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t = time.perf_counter()
                        p = LinearPool(solver="auto" if name == "newton" else "em").fit(X, y)
                        runs[name].append((time.perf_counter() - t, p))
            med = {k: float(np.median([r[0] for r in v])) for k, v in runs.items()}
            sol = {k: float(np.median([r[1].fit_result_.seconds for r in v])) for k, v in runs.items()}
            pools = {k: v[0][1] for k, v in runs.items()}
            pb = MixtureLikelihood.from_log_probs(X, y)
            objs = {k: float(pb.value(p.weights_)) for k, p in pools.items()}
            nnz = {k: int(np.count_nonzero(p.weights_ > 1e-8)) for k, p in pools.items()}
            its = {
                k: f"{p.fit_result_.n_iter}{'' if p.fit_result_.converged else ', unconverged'}"
                for k, p in pools.items()
            }
            peer = "-"
            ratio = "-"
            if A <= a.slsqp_max_agents:
                s_t, s_it, s_w = slsqp(X, y)
                objs["slsqp"], nnz["slsqp"] = float(pb.value(s_w)), int(np.count_nonzero(s_w > 1e-8))
                peer, ratio = f"{s_t:.2f} ({s_it})", f"{s_t / sol['newton']:.1f}"
            best = min(objs.values())
            gaps = ", ".join(f"{objs[k] - best:.1e}" for k in ("newton", "em", "slsqp") if k in objs)
            counts = ", ".join(str(nnz[k]) for k in ("newton", "em", "slsqp") if k in nnz)
            print(
                f"| {fam} | {shape} | {med['newton']:.2f} [{sol['newton']:.2f}] ({its['newton']}) | "
                f"{med['em']:.2f} [{sol['em']:.2f}] ({its['em']}) | "
                f"{med['em'] / med['newton']:.1f} | {peer} | {ratio} | {gaps} | {counts} |",
                flush=True,
            )
            del X, y, runs, pools, pb
    print(f"# load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
