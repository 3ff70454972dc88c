"""Run every benchmark with its default (full-scale) settings; ``make bench`` calls this.

Each ``benchmarks/bench_*.py`` script runs in its own process from the repository root with
``OMP_NUM_THREADS=1`` (the protocol of the solver-benchmark note, section 7) and prints its table.
Scripts taking a positional argument are run once per listed value. The exit status is the number
of scripts that failed.

Usage::

    python benchmarks/run_all.py               # all of them
    python benchmarks/run_all.py renyi markets # only those whose file name contains a word given
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# scripts needing a positional argument: one run per value
RUNS: dict[str, list[list[str]]] = {
    "bench_majorization.py": [["multinomial"], ["logpool"]],
}


def main(argv: list[str]) -> int:
    words = [a for a in argv if not a.startswith("-")]
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not words or any(w in p.name for w in words))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    failed = 0
    for path in scripts:
        for args in RUNS.get(path.name, [[]]):
            cmd = [sys.executable, str(path.relative_to(ROOT)), *args]
            print(f"\n=== {' '.join(cmd[1:])}", flush=True)
            t0 = time.perf_counter()
            rc = subprocess.call(cmd, cwd=ROOT, env=env)
            print(f"=== exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
            failed += rc != 0
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
