"""The chunked Rényi weight fit takes the in-memory path (issue 18 §4 with issue 13 §3's Newton):
its blocks hold the in-memory views (subsample warm start, working sets) and cut the float32
curvature at the in-memory runs, so the weights equal the in-memory ones to rounding."""

import numpy as np
import pytest

from aggregators import RenyiPool
from aggregators.renyi_weight_hessian import CURVATURE_CHUNK, RenyiWeightProblem
from benchmarks.competition_data import make_competition_predictions
from benchmarks.logpool_families import make_family
from cluster.chunked_fit import _groups, fit_chunked
from cluster.chunked_problem import ChunkedProblem
from evaluation.aggregation import RENYI_OPTIONS
from solvers.methods import newton


def _chunked(lp, y, gamma, chunk):
    opts = {"floor": None, "gamma": np.full(lp.shape[1], gamma), "tol": 1e-11}
    groups = _groups(
        "renyi", opts, lp, None, lp.shape, (y, None), None, {"chunk_items": chunk, "persist": None, "timeout": 10}
    )
    return ChunkedProblem("renyi", opts, groups, lp.shape, client=None)


@pytest.mark.parametrize("chunk", [100, 2 * CURVATURE_CHUNK])  # blocks across, and along, the runs
def test_the_float32_curvature_over_sampled_items_is_the_in_memory_one(chunk):
    """Over a working set's view of a subsample, at the point the view has just solved: the blocks'
    curvature (split runs joined where they meet) is the in-memory one to the last bit or so."""
    lp, y = make_competition_predictions(700, 12, 6, seed=3)
    mem, on = RenyiWeightProblem(lp, y, 0.3, tol=1e-11), _chunked(lp, y, 0.3, chunk)
    rng = np.random.default_rng(0)
    items = np.sort(rng.choice(700, 400, replace=False))
    S = np.array([0, 2, 3, 5, 7, 8, 11])
    x = rng.dirichlet(np.ones(S.size))
    views = [p.subsample(items).restrict(S) for p in (mem, on)]
    for v in views:
        v.value_and_grad(x)
    sample = np.sort(rng.choice(400, 150, replace=False))
    for dtype in (np.float32, None):
        a = views[0].hessian(x, items=sample, dtype=dtype)
        b = views[1].hessian(x, items=sample, dtype=dtype)
        assert np.abs(a - b).max() <= 1e-15 * np.abs(a).max()
    f32 = views[0].hessian(x, items=sample, dtype=np.float32)
    f64 = views[0].hessian(x, items=sample)
    assert 1e-12 < np.abs(f32 - f64).max() < 1e-5 * np.abs(f64).max()  # so the float32 runs were compared


@pytest.mark.parametrize("chunk", [300, 10 * CURVATURE_CHUNK])
def test_the_chunked_fit_from_a_subsample_warm_start_is_the_in_memory_one(chunk, monkeypatch):
    """From 1,000 items the in-memory Newton first solves a random quarter of them, then steps with
    float32 curvatures over sampled items, BFGS-corrected: the chunked fit does the same, in as many
    iterations and passes, at a cold γ, from the log pool's weights (γ = 0.1) and along the
    competition sweep's warm chain.

    To what precision (measured in session 25): the chunked fit sums its values, gradients and
    curvatures over blocks, so its iterates differ from the in-memory ones by about 1e-15 from the
    first curvature on (7.6e-16 at the first). With float32 model curvatures that can move one entry
    of one item's matrix by one float32 rounding (at γ = 0.1: 1 matrix of 3,600, relative 4.6e-9), and
    the last Newton steps carry it into the weights: 1.3e-13 apart. Whether such a flip happens is
    chance (it did not with ``np.linalg.inv``'s inverses, 5e-16 apart; it does with the Cholesky ones
    of ``solvers.kernels.spd_inverse``, whose inverses are bitwise those of the same matrix in either
    fit). With float64 model curvatures, same path, the two agree to 1e-14.

    How far a flip travels depends on the machine's arithmetic: 1.3e-13 on the Intel Xeon (AVX-512) of
    session 25, 6.5e-11 on an AMD EPYC (session 37, the same code). Both fits stop at their tolerance
    (``RenyiPool.tol = 1e-8``); with float32 curvatures the test asserts the same iterations and passes
    (the same path) and weights within a tenth of that tolerance."""
    lp, y = make_family("gaussian-logit", 1200, 60, 8, seed=4)
    for dtype, atol in ((np.float64, 1e-14), (np.float32, 1e-9)):
        monkeypatch.setattr(newton, "GROW_HESSIAN_DTYPE", dtype)
        for gamma in (0.5, 0.1):
            ref = RenyiPool(gamma=gamma).fit(lp, y)
            on = fit_chunked(RenyiPool(gamma=gamma), lp, y, chunk_items=chunk)
            assert ref.fit_result_.extra["warm_start"]
            np.testing.assert_allclose(on.weights_, ref.weights_, rtol=0, atol=atol)
            assert on.n_iter_ == ref.n_iter_ and on.fit_result_.n_passes == pytest.approx(ref.fit_result_.n_passes)
    w0 = None
    for eta in (2.0, 30.0):
        ref = RenyiPool(gamma=1 / eta, weights=w0, **RENYI_OPTIONS).fit(lp, y)
        on = fit_chunked(RenyiPool(gamma=1 / eta, weights=w0, **RENYI_OPTIONS), lp, y, chunk_items=chunk)
        # the sweep's fits stop at tol 1e-5 (RENYI_OPTIONS): measured 1.5e-9 apart on an AMD EPYC
        np.testing.assert_allclose(on.weights_, ref.weights_, rtol=0, atol=1e-8)
        w0 = list(ref.weights_)
