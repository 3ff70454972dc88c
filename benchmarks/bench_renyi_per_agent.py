"""Benchmark: the joint weights-and-per-agent-γ fit of ``RenyiPool(gamma="learn_per_agent")`` (issue
core-at-scale §3), by the pool's solver against two others on the same problem from the same start.

The start is what the pool hands its last stage: the weights and the shared γ of
``RenyiPool(gamma="learn")`` on the same data (one γ per agent, all equal to it). Solvers:

- ``box_newton`` (ours, the pool's choice since session 27): projected Newton on the box form of the
  simplex x log-γ box (``solvers.problems.orthant``) with the joint Fisher model
  (``aggregators.renyi_joint_curvature``), BFGS-corrected (``solvers.methods.box_newton``);
- ``tnc``, ``slsqp``, ``lbfgsb``: SciPy's truncated Newton (the pool's choice in sessions 25-26), SLSQP and
  L-BFGS-B on the same box form (``solvers.methods.box_quasi_newton``);
- ``spg``: spectral projected gradient on the product set (the pool's solver before session 25);
- ``scipy slsqp``: SciPy's SLSQP on the simplex x box directly (equality ``Σ w = 1``), same
  objective and gradient: another formulation, for the optimum.

Printed per problem: seconds, final objective (mean negative log-likelihood), the difference to the
best of the three, the KKT measure at the returned point (Frank-Wolfe gap on ``w`` plus the largest
projected-gradient entry on ``log γ``) and whether the solver reported convergence. The problem is
not convex in γ: different solvers may stop at different stationary points; the objective column
shows which is better.

    python benchmarks/bench_renyi_per_agent.py [--families ...] [--shapes 800x12x8 ...] [--max-iter N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from scipy.optimize import minimize as scipy_minimize

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aggregators import RenyiPool  # noqa: E402
from aggregators.renyi_gradient import LOG_GAMMA_BOUNDS, RenyiProblem  # noqa: E402
from aggregators.renyi_joint_curvature import InGamma  # noqa: E402
from aggregators.renyi_pool import JOINT_OPTIONS  # noqa: E402
from benchmarks.logpool_families import make_family  # noqa: E402
from solvers.problems.orthant import SimplexAsOrthant  # noqa: E402
from solvers.registry import minimize  # noqa: E402
from solvers.simplex import fw_gap  # noqa: E402


def kkt(prob: RenyiProblem, x: np.ndarray) -> float:
    A = prob.n_agents
    f, g = prob.value_and_grad(x)
    t = x[A:]
    pg = np.abs(np.clip(t - g[A:], *LOG_GAMMA_BOUNDS) - t).max()
    return float(fw_gap(x[:A], g[:A]) + pg)


def run(family: str, n: int, A: int, K: int, max_iter: int, tol: float, solvers: tuple) -> list[dict]:
    lp, y = make_family(family, n, A, K, seed=1)
    shared = RenyiPool(gamma="learn").fit(lp, y)
    g0 = float(shared.gamma_)
    x0 = np.concatenate([shared.weights_, np.full(A, np.log(g0))])

    def fresh() -> RenyiProblem:
        return RenyiProblem(lp, y, np.full(A, g0), learn_gamma="per_agent", tol=1e-12)

    rows = []
    named = (
        ("box_newton (box form, in γ)", "box_newton"),
        ("tnc (box form)", "tnc"),
        ("slsqp (box form)", "slsqp"),
        ("lbfgsb (box form)", "lbfgsb"),
    )
    for name, method in named:
        if method not in solvers:
            continue
        p = fresh()
        # Newton's model is in γ (the pool's form), the SciPy solvers work in log γ (theirs)
        inner = InGamma(p) if method == "box_newton" else p
        to_log = inner.to_log if method == "box_newton" else np.asarray
        start = inner.from_log(x0) if method == "box_newton" else x0
        box = SimplexAsOrthant(inner, A, inner.rest_bounds())
        t = time.perf_counter()
        opts = JOINT_OPTIONS if method == "box_newton" else {}
        r = minimize(box, method, x0=box.from_inner(start), tol=tol, max_iter=max_iter, **opts)
        rows.append((name, time.perf_counter() - t, to_log(box.to_inner(r.x)), r.converged, p.n_evals))
    if "spg" in solvers:
        p = fresh()
        t = time.perf_counter()
        r = minimize(p, "projected_gradient", x0=x0, tol=tol, max_iter=max_iter)
        rows.append(("spg (product)", time.perf_counter() - t, r.x, r.converged, p.n_evals))
    if "eq" not in solvers:
        return _table(rows, fresh, g0)
    p = fresh()
    bounds = [(0.0, 1.0)] * A + [LOG_GAMMA_BOUNDS] * A
    cons = [{"type": "eq", "fun": lambda x: x[:A].sum() - 1.0, "jac": lambda x: np.r_[np.ones(A), np.zeros(A)]}]
    t = time.perf_counter()
    r = scipy_minimize(
        p.value_and_grad,
        x0,
        jac=True,
        method="SLSQP",
        bounds=bounds,
        constraints=cons,
        options={"maxiter": max_iter, "ftol": 1e-14},
    )
    x = np.clip(r.x, [b[0] for b in bounds], [b[1] for b in bounds])
    x[:A] /= x[:A].sum()
    rows.append(("scipy slsqp (simplex equality)", time.perf_counter() - t, x, bool(r.success), p.n_evals))
    return _table(rows, fresh, g0)


def _table(rows: list, fresh, g0: float) -> list[dict]:
    ref = fresh()
    out = []
    fs = [ref.value(x) for _, _, x, _, _ in rows]
    best = min(fs)
    for (name, sec, x, conv, ev), f in zip(rows, fs, strict=True):
        out.append(
            {"name": name, "s": sec, "f": f, "df": f - best, "kkt": kkt(ref, x), "conv": conv, "evals": ev, "g0": g0}
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=["gaussian-logit", "competition", "noise", "near-duplicate"])
    ap.add_argument("--shapes", nargs="+", default=["800x12x8", "2000x30x16"])
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument(
        "--solvers",
        nargs="+",
        default=["box_newton", "tnc", "slsqp", "lbfgsb", "eq", "spg"],
        help="eq: SciPy SLSQP, simplex equality",
    )
    a = ap.parse_args()
    print(f"# load {os.getloadavg()}; max_iter {a.max_iter}, tol {a.tol}")
    print(
        "| family | n × A × K | shared γ | solver | s | objective | − best | KKT | converged | evaluations | s / ours |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for shape in a.shapes:
            n, A, K = (int(v) for v in shape.split("x"))
            rows = run(fam, n, A, K, a.max_iter, a.tol, tuple(a.solvers))
            ours = rows[0]["s"]  # the first solver named
            for r in rows:
                print(
                    f"| {fam} | {shape} | {r['g0']:.3g} | {r['name']} | {r['s']:.2f} | {r['f']:.10f} | {r['df']:.2e} |"
                    f" {r['kkt']:.1e} | {r['conv']} | {r['evals']} | {r['s'] / ours:.1f} |",
                    flush=True,
                )
    print(f"# load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
