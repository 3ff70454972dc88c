"""Seed 000 Table 3.4 (and Fig. 3.8): the lasso with ISTA, FISTA, ADMM, PDCP and SP-BCD (m = 100), passes and
seconds to the same objective.

Problem (3.64) ``(1/2)|A x - b|^2 + lam |x|_1`` (``ERM(A, b, L1(lam), mean=False)``), Boyd et al. 2011 s.11.1
(notes 000 s.3.3): ``A_ij ~ N(0, 1)`` with unit-norm columns, ``x_true`` with d nonzeros ~ N(0, 1),
``b = A x_true + N(0, 1e-3)``, ``lam = 0.1 |A^T b|_inf``; (N, D, d) = (1000, 5000, 100) and (5000, 20000, 500).
As in the seed, the prox parameter of ISTA/FISTA is 1/L and ADMM's rho = 1 (Parikh-Boyd code); PDCP takes
``tau = sigma = 1/|A|``; SP-BCD updates m = 100 coordinates per iteration, with the thesis step rule (Eq.
3.48/3.51) and with the alternative of l.1623 (``tau_j = 1/|A_j|``, ``sigma = (m/q)/max |A_j|``), which breaks the
P >= 0 condition of Eq. 3.54 here and is run with ``check_steps=False``.
Agora's ``coordinate_descent`` is added as a row. ``J*`` is ``coordinate_descent``'s objective at duality gap
<= 1e-9 |J*|-scale; each solver runs (``tol = 0``) until ``--max-passes`` and its trace gives the first pass
(and the seconds, its own per-iteration objective and gap evaluations included) where
``J - J* <= rel J*`` for rel = 1e-4 (the table's five digits) and 1e-7.

Run (the full reproduction, ``make reproduce`` runs these defaults; the second size holds an 800 MB matrix and
ADMM forms the 5000 x 5000 ``I + A A^T`` once):
``OMP_NUM_THREADS=1 .venv/bin/python reproductions/table3_4_lasso.py``. Short version:
``tests/solvers/test_chapter3_reproductions.py``. Results: ``reproductions/table3_4_lasso.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import solvers  # noqa: E402
from solvers.problems.erm import ERM  # noqa: E402
from solvers.prox import L1  # noqa: E402

RELS = (1e-4, 1e-7)
METHODS = {
    "ISTA": ("ista", {}),
    "FISTA": ("fista", {}),
    "ADMM": ("admm", {"rho": 1.0}),
    "PDCP": ("pdcp", {}),
    "SP-BCD (m = 100)": ("spbcd", {"m": 100}),
    "SP-BCD (m = 100; alt steps)": ("spbcd", {"m": 100, "step_rule": "alt", "check_steps": False}),
    "coordinate_descent": ("coordinate_descent", {}),
}


def boyd_lasso(n: int, d: int, k: int, seed: int = 0) -> tuple[ERM, np.ndarray]:
    """Boyd et al.'s lasso data as the sum-form problem, and x_true."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    A /= np.linalg.norm(A, axis=0)
    x_true = np.zeros(d)
    x_true[rng.choice(d, k, replace=False)] = rng.normal(size=k)
    b = A @ x_true + np.sqrt(1e-3) * rng.normal(size=n)
    lam = 0.1 * float(np.abs(A.T @ b).max())
    return ERM(A, b, L1(lam), mean=False), x_true


def first_reaching(trace, f_star: float, rel: float) -> tuple[float, float]:
    """(passes, seconds) of the first trace entry with ``J - J* <= rel |J*|``; (nan, nan) if none."""
    f = np.asarray(trace.objective)
    hit = np.nonzero(f - f_star <= rel * abs(f_star))[0]
    if not len(hit):
        return float("nan"), float("nan")
    i = int(hit[0])
    return float(trace.passes[i]), float(trace.seconds[i])


def run(n: int, d: int, k: int, max_passes: int, methods: list[str], seed: int = 0) -> list[dict]:
    """One row per method: passes and seconds to each relative target, final objective, |x - x_true|."""
    pb, x_true = boyd_lasso(n, d, k, seed)
    ref = solvers.minimize(pb, "coordinate_descent", tol=1e-9 * abs(pb.value(np.zeros(d))))
    f_star = float(ref.fun)
    _ = pb.L  # |A|_2 by power iteration, problem set-up shared by ISTA/FISTA (and PDCP's own), off every clock
    rows = []
    for name in methods:
        method, opts = METHODS[name]
        budget = max_passes if method != "coordinate_descent" else max(10, max_passes // 10)  # outer iterations
        t = time.perf_counter()
        r = solvers.minimize(pb, method, tol=0.0, max_iter=budget, **opts)
        wall = time.perf_counter() - t
        row = {"method": name, "N, D, d": f"{n}, {d}, {k}", "passes run": r.n_passes, "wall s": wall}
        for rel in RELS:
            row[f"passes to {rel:g}"], row[f"s to {rel:g}"] = first_reaching(r.trace, f_star, rel)
        row["objective"] = float(r.fun)
        row["|x - x_true|"] = float(np.linalg.norm(r.x - x_true))
        rows.append(row)
    rows.append({"method": "J* (coordinate_descent, gap-certified)", "N, D, d": f"{n}, {d}, {k}", "objective": f_star})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000x5000x100,5000x20000x500")
    ap.add_argument("--max-passes", type=int, default=300)
    ap.add_argument("--methods", default=",".join(METHODS))
    args = ap.parse_args()
    print(f"load {os.getloadavg()}")
    cols = ["method", "N, D, d", *(f"{w} to {r:g}" for r in RELS for w in ("passes", "s")), "objective", "|x - x_true|"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for size in args.sizes.split(","):
        n, d, k = (int(v) for v in size.split("x"))
        for row in run(n, d, k, args.max_passes, args.methods.split(",")):
            cells = [row.get(c, "") for c in cols]
            print("| " + " | ".join(f"{c:.4g}" if isinstance(c, float) else str(c) for c in cells) + " |")
            sys.stdout.flush()
        print(f"<!-- load after {size}: {os.getloadavg()} -->")


if __name__ == "__main__":
    main()
