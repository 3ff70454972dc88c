"""Benchmark: building a market's agents from utility specs (``markets.make_agents``), which every
``equilibrium`` / ``train_market`` call with a list of specs pays before any solve.

Per spec list (the grid's ``mix``: eta 2/10/30/"log" repeating; ``spread`` and ``spread-low``: an eta per
agent; ``one eta``: one number repeated in a list) and number of agents: microseconds per call, the minimum
of five rounds of 20 calls, in the source tree ``--root`` (run it in two trees for an A/B). The last column
is that time over the CPU time of the whole ``equilibrium(..., check=False)`` call of one item at 1,024 goods
(``method="auto"``, the grid's Gaussian-logit family), which pays it.

    .venv/bin/python benchmarks/bench_make_agents.py --root .
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--agents", default="10,100,1000")
    ap.add_argument("--no-call", action="store_true", help="skip the equilibrium call (no compilation)")
    args = ap.parse_args(argv)
    sys.path[:0] = [args.root, args.root + "/benchmarks"]
    from bench_markets_grid import family, utilities

    from markets import equilibrium, make_agents

    print("| specs | agents | make_agents us | equilibrium call us (1 item x 1,024 goods) | share |")
    print("|---|---|---|---|---|")
    for A in (int(x) for x in args.agents.split(",")):
        w = np.random.default_rng(1).uniform(0.2, 1.0, A)
        lp = family("logit", 1, A, 1024)
        for name in ("mix", "spread", "spread-low", "one eta"):
            specs = [10.0] * A if name == "one eta" else utilities(name, A)
            t = min(timeit.repeat(lambda: make_agents(specs, w, A), number=20, repeat=5)) / 20 * 1e6
            call = share = "-"
            if not args.no_call:
                equilibrium(lp, specs, w, check=False)
                ts = []
                for _ in range(7):
                    t0 = time.process_time()
                    equilibrium(lp, specs, w, check=False)
                    ts.append(time.process_time() - t0)
                c = float(np.median(ts)) * 1e6
                call, share = f"{c:,.0f}", f"{t / c:.3f}"
            print(f"| {name} | {A} | {t:,.1f} | {call} | {share} |", flush=True)


if __name__ == "__main__":
    main()
