"""The competition's γ sweep fit by fit: seconds, Newton iterations, passes and objective per η.

:func:`evaluation.aggregation.warm_points`'s fits on ``N`` public items (the sweep's Rényi options,
each η started from the previous one's weights, the first from the linear pool's, as
:func:`~evaluation.aggregation.aggregate_submissions` does), without the predictions. The data are
validated once first (as the sweep does). The log-pool fit of the same data is timed for scale.
To compare two versions of the code, run this file in each checkout (it imports the tree it sits in).

    OMP_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_sweep_points.py \\
        --family gaussian-logit --shape 2000x269x64
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.validation import as_floored_log_probs  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402
from evaluation.aggregation import DEFAULT_ETAS, RENYI_OPTIONS, make_pool  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="gaussian-logit", choices=FAMILIES)
    ap.add_argument("--shape", default="2000x269x64")
    args = ap.parse_args()
    n, a, k = (int(v) for v in args.shape.split("x"))
    lp, y = make_family(args.family, 2 * n, a, k, seed=0)
    val = as_floored_log_probs(lp[:n])
    y = y[:n]
    del lp
    make_pool("renyi", gamma=0.5, **RENYI_OPTIONS).fit(val.log_probs[:100], y[:100])  # compile off the clock
    t = time.perf_counter()
    make_pool("log").fit(val, y)
    log_s = time.perf_counter() - t
    w0 = list(make_pool("linear").fit(val, y).weights_)
    print(f"# bench_sweep_points  [{Path(__file__).resolve().parents[1]}; load {os.getloadavg()[0]:.1f}]")
    print(f"{args.family} {args.shape}: log-pool fit {log_s:.2f} s\n")
    print("| eta | seconds | Newton iterations | passes | objective | gap | converged |")
    print("|---|---|---|---|---|---|---|")
    total = 0.0
    for eta in DEFAULT_ETAS:
        pool = make_pool("renyi", gamma=1 / eta, weights=w0, **RENYI_OPTIONS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            pool.fit(val, y)
            s = time.perf_counter() - t
        total += s
        r = pool.fit_result_
        print(
            f"| {eta} | {s:.2f} | {r.n_iter} | {r.n_passes:.1f} | {r.fun:.10f} | {r.extra.get('gap', float('nan')):.1e} "
            f"| {r.converged} |",
            flush=True,
        )
        w0 = list(pool.weights_)
    print(f"\ntotal {total:.2f} s ({total / log_s:.1f}x the log-pool fit)")


if __name__ == "__main__":
    main()
