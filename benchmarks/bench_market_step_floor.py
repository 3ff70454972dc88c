"""Benchmark: where the mixed market's time goes, against the seed's fixed point, and what a step may cost
(issue #13 §1: ``method="auto"`` at most 0.2x the fixed point for K >= 256, every utility mix).

For each cell ``KxA`` of :func:`benchmarks.bench_markets_grid.family` (``--families``) with the grid's mixed
utilities (eta 2, 10, 30, log), as many items as the grid gives that shape, per item (CPU time, one thread,
median of ``--calls``):

- ``start``: ``method="newton_cg", max_iter=0``: validation, floor, the powers ``P^g``, the start and one
  evaluation. The fixed point pays the same before its first pass.
- ``FP``: the seed's fixed point to ``tol`` (1e-10), its passes ``n_FP``, and ``e = (FP - start) / n_FP``:
  one pass (an evaluation and the update).
- ``auto``: ``method="auto"`` and its iterations ``n``; ``step = (auto - start) / n``.
- ``Hv``: one Hessian-vector product of the general path (:func:`markets.kernels.newton_cg.general_apply`),
  item 0 after two Newton steps, in cache (a lower figure than inside the loop).

and the ratios: ``auto / FP``; ``(start + n e) / FP``, what ``auto`` would cost if each of its ``n`` steps
cost one pass of the fixed point (a direction for free); ``(start + n (e + Hv)) / FP``, with one product per
step (a Newton-CG direction needs at least one; the Woodbury direction at few agents costs more than one);
and ``allowed``: the cost of a direction per step that would bring ``auto`` to 0.2x the fixed point with
``n`` steps, ``(0.2 FP - start) / n - e`` (negative: no direction is cheap enough with ``n`` steps).

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_market_step_floor.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.validation import as_log_probs  # noqa: E402
from benchmarks.bench_markets_grid import family, utilities  # noqa: E402
from markets import equilibrium  # noqa: E402
from markets.agents import floor_beliefs, make_agents  # noqa: E402
from markets.kernels import equilibrium as keq  # noqa: E402
from markets.kernels import newton_cg, potential  # noqa: E402


def _per_item(lp, u, w, n, calls, **kw):
    r = equilibrium(lp, u, w, tol=1e-10, check=False, **kw)  # compiles on a fresh cache
    ts = []
    for _ in range(calls):
        t = time.process_time()
        r = equilibrium(lp, u, w, tol=1e-10, check=False, **kw)
        ts.append(time.process_time() - t)
    return float(np.median(ts)) / n * 1e6, float(r.n_iter.mean())


def item_after_steps(lp, u, w, its):
    """Item 0 of ``lp`` (floored at 1e-9) after ``its`` Newton-CG steps from the start, evaluated there:
    ``(ag, x, Q, T, dg, h, res)`` with the agents, log-prices, effective beliefs, spending, the diagonal and
    ``h`` of :func:`markets.kernels.newton_cg.general_diagonal` and the clearing residual (also used by
    ``probe_market_cg_preconditioner.py``)."""
    A, K = lp.log_probs.shape[1:]
    ag = make_agents(u, w, A)
    L = np.ascontiguousarray(floor_beliefs(lp, 1e-9).log_probs[0])
    kind, inv_eta, W = ag.kind, ag.inv_eta, ag.wealth
    Wsum = float(W.sum())
    Pg, Q, B, T, cp = keq._general_buffers(A, K)
    x = np.zeros(K)
    potential.powers(L, kind, inv_eta, Pg)
    potential.init_prices(L, kind, inv_eta, W, Pg, x)
    phi, res, nneg = potential.evaluate(L, kind, inv_eta, W, Wsum, x, Pg, Q, B, T, cp)
    if its:
        keq._newton_loop(
            L, kind, inv_eta, W, Wsum, 1e-10, its, x, Pg, Q, B, T, cp, phi, res, nneg, None, np.array([1.0, np.nan])
        )
    phi, res, nneg = potential.evaluate(L, kind, inv_eta, W, Wsum, x, Pg, Q, B, T, cp)
    dg, h = np.empty(K), np.empty(K)
    newton_cg.general_diagonal(kind, inv_eta, W, Q, x, dg, h)
    return ag, x, Q, T, dg, h, res


def _product_us(lp, u, w, reps=200):
    """One ``general_apply`` on item 0 after two Newton steps (in cache), µs."""
    ag, x, Q, T, dg, h, res = item_after_steps(lp, u, w, 2)
    K = x.shape[0]
    v = np.random.default_rng(0).standard_normal(K)
    out = np.empty(K)
    newton_cg.general_apply(ag.kind, ag.inv_eta, ag.wealth, Q, dg, v, out)
    t = time.process_time()
    for _ in range(reps):
        newton_cg.general_apply(ag.kind, ag.inv_eta, ag.wealth, Q, dg, v, out)
    return (time.process_time() - t) / reps * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default="dirichlet,logit,dups")
    ap.add_argument("--shapes", default="256x10,256x100,256x1000,1024x10,1024x100,1024x1000,4096x10,4096x100,4096x1000")
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"threads: OMP={os.environ.get('OMP_NUM_THREADS')} NUMBA={os.environ.get('NUMBA_NUM_THREADS')}")
    print(
        "| family | K | A | items | start us | FP us | n_FP | e us | auto us | n | step us | Hv us | auto/FP "
        "| (start+n e)/FP | (start+n(e+Hv))/FP | allowed us |"
    )
    print("|---" * 16 + "|")
    for fam in args.families.split(","):
        for shape in args.shapes.split(","):
            k, a = (int(v) for v in shape.split("x"))
            n = int(max(1, min(20000, 2e6 // (a * k))))
            lp = as_log_probs(family(fam, n, a, k))
            w = np.random.default_rng(1).uniform(0.2, 1.0, a)
            u = utilities("mix", a)
            start, _ = _per_item(lp, u, w, n, args.calls, method="newton_cg", max_iter=0)
            fp, n_fp = _per_item(lp, u, w, n, args.calls, method="fixed_point")
            auto, n_auto = _per_item(lp, u, w, n, args.calls, method="auto")
            hv = _product_us(lp, u, w)
            e = (fp - start) / n_fp
            step = (auto - start) / n_auto
            allowed = (0.2 * fp - start) / n_auto - e
            print(
                f"| {fam} | {k} | {a} | {n} | {start:.1f} | {fp:.1f} | {n_fp:.1f} | {e:.1f} | {auto:.1f} | "
                f"{n_auto:.2f} | {step:.1f} | {hv:.1f} | {auto / fp:.3f} | {(start + n_auto * e) / fp:.3f} | "
                f"{(start + n_auto * (e + hv)) / fp:.3f} | {allowed:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
