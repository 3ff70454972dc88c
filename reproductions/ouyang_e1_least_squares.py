"""E1 of seed 002 (Ouyang ch. I, L399-438, Figs 3-7): batch gradient descent against SGD on least squares.

Data (L407-411): ``A_i ~ N(0, I_D)``, ``x* ~ N(0, I)``, ``b_i = A_i^T x* + eps``, ``eps ~ N(0, sigma^2)``
(sigma read as a standard deviation; the seed's N(0, sigma I) is ambiguous, notes 002 section 7.10); one
third held out, metric the test mean squared error. The seed leaves ``D`` and the step sizes unstated:
here ``D = 20``; GD takes the step ``1/L`` (``solvers`` ``gd``), SGD the constant step ``1/L_max`` in a
fresh permutation each epoch (``solvers`` ``sgd``, ``schedule="constant"``). The budget matching is
the seed's: ``k`` GD iterations against ``k`` SGD epochs (``k N`` single-sample steps).

Runs (the seed's table): Fig 3, no noise, 1 iteration / 1 epoch; Fig 4, sigma = 1e-3 and 1e-1, same
budget; Fig 5, no noise, 10/20/50; Fig 6, sigma = 1e-3, 5/10/20; Fig 7, sigma = 1e-6, 5/10/20.
``N`` in {40, ..., 10000} (the seed's grid; ``--quick``: up to 2000). Mean over ``SEEDS`` data draws.

Usage::

    python reproductions/ouyang_e1_least_squares.py [--quick]

Writes ``reproductions/ouyang_e1.md`` (``_quick``) and ``reproductions/figures/ouyang_e1*.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import solvers
from solvers.problems.linear_models import LeastSquares

HERE = Path(__file__).resolve().parent
D = 20
NS = [40, 80, 160, 200, 400, 800, 1600, 2000, 4000, 8000, 10000]
FIGS = {
    "Fig 3 (sigma 0)": (0.0, [1]),
    "Fig 4 (sigma 1e-3)": (1e-3, [1]),
    "Fig 4 (sigma 1e-1)": (1e-1, [1]),
    "Fig 5 (sigma 0)": (0.0, [10, 20, 50]),
    "Fig 6 (sigma 1e-3)": (1e-3, [5, 10, 20]),
    "Fig 7 (sigma 1e-6)": (1e-6, [5, 10, 20]),
}


def test_error(N: int, sigma: float, budget: int, seed: int) -> tuple[float, float]:
    """Test MSE of GD (``budget`` iterations) and SGD (``budget`` epochs) on one draw of ``N`` samples."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, D))
    xs = rng.normal(size=D)
    b = A @ xs + sigma * rng.normal(size=N)
    ntr = N - N // 3
    p = LeastSquares(A[:ntr], b[:ntr])
    gd = solvers.minimize(p, "gd", max_iter=budget, tol=0.0)
    sgd = solvers.minimize(
        p, "sgd", max_iter=budget, schedule="constant", step=1.0 / p.L_max, order="permuted", seed=seed
    )
    At, bt = A[ntr:], b[ntr:]
    return float(np.mean((At @ gd.x - bt) ** 2)), float(np.mean((At @ sgd.x - bt) ** 2))


def run(ns: list[int], seeds: int) -> dict:
    out = {}
    for fig, (sigma, budgets) in FIGS.items():
        for k in budgets:
            errs = np.array([[test_error(N, sigma, k, s) for s in range(seeds)] for N in ns])  # (N, seed, 2)
            out[(fig, k)] = errs.mean(axis=1)
    return out


def plot(res: dict, ns: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, name in zip(axes.ravel(), FIGS, strict=True):
        for (f, k), e in res.items():
            if f != name:
                continue
            (l1,) = ax.plot(ns, e[:, 0], "--", label=f"GD {k} it")
            ax.plot(ns, e[:, 1], "-", color=l1.get_color(), label=f"SGD {k} ep")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("N")
        ax.set_ylabel("test MSE")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(res: dict, ns: list[int]) -> str:
    lines = ["| run | budget | " + " | ".join(f"N={n}" for n in ns) + " |", "|---|---|" + "---|" * len(ns)]
    for (f, k), e in res.items():
        cells = " | ".join(f"{g:.2g} / {s:.2g}" for g, s in e)
        lines.append(f"| {f} | {k} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    ns = [n for n in NS if n <= 2000] if a.quick else NS
    seeds = 3 if a.quick else 10
    t0 = time.time()
    res = run(ns, seeds)
    suffix = "_quick" if a.quick else ""
    plot(res, ns, HERE / "figures" / f"ouyang_e1{suffix}.png")
    md = table(res, ns)
    (HERE / f"ouyang_e1{suffix}.md").write_text(
        "# E1 (seed 002 ch. I): GD vs SGD on least squares\n\n"
        f"`python reproductions/ouyang_e1_least_squares.py{' --quick' if a.quick else ''}`: D = {D}, "
        f"{seeds} draws per cell, {time.time() - t0:.0f} s. Each cell: test MSE of GD / SGD (mean over draws). "
        f"Figure: `figures/ouyang_e1{suffix}.png`.\n\n" + md + "\n"
    )
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
