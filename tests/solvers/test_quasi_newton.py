"""Quasi-Newton: L-BFGS unconstrained and projected BFGS on the simplex, against scipy optima."""

import numpy as np
import pytest
from scipy.optimize import minimize as sp_minimize

import solvers
from solvers.problems.mixture import MixtureLikelihood
from tests.references import lbfgsb

from .test_newton import _log_pool_problem, slsqp_on, softmax_regression_problem


def test_lbfgs_unconstrained_matches_scipy():
    pb = softmax_regression_problem(0, 300, 6, 3)
    res = solvers.minimize(pb, "lbfgs", tol=1e-10)
    ref = lbfgsb(pb.value_and_grad, np.zeros(pb.dim), ftol=1e-16)
    assert res.converged
    assert abs(res.fun - ref.fun) < 1e-12
    np.testing.assert_allclose(res.x, ref.x, atol=1e-6)


def test_projected_bfgs_on_the_log_pool_matches_slsqp():
    pb, _, _ = _log_pool_problem(seed=1, A=8)
    res = solvers.minimize(pb, "lbfgs", tol=1e-9, max_iter=500)
    x_s, f_s = slsqp_on(pb)
    assert res.converged
    assert res.fun <= f_s + 1e-10
    np.testing.assert_allclose(res.x, x_s, atol=1e-5)
    assert np.all(res.x >= 0) and abs(res.x.sum() - 1) < 1e-12


def test_projected_bfgs_on_the_mixture_matches_newton():
    rng = np.random.default_rng(2)
    pb = MixtureLikelihood(rng.dirichlet(np.ones(6) * 0.5, size=400))
    a = solvers.minimize(pb, "lbfgs", tol=1e-11)
    b = solvers.minimize(pb, "newton", tol=1e-12)
    assert abs(a.fun - b.fun) <= 1e-10
    np.testing.assert_allclose(a.x, b.x, atol=1e-5)


def test_auto_uses_lbfgs_without_a_hessian():
    class NoHessian:
        dim, n_terms, constraint = 3, 1, "none"

        def value(self, x):
            return float(((x - 1.0) ** 2).sum() + (x[0] * x[1]) ** 2)

        def value_and_grad(self, x):
            g = 2 * (x - 1.0)
            g[0] += 2 * x[0] * x[1] ** 2
            g[1] += 2 * x[1] * x[0] ** 2
            return self.value(x), g

        def grad(self, x):
            return self.value_and_grad(x)[1]

    pb = NoHessian()
    assert solvers.choose(pb) == "lbfgs"
    res = solvers.minimize(pb, "auto", tol=1e-12)
    ref = sp_minimize(pb.value_and_grad, np.zeros(3), jac=True, method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(res.x, ref.x, atol=1e-8)
    with pytest.raises(ValueError, match="does not apply"):
        solvers.minimize(pb, "newton")
