"""Ridge and L2-logistic regression at the Fig. 3.4 scale: AdaSPDC and non-uniform SPDC against Agora's own SAGA,
SDCA and ``auto``, and scikit-learn (``Ridge``/``LogisticRegression`` with sag, saga and a direct solver), same run.

Objective ``J(x) = (1/N) sum_i phi(a_i^T x) + (lam/2)|x|^2`` (squared or logistic loss), no intercept.
scikit-learn's ``Ridge(alpha)`` is this with ``alpha = lam N``, ``LogisticRegression(C)`` with ``C = 1/(lam N)``.
Target: ``J(x) - J* <= 1e-8`` with ``J*`` from Newton (``tol = 1e-13``; the closed form for ridge). Agora's
solvers stop through a callback that evaluates ``J`` once per pass (its cost included in their seconds);
each scikit-learn solver runs with tol = 1e-5, 1e-6, ... 1e-12 until its coefficients reach the target, and
the row times that tol (scikit-learn compiles nothing at run time: no warm-up). ``passes`` are effective passes (Agora) or scikit-learn's ``n_iter_``.

Data: ``zx``, the Zhang & Xiao generator of Fig. 3.4 (N = D = 1,000; for the logistic loss the labels are
``sign(a^T 1 + N(0, 1))``); ``w8a_like`` (N = 10,000, D = 300 binary features of density 4%,
``reproductions/_erm_curves.w8a_like``, scores plus N(0, 0.3^2) noise). lam in {1e-3, 1e-4}.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ridge_logistic.py``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402

import solvers  # noqa: E402
from reproductions._erm_curves import w8a_like  # noqa: E402
from solvers.problems.erm import ERM  # noqa: E402
from solvers.problems.linear_models import LinearModel  # noqa: E402
from solvers.prox import SquaredL2  # noqa: E402

EPS = 1e-8
OURS = {
    "adaspdc": ("erm", "adaspdc", {}),
    "spdc non-uniform": ("erm", "spdc", {"sampling": "nonuniform"}),
    "sdca": ("model", "sdca", {}),
    "saga": ("model", "saga", {}),
    "auto": ("model", "auto", {}),
}


def data(family: str, loss: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    if family == "zx":
        A = rng.normal(size=(1000, 1000)) / np.arange(1, 1001)
        b = A @ np.ones(1000) + rng.normal(size=1000)
    else:
        A, score = w8a_like(rng)
        b = score + 0.3 * rng.normal(size=len(A))
    return A, (np.where(b > 0, 1.0, -1.0) if loss == "logistic" else b)


def sklearn_fits(A, b, loss, lam):
    n = len(b)
    if loss == "squared":
        return {
            f"sklearn Ridge ({s})": (lambda tol, s=s: Ridge(alpha=lam * n, solver=s, fit_intercept=False, tol=tol))
            for s in ("sag", "saga", "cholesky")
        }
    return {
        f"sklearn LogisticRegression ({s})": (
            lambda tol, s=s: LogisticRegression(C=1 / (lam * n), solver=s, fit_intercept=False, tol=tol, max_iter=10**5)
        )
        for s in ("sag", "saga", "lbfgs")
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    for opt, default in {"families": "zx,w8a_like", "losses": "squared,logistic", "lams": "1e-3,1e-4"}.items():
        ap.add_argument(f"--{opt}", default=default)
    ap.add_argument("--max-passes", type=int, default=1000)
    args = ap.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"load: {os.getloadavg()}")
    print("| family | loss | lam | solver | seconds | passes | J - J* | ratio (to best sklearn) |")
    print("|---|---|---|---|---|---|---|---|")
    for family in args.families.split(","):
        for loss in args.losses.split(","):
            A, b = data(family, loss)
            for lam in (float(v) for v in args.lams.split(",")):
                erm, model = ERM(A, b, SquaredL2(lam), loss=loss), LinearModel(A, b, loss, l2=lam)
                f_star = float(erm.value(solvers.minimize(model, "newton", tol=1e-13).x))
                rows = []
                for name, make in sklearn_fits(A, b, loss, lam).items():
                    for tol in 10.0 ** -np.arange(5, 13):
                        t = time.perf_counter()
                        est = make(tol).fit(A, b)
                        sec = time.perf_counter() - t
                        sub = float(erm.value(np.ravel(est.coef_))) - f_star
                        if sub <= EPS or tol < 1e-11:
                            it = np.ravel([getattr(est, "n_iter_", 0) or 0])[0]
                            rows.append((f"{name} (tol {tol:g})", sec, f"{it}", sub))
                            break
                for name, (form, method, opts) in OURS.items():
                    pb = erm if form == "erm" else model

                    def hit(x, pb=pb):
                        return pb.value(x) - f_star <= EPS

                    run = {"tol": 0.0, "max_iter": args.max_passes, "callback": hit, **opts}
                    if method in ("auto",):
                        run = {"tol": 1e-12}
                    solvers.minimize(pb, method, **{**run, "max_iter": 2} if method != "auto" else run)  # warm-up
                    t = time.perf_counter()
                    r = solvers.minimize(pb, method, **run)
                    sec = time.perf_counter() - t
                    label = name if method != "auto" else f"auto ({r.method})"
                    rows.append((label, sec, f"{r.n_passes:.0f}", float(erm.value(r.x)) - f_star))
                best = min((s for n, s, _, sub in rows if n.startswith("sklearn") and sub <= EPS), default=np.nan)
                for name, sec, passes, sub in rows:
                    flag = "" if sub <= EPS else " (not reached)"
                    print(
                        f"| {family} | {loss} | {lam:g} | {name} | {sec:.3f} | {passes} | {sub:.1e}{flag} | {sec / best:.2f} |"
                    )
                print(f"<!-- load: {os.getloadavg()} -->")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
