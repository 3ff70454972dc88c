"""Benchmark: the compiled vectorised ``exp`` and ``log`` (:mod:`solvers.kernels.fastexp`,
:mod:`solvers.kernels.fastlog`) against NumPy's ufuncs, ns per element.

Ours is called from a compiled loop (as the kernels call it: no Python per call); the peer is NumPy's
``np.exp(x, out=out)`` / ``np.log(x, out=out)`` called from Python (its per-call overhead, ~0.3-0.5 µs,
is part of its time at small sizes: the sizes from 4,096 up are the fair comparison). Also timed: numba's
own ``np.exp`` / ``np.log`` in a compiled loop (scalar libm calls), which the kernels replaced. The
arguments are those of the Rényi kernels: ``exp(γ (x - max))`` of log-probabilities, ``log`` of
probabilities. Median of ``--reps`` rounds; each round runs each side for about ``--budget`` elements.

    PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/bench_fastexp.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solvers.kernels.fastexp import exp_scaled  # noqa: E402
from solvers.kernels.fastlog import log_into  # noqa: E402


@njit(cache=True)
def _ours_exp(x, g, m, out, reps):
    for _ in range(reps):
        exp_scaled(x, g, out, m)


@njit(cache=True)
def _ours_log(x, out, reps):
    for _ in range(reps):
        log_into(x, out)


@njit(cache=True)
def _numba_exp(x, g, m, out, reps):
    for _ in range(reps):
        for j in range(x.shape[0]):
            out[j] = np.exp(g * (x[j] - m))


@njit(cache=True)
def _numba_log(x, out, reps):
    for _ in range(reps):
        for j in range(x.shape[0]):
            out[j] = np.log(x[j])


def _numpy_exp(x, g, m, out, reps):
    for _ in range(reps):
        np.exp(x, out=out)  # the peer gets its argument ready-made: exp only


def _numpy_log(x, out, reps):
    for _ in range(reps):
        np.log(x, out=out)


def _ns(fn, args, n, reps, rounds):
    fn(*args, 1)
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn(*args, reps)
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) / (reps * n) * 1e9


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 4096, 65536, 409600, 4096000])
    ap.add_argument("--budget", type=float, default=2e7, help="elements per side per round")
    ap.add_argument("--reps", type=int, default=5, help="rounds (median)")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print("| function | n | ours ns/elt | NumPy ns/elt | ours / NumPy | numba np.* ns/elt | ours / numba np.* |")
    print("|---|---|---|---|---|---|---|")
    for n in a.sizes:
        L = np.log(rng.dirichlet(np.ones(n)))
        m = float(L.max())
        g = 0.5
        xs = g * (L - m)
        out = np.empty(n)
        reps = max(1, int(a.budget // n))
        e = (_ns(_ours_exp, (L, g, m, out), n, reps, a.reps), _ns(_numpy_exp, (xs, g, m, out), n, reps, a.reps))
        e += (_ns(_numba_exp, (L, g, m, out), n, reps, a.reps),)
        P = np.exp(L)
        lg = (_ns(_ours_log, (P, out), n, reps, a.reps), _ns(_numpy_log, (P, out), n, reps, a.reps))
        lg += (_ns(_numba_log, (P, out), n, reps, a.reps),)
        for name, (o, p, s) in (("exp", e), ("log", lg)):
            print(f"| {name} | {n} | {o:.2f} | {p:.2f} | {o / p:.2f} | {s:.2f} | {o / s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
