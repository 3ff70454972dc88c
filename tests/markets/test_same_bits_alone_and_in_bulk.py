"""A market item's prices are the same bits whether it is solved alone or in a call of 300 (session 55).

``test_equilibrium.py::test_items_solved_together_equal_items_solved_alone`` allows 1e-13. Until session
55 the validator normalised inputs of 65,536 numbers or more by a compiled pass and smaller ones in
NumPy, which differ in the last bit; the same item then came out up to 2e-15 apart, and Anderson, whose
accept test compares residuals, 2-5e-12 apart with a pass more. Every size now takes the one compiled
pass (:data:`aggregators.validation.FAST_PATH_MIN_SIZE`), and every method here gives equal bits."""

import numpy as np
import pytest

from markets import equilibrium

from .conftest import random_beliefs

MARKETS = [
    ([2.0, "log", "exp", 10.0, "exp", 30.0], ["newton", "newton_cg"]),
    ([2.0, "log", 10.0, 30.0, "log", 2.0], ["newton_cg", "fixed_point", "anderson", "auto"]),
    ([1.05, 1.07, 2.0, "log", 3.0, 1.02], ["auto", "fixed_point", "anderson"]),  # near-log agents
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("utils, methods", MARKETS)
def test_an_item_alone_and_in_a_call_of_300_gives_the_same_bits(seed, utils, methods):
    rng = np.random.default_rng(seed)
    lp = random_beliefs(rng, 300, 6, 40, conc=0.1)  # 72,000 numbers: the parallel validation pass
    W = rng.uniform(0.5, 2.0, 6)
    for method in methods:
        together = equilibrium(lp, utils, W, method=method, tol=1e-12, floor=1e-6, check=False)
        for j in range(0, 300, 23):
            pick = [j] if j == 0 else [0, j]  # Newton-CG's first item decides the frozen steps (see above)
            alone = equilibrium(lp[pick], utils, W, method=method, tol=1e-12, floor=1e-6, check=False)
            assert np.array_equal(together.log_prices[j], alone.log_prices[-1]), (method, j)
            assert together.n_iter[j] == alone.n_iter[-1]
