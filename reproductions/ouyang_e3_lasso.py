"""E3 of seed 002 (Ouyang ch. III, L1387-1412, Figs 18-19): lasso by stochastic ADMM against FOBOS and online ADMM.

The seed's sets (Abalone, UCI; E2006-tf-idf, 16,087 x 150,360) are not reachable offline. Stand-ins:

* ``diabetes``: scikit-learn's bundled set (442 x 10), features and target standardised, 80/20 split
  (Abalone's shape: a few thousand rows, d = 8); the seed's Table 2 setting for Abalone, ``gamma = 0.01``;
  twice: z-scored features (``|a_i|^2 ~ 10``) and the same divided by the largest row norm (``|a_i| <= 1``,
  as in LIBSVM's scaled sets, which the seed's step ``eta_k = 1/sqrt k`` presumes).
* ``tfidf-like``: generated (``tfidf_like``): 4,000 + 1,000 rows, d = 1,000, 25 nonzeros a row drawn
  log-normal and each row scaled to unit norm (as tf-idf rows are), a target linear in 50 features
  plus noise, stored sparse (CSR); ``gamma = 0.1 |A^T b|_inf / N`` (the seed's 0.1 is on its own data's scale).

Both: ``beta = 1`` and ``eta_k = 1/sqrt k`` (Table 2's ``D_X/(M sqrt 2) = 1``: ``schedule="convex"``),
the lasso ``(1/(2N)) |A x - b|^2 + gamma |x|_1`` as :class:`~solvers.problems.erm.ERM`, the ergodic
output of each method. A point of a curve is ``k`` i.i.d. draws from the training set: the solvers run
one cyclic epoch over ``k`` rows drawn with replacement (the same ``k`` draws for the three methods),
so the curves resolve fractions of an epoch (up to 10 epochs on diabetes, 4 on the tf-idf-like set).
Metrics: test mean squared error (the seed's unnamed "prediction results") and the training
objective's distance to ``J*`` (FISTA to a 1e-12 gap). Mean over 10 draw sequences (diabetes) or 5
(tf-idf-like).

Usage::

    python reproductions/ouyang_e3_lasso.py [--quick]

Writes ``reproductions/ouyang_e3.md`` (``_quick``) and ``reproductions/figures/ouyang_e3*.png``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_diabetes

import solvers
from solvers.problems.erm import ERM
from solvers.prox import L1

HERE = Path(__file__).resolve().parent
METHODS = ("stochastic_admm", "fobos", "online_admm")


def tfidf_like(n: int = 5000, d: int = 1000, nnz: int = 25, support: int = 50, seed: int = 0):
    """Sparse non-negative rows of unit norm (tf-idf-like) and ``b = A x_true + noise``."""
    rng = np.random.default_rng(seed)
    A = np.zeros((n, d))
    for i in range(n):
        A[i, rng.choice(d, nnz, replace=False)] = rng.lognormal(0.0, 1.0, nnz)
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    x_true = np.zeros(d)
    x_true[rng.choice(d, support, replace=False)] = rng.normal(0.0, 3.0, support)
    return sp.csr_matrix(A), A @ x_true + 0.3 * rng.normal(size=n)


def datasets(quick: bool = False) -> dict[str, tuple]:
    """name -> (A_train, b_train, A_test, b_test, gamma)."""
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    perm = np.random.default_rng(0).permutation(len(y))
    ntr = int(0.8 * len(y))
    tr, te = perm[:ntr], perm[ntr:]
    out = {"diabetes z-scored": (X[tr], y[tr], X[te], y[te], 0.01)}
    Xs = X / np.linalg.norm(X[tr], axis=1).max()  # rows of norm <= 1 (LIBSVM's scaled sets are bounded)
    out["diabetes |a_i| <= 1"] = (Xs[tr], y[tr], Xs[te], y[te], 0.01)
    n = 1500 if quick else 5000
    A, b = tfidf_like(n=n, d=500 if quick else 1000)
    ntr = int(0.8 * n)
    gamma = 0.1 * float(np.abs(A[:ntr].T @ b[:ntr]).max()) / ntr  # 0.1 lambda_max
    out["tfidf-like"] = (A[:ntr], b[:ntr], A[ntr:], b[ntr:], gamma)
    return out


def curves(data: tuple, ks: list[int], seeds: int) -> dict:
    """``{method: {"mse": (seeds, len(ks)), "gap": (seeds, len(ks))}}`` and ``J*``."""
    A, b, At, bt, gamma = data
    full = ERM(A, b, L1(gamma))
    opt = solvers.minimize(full, "fista", tol=1e-12, max_iter=100000)
    J = opt.fun
    out = {m: {"mse": np.zeros((seeds, len(ks))), "gap": np.zeros((seeds, len(ks)))} for m in METHODS}
    for s in range(seeds):
        rng = np.random.default_rng(1000 + s)
        for j, k in enumerate(ks):
            idx = rng.integers(0, len(b), size=k)  # k i.i.d. draws from the training set
            sub = ERM(A[idx], b[idx], L1(gamma))
            for m in METHODS:
                r = solvers.minimize(sub, m, max_iter=1, order="cyclic", schedule="convex", eta0=1.0, beta=1.0)
                out[m]["mse"][s, j] = float(np.mean((At @ r.x - bt) ** 2))
                out[m]["gap"][s, j] = full.value(r.x) - J
    mse_opt = float(np.mean((At @ opt.x - bt) ** 2))
    return {"J": J, "mse_opt": mse_opt, "curves": out, "ks": ks, "n_train": len(b)}


def schedule_rates(data: tuple, epochs: int, seeds: int) -> dict:
    """``{(method, schedule): (final J - J*, log-log slope over epochs 2..)}`` on the whole training set
    (uniform draws), the three step rules of Thms 7-9 with ``eta0 = 1`` (means over ``seeds``)."""
    A, b, _, _, gamma = data
    pb = ERM(A, b, L1(gamma))
    J = solvers.minimize(pb, "fista", tol=1e-12, max_iter=100000).fun
    out: dict = {}
    for m in METHODS:
        for sched in ("convex", "strong", "smooth"):
            runs = [solvers.minimize(pb, m, schedule=sched, max_iter=epochs, seed=s) for s in range(seeds)]
            if any(not np.isfinite(r.trace.objective[-1]) or len(r.trace) < epochs + 1 for r in runs):
                out[(m, sched)] = (float("inf"), float("nan"))  # diverged (overflow): stopped early
                continue
            sub = np.mean([r.trace.objective for r in runs], 0) - J
            t = np.arange(len(sub))
            sel = t >= 2
            out[(m, sched)] = (float(sub[-1]), float(np.polyfit(np.log(t[sel]), np.log(sub[sel]), 1)[0]))
    return out


def run(quick: bool = False, seeds: int | None = None) -> dict:
    res = {}
    for name, data in datasets(quick).items():
        n = len(data[1])
        big = n > 1000
        top = n * (4 if quick or big else 10)
        ks = sorted({int(k) for k in np.geomspace(max(10, n // 40), top, 9 if quick else 13)})
        s = seeds or (3 if quick else 5 if big else 10)
        res[name] = curves(data, ks, s)
        res[name]["seeds"] = s
        if name == "diabetes |a_i| <= 1":
            res[name]["schedules"] = schedule_rates(data, 8 if quick else 40, 2 if quick else 5)
    return res


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, len(res), figsize=(6 * len(res), 8))
    for c, (name, r) in enumerate(res.items()):
        ks = np.asarray(r["ks"]) / r["n_train"]
        for m in METHODS:
            ax[0, c].loglog(ks, r["curves"][m]["mse"].mean(0), "o-", label=m, ms=3)
            ax[1, c].loglog(ks, np.maximum(r["curves"][m]["gap"].mean(0), 1e-16), "o-", label=m, ms=3)
        ax[0, c].axhline(r["mse_opt"], color="grey", lw=0.8, label="lasso optimum")
        ax[0, c].set(title=f"{name}: test MSE", xlabel="samples / training-set size")
        ax[1, c].set(title=f"{name}: J(x_bar) - J*", xlabel="samples / training-set size")
        ax[0, c].legend(fontsize=8)
    fig.suptitle("Seed 002 E3: lasso, stochastic ADMM vs FOBOS vs online ADMM (eta_k = 1/sqrt k, beta = 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _row(r: dict, j: int) -> str:
    k = r["ks"][j]
    cells = [f"{r['curves'][m]['mse'][:, j].mean():.4g}" for m in METHODS]
    cells += [f"{r['curves'][m]['gap'][:, j].mean():.2e}" for m in METHODS]
    return f"| {k} | {k / r['n_train']:.3f} | " + " | ".join(cells) + " |"


def write(res: dict, path: Path, fig: Path, quick: bool, load: str, seconds: float) -> None:
    cmd = f"python reproductions/ouyang_e3_lasso.py{' --quick' if quick else ''}"
    head = [f"{m} test MSE" for m in METHODS] + [f"{m} J - J*" for m in METHODS]
    lines = ["# Seed 002 E3: lasso by stochastic ADMM, FOBOS and online ADMM", ""]
    lines.append(f"`{cmd}`; load (`uptime`) {load}; {seconds:.0f} s in all; means over the seeds given per set.")
    for name, r in res.items():
        lines.append("")
        lines.append(
            f"## {name} (N_train = {r['n_train']}, J* = {r['J']:.8g}, lasso optimum's test MSE {r['mse_opt']:.4g}, "
            f"{r['seeds']} seeds)"
        )
        lines += ["", "| samples | samples / N | " + " | ".join(head) + " |", "|---" * (2 + len(head)) + "|"]
        lines += [_row(r, j) for j in range(len(r["ks"]))]
        if "schedules" in r:
            lines += [
                "",
                "The three step rules (Thms 7-9, `eta0 = 1`; `mu = lambda_min(A^T A)/N` for Thm 8) on the whole",
            ]
            lines += ["training set: `J - J*` after the last epoch and the log-log slope over epochs >= 2.", ""]
            lines += ["| method | convex (Thm 7) | strong (Thm 8) | smooth (Thm 9) |", "|---|---|---|---|"]
            for m in METHODS:
                cells = [
                    f"{r['schedules'][(m, k)][0]:.2e} (slope {r['schedules'][(m, k)][1]:.2f})"
                    for k in ("convex", "strong", "smooth")
                ]
                lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += ["", f"![E3 curves]({fig.relative_to(HERE)})", ""]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    suffix = "_quick" if args.quick else ""
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    t0 = time.perf_counter()
    res = run(args.quick)
    fig = HERE / "figures" / f"ouyang_e3{suffix}.png"
    fig.parent.mkdir(exist_ok=True)
    plot(res, fig)
    write(res, HERE / f"ouyang_e3{suffix}.md", fig, args.quick, load, time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
