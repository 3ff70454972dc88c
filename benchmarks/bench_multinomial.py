"""Multinomial (softmax) logistic regression: our compiled SAGA / SVRG / auto against the peers.

Problems (no intercept, l2 = 1/n, i.e. scikit-learn C = 1; optional l2 = 100/n):

- ``digits``: scikit-learn's bundled digits, 1797 x 64, K = 10, standardised;
- ``gen``: ``make_classification(n=20000, d=100, n_classes=10, n_informative=50)``, standardised;
- ``sparse``: CSR 20000 x 20000, 50 nonzeros per unit-norm row, K = 10 (reference: sklearn ``lbfgs``
  at tol 1e-15; no ``newton-cholesky``, whose (dK)^2 Hessian does not fit).

Ours (``off_clock=True``: the per-epoch objective/stopping test is kept off the clock; the time to a
target is read from the trace): ``saga``, ``svrg``, ``sag``, ``finito`` and ``auto``. Peers:
scikit-learn ``LogisticRegression`` (multinomial) ``saga``, ``sag``, ``lbfgs``, ``newton-cholesky``
and scipy L-BFGS-B on our NumPy ``value_and_grad``; a peer's time to a target is the time of a whole
fit at the smallest ``max_iter`` of a grid that reaches it (found by one sweep, re-timed every round).

f* is the best value reached by anything, starting from scikit-learn ``newton-cholesky`` at tol 1e-15.
Rounds are paired: in each round every solver runs once, back to back in a fixed order, and the ratio
ours / peer is taken within the round; the table shows medians over rounds. Compile (or numba cache
load) time is measured apart on a tiny problem. ``--speedup`` times one epoch of the compiled path
against the generic Python path (the same problem with ``multinomial_terms`` hidden).

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache \\
        .venv/bin/python benchmarks/bench_multinomial.py [--reps 5] [--only digits,gen] [--c-scale 100] [--l1 1e-3] [--speedup]

``--l1``: the composite problem; ours ``saga``, ``svrg`` and ``auto`` against scikit-learn's elastic-net
``saga`` (``C = 1/((l1 + l2) n)``, ``l1_ratio = l1/(l1 + l2)``), f* from our FISTA at tol 1e-12.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_incremental import TARGETS, times_to_targets  # noqa: E402

import solvers  # noqa: E402
from solvers.problems.softmax_regression import MultinomialLogistic  # noqa: E402

ITER_GRID = [1, 2, 3, 5, 8, 12, 18, 27, 40, 60, 90, 135, 200, 300, 450, 700, 1000]
OURS = ("saga", "svrg", "sag", "finito", "lbfgs", "auto")


class GenericMultinomial(MultinomialLogistic):
    multinomial_terms = None  # hides the compiled path: the drivers use term_grad in Python


def make_problem(name, c_scale=1.0, l1=0.0):
    from sklearn.preprocessing import StandardScaler

    if name == "sparse":
        # CSR n = 20000 x d = 20000, 50 nonzeros per unit-norm row, K = 10 (labels from a sparse W + Gumbel noise)
        import scipy.sparse as sp

        rng = np.random.default_rng(0)
        n, d, nnz, K = 20000, 20000, 50, 10
        cols = np.concatenate([rng.choice(d, nnz, replace=False) for _ in range(n)]).astype(np.int32)
        X = sp.csr_matrix((rng.normal(size=n * nnz), cols, np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
        X = sp.csr_matrix(sp.diags(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())) @ X)
        Wt = rng.normal(size=(d, K)) * (rng.random((d, 1)) < 0.1) * 3.0
        y = np.argmax(X @ Wt + rng.gumbel(size=(n, K)), axis=1)
        return MultinomialLogistic(X, y, l2=c_scale / n, l1=l1)
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
    else:
        from sklearn.datasets import make_classification

        X, y = make_classification(20000, 100, n_informative=50, n_classes=10, n_clusters_per_class=1, random_state=0)
    X = StandardScaler().fit_transform(X)
    n = X.shape[0]
    return MultinomialLogistic(X, y, l2=c_scale / n, l1=l1)


def compile_time():
    import scipy.sparse as sp

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = rng.integers(0, 3, 30)
    for A in (X, sp.csr_matrix(X)):
        for l1 in (0.0, 0.01):
            p = MultinomialLogistic(A, y, l2=0.1, l1=l1)
            for m in ("saga", "sag", "svrg", "s2gd", "sgd") + (("finito", "miso") if l1 == 0 else ()):
                solvers.minimize(p, m, max_iter=1, tol=0.0)
    return time.perf_counter() - t0


# the first time each target of TARGETS is reached (the same targets as bench_incremental.py)
first_times = times_to_targets


def run_ours(p, method, fref, seed):
    """One run; (seconds, objective) pairs from its trace (stochastic methods: evaluation off the clock;
    quasi-Newton / Newton: the evaluations are part of the method and stay on the clock)."""
    import inspect

    name = solvers.choose(p) if method == "auto" else method
    params = inspect.signature(solvers.registry.info(name).fn).parameters
    opts = {
        "seed": seed,
        "off_clock": True,
        "tol": 0.0,
        "max_iter": 400,
        "callback": lambda x: (p.value(x) - fref) / abs(fref) <= 1e-10,
    }
    if "off_clock" not in params:
        # no off-clock mode (quasi-Newton, Newton): no callback either, since its objective
        # evaluation would be charged to the solver; run to a tight tolerance and read the trace
        opts.update(tol=1e-13, max_iter=2000)
        del opts["callback"]
    opts = {k: v for k, v in opts.items() if k in params}
    r = solvers.minimize(p, name, **opts)
    return list(zip(r.trace.seconds, r.trace.objective)), name


def peers(p):
    import scipy.optimize as so
    from sklearn.linear_model import LogisticRegression

    C = 1.0 / (p.l2 * p.n_terms)
    X, y = p.A, p.labels

    def sk(solver):
        def fit(it):
            c = LogisticRegression(C=C, fit_intercept=False, solver=solver, tol=1e-15, max_iter=it).fit(X, y)
            return c.coef_.T.ravel()

        return fit

    if p.l1 > 0:
        # elastic net: C sum loss + (1-r)/2 |W|^2 + r |W|_1 with 1/(C n) = l1 + l2, r = l1/(l1 + l2)
        Ce, r = 1.0 / ((p.l1 + p.l2) * p.n_terms), p.l1 / (p.l1 + p.l2)

        def sk_en(it):
            c = LogisticRegression(C=Ce, l1_ratio=r, fit_intercept=False, solver="saga", tol=1e-15, max_iter=it).fit(
                X, y
            )
            return c.coef_.T.ravel()

        return {"sklearn saga (elastic net)": sk_en}
    out = {f"sklearn {s}": sk(s) for s in ("saga", "sag", "lbfgs") + (("newton-cholesky",) if not p.sparse else ())}

    def lbfgsb(it):
        return so.minimize(
            p.value_and_grad,
            np.zeros(p.dim),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": it, "gtol": 0, "ftol": 0, "maxfun": 10 * it + 20},
        ).x

    out["scipy L-BFGS-B"] = lbfgsb
    return out


def sweep(fit, p, fref, budget=60.0):
    """(max_iter, value) pairs along ITER_GRID until 1e-10 below fref or the budget is spent."""
    pts = []
    spent = 0.0
    for it in ITER_GRID:
        t0 = time.perf_counter()
        x = fit(it)
        spent += time.perf_counter() - t0
        v = p.value(x)
        pts.append((it, v))
        if (v - fref) / abs(fref) <= 1e-10 or spent > budget:
            break
    return pts


def run_problem(label, p, reps):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", UserWarning)
    warnings.simplefilter("ignore", FutureWarning)
    n = p.n_terms
    C = 1.0 / (p.l2 * n)
    print(
        f"\n## {label}: n={n}, d={p.d}, K={p.K}, l2={p.l2:.3g} (sklearn C={C:g}), l1={p.l1:g}; auto -> {solvers.choose(p)}"
    )
    t0 = time.perf_counter()
    if p.l1 > 0:  # no Newton peer with an l1 term: our FISTA to a tight gradient-mapping norm
        fref = solvers.minimize(p, "nesterov", tol=1e-12, max_iter=20000).fun
        print(
            f"reference (ours) nesterov/FISTA tol 1e-12: f = {fref:.15g} ({time.perf_counter() - t0:.2f} s)", flush=True
        )
    else:
        ref = "lbfgs" if p.sparse else "newton-cholesky"  # (dK)^2 Hessian: not for d = 2e4
        xr = (
            LogisticRegression(C=C, fit_intercept=False, solver=ref, tol=1e-15, max_iter=10000)
            .fit(p.A, p.labels)
            .coef_.T.ravel()
        )
        fref = p.value(xr)
        print(f"reference sklearn {ref} tol 1e-15: f = {fref:.15g} ({time.perf_counter() - t0:.2f} s)", flush=True)
    pe = peers(p)
    sweeps = {k: sweep(f, p, fref) for k, f in pe.items()}
    for k, s in sweeps.items():
        print(f"  sweep {k}: {[(it, f'{(v - fref) / abs(fref):.1e}') for it, v in s]}", flush=True)
    vals = [fref] + [v for s in sweeps.values() for _, v in s]
    fstar_guess = min(vals)
    need = {
        k: {t: next((it for it, v in s if (v - fstar_guess) / abs(fstar_guess) <= t), None) for t in TARGETS}
        for k, s in sweeps.items()
    }
    times = {}  # label -> list over rounds of {target: seconds}
    curves_ours = {}
    for r in range(reps):
        for m in ("saga", "svrg", "auto") if p.l1 > 0 else tuple(o for o in OURS if not (p.sparse and o == "finito")):
            curve, name = run_ours(p, m, fref, r)
            curves_ours.setdefault(m, []).append(curve)
            times.setdefault(f"ours {m}" + (f" ({name})" if m == "auto" else ""), []).append(curve)
        for k, fit in pe.items():
            row = {}
            cache = {}
            for t in TARGETS:
                it = need[k][t]
                if it is None:
                    row[t] = np.nan
                    continue
                if it not in cache:
                    t0 = time.perf_counter()
                    x = fit(it)
                    cache[it] = (time.perf_counter() - t0, p.value(x))
                row[t] = cache[it][0]
            times.setdefault(k, []).append(row)
    # f*: the best value seen anywhere
    fstar = min([fstar_guess] + [v for cs in curves_ours.values() for c in cs for _, v in c])
    per_round = {}
    for k, runs in times.items():
        if k.startswith("ours"):
            per_round[k] = [first_times(c, fstar) for c in runs]
        else:
            per_round[k] = runs
    med = {k: {t: float(np.median([q[t] for q in rs])) for t in TARGETS} for k, rs in per_round.items()}
    peer_names = [k for k in per_round if not k.startswith("ours")]
    print(f"f* = {fstar:.15g}; {reps} paired rounds; times in seconds (median)")
    print(
        "| solver | t(1e-4) | t(1e-6) | t(1e-8) | paired ratio to sklearn saga at 1e-6 / 1e-8 | paired ratio to best peer at 1e-6 / 1e-8 |"
    )
    print("|---|---|---|---|---|---|")

    def ratio(k, ref_rows, t):
        rs = [
            a[t] / b[t] for a, b in zip(per_round[k], ref_rows) if np.isfinite(a[t]) and np.isfinite(b[t]) and b[t] > 0
        ]
        return float(np.median(rs)) if rs else np.nan

    best_rows = [
        {t: np.nanmin([per_round[k][i][t] for k in peer_names] + [np.inf]) for t in TARGETS} for i in range(reps)
    ]
    fmt = lambda v: "—" if not np.isfinite(v) else f"{v:.3g}"  # noqa: E731
    for k in sorted(med, key=lambda k: np.nan_to_num(med[k][1e-8], nan=1e9)):
        cells = " | ".join(fmt(med[k][t]) for t in TARGETS)
        saga_rows = per_round["sklearn saga" if p.l1 == 0 else "sklearn saga (elastic net)"]
        rs = " / ".join(fmt(ratio(k, saga_rows, t)) for t in (1e-6, 1e-8))
        rb = " / ".join(fmt(ratio(k, best_rows, t)) for t in (1e-6, 1e-8))
        print(f"| {k} | {cells} | {rs} | {rb} |")
    sys.stdout.flush()


def speedup(p, label, reps):
    """Seconds per epoch: compiled kernels against the generic Python path (same updates, same seed)."""
    g = GenericMultinomial(p.A, p.labels, l2=p.l2)
    print(f"\n## one-epoch speed-up, compiled vs generic Python path ({label})")
    print("| solver | compiled s/epoch | Python s/epoch | speed-up |")
    print("|---|---|---|---|")
    for m in ("saga", "svrg", "sgd", "finito"):
        tc, tp = [], []
        for r in range(reps):
            for prob, acc in ((p, tc), (g, tp)):
                res = solvers.minimize(prob, m, max_iter=1, tol=0.0, seed=r, off_clock=True)
                acc.append(res.trace.seconds[-1] - res.trace.seconds[0])
        c, q = float(np.median(tc)), float(np.median(tp))
        print(f"| {m} | {c:.4g} | {q:.4g} | {q / c:.0f}x |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="digits,gen")
    ap.add_argument("--c-scale", type=float, default=1.0, help="l2 = c_scale / n (1: sklearn C = 1; 100: C = 0.01)")
    ap.add_argument(
        "--l1", type=float, default=0.0, help="l1 weight (then: ours saga/svrg/auto vs sklearn elastic-net saga)"
    )
    ap.add_argument("--speedup", action="store_true")
    a = ap.parse_args()
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, threads OMP={os.environ.get('OMP_NUM_THREADS')}, "
        f"NUMBA={os.environ.get('NUMBA_NUM_THREADS')}, load average {os.getloadavg()}"
    )
    print(f"numba compile/cache-load time (apart from solve times): {compile_time():.2f} s")
    for name in [s for s in a.only.split(",") if s]:
        p = make_problem(name, a.c_scale, a.l1)
        if a.speedup:
            speedup(p, name, a.reps)
            continue
        run_problem(name, p, a.reps)
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
