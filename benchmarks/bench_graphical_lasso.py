"""Graphical lasso (seed 001 Eq 6.5): Agora's ADMM against scikit-learn's ``GraphicalLasso`` and gglasso, same run.

Objective (scikit-learn's and gglasso's): ``<C, Θ> - log det Θ + λ Σ_{i≠j} |Θ_ij|`` on a correlation
matrix ``C``. Target: the certified duality gap :func:`graphical.admm.duality_gap` ``<= 1e-4``,
re-evaluated at every solver's returned precision (dual candidates: ``Θ^{-1} - C`` and, where the
solver has one, its own dual iterate: scikit-learn's ``covariance_``). scikit-learn stops on its own
gap ``<= tol`` (the same quantity with ``Θ^{-1}`` as dual point, which its inner lasso tolerance
``enet_tol`` must keep feasible; both set to the ladder's value); gglasso's ADMM stops on Boyd's
residuals (``tol = 1e-2 x``, ``rtol = 1e-1 x`` the ladder's value).

Data families (the correlation of the samples):

- ``sparse``: ``sklearn.datasets.make_sparse_spd_matrix(p, alpha=0.95)`` precision, ``n = 2p`` samples;
- ``er``: an Erdős-Rényi graph with 2p edges (NetworkX ``gnm_random_graph``), ``ba``: a Barabási-Albert
  graph (m = 2), each with the diagonally dominant precision of seed 001 §7.5.1, ``n = 2p``;
- ``patches``: real data, 4000 random ``s x s`` patches of scikit-image's ``camera`` (s = 8, 14, 22, so
  p = 64, 196, 484 in place of 60, 200, 500);
- ``digits`` (scikit-learn's bundled 1797 x 64 digits, its 61 non-constant pixels) and ``breast_cancer``
  (569 x 30): real bundled sets at one size each.

Each peer runs at the loosest tolerance of the ladder ``tol x (1, 0.1, 0.01)`` (scikit-learn capped at 200 sweeps) whose result
reaches the target gap (the search is not timed; "target not reached" when none does); then it is
timed by wall clock around its call (its own gap evaluations included): ``--reps`` repetitions
interleaved across the solvers (the machine is shared), the median reported. The row
"sklearn, default tol" is scikit-learn at its defaults (``tol = enet_tol = 1e-4``) whatever gap that
reaches; the ratio in brackets is against it.
BLAS runs single-threaded for every solver (``OMP_NUM_THREADS=1``, the benchmark protocol).

Run: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_graphical_lasso.py``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.covariance import GraphicalLasso  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, make_sparse_spd_matrix  # noqa: E402

from graphical.admm import duality_gap  # noqa: E402
from graphical.generators import precision_from_graph, sample_correlation, scale_free_graph  # noqa: E402
from graphical.glasso import graphical_lasso  # noqa: E402
from graphical.penalties import WeightedL1  # noqa: E402

TARGET = 1e-4
SIZES = {
    "sparse": [60, 200, 500],
    "er": [60, 200, 500],
    "ba": [60, 200, 500],
    "patches": [64, 196, 484],
    "digits": [61],
    "breast_cancer": [30],
}
LAM = {"sparse": 0.15, "er": 0.1, "ba": 0.1, "patches": 0.1, "digits": 0.1, "breast_cancer": 0.1}


def correlation(family: str, p: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if family == "sparse":
        P = make_sparse_spd_matrix(p, alpha=0.95, random_state=seed)
        X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(P), size=2 * p)
    elif family in ("ba", "er"):
        if family == "ba":
            A = scale_free_graph("ba", p, rng)
        else:
            A = nx.to_numpy_array(nx.gnm_random_graph(p, 2 * p, seed=seed)) > 0
        return sample_correlation(precision_from_graph(A), 2 * p, rng)
    elif family == "digits":
        X = load_digits().data
        X = X[:, X.std(axis=0) > 0]
    elif family == "breast_cancer":
        X = load_breast_cancer().data
    else:
        from skimage.data import camera

        img = camera().astype(float)
        s = int(round(np.sqrt(p)))
        i = rng.integers(0, img.shape[0] - s, 4000)
        j = rng.integers(0, img.shape[1] - s, 4000)
        X = np.stack([img[a : a + s, b : b + s].ravel() for a, b in zip(i, j)])
    C = np.cov(X, rowvar=False, bias=True)
    d = np.sqrt(np.diag(C))
    return C / np.outer(d, d)


def run_ours(C, lam, f):
    r = graphical_lasso(C, lam, tol=TARGET * f, max_iter=5000)
    return r.x, r.extra["rho"] * r.extra["U"], f"{r.n_iter} it"


def run_sklearn(C, lam, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GraphicalLasso(alpha=lam, covariance="precomputed", tol=TARGET * f, enet_tol=TARGET * f, max_iter=200)
        m.fit(C)
    return m.precision_, m.covariance_ - C, f"{m.n_iter_} sweeps, tol {TARGET * f:.0e}"


def run_gglasso(C, lam, f):
    from gglasso.solver.single_admm_solver import ADMM_SGL

    sol, info = ADMM_SGL(C, lam, np.eye(C.shape[0]), tol=1e-2 * TARGET * f, rtol=1e-1 * TARGET * f, max_iter=5000)
    T = sol["Theta"] if np.all(np.linalg.eigvalsh(sol["Theta"]) > 0) else sol["Omega"]
    return T, None, f"tol {1e-2 * TARGET * f:.0e}"


def run_sklearn_default(C, lam, f):
    """scikit-learn at its own default tolerances (tol = enet_tol = 1e-4), whatever gap that reaches."""
    return run_sklearn(C, lam, 1.0)


SOLVERS = {
    "agora admm": run_ours,
    "sklearn GraphicalLasso": run_sklearn,
    "sklearn, default tol": run_sklearn_default,
    "gglasso ADMM_SGL": run_gglasso,
}
LADDER = (1.0, 0.1, 0.01)


def tolerance(name, C, lam, pen):
    """The peer's loosest tolerance of ``LADDER`` whose result reaches the target gap (ours: the first):
    ``(f, Θ, work, gap)``, or ``(None, message, nan)`` when the solver fails at every rung."""
    found, failures = None, 0
    for f in LADDER[: 1 if name in ("agora admm", "sklearn, default tol") else None]:
        try:
            Theta, Gamma, work = SOLVERS[name](C, lam, f)
        except (FloatingPointError, np.linalg.LinAlgError):
            failures += 1
            continue
        gap = duality_gap(C, Theta, pen, Gamma)
        found = (f, Theta, work, gap)
        if gap <= TARGET:
            break
    return found or (None, None, f"failed at every tol ({failures}x 'Non SPD result')", float("nan"))


def timed(names, C, lam, pen, reps):
    """Each solver at its tolerance (:func:`tolerance`), the repetitions interleaved (ours, the peers,
    ours, ...) so that a change of machine load hits all alike; the median seconds per solver."""
    found = {name: tolerance(name, C, lam, pen) for name in names}
    secs: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(reps):
        for name in names:
            if found[name][0] is not None:
                t0 = time.perf_counter()
                SOLVERS[name](C, lam, found[name][0])
                secs[name].append(time.perf_counter() - t0)
    rows = []
    for name in names:
        f, Theta, work, gap = found[name]
        edges = 0 if Theta is None else int(np.count_nonzero(np.triu(np.abs(Theta) > 1e-8, 1)))
        rows.append((name, float(np.median(secs[name])) if secs[name] else None, work, gap, edges))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--families", default="sparse,er,ba,patches,digits,breast_cancer")
    ap.add_argument("--max-p", type=int, default=500)
    ap.add_argument("--min-p", type=int, default=0)
    ap.add_argument("--no-gglasso", action="store_true")
    a = ap.parse_args(argv)
    names = [n for n in SOLVERS if not (a.no_gglasso and n.startswith("gglasso"))]
    if not a.no_gglasso:  # compile gglasso's numba kernels before any timing
        run_gglasso(correlation("sparse", 20), 0.1, 1.0)
    print(f"load (1, 5, 15 min): {os.getloadavg()}")
    print("| family | p | λ | solver | seconds | work | gap at Θ | edges | ratio (ours/sklearn) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for family in a.families.split(","):
        for p in SIZES[family]:
            if not a.min_p <= p <= a.max_p:
                continue
            C, lam = correlation(family, p), LAM[family]
            pen = WeightedL1.uniform(lam, C.shape[0])
            rows = timed(names, C, lam, pen, a.reps)
            ours, sk, sk0 = rows[0][1], rows[1][1], rows[2][1]
            for name, sec, work, gap, edges in rows:
                mark = "" if gap <= TARGET else " (target not reached)"
                ratio = f"{ours / sk:.2f}" if name == "agora admm" and sk else ""
                ratio += f" ({ours / sk0:.2f} vs default tol)" if name == "agora admm" and sk0 else ""
                secs = f"{sec:.3f}" if sec is not None else "-"
                print(
                    f"| {family} | {C.shape[0]} | {lam} | {name} | {secs} | {work} | {gap:.2e}{mark} | {edges} | {ratio} |"
                )
            sys.stdout.flush()
    print(f"load (1, 5, 15 min): {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
