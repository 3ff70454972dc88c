"""How well :func:`aggregators.renyi_hessian.choose` picks the Hessian solve, from timed tables (session 56).

Reads tables of ``bench_renyi_grid.py --hessian all`` (each shape timed with the dense, Woodbury and CG
solves) and prints, per family and overall, the mean and largest ratio of the picked solve's time to the
best of the three ("excess"; each time as a multiple of the NumPy peer's in the same row), for the library's rule and for the rule it replaced in session 56 (CG's
product count by the spectral bound ``3 sqrt(1/γ) + 5``, at ``max(γ, 0.1)`` against dense: kept here only
to compare); then, for every shape where the two rules differ, the new pick's solve and gradient time over
the old pick's. No timing here: the tables are the measurements.

    .venv/bin/python benchmarks/renyi_choice_regret.py benchmarks/results/session56-renyi-modes-seed1.txt
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aggregators.renyi_hessian import MODES, choose  # noqa: E402

NAMES = {v: k for k, v in MODES.items()}


def old_choose(A: int, K: int, gmin: float) -> str:
    """The rule until session 56 (``aggregators/renyi_hessian.py`` at ``5e9804c``)."""
    if K <= 8:
        return "dense"
    dense = A * K * K + K**3 / 3.0
    wood = A * A * K + A**3 / 3.0 + 4.0 * A * K

    def cg(g: float) -> float:
        return 2.0 * A * K * (min(A + 1.0, 3.0 * np.sqrt(1.0 / g) + 5.0) + 1.5)

    if cg(max(gmin, 0.1)) < dense and cg(max(gmin, 1e-4)) < wood:
        return "cg"
    return "dense" if dense <= wood else "woodbury"


def read(paths: list[str]) -> dict:
    """``{(family, γ, K, A): {solve: {"s": ours / numpy, "gs": the same for the gradient}}}`` from the tables."""
    cells: dict = collections.defaultdict(dict)
    for path in paths:
        for line in open(path):
            if not line.startswith("| ") or "family" in line:
                continue
            r = [x.strip() for x in line.split("|")]
            fam, g, K, A, _n, _load, solve, tnp, tus = r[1:10]
            if solve not in MODES:
                continue
            # each row is its own interleaved run against the NumPy peer: its time over the peer's of the
            # same rounds (drift of the machine between rows cancels)
            d = {"s": float(tus) / float(tnp)}
            if len(r) > 26 and r[22]:
                d["gs"] = float(r[22]) / float(r[21])
            cells[(fam, g, int(K), int(A))][solve] = d
    return {k: v for k, v in cells.items() if len(v) == len(MODES)}


def main(argv=None) -> None:
    cells = read(list(argv if argv is not None else sys.argv[1:]))
    gmin = {}
    for key in cells:
        gmin[key] = 0.1 if key[1] == "per_agent" else float(key[1])  # bench_renyi_grid: per agent in [0.1, 0.5]
    print("| family | shapes | old rule: mean / max excess | new rule: mean / max excess |")
    print("|---|---|---|---|")
    fams = sorted({k[0] for k in cells}) + ["all"]
    for fam in fams:
        keys = [k for k in cells if fam in ("all", k[0])]
        ex = {"old": [], "new": []}
        for k in keys:
            d = cells[k]
            best = min(v["s"] for v in d.values())
            ex["old"].append(d[old_choose(k[3], k[2], gmin[k])]["s"] / best)
            ex["new"].append(d[NAMES[choose(k[3], k[2], gmin[k])]]["s"] / best)
        o, n = np.array(ex["old"]), np.array(ex["new"])
        print(f"| {fam} | {len(keys)} | {o.mean():.3f} / {o.max():.2f} | {n.mean():.3f} / {n.max():.2f} |")
    print("\n| family | γ | K | A | old pick | new pick | solve new / old | gradient new / old |")
    print("|---|---|---|---|---|---|---|---|")
    rs, rg = [], []
    for k in sorted(cells, key=lambda k: (k[0], k[1], k[3], k[2])):
        d = cells[k]
        o, n = old_choose(k[3], k[2], gmin[k]), NAMES[choose(k[3], k[2], gmin[k])]
        if o == n:
            continue
        rs.append(d[n]["s"] / d[o]["s"])
        rg.append(d[n]["gs"] / d[o]["gs"] if "gs" in d[n] and "gs" in d[o] else np.nan)
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {o} | {n} | {rs[-1]:.2f} | {rg[-1]:.2f} |")
    if rs:
        rs_a, rg_a = np.array(rs), np.array(rg)
        grad = (
            f"; gradients {np.nanmin(rg_a):.2f}-{np.nanmax(rg_a):.2f} (median {np.nanmedian(rg_a):.2f})"
            if np.isfinite(rg_a).any()
            else ""
        )
        print(
            f"\n{len(rs)} of {len(cells)} shapes change; solves new / old {rs_a.min():.2f}-{rs_a.max():.2f} "
            f"(median {np.median(rs_a):.2f}, above 1.1: {(rs_a > 1.1).sum()}){grad}"
        )


if __name__ == "__main__":
    main()
