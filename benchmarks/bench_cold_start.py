"""The first call of a new process (issue 13 §5): the first Rényi aggregate and the first equilibrium
of ``python -m app.first_calls`` with an empty numba cache, then again after ``agora warmup`` filled
that cache (what ``make install`` does). Target: each under 3 s after the warm-up.

    python benchmarks/bench_cold_start.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

#: (items, agents, classes): the default, the extremes of classes and agents users bring, and sizes that
#: take the compiled validation pass and the parallel Rényi kernels
SHAPES = [(200, 10, 10), (50, 2, 2), (20, 1000, 10), (5, 10, 4096), (1000, 50, 256), (3, 1000, 4096)]


def row(label: str, wall: float, out: str) -> str:
    r = json.loads(out)
    first = f"{r['renyi_aggregate_s']:.2f} | {r['equilibrium_s']:.2f} / {r['equilibrium_mixed_s']:.2f}"
    return f"| {label} | {wall:.1f} | {first} | {r['compilations']} |"


def run(args: list[str], cache: str) -> tuple[float, str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t, out


def main() -> None:
    print(f"load average {os.getloadavg()}")
    print("| cache | process s | first Rényi aggregate s | first equilibrium s (η = 2 / mixed η) | kernels compiled |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty (no warm-up), 200 x 10 x 10", "the same, second process"):
            print(row(label, *run(["-m", "app.first_calls"], cache)))
    with tempfile.TemporaryDirectory() as cache:
        wall, _ = run(["-m", "app.cli", "warmup"], cache)
        print(f"| empty, then `agora warmup` ({wall:.1f} s) | | | | |")
        for shape in SHAPES:
            label = f"after warm-up, new process, {shape[0]} x {shape[1]} x {shape[2]}"
            print(row(label, *run(["-m", "app.first_calls", *map(str, shape)], cache)))


if __name__ == "__main__":
    main()
