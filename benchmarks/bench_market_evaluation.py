"""Benchmark: one evaluation and one start of the general market path, in a compiled loop (µs per call).

For utilities ``mix`` (eta 2, 10, 30, log repeating) or ``spread`` (every agent its own eta, log-uniform in
[1.2, 40]; :data:`benchmarks.bench_markets_grid.SPREADS`) and each shape ``KxA``: logit beliefs of one item
(floored at 1e-9), the powers and the start computed once, then
:func:`markets.kernels.potential.evaluate` (spending, potential, residual: one pass of the seed's fixed
point) and :func:`markets.kernels.potential.init_prices` (the start) each called in a compiled loop; the
least per-call time of five loops. Session 48 used it to time the grouping of agents by order (an eta per
agent made both quadratic in the agents before ``potential.order_links``), in two trees alternately.

    PYTHONPATH=. OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_market_evaluation.py \\
        --utilities mix,spread --shapes 16x100,16x1000,64x1000,1024x1000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.validation import as_log_probs  # noqa: E402
from benchmarks.bench_markets_grid import family, utilities  # noqa: E402
from markets.agents import floor_beliefs, make_agents  # noqa: E402
from markets.kernels import equilibrium as keq  # noqa: E402
from markets.kernels.potential import evaluate, init_prices, powers  # noqa: E402


@njit(cache=True)
def _evaluations(L, kind, inv_eta, W, Wsum, x, Pg, Q, B, T, cp, reps):
    s = 0.0
    for _ in range(reps):
        s += evaluate(L, kind, inv_eta, W, Wsum, x, Pg, Q, B, T, cp)[1]
    return s


@njit(cache=True)
def _starts(L, kind, inv_eta, W, Pg, x, reps):
    for _ in range(reps):
        init_prices(L, kind, inv_eta, W, Pg, x)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--utilities", default="mix,spread")
    ap.add_argument("--shapes", default="16x2,16x10,16x100,16x1000,64x1000,256x100,1024x1000")
    ap.add_argument("--work", type=float, default=2e7, help="beliefs evaluated per timed loop")
    args = ap.parse_args(argv)
    print("| utilities | K x A | evaluate µs | start µs |")
    print("|---|---|---|---|")
    for spec in args.utilities.split(","):
        for shape in args.shapes.split(","):
            k, a = (int(v) for v in shape.split("x"))
            L = np.ascontiguousarray(floor_beliefs(as_log_probs(family("logit", 1, a, k)), 1e-9).log_probs[0])
            rng = np.random.default_rng(2)
            ag = make_agents(utilities(spec, a), rng.uniform(0.2, 1.0, a), a)
            kd, g, W = ag.kind, ag.inv_eta, ag.wealth
            Pg, Q, B, T, cp = keq._general_buffers(a, k)
            x = np.zeros(k)
            powers(L, kd, g, Pg)
            init_prices(L, kd, g, W, Pg, x)
            Ws = float(W.sum())
            reps = max(1, int(args.work // (a * k)))
            _evaluations(L, kd, g, W, Ws, x, Pg, Q, B, T, cp, 1)
            _starts(L, kd, g, W, Pg, x.copy(), 1)
            te = ts = np.inf
            for _ in range(5):
                t = time.process_time()
                _evaluations(L, kd, g, W, Ws, x, Pg, Q, B, T, cp, reps)
                te = min(te, (time.process_time() - t) / reps * 1e6)
                y = x.copy()
                t = time.process_time()
                _starts(L, kd, g, W, Pg, y, reps)
                ts = min(ts, (time.process_time() - t) / reps * 1e6)
            print(f"| {spec} | {k} x {a} | {te:.2f} | {ts:.2f} |", flush=True)


if __name__ == "__main__":
    main()
