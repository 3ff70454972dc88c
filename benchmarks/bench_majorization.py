"""Bound majorization (bm, sbm) against scipy's L-BFGS-B and the incremental solvers, same run, same data.

Problems (seed 004 issue [majorization]):

- ``multinomial``: multinomial logistic regression, n = 100,000, d = 50, K = 10
  (``make_classification(n_informative=30, n_redundant=10, class_sep=1.0, random_state=0)``,
  standardised), ridge ``lam`` (default 1e-3 = 100/n, mean loss + lam/2 ||W||^2);
- ``logpool``: log-pool weight learning at the competition scale of [foundation]
  (``make_competition_predictions(20000, 269, 64, seed=0)``), weights on the simplex, no ridge.

Metric (notes/solver-benchmarks.md section 7): true relative suboptimality ``(f - f*)/|f*|`` against a
tight reference (scikit-learn's newton-cholesky at tol 1e-10 for the multinomial; H2's Newton at
tol 1e-14 for the pool; f* = the best value any run reached if lower), time and passes to 1e-4,
1e-6 and 1e-8; objective evaluations for the trace are kept off the clock; compile time is paid by a
warm-up run before timing; median over ``--reps`` repetitions; OMP_NUM_THREADS=1.

L-BFGS-B on the simplex: scipy has no simplex constraint, so it runs on ``u >= 0`` (box) with
``w = u / sum(u)``; the objective is then scale invariant in ``u`` and its minimisers are the
simplex optimum (times any positive scale).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_majorization.py multinomial --reps 3``
and ``... logpool --reps 1`` (the pool run takes several minutes: one BM iteration is one pass
with a ``269 x 269`` curvature, ~1e11 flops).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.optimize import minimize as sp_minimize  # noqa: E402

from solvers import minimize  # noqa: E402
from solvers.result import Clock  # noqa: E402

LEVELS = (1e-4, 1e-6, 1e-8)


def first_below(trace_seconds, trace_passes, trace_obj, f_star, level):
    for s, p, f in zip(trace_seconds, trace_passes, trace_obj):
        if (f - f_star) / abs(f_star) <= level:
            return s, p
    return None, None


def lbfgs(problem, x0, *, budget_s: float, simplex: bool = False, maxcor: int = 10):
    """scipy L-BFGS-B with a trace (objective off the clock); simplex via w = u / sum(u), u >= 0."""
    clock = Clock()
    seconds, passes, objs = [], [], []
    nfev = [0]

    if simplex:

        def fg(u):
            nfev[0] += 1
            s = u.sum()
            w = u / s
            f, g = problem.value_and_grad(w)
            return f, (g - g @ w) / s

        bounds = [(0.0, None)] * len(x0)
        to_x = lambda u: u / u.sum()  # noqa: E731
    else:

        def fg(x):
            nfev[0] += 1
            return problem.value_and_grad(x)

        bounds = None
        to_x = lambda x: x  # noqa: E731

    class Budget(Exception):
        pass

    def cb(u):
        t = clock()
        clock.pause()
        seconds.append(t)
        passes.append(float(nfev[0]))
        objs.append(problem.value(to_x(u)))
        clock.resume()
        if t > budget_s:
            raise Budget

    objs.append(problem.value(to_x(x0)))
    seconds.append(0.0)
    passes.append(0.0)
    clock = Clock()
    try:
        sp_minimize(
            fg,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            callback=cb,
            options=dict(maxcor=maxcor, ftol=0.0, gtol=0.0, maxiter=100000, maxfun=100000),
        )
    except Budget:
        pass
    return seconds, passes, objs


def run_solver(problem, name, budget_s: float | None = None, **opts):
    """``minimize`` by name; with ``budget_s``, a callback stops the run after that many wall seconds."""
    if budget_s is not None:
        t0 = time.perf_counter()
        opts["callback"] = lambda x: time.perf_counter() - t0 > budget_s
    r = minimize(problem, name, **opts)
    t = r.trace
    return list(t.seconds), list(t.passes), list(t.objective), r


def bench(problem, runs: dict, f_ref: float, reps: int):
    """Run every solver ``reps`` times; return rows with the medians."""
    rows = {}
    for label, fn in runs.items():
        per = []
        for rep in range(reps):
            sec, pas, obj, *_ = fn()
            per.append((sec, pas, obj))
            print(
                f"  {label} rep {rep}: {len(obj)} trace points, last gap {(min(obj) - f_ref) / abs(f_ref):.2e}, "
                f"{sec[-1]:.2f} s",
                flush=True,
            )
        rows[label] = per
    f_star = min(f_ref, min(min(o) for per in rows.values() for _, _, o in per))
    table = {}
    for label, per in rows.items():
        entry = {}
        for lvl in LEVELS:
            hits = [first_below(s, p, o, f_star, lvl) for s, p, o in per]
            ts = [h[0] for h in hits if h[0] is not None]
            ps = [h[1] for h in hits if h[1] is not None]
            entry[lvl] = (
                float(np.median(ts)) if len(ts) == len(per) else None,
                float(np.median(ps)) if len(ps) == len(per) else None,
            )
        entry["best_gap"] = float(np.median([(min(o) - f_star) / abs(f_star) for _, _, o in per]))
        entry["seconds_run"] = float(np.median([s[-1] for s, _, _ in per]))
        table[label] = entry
    return table, f_star


def print_table(title, table, ours=("bm", "sbm")):
    print(f"\n### {title}\n")
    head = "| solver | " + " | ".join(f"s to {l:g} | passes to {l:g}" for l in LEVELS) + " | best gap | run s |"
    print(head)
    print("|" + "---|" * (2 + 2 * len(LEVELS) + 1))
    for label, e in table.items():
        cells = []
        for lvl in LEVELS:
            t, p = e[lvl]
            cells += ["—" if t is None else f"{t:.2f}", "—" if p is None else f"{p:.1f}"]
        print(f"| {label} | " + " | ".join(cells) + f" | {e['best_gap']:.1e} | {e['seconds_run']:.1f} |")

    # ratio at 1e-8: our best over the best peer
    def t8(lbl):
        return table[lbl][1e-8][0]

    our = [t8(l) for l in table if l.split()[0] in ours and t8(l) is not None]
    peer = [t8(l) for l in table if l.split()[0] not in ours and t8(l) is not None]
    if our and peer:
        print(f"\nratio (best of ours) / (best peer) in seconds to 1e-8: {min(our) / min(peer):.2f}")
    elif our:
        print("\nno peer reached 1e-8 within its budget")
    else:
        print("\nnone of ours reached 1e-8 within its budget")


def multinomial(reps: int, lam: float, budget: float):
    from sklearn.datasets import make_classification

    from solvers.problems.linear_models import MultinomialLogistic
    from solvers.problems.multinomial_loglinear import MultinomialLogLinear

    n, d, K = 100_000, 50, 10
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=30, n_redundant=10, n_classes=K, n_clusters_per_class=1, random_state=0
    )
    X = (X - X.mean(0)) / X.std(0)
    ours = MultinomialLogLinear(X, y, K, lam=lam)
    peer = MultinomialLogistic(X, y, l2=lam, n_classes=K)  # same objective, W stored (d, K)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(K, d)) * 0.1
    assert abs(ours.value(W.ravel()) - peer.value(W.T.ravel())) < 1e-12
    # reference: scikit-learn's Newton-Cholesky (an independent solver), C = 1/(n lam)
    from sklearn.linear_model import LogisticRegression

    t = time.perf_counter()
    sk = LogisticRegression(
        C=1.0 / (n * lam), fit_intercept=False, tol=1e-10, max_iter=100, solver="newton-cholesky"
    ).fit(X, y)
    f_ref = ours.value(sk.coef_.ravel())
    print(f"reference: sklearn newton-cholesky, f* = {f_ref:.15g} ({time.perf_counter() - t:.1f} s)", flush=True)
    # warm-up (compile) runs, not timed
    minimize(ours, "sbm", max_iter=1)
    minimize(peer, "saga", max_iter=1, off_clock=True)
    minimize(peer, "svrg", max_iter=1, off_clock=True)
    x0 = np.zeros(ours.dim)
    runs = {
        "bm (full)": lambda: run_solver(ours, "bm", budget, tol=1e-10, max_iter=10000),
        "sbm (p0=1000, growth 1.5)": lambda: run_solver(
            ours, "sbm", budget, tol=1e-10, batch_size=1000, growth=1.5, max_iter=10000
        ),
        "L-BFGS-B (m=10)": lambda: lbfgs(ours, x0, budget_s=budget),
        "saga (H4, default step)": lambda: run_solver(peer, "saga", budget, tol=0.0, max_iter=10000, off_clock=True),
        "svrg (H4, default step)": lambda: run_solver(peer, "svrg", budget, tol=0.0, max_iter=10000, off_clock=True),
    }
    table, f_star = bench(ours, runs, f_ref, reps)
    print_table(f"multinomial logistic regression n={n}, d={d}, K={K}, lam={lam:g} (f* = {f_star:.12g})", table)


def logpool(reps: int, budget: float, n_items: int, n_agents: int, n_classes: int):
    from benchmarks.competition_data import make_competition_predictions
    from solvers.problems.loglinear import ConditionalLogLinear

    t = time.perf_counter()
    lp, y = make_competition_predictions(n_items, n_agents, n_classes, 0)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    print(f"data {lp.shape} in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    ref = minimize(pb, "newton", tol=1e-14, max_iter=500)
    f_ref = ref.fun
    print(
        f"reference: newton (H2) f* = {f_ref:.15g}, {int(np.sum(ref.x > 0))} non-zero weights, "
        f"{time.perf_counter() - t:.1f} s"
    )
    minimize(pb, "bm", max_iter=1)  # warm-up
    x0 = pb.x0()
    runs = {
        "bm (full)": lambda: run_solver(pb, "bm", budget, tol=1e-10, max_iter=10000),
        "bm (diag)": lambda: run_solver(pb, "bm", budget, tol=1e-10, curvature="diag", max_iter=100000),
        "sbm (p0=500, growth 2)": lambda: run_solver(
            pb, "sbm", budget, tol=1e-10, batch_size=500, growth=2.0, max_iter=10000
        ),
        "newton (H2, working set)": lambda: run_solver(pb, "newton", budget, tol=1e-14, max_iter=500),
        "L-BFGS-B (u/sum u)": lambda: lbfgs(pb, x0, budget_s=budget, simplex=True),
        "saga (H4, projected)": lambda: run_solver(pb, "saga", budget, tol=0.0, max_iter=100000, off_clock=True),
    }
    table, f_star = bench(pb, runs, f_ref, reps)
    print_table(
        f"log pool weights, {n_items} items x {n_agents} agents x {n_classes} classes (f* = {f_star:.12g})",
        table,
        ours=("bm", "sbm"),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", choices=["multinomial", "logpool"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--budget", type=float, default=60.0, help="wall seconds per run (every solver stops after it)")
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--agents", type=int, default=269)
    ap.add_argument("--classes", type=int, default=64)
    a = ap.parse_args()
    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, reps={a.reps}, budget={a.budget}s"
    )
    if a.problem == "multinomial":
        multinomial(a.reps, a.lam, a.budget)
    else:
        logpool(a.reps, a.budget, a.items, a.agents, a.classes)


if __name__ == "__main__":
    main()
