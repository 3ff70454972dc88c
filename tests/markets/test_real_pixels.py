"""Markets of real predictions with many classes (session 56): the demo competition's agents
(:mod:`evaluation.demo_task`) predicting a pixel's grey level over 256 levels, the ``pixels`` family of
``benchmarks/bench_markets_grid.py``. A third of their beliefs lie below the default floor (discretised
Laplace and Gaussian tails), which no synthetic family of the grid has in that form. Every method must reach
the same equilibrium as the seed's fixed point, and clear the market, on the mixes the grid times."""

import numpy as np
import pytest

from benchmarks.bench_markets_grid import family, fills, utilities
from markets import equilibrium


@pytest.fixture(scope="module")
def pixels():
    return family("pixels", 12, 22, 256)


@pytest.mark.parametrize("spec", ["mix", "spread-low", "10"])
@pytest.mark.parametrize("a", [2, 10, 22])
def test_every_method_reaches_the_fixed_point_on_real_predictions(pixels, spec, a):
    lp = np.ascontiguousarray(pixels[:, :a])
    assert (lp < np.log(1e-9)).mean() > 0.2  # the floor is at work on this data
    u = float(spec) if spec == "10" else utilities(spec, a)
    w = np.random.default_rng(1).uniform(0.2, 1.0, a)
    ref = equilibrium(lp, u, w, method="fixed_point", tol=1e-12)
    assert ref.all_converged
    for m in ("auto", "newton_cg", "anderson"):
        r = equilibrium(lp, u, w, method=m, tol=1e-12)
        assert r.all_converged, m
        assert np.max(r.clearing_error) <= 1e-12 and np.max(r.budget_error) <= 1e-12, m
        # both within about tol * eta of the equilibrium (log-prices; eta <= 30 in these markets)
        assert np.max(np.abs(r.log_prices - ref.log_prices)) <= 1e-9, m
    if spec != "10":  # the general path's Newton-CG is what auto takes on these markets
        assert equilibrium(lp, u, w, method="auto", tol=1e-12).method == "newton_cg"


def test_the_pixels_family_is_what_the_grid_can_fill():
    assert fills("pixels", 22, 256) and not fills("pixels", 23, 256) and not fills("pixels", 2, 1024)
    assert fills("logit", 1000, 4096)
    with pytest.raises(ValueError, match="pixels"):
        family("pixels", 3, 2, 1024)
    lp = family("pixels", 5, 3, 64)
    assert lp.shape == (5, 3, 64)
    assert np.allclose(np.exp(lp).sum(axis=2), 1.0)
