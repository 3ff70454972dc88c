"""Exact gradients of the Rényi pool by implicit differentiation, against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import solvers
from aggregators.renyi_gradient import RenyiProblem, renyi_loglik_grad


def data(n=40, a=5, k=6, seed=0, scale=1.5):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    lp -= logsumexp(lp, axis=2, keepdims=True)
    y = rng.integers(0, k, n)
    return lp, y


def fd(fun, x, h):
    g = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h[j]
        g[j] = (fun(x + e) - fun(x - e)) / (2 * h[j])
    return g


def check_against_finite_differences(lp, y, gamma, seed):
    """The (w, γ, λ) gradients of the mean log-likelihood at random weights and λ against central
    differences of the objective."""
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(5) * 3)
    lam = rng.uniform(0.5, 2.0, 5)
    ll, gr, _, _ = renyi_loglik_grad(lp, y, w, gamma, lam, want=("w", "gamma", "lam"), tol=1e-13)

    def f(w_=w, g_=gamma, l_=lam):
        return renyi_loglik_grad(lp, y, w_, g_, l_, want=(), tol=1e-13)[0]

    np.testing.assert_allclose(gr["w"], fd(lambda v: f(w_=v), w, np.full(5, 1e-6)), atol=2e-8)
    np.testing.assert_allclose(gr["lam"], fd(lambda v: f(l_=v), lam, np.full(5, 1e-6)), atol=2e-8)
    fd_g = fd(lambda v: f(g_=v), gamma, 1e-4 * gamma)
    np.testing.assert_allclose(gr["gamma"], fd_g, atol=1e-6 * max(1.0, np.abs(fd_g).max()), rtol=1e-5)


@pytest.mark.parametrize(
    "gamma",
    [np.array([0.05, 0.2, 0.5, 0.9, 0.3]), np.full(5, 0.4), np.full(5, 5e-4)],
    ids=["unequal", "shared", "stable_form"],
)
def test_gradients_match_finite_differences(gamma):
    lp, y = data(seed=1)
    check_against_finite_differences(lp, y, gamma, seed=1)


@pytest.mark.parametrize("gamma", [np.array([0.05, 0.2, 0.5, 0.9, 0.3]), np.full(5, 0.4)], ids=["unequal", "shared"])
def test_gradients_match_finite_differences_at_many_classes(gamma):
    """From ``aggregators.renyi_kernels.ONE_PASS_MIN`` classes each agent's adjoint sums take one pass
    (``Σ λ q d - (q·d)(λ·q)``); the gradients still match finite differences."""
    from aggregators.renyi_kernels import ONE_PASS_MIN

    lp, y = data(n=12, k=ONE_PASS_MIN + 76, seed=3)
    check_against_finite_differences(lp, y, gamma, seed=3)


def test_problem_gradient_in_log_parameters():
    """RenyiProblem's variable is (w, log γ, log λ); its gradient matches finite differences too."""
    lp, y = data(seed=2)
    p = RenyiProblem(lp, y, 0.3, learn_gamma="shared", learn_lam=True, tol=1e-13)
    rng = np.random.default_rng(2)
    x = p.x0()
    x[:5] = rng.dirichlet(np.ones(5) * 3)
    x[6:] = rng.normal(0, 0.3, 5)
    f, g = p.value_and_grad(x)
    assert f == pytest.approx(p.value(x))
    h = np.full(x.size, 1e-6)
    np.testing.assert_allclose(g, fd(p.value, x, h), atol=3e-8)
    assert p.constraint == "product"
    proj = p.project(np.concatenate([[2.0, -1, 0, 0, 0], [5.0], np.full(5, 10.0)]))
    assert proj[:5].sum() == pytest.approx(1.0) and proj[:5].min() >= 0 and proj[5] == 0.0


def _kkt_violation(p, w):
    """Largest gain in log-likelihood per unit of mass moved from a used agent to any agent (by FD)."""
    f0 = p.value(w)
    used = np.flatnonzero(w > 1e-4)
    worst = 0.0
    h = 1e-5
    for j in used:
        for k in range(w.size):
            if k == j:
                continue
            v = w.copy()
            v[j] -= h
            v[k] += h
            worst = max(worst, (f0 - p.value(v)) / h)
    return worst


@pytest.mark.parametrize("gamma", [0.5, 0.05])
def test_weight_fit_reaches_a_kkt_point(gamma):
    """The fitted weights cannot be improved by moving mass between agents (finite differences)."""
    lp, y = data(n=150, seed=3)
    p = RenyiProblem(lp, y, gamma)
    res = solvers.minimize(p, "projected_gradient", tol=1e-10, max_iter=500)
    assert res.converged
    assert _kkt_violation(p, res.x) < 1e-5


def test_gamma_one_fit_is_the_linear_pool_maximum_likelihood():
    """At γ = 1 the Rényi pool is the linear pool: the fit must match plain EM (independent)."""
    lp, y = data(n=300, a=4, k=5, seed=4, scale=1.0)
    p = RenyiProblem(lp, y, 1.0)
    res = solvers.minimize(p, "projected_gradient", tol=1e-12, max_iter=1000)
    Q = np.exp(lp[np.arange(300), :, y])
    w = np.full(4, 0.25)
    for _ in range(20000):
        w = w * (Q / (Q @ w)[:, None]).mean(axis=0)
    assert -res.fun == pytest.approx(np.mean(np.log(Q @ w)), abs=1e-9)
    np.testing.assert_allclose(res.x, w, atol=1e-4)


def test_a_zero_probability_is_refused_once_at_construction_and_checked_data_skip_the_test():
    """The problem tests its data for a ``-inf`` once, when built (one pass, not one per evaluation);
    ``checked=True`` (a pool's floored data) skips it. Both evaluate the same objective."""
    from aggregators.renyi_fixed_point import solve_fixed_point
    from aggregators.renyi_weight_hessian import RenyiWeightProblem
    from aggregators.validation import PredictionError

    lp, y = data(seed=3)
    bad = lp.copy()
    bad[7, 2, 1] = -np.inf
    for make in (RenyiProblem, RenyiWeightProblem):
        with pytest.raises(PredictionError) as ei:
            make(bad, y, 0.4)
        assert ei.value.code == "zero_probability" and ei.value.field == "predictions"
    with pytest.raises(PredictionError):
        solve_fixed_point(bad, np.full(5, 0.2), np.full(5, 0.4))  # the public solver still tests by default
    x = np.random.default_rng(3).dirichlet(np.ones(5))
    f0, g0 = RenyiProblem(lp, y, 0.4, tol=1e-13).value_and_grad(x)
    f1, g1 = RenyiProblem(lp, y, 0.4, tol=1e-13, checked=True).value_and_grad(x)
    assert f0 == f1 and np.array_equal(g0, g1)
    # annealed data are tested at each evaluation (an extreme λ can overflow the floored numbers)
    p = RenyiProblem(lp, y, 0.4, lam=np.full(5, 1e308), checked=True)
    with pytest.raises(PredictionError), np.errstate(over="ignore", invalid="ignore"):
        p.value(x)
