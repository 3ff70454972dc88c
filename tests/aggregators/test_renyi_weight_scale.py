"""The Rényi weight fit's large-data path (issue #13 §3): a subsample warm start, a growing working
set from a given start, float32 curvature over sampled items read from the full data without a copy,
and secant (BFGS) corrections of the approximate curvature; each against scipy's SLSQP or a cold fit."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators.renyi import RenyiPool
from aggregators.renyi_gradient import RenyiProblem
from aggregators.renyi_weight_hessian import RenyiWeightProblem, renyi_weight_curvature
from solvers.errors import InputError
from solvers.methods.newton import _bfgs_update
from solvers.registry import minimize
from tests.aggregators.test_renyi_weight_hessian import many_agents
from tests.references import slsqp_simplex


def _slsqp(lp, y, gamma):
    return slsqp_simplex(RenyiProblem(lp, y, gamma, tol=1e-13).value_and_grad, lp.shape[1])


@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_subsample_start_reaches_the_cold_optimum_and_scipys(gamma):
    """Newton warm-started on a quarter of the items (then on a quarter of that) ends at the cold
    start's optimum and at SLSQP's (objective within 1e-8, never worse than SLSQP by more than 1e-10)."""
    lp, y, _ = many_agents(n=400, seed=3)
    warm = RenyiWeightProblem(lp, y, gamma, tol=1e-13)
    rw = minimize(warm, "newton", tol=1e-12, max_iter=200, warm_items=40)
    cold = RenyiWeightProblem(lp, y, gamma, tol=1e-13)
    rc = minimize(cold, "newton", tol=1e-12, max_iter=200, warm_items=0)
    assert rw.extra.get("warm_start") and not rc.extra.get("warm_start")
    assert rw.converged and rc.converged
    sp = _slsqp(lp, y, gamma)
    for r in (rw, rc):
        assert r.fun <= sp.fun + 1e-10
        assert abs(r.fun - sp.fun) < 1e-8
    assert abs(rw.fun - rc.fun) < 1e-10
    assert np.abs(rw.x - rc.x).max() < 1e-4  # same point (flat directions move it by less)
    assert np.array_equal(rw.x > 0, rc.x > 0) or np.abs(rw.x - rc.x).max() < 1e-6


@pytest.mark.parametrize("gamma", [0.1, 0.5])
def test_pool_fit_from_the_log_pool_start_reaches_scipys_optimum(gamma):
    """``RenyiPool`` (γ = 0.1: Newton grows its working set from the log pool's weights; γ = 0.5: cold,
    subsample warm start) reaches SLSQP's objective to 1e-8."""
    lp, y, _ = many_agents(n=400, seed=4)
    pool = RenyiPool(gamma=gamma, tol=1e-12, fixed_point_tol=1e-13, floor=None, solver_options={"warm_items": 40})
    pool.fit(lp, y)
    sp = _slsqp(lp, y, gamma)
    assert pool.converged_
    assert pool.fit_result_.extra.get("warm_start")
    assert -pool.loglik_ <= sp.fun + 1e-10
    assert abs(-pool.loglik_ - sp.fun) < 1e-8


def test_float32_curvature_is_the_float64_one_to_single_precision():
    lp, y, _ = many_agents(n=120, seed=5)
    prob = RenyiWeightProblem(lp, y, 0.3, tol=1e-13)
    x = np.random.default_rng(0).dirichlet(np.ones(lp.shape[1]))
    h64 = prob.hessian(x)
    h32 = prob.hessian(x, dtype=np.float32)
    assert h32.dtype == np.float64
    assert np.abs(h32 - h64).max() <= 1e-5 * np.abs(h64).max()
    # and through the function itself, with sampled items
    log_q = prob.log_q(x)
    c = np.full(30, 1 / 30)
    a = renyi_weight_curvature(lp[:30], y[:30], x, np.full(lp.shape[1], 0.3), log_q[:30], c)
    b = prob.hessian(x, items=np.arange(30))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_restricted_curvature_reads_the_full_data_without_a_copy():
    """After the full problem's pass at ``x``, a restricted problem's sampled curvature equals the full
    one's block and copies no agent data (its ``L`` is never built)."""
    lp, y, _ = many_agents(n=200, seed=6)
    full = RenyiWeightProblem(lp, y, 0.4, tol=1e-13)
    x = np.zeros(lp.shape[1])
    idx = np.array([1, 4, 7, 20, 33])
    x[idx] = [0.1, 0.2, 0.3, 0.25, 0.15]
    full.value_and_grad(x)
    items = np.sort(np.random.default_rng(1).choice(200, 80, replace=False))
    sub = full.restrict(idx)
    h = sub.hessian(x[idx], items=items)
    assert sub._L is None  # no copy of the agents' data
    np.testing.assert_allclose(h, full.hessian(x, items=items)[np.ix_(idx, idx)], rtol=1e-10, atol=1e-14)
    # evaluated, it builds its data and gives the full problem's value and gradient on idx
    f, g = sub.value_and_grad(x[idx])
    F, G = full.value_and_grad(x)
    assert abs(f - F) < 1e-12 and np.abs(g - G[idx]).max() < 1e-10


def test_subsample_is_the_problem_on_those_items():
    lp, y, _ = many_agents(n=100, seed=7)
    sw = np.random.default_rng(2).uniform(0.5, 2.0, 100)
    full = RenyiWeightProblem(lp, y, 0.2, tol=1e-13, sample_weight=sw)
    items = np.arange(0, 100, 3)
    sub = full.subsample(items)
    ref = RenyiWeightProblem(lp[items], y[items], 0.2, tol=1e-13, sample_weight=sw[items])
    x = np.random.default_rng(3).dirichlet(np.ones(lp.shape[1]))
    (f, g), (fr, gr) = sub.value_and_grad(x), ref.value_and_grad(x)
    assert abs(f - fr) < 1e-13 and np.abs(g - gr).max() < 1e-12
    for bad in (np.array([3, 2]), np.array([0, 100]), np.array([], dtype=int)):
        with pytest.raises(InputError) as e:
            full.subsample(bad)
        assert e.value.field == "items"


def test_bfgs_update_satisfies_the_secant_equation_on_the_simplex():
    rng = np.random.default_rng(0)
    B = rng.normal(size=(6, 6))
    H = B @ B.T + np.eye(6)
    s = rng.normal(size=6)
    s -= s.mean()  # a feasible step on the simplex
    A = rng.normal(size=(6, 6))
    y = (A @ A.T + np.eye(6)) @ s + 3.0  # a constant along the ones vector, which no step sees
    H1 = _bfgs_update(H, s, y)
    np.testing.assert_allclose(H1 @ s, y - y.mean(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H1, H1.T, atol=1e-12)
    assert np.linalg.eigvalsh(H1).min() > 0
    assert _bfgs_update(H, s, -y) is H  # negative curvature: unchanged


def test_near_duplicate_agents_claim_convergence_only_within_tolerance():
    """Session 19's early stop: on near-duplicate agents (2,000 × 269 × 64, γ = 0.5) a fresh model on
    the working set claimed a gap of 1.1e-9 while the fit was 2.8e-8 (relative) above the optimum, at
    ``tol`` 1e-8. A model now claims convergence only after a step on its working set confirmed it
    (``solvers.methods.newton.VALIDATED_ONLY``): the claim holds against a fit to 1e-12."""
    from benchmarks.logpool_families import make_family

    X, y = make_family("near-duplicate", 2000, 269, 64, 0)
    pool = RenyiPool(gamma=0.5).fit(X, y)
    tight = RenyiPool(gamma=0.5, tol=1e-12).fit(X, y)
    f, f_star = -pool.loglik_, -tight.loglik_
    assert pool.converged_ and tight.converged_
    assert f - f_star <= pool.tol * abs(f_star), (f - f_star) / abs(f_star)
