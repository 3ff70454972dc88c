"""Benchmark: the Rényi fixed point (seed 000, Eq. 2.8) to 1e-10, Newton vs the plain iteration.

At the scale of the seed's competition, (n_items, n_agents, n_classes) = (20,000, 269, 64), with
the synthetic agents of :func:`benchmarks.competition_data.make_competition_predictions`, uniform
weights, and γ in {1, 0.5, 0.1, 1/30, 0.01}. For every γ, in the same run:

- ours: ``method="newton"`` (Newton in log coordinates, a K x K Cholesky per item);
- peer: ``method="plain"``, the iteration of Eq. (2.8) as written, with the same start (the power
  mean, exact at γ = 1 and as γ → 0) and the same matrix-vector evaluation, capped at
  ``--plain-cap`` sweeps per item; and, uncapped, on the first ``--sub-items`` items, to measure
  how many sweeps it really needs.

A *sweep* is one pass over an item's agent data: the setup pass (``exp(γ log P_i)``) plus every
evaluation of the fixed-point map (line-search trials included). Newton's sweeps also build the
K x K matrix ``H`` (about 2 A K^2 flops per item against 2 A K for a plain sweep): seconds are the
honest cost. Stopping rule for both: the log-space residual ``max_y |log F(Q) - log Q| <= 1e-10``.
"error" is the largest absolute log-probability difference to a tight reference (Newton, tol 1e-13).

Run (results in ``benchmarks/results/renyi.md``)::

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_renyi_fixed_point.py
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.renyi_fixed_point import solve_fixed_point  # noqa: E402
from benchmarks.harness import timed  # noqa: E402


def data(n_items: int, n_agents: int, n_classes: int, seed: int):
    from benchmarks.competition_data import make_competition_predictions

    return make_competition_predictions(n_items, n_agents, n_classes, seed)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-items", type=int, default=20_000)
    ap.add_argument("--n-agents", type=int, default=269)
    ap.add_argument("--n-classes", type=int, default=64)
    ap.add_argument("--gammas", type=str, default="1,0.5,0.1,0.0333333333333333,0.01")
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--plain-cap", type=int, default=400, help="sweeps per item allowed to the plain iteration")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the Newton solve (median reported)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sub-items", type=int, default=500, help="items of the uncapped plain run (sweeps it needs)")
    args = ap.parse_args(argv)

    import numba

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"numba threads {numba.get_num_threads()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    t = time.perf_counter()
    L, _ = data(args.n_items, args.n_agents, args.n_classes, args.seed)
    print(f"data {L.shape} generated in {time.perf_counter() - t:.1f} s")
    n, A, K = L.shape
    w = np.full(A, 1.0 / A)

    # compile (or load the cache) apart from the timings
    t = time.perf_counter()
    for m in ("newton", "plain"):
        for stable in (False, True):
            solve_fixed_point(L[:2], w, np.full(A, 0.5), method=m, stable=stable)
            solve_fixed_point(L[:2000], w, np.full(A, 0.5), method=m, stable=stable, max_iter=3)
    print(f"compile / cache load: {time.perf_counter() - t:.1f} s (not in the timings)")

    gammas = [float(g) for g in args.gammas.split(",")]
    rows = []
    for g in gammas:
        gam = np.full(A, g)
        ref = solve_fixed_point(L, w, gam, method="newton", tol=1e-13).log_q
        tn, rn = timed(lambda: solve_fixed_point(L, w, gam, method="newton", tol=args.tol), args.reps)
        tp, rp = timed(lambda: solve_fixed_point(L, w, gam, method="plain", tol=args.tol, max_iter=args.plain_cap), 1)
        row = {
            "gamma": g,
            "newton_sweeps_max": rn.max_sweeps,
            "newton_sweeps_mean": float(rn.sweeps.mean()),
            "newton_s": tn,
            "newton_conv": rn.all_converged,
            "newton_err": float(np.abs(rn.log_q - ref).max()),
            "plain_sweeps_max": rp.max_sweeps,
            "plain_sweeps_mean": float(rp.sweeps.mean()),
            "plain_s": tp,
            "plain_conv_frac": float(rp.converged.mean()),
            "plain_res": float(rp.residual.max()),
            "plain_err": float(np.abs(rp.log_q - ref).max()),
        }
        if args.sub_items <= 0:
            rows.append(row)
            print(row, flush=True)
            continue
        sub = slice(0, min(n, args.sub_items))
        ts, rs = timed(lambda: solve_fixed_point(L[sub], w, gam, method="plain", tol=args.tol, max_iter=100_000), 1)
        row.update(
            sub_sweeps_max=rs.max_sweeps,
            sub_sweeps_mean=float(rs.sweeps.mean()),
            sub_conv=rs.all_converged,
            sub_s=ts,
            sub_err=float(np.abs(rs.log_q - ref[sub]).max()),
        )
        rows.append(row)
        print(row, flush=True)

    print()
    print(
        f"Rényi fixed point to {args.tol:g}, (n, A, K) = ({n}, {A}, {K}), uniform weights; "
        f"Newton median of {args.reps}, plain 1 run capped at {args.plain_cap} sweeps/item"
    )
    hdr = (
        "| γ | Newton sweeps (max / mean) | Newton s | Newton error | plain sweeps (max / mean) | plain s "
        "| plain reached 1e-10 | plain max residual | plain error | time ratio plain/Newton |"
    )
    print(hdr)
    print("|" + "---|" * 10)
    for r in rows:
        reached = "all items" if r["plain_conv_frac"] == 1.0 else f"{100 * r['plain_conv_frac']:.1f}% of items (cap)"
        print(
            f"| {r['gamma']:.4g} | {r['newton_sweeps_max']} / {r['newton_sweeps_mean']:.2f} | {r['newton_s']:.2f} "
            f"| {r['newton_err']:.1e} | {r['plain_sweeps_max']} / {r['plain_sweeps_mean']:.1f} | {r['plain_s']:.2f} "
            f"| {reached} | {r['plain_res']:.1e} | {r['plain_err']:.1e} | {r['plain_s'] / r['newton_s']:.1f} |"
        )
    if args.sub_items <= 0:
        return
    print()
    print(f"Plain iteration without a cap on the first {min(n, args.sub_items)} items (same data):")
    print("| γ | plain sweeps to 1e-10 (max / mean) | all converged | seconds | error vs reference |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['gamma']:.4g} | {r['sub_sweeps_max']} / {r['sub_sweeps_mean']:.1f} | {r['sub_conv']} "
            f"| {r['sub_s']:.2f} | {r['sub_err']:.1e} |"
        )


if __name__ == "__main__":
    main()
