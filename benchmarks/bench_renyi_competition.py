"""Benchmark: the learnt-weight Rényi fit against the log-pool fit, same data, same run (issue #13 §3).

For every family of :mod:`benchmarks.logpool_families` in ``--families`` and every ``--n`` (items;
``--agents`` x ``--classes`` = 269 x 64 by default, the seed's competition shape):

- ``LogPool().fit(X, y)``: the reference cost;
- ``RenyiPool(gamma=g).fit(X, y)`` for each ``--gammas``, with the default solver (``auto``:
  working-set Newton with the Gauss-Newton matrix of :mod:`aggregators.renyi_weight_hessian`): time,
  ratio to the log pool, Newton iterations, working-set sizes, fixed-point sweeps per item, active
  agents, ``converged_``; the log-pool fit, the Newton fits and the sweep are repeated ``--reps``
  times, interleaved, and the median of each is reported (wall and CPU seconds: the machine is shared);
- with ``--spg``: the same fit by spectral projected gradient (the previous default), and the gap
  between the two optima (mean log-likelihood);
- with ``--sweep``: ``RenyiPool(gamma="grid")`` over 10 log-spaced γ in [0.01, 1] (continuation
  from the log pool's weights up the grid, each fit warm-started from the previous one), time and
  ratio to the log pool;
- with ``--shapes``: instead, the fit at each ``--shape-classes`` x ``--shape-agents`` (items enough
  for ``--shape-entries`` numbers) against the log pool's, medians of ``--reps`` interleaved runs.

Before the timed runs, one untimed ``LogPool().fit`` of the same data (``--no-first-touch`` skips it):
on this project's VMs the first fit of a process pays the hypervisor's first touch of its memory
(seconds of system time: ``benchmarks/bench_fresh_memory.py``), a cost of the process, not of the
method, which would otherwise fall on whichever fit runs first (the log pool, the reference).

Run (results in ``benchmarks/results/core-at-scale-renyi-weights-session7.md`` and ``-session8.md``)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python \\
        benchmarks/bench_renyi_competition.py --families competition gaussian-logit noise --n 2000 5000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.logpool import LogPool  # noqa: E402
from aggregators.renyi import RenyiPool  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402

SWEEP = tuple(float(g) for g in np.logspace(-2, 0, 10))


def _timed(make, X, y):
    """``(wall s, cpu s, fitted pool)`` of one fit (warnings silenced; ``converged_`` is reported)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, c = time.perf_counter(), time.process_time()
        pool = make().fit(X, y)
        return time.perf_counter() - t, time.process_time() - c, pool


def _add(runs: dict, key, make, X, y):
    """Time one more fit of ``key``; its runs are summarised by their median (see :func:`_median`)."""
    runs.setdefault(key, []).append(_timed(make, X, y))


def _median(runs: dict, key):
    """``(median wall s, median cpu s, pool of the median-wall run)`` of ``key``'s interleaved runs."""
    rs = sorted(runs[key], key=lambda r: r[0])
    return float(np.median([r[0] for r in rs])), float(np.median([r[1] for r in rs])), rs[len(rs) // 2][2]


def shapes_table(a) -> None:
    """``--shapes``: the learnt-weight fit at each (classes, agents) of the grid against the log pool's,
    same data, interleaved repetitions, medians (items: ``--shape-entries`` / (agents x classes),
    clamped to [20, max(--n)])."""
    print(
        "| family | classes | agents | n | γ | LogPool cpu s | Rényi cpu s | cpu x log pool | wall x log pool | active |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for K in a.shape_classes:
            for A in a.shape_agents:
                n = int(min(max(a.n), max(20, a.shape_entries // (A * K))))
                X, y = make_family(fam, n, A, K, a.seed)
                for g in a.gammas:
                    runs: dict = {}
                    for _ in range(a.reps):
                        _add(runs, "log", LogPool, X, y)
                        _add(runs, g, lambda g=g: RenyiPool(gamma=g), X, y)
                    t_log, c_log, _ = _median(runs, "log")
                    dt, dc, pool = _median(runs, g)
                    print(
                        f"| {fam} | {K} | {A} | {n} | {g} | {c_log:.3f} | {dc:.3f} | {dc / c_log:.1f} | "
                        f"{dt / t_log:.1f} | {np.count_nonzero(pool.weights_)} |",
                        flush=True,
                    )
                del X, y


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=["competition"], choices=FAMILIES)
    ap.add_argument("--n", type=int, nargs="+", default=[2000])
    ap.add_argument("--agents", type=int, default=269)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--gammas", type=float, nargs="+", default=[0.1, 0.5])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=1, help="interleaved repetitions of the log-pool and Newton fits")
    ap.add_argument("--spg", action="store_true", help="also fit by projected gradient (slow)")
    ap.add_argument("--sweep", action="store_true", help="also the 10-value γ sweep")
    ap.add_argument("--shapes", action="store_true", help="the (classes x agents) grid instead")
    ap.add_argument("--shape-classes", type=int, nargs="+", default=[2, 16, 64, 256, 1024])
    ap.add_argument("--shape-agents", type=int, nargs="+", default=[2, 10, 100, 1000])
    ap.add_argument("--shape-entries", type=int, default=4_000_000, help="items x agents x classes per cell")
    ap.add_argument(
        "--no-first-touch",
        action="store_true",
        help="skip the untimed log-pool fit that first faults in the process's memory (see the module doc)",
    )
    a = ap.parse_args(argv)
    print(f"# load {os.getloadavg()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    # compile / load every kernel on a small problem first
    Xs, ys = make_family("competition", 200, 30, a.classes, 1)
    LogPool().fit(Xs, ys)
    RenyiPool(gamma=0.3).fit(Xs, ys)
    if a.shapes:
        shapes_table(a)
        print(f"# load at the end {os.getloadavg()}")
        return
    print(
        "| family | n | fit | wall s | cpu s | wall x log pool | cpu x log pool | iters | working sets | sweeps/item "
        "| active | converged | Newton - SPG loglik |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for fam in a.families:
        for n in a.n:
            X, y = make_family(fam, n, a.agents, a.classes, a.seed)
            runs: dict = {}
            if not a.no_first_touch:
                t_first = _timed(LogPool, X, y)[0]
                print(
                    f"# {fam} {n}: untimed first log-pool fit (the process's first touch of its memory) {t_first:.2f} s"
                )
            for _ in range(a.reps):  # interleaved, so that a change of the machine's load hits every fit
                _add(runs, "log", LogPool, X, y)
                for g in a.gammas:
                    _add(runs, g, lambda g=g: RenyiPool(gamma=g), X, y)
                if a.sweep:
                    _add(runs, "sweep", lambda: RenyiPool(gamma="grid", gamma_grid=SWEEP), X, y)
            for g in a.gammas if a.spg else ():
                _add(runs, ("spg", g), lambda g=g: RenyiPool(gamma=g, solver="projected_gradient"), X, y)
            t_log, c_log, lp = _median(runs, "log")
            row = f"| {fam} | {n} |"
            print(
                f"{row} LogPool | {t_log:.2f} | {c_log:.2f} | 1 | 1 | {lp.fit_result_.n_iter} | | | "
                f"{np.count_nonzero(lp.weights_)} | {lp.fit_result_.converged} | |"
            )
            for key, label in (
                [(g, f"Rényi γ={g} Newton") for g in a.gammas]
                + [(("spg", g), f"Rényi γ={g} SPG") for g in a.gammas if a.spg]
                + ([("sweep", "Rényi 10-γ sweep")] if a.sweep else [])
            ):
                dt, dc, pool = _median(runs, key)
                res = pool.fit_result_
                gap = ""
                if isinstance(key, tuple):
                    gap = f"{_median(runs, key[1])[2].loglik_ - pool.loglik_:.1e}"
                if key == "sweep":
                    label += f" (best γ {pool.gamma_:.3g})"
                print(
                    f"{row} {label} | {dt:.2f} | {dc:.2f} | {dt / t_log:.1f} | {dc / c_log:.1f} | {res.n_iter} | "
                    f"{res.extra.get('working_set_sizes', '')} | {pool.n_fixed_point_sweeps_ / n:.0f} | "
                    f"{np.count_nonzero(pool.weights_)} | {pool.converged_} | {gap} |",
                    flush=True,
                )
            print(f"# every run's wall s: { {str(k): [round(r[0], 2) for r in v] for k, v in runs.items()} }")
            del X, y, runs
    print(f"# load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
