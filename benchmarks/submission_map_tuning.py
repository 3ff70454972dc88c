"""The submission map's two settings, tuned by measurement (issue 19): the graphical lasso's
``λ = scale·sqrt(log p / n)`` and the partial correlation ``min_partial`` at which an edge joins a family.

* Planted competitions (:func:`evaluation.grouping.planted_competition`, families (4, 3, 3) + 6 lone,
  2,000 public items, 10 seeds) at copy noise 0.3, 0.6, 1.0, 1.25 and 1.5, and a *null* competition
  with 16 lone submissions and no family: the adjusted Rand index (ARI) between the families found and
  the planted ones (1: exact; on the null competition the share of seeds with no false family).
* The demo (:func:`evaluation.demo_task.make_demo_data`, 22 submissions of 10 participants, half the
  test pixels public): no planted truth, so two symptoms: the largest family (chaining: families
  that swallow most submissions are useless to read) and the share of multi-member families whose
  members all belong to one participant (a team's own variants are the near-copies one expects).

    PYTHONPATH=$PWD python benchmarks/submission_map_tuning.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from evaluation.demo_task import make_demo_data  # noqa: E402
from evaluation.grouping import planted_competition  # noqa: E402
from evaluation.split import public_private_split  # noqa: E402
from evaluation.submission_map import families_of, submission_partials  # noqa: E402

SCALES = (1.0, 2.0, 3.0, 4.0, 6.0)
THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.3)
NOISES = (0.3, 0.6, 1.0, 1.25, 1.5, 2.0)


def labels(families: list[list[int]], p: int) -> np.ndarray:
    out = np.empty(p, dtype=int)
    for k, f in enumerate(families):
        out[f] = k
    return out


def planted_scores(seeds: int, n_items: int) -> dict:
    """``{(noise, scale, threshold): mean ARI}``, noise ``None`` for the null competition (share of
    seeds where every submission stays alone)."""
    out: dict = {}
    for noise in (*NOISES, None):
        for seed in range(seeds):
            if noise is None:
                lp, y, planted = planted_competition(n_items=n_items, family_sizes=(), n_lone=16, seed=seed)
            else:
                lp, y, planted = planted_competition(n_items=n_items, copy_noise=noise, seed=seed)
            truth = labels(planted, lp.shape[1])
            for scale in SCALES:
                P = submission_partials(lp, y, scale=scale)[0]
                for t in THRESHOLDS:
                    found = families_of(P, t)
                    s = (
                        float(len(found) == lp.shape[1])
                        if noise is None
                        else adjusted_rand_score(truth, labels(found, len(truth)))
                    )
                    out.setdefault((noise, scale, t), []).append(s)
    return {k: float(np.mean(v)) for k, v in out.items()}


def demo_scores() -> dict:
    """``{(scale, threshold): (largest family, share of multi-member families within one participant)}``."""
    _, te, agents = make_demo_data(n_train=30000, n_test=4000, seed=2026, secret=1)
    lp = np.stack([a[2] for a in agents], axis=1)
    public = public_private_split(len(te.y), 0.5, 0)
    owner = [a[0] for a in agents]
    out = {}
    for scale in SCALES:
        P = submission_partials(lp[public], te.y[public], scale=scale)[0]
        for t in THRESHOLDS:
            multi = [f for f in families_of(P, t) if len(f) > 1]
            pure = np.mean([len({owner[i] for i in f}) == 1 for f in multi]) if multi else float("nan")
            out[(scale, t)] = (max((len(f) for f in multi), default=1), float(pure), len(multi))
    return out


def main(seeds: int = 10, n_items: int = 2000) -> None:
    print(f"load (1, 5, 15 min): {os.getloadavg()}")
    planted = planted_scores(seeds, n_items)
    demo = demo_scores()
    head = " | ".join(f"ARI noise {n}" for n in NOISES)
    print(
        f"| scale | min_partial | {head} | mean ARI | null: no false family | demo: largest family | "
        "demo: families within one participant | demo: families |"
    )
    print("|---|---|" + "---|" * (len(NOISES) + 5))
    for scale in SCALES:
        for t in THRESHOLDS:
            aris = [planted[(n, scale, t)] for n in NOISES]
            big, pure, nf = demo[(scale, t)]
            print(
                f"| {scale} | {t} | " + " | ".join(f"{a:.2f}" for a in aris) + f" | {np.mean(aris):.3f} | "
                f"{planted[(None, scale, t)]:.1f} | {big} | {pure:.2f} | {nf} |"
            )
    print(f"load (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
