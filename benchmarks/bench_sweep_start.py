"""Benchmark: the 10-γ sweep of ``RenyiPool(gamma="grid")`` in one source tree, for an A/B of how its fits
are started (issue #13 §3; session 33's secant start, ``aggregators.renyi_pool.secant_start``).

Run once per tree (``--root``: the tree to import, e.g. a ``git worktree`` of the base commit), then
``--compare`` the two JSON files. For each family of :mod:`benchmarks.logpool_families` and each shape
``n x A x K``: the sweep (10 γ log-spaced in [0.01, 1]) ``--rounds`` times, CPU seconds, the minimum kept (a
worktree's kernels are cached under their own paths, so its first round may compile); with ``--per-gamma``
each grid fit's wall time, Newton iterations and working-set sizes are printed.

Run (results in ``benchmarks/results/session33.md`` §2)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python \\
        benchmarks/bench_sweep_start.py --root /tmp/base --out base.json
    ... --root . --out new.json
    .venv/bin/python benchmarks/bench_sweep_start.py --compare base.json new.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

SWEEP = tuple(float(g) for g in np.logspace(-2, 0, 10))
SHAPES = "5000x30x16,2000x100x256,1000x1000x8,2000x10x1024,4000x269x2"


def run(a) -> None:
    sys.path.insert(0, str(Path(a.root).resolve()))
    from aggregators import renyi_pool
    from aggregators.renyi import RenyiPool
    from benchmarks.logpool_families import make_family

    fits: list = []
    if a.per_gamma:
        plain = renyi_pool.RenyiPool._fit_at

        def logged(self, *args, **kw):
            t = time.perf_counter()
            prob, res = plain(self, *args, **kw)
            fits.append((float(args[2][0]), time.perf_counter() - t, res.n_iter, res.extra.get("working_set_sizes")))
            return prob, res

        renyi_pool.RenyiPool._fit_at = logged
    out = {}
    warnings.simplefilter("ignore")
    for fam in a.families:
        for shape in a.shapes.split(","):
            n, A, K = map(int, shape.split("x"))
            X, y = make_family(fam, n, A, K, a.seed)
            ts = []
            for _ in range(a.rounds):
                fits.clear()
                t = time.process_time()
                pool = RenyiPool(gamma="grid", gamma_grid=SWEEP).fit(X, y)
                ts.append(time.process_time() - t)
            out[f"{fam} {shape}"] = {"cpu": min(ts), "rounds": ts, "gamma": pool.gamma_, "loglik": float(pool.loglik_)}
            print(f"{fam} {shape}: cpu {[round(v, 3) for v in ts]} best γ {pool.gamma_:.4g}", flush=True)
            for g, wall, nit, ws in fits:
                print(f"  γ {g:.4f}: {wall:.2f} s, {nit} Newton iterations, working sets {ws}")
    Path(a.out).write_text(json.dumps(out))


def compare(base_file: str, new_file: str) -> None:
    b, n = json.loads(Path(base_file).read_text()), json.loads(Path(new_file).read_text())
    print("| family | n × A × K | base CPU s | new CPU s | ratio | same best γ | loglik diff |")
    print("|---|---|---|---|---|---|---|")
    for key in b.keys() & n.keys():
        fam, shape = key.split(" ")
        rb, rn = b[key], n[key]
        print(
            f"| {fam} | {shape.replace('x', ' × ')} | {rb['cpu']:.3f} | {rn['cpu']:.3f} | {rn['cpu'] / rb['cpu']:.2f} "
            f"| {rb['gamma'] == rn['gamma']} | {abs(rb['loglik'] - rn['loglik']):.0e} |"
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the source tree to time")
    ap.add_argument("--families", nargs="+", default=["gaussian-logit", "noise", "competition"])
    ap.add_argument("--shapes", default=SHAPES, help="comma-separated n x A x K")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-gamma", action="store_true", help="print each grid fit's time and iterations")
    ap.add_argument("--out", default="sweep_start.json")
    ap.add_argument("--compare", nargs=2, metavar=("BASE", "NEW"), help="print the table of two runs' files")
    a = ap.parse_args(argv)
    if a.compare:
        compare(*a.compare)
    else:
        run(a)


if __name__ == "__main__":
    main()
