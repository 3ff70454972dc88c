"""Which structure method the submission map uses (issue 19): the graphical lasso against neighbourhood
selection on generated competitions with planted families (:func:`evaluation.grouping.planted_competition`).

For each copy-noise level (harder as it grows) and seed: whether the families found on the public
residuals equal the planted ones, and the seconds of the structure fit. Both at ``λ = sqrt(log p / n)``.

    PYTHONPATH=$PWD python benchmarks/submission_map_methods.py
"""

from __future__ import annotations

import os
import time

import numpy as np

from evaluation.grouping import planted_competition
from evaluation.submission_map import (
    families_of,
    graphical_lasso,
    log_loss_residuals,
    partial_correlations,
    residual_correlation,
)
from graphical.neighbourhood import neighbourhood_selection
from graphical.structure_mle import fit_on_graph


def glasso(R, lam):
    return partial_correlations(graphical_lasso(residual_correlation(R), lam, tol=1e-8).x)


def neighbourhood(R, lam):
    C = residual_correlation(R)
    return partial_correlations(fit_on_graph(C, neighbourhood_selection(R, lam)))


def main(seeds: int = 10, n_items: int = 2000) -> None:
    print(f"load: {os.getloadavg()[0]:.2f}; {seeds} seeds, {n_items} public items, families (4, 3, 3) + 6 lone")
    print("| copy noise | method | exact families | mean seconds |")
    print("|---|---|---|---|")
    for copy_noise in (0.3, 1.0, 1.5):
        for name, fit in (("graphical lasso", glasso), ("neighbourhood selection", neighbourhood)):
            hits, secs = 0, []
            for seed in range(seeds):
                lp, y, fam = planted_competition(n_items=n_items, copy_noise=copy_noise, seed=seed)
                R = log_loss_residuals(lp, y)
                lam = float(np.sqrt(np.log(R.shape[1]) / R.shape[0]))
                t = time.perf_counter()
                with np.errstate(all="ignore"):  # the MLE on a singular correlation breaks down
                    P = fit(R, lam)
                secs.append(time.perf_counter() - t)
                hits += sorted(families_of(P)) == sorted(fam)
            print(f"| {copy_noise} | {name} | {hits}/{seeds} | {np.mean(secs):.4f} |")


if __name__ == "__main__":
    main()
