"""Benchmarks of machine learning markets (issue [markets]).

1. Isoelastic equilibrium at (items, agents, goods) = (100,000, 100, 10) for eta in {2, 10, 30}:
   seconds and iterations to a relative clearing error of 1e-10, our safeguarded Newton against the
   seed's method (Storkey et al. 2012: c <- sum_i r_i(c), alternating minimisation of
   KL(c || sum_i r_i)), both run by the same compiled per-item driver in the same process (for
   these one-order markets both take the same lean kernel path: same P^(1/eta) storage and spending
   evaluation; the fixed point skips the potential it does not need), and the largest price
   difference between the two answers. "floor" times what every method must do on this path
   (``P^(1/eta)``, the start and one pass to check it: ``max_iter=0``); seed FP / floor bounds the
   speed-up any method could show against the seed's method here.
2. One epoch of batch market training at the competition scale (20,000 items, 269 agents,
   64 goods; eta = 30 as the seed's Rényi gamma = 1/30): seconds, against the foundation's Rényi fixed
   point (``aggregators.renyi.renyi_aggregate``, Newton and plain) on the same data and weights.

With ``--interleaved ROUNDS`` the equilibrium rows are timed in rounds that call Newton, the seed's method
and the floor call once each, in turn (CPU seconds, median of the rounds, and the speed-up of each round):
on this shared 2-vCPU machine the two sides timed minutes apart moved the eta = 10 ratio between 9.5x and
14.3x (session 47); in one round both see the same phase.

Protocol (notes/solver-benchmarks.md section 7): median of ``--reps`` repetitions, compile time paid
by a warm-up call on a small problem and excluded, fixed seeds. Threads: numba uses
NUMBA_NUM_THREADS (default: all cores) for the per-item loop in every method compared; BLAS is not
used. Run e.g.:

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_markets.py
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.harness import timed  # noqa: E402
from markets import equilibrium, train_market  # noqa: E402


def synthetic_beliefs(n, a, k, seed=0):
    """Agents that scatter around a latent truth: P_i ~ Dirichlet(s_i * p*), s_i in [2, 50]."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(k), size=n)
    s = np.exp(rng.uniform(np.log(2), np.log(50), a))
    out = np.empty((n, a, k))
    for start in range(0, n, 10_000):
        sl = slice(start, min(n, start + 10_000))
        g = rng.standard_gamma(s[None, :, None] * truth[sl, None, :] + 1e-3)
        g = np.maximum(g, 1e-300)
        out[sl] = np.log(g / g.sum(axis=2, keepdims=True))
    w = rng.uniform(0.2, 1.0, a)
    return out, w / w.sum()


def bench_equilibrium_interleaved(lp, w, etas, rounds, tol):
    """The equilibrium rows by :func:`benchmarks.harness.interleaved`: each round calls Newton, the seed's
    fixed point and the floor call once, in turn, so that a slow phase of a shared machine hits all three
    alike; CPU seconds (one process), median of ``rounds``; the speed-up is also given per round (the
    fixed point's time over Newton's in the same round), least to largest."""
    for eta in etas:
        fns = [
            lambda x=lp: equilibrium(x, eta, w, method="newton", tol=tol, check=False, floor=None),
            lambda x=lp: equilibrium(x, eta, w, method="fixed_point", tol=tol, check=False, floor=None),
            lambda x=lp: equilibrium(x, eta, w, method="fixed_point", tol=tol, check=False, floor=None, max_iter=0),
        ]
        for fn in fns:  # compile / load every specialisation these calls take, on 50 items
            fn(lp.log_probs[:50])
        cpu: list[list[float]] = [[], [], []]
        outs = [None, None, None]
        for _ in range(rounds):
            for j, fn in enumerate(fns):
                t = time.process_time()
                outs[j] = fn()
                cpu[j].append(time.process_time() - t)
        rn, rf = outs[0], outs[1]
        t_n, t_f, t_0 = (float(np.median(c)) for c in cpu)
        per_round = sorted(f / n for f, n in zip(cpu[1], cpu[0]))
        diff = float(np.max(np.abs(rn.log_prices - rf.log_prices)))
        print(
            f"| {eta:g} | {t_n:.2f} | {rn.n_iter.mean():.1f} / {rn.n_iter.max()} | {rn.all_converged} | "
            f"{t_f:.2f} | {rf.n_iter.mean():.1f} / {rf.n_iter.max()} | {rf.all_converged} | "
            f"{t_f / t_n:.1f}x (rounds: {', '.join(f'{r:.1f}' for r in per_round)}) | {t_0:.3f} | {t_f / t_0:.1f}x "
            f"| {diff:.1e} |",
            flush=True,
        )


def bench_equilibrium(n, a, k, etas, reps, tol, baseline_reps, rounds=0):
    from aggregators.validation import as_log_probs

    lp, w = synthetic_beliefs(n, a, k)
    lp = as_log_probs(lp)  # validate once: the timings below are the solvers' alone
    small = lp.log_probs[:50]
    for m in ("newton", "fixed_point"):  # compile / load cache
        equilibrium(small, 2.0, w, method=m, check=False)
    if rounds:
        return bench_equilibrium_interleaved(lp, w, etas, rounds, tol)
    rows = []
    for eta in etas:
        t_n, rn = timed(lambda: equilibrium(lp, eta, w, method="newton", tol=tol, check=False, floor=None), reps)
        t_f, rf = timed(
            lambda: equilibrium(lp, eta, w, method="fixed_point", tol=tol, check=False, floor=None), baseline_reps
        )
        diff = float(np.max(np.abs(rn.log_prices - rf.log_prices)))
        # floor for any method on this path: P^(1/eta), the start and one pass to check it
        t_0, _ = timed(
            lambda: equilibrium(lp, eta, w, method="fixed_point", tol=tol, check=False, floor=None, max_iter=0), reps
        )
        rows.append((eta, t_n, rn, t_f, rf, diff, t_0))
        print(
            f"| {eta:g} | {t_n:.2f} | {rn.n_iter.mean():.1f} / {rn.n_iter.max()} | {rn.all_converged} | "
            f"{t_f:.2f} | {rf.n_iter.mean():.1f} / {rf.n_iter.max()} | {rf.all_converged} | "
            f"{t_f / t_n:.1f}x | {t_0:.3f} | {t_f / t_0:.1f}x | {diff:.1e} |",
            flush=True,
        )
    return rows


def bench_epoch(n, a, k, eta, reps, n_slow):
    from benchmarks.competition_data import make_competition_predictions

    lp, y = make_competition_predictions(n, a, k, seed=0)
    # both sides validate their input inside the timed call (train_market and renyi_aggregate)
    gamma = 1.0 / eta
    train_market(lp[:20], y[:20], eta, max_epochs=1)  # compile
    t_m, res = timed(lambda: train_market(lp, y, eta, mode="batch", max_epochs=1, wealth_tol=0), reps)
    print(
        f"| market epoch, Newton (ours) | {t_m:.2f} | mean iter {res.n_equilibrium_iter / n:.1f} | "
        f"conservation {res.conservation_error:.1e} |",
        flush=True,
    )
    # the slow methods run on the first n_slow items only (stated in the table)
    sub = slice(0, n_slow)
    t_ns, resns = timed(lambda: train_market(lp[sub], y[sub], eta, mode="batch", max_epochs=1, wealth_tol=0), 1)
    print(
        f"| market epoch, Newton (ours), first {n_slow} items | {t_ns:.2f} | mean iter "
        f"{resns.n_equilibrium_iter / n_slow:.1f} | |",
        flush=True,
    )
    t_f, resf = timed(
        lambda: train_market(lp[sub], y[sub], eta, mode="batch", max_epochs=1, wealth_tol=0, method="fixed_point"), 1
    )
    print(
        f"| market epoch, seed fixed point, first {n_slow} items | {t_f:.2f} | mean iter "
        f"{resf.n_equilibrium_iter / n_slow:.1f} | max wealth diff vs Newton "
        f"{np.max(np.abs(resf.wealth - resns.wealth)):.1e}; ratio {t_f / t_ns:.1f}x |",
        flush=True,
    )
    try:
        from aggregators.renyi import renyi_aggregate
    except ImportError:
        print("| aggregators.renyi not available | | | |")
        return
    wts = np.full(a, 1.0 / a)  # w_i ∝ W_i gamma_i: uniform for equal wealth and one gamma
    renyi_aggregate(lp[:20], wts, gamma)
    ref = equilibrium(lp, eta, wts, check=False).log_prices
    t_r, agg = timed(lambda: renyi_aggregate(lp, wts, gamma, method="newton", tol=1e-10), reps)
    print(
        f"| Rényi aggregate (H3), newton | {t_r:.2f} | | max abs(log c - agg) {np.max(np.abs(agg - ref)):.1e}; "
        f"market epoch / aggregate {t_m / t_r:.2f} |",
        flush=True,
    )
    t_r, agg = timed(lambda: renyi_aggregate(lp[sub], wts, gamma, method="plain", tol=1e-10), 1)
    print(
        f"| Rényi aggregate (H3), plain, first {n_slow} items | {t_r:.2f} | | max abs(log c - agg) "
        f"{np.max(np.abs(agg - ref[sub])):.1e} |",
        flush=True,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--agents", type=int, default=100)
    p.add_argument("--goods", type=int, default=10)
    p.add_argument("--etas", type=float, nargs="+", default=[2.0, 10.0, 30.0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--baseline-reps", type=int, default=1)
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument(
        "--interleaved",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="equilibrium rows in ROUNDS interleaved rounds (Newton, fixed point, floor in turn), CPU seconds",
    )
    p.add_argument("--epoch-items", type=int, default=20_000)
    p.add_argument("--epoch-agents", type=int, default=269)
    p.add_argument("--epoch-goods", type=int, default=64)
    p.add_argument("--epoch-slow-items", type=int, default=2000, help="items of the plain fixed points' epoch")
    p.add_argument("--skip-equilibrium", action="store_true")
    p.add_argument("--skip-epoch", action="store_true")
    args = p.parse_args(argv)
    import numba

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"numba threads {numba.get_num_threads()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"cpu {platform.processor() or platform.machine()}, load avg {os.getloadavg()}"
    )
    if not args.skip_equilibrium:
        print(
            f"\n### Isoelastic equilibrium, {args.items} items x {args.agents} agents x {args.goods} goods, "
            f"tol {args.tol:g} ("
            + (
                f"median CPU s of {args.interleaved} interleaved rounds"
                if args.interleaved
                else f"median of {args.reps} for Newton, {args.baseline_reps} for the seed's method"
            )
            + ")\n"
        )
        print(
            "| eta | Newton s | Newton iter mean / max | conv | seed FP s | seed FP iter mean / max | conv | "
            "speed-up | floor s | seed FP / floor | max abs Δ log c |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        bench_equilibrium(
            args.items, args.agents, args.goods, args.etas, args.reps, args.tol, args.baseline_reps, args.interleaved
        )
    if not args.skip_epoch:
        print(
            f"\n### One batch training epoch, {args.epoch_items} x {args.epoch_agents} x {args.epoch_goods}, "
            f"eta 30 (gamma 1/30), equal initial wealth\n"
        )
        print("| what | seconds | iterations | check |")
        print("|---|---|---|---|")
        bench_epoch(
            args.epoch_items,
            args.epoch_agents,
            args.epoch_goods,
            30.0,
            args.reps,
            min(args.epoch_slow_items, args.epoch_items),
        )


if __name__ == "__main__":
    main()
