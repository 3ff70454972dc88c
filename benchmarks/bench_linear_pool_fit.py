"""Linear-pool weight fit (seed 000 Eq. 2.4): EM and Newton against SLSQP and cvxpy-SCS, same data.

Two sizes: one cvxpy can do (default 4,000 items x 20 agents x 10 classes), where cvxpy with SCS at
eps 1e-9 is the correctness oracle (not a speed peer: Clarabel fails on this problem and OSQP does
not apply, notes/solver-benchmarks.md); and the competition scale (20,000 x 269 x 64) without cvxpy.
All fits work on the sufficient statistic Q[n, i] = P_i(y_n | n). Reference f* = best objective
of all runs; "time to 1e-8" from each solver's trace (SLSQP: callback timestamps, evaluated off the
clock); median of --reps repetitions; OMP_NUM_THREADS=1.

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_linear_pool_fit.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ["OMP_NUM_THREADS"])

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import solvers  # noqa: E402
from benchmarks.competition_data import make_competition_predictions  # noqa: E402
from solvers.problems.mixture import MixtureLikelihood  # noqa: E402
from tests.references import slsqp_simplex  # noqa: E402


def ours(pb, method, **opts):
    stamps = []
    t0 = time.perf_counter()
    r = solvers.minimize(pb, method, callback=lambda x: stamps.append((time.perf_counter() - t0, x.copy())), **opts)
    stamps.append((time.perf_counter() - t0, r.x.copy()))
    return {"x": r.x, "seconds": r.seconds, "n_iter": r.n_iter, "stamps": stamps}


def slsqp(pb):
    stamps = []
    t0 = time.perf_counter()
    r = slsqp_simplex(pb.value_and_grad, pb.dim, callback=lambda x: stamps.append((time.perf_counter() - t0, x.copy())))
    secs = time.perf_counter() - t0
    x = np.clip(r.x, 0, None)
    x /= x.sum()
    stamps.append((secs, x))
    return {"x": x, "seconds": secs, "n_iter": r.nit, "stamps": stamps}


def cvxpy_scs(pb):
    import cvxpy as cp

    w = cp.Variable(pb.dim)
    prob = cp.Problem(cp.Maximize(cp.sum(cp.log(pb.Q @ w)) / pb.n_terms), [w >= 0, cp.sum(w) == 1])
    t0 = time.perf_counter()
    prob.solve(solver=cp.SCS, eps=1e-9, max_iters=500_000)
    secs = time.perf_counter() - t0
    x = np.clip(w.value, 0, None)
    x /= x.sum()
    return {
        "x": x,
        "seconds": secs,
        "n_iter": prob.solver_stats.num_iters,
        "stamps": [(secs, x)],
        "status": prob.status,
    }


def table(pb, runs, title):
    def proj(x):
        x = np.clip(x, 0, None)
        return x / x.sum()

    fstar = min(min(pb.value(proj(x)) for _, x in r["stamps"]) for rs in runs.values() for r in rs)
    best = min(runs, key=lambda k: min(pb.value(proj(r["x"])) for r in runs[k]))
    xref = runs[best][0]["x"]
    print(f"\n## {title}\n\nf* = {fstar:.15f} (best of all runs); weights compared with the best run ({best})\n")
    print("| solver | time to 1e-8 (s, median) | total (s, median) | iterations | final rel. gap | max |w - w_best| |")
    print("|---|---|---|---|---|---|")
    for name, rs in runs.items():
        t8 = []
        for r in rs:
            hit = [t for t, x in r["stamps"] if (pb.value(proj(x)) - fstar) / abs(fstar) <= 1e-8]
            t8.append(hit[0] if hit else np.nan)
        gap = max((pb.value(proj(r["x"])) - fstar) / abs(fstar) for r in rs)
        dw = max(np.abs(proj(r["x"]) - xref).max() for r in rs)
        print(
            f"| {name} | {np.nanmedian(t8) if not np.all(np.isnan(t8)) else float('nan'):.3f} | "
            f"{np.median([r['seconds'] for r in rs]):.3f} | {rs[0]['n_iter']} | {gap:.1e} | {dw:.1e} |"
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--small", default="4000,20,10")
    ap.add_argument("--large", default="20000,269,64")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--skip-small", action="store_true")
    ap.add_argument("--plain-em-iter", type=int, default=3000, help="iteration cap of plain EM")
    args = ap.parse_args()
    print(
        f"# bench_linear_pool_fit {time.strftime('%Y-%m-%d %H:%M:%S')} OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    # warm-up (compile) outside the clock
    solvers.minimize(MixtureLikelihood(np.random.default_rng(0).random((50, 4))), "em")
    sizes = ([] if args.skip_small else [("cvxpy-sized", args.small, True)]) + (
        [] if args.skip_large else [("competition scale", args.large, False)]
    )
    for title, size, with_cvxpy in sizes:
        N, A, K = map(int, size.split(","))
        lp, y = make_competition_predictions(N, A, K, seed=1)
        pb = MixtureLikelihood.from_log_probs(lp, y)
        del lp
        runs = {
            "ours: em (SQUAREM)": [ours(pb, "em", tol=1e-10) for _ in range(args.reps)],
            "ours: em (plain, Eq. 2.4)": [
                ours(pb, "em", tol=1e-10, accelerate=False, max_iter=args.plain_em_iter) for _ in range(1)
            ],
            "ours: newton (working set)": [ours(pb, "newton", tol=1e-12) for _ in range(args.reps)],
            "ours: lbfgs (projected BFGS)": [ours(pb, "lbfgs", tol=1e-9) for _ in range(args.reps)],
            "scipy SLSQP (analytic grad)": [slsqp(pb) for _ in range(args.reps)],
        }
        if with_cvxpy:
            runs["cvxpy SCS eps=1e-9 (oracle)"] = [cvxpy_scs(pb)]
        table(pb, runs, f"{title}: {N} items x {A} agents x {K} classes")


if __name__ == "__main__":
    main()
