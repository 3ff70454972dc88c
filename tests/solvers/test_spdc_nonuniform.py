"""Non-uniform SPDC (Zhang & Xiao 2015): optimum against the closed form and cvxpy, its step bound, bad input."""

import cvxpy as cp
import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.methods.spdc import _steps
from solvers.problems.erm import ERM
from solvers.prox import ElasticNet, SquaredL2

CLARABEL = {"solver": "CLARABEL", "tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def spread_rows(N, D, seed):
    """The Fig. 3.4 generator with row norms spread over a factor 30 (where the sampling matters)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, D)) * (np.arange(1, D + 1) ** -0.5)
    return A * rng.uniform(0.1, 3.0, size=(N, 1)), rng


def test_nonuniform_spdc_ridge_matches_the_closed_form_in_fewer_passes_than_uniform():
    N, D, lam = 80, 20, 1e-2
    A, rng = spread_rows(N, D, 1)
    b = A @ np.ones(D) + rng.normal(size=N)
    pb = ERM(A, b, SquaredL2(lam))
    x_star = np.linalg.solve(A.T @ A / N + lam * np.eye(D), A.T @ b / N)
    r = solvers.minimize(pb, "spdc", sampling="nonuniform", tol=1e-12, max_iter=5000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(pb.value(x_star), rel=1e-10)
    assert np.linalg.norm(r.x - x_star) <= np.sqrt(2 * r.trace.extra["gap"][-1] / lam) + 1e-12
    uniform = solvers.minimize(pb, "spdc", tol=1e-12, max_iter=5000)
    assert r.n_passes < uniform.n_passes, (r.n_passes, uniform.n_passes)


@pytest.mark.parametrize("loss", ["smooth_hinge", "logistic"])
def test_nonuniform_spdc_classification_matches_cvxpy(loss):
    N, D, lam = 60, 8, 1e-2
    A, rng = spread_rows(N, D, 2)
    y = np.where(A @ rng.normal(size=D) + 0.5 * rng.normal(size=N) > 0, 1.0, -1.0)
    x = cp.Variable(D)
    margin = cp.multiply(y, A @ x)
    if loss == "logistic":
        data = cp.sum(cp.logistic(-margin))
    else:  # smooth hinge (smoothing 1) as the minimum over the hinge slack of its Moreau envelope
        u = cp.Variable(N)
        data = cp.sum(cp.pos(1 - margin - u) + 0.5 * cp.square(u))
    prob = cp.Problem(cp.Minimize(data / N + 0.5 * lam * cp.sum_squares(x)))
    prob.solve(**CLARABEL)
    r = solvers.minimize(ERM(A, y, SquaredL2(lam), loss=loss), "spdc", sampling="nonuniform", tol=1e-11, max_iter=5000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(prob.value, rel=1e-8)
    np.testing.assert_allclose(r.x, x.value, atol=1e-5)


def test_nonuniform_steps_keep_the_uniform_bound():
    """p_k >= R_k / (2 N R_bar) gives tau * s_k * (R_k / (p_k N))^2 <= 1/4 for every k (the uniform method's
    tau sigma R^2 = 1/4), with equality nowhere forced; the probabilities sum to one."""
    R = np.random.default_rng(0).lognormal(size=500)
    lam, gamma = 1e-4, 1.0
    sigma, w, p = _steps(R, lam, gamma, 1, adaptive=False, nonuniform=True)
    N = len(R)
    assert p.sum() == pytest.approx(1.0) and np.all(p > 0)
    tau = np.sqrt(gamma / (N * lam)) / (4 * R.mean())
    assert np.all(tau * sigma * (R * w) ** 2 <= 0.25 * (1 + 1e-12))
    sigma_u, w_u, p_u = _steps(R, lam, gamma, 1, adaptive=False, nonuniform=False)
    assert p_u is None and np.all(w_u == 1.0)
    tau_u = np.sqrt(gamma / (N * lam)) / (2 * R.max())  # (3.36) with the global R
    assert tau_u * sigma_u[0] * R.max() ** 2 == pytest.approx(0.25)


def test_bad_sampling_names_the_argument():
    A, rng = spread_rows(20, 5, 3)
    pb = ERM(A, rng.normal(size=20), SquaredL2(0.1))
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, "spdc", sampling="importance")
    assert e.value.field == "sampling"
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, "spdc", sampling="nonuniform", m=4)
    assert e.value.field == "m"


@pytest.mark.parametrize("method, opts", [("spdc", {}), ("spdc", {"sampling": "nonuniform"}), ("adaspdc", {})])
@pytest.mark.parametrize("loss", ["squared", "smooth_hinge", "logistic"])
def test_the_compiled_pass_follows_the_python_iteration(method, opts, loss):
    """m = 1 on a dense matrix runs compiled (solvers.kernels.spdc_pass); the same data as a CSR matrix runs
    the Python loop: with one seed both draw the same coordinates and must give the same iterates."""
    import scipy.sparse as sp

    N, D = 40, 6
    A, rng = spread_rows(N, D, 4)
    b = A @ rng.normal(size=D) + 0.3 * rng.normal(size=N)
    if loss != "squared":
        b = np.where(b > 0, 1.0, -1.0)
    reg = ElasticNet(1e-2, 5.0) if loss == "logistic" else SquaredL2(1e-2)
    dense = solvers.minimize(ERM(A, b, reg, loss=loss), method, tol=0.0, max_iter=4, seed=7, **opts)
    csr = solvers.minimize(ERM(sp.csr_matrix(A), b, reg, loss=loss), method, tol=0.0, max_iter=4, seed=7, **opts)
    np.testing.assert_allclose(dense.x, csr.x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dense.trace.objective, csr.trace.objective, rtol=1e-10)
    assert dense.trace.extra["tau"] == pytest.approx(csr.trace.extra["tau"])
