"""Probe (counts, not timings): Newton-CG's right-hand side far from the answer and at the default start
(issue #13 §1; session 46, ``markets.kernels.newton_cg``, "Over-priced goods").

``--mode cap``: items that ``equilibrium(..., method="newton_cg", floor=None, max_iter=99)`` leaves unconverged
from random far starts (log-prices N(0, 2), three goods 30 units lower, normalised; the starts of
``tests/markets/test_bad_starts.py``; ``--starts`` other depths and spreads, ``--cap`` another cap), and the
largest step count per cell, over the grid's three families x eta 2 / 10 / 30 / mix x agents x goods. A
cap of 99 is below ``FALLBACK_CAP_MIN``: no fixed-point fallback hides a Newton that grinds to its cap.

``--mode steps``: mean Newton steps per item of ``newton_cg`` and ``auto`` from the default start (``tol =
1e-10``), floor 1e-9 or none (``--no-floor``): steps are deterministic, so two trees compare exactly.

Both modes print one row per cell and a total. ``--root`` imports another tree's ``markets`` (a worktree of
another commit, with its own ``NUMBA_CACHE_DIR``)::

    PYTHONPATH=$PWD NUMBA_CACHE_DIR=$PWD/.numba_cache OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/probe_market_rhs.py --mode cap [--root /tmp/base]
"""

from __future__ import annotations

import argparse
import os
import sys

if "--root" in sys.argv:  # another tree's markets, imported before bench_markets_grid imports this tree's
    sys.path.insert(0, os.path.abspath(sys.argv[sys.argv.index("--root") + 1]))

import numpy as np  # noqa: E402

import markets as markets_pkg  # noqa: E402
from benchmarks.bench_markets_grid import family, utilities  # noqa: E402
from markets import equilibrium  # noqa: E402
from solvers.special import logsumexp  # noqa: E402


def far_starts(n: int, K: int, depth: float = 30.0, seed: int = 3, sd: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, sd, (n, K))
    s[:, :3] -= depth
    return s - logsumexp(s, axis=1, keepdims=True)


def _beliefs(fam: str, n: int, A: int, K: int) -> np.ndarray:
    """The grid's families (``dirichlet``, ``logit``, ``dups``) or those of ``bench_market_families.py``
    (``dir07``, ``logit-t``, ``zipf``, ``mixture``; seed 0)."""
    if fam in ("dir07", "logit-t", "zipf", "mixture"):
        from benchmarks.bench_market_families import beliefs

        return beliefs(fam, n, A, K, np.random.default_rng(0))
    return family(fam, n, A, K)


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["cap", "steps"], default="cap")
    ap.add_argument(
        "--families", default="dirichlet,logit,dups", help="also dir07, logit-t, zipf, mixture (bench_market_families)"
    )
    ap.add_argument("--markets", default=None, help="default: mix,10,30,2 (cap); mix,10,30 (steps)")
    ap.add_argument("--as", dest="as_", default=None, help="default: 2,3,10,100 (cap); 2,10,100,1000 (steps)")
    ap.add_argument("--ks", default=None, help="default: 16,48,64,256 (cap); 256,1024,4096 (steps)")
    ap.add_argument("--no-floor", action="store_true", help="steps: floor=None instead of 1e-9")
    ap.add_argument("--starts", default="30:2", help="cap: depth:sd pairs of the far starts, e.g. 30:2,300:2,30:20")
    ap.add_argument("--cap", type=int, default=99, help="cap: max_iter (99: below FALLBACK_CAP_MIN)")
    ap.add_argument("--root", default=None, help="the tree to import markets from")
    a = ap.parse_args()
    cap = a.mode == "cap"
    markets = (a.markets or ("mix,10,30,2" if cap else "mix,10,30")).split(",")
    As = _ints(a.as_ or ("2,3,10,100" if cap else "2,10,100,1000"))
    Ks = _ints(a.ks or ("16,48,64,256" if cap else "256,1024,4096"))
    floor = None if (cap or a.no_floor) else 1e-9
    print(
        f"mode {a.mode}; markets from {os.path.dirname(os.path.dirname(os.path.abspath(markets_pkg.__file__)))}; floor {floor}"
    )
    if cap:
        print(f"| family | market | A | K | items | depth:sd | unconverged at {a.cap} | mean steps | max steps |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| family | market | K | A | items | newton_cg mean steps | auto mean steps | unconverged |")
        print("|---|---|---|---|---|---|---|---|")
    total = 0.0
    for fam in a.families.split(","):
        for spec in markets:
            for A in As:
                for K in Ks:
                    budget = 1e6 if cap else 2e6
                    n = int(max(4 if cap else 2, min(200, budget // (A * K))))
                    lp = _beliefs(fam, n, A, K)
                    w = np.random.default_rng(1).uniform(0.2, 1.0, A)
                    u = utilities(spec, A)
                    if cap:
                        for pair in a.starts.split(","):
                            depth, sd = (float(x) for x in pair.split(":"))
                            s0 = far_starts(n, K, depth, 3, sd)
                            r = equilibrium(
                                lp, u, w, start=s0, method="newton_cg", floor=None, max_iter=a.cap, check=False
                            )
                            bad = int((~r.converged).sum())
                            total += bad
                            print(
                                f"| {fam} | {spec} | {A} | {K} | {n} | {pair} | {bad} | {r.n_iter.mean():.2f} "
                                f"| {r.n_iter.max()} |",
                                flush=True,
                            )
                    else:
                        rc = equilibrium(lp, u, w, method="newton_cg", tol=1e-10, floor=floor, check=False)
                        ra = equilibrium(lp, u, w, method="auto", tol=1e-10, floor=floor, check=False)
                        bad = int((~rc.converged).sum() + (~ra.converged).sum())
                        total += rc.n_iter.mean()
                        print(
                            f"| {fam} | {spec} | {K} | {A} | {n} | {rc.n_iter.mean():.2f} | {ra.n_iter.mean():.2f} "
                            f"| {bad} |",
                            flush=True,
                        )
    if cap:
        print(f"total unconverged items: {int(total)}")
    else:
        print(f"sum over cells of newton_cg's mean steps: {total:.2f}")


if __name__ == "__main__":
    main()
