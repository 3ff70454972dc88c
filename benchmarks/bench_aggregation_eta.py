"""How right is a competition run's ETA? Old rule (elapsed x (1 - f) / f) against
:class:`evaluation.run_clock.RunClock`, both fed the same run's progress, on several data families
and sizes (issue 14 §4).

For each run: the total time T, and over every progress report from 25 % of T on, the worst ratio
of the estimate to the time actually left (max of eta/left and left/eta; 1 is exact) and the share
of reports within a factor 2. Reports with less than 1 s left are skipped (stale by design).

    PYTHONPATH=$PWD python benchmarks/bench_aggregation_eta.py
"""

from __future__ import annotations

import os
import time

import numpy as np

from benchmarks.competition_data import make_competition_predictions
from evaluation.aggregation import LOO_REFIT_BUDGET, METHODS, aggregate_submissions, progress_plan
from evaluation.run_clock import RunClock


def gaussian_scores(n: int, k: int, n_agents: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The e2e progress test's family: Gaussian scores, agent a's signal 1.5 + 0.1 a."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    lps = []
    for a in range(n_agents):
        s = rng.normal(scale=1.0 + 0.1 * a, size=(n, k))
        s[np.arange(n), y] += 1.5 + 0.1 * a
        lps.append(s - np.log(np.exp(s).sum(1, keepdims=True)))
    return np.stack(lps, 1), y


def dirichlet_noise(n: int, k: int, n_agents: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Agents mixing the one-hot label with Dirichlet noise, each with its own mixing weight."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    lps = []
    for a in range(n_agents):
        lam = 0.2 + 0.6 * a / max(1, n_agents - 1)
        p = (1 - lam) * rng.dirichlet(np.ones(k), n) + lam * np.eye(k)[y]
        lps.append(np.log(0.98 * p + 0.02 / k))
    return np.stack(lps, 1), y


def ordinal(n: int, k: int, n_agents: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    lp, y = make_competition_predictions(n, n_agents, k, seed)
    return lp, y


def judge(log: list[tuple[float, float | None]], total: float) -> tuple[float, float]:
    ratios = []
    for t, eta in log:
        left = total - t
        if t < 0.25 * total or left < 1.0:
            continue
        ratios.append(np.inf if not eta else max(eta / left, left / eta))
    r = np.asarray(ratios)
    return float(r.max()), float(np.mean(r <= 2.0))


def one_run(lp: np.ndarray, y: np.ndarray, epochs: int) -> dict:
    n = len(y)
    pub = np.arange(n) < n // 2
    val = lp[pub]
    refit = val.size * lp.shape[1] <= LOO_REFIT_BUDGET
    plan = progress_plan(METHODS, 7, lp.shape[1], loo_refit=refit, bands=True, market_epochs=epochs)
    clock = RunClock(plan, alike={"loo": ("log", lp.shape[1])} if refit else None)
    t0 = time.monotonic()
    old: list[tuple[float, float | None]] = []
    new: list[tuple[float, float | None]] = []

    def cb(f: float) -> None:
        t = time.monotonic() - t0
        old.append((t, t * (1 - f) / f if f > 0.005 else None))
        new.append((t, clock.observe(f)))

    aggregate_submissions(lp[pub], y[pub], lp[~pub], y[~pub], progress=cb, market_max_epochs=epochs)
    total = time.monotonic() - t0
    return {"T": total, "old": judge(old, total), "new": judge(new, total)}


def main() -> None:
    cases = [
        ("gaussian", gaussian_scores, 4000, 8, 10, 200),
        ("gaussian", gaussian_scores, 2000, 8, 6, 200),
        ("dirichlet", dirichlet_noise, 3000, 5, 8, 200),
        ("dirichlet", dirichlet_noise, 3000, 5, 8, 2000),
        ("ordinal", ordinal, 2000, 16, 12, 200),
    ]
    lp, y = gaussian_scores(400, 4, 4, 0)  # compile the kernels outside the measured runs
    aggregate_submissions(lp[:200], y[:200], lp[200:], y[200:], market_max_epochs=5)
    print(f"load: {os.getloadavg()[0]:.2f}")
    print(
        "| family | items | K | agents | market cap | T (s) | old worst | old within 2x | new worst | new within 2x |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, gen, n, k, a, epochs in cases:
        lp, y = gen(n, k, a, 1)
        r = one_run(lp, y, epochs)
        (ow, of), (nw, nf) = r["old"], r["new"]
        print(f"| {name} | {n} | {k} | {a} | {epochs} | {r['T']:.1f} | {ow:.2f} | {of:.0%} | {nw:.2f} | {nf:.0%} |")
    print(f"load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
