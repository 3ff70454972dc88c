"""A whole competition aggregation in this process, step by step: where an organiser's run spends its time.

:func:`evaluation.aggregation.aggregate_submissions` on ``N`` items (the first half public, the rest
private) of ``A`` submissions over ``K`` classes, every method and the default γ sweep, the log pool's
credible bands and the leave-one-out credit (refits when ``A·N·A·K`` is within the budget, else the
renormalised pools). One warm-up run on 200 items first (compilation off the clock). Prints each
method's seconds as the run records them, the rest (bands, leave-one-out credit, Table 2.3) and the
total, medians of ``--reps`` runs.

To compare two versions of the code, copy this file into the other tree and run it there on the same
arguments (it imports the tree it sits in).

    OMP_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_competition_run.py \\
        --families competition gaussian-logit noise --shapes 4000x269x64
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402
from evaluation.aggregation import METHODS, aggregate_submissions  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", nargs="+", default=["competition", "gaussian-logit", "noise"], choices=FAMILIES)
    ap.add_argument("--shapes", nargs="+", default=["4000x269x64"])
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    print(f"# bench_competition_run  [{Path(__file__).resolve().parents[1]}; load {os.getloadavg()[0]:.1f}]")
    cols = ["best_single", *METHODS]
    print("| shape | family | " + " | ".join(cols) + " | rest (bands, leave-one-out, table) | total s | loo | load |")
    print("|" + "---|" * (len(cols) + 6))
    for shape in args.shapes:
        n, a, k = (int(v) for v in shape.split("x"))
        for fam in args.families:
            lp, y = make_family(fam, n, a, k, seed=0)
            h = n // 2
            aggregate_submissions(lp[:100], y[:100], lp[100:200], y[100:200])  # compile off the clock
            runs = []
            for _ in range(args.reps):
                t = time.perf_counter()
                res = aggregate_submissions(lp[:h], y[:h], lp[h:], y[h:])
                total = time.perf_counter() - t
                sec = {r["method"]: r.get("seconds", 0.0) for r in res["rows"]}
                runs.append(([sec.get(c, np.nan) for c in cols], total, res["loo_mode"]))
            per = np.median([r[0] for r in runs], axis=0)
            total = float(np.median([r[1] for r in runs]))
            rest = total - float(np.nansum(per))
            print(
                f"| {shape} | {fam} | " + " | ".join(f"{s:.2f}" for s in per) + f" | {rest:.2f} | **{total:.2f}** "
                f"| {runs[-1][2]} | {os.getloadavg()[0]:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
