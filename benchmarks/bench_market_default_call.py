"""Benchmark: the equilibrium call a user makes, with its defaults, split into its parts (issue #13 §1).

``bench_markets_grid.py`` times ``equilibrium(validated_beliefs, ..., check=False)``: the solve alone. A user
calls ``equilibrium(raw_log_beliefs, utilities, wealth)`` and pays, on either method, the validation (every
row normalised), the floor and the check (``check=True``: every agent's investment recomputed at the prices,
Table 2.4). This script times, per family and shape (goods x agents, the mixed market eta 2/10/30/log), CPU
time per item, median of ``--calls``:

- ``valid``: ``as_log_probs`` of the raw array;
- ``auto`` and ``FP``: ``equilibrium(validated, mix, w, check=False)`` (the solve, as the grid times it);
- ``check``: ``check_equilibrium`` at auto's prices (the compiled pass of ``markets.kernels.check``), and
  ``NumPy check``: the same conditions from :func:`markets.investments` agent by agent
  (:func:`markets.equilibrium.conditions_by_investments`, the implementation before session 43; checked here
  to agree within 1e-9 absolute);
- ``call auto`` / ``call FP``: ``equilibrium(raw, mix, w)`` with every default, and their ratio; and the
  ratio the same call had with the NumPy check (``call auto + NumPy check - check`` over the same for FP).

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_market_default_call.py
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_market_families import beliefs as other_beliefs  # noqa: E402
from bench_markets_grid import family as grid_family  # noqa: E402
from harness import cpu_timed as cpu  # noqa: E402

MIX = [2.0, 10.0, 30.0, "log"]
GRID = ("logit", "dups", "dirichlet")


def raw_beliefs(name, n, A, K):
    """Log-beliefs of a grid family or of ``bench_market_families``, shifted by a random constant per row
    (raw log-scores, not normalised: the validation normalises them)."""
    rng = np.random.default_rng(11)
    L = grid_family(name, n, A, K) if name in GRID else other_beliefs(name, n, A, K, rng)
    return L + rng.normal(0.0, 3.0, (n, A, 1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default="logit,dups,zipf,logit-t")
    ap.add_argument("--shapes", default="16x10,64x100,256x10,1024x10,4096x10,256x100,1024x100,4096x100,256x1000")
    ap.add_argument("--budget", type=float, default=2e6, help="items x agents x goods per shape")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args(argv)
    from aggregators.validation import as_log_probs
    from markets import check_equilibrium, equilibrium, make_agents
    from markets.equilibrium import conditions_by_investments

    print(f"threads: OMP={os.environ.get('OMP_NUM_THREADS')} NUMBA={os.environ.get('NUMBA_NUM_THREADS')}")
    print(
        "| family | K | A | items | valid | auto | FP | check | NumPy check | call auto | call FP "
        "| call auto / FP | (with NumPy check) | solve auto / FP |"
    )
    print("|---" * 14 + "|")
    for name in args.families.split(","):
        for shape in args.shapes.split(","):
            K, A = (int(v) for v in shape.split("x"))
            n = int(max(1, min(2000, args.budget // (A * K))))
            raw = raw_beliefs(name, n, A, K)
            mix = [MIX[i % 4] for i in range(A)]
            w = np.random.default_rng(1).uniform(0.2, 1.0, A)
            agents = make_agents(mix, w)
            lp = as_log_probs(raw)
            equilibrium(lp, mix, w)  # compile / load every kernel once
            t_valid, _ = cpu(lambda: as_log_probs(raw), args.calls)
            t_auto, ra = cpu(lambda: equilibrium(lp, mix, w, check=False), args.calls)
            t_fp, rf = cpu(lambda: equilibrium(lp, mix, w, method="fixed_point", check=False), args.calls)
            floored = lp if equilibrium(lp, mix, w, check=False).n_floored == 0 else None
            if floored is None:  # check at the floored beliefs, as the call does
                from markets.agents import floor_beliefs

                floored = floor_beliefs(lp, 1e-9)
            fl = floored.log_probs
            t_chk, c_new = cpu(lambda: check_equilibrium(fl, ra.log_prices, agents), args.calls)
            t_np, c_old = cpu(
                lambda: conditions_by_investments(fl, ra.log_prices, agents), 1 if A * K > 200_000 else args.calls
            )
            assert np.max(np.abs(c_new[0] - c_old[0])) < 1e-9 and np.max(np.abs(c_new[1] - c_old[1])) < 1e-9
            assert np.array_equal(c_new[3], c_old[2])
            t_ca, _ = cpu(lambda: equilibrium(raw, mix, w), args.calls)
            t_cf, _ = cpu(lambda: equilibrium(raw, mix, w, method="fixed_point"), args.calls)
            old = (t_ca + t_np - t_chk) / (t_cf + t_np - t_chk)

            def us(t):
                return f"{t / n * 1e6:.0f}"

            print(
                f"| {name} | {K} | {A} | {n} | {us(t_valid)} | {us(t_auto)} | {us(t_fp)} | {us(t_chk)} | {us(t_np)} "
                f"| {us(t_ca)} | {us(t_cf)} | {t_ca / t_cf:.2f} | {old:.2f} | {t_auto / t_fp:.2f} |",
                flush=True,
            )
    print("(µs per item, CPU time; valid/auto/FP/check columns are the parts, call columns the whole default call)")


if __name__ == "__main__":
    main()
