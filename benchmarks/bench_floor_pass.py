"""The work outside the log-pool solver: validate + normalise + floor, against NumPy and a plain copy.

Ours: :func:`aggregators.validation.as_floored_log_probs` (one compiled pass in blocks of rows with the
vectorised exp, writing one new array). Peer: the NumPy path a competent user writes (the library's own
NumPy checks, ``logsumexp`` normalisation and mass-preserving floor: ``as_log_probs`` then
``apply_floor`` with the compiled paths disabled). Floor: ``raw.copy()``, one read and one write of a
new array of the input's size (the pass cannot do less: it must write one new array). Same run,
repetitions interleaved (copy, ours, peer), medians of wall and cpu seconds (cpu: all threads);
tracemalloc's peak of newly allocated memory against the input's size (one separate run each).

    OMP_NUM_THREADS=1 PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_floor_pass.py \\
        --families gaussian-logit noise near-duplicate many-active --shapes 2000x269x64 5000x269x64 20000x10x64 2000x100x1024
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
from benchmarks.logpool_families import FAMILIES, make_family, print_sweep  # noqa: E402


def numpy_path(raw: np.ndarray) -> V.Predictions:
    lim = V.FAST_PATH_MIN_SIZE
    V.FAST_PATH_MIN_SIZE = 1 << 62  # the NumPy checks, normalisation and floor
    try:
        return apply_floor(as_log_probs(raw))
    finally:
        V.FAST_PATH_MIN_SIZE = lim


def clock(fn) -> tuple[float, float, object]:
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t, time.process_time() - c, out


def peak_new_memory(fn, nbytes: int) -> float:
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del out
    return peak / nbytes


def row(fam: str, n: int, a: int, k: int, reps: int) -> str:
    """One table row: the three passes on one family and shape, interleaved, medians."""
    raw, _ = make_family(fam, n, a, k)
    load = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, float]]] = {"copy": [], "ours": [], "numpy": []}
    n_floored = []
    for _ in range(reps):
        for name, fn in (
            ("copy", raw.copy),
            ("ours", lambda: as_floored_log_probs(raw)),
            ("numpy", lambda: numpy_path(raw)),
        ):
            w, c, out = clock(fn)
            runs[name].append((w, c))
            if name != "copy":
                n_floored.append(out.n_floored)  # type: ignore[attr-defined]
            del out
    assert len(set(n_floored)) == 1, n_floored
    med = {name: np.median(np.array(v), axis=0) for name, v in runs.items()}
    mem = [
        peak_new_memory(lambda: as_floored_log_probs(raw), raw.nbytes),
        peak_new_memory(lambda: numpy_path(raw), raw.nbytes),
    ]
    (cw, cc), (ow, oc), (nw, nc) = med["copy"], med["ours"], med["numpy"]
    return (
        f"| {fam} | {n} x {a} x {k} | {raw.nbytes / 1e9:.2f} | {load:.1f} | {cw:.3f} ({cc:.3f}) | {ow:.3f} ({oc:.3f}) "
        f"| {nw:.3f} ({nc:.3f}) | **{nw / ow:.1f}x** ({nc / oc:.1f}x) | {ow / cw:.1f}x ({oc / cc:.1f}x) "
        f"| {mem[0]:.2f}, {mem[1]:.2f} | {n_floored[0]} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", nargs="+", choices=FAMILIES, default=["gaussian-logit"])
    ap.add_argument("--shapes", nargs="+", default=["2000x269x64"], help="items x agents x classes")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    as_floored_log_probs(np.zeros((1, 1 << 15, 2)))  # compile before the clock
    as_log_probs(np.zeros((1, 1 << 15, 2)))
    print(f"# bench_floor_pass {time.strftime('%Y-%m-%d %H:%M:%S')}, reps {args.reps} interleaved, medians")
    header = ["family", "items x agents x classes", "GB", "load", "copy: wall s (cpu)", "ours: wall s (cpu)"]
    header += ["NumPy: wall s (cpu)", "NumPy / ours wall (cpu)", "ours / copy wall (cpu)"]
    header += ["peak new memory / input: ours, NumPy", "floored"]
    print_sweep(header, args.shapes, args.families, lambda f, n, a, k: row(f, n, a, k, args.reps))


if __name__ == "__main__":
    main()
