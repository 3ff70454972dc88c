"""What a market grid's cells allow any iterative method, from a table of ``bench_markets_grid.py``.

For each cell of one utility mix with K >= ``--min-goods`` the grid gives ``auto / FP``, ``floor / FP`` (the
``max_iter=0`` call: validation, floor, the powers, the start and one evaluation) and the iterations of
``auto`` and of the seed's fixed point (``n_FP``). One pass of the fixed point then costs ``e = (1 - floor) /
n_FP`` of its time, and a method that starts where every method here starts and evaluates its iterates
costs at least ``floor + m e`` for ``m`` evaluations after the start: the table gives ``m`` = 1 (the least
for any method that does not stop at the start), 2, and ``auto``'s own step count (each step a pass and a free
direction). Where ``floor + e`` exceeds 0.2, no method that must evaluate its answer once more than the start
can be at 0.2x the fixed point. Reads the table only; times nothing.

    .venv/bin/python benchmarks/grid_pass_bounds.py benchmarks/results/session48-grid-spread.txt spread-low
"""

from __future__ import annotations

import argparse


def read_rows(path):
    """``(family, K, A, utilities, auto/FP, floor/FP, n_auto, n_FP)`` of each cell with a fixed-point
    baseline in a ``bench_markets_grid.py`` table."""
    rows = []
    for line in open(path):
        p = [x.strip() for x in line.split("|")]
        if len(p) < 13 or not p[2].isdigit() or p[8] == "-":
            continue
        it_a, it_f = (float(x) for x in p[12].split("/"))
        rows.append((p[1], int(p[2]), int(p[3]), p[5], float(p[9].split()[0]), float(p[10]), it_a, it_f))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table")
    ap.add_argument("utilities")
    ap.add_argument("--min-goods", type=int, default=256)
    ap.add_argument("--target", type=float, default=0.2)
    args = ap.parse_args(argv)
    sel = [r for r in read_rows(args.table) if r[3] == args.utilities and r[1] >= args.min_goods]
    print(
        "| family | K | A | auto/FP | floor/FP | n auto | n FP | start+1 pass | start+2 passes | start+n_auto passes |"
    )
    print("|---" * 10 + "|")
    over = []
    for fam, k, a, _, ratio, floor, it_a, it_f in sel:
        e = (1.0 - floor) / it_f
        b = (floor + e, floor + 2 * e, floor + it_a * e)
        print(
            f"| {fam} | {k} | {a} | {ratio:.2f} | {floor:.2f} | {it_a:.1f} | {it_f:.1f} | {b[0]:.3f} | {b[1]:.3f} | {b[2]:.3f} |"
        )
        if ratio > args.target:
            over.append(b)
    t = args.target
    print(
        f"\ncells: {len(sel)}; auto/FP > {t}: {len(over)}; of those start+1 pass > {t}: {sum(b[0] > t for b in over)}, "
        f"start+2 passes > {t}: {sum(b[1] > t for b in over)}, start+n_auto passes > {t}: {sum(b[2] > t for b in over)}"
    )


if __name__ == "__main__":
    main()
