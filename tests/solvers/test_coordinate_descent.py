"""Lasso / elastic-net coordinate descent (working sets, gap stop) against cvxpy to 1e-8, and its bad input."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from solvers.errors import InputError
from solvers.problems.erm import ERM
from solvers.prox import L1, ElasticNet, SquaredL2

CLARABEL = {"solver": "CLARABEL", "tol_gap_abs": 1e-13, "tol_gap_rel": 1e-13, "tol_feas": 1e-13}


def data(n, d, k, seed, rho=0.0):
    """Gaussian rows with AR(1) correlation rho between neighbouring columns, a k-sparse truth, small noise."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    for j in range(1, d):
        A[:, j] = rho * A[:, j - 1] + np.sqrt(1 - rho**2) * A[:, j]
    x = np.zeros(d)
    x[rng.choice(d, k, replace=False)] = rng.normal(size=k)
    return A, A @ x + 0.05 * rng.normal(size=n)


def cvx_reference(A, b, lam, gamma, s):
    x = cp.Variable(A.shape[1])
    obj = 0.5 * s * cp.sum_squares(A @ x - b) + lam * cp.norm1(x) + 0.5 * lam * gamma * cp.sum_squares(x)
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(**CLARABEL)
    return x.value, prob.value


@pytest.mark.parametrize(
    "n, d, rho, gamma, mean, opts",
    [
        (60, 200, 0.0, 0.0, True, {}),  # wide: the working sets matter
        (60, 200, 0.8, 0.0, True, {}),  # correlated columns
        (60, 200, 0.8, 0.0, True, {"anderson": False}),  # plain sweeps
        (80, 30, 0.5, 0.0, False, {}),  # tall, the sum form (seed 000 Eq. 3.64)
        (60, 200, 0.3, 0.5, True, {}),  # elastic net
        (60, 200, 0.3, 0.0, True, {"working_set": False}),  # every column every sweep (scikit-learn's method)
    ],
)
def test_lasso_optimum_matches_cvxpy(n, d, rho, gamma, mean, opts):
    A, b = data(n, d, 8, seed=n + d, rho=rho)
    s = 1 / n if mean else 1.0
    lam = 0.1 * float(np.abs(A.T @ b).max()) * s
    reg = ElasticNet(lam, gamma) if gamma else L1(lam)
    x_ref, f_ref = cvx_reference(A, b, lam, gamma, s)
    pb = ERM(A, b, reg, mean=mean)
    r = solvers.minimize(pb, "coordinate_descent", tol=1e-12, ws_start=10, **opts)
    assert r.converged, r.message
    assert r.fun == pytest.approx(f_ref, rel=1e-8)
    np.testing.assert_allclose(r.x, x_ref, atol=1e-6)
    # the solver's gap is the problem's gap (same dual point), a valid bound, and the certificate it stopped on
    assert r.trace.extra["gap"][-1] == pytest.approx(pb.duality_gap(r.x), rel=1e-6, abs=1e-13)
    assert r.trace.extra["gap"][-1] <= 1e-12 and r.fun - f_ref <= r.trace.extra["gap"][-1] + 1e-12


def test_sparse_input_gives_the_dense_optimum():
    A, b = data(70, 150, 6, seed=3)
    A[np.abs(A) < 1.0] = 0.0  # about 32% dense
    A[:, 5] = 0.0  # an empty column stays at 0
    lam = 0.05 * float(np.abs(A.T @ b).max()) / 70
    dense = solvers.minimize(ERM(A, b, L1(lam)), "coordinate_descent", tol=1e-13)
    csc = solvers.minimize(ERM(sp.csr_matrix(A), b, L1(lam)), "coordinate_descent", tol=1e-13)
    assert dense.converged and csc.converged
    x_ref, f_ref = cvx_reference(A, b, lam, 0.0, 1 / 70)
    assert csc.fun == pytest.approx(f_ref, rel=1e-8)
    np.testing.assert_allclose(csc.x, dense.x, atol=1e-8)
    assert csc.x[5] == 0.0


def test_auto_takes_it_for_the_lasso_and_it_needs_fewer_passes_than_fista():
    A, b = data(100, 400, 10, seed=4, rho=0.5)
    pb = ERM(A, b, L1(0.1 * float(np.abs(A.T @ b).max()) / 100))
    r = solvers.minimize(pb, "auto", tol=1e-8)
    assert r.method == "coordinate_descent" and r.converged
    f = solvers.minimize(pb, "fista", tol=1e-8)
    assert r.n_passes < f.n_passes / 5, (r.n_passes, f.n_passes)


def test_bad_input_names_the_argument():
    A, b = data(20, 10, 3, seed=5)
    for pb in (ERM(A, b, SquaredL2(0.1)), ERM(A, np.sign(b), L1(0.1), loss="logistic")):
        with pytest.raises(InputError) as e:
            solvers.minimize(pb, "coordinate_descent")
        assert e.value.field == "problem"
    for opt in ("ws_start", "check_every"):
        with pytest.raises(InputError) as e:
            solvers.minimize(ERM(A, b, L1(0.1)), "coordinate_descent", **{opt: 0})
        assert e.value.field == opt
