"""Benchmark: Rényi weight fits against the log-pool fit of the same data, off the competition shape.

Issue core-at-scale §3 states its targets at 20,000 × 269 × 64 (``bench_renyi_competition.py``); this
script measures the same fits where users with few agents and many classes go: for every family of
:mod:`benchmarks.logpool_families` and shape ``n × A × K`` asked for, in one process, after an
untimed log-pool fit (the first touch of the data and compilation):

- ``LogPool().fit`` (the reference, "log pool");
- ``RenyiPool(gamma=0.1).fit`` and ``RenyiPool(gamma=0.5).fit`` (weights learnt at a fixed γ);
- ``RenyiPool(gamma="learn").fit`` (the γ grid of 13 warm-started fits, then the profile
  likelihood's maximum by a secant on its derivative).

``--reps`` rounds, interleaved (each round fits every model once); the table gives the median wall
seconds of each fit, its multiple of the log pool's median, and each fit's mean log-likelihood (the
objective: a faster code must reach the same one). CPU seconds beside wall: the Rényi kernels run
their items on numba's threads.

Run (results in ``benchmarks/results/session29.md``)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_renyi_fit_shapes.py \\
        --families gaussian-logit noise near-duplicate --shapes 500x10x1024 200x10x4096 2000x2x4096 3000x30x64
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators import LogPool, RenyiPool  # noqa: E402
from benchmarks.logpool_families import FAMILIES, make_family  # noqa: E402

FITS = {
    "log pool": lambda: LogPool(),
    "γ = 0.1": lambda: RenyiPool(gamma=0.1),
    "γ = 0.5": lambda: RenyiPool(gamma=0.5),
    "learn": lambda: RenyiPool(gamma="learn"),
}


def _shape(text: str) -> tuple[int, int, int]:
    n, A, K = (int(v) for v in text.lower().split("x"))
    return n, A, K


def run(family: str, shape: tuple[int, int, int], reps: int, seed: int) -> dict[str, tuple[float, float, float]]:
    """``{fit: (median wall s, median CPU s, mean log-likelihood)}`` at one family and shape."""
    n, A, K = shape
    lp, y = make_family(family, n, A, K, seed=seed)
    LogPool().fit(lp, y)  # untimed: compilation and the first touch of the data
    wall: dict[str, list[float]] = {k: [] for k in FITS}
    cpu: dict[str, list[float]] = {k: [] for k in FITS}
    ll: dict[str, float] = {}
    for _ in range(reps):
        for name, make in FITS.items():
            t0, c0 = time.perf_counter(), time.process_time()
            pool = make().fit(lp, y)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            ll[name] = -float(pool.fit_result_.fun)
    return {k: (float(np.median(wall[k])), float(np.median(cpu[k])), ll[k]) for k in FITS}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["gaussian-logit", "noise", "near-duplicate"], choices=FAMILIES)
    ap.add_argument("--shapes", nargs="+", default=["500x10x1024", "200x10x4096", "2000x2x4096", "3000x30x64"])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    names = list(FITS)
    head = " | ".join(f"{k} s (×, CPU s)" for k in names)
    print(f"| family | n × A × K | {head} | log-likelihood {' / '.join(names)} |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for fam in args.families:
        for text in args.shapes:
            shape = _shape(text)
            r = run(fam, shape, args.reps, args.seed)
            ref = r["log pool"][0]
            cells = " | ".join(f"{r[k][0]:.2f} ({r[k][0] / ref:.1f}×, {r[k][1]:.2f})" for k in names)
            lls = " / ".join(f"{r[k][2]:.9f}" for k in names)
            print(f"| {fam} | {' × '.join(str(v) for v in shape)} | {cells} | {lls} |", flush=True)


if __name__ == "__main__":
    main()
