"""What fresh memory costs on this machine (session 16): a first write to N GiB in a new process,
after an idle gap (the host may have taken freed pages back) and right after another process freed
as much; one process and two at once. Prints one table, with NumPy's huge pages (its default: ``madvise(MADV_HUGEPAGE)`` on arrays of 4 MiB
or more) and without them (``NUMPY_MADVISE_HUGEPAGE=0``).

On this project's VMs (Firecracker with free page reporting) the first write to a page the host has
taken back cost 2.2-2.8 s/GiB, against 0.17 s/GiB when the pages were freed a moment before
(``benchmarks/results/sweep-chains-session16.md`` §3): a benchmark that builds gigabytes in fresh
worker processes times this as much as the code. Session 17 found why: the guest reports free 2 MiB
blocks to the host, and a huge page is such a block, so NumPy's huge pages are host faults; without
them a first write cost 0.33-0.35 s/GiB (``benchmarks/results/hugepages-session17.md``,
:mod:`cluster.host_memory`).

    .venv/bin/python benchmarks/bench_fresh_memory.py [--gib 2] [--gap 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

TOUCH = (
    "import numpy as np, time, sys; t = time.perf_counter(); "
    "a = np.empty(int(float(sys.argv[1]) * 2**30) // 8); a[::512] = 1.0; print(time.perf_counter() - t)"
)


def touch(gib: float, n: int = 1, huge: bool = True) -> list[float]:
    """Seconds for each of ``n`` new processes writing once to every page of ``gib`` GiB, all at once
    (``huge``: with NumPy's huge pages, else with ``NUMPY_MADVISE_HUGEPAGE=0``)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if not huge:
        env["NUMPY_MADVISE_HUGEPAGE"] = "0"
    procs = [
        subprocess.Popen([sys.executable, "-c", TOUCH, str(gib)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(n)
    ]
    return [float(p.communicate()[0]) for p in procs]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gib", type=float, default=2.0)
    p.add_argument("--gap", type=float, default=5.0, help="idle seconds before the 'after a gap' rows")
    args = p.parse_args()
    print(f"| what ({args.gib:g} GiB per process) | NumPy's huge pages | seconds | s/GiB |\n|---|---|---|---|")
    rows = []
    for huge in (True, False):
        on = "on (default)" if huge else "off (NUMPY_MADVISE_HUGEPAGE=0)"
        time.sleep(args.gap)
        rows.append((f"one process, after {args.gap:g} s idle", on, touch(args.gib, 1, huge)))
        rows.append(("one process, right after the last one freed its memory", on, touch(args.gib, 1, huge)))
        time.sleep(args.gap)
        rows.append((f"two processes at once, after {args.gap:g} s idle", on, touch(args.gib, 2, huge)))
        rows.append(("two processes at once, right after", on, touch(args.gib, 2, huge)))
    for what, on, secs in rows:
        print(f"| {what} | {on} | {', '.join(f'{s:.2f}' for s in secs)} | {max(secs) / args.gib:.2f} |")


if __name__ == "__main__":
    main()
