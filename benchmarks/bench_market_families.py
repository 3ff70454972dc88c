"""Benchmark: the mixed market (eta 2, 10, 30, log) on belief families other than the grid's, ``method="auto"``
against the seed's fixed point (issue #13 §1: a speed-up must hold off our own generator).

``bench_markets_grid.py`` draws Dirichlet beliefs of varied concentration, Gaussian logits and near-duplicates.
Here four more (``--families``), each a batch of items of one market (agents and wealth fixed, beliefs per item):

- ``dir07``: symmetric Dirichlet(0.7) beliefs (the test suite's generator);
- ``logit-t``: Student-t logits (3 degrees of freedom), sharpness 0.5-2 per agent: agents that put most of
  their mass on a few goods, each on different ones;
- ``zipf``: a shared Zipf-like popularity prior over the goods plus Gaussian noise of 0.2-1.5 per agent;
- ``mixture``: each agent a tempered, noisy copy of one of three experts.

For each family and shape ``KxA`` (goods x agents; as many items as ``--budget`` allows, at most 2,000),
CPU time per item (median of ``--calls``, one thread advised) of ``equilibrium(..., tol=1e-10, check=False)``
with the default floor on beliefs validated beforehand (``as_log_probs``, as ``bench_markets_grid.py`` does:
validating 100 x 1,024 raw log-beliefs costs about 0.3 ms an item, more than the start), its mean iterations, and ``auto / FP``. ``--root``: the source tree to import (a
worktree of another commit, with its own ``NUMBA_CACHE_DIR``), for an A/B run process by process.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_market_families.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

MIX = [2.0, 10.0, 30.0, "log"]


def _lse(L):
    m = L.max(axis=2, keepdims=True)
    return m + np.log(np.exp(L - m).sum(axis=2, keepdims=True))


def beliefs(name, n, A, K, rng):
    """Log-beliefs (n, A, K) of family ``name`` (module docstring)."""
    if name == "dir07":
        with np.errstate(divide="ignore"):
            return np.log(rng.dirichlet(np.full(K, 0.7), size=(n, A)))
    if name == "logit-t":
        L = rng.uniform(0.5, 2.0, A)[None, :, None] * rng.standard_t(3, (n, A, K))
    elif name == "zipf":
        prior = -1.1 * np.log(np.arange(1, K + 1))[None, None, :]
        L = prior + rng.uniform(0.2, 1.5, A)[None, :, None] * rng.standard_normal((n, A, K))
    elif name == "mixture":
        experts = 2.0 * rng.standard_normal((n, 3, K))
        temp = rng.uniform(0.3, 1.5, A)[None, :, None]
        L = experts[:, rng.integers(0, 3, A), :] * temp + 0.3 * rng.standard_normal((n, A, K))
    else:
        raise ValueError(name)
    return L - _lse(L)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the source tree to import")
    ap.add_argument("--families", default="dir07,logit-t,zipf,mixture")
    ap.add_argument("--shapes", default="256x10,1024x10,256x100,1024x100")
    ap.add_argument("--budget", type=float, default=2e6, help="items x agents x goods per shape")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.root))
    from aggregators.validation import as_log_probs
    from markets import equilibrium

    tag = os.path.basename(os.path.abspath(args.root))
    print(f"tree: {tag}  threads: OMP={os.environ.get('OMP_NUM_THREADS')} NUMBA={os.environ.get('NUMBA_NUM_THREADS')}")
    print("| tree | family | K | A | items | auto us/item | auto iter | FP us/item | FP iter | auto / FP |")
    print("|---" * 10 + "|")
    for name in args.families.split(","):
        for shape in args.shapes.split(","):
            K, A = (int(v) for v in shape.split("x"))
            n = int(max(1, min(2000, args.budget // (A * K))))
            rng = np.random.default_rng(7)
            lp = as_log_probs(beliefs(name, n, A, K, rng))  # validated once, as the grid's are
            w = rng.uniform(0.2, 1.0, A)
            utils = [MIX[i % 4] for i in range(A)]
            out = {}
            for method in ("auto", "fixed_point"):
                r = equilibrium(lp, utils, w, method=method, tol=1e-10, check=False)  # compiles on a fresh cache
                ts = []
                for _ in range(args.calls):
                    t = time.process_time()
                    r = equilibrium(lp, utils, w, method=method, tol=1e-10, check=False)
                    ts.append(time.process_time() - t)
                out[method] = (float(np.median(ts)) / n * 1e6, float(r.n_iter.mean()))
            (a, ai), (f, fi) = out["auto"], out["fixed_point"]
            print(
                f"| {tag} | {name} | {K} | {A} | {n} | {a:.1f} | {ai:.2f} | {f:.1f} | {fi:.1f} | {a / f:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
