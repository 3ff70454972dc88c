"""The γ sweep of ``RenyiPool(gamma="grid")``: continuation from the log pool's weights up the grid,
each fit warm-started (weights, aggregate, working set) from the previous γ, against cold fits and
scipy's SLSQP at every γ."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators.renyi import RenyiPool
from aggregators.renyi_gradient import RenyiProblem
from aggregators.renyi_pool import START_NEGLIGIBLE, secant_start, sparse_start
from solvers.errors import InputError
from tests.aggregators.test_renyi_weight_hessian import many_agents
from tests.references import slsqp_simplex

GRID = [1.0, 0.3, 0.1, 0.03]


def test_warm_started_sweep_reaches_the_scipy_optimum_at_every_gamma():
    """Run to a tight ``grid_tol``, every point of the curve is SLSQP's optimum at its γ (objective
    within 1e-8, never worse than SLSQP by more than 1e-10), though only the first fit started
    from the log pool and the others from their neighbour."""
    lp, y, _ = many_agents()
    A = lp.shape[1]
    pool = RenyiPool(gamma="grid", gamma_grid=GRID, tol=1e-12, grid_tol=1e-12, fixed_point_tol=1e-13, floor=None)
    pool.fit(lp, y)  # no floor: the same data as the reference problem
    curve = pool.validation_curve_
    assert curve["gamma"] == GRID
    for g, ll in zip(GRID, curve["loglik"], strict=True):
        sp = slsqp_simplex(RenyiProblem(lp, y, g, tol=1e-13).value_and_grad, A)
        assert -ll <= sp.fun + 1e-10
        assert abs(-ll - sp.fun) < 1e-8, g
    assert pool.converged_ and 0 < np.count_nonzero(pool.weights_) < A


@pytest.mark.parametrize("seed", [8, 9])
def test_default_sweep_equals_cold_fits(seed):
    """With the default ``grid_tol`` the curve is within it of the cold fits at each γ and the chosen
    γ's fit (refined to ``tol``) equals its cold fit to 1e-8 in the objective."""
    lp, y, _ = many_agents(seed=seed)
    pool = RenyiPool(gamma="grid", gamma_grid=GRID).fit(lp, y)
    cold = [RenyiPool(gamma=g).fit(lp, y) for g in GRID]
    for c, ll in zip(cold, pool.validation_curve_["loglik"], strict=True):
        assert c.converged_
        assert ll <= c.loglik_ + 1e-8 * max(1.0, abs(c.loglik_))
        assert abs(ll - c.loglik_) <= pool.grid_tol * max(1.0, abs(c.loglik_))
    best = int(np.argmax([c.loglik_ for c in cold]))
    assert pool.gamma_ == GRID[best]
    assert abs(pool.loglik_ - cold[best].loglik_) < 1e-8
    np.testing.assert_allclose(pool.weights_, cold[best].weights_, atol=1e-3)
    assert pool.loglik_ == max(pool.validation_curve_["loglik"])


def test_sweep_with_fixed_start_weights_does_not_use_the_log_pool():
    """Given ``weights`` (the start) or ``learn_weights=False``, the grid starts from them."""
    lp, y, _ = many_agents(n=60, A=8, K=5)
    w = np.full(8, 1 / 8)
    fixed = RenyiPool(gamma="grid", gamma_grid=GRID, learn_weights=False).fit(lp, y)
    np.testing.assert_allclose(fixed.weights_, w)
    started = RenyiPool(gamma="grid", gamma_grid=GRID, weights=w).fit(lp, y)
    free = RenyiPool(gamma="grid", gamma_grid=GRID).fit(lp, y)
    assert abs(started.loglik_ - free.loglik_) < 1e-8


@pytest.mark.parametrize("bad", [-1e-6, 1.0, float("nan"), "1e-6"])
def test_bad_grid_tol_names_the_argument(bad):
    lp, y, _ = many_agents(n=30, A=4, K=3)
    with pytest.raises(InputError) as e:
        RenyiPool(gamma="grid", gamma_grid=GRID, grid_tol=bad).fit(lp, y)
    assert e.value.field == "grid_tol"


@pytest.mark.parametrize("start", ["neighbour", "dense-neighbour", "uniform", "one-agent"])
def test_a_fit_from_given_weights_reaches_the_scipy_optimum(start):
    """Given ``weights`` are taken as a warm start (Newton from them on a growing working set, as the
    competition's sweep starts each γ from the previous one's weights): the fit reaches SLSQP's optimum
    from a neighbouring γ's optimum in fewer iterations than a fresh fit, and from poor starts too."""
    lp, y, _ = many_agents(seed=3)
    A, g = lp.shape[1], 0.3
    kw = {"tol": 1e-10, "fixed_point_tol": 1e-13, "floor": None}
    if start in ("neighbour", "dense-neighbour"):
        w0 = RenyiPool(gamma=0.5, **kw).fit(lp, y).weights_
        if start == "dense-neighbour":  # as the linear pool's EM leaves dropped agents: tiny, not zero
            w0 = w0 + 1e-30 * np.arange(1, A + 1)
    elif start == "uniform":
        w0 = np.full(A, 1.0 / A)
    else:
        w0 = np.eye(A)[0]
    pool = RenyiPool(gamma=g, weights=w0, **kw).fit(lp, y)
    sp = slsqp_simplex(RenyiProblem(lp, y, g, tol=1e-13).value_and_grad, A)
    assert pool.converged_
    assert -pool.loglik_ <= sp.fun + 1e-10
    assert abs(-pool.loglik_ - sp.fun) < 1e-8
    if start in ("neighbour", "dense-neighbour"):
        fresh = RenyiPool(gamma=g, **kw).fit(lp, y)
        assert pool.fit_result_.n_iter < fresh.fit_result_.n_iter
    if start == "dense-neighbour":  # the negligible weights do not enter the first working set
        support = int(np.count_nonzero(w0 > 1e-20))
        assert support < A
        assert pool.fit_result_.extra["working_set_sizes"][0] < A


def test_sparse_start_zeroes_negligible_weights_only():
    w = np.array([0.5, 1e-40, 0.3, 1e-12, 0.2 - 1e-6, 1e-6])
    s = sparse_start(w)
    A = w.size
    np.testing.assert_array_equal(s == 0, w < START_NEGLIGIBLE / A)
    assert s.sum() == pytest.approx(1.0, abs=1e-15)
    kept = w >= START_NEGLIGIBLE / A
    np.testing.assert_allclose(s[kept], w[kept] / w[kept].sum(), rtol=1e-14)
    np.testing.assert_allclose(sparse_start(np.array([2.0, 6.0])), [0.25, 0.75])


def test_refit_of_the_chosen_gamma_continues_its_grid_fit_without_a_new_first_pass(monkeypatch):
    """The chosen γ's refit to ``tol`` runs on its grid fit's problem from the grid solution: its first
    value and gradient are the grid fit's last evaluation (cached), so it solves one fixed point fewer
    than a refit on a new problem; and it reaches the SLSQP optimum at that γ to 1e-8."""
    import aggregators.renyi_gradient as rg

    lp, y, _ = many_agents(seed=8)
    calls = {"n": 0}
    real = rg.renyi_loglik_grad

    def counted(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(rg, "renyi_loglik_grad", counted)
    seen: list = []
    real_refit = RenyiPool._refit

    def refit(self, L, y_, gamma, lam, x, sw, prob):
        before = calls["n"]
        out = real_refit(self, L, y_, gamma, lam, x, sw, prob)
        seen.append((before, calls["n"], gamma, lam, x, sw, out))
        return out

    monkeypatch.setattr(RenyiPool, "_refit", refit)
    pool = RenyiPool(gamma="grid", gamma_grid=GRID, grid_tol=1e-4).fit(lp, y)
    assert len(seen) == 1  # the grid fit at grid_tol was loose: refitted
    before, after, gamma, lam, x, sw, (prob, res) = seen[0]
    reused = after - before
    # the same refit on a fresh problem (the former path) from the same point
    L = pool.prepare(lp).log_probs
    c0 = calls["n"]
    RenyiPool._fit_at(pool, L, np.asarray(y), np.full(lp.shape[1], gamma), lam, x, None, None, sw)
    fresh = calls["n"] - c0
    assert reused == fresh - 1, (reused, fresh)
    sp = slsqp_simplex(RenyiProblem(L, np.asarray(y), gamma, tol=1e-13).value_and_grad, lp.shape[1])
    assert pool.converged_ and abs(-pool.loglik_ - sp.fun) < 1e-8 and -pool.loglik_ <= sp.fun + 1e-10


def test_secant_start_extrapolates_the_weights_in_log_gamma_and_stays_on_the_simplex():
    """Exact on a path linear in log γ; clipped at zero and renormalised; the variables after the
    weights are the last point's; a repeated γ gives the last point back."""
    wa, wb = np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.35, 0.25])
    ta, tb, t = np.log(0.01), np.log(0.02), np.log(0.04)
    lam = np.array([7.0])
    x = secant_start((ta, np.r_[wa, 1.0]), (tb, np.r_[wb, lam]), t, 3)
    np.testing.assert_allclose(x[:3], wb + (wb - wa), rtol=0, atol=1e-15)  # equal steps in log γ
    assert x[3] == lam[0]
    # an agent whose weight falls fast is clipped at zero, the rest renormalised
    x = secant_start((0.0, np.array([0.2, 0.8, 0.0])), (1.0, np.array([0.05, 0.9, 0.05])), 2.0, 3)
    np.testing.assert_allclose(x, np.array([0.0, 1.0, 0.1]) / 1.1, atol=1e-15)
    assert np.all(x >= 0) and abs(x.sum() - 1.0) < 1e-15
    np.testing.assert_array_equal(secant_start((1.0, wa), (1.0, wb), 2.0, 3), wb)


def test_sweep_over_many_gammas_reaches_the_scipy_optimum_with_the_secant_starts():
    """Ten γ (eight of them started by the secant predictor), every point of the curve SLSQP's optimum."""
    lp, y, _ = many_agents(seed=3)
    A, grid = lp.shape[1], [float(g) for g in np.logspace(-2, 0, 10)]
    pool = RenyiPool(gamma="grid", gamma_grid=grid, tol=1e-12, grid_tol=1e-12, fixed_point_tol=1e-13, floor=None)
    pool.fit(lp, y)
    for g, ll in zip(pool.validation_curve_["gamma"], pool.validation_curve_["loglik"], strict=True):
        sp = slsqp_simplex(RenyiProblem(lp, y, g, tol=1e-13).value_and_grad, A)
        assert -ll <= sp.fun + 1e-10
        assert abs(-ll - sp.fun) < 1e-8, g
