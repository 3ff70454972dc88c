"""Issue #13, session 19: the warm-started Newton with the old stopping margin (10 always, by
``VALIDATED_RATIO = (inf, inf)``) and the new one (2 after a validated step), same process, on three
families x 7 (classes, agents) shapes, LogPool and RenyiPool(gamma=0.5): iterations, passes,
CPU seconds (old runs first in each pair: not comparable on a VM where first-touched memory is slow),
and (f - f_tight)/abs(f) with f_tight a tol-1e-12 (log pool 1e-13) fit.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/ab_validated_margin.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.logpool import LogPool  # noqa: E402
from aggregators.renyi import RenyiPool  # noqa: E402
from benchmarks.logpool_families import make_family  # noqa: E402
from solvers.methods import newton as nw  # noqa: E402

NEW = nw.VALIDATED_RATIO
SHAPES = [
    (2, 100, 4000),
    (16, 100, 2000),
    (64, 269, 2000),
    (256, 10, 2000),
    (1024, 10, 1000),
    (4096, 2, 1000),
    (16, 1000, 1000),
]
"""(classes, agents, items): every fit has at least 1,000 items, so the warm-started Newton runs."""


def fit(make, X, y, old: bool):
    """``(iterations, passes, cpu s, objective, converged)`` of one fit with the old or new margin."""
    nw.VALIDATED_RATIO = (np.inf, np.inf) if old else NEW
    t = time.process_time()
    p = make().fit(X, y)
    c = time.process_time() - t
    r = p.fit_result_
    return r.n_iter, r.n_passes, c, float(r.fun), p.converged_


def main() -> None:
    warnings.simplefilter("ignore")
    print(
        "| family | K | A | n | fit | iters old → new | passes old → new | cpu s old → new | "
        "(f_new − f_tight)/|f| | (f_old − f_tight)/|f| | converged old / new |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for fam in ["gaussian-logit", "near-duplicate", "many-active"]:
        for K, A, n in SHAPES:
            X, y = make_family(fam, n, A, K, 0)
            for name, make, tight in [
                ("LogPool", LogPool, lambda: LogPool(tol=1e-13)),
                ("Rényi γ=0.5", lambda: RenyiPool(gamma=0.5), lambda: RenyiPool(gamma=0.5, tol=1e-12)),
            ]:
                o = fit(make, X, y, True)
                nn = fit(make, X, y, False)
                nw.VALIDATED_RATIO = NEW
                ft = float(tight().fit(X, y).fit_result_.fun)
                print(
                    f"| {fam} | {K} | {A} | {n} | {name} | {o[0]} → {nn[0]} | {o[1]:.1f} → {nn[1]:.1f} | "
                    f"{o[2]:.2f} → {nn[2]:.2f} | {(nn[3] - ft) / abs(ft):.1e} | {(o[3] - ft) / abs(ft):.1e} | "
                    f"{o[4]} / {nn[4]} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
