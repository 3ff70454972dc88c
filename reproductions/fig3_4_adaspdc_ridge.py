"""Seed 000 Fig. 3.4: AdaSPDC against SPDC (uniform and non-uniform), SDCA and SAG on ridge regression.

Problem (3.42), N = D = 1,000, the Zhang & Xiao generator (notes 000 s.3.1): ``a_i ~ N(0, diag(j^-2))``,
``x = 1``, ``b = a^T x + N(0, 1)``; ``J(x) = (1/N) sum (1/2)(a_i^T x - b_i)^2 + (lam/2)|x|^2`` with the exact
``x* = (A^T A/N + lam I)^{-1} A^T b/N`` (l.1437), lam in {1e-3, 1e-4, 1e-5, 1e-6}; suboptimality
``J(x^t) - J*`` against effective passes, mean of 10 seeds, m = 1 (l.1420-1422). The seed claims AdaSPDC
is 100x better than both SPDC variants at lam = 1e-6 after 300 passes (l.1453): the run prints that ratio.

Run (the full reproduction; ``make reproduce`` runs it with these defaults, about 25 min on one core):
``OMP_NUM_THREADS=1 .venv/bin/python reproductions/fig3_4_adaspdc_ridge.py``. The short version is
``tests/solvers/test_chapter3_reproductions.py``. Results: ``reproductions/fig3_4_adaspdc.md``,
``reproductions/figures/fig3_4_ridge.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from reproductions._erm_curves import curves, mean_curves, plot, table  # noqa: E402
from solvers.problems.erm import ERM  # noqa: E402
from solvers.problems.linear_models import Ridge  # noqa: E402
from solvers.prox import SquaredL2  # noqa: E402

HERE = Path(__file__).resolve().parent


def ridge_problem(n: int, lam: float, seed: int) -> tuple[ERM, Ridge, float]:
    """The Zhang & Xiao data (N = D = n), the problem in its two forms, and the exact J*."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n)) / np.arange(1, n + 1)
    b = A @ np.ones(n) + rng.normal(size=n)
    erm = ERM(A, b, SquaredL2(lam))
    x_star = np.linalg.solve(A.T @ A / n + lam * np.eye(n), A.T @ b / n)
    return erm, Ridge(A, b, l2=lam), float(erm.value(x_star))


def run(n: int, lams: list[float], seeds: int, passes: int) -> dict[str, dict[str, np.ndarray]]:
    """Mean suboptimality curves, one panel per lambda."""
    panels = {}
    for lam in lams:
        runs = []
        for seed in range(seeds):
            erm, model, f_star = ridge_problem(n, lam, seed)
            runs.append(curves(erm, model, f_star, passes, seed))
        panels[f"lam = {lam:g}"] = mean_curves(runs)
    return panels


def ratios(cur: dict[str, np.ndarray], floor: float = 1e-13) -> str:
    """The seed's comparison at the last pass: each SPDC variant's suboptimality over AdaSPDC's (l.1453), or
    "machine precision" when both are below ``floor``."""
    a = cur["AdaSPDC"][-1]
    parts = []
    for k in ("SPDC", "SPDC non-uniform"):
        s = cur[k][-1]
        parts.append(f"{k} / AdaSPDC = " + ("both at machine precision" if max(a, s) < floor else f"{s / a:.3g}"))
    return ", ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--passes", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--lams", default="1e-3,1e-4,1e-5,1e-6")
    ap.add_argument("--out", default=str(HERE / "figures" / "fig3_4_ridge"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"N = D = {args.n}, m = 1, {args.passes} passes, {args.seeds} seeds; load {os.getloadavg()}")
    panels = run(args.n, [float(v) for v in args.lams.split(",")], args.seeds, args.passes)
    print("\n".join(table(panels, (10, 50, 100, 200, 300))))
    for label, cur in panels.items():
        print(f"{label}: after {args.passes} passes {ratios(cur)}")
    out = Path(args.out)
    plot(panels, out.with_suffix(".png"), f"Fig. 3.4: ridge, N = D = {args.n}, mean of {args.seeds} seeds")
    out.with_suffix(".json").write_text(
        json.dumps({k: {m: c.tolist() for m, c in v.items()} for k, v in panels.items()})
    )
    print(f"{time.perf_counter() - t0:.0f} s; load {os.getloadavg()}; wrote {out}.png and .json")


if __name__ == "__main__":
    main()
