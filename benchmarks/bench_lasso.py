"""Lasso to a 1e-6 duality gap: Agora (``coordinate_descent``, ``auto``, optionally the splitting solvers) against
scikit-learn's ``Lasso`` (coordinate descent), celer and skglm, same run.

Objective (scikit-learn's): ``(1/(2N)) |A x - b|^2 + alpha |x|_1`` = ``ERM(A, b, L1(alpha), mean=True)``.
Target: duality gap ``<= 1e-6`` (absolute), judged for every row by our gap
(:meth:`solvers.problems.erm.ERM.duality_gap`) re-evaluated at the returned x; a row above it is marked.
scikit-learn stops on its own gap ``<= tol |b|^2`` in the units ``N *`` ours and celer on ``<= tol |b|^2 / N``
in ours, so both run with ``tol = 1e-6 N / |b|^2``. skglm stops on the optimality violation, not a gap: it
runs with tol = 1e-6, 1e-7, ... until its x reaches the target, and the row times that tol (its tol shown).

Data families (seed 000 notes s.3.3, Table 3.4; a benchopt-style correlated design; a real bundled set):

- ``boyd``: ``A_ij ~ N(0,1)``, columns normalised to unit norm, ``x_true`` with d nonzeros ~ N(0,1),
  ``b = A x_true + N(0, 1e-3)``, ``lambda = 0.1 |A^T b|_inf`` for ``(1/2)|Ax - b|^2 + lambda |x|_1``, so
  ``alpha = lambda / N``;
- ``corr``: rows ~ N(0, Toeplitz(rho^|i-j|)), rho = 0.6, same x_true and noise, ``alpha = 0.1 alpha_max``;
- ``digits2``: scikit-learn's bundled digits (1,797 images, 64 pixels / 16), all degree-2 pixel products
  (2,144 correlated columns, standardised), target the digit, ``alpha = 0.05 alpha_max`` (``alpha_max =
  |A^T b|_inf / N``, where x = 0 becomes optimal).

Sizes (N, D, d): (500, 2000, 50), (1000, 5000, 100) and (5000, 20000, 500) (the two Table 3.4 sizes and a
smaller one; ``--sizes`` picks). Each solver is timed by wall clock around the call (gap evaluations included,
as the peers' are), median of ``--reps``, after one untimed warm-up of every solver (numba compilation).

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
SIZES = {"small": (500, 2000, 50), "t34a": (1000, 5000, 100), "t34b": (5000, 20000, 500)}


def generate(family: str, n: int, d: int, k: int, seed: int = 0):
    """``(A, b, alpha)`` of one family (see the module docstring); ``A`` in Fortran order."""
    rng = np.random.default_rng(seed)
    if family == "digits2":
        from sklearn.datasets import load_digits
        from sklearn.preprocessing import PolynomialFeatures

        X, y = load_digits(return_X_y=True)
        A = PolynomialFeatures(2, include_bias=False).fit_transform(X / 16.0)
        A = A[:, A.std(axis=0) > 0]
        A = (A - A.mean(axis=0)) / A.std(axis=0)
        b = y - y.mean()
        return np.asfortranarray(A), b, 0.05 * float(np.abs(A.T @ b).max()) / len(b)
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


def peers(A, b, alpha):
    """The peers as ``name -> (fit() -> coef, note)``; celer and skglm only when installed."""
    n = len(b)
    tol = TARGET * n / float(b @ b)
    out = {"sklearn Lasso (cd)": lambda: Lasso(alpha=alpha, fit_intercept=False, tol=tol, max_iter=100000).fit(A, b)}
    try:
        import celer

        out["celer"] = lambda: celer.Lasso(alpha=alpha, fit_intercept=False, tol=tol, max_iter=1000).fit(A, b)
    except ImportError:
        pass
    try:
        import skglm

        for t in (1e-6, 1e-7, 1e-8, 1e-9, 1e-10):
            out[f"skglm (tol {t:g})"] = lambda t=t: skglm.Lasso(alpha=alpha, fit_intercept=False, tol=t).fit(A, b)
    except ImportError:
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--families", default="boyd,corr,digits2")
    ap.add_argument("--sizes", default="small,t34a,t34b")
    ap.add_argument("--methods", default="coordinate_descent,auto")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()}")
    print("| family | N, D, d | solver | seconds | passes | gap at x | sklearn s | ratio (to sklearn) |")
    print("|---|---|---|---|---|---|---|---|")
    for family in args.families.split(","):
        shapes = [SIZES[s] for s in args.sizes.split(",")] if family != "digits2" else [(0, 0, 0)]
        for n, d, k in shapes:
            A, b, alpha = generate(family, n, d, k)
            n, d = A.shape
            pb = ERM(A, b, L1(alpha))
            shape = f"{n}, {d}, {k or '-'}"
            t_sk = None
            skglm_done = False
            for name, fit in peers(A, b, alpha).items():
                if name.startswith("skglm") and skglm_done:
                    continue
                fit()  # warm-up (numba compilation of celer/skglm)
                t, est = timed(fit, args.reps)
                gap = pb.duality_gap(np.asarray(est.coef_, dtype=float))
                reached = gap <= TARGET * (1 + 1e-9)
                if name.startswith("skglm"):
                    if not reached and "1e-10" not in name:
                        continue
                    skglm_done = True
                t_sk = t if t_sk is None else t_sk
                flag = "" if reached else " (target not reached)"
                epochs = getattr(est, "n_iter_", "")
                print(
                    f"| {family} | {shape} | {name} | {t:.3f} | {epochs} | {gap:.2e}{flag} | {t_sk:.3f} | {t / t_sk:.2f} |"
                )
            for method in args.methods.split(","):
                opts = {"tol": TARGET}
                solvers.minimize(pb, method, **opts)  # warm-up
                t, r = timed(lambda method=method, opts=opts: solvers.minimize(pb, method, **opts), args.reps)
                gap = pb.duality_gap(r.x)
                flag = "" if gap <= TARGET * (1 + 1e-9) else " (target not reached)"
                label = method if method != "auto" else f"auto ({r.method})"
                print(
                    f"| {family} | {shape} | {label} | {t:.3f} | {r.n_passes:.1f} | {gap:.2e}{flag} | {t_sk:.3f} | {t / t_sk:.2f} |"
                )
            print(f"<!-- load after {family} {shape}: {os.getloadavg()} -->")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
