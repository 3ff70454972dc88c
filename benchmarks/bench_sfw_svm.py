"""SFW / MSFW (solvers, seed 002 ch. IV) against scikit-learn's ``SVC`` (LibSVM SMO, wss2 + shrinking):
training seconds and test accuracy, same run, same RBF kernel and C, several data families and sizes.

Families: ``blobs`` (``make_classification``, 10 features, 2 % label noise), ``moons`` (two
interleaved half circles with Gaussian noise 0.25, 2 features plus 8 noise features), ``digits``-based
(the bundled digits, < 5 vs >= 5, replicated with small jitter to reach the size). Sizes n_train in
{2000, 5000, 10000}; n_test = 2000. Kernel RBF ``sigma = sqrt(d/2)`` (``gamma = 1/(2 sigma^2)`` for SVC),
C = 1 for both (L2-SVM for ours, L1-SVM for SVC). Ours is Python/NumPy (no kernel cache), LibSVM is C++
with a 200 MB kernel cache. Ratio = ours / SVC seconds (< 1: ours faster).

    python benchmarks/bench_sfw_svm.py [--sizes 2000 5000 10000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.datasets import load_digits, make_classification, make_moons
from sklearn.svm import SVC

from solvers.methods.frank_wolfe_svm import FrankWolfeSVC


def family(name: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "blobs":
        return make_classification(n, 10, n_informative=6, n_redundant=0, flip_y=0.02, random_state=seed)
    if name == "moons":
        X, y = make_moons(n, noise=0.25, random_state=seed)
        return np.hstack([X, rng.normal(size=(n, 8))]), y
    X, t = load_digits(return_X_y=True)
    i = rng.integers(0, X.shape[0], size=n)
    return X[i] + rng.normal(scale=0.5, size=(n, X.shape[1])), (t[i] >= 5).astype(int)


def bench(name: str, n: int, epochs: int) -> list[tuple]:
    X, y = family(name, n + 2000)
    mu, sd = X[:n].mean(0), X[:n].std(0) + 1e-9
    X = (X - mu) / sd
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    sigma = float(np.sqrt(X.shape[1] / 2))
    t = time.perf_counter()
    svc = SVC(C=1.0, gamma=1 / (2 * sigma**2), tol=1e-3).fit(Xtr, ytr)
    t_svc = time.perf_counter() - t
    acc_svc = float(np.mean(svc.predict(Xte) == yte))
    rows = []
    for method in ("sfw", "msfw"):
        t = time.perf_counter()
        m = FrankWolfeSVC(1.0, sigma, method=method, epochs=epochs).fit(Xtr, ytr)
        t_ours = time.perf_counter() - t
        acc = float(np.mean(m.predict(Xte) == yte))
        rows.append((name, n, f"{method} {epochs}ep", t_ours, t_svc, t_ours / t_svc, acc, acc_svc))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--families", nargs="+", default=["blobs", "moons", "digits"])
    ap.add_argument("--epochs", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    print("| family | n_train | ours | ours s | SVC s | ratio ours/SVC | ours acc % | SVC acc % |")
    print("|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for n in a.sizes:
            for ep in a.epochs:
                for r in bench(fam, n, ep):
                    print(
                        f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {100 * r[6]:.2f} | {100 * r[7]:.2f} |",
                        flush=True,
                    )
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
