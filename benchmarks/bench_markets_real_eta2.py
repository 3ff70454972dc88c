"""η = 2 markets on real predictions: the demo competition's agents (seed 000 Algorithm 2.3 on scikit-image's
bundled natural images, :mod:`evaluation.demo_task`: linear predictors, LOCO-I's median edge detector, context
histograms, nearest neighbours... each a 64-class distribution of a pixel's grey level).

For the first A agents of that field (A in ``--agents``): CPU seconds (medians of ``--reps`` interleaved rounds)
of ``equilibrium(beliefs, 2.0, method=m, tol=1e-10, check=False)`` for ``auto`` (``gram`` wherever
``gram_max_agents(64) = 16`` allows), ``newton_cg``, ``anderson`` and the seed's ``fixed_point``; the ratios to
the fixed point; the largest log-price difference between auto and the fixed point; and the same for five
epochs of batch market training (``train_market(..., mode="batch", max_epochs=5, wealth_tol=0)``) on the
test pixels' labels. ``--utilities mix``: the same agents as a mixed market (η = 2, 10, 30 and log, interleaved
agent by agent, as ``bench_markets_grid.py`` lists them; ``auto`` then takes Newton-CG on the general path);
``--utilities spread-low``: every agent its own eta, log-uniform in 1.01-3 (the grid's ``spread-low``); ``10``:
one order, eta = 10. ``--levels 256``: the same task and field over 256 grey levels (the photographs' own 8
bits, :mod:`evaluation.demo_task`'s ``levels``), the one real data set here with K >= 256 classes (session 56).
``--calls equilibrium`` leaves out the training. ``--validated``: the beliefs are validated once
(:func:`aggregators.validation.as_log_probs`) outside the timed calls, as ``bench_markets_grid.py`` does; without
it every timed call validates its raw array (a cost both sides share, which pulls the ratios towards 1; the
default, as in sessions 35-39).

    PYTHONPATH=$PWD NUMBA_CACHE_DIR=$PWD/.numba_cache OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_markets_real_eta2.py
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aggregators.validation import as_log_probs  # noqa: E402
from benchmarks.bench_markets_grid import utilities  # noqa: E402
from benchmarks.harness import against_last, interleaved  # noqa: E402
from evaluation.demo_task import K, make_demo_data  # noqa: E402
from markets import equilibrium, train_market  # noqa: E402

METHODS = ("auto", "newton_cg", "anderson", "fixed_point")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", default="2,4,8,16")
    ap.add_argument("--n-test", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--utilities", choices=("2", "10", "mix", "spread-low"), default="2")
    ap.add_argument("--levels", type=int, default=K, help="grey levels = classes (64: the demo's task)")
    ap.add_argument("--calls", default="equilibrium,training")
    ap.add_argument("--validated", action="store_true", help="validate once, outside the timed calls")
    args = ap.parse_args(argv)
    _, te, field = make_demo_data(n_train=30000, n_test=args.n_test, secret=1, levels=args.levels)
    logp = np.stack([a[2] for a in field], axis=1)  # (n, all agents, levels)
    logp = logp - np.log(np.exp(logp).sum(axis=2, keepdims=True))
    y = np.asarray(te.y, dtype=np.int64)
    for m in METHODS:  # load the compiled kernels before any timing
        for w in (2.0, [2.0, 10.0, "log"]):
            equilibrium(logp[:3, :3], w, method=m, check=False)
            train_market(logp[:3, :3], y[:3], w, method=m, max_epochs=1)
    n, n_agents, k = logp.shape
    print(f"utilities: {args.utilities}; field: {n_agents} agents, {n} pixels, {k} classes; load {os.getloadavg()}")
    print(
        "| A | call | auto method | "
        + " | ".join(f"{m} s" for m in METHODS)
        + " | "
        + " | ".join(f"{m} / FP" for m in METHODS[:-1])
        + " | max Δ |"
    )
    print("|---" * (4 + 2 * len(METHODS)) + "|", flush=True)
    for a in (int(v) for v in args.agents.split(",")):
        lp = np.ascontiguousarray(logp[:, :a])
        if args.validated:
            lp = as_log_probs(lp)
        u = float(args.utilities) if args.utilities in ("2", "10") else utilities(args.utilities, a)
        calls = {
            "equilibrium": [(lambda m=m: equilibrium(lp, u, method=m, tol=1e-10, check=False)) for m in METHODS],
            "training": [
                (lambda m=m: train_market(lp, y, u, mode="batch", method=m, max_epochs=5, wealth_tol=0))
                for m in METHODS
            ],
        }
        for name, fns in calls.items():
            if name not in args.calls.split(","):
                continue
            _, cpu, outs = interleaved(fns, args.reps, args.reps)
            if name == "equilibrium":
                how = outs[0].method
                diff = float(np.abs(outs[0].log_prices - outs[-1].log_prices).max())
                assert all(o.all_converged for o in outs)
            else:
                how = equilibrium(logp[:2, :a], u, check=False).method
                diff = float(np.abs(outs[0].wealth - outs[-1].wealth).max())
                assert all(o.all_equilibria_converged for o in outs)
            times, rel = against_last(cpu)
            print(f"| {a} | {name} | {how} | {times} | {rel} | {diff:.1e} |", flush=True)
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
