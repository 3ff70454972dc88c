"""Markets of real predictions with many classes (sessions 56-57): the demo competition's agents
(:mod:`evaluation.demo_task`) predicting a pixel's grey level over 256 levels, the ``pixels`` family of
``benchmarks/bench_markets_grid.py``. A third of their beliefs lie below the default floor (discretised
Laplace and Gaussian tails), which no synthetic family of the grid has in that form. Every method must reach
the same equilibrium as the seed's fixed point, and clear the market, on the mixes the grid times."""

import numpy as np
import pytest

from benchmarks.bench_markets_grid import family, fills, utilities
from markets import equilibrium


def _every_method_matches_the_fixed_point(lp, u, w):
    """``auto``, ``newton_cg`` and ``anderson`` converge, clear to 1e-12 and give the fixed point's prices."""
    ref = equilibrium(lp, u, w, method="fixed_point", tol=1e-12)
    assert ref.all_converged
    for m in ("auto", "newton_cg", "anderson"):
        r = equilibrium(lp, u, w, method=m, tol=1e-12)
        assert r.all_converged, m
        assert np.max(r.clearing_error) <= 1e-12 and np.max(r.budget_error) <= 1e-12, m
        # both within about tol * eta of the equilibrium (log-prices; eta <= 30 in these markets)
        assert np.max(np.abs(r.log_prices - ref.log_prices)) <= 1e-9, m


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
    _every_method_matches_the_fixed_point(lp, u, w)
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


@pytest.fixture(scope="module")
def pairs():
    return family("pixel-pairs", 6, 22, 1024)


def test_pixel_pairs_are_each_agents_product_of_its_two_marginals(pairs):
    """``pixel-pairs`` (session 57): K = 32**2 classes; item j is test pixels 2j and 2j + 1 at 32 levels,
    class ``y1 * 32 + y2``; an agent's joint belief is the outer product of its two marginals."""
    assert pairs.shape == (6, 22, 1024)
    assert np.allclose(np.exp(pairs).sum(axis=2), 1.0, rtol=0, atol=1e-12)
    single = family("pixels", 12, 22, 32)  # the same 12 test pixels, one at a time
    joint = pairs.reshape(6, 22, 32, 32)
    want = single[0::2, :, :, None] + single[1::2, :, None, :]
    assert np.allclose(joint, want, rtol=0, atol=1e-10)
    # rank one in the (L, L) layout: every 2 x 2 minor of exp(joint) vanishes
    e = np.exp(joint[0, 3])
    assert np.allclose(e[:5, :5] * e[5:10, 5:10], e[:5, 5:10] * e[5:10, :5], rtol=1e-9, atol=0)
    assert fills("pixel-pairs", 22, 4096) and fills("pixel-pairs", 2, 16)
    assert not fills("pixel-pairs", 23, 1024) and not fills("pixel-pairs", 2, 1000)
    assert not fills("pixel-pairs", 2, 257**2)
    with pytest.raises(ValueError, match="pixel-pairs"):
        family("pixel-pairs", 3, 2, 1000)


@pytest.mark.parametrize("spec", ["mix", "spread-low"])
@pytest.mark.parametrize("a", [2, 22])
def test_every_method_reaches_the_fixed_point_at_1024_real_classes(pairs, spec, a):
    """Real predictions above 256 classes: the general path's methods on the pixel-pairs family."""
    lp = np.ascontiguousarray(pairs[:, :a])
    assert (lp < np.log(1e-9)).mean() > 0.3  # products of floored tails: over half below the floor
    u = utilities(spec, a)
    w = np.random.default_rng(2).uniform(0.2, 1.0, a)
    _every_method_matches_the_fixed_point(lp, u, w)
