"""The first aggregate and the first equilibria of a new process, timed, with the numba compilations
they caused (run as ``python -m app.first_calls [n_items n_agents n_classes]``, default 200 10 10;
prints one JSON object). Used by the cold-start
test and ``benchmarks/bench_cold_start.py`` (issue 13 §5)."""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def compilations() -> int:
    """Kernels compiled (not loaded from the cache) so far in this process, over every loaded numba
    dispatcher of the project's packages."""
    from numba.core.registry import CPUDispatcher

    n = 0
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] not in ("solvers", "aggregators", "markets", "evaluation"):
            continue
        for obj in vars(mod).values():
            if isinstance(obj, CPUDispatcher):
                n += sum(obj.stats.cache_misses.values())
    return n


def main() -> None:
    t0 = time.perf_counter()
    import markets
    from aggregators.registry import aggregate

    out: dict[str, float] = {"import_s": time.perf_counter() - t0}
    n, A, K = (int(v) for v in sys.argv[1:4]) if len(sys.argv) >= 4 else (200, 10, 10)
    rng = np.random.default_rng(1)
    lp = np.log(rng.dirichlet(np.ones(K), size=(n, A)))  # items, agents, classes
    t = time.perf_counter()
    aggregate("renyi", lp, kind="log_probs", gamma=0.5)
    out["renyi_aggregate_s"] = time.perf_counter() - t
    t = time.perf_counter()
    markets.equilibrium(lp, 2.0)
    out["equilibrium_s"] = time.perf_counter() - t
    t = time.perf_counter()
    markets.equilibrium(lp, [0.5 + (i % 3) for i in range(A)])  # mixed eta
    out["equilibrium_mixed_s"] = time.perf_counter() - t
    out["compilations"] = compilations()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
