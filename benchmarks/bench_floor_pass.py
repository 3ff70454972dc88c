"""The work outside the log-pool solver: validate + normalise + floor, new fused pass against the old path.

New: :func:`aggregators.validation.as_floored_log_probs` (one compiled pass writing one array).
Old (before issue 13): the compiled normalisation of ``as_log_probs``, then the NumPy
``apply_floor`` (reproduced here by disabling the compiled floor). Same run, same data (the
``gaussian-logit`` family of :mod:`benchmarks.logpool_families`); tracemalloc's peak of newly
allocated memory against the input's size; wall and cpu seconds (cpu: all threads).

    OMP_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_floor_pass.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aggregators.validation as V  # noqa: E402
from aggregators.validation import apply_floor, as_floored_log_probs, as_log_probs  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", choices=FAMILIES, default="gaussian-logit")
    ap.add_argument("--n-items", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    raw, _ = make_family(args.family, args.n_items, 269, 64)
    print(f"# {args.family} {raw.shape}, {raw.nbytes / 1e9:.2f} GB; load average {os.getloadavg()[0]:.1f}")
    as_floored_log_probs(np.zeros((1, 1 << 15, 2)))  # compile before the clock
    as_log_probs(np.zeros((1, 1 << 15, 2)))

    def old():
        p = as_log_probs(raw)
        lim = V.FAST_PATH_MIN_SIZE
        V.FAST_PATH_MIN_SIZE = 1 << 62  # apply_floor's NumPy path, as before the fused pass
        try:
            return apply_floor(p)
        finally:
            V.FAST_PATH_MIN_SIZE = lim

    print("| path | wall s | cpu s | peak new memory / input | entries floored |")
    print("|---|---|---|---|---|")
    for _ in range(args.reps):
        for name, fn in (
            ("fused pass (new)", lambda: as_floored_log_probs(raw)),
            ("normalise + NumPy floor (old)", old),
        ):
            tracemalloc.start()
            t, c = time.perf_counter(), time.process_time()
            out = fn()
            w, cp = time.perf_counter() - t, time.process_time() - c
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"| {name} | {w:.2f} | {cp:.2f} | {peak / raw.nbytes:.2f} | {out.n_floored} |")
            del out


if __name__ == "__main__":
    main()
