"""The chunked pool fits in-process (the Dask runs are in test_on_dask.py): same optimum, bad input."""

import numpy as np
import pytest

from aggregators import LinearPool, LogPool, RenyiPool
from benchmarks.competition_data import make_competition_predictions
from benchmarks.logpool_families import make_family
from cluster.chunked_fit import fit_chunked, fit_log_pool
from cluster.scattered import Scattered
from solvers.errors import InputError


def test_above_8000_items_the_subsampled_hessian_path_is_the_in_memory_one():
    lp, y = make_competition_predictions(9000, 30, 8, seed=0)
    ref = LogPool().fit(lp, y)
    pool = fit_log_pool(lp, y, chunk_items=1700)
    np.testing.assert_allclose(pool.weights_, ref.weights_, atol=1e-10)
    assert pool.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(pool.predict(lp[:20]), ref.predict(lp[:20]), atol=1e-10)


def test_past_the_warm_start_threshold_the_chunked_fit_takes_the_in_memory_path():
    """From 41 agents and 1,000 items the in-memory Newton first solves a random quarter of the items
    (``subsample``), then steps with float32 model Hessians: the chunked problem offers the same
    subsample over its blocks and cuts its float32 products where the in-memory runs are cut, so the
    iterates are the same to rounding. The problem is flat: a tight fit is 1e-5 away from both."""
    lp, y = make_competition_predictions(3000, 60, 8, seed=0)
    ref = LogPool().fit(lp, y)
    assert "warm_start" in ref.fit_result_.extra  # the subsample-first path
    for chunk in (700, 1024):  # blocks across, and along, the in-memory float32 runs of 256 items
        pool = fit_log_pool(lp, y, chunk_items=chunk)
        np.testing.assert_allclose(pool.weights_, ref.weights_, atol=1e-10)
        assert pool.n_iter_ == ref.n_iter_ and pool.fit_result_.n_passes == pytest.approx(ref.fit_result_.n_passes)
        assert pool.fit_result_.extra["warm_start"] == ref.fit_result_.extra["warm_start"]
    tight = LogPool(tol=1e-13).fit(lp, y).weights_
    assert np.abs(tight - ref.weights_).max() > 1e-7  # so the 1e-10 above is the path, not the optimum


def test_bad_input_names_the_argument(tmp_path):
    lp, y = make_competition_predictions(50, 3, 4, seed=0)
    cases = [
        ((lp[:, :, :1], y), {}, "log_probs"),
        ((lp, y[:-1]), {}, "y"),
        ((lp, y), {"chunk_items": 0}, "chunk_items"),
        ((str(tmp_path / "missing.zarr"), y), {}, "log_probs"),
    ]
    for args, kw, field in cases:
        with pytest.raises(InputError) as e:
            fit_log_pool(*args, **kw)
        assert e.value.field == field
    with pytest.raises(InputError) as e:  # blocks on a cluster's workers, without its client
        fit_log_pool(Scattered(lp.shape, ()), y)
    assert e.value.field == "client"
    bad = lp.copy()
    bad[37, 1, 2] = np.nan
    with pytest.raises(InputError) as e:
        fit_log_pool(bad, y, chunk_items=10)
    assert e.value.item == 37  # the item in the whole array, not in its block


@pytest.mark.parametrize(
    "make", [lambda: LinearPool(solver="newton"), lambda: RenyiPool(gamma=0.3)], ids=["linear", "renyi"]
)
def test_linear_and_renyi_chunked_fits_take_the_in_memory_path(make):
    # above 8,000 items: Newton's subsampled Hessian over blocks, as in memory
    lp, y = make_family("gaussian-logit", 9000, 20, 6, seed=5)
    ref = make().fit(lp, y)
    on = fit_chunked(make(), lp, y, chunk_items=1700)
    # the Rényi fixed point is solved to fixed_point_tol = 1e-11 from the same warm starts: the same
    # iterates to rounding (the bound the in-memory solver guarantees is its tol = 1e-8 on the gap)
    np.testing.assert_allclose(on.weights_, ref.weights_, atol=1e-10)
    assert on.n_iter_ == ref.n_iter_ and on.fit_result_.converged
    assert on.fit_result_.extra["driver_bytes"] == 0  # in-process: nothing crosses a network
    np.testing.assert_allclose(on.predict(lp[:20]), ref.predict(lp[:20]), atol=1e-10)
    if isinstance(ref, RenyiPool):
        assert on.gamma_ == ref.gamma_ == 0.3 and on.loglik_ == pytest.approx(ref.loglik_, abs=1e-12)


def test_the_linear_pool_by_em_lands_within_its_tolerance_of_the_optimum():
    # EM (SQUAREM) stops on a gap of 1e-10, which leaves the weights ~1e-8 from the optimum; its
    # trajectory depends on rounding (the in-memory fit on permuted items moves 2e-9), so the chunked
    # EM is compared with the exact optimum, as the in-memory EM is
    lp, y = make_family("gaussian-logit", 9000, 30, 8, seed=2)
    opt = LinearPool(solver="newton", tol=1e-14).fit(lp, y).weights_
    ref = LinearPool(solver="em").fit(lp, y)  # EM is a choice now; the default is Newton (session 14)
    on = fit_chunked(LinearPool(solver="em"), lp, y, chunk_items=1700)
    assert on.fit_result_.method == "em" and on.fit_result_.converged
    assert np.abs(on.weights_ - opt).max() < 5e-8 and np.abs(ref.weights_ - opt).max() < 5e-8


def test_pools_the_chunked_fit_does_not_offer_are_refused():
    lp, y = make_competition_predictions(50, 3, 4, seed=0)
    for pool, field in [(RenyiPool(gamma="grid"), "pool"), (RenyiPool(learn_lam=True), "pool"), (object(), "pool")]:
        with pytest.raises(InputError) as e:
            fit_chunked(pool, lp, y)
        assert e.value.field == field
    with pytest.raises(InputError) as e:
        fit_chunked(LogPool(), lp, y, reduce="everywhere")
    assert e.value.field == "reduce"


def test_the_chunked_renyi_fit_starts_as_the_in_memory_one():
    """At a small shared γ without weights the in-memory fit starts from the log pool's weights (its
    γ → 0 limit) and solves their support first; from given weights (the competition's γ sweep, each
    γ from the previous one's weights) it keeps a point already on the simplex as it is. The chunked
    fit does both, so the weights are the same: the same iterations and passes, and weights within
    the fits' own tolerance (``RenyiPool.tol = 1e-8``: the chunked fit sums over blocks, so its iterates
    differ by rounding, and how far that travels depends on the machine: within 1e-10 on the Intel
    Xeon of the session that wrote this test, 8.4e-10 on one of 150 weights on an AMD EPYC, session 37)."""
    from evaluation.aggregation import RENYI_OPTIONS

    lp, y = make_competition_predictions(1000, 150, 16, seed=1)
    for gamma in (0.25, 0.1):  # from the log pool's weights
        ref = RenyiPool(gamma=gamma).fit(lp, y)
        on = fit_chunked(RenyiPool(gamma=gamma), lp, y, chunk_items=300)
        np.testing.assert_allclose(on.weights_, ref.weights_, rtol=0, atol=1e-8)
        assert on.n_iter_ == ref.n_iter_
    w0 = None
    for eta in (2.0, 5.0, 10.0, 30.0):  # the sweep's warm chain
        ref = RenyiPool(gamma=1 / eta, weights=w0, **RENYI_OPTIONS).fit(lp, y)
        on = fit_chunked(RenyiPool(gamma=1 / eta, weights=w0, **RENYI_OPTIONS), lp, y, chunk_items=300)
        np.testing.assert_allclose(on.weights_, ref.weights_, rtol=0, atol=1e-8)
        assert on.fit_result_.n_passes == pytest.approx(ref.fit_result_.n_passes)
        w0 = list(ref.weights_)


def _counts(n, seed=1):
    """Integer item weights 0-3, the first eighth of the items (whole blocks) left out."""
    sw = np.random.default_rng(seed).integers(0, 4, size=n).astype(float)
    sw[: n // 8] = 0.0
    return sw


WEIGHTED = [
    # past 40 agents and 1,000 items: the warm start on a random quarter of the items (zero weights
    # among them) and float32 Hessian runs cut across blocks, some of whose items all weigh 0
    ("log", LogPool, "competition", (3000, 60, 8), 700),
    # past 8,000 items of positive weight and 40 agents: the subsampled Hessian draws its items among
    # those of positive weight (the in-memory problem drops the others)
    ("linear", lambda: LinearPool(solver="newton"), "gaussian-logit", (12000, 50, 4), 1700),
    ("renyi", lambda: RenyiPool(gamma=0.3), "gaussian-logit", (1200, 30, 6), 300),
    ("renyi-limit-start", lambda: RenyiPool(gamma=0.1), "competition", (1000, 60, 8), 300),
    # past 40 agents and 1,000 items the Rényi fit too starts on a random quarter of the items and
    # steps with float32 curvature runs of 64 items: views of blocks whose sampled items all weigh 0
    ("renyi-subsample", lambda: RenyiPool(gamma=0.5), "competition", (2500, 60, 8), 290),
]


@pytest.mark.parametrize("name, make, family, shape, chunk", WEIGHTED, ids=[w[0] for w in WEIGHTED])
def test_weighted_chunked_fits_equal_the_in_memory_weighted_fits(name, make, family, shape, chunk):
    lp, y = (
        make_competition_predictions(*shape, seed=0) if family == "competition" else make_family(family, *shape, seed=3)
    )
    sw = _counts(shape[0])
    ref = make().fit(lp, y, sample_weight=sw)
    on = fit_chunked(make(), lp, y, chunk_items=chunk, sample_weight=sw)
    np.testing.assert_allclose(on.weights_, ref.weights_, atol=1e-10)
    assert on.n_iter_ == ref.n_iter_ and on.fit_result_.n_passes == pytest.approx(ref.fit_result_.n_passes)
    assert on.n_floored_ == ref.n_floored_
    # the weights matter: the unweighted fit is elsewhere (so the 1e-10 above can fail)
    assert np.abs(make().fit(lp, y).weights_ - ref.weights_).max() > 1e-6
    if name == "log":
        assert "warm_start" in ref.fit_result_.extra


POOLS_TIGHT = [
    ("linear-newton", lambda: LinearPool(solver="newton", tol=1e-13), 1e-6),
    ("log", lambda: LogPool(tol=1e-14), 1e-8),
    ("renyi", lambda: RenyiPool(gamma=0.3, tol=1e-12, max_iter=3000), 1e-6),
]


@pytest.mark.parametrize("name, make, tol", POOLS_TIGHT, ids=[p[0] for p in POOLS_TIGHT])
def test_chunked_integer_weights_equal_the_chunked_fit_on_repeated_items(name, make, tol):
    # the tolerances of tests/aggregators/test_sample_weight.py's in-memory check of the same property
    lp, y = make_family("gaussian-logit", 300, 6, 4, seed=4)
    sw = _counts(300, seed=5)
    rep = np.repeat(np.arange(300), sw.astype(int))
    weighted = fit_chunked(make(), lp, y, chunk_items=70, sample_weight=sw)
    repeated = fit_chunked(make(), lp[rep], y[rep], chunk_items=70)
    np.testing.assert_allclose(weighted.weights_, repeated.weights_, rtol=0, atol=tol)
    dropped = fit_chunked(make(), lp[sw > 0], y[sw > 0], chunk_items=70)  # weight 0 is not the same as 1
    assert np.abs(dropped.weights_ - weighted.weights_).max() > 10 * tol


def test_bad_sample_weight_names_the_argument():
    lp, y = make_competition_predictions(50, 3, 4, seed=0)
    ok = np.ones(50)
    for bad in (np.r_[ok[:-1], -1.0], np.r_[ok[:-1], np.nan], ok[:-1], np.zeros(50), np.ones((50, 2)), "heavy"):
        for make in (LogPool, LinearPool, lambda: RenyiPool(gamma=0.3)):
            with pytest.raises(InputError) as e:
                fit_chunked(make(), lp, y, chunk_items=10, sample_weight=bad)
            assert e.value.field == "sample_weight"


@pytest.mark.parametrize("make", [LogPool, lambda: RenyiPool(gamma=0.5)], ids=["log", "renyi"])
def test_dropping_a_chunked_fit_frees_its_blocks_without_the_cyclic_collector(make):
    """The problem's ``prox`` was a lambda on the instance closing over it: every chunked problem a
    reference cycle holding its blocks (in memory here, on the workers on a cluster) until the cyclic
    collector ran."""
    import gc
    import tracemalloc

    lp, y = make_family("gaussian-logit", 3000, 12, 8, seed=4)
    fit_chunked(make(), lp, y, chunk_items=1000)  # once outside the measurement (compilation, caches)
    gc.collect()
    gc.disable()
    try:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        fitted = fit_chunked(make(), lp, y, chunk_items=1000)
        del fitted
        left = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
    finally:
        gc.enable()
    assert left < 0.1 * lp.nbytes, (left, lp.nbytes)
