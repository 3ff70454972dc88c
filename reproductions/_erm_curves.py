"""What the Fig. 3.4-3.6 reproductions share: the five methods of seed 000 l.1420-1422 on one L2-regularised
ERM problem, their suboptimality against effective passes, and the plot.

``J(x) = (1/N) sum_i phi_i(a_i^T x) + (lam/2)|x|^2`` is given twice, as :class:`solvers.problems.erm.ERM`
(read by SPDC/AdaSPDC) and as :class:`solvers.problems.linear_models.LinearModel` (read by the compiled SDCA
and SAG): the same function (checked at a random point before every run). All methods use one dual
coordinate (one row) per iteration, m = 1, as in the seed. SAG runs with the two steps the seed tunes over,
``1/(16 L)`` and ``1/L`` (``L = max_i |a_i|^2 phi''``; the seed prints ``|a_i|``, notes 000 s.2.2), and the
better final value is kept.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import solvers
from solvers.problems.erm import ERM
from solvers.problems.linear_models import LinearModel

METHODS = ("AdaSPDC", "SPDC", "SPDC non-uniform", "SDCA", "SAG")
_PRIMAL_DUAL = {
    "AdaSPDC": ("adaspdc", {}),
    "SPDC": ("spdc", {}),
    "SPDC non-uniform": ("spdc", {"sampling": "nonuniform"}),
}


def w8a_like(rng: np.random.Generator, n: int = 10_000, d: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """A w8a look-alike (seed 000 Table 3.2: 49,749 x 300, density 3.9%): n rows of d binary features of density
    4% and the scores ``X w - median`` of a sparse linear model, drawn from ``rng`` (callers draw on from it)."""
    X = (rng.random((n, d)) < 0.04).astype(float)
    w = np.where(rng.random(d) < 0.2, rng.normal(size=d), 0.0)
    return X, X @ w - np.median(X @ w)


def on_grid(trace, passes: int) -> np.ndarray:
    """The objective after 1..passes effective passes (the last value recorded at or before each; a run that
    stopped early, at machine precision, keeps its last value)."""
    p = np.asarray(trace.passes, dtype=float)
    f = np.asarray(trace.objective, dtype=float)
    idx = np.searchsorted(p, np.arange(1, passes + 1) + 1e-9, side="right") - 1
    return f[np.clip(idx, 0, len(f) - 1)]


def curves(erm: ERM, model: LinearModel, f_star: float, passes: int, seed: int) -> dict[str, np.ndarray]:
    """``J(x^t) - J*`` after 1..passes passes for each of :data:`METHODS`."""
    x = np.random.default_rng(seed).normal(size=erm.dim)
    assert abs(erm.value(x) - model.value(x)) <= 1e-10 * max(1.0, abs(erm.value(x))), "ERM and LinearModel differ"
    out = {}
    for name, (method, opts) in _PRIMAL_DUAL.items():
        r = solvers.minimize(erm, method, m=1, tol=0.0, max_iter=passes, seed=seed, **opts)
        out[name] = on_grid(r.trace, passes) - f_star
    r = solvers.minimize(model, "sdca", tol=0.0, max_iter=passes, seed=seed)
    out["SDCA"] = on_grid(r.trace, passes) - f_star
    L = float(model.L_max)
    sag = [solvers.minimize(model, "sag", step=s / L, tol=0.0, max_iter=passes, seed=seed) for s in (1 / 16, 1.0)]
    best = [on_grid(r.trace, passes) - f_star for r in sag]
    out["SAG"] = min(best, key=lambda c: c[-1] if np.isfinite(c[-1]) else np.inf)
    return out


def mean_curves(runs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Average of the seeds' curves, method by method (the seed averages 10 runs, l.1420)."""
    return {k: np.mean([r[k] for r in runs], axis=0) for k in runs[0]}


def plot(panels: dict[str, dict[str, np.ndarray]], path: Path, title: str, ncols: int = 4) -> None:
    """One log-scale panel per setting (``ncols`` a row): mean suboptimality against passes for each method."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    ncols = min(ncols, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    for ax, (label, cur) in zip(axes.ravel(), panels.items(), strict=False):
        for name, c in cur.items():
            ax.semilogy(np.arange(1, len(c) + 1), np.maximum(c, 1e-16), label=name)
        ax.set_title(label)
        ax.set_xlabel("effective passes")
        ax.set_ylim(1e-15, None)
    for row in axes:
        row[0].set_ylabel("J(x) - J*")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(panels: dict[str, dict[str, np.ndarray]], marks: tuple[int, ...]) -> list[str]:
    """Markdown rows: mean suboptimality of every method at the given passes, per panel."""
    rows = ["| setting | passes | " + " | ".join(METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    for label, cur in panels.items():
        for p in marks:
            if p <= len(cur[METHODS[0]]):
                rows.append(f"| {label} | {p} | " + " | ".join(f"{cur[m][p - 1]:.2e}" for m in METHODS) + " |")
    return rows
