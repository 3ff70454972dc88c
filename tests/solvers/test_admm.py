"""Linearized ADMM against cvxpy (lasso, TV generalised lasso, RPCA) and its step check; ADMM's x-step paths."""

import cvxpy as cp
import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.problems.erm import ERM
from solvers.problems.generalized_lasso import GeneralizedLasso
from solvers.problems.rpca import RPCA
from solvers.prox import L1

from .test_primal_dual import CLARABEL, cvx_lasso, cvx_rpca, lasso_data


def test_linearized_admm_lasso_matches_cvxpy():
    A, b = lasso_data()
    x_ref, f_ref = cvx_lasso(A, b, 0.05, True)
    r = solvers.minimize(ERM(A, b, L1(0.05)), "linearized_admm", tol=1e-12, max_iter=100000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(f_ref, rel=1e-8)
    np.testing.assert_allclose(r.x, x_ref, atol=1e-6)


def test_linearized_admm_total_variation_and_rpca_match_cvxpy():
    rng = np.random.default_rng(3)
    M = rng.normal(size=(30, 15))
    b = M @ np.repeat([1.0, -1.0, 2.0], 5) + 0.1 * rng.normal(size=30)
    x = cp.Variable(15)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(M @ x - b) + cp.norm1(cp.diff(x))))
    prob.solve(**CLARABEL)
    r = solvers.minimize(GeneralizedLasso.total_variation(M, b, 1.0), "linearized_admm", tol=1e-12, max_iter=200000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(prob.value, rel=1e-8)
    np.testing.assert_allclose(r.x, x.value, atol=1e-6)
    pb = RPCA.generate(8, 10, 2, seed=4)
    f_ref, x_ref = cvx_rpca(pb)
    r = solvers.minimize(pb, "linearized_admm", tol=1e-11, max_iter=200000)
    assert r.converged and pb.residual(r.x) < 1e-8
    assert r.fun == pytest.approx(f_ref, rel=1e-8)


def test_admm_woodbury_and_direct_x_steps_agree_and_steps_are_checked():
    A, b = lasso_data(n=15, d=30, seed=8)  # N < D: the matrix-inversion-lemma x-step
    wide = solvers.minimize(ERM(A, b, L1(0.05)), "admm", tol=1e-12, max_iter=100000)
    tall = solvers.minimize(
        ERM(np.vstack([A, np.zeros((20, 30))]), np.r_[b, np.zeros(20)], L1(0.05), mean=False),
        "admm",
        tol=1e-12,
        max_iter=100000,
        rho=0.5,
    )
    x_ref, _ = cvx_lasso(A, b, 0.05, True)
    np.testing.assert_allclose(wide.x, x_ref, atol=1e-6)
    assert wide.converged and tall.converged
    # the padded problem (N > D: the direct Cholesky x-step) is the sum-form lasso of the same data
    np.testing.assert_allclose(tall.x, cvx_lasso(A, b, 0.05, False)[0], atol=1e-6)
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, b, L1(0.05)), "linearized_admm", lam=1.0, mu=1e6)
    assert e.value.field == "mu"
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, b, L1(0.05)), "admm", alpha=2.5)
    assert e.value.field == "alpha"
