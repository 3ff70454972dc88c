"""Probe: Anderson acceleration of the frozen-normaliser map on the grid's mixed markets.

The frozen-normaliser step (:mod:`markets.kernels.normaliser`) is a map ``u -> F(u)`` on the log-prices whose
fixed point is the equilibrium; it contracts by 0.01-0.05 a step on the grid's Gaussian-logit and
near-duplicate families. Newton-CG takes it once or twice and then one corrected Newton step (two to three
times a frozen step's cost). This probe asks whether Anderson acceleration of the map (type II, memory
``m``: ``u+ = u + f - (dU + dF) gamma``, ``gamma`` the least-squares fit of ``f = F(u) - u`` by the last
``m`` differences ``dF``) could replace that Newton step: each of its iterations costs one evaluation and the
per-good solve, as a frozen step does. It prints the clearing residual after each evaluation (the first is
the start's) for ``m = 0`` (the plain map) and the memories asked, and the evaluations each needs to reach
``--tol``. Items of ``bench_markets_grid.py``'s families, ``utilities("mix")``, beliefs floored at 1e-9.
Times nothing: the per-step costs come from ``bench_market_item_overhead.py --method newton_cg
--max-iters 0,1,2,3,4`` (``benchmarks/results/session51.md``).

    .venv/bin/python benchmarks/probe_frozen_anderson.py --cells logit:256x100,dups:1024x1000
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_markets_grid import family, utilities  # noqa: E402

from markets import make_agents  # noqa: E402
from markets.kernels.normaliser import frozen_normaliser_step, order_groups, scratch_size  # noqa: E402
from markets.kernels.order_pcg import order_rows  # noqa: E402
from markets.kernels.potential import evaluate_into, init_prices, powers  # noqa: E402
from solvers.special import logsumexp  # noqa: E402

FLOOR = 1e-9


def market(fam, K, A, item):
    """Item ``item`` of the grid's family ``fam`` at K goods x A agents, floored, with the mixed utilities:
    ``(L, kind, inv_eta, W)``."""
    lp = family(fam, item + 1, A, K)[item]
    lp = np.log(np.maximum(np.exp(lp), FLOOR))
    lp -= logsumexp(lp, axis=1)[:, None]
    ag = make_agents(utilities("mix", A), np.random.default_rng(1).uniform(0.2, 1.0, A), A)
    return lp, ag.kind, ag.inv_eta, ag.wealth


def residuals(L, kind, inv_eta, W, mem, evals, tol):
    """Clearing residuals after each evaluation of Anderson(``mem``) on the frozen map from the default start
    (``mem = 0``: the plain map), at most ``evals`` evaluations, stopping below ``tol``."""
    A, K = L.shape
    G = order_rows(kind, inv_eta, K)
    Pg, Q, B = np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K))
    T, cp = np.zeros(K), np.zeros(K)
    D = np.full((3 + G, K), np.nan)
    powers(L, kind, inv_eta, Pg)
    u = np.zeros(K)
    init_prices(L, kind, inv_eta, W, Pg, u)
    gs, fs = np.empty(G), np.empty(G)
    n, has_log, usable = order_groups(kind, inv_eta, W, gs, fs)
    if not (usable and n == G):
        raise ValueError("the frozen step is not defined for this market")
    scr, un, Wsum = np.empty(scratch_size(K, G)), np.empty(K), W.sum()
    hu, hf, out = [], [], []
    for _ in range(evals):
        _, res, _ = evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
        out.append(res)
        if res <= tol:
            break
        if not frozen_normaliser_step(u, T, Wsum, D[0], D[3:], gs, fs, has_log, res, un, scr):
            break
        f = un - u
        f -= f.mean()  # the prices' normalisation moves every log-price alike
        hu, hf = (hu + [u.copy()])[-(mem + 1) :], (hf + [f])[-(mem + 1) :]
        if mem == 0 or len(hf) < 2:
            nxt = un.copy()
        else:
            dF = np.stack([hf[i + 1] - hf[i] for i in range(len(hf) - 1)], 1)
            dU = np.stack([hu[i + 1] - hu[i] for i in range(len(hu) - 1)], 1)
            gamma = np.linalg.lstsq(dF, f, rcond=None)[0]
            nxt = u + f - (dU + dF) @ gamma
        u = nxt - logsumexp(nxt)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cells",
        default="logit:256x10,logit:256x100,logit:1024x1000,dups:256x100,dups:1024x100,dups:1024x1000,dirichlet:256x100",
        help="family:KxA, comma-separated",
    )
    ap.add_argument("--items", type=int, default=2)
    ap.add_argument("--mems", default="0,1,2,3,5")
    ap.add_argument("--evals", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-10)
    args = ap.parse_args(argv)
    print("| cell | item | m | evaluations to tol | residual after each evaluation (the first: the start) |")
    print("|---|---|---|---|---|")
    for cell in args.cells.split(","):
        fam, shape = cell.split(":")
        K, A = (int(x) for x in shape.split("x"))
        for item in range(args.items):
            mk = market(fam, K, A, item)
            for mem in (int(x) for x in args.mems.split(",")):
                r = residuals(*mk, mem, args.evals, args.tol)
                n = str(len(r)) if r[-1] <= args.tol else f"> {args.evals}"
                seq = " ".join(f"{x:.1e}" for x in r)
                print(f"| {fam} {K} x {A} | {item} | {mem} | {n} | {seq} |", flush=True)


if __name__ == "__main__":
    main()
