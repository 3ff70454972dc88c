"""Benchmark: validating small inputs (issue #13; session 55), the compiled serial pass against the NumPy path.

Until session 55 inputs below 65,536 numbers were validated, normalised and floored in NumPy (the
checks, ``logsumexp``, the mass-preserving floor), and larger ones by the compiled pass; now every size
takes the compiled pass (serial below ``PARALLEL_MIN_SIZE``), so an item gets the same bits alone and in
a large call. This times :func:`aggregators.validation.as_floored_log_probs` both ways in one run on
the shapes an API request brings (the NumPy path by ``FAST_PATH_MIN_SIZE`` set above any size), best
of five repetitions of a loop of calls, µs per call; each input has one entry below the floor.

    OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_validation_small.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aggregators.validation as V  # noqa: E402

SHAPES = "1x3x4,8x3x4,1x10x1024,100x10x64,20x100x32,2x5x4096,1x2x2"


def per_call(x, floor):
    for _ in range(3):
        V.as_floored_log_probs(x, floor=floor)
    n = max(20, 200000 // x.size)
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            V.as_floored_log_probs(x, floor=floor)
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default=SHAPES, help="items x agents x classes, comma-separated")
    ap.add_argument("--floor", type=float, default=1e-9)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    limit = V.FAST_PATH_MIN_SIZE
    print(
        "| items x agents x classes | numbers | NumPy path µs | compiled pass µs | compiled / NumPy | same to 1e-13 |"
    )
    print("|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        x = 3.0 * rng.standard_normal(tuple(int(v) for v in shape.split("x")))
        x[0, 0, 0] = -40.0  # one entry below the floor
        try:
            V.FAST_PATH_MIN_SIZE = 1 << 62
            ref, t_np = V.as_floored_log_probs(x, floor=args.floor), per_call(x, args.floor)
        finally:
            V.FAST_PATH_MIN_SIZE = limit
        got, t_c = V.as_floored_log_probs(x, floor=args.floor), per_call(x, args.floor)
        same = bool(np.allclose(got.log_probs, ref.log_probs, rtol=0, atol=1e-13) and got.n_floored == ref.n_floored)
        print(f"| {shape} | {x.size} | {t_np:.1f} | {t_c:.1f} | {t_c / t_np:.2f} | {same} |")


if __name__ == "__main__":
    main()
