"""SFW / MSFW (solvers, seed 002 ch. IV) against scikit-learn's ``SVC`` (LibSVM SMO, wss2 + shrinking):
training seconds and test accuracy, same run, same RBF kernel and C, several data families and sizes.

Families: ``blobs`` (``make_classification``, 10 features, 2 % label noise), ``moons`` (two
interleaved half circles with Gaussian noise 0.25, 2 features plus 8 noise features), ``digits``-based
(the bundled digits, < 5 vs >= 5, replicated with small jitter to reach the size). Sizes n_train in
{2000, 5000, 10000}; n_test = 2000. Kernel RBF ``sigma = sqrt(d/2)`` (``gamma = 1/(2 sigma^2)`` for SVC),
C = 1 for both (L2-SVM for ours, L1-SVM for SVC). Ours is Python/NumPy (no kernel cache), LibSVM is C++
with a 200 MB kernel cache. Ratio = ours / SVC seconds (< 1: ours faster). ``--reps`` interleaved rounds
(SVC, then each of ours, per round; the machine is shared), medians of the seconds.

    python benchmarks/bench_sfw_svm.py [--sizes 2000 5000 10000] [--reps 3]
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


def _timed(fit) -> tuple[float, object]:
    t = time.perf_counter()
    m = fit()
    return time.perf_counter() - t, m


def bench(name: str, n: int, epochs: list[int], reps: int) -> list[tuple]:
    """``reps`` rounds, each SVC then every (method, epochs) of ours, interleaved; medians of the seconds
    (the fits are deterministic: accuracy from the last round)."""
    X, y = family(name, n + 2000)
    mu, sd = X[:n].mean(0), X[:n].std(0) + 1e-9
    X = (X - mu) / sd
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    sigma = float(np.sqrt(X.shape[1] / 2))
    ours = [(method, ep) for ep in epochs for method in ("sfw", "msfw")]
    secs: dict = {k: [] for k in ["svc", *ours]}
    models: dict = {}
    for _ in range(reps):
        secs["svc"].append((t := _timed(lambda: SVC(C=1.0, gamma=1 / (2 * sigma**2), tol=1e-3).fit(Xtr, ytr)))[0])
        models["svc"] = t[1]
        for method, ep in ours:
            t = _timed(lambda method=method, ep=ep: FrankWolfeSVC(1.0, sigma, method=method, epochs=ep).fit(Xtr, ytr))
            secs[(method, ep)].append(t[0])
            models[(method, ep)] = t[1]
    t_svc = float(np.median(secs["svc"]))
    acc_svc = float(np.mean(models["svc"].predict(Xte) == yte))
    load = os.getloadavg()[0]
    rows = []
    for method, ep in ours:
        t_ours = float(np.median(secs[(method, ep)]))
        acc = float(np.mean(models[(method, ep)].predict(Xte) == yte))
        rows.append((name, n, f"{method} {ep}ep", t_ours, t_svc, t_ours / t_svc, acc, acc_svc, load))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--families", nargs="+", default=["blobs", "moons", "digits"])
    ap.add_argument("--epochs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3, help="interleaved rounds; the table gives medians")
    a = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    print("| family | n_train | ours | ours s | SVC s | ratio ours/SVC | ours acc % | SVC acc % | load (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for n in a.sizes:
            for r in bench(fam, n, a.epochs, a.reps):
                print(
                    f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {100 * r[6]:.2f} "
                    f"| {100 * r[7]:.2f} | {r[8]:.1f} |",
                    flush=True,
                )
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
