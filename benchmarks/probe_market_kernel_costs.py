"""Probe: what each compiled kernel of one general-path market item costs (issue #13 §1; session 55).

For each shape ``KxA`` one item of :func:`benchmarks.bench_markets_grid.family` (``--family``) with the
agents of :func:`benchmarks.bench_markets_grid.utilities` (``--utilities``) and wealth uniform(0.2, 1)
(seed 1), floored at 1e-9 as the grid's calls are, is set up at the default start, and each kernel is
called ``N`` times in a compiled loop; the best of five loops is printed in µs per call:

- the start: the fused floor and powers of the item (``floor_powers_item``), the starting prices
  (``init_prices``), one evaluation with the potential (``evaluate``), one without (``evaluate_spending``),
  and one pass of the seed's fixed point (its prices, then the evaluation without the potential);
- a Newton step's pieces: the diagonal (``general_diagonal``), the right-hand side (``newton_rhs``), and,
  where the market has at most ``WOODBURY_MAX_ROWS`` agents of order below one, the Woodbury direction
  and the corrector's right-hand side with the re-solve of that direction.

Times the kernels alone, not a solve: ``bench_market_item_overhead.py --max-iters`` gives the steps as
taken. Session 55 used it on the mixed markets the grid misses 0.2x on
(``benchmarks/results/session55.md``).

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache \\
        .venv/bin/python benchmarks/probe_market_kernel_costs.py --family logit --utilities mix --shapes 256x10,256x100
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
from markets.agents import make_agents  # noqa: E402
from markets.kernels.corrector import corrector_rhs  # noqa: E402
from markets.kernels.equilibrium import fixed_point_prices  # noqa: E402
from markets.kernels.floor import floor_powers_item  # noqa: E402
from markets.kernels.newton_cg import general_diagonal, newton_rhs  # noqa: E402
from markets.kernels.potential import evaluate, evaluate_spending, init_prices  # noqa: E402
from markets.kernels.woodbury import (  # noqa: E402
    WOODBURY_MAX_ROWS,
    woodbury_direction,
    woodbury_resolve,
    woodbury_rows,
    woodbury_scratch_size,
)


@njit
def _floor_powers(N, L, Lf, e, kind, ie, Pg):
    for _ in range(N):
        floor_powers_item(L, Lf, 1e-9, e, kind, ie, Pg)


@njit
def _init(N, L, kind, ie, W, Pg, u):
    for _ in range(N):
        init_prices(L, kind, ie, W, Pg, u)


@njit
def _eval(N, spending, L, kind, ie, W, Ws, u, Pg, Q, B, T, cp):
    s = 0.0
    for _ in range(N):
        if spending:  # without the potential
            s += evaluate_spending(L, kind, ie, W, Ws, u, Pg, Q, B, T, cp)[1]
        else:
            s += evaluate(L, kind, ie, W, Ws, u, Pg, Q, B, T, cp)[1]
    return s


@njit
def _fp_pass(N, L, kind, ie, W, Ws, u, Pg, Q, B, T, cp, x):
    s = 0.0
    for _ in range(N):
        fixed_point_prices(u, T, x)
        s += evaluate_spending(L, kind, ie, W, Ws, u, Pg, Q, B, T, cp)[1]
    return s


@njit
def _diag(N, kind, ie, W, Q, u, dg, h):
    for _ in range(N):
        general_diagonal(kind, ie, W, Q, u, dg, h)


@njit
def _rhs(N, u, T, Ws, b, c, x):
    for _ in range(N):
        newton_rhs(u, T, Ws, 1, b, c, x)


@njit
def _woodbury(N, kind, ie, W, Q, c, dg, h, b, d, V, Ew, S):
    ok = True
    for _ in range(N):
        ok &= woodbury_direction(kind, ie, W, Q, c, dg, h, 1.0, b, d, V, Ew, S)
    return ok


@njit
def _corrector(N, kind, ie, W, Ws, Q, T, u, d, b2, work, V, Ew, d2, S):
    for _ in range(N):
        corrector_rhs(kind, ie, W, Ws, Q, T, u, d, b2, work)
        woodbury_resolve(V, Ew, b2, d2, S)


def best_us(f, args, n):
    f(2, *args)
    best = np.inf
    for _ in range(5):
        t0 = time.process_time()
        f(n, *args)
        best = min(best, (time.process_time() - t0) / n)
    return best * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", default="logit")
    ap.add_argument("--utilities", default="mix")
    ap.add_argument("--shapes", default="256x10,1024x10,256x100")
    args = ap.parse_args(argv)
    for shape in args.shapes.split(","):
        K, A = (int(v) for v in shape.split("x"))
        lp = as_log_probs(family(args.family, 1, A, K)).log_probs[0].copy()
        ag = make_agents(utilities(args.utilities, A), np.random.default_rng(1).uniform(0.2, 1.0, A))
        kind, ie = ag.kind, ag.inv_eta
        W = ag.wealth / ag.wealth.sum()
        Ws = W.sum()
        Lf, e = np.empty((A, K)), np.empty(K)
        Pg, Q, B = np.empty((A, K)), np.empty((A, K)), np.empty((A, K))
        T, cp, x = np.zeros(K), np.zeros(K), np.empty(K)
        floor_powers_item(lp, Lf, 1e-9, e, kind, ie, Pg)
        u0 = np.zeros(K)
        init_prices(Lf, kind, ie, W, Pg, u0)
        u = u0.copy()
        evaluate(Lf, kind, ie, W, Ws, u, Pg, Q, B, T, cp)
        n = max(20, 2_000_000 // (A * K))
        out = {
            "floor+powers": best_us(_floor_powers, (lp, Lf, e, kind, ie, Pg), n),
            "init_prices": best_us(_init, (Lf, kind, ie, W, Pg, u.copy()), n),
            "evaluate": best_us(_eval, (False, Lf, kind, ie, W, Ws, u, Pg, Q, B, T, cp), n),
            "evaluate_spending": best_us(_eval, (True, Lf, kind, ie, W, Ws, u, Pg, Q, B, T, cp), n),
        }
        u[:] = u0
        evaluate(Lf, kind, ie, W, Ws, u, Pg, Q, B, T, cp)
        dg, h, b, c, d = (np.empty(K) for _ in range(5))
        general_diagonal(kind, ie, W, Q, u, dg, h)
        newton_rhs(u, T, Ws, 1, b, c, x)
        out["diagonal"] = best_us(_diag, (kind, ie, W, Q, u, dg, h), n)
        out["rhs"] = best_us(_rhs, (u, T, Ws, b, c, x), n)
        rows = woodbury_rows(kind, ie, W)
        if rows <= WOODBURY_MAX_ROWS:
            V, Ew, S = np.empty((rows + 2, K)), np.empty((rows, rows)), np.empty(woodbury_scratch_size(rows))
            woodbury_direction(kind, ie, W, Q, c, dg, h, 1.0, b, d, V, Ew, S)
            out[f"woodbury ({rows} rows)"] = best_us(_woodbury, (kind, ie, W, Q, c, dg, h, b, d, V, Ew, S), n)
            b2, work, d2 = np.empty(K), np.empty(4 * K), np.empty(K)
            out["corrector+resolve"] = best_us(_corrector, (kind, ie, W, Ws, Q, T, u, d, b2, work, V, Ew, d2, S), n)
        # the pass last: it moves u
        out["fixed-point pass"] = best_us(_fp_pass, (Lf, kind, ie, W, Ws, u, Pg, Q, B, T, cp, x), n)
        print(f"{args.family} {args.utilities} {K}x{A} | " + " | ".join(f"{k} {v:.1f}" for k, v in out.items()))


if __name__ == "__main__":
    main()
