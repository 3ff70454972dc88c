"""The competition's renormalised leave-one-out credit: every submission's log pool without it.

Ours: :func:`evaluation.leave_one_out.loo_log_pool_perplexities` (the weighted sum over agents once,
each submission's pool by one subtraction: ``O(N·A·K)`` in all). Peer: what the aggregation did
before session 12, and what a user writes: for each agent, the registry's log pool over the others
with the weights renormalised (``aggregate("log", lp[:, keep], weights=...)``, one pass over the
data per agent: ``O(N·A²·K)``). The peer runs on the ``--peer-agents`` agents of largest weight;
the table compares seconds **per agent** (ours: the whole call divided by the number of agents), so
no figure is extrapolated. Same data, same run, interleaved repetitions, medians. The weights are
a fitted log pool's (``LogPool().fit`` on the first half of the items; scored on the second half;
most of them are zero), and both sides' perplexities are compared (max relative difference over the
agents the peer ran).

    OMP_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_leave_one_out.py \\
        --families competition gaussian-logit noise --shapes 4000x269x64 4000x1000x16 2000x10x4096 4000x50x1024
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators import LogPool  # noqa: E402
from aggregators.metrics import perplexity  # noqa: E402
from aggregators.registry import aggregate  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family, print_sweep  # noqa: E402
from evaluation.leave_one_out import loo_log_pool_perplexities  # noqa: E402


def peer(lp: np.ndarray, y: np.ndarray, w: np.ndarray, agents: np.ndarray) -> np.ndarray:
    out = []
    for a in agents:
        keep = np.arange(lp.shape[1]) != a
        out.append(perplexity(aggregate("log", lp[:, keep], weights=w[keep] / w[keep].sum())[0], y))
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", nargs="+", default=["competition", "gaussian-logit", "noise"], choices=FAMILIES)
    ap.add_argument("--shapes", nargs="+", default=["4000x269x64", "4000x1000x16", "2000x10x4096", "4000x50x1024"])
    ap.add_argument("--peer-agents", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print(f"# bench_leave_one_out  [load {' '.join(f'{x:.1f}' for x in os.getloadavg())}, {os.cpu_count()} cores]")
    print("(N x A x K: N items, half to fit the weights and half scored; per-agent seconds are medians)\n")

    def row(fam: str, n: int, a: int, k: int) -> str:
        lp, y = make_family(fam, n, a, k, seed=0)
        half = n // 2
        w = LogPool().fit(lp[:half], y[:half]).weights_
        test, ty = lp[half:], y[half:]
        m = min(a, args.peer_agents)
        top = np.argsort(-w, kind="stable")[:m]  # the heaviest agents: their pools change most
        ours_t, peer_t = [], []
        for r in range(args.reps):
            for side in ("ours", "peer") if r % 2 == 0 else ("peer", "ours"):
                t = time.perf_counter()
                if side == "ours":
                    got = loo_log_pool_perplexities(test, ty, w)
                    ours_t.append((time.perf_counter() - t) / a)
                else:
                    ref = peer(test, ty, w, top)
                    peer_t.append((time.perf_counter() - t) / m)
        o, p = float(np.median(ours_t)), float(np.median(peer_t))
        diff = float(np.max(np.abs(got[top] / ref - 1)))
        return (
            f"| {n}x{a}x{k} | {fam} | {int((w > 0).sum())} | {o * a:.3f} | {o * 1e3:.3f} | {p * 1e3:.1f} ({m} agents) "
            f"| **{o / p:.4f}x** | {diff:.1e} | {os.getloadavg()[0]:.1f} |"
        )

    print_sweep(
        [
            "shape",
            "family",
            "agents with weight",
            "ours: all agents, s",
            "ours per agent, ms",
            "peer per agent, ms",
            "ours / peer",
            "max rel diff perplexity",
            "load",
        ],
        args.shapes,
        args.families,
        row,
    )


if __name__ == "__main__":
    main()
