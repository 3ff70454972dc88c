"""Does grouping near-duplicate submissions before fitting change a pool's held-out score? (issue 19)

On a generated competition with planted families (:func:`evaluation.grouping.planted_competition`,
several seeds) and on the demo competition (:func:`evaluation.demo_task.make_demo_data`, 22
submissions of 10 participants, half the test pixels public as the service's demo does): the linear
and the log pool fitted on the public part with every submission and with one agent per family of the
submission map, scored by private log loss (nats).

    PYTHONPATH=$PWD python reproductions/submission_grouping.py
"""

from __future__ import annotations

import os

import numpy as np

from evaluation.demo_task import make_demo_data
from evaluation.grouping import grouping_effect, planted_competition
from evaluation.split import public_private_split


def _print(name: str, res: dict) -> None:
    for row in res["rows"]:
        d = row["grouped"] - row["all"]
        print(
            f"| {name} | {res['n_submissions']} -> {res['n_families']} | {row['method']} "
            f"| {row['all']:.4f} | {row['grouped']:.4f} | {d:+.4f} |"
        )


def main(seeds: int = 5) -> None:
    print(f"load: {os.getloadavg()[0]:.2f}")
    print("| competition | agents -> families | pool | private log loss, all | grouped | grouped - all |")
    print("|---|---|---|---|---|---|")
    for seed in range(seeds):
        lp, y, planted = planted_competition(n_items=4000, seed=seed)
        res = grouping_effect(lp, y, public_private_split(len(y), 0.5, seed))
        assert sorted(res["families"]) == sorted(planted)
        _print(f"planted, seed {seed}", res)
    _, te, agents = make_demo_data(n_train=30000, n_test=4000, seed=2026, secret=1)
    lp = np.stack([a[2] for a in agents], axis=1)
    families: dict[float, list] = {}
    names = [f"{a[0]}: {a[1]}" for a in agents]
    for min_partial in (0.1, 0.2, 0.3):
        res = grouping_effect(lp, te.y, public_private_split(len(te.y), 0.5, 0), min_partial=min_partial)
        _print(f"demo, families at partial correlation >= {min_partial}", res)
        families[min_partial] = [[names[i] for i in f] for f in res["families"] if len(f) > 1]
    for min_partial, found in families.items():
        print(f"demo families at >= {min_partial}:", found)


if __name__ == "__main__":
    main()
