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


def run(args: list[str], cache: str) -> tuple[float, str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t, out


def main() -> None:
    print(f"load average {os.getloadavg()}")
    print("| cache | process s | first Rényi aggregate s | first equilibrium s | kernels compiled |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty (no warm-up)", "the same, second process"):
            wall, out = run(["-m", "app.first_calls"], cache)
            r = json.loads(out)
            print(
                f"| {label} | {wall:.1f} | {r['renyi_aggregate_s']:.2f} | {r['equilibrium_s']:.2f} | {r['compilations']} |"
            )
    with tempfile.TemporaryDirectory() as cache:
        wall, _ = run(["-m", "app.cli", "warmup"], cache)
        print(f"| empty, then `agora warmup` ({wall:.1f} s) | | | | |")
        wall, out = run(["-m", "app.first_calls"], cache)
        r = json.loads(out)
        print(
            f"| after warm-up, new process | {wall:.1f} | {r['renyi_aggregate_s']:.2f} | {r['equilibrium_s']:.2f} | {r['compilations']} |"
        )


if __name__ == "__main__":
    main()
