"""Lasso: Agora's primal-dual / splitting solvers against scikit-learn's ``Lasso`` (coordinate descent), same run.

Objective (scikit-learn's): ``(1/(2N)) |A x - b|^2 + alpha |x|_1`` = ``ERM(A, b, L1(alpha), mean=True)``.
Target: duality gap ``<= 1e-6`` (absolute, our gap :meth:`solvers.problems.erm.ERM.duality_gap`, which
every row re-evaluates at the returned x: a row whose gap there exceeds the target is marked). scikit-learn
stops on its own gap ``<= tol |b|^2`` in the units ``N *`` ours, so it runs with ``tol = 1e-6 N / |b|^2``.

Data families (seed 000 notes section 3.3, Table 3.4 and a benchopt-style correlated design):

- ``boyd``: ``A_ij ~ N(0,1)``, columns normalised to unit norm, ``x_true`` with d nonzeros ~ N(0,1),
  ``b = A x_true + N(0, 1e-3)``, ``lambda = 0.1 |A^T b|_inf`` for ``(1/2)|Ax - b|^2 + lambda |x|_1``, so
  ``alpha = lambda / N``;
- ``corr``: rows ~ N(0, Toeplitz(rho^|i-j|)), rho = 0.6, same x_true and noise, ``alpha = 0.1 alpha_max``.

Sizes (N, D, d): (500, 2000, 50) and the first Table 3.4 size (1000, 5000, 100); ``--large`` adds the
second, (5000, 20000, 500) (an 800 MB dense matrix). Each solver is timed by wall clock around
``solvers.minimize`` (gap evaluations included, as scikit-learn's are), median of ``--reps``.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lasso.py --reps 3``
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from sklearn.linear_model import Lasso  # noqa: E402

import solvers  # noqa: E402
from benchmarks.harness import timed  # noqa: E402
from solvers.problems.erm import ERM  # noqa: E402
from solvers.prox import L1  # noqa: E402

TARGET = 1e-6


def generate(family: str, n: int, d: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    if family == "boyd":
        A = rng.normal(size=(n, d))
        A /= np.linalg.norm(A, axis=0)
    else:
        rho = 0.6
        # AR(1) columns: Toeplitz(rho^|i-j|) covariance without forming it
        A = np.empty((n, d))
        A[:, 0] = rng.normal(size=n)
        for j in range(1, d):
            A[:, j] = rho * A[:, j - 1] + np.sqrt(1 - rho**2) * rng.normal(size=n)
    x = np.zeros(d)
    x[rng.choice(d, k, replace=False)] = rng.normal(size=k)
    b = A @ x + np.sqrt(1e-3) * rng.normal(size=n)
    alpha = 0.1 * float(np.abs(A.T @ b).max()) / n
    return np.asfortranarray(A), b, alpha


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--methods", default="fista,admm,spbcd,pdcp,ista")
    args = ap.parse_args()
    sizes = [(500, 2000, 50), (1000, 5000, 100)] + ([(5000, 20000, 500)] if args.large else [])
    print(f"load: {os.getloadavg()}")
    print("| family | N, D, d | solver | seconds | passes | gap at x | sklearn s | ratio (ours/sklearn) |")
    print("|---|---|---|---|---|---|---|---|")
    for family in ("boyd", "corr"):
        for n, d, k in sizes:
            A, b, alpha = generate(family, n, d, k)
            pb = ERM(A, b, L1(alpha))
            _ = pb.L  # |A|_2 by power iteration: part of the problem set-up, outside every timing
            sk_tol = TARGET * n / float(b @ b)

            def run_sklearn():
                return Lasso(alpha=alpha, fit_intercept=False, tol=sk_tol, max_iter=100000, selection="cyclic").fit(
                    A, b
                )

            t_sk, est = timed(run_sklearn, args.reps)
            gap_sk = pb.duality_gap(est.coef_)
            print(
                f"| {family} | {n}, {d}, {k} | sklearn Lasso (cd) | {t_sk:.3f} | {est.n_iter_} epochs | {gap_sk:.2e} | {t_sk:.3f} | 1.00 |"
            )
            for method in args.methods.split(","):
                opts = {"tol": TARGET, "max_iter": 3000}
                if method == "spbcd":
                    opts.update(m=100, max_iter=300)
                if method == "admm":
                    opts.update(rho=float(alpha) * 10)
                t, r = timed(lambda method=method, opts=opts: solvers.minimize(pb, method, **opts), args.reps)
                gap = pb.duality_gap(r.x)
                flag = "" if gap <= TARGET * (1 + 1e-9) else " (target not reached)"
                print(
                    f"| {family} | {n}, {d}, {k} | {method} | {t:.3f} | {r.n_passes:.0f} | {gap:.2e}{flag} | {t_sk:.3f} | {t / t_sk:.2f} |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
