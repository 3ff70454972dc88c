"""Working-set Newton with a subsample warm start (issue 13 §2): the item-subsampled problem view,
the centred (float32) Hessian, and the optimum on the log-pool benchmark families against SLSQP."""

import numpy as np
import pytest

import solvers
from aggregators.validation import as_floored_log_probs
from benchmarks.logpool_families import make_family
from solvers.errors import InputError
from solvers.problems.loglinear import ConditionalLogLinear
from tests.references import slsqp_simplex


def _family(name, N=1200, A=60, K=8, seed=0):
    raw, y = make_family(name, N, A, K, seed)
    return as_floored_log_probs(raw).log_probs, y


@pytest.mark.parametrize("weighted", [False, True])
def test_subsample_is_the_problem_on_the_selected_items(weighted):
    lp, y = _family("gaussian-logit", N=200, A=12, K=5)
    rng = np.random.default_rng(0)
    c = rng.uniform(0.2, 3.0, size=200) if weighted else None
    items = np.sort(rng.choice(200, size=70, replace=False))
    view = ConditionalLogLinear.from_log_probs(lp, y, sample_weight=c).subsample(items)
    copy = ConditionalLogLinear.from_log_probs(lp[items], y[items], sample_weight=None if c is None else c[items])
    w = rng.dirichlet(np.ones(12))
    assert view.n_terms == 70 and view.labels.shape == (70,)
    f1, g1 = view.value_and_grad(w)
    f2, g2 = copy.value_and_grad(w)
    assert f1 == pytest.approx(f2, rel=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(view.hessian(w), copy.hessian(w), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(view.hessian(w, items=np.arange(10)), copy.hessian(w, items=np.arange(10)), rtol=1e-11)
    np.testing.assert_allclose(view.term_grad(3, w), copy.term_grad(3, w), rtol=1e-12)
    np.testing.assert_allclose(view.probs(w), copy.probs(w), rtol=1e-12)
    r = view.restrict([1, 4, 7])
    assert r.value(np.array([0.2, 0.3, 0.5])) == pytest.approx(
        copy.restrict([1, 4, 7]).value(np.array([0.2, 0.3, 0.5]))
    )
    with pytest.raises(InputError, match="items"):
        view.subsample([3, 2])
    with pytest.raises(InputError, match="items"):
        view.subsample([0, 70])


def test_centred_hessian_matches_finite_differences_and_float32_products():
    lp, y = _family("near-duplicate", N=150, A=10, K=6)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    w = np.random.default_rng(1).dirichlet(np.ones(10))
    H = pb.hessian(w)
    fd = np.array([(pb.grad(w + 1e-6 * e) - pb.grad(w - 1e-6 * e)) / 2e-6 for e in np.eye(10)])
    np.testing.assert_allclose(H, fd, atol=1e-6)
    H32 = pb.hessian(w, dtype=np.float32)
    assert np.abs(H32 - H).max() <= 1e-5 * np.abs(H).max()


@pytest.mark.parametrize(
    "family,K", [("gaussian-logit", 8), ("many-active", 8), ("noise", 8), ("near-duplicate", 8), ("near-duplicate", 2)]
)
def test_warm_started_newton_reaches_the_slsqp_optimum(family, K):
    lp, y = _family(family, K=K)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    warm = solvers.minimize(pb, "newton", tol=1e-10, warm_items=300)  # levels 1200 -> 300 items
    assert warm.extra.get("warm_start") and warm.converged
    plain = solvers.minimize(pb, "newton", tol=1e-13, warm_items=0)
    ref = slsqp_simplex(pb.value_and_grad, pb.dim, maxiter=3000)
    fstar = min(plain.fun, pb.value(np.clip(ref.x, 0, None) / np.clip(ref.x, 0, None).sum()))
    assert (warm.fun - fstar) / abs(fstar) <= 1e-8
    assert np.all(warm.x >= 0) and abs(warm.x.sum() - 1) < 1e-12
    # same support as the tight solve (weights above 1e-6)
    np.testing.assert_array_equal(warm.x > 1e-6, plain.x > 1e-6)


@pytest.mark.parametrize("family", ["gaussian-logit", "near-duplicate"])
def test_the_float64_model_check_runs_below_its_tolerance_only(family, monkeypatch):
    """After the warm start, a converged model is confirmed with the float64 Hessian of every item
    when ``tol`` < MODEL_CHECK_BELOW (and on request), not at looser tolerances; either way the
    optimum is within the tolerance of the tight solve's."""
    from solvers.methods import newton as nw

    lp, y = _family(family, K=4)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    fstar = solvers.minimize(pb, "newton", tol=1e-13, warm_items=0).fun
    full = []
    real = nw._hessian
    monkeypatch.setattr(
        nw, "_hessian", lambda p, x, items, dtype=None: (full.append(items is None), real(p, x, items, dtype))[1]
    )
    for tol, check, expect in ((1e-6, None, False), (1e-6, True, True), (1e-9, None, True)):
        full.clear()
        r = solvers.minimize(pb, "newton", tol=tol, warm_items=300, hessian_sample=0.5, check_model=check)
        assert r.converged and r.extra.get("warm_start")
        assert (r.fun - fstar) <= tol * abs(fstar)
        assert any(full) == expect, (tol, check, full)
