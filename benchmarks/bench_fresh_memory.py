"""What fresh memory costs on this machine (session 16): a first write to N GiB in a new process,
after an idle gap (the host may have taken freed pages back) and right after another process freed
as much; one process and two at once. Prints one table.

On this project's VMs (Firecracker with free page reporting) the first write to a page the host has
taken back cost 2.2-2.8 s/GiB, against 0.17 s/GiB when the pages were freed a moment before
(``benchmarks/results/sweep-chains-session16.md`` §3): a benchmark that builds gigabytes in fresh
worker processes times this as much as the code.

    .venv/bin/python benchmarks/bench_fresh_memory.py [--gib 2] [--gap 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

TOUCH = (
    "import numpy as np, time, sys; t = time.perf_counter(); "
    "a = np.empty(int(float(sys.argv[1]) * 2**30) // 8); a[::512] = 1.0; print(time.perf_counter() - t)"
)


def touch(gib: float, n: int = 1) -> list[float]:
    """Seconds for each of ``n`` new processes writing once to every page of ``gib`` GiB, all at once."""
    procs = [
        subprocess.Popen([sys.executable, "-c", TOUCH, str(gib)], stdout=subprocess.PIPE, text=True) for _ in range(n)
    ]
    return [float(p.communicate()[0]) for p in procs]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gib", type=float, default=2.0)
    p.add_argument("--gap", type=float, default=5.0, help="idle seconds before the 'after a gap' rows")
    args = p.parse_args()
    print(f"| what ({args.gib:g} GiB per process) | seconds | s/GiB |\n|---|---|---|")
    rows = []
    time.sleep(args.gap)
    rows.append((f"one process, after {args.gap:g} s idle", touch(args.gib)))
    rows.append(("one process, right after the last one freed its memory", touch(args.gib)))
    time.sleep(args.gap)
    rows.append((f"two processes at once, after {args.gap:g} s idle", touch(args.gib, 2)))
    rows.append(("two processes at once, right after", touch(args.gib, 2)))
    for what, secs in rows:
        print(f"| {what} | {', '.join(f'{s:.2f}' for s in secs)} | {max(secs) / args.gib:.2f} |")


if __name__ == "__main__":
    main()
