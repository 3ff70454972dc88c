"""ISTA, FISTA and PDCP against cvxpy optima (lasso, ridge, logistic-l1, generalised lasso, RPCA), and their rates."""

import cvxpy as cp
import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.problems.erm import ERM
from solvers.problems.generalized_lasso import GeneralizedLasso
from solvers.problems.rpca import RPCA
from solvers.problems.saddle_point import SaddlePoint, operator_norm
from solvers.prox import L1, ElasticNet, SquaredL2

CLARABEL = {"solver": "CLARABEL", "tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def lasso_data(n=50, d=20, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    x = np.where(rng.random(d) < 0.3, rng.normal(size=d), 0.0)
    return A, A @ x + 0.1 * rng.normal(size=n)


def cvx_lasso(A, b, lam, mean):
    x = cp.Variable(A.shape[1])
    s = 1 / len(b) if mean else 1.0
    prob = cp.Problem(cp.Minimize(0.5 * s * cp.sum_squares(A @ x - b) + lam * cp.norm1(x)))
    prob.solve(**CLARABEL)
    return x.value, prob.value


@pytest.mark.parametrize("method", ["ista", "fista", "pdcp", "admm"])
@pytest.mark.parametrize("mean", [True, False])
def test_lasso_optimum_matches_cvxpy(method, mean):
    A, b = lasso_data()
    lam = 0.05 if mean else 2.0
    x_ref, f_ref = cvx_lasso(A, b, lam, mean)
    r = solvers.minimize(ERM(A, b, L1(lam), mean=mean), method, tol=1e-12, max_iter=50000)
    assert r.converged, r.message
    assert r.fun == pytest.approx(f_ref, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(r.x, x_ref, atol=1e-6)
    assert r.trace.extra["gap"][-1] <= 1e-12 and min(r.trace.extra["gap"]) >= -1e-12  # a gap is >= 0


@pytest.mark.parametrize("method", ["ista", "fista", "pdcp"])
def test_ridge_matches_the_closed_form(method):
    A, b = lasso_data(n=30, d=12, seed=1)
    lam = 0.3
    x_star = np.linalg.solve(A.T @ A / 30 + lam * np.eye(12), A.T @ b / 30)
    pb = ERM(A, b, SquaredL2(lam))
    r = solvers.minimize(pb, method, tol=1e-13, max_iter=50000)
    assert r.converged
    assert r.fun == pytest.approx(pb.value(x_star), rel=1e-12)
    # lam-strong convexity: |x - x*|^2 <= 2 (F(x) - F*) / lam <= 2 gap / lam
    assert np.linalg.norm(r.x - x_star) <= np.sqrt(2 * r.trace.extra["gap"][-1] / lam) + 1e-12


def test_elastic_net_and_logistic_l1_match_cvxpy():
    A, b = lasso_data(n=60, d=10, seed=2)
    y = np.where(b > 0, 1.0, -1.0)
    x = cp.Variable(10)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, A @ x))) / 60 + 0.02 * cp.norm1(x)))
    prob.solve(**CLARABEL)
    for method in ("fista", "pdcp"):
        r = solvers.minimize(ERM(A, y, L1(0.02), loss="logistic"), method, tol=1e-11, max_iter=100000)
        assert r.converged, (method, r.message)
        assert r.fun == pytest.approx(prob.value, rel=1e-8)
        np.testing.assert_allclose(r.x, x.value, atol=1e-5)
    xe = cp.Variable(10)
    pe = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(A @ xe - b) / 60 + 0.1 * (cp.norm1(xe) + 0.5 * cp.sum_squares(xe)))
    )
    pe.solve(**CLARABEL)
    r = solvers.minimize(ERM(A, b, ElasticNet(0.1, 1.0)), "fista", tol=1e-13, max_iter=50000)
    assert r.fun == pytest.approx(pe.value, rel=1e-8)
    np.testing.assert_allclose(r.x, xe.value, atol=1e-6)


def test_generalized_lasso_pdcp_matches_cvxpy():
    rng = np.random.default_rng(3)
    M = rng.normal(size=(30, 15))
    b = M @ np.repeat([1.0, -1.0, 2.0], 5) + 0.1 * rng.normal(size=30)
    pb = GeneralizedLasso.total_variation(M, b, 1.0)
    x = cp.Variable(15)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(M @ x - b) + cp.norm1(cp.diff(x))))
    prob.solve(**CLARABEL)
    for method in ("pdcp", "admm"):
        r = solvers.minimize(pb, method, tol=1e-12, max_iter=100000)
        assert r.converged, (method, r.message)
        assert r.fun == pytest.approx(prob.value, rel=1e-8)
        np.testing.assert_allclose(r.x, x.value, atol=1e-6)


def cvx_rpca(pb):
    X = [cp.Variable(pb.shape) for _ in range(3)]
    g2 = pb.f.parts[1].lam
    g3 = pb.f.parts[2].lam
    obj = 0.5 * cp.sum_squares(X[0]) + g2 * cp.sum(cp.abs(X[1])) + g3 * cp.normNuc(X[2])
    prob = cp.Problem(cp.Minimize(obj), [X[0] + X[1] + X[2] == pb.B])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, np.concatenate([v.value.ravel() for v in X])


@pytest.mark.parametrize("method", ["pdcp", "admm"])
def test_small_rpca_matches_cvxpy(method):
    pb = RPCA.generate(8, 10, 2, seed=4)
    f_ref, x_ref = cvx_rpca(pb)
    r = solvers.minimize(pb, method, tol=1e-11, max_iter=200000)
    assert r.converged, r.message
    assert pb.residual(r.x) < 1e-7
    assert r.fun == pytest.approx(f_ref, rel=1e-8)
    np.testing.assert_allclose(r.x, x_ref, atol=1e-5)
    assert "residual" in r.trace.extra


def test_fista_rate_is_1_over_k2_and_ista_1_over_k():
    """Beck & Teboulle: ISTA F_k - F* <= L|x0-x*|^2/(2k), FISTA <= 2L|x0-x*|^2/(k+1)^2. An ill-conditioned lasso
    built so that a chosen x* satisfies the KKT conditions exactly (F* known, no reference solve)."""
    rng = np.random.default_rng(5)
    n, d, lam = 120, 100, 1e-2
    A = rng.normal(size=(n, d)) * (np.arange(1, d + 1) ** -1.0)
    x_star = np.where(rng.random(d) < 0.2, rng.normal(size=d), 0.0)
    w = np.where(x_star != 0, np.sign(x_star), rng.uniform(-0.9, 0.9, d))  # a subgradient of |.|_1 at x*
    b = A @ x_star + n * lam * A @ np.linalg.solve(A.T @ A, w)  # A^T (A x* - b)/n = -lam w
    pb = ERM(A, b, L1(lam))
    assert pb.duality_gap(x_star) < 1e-12
    f_star, R = pb.value(x_star), pb.L * float(x_star @ x_star)
    K = 400
    ks = np.arange(1, K + 1)
    sub_i = np.array(solvers.minimize(pb, "ista", tol=0.0, max_iter=K).trace.objective[1:]) - f_star
    sub_f = np.array(solvers.minimize(pb, "fista", tol=0.0, max_iter=K).trace.objective[1:]) - f_star
    assert np.all(sub_i <= R / (2 * ks)) and np.all(sub_i > 0)
    assert np.all(sub_f <= 2 * R / (ks + 1) ** 2) and np.all(sub_f > 0)
    # the empirical orders: slope of log(F_k - F*) against log(k) over k in [50, 400]
    sl = slice(49, K)
    slope_i = np.polyfit(np.log(ks[sl]), np.log(sub_i[sl]), 1)[0]
    slope_f = np.polyfit(np.log(ks[sl]), np.log(sub_f[sl]), 1)[0]
    assert -1.5 < slope_i < -0.7, slope_i  # measured -1.04
    assert slope_f < -1.8, slope_f  # measured -3.1


def test_operator_norm_and_pdcp_step_check():
    rng = np.random.default_rng(6)
    K = rng.normal(size=(7, 5))
    assert operator_norm(K) == pytest.approx(np.linalg.norm(K, 2), rel=1e-8)
    A, b = lasso_data()
    pb = ERM(A, b, L1(0.05))
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, "pdcp", tau=10.0, sigma=10.0)
    assert e.value.field == "tau"
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, "pdcp", theta=2.0)
    assert e.value.field == "theta"


def test_coupling_with_a_zero_row_or_column_is_refused():
    K = np.ones((3, 4))
    K[1] = 0.0
    with pytest.raises(InputError) as e:
        SaddlePoint(K, L1(1.0), L1(1.0))
    assert e.value.field == "K" and e.value.location["row"] == 1
    A, b = lasso_data()
    A[:, 4] = 0.0  # a feature that is zero everywhere: an all-zero row of K = A^T / N
    with pytest.raises(InputError, match="all-zero row") as e:
        solvers.minimize(ERM(A, b, L1(0.1)), "pdcp")
    assert e.value.field == "K"


def test_auto_picks_a_solver_that_handles_the_nonsmooth_part():
    A, b = lasso_data()
    assert solvers.choose(ERM(A, b, L1(0.05))) == "coordinate_descent"  # the lasso: its compiled CD
    assert solvers.choose(ERM(A, np.sign(b), L1(0.05), loss="logistic")) == "fista"
    assert solvers.choose(RPCA.generate(4, 5, 1)) == "admm"


def test_bregman_iteration_solves_basis_pursuit_like_cvxpy_and_pdcp():
    from solvers.problems.basis_pursuit import BasisPursuit

    rng = np.random.default_rng(7)
    A = rng.normal(size=(20, 50))
    x_true = np.zeros(50)
    x_true[rng.choice(50, 4, replace=False)] = rng.normal(size=4)
    b = A @ x_true
    x = cp.Variable(50)
    prob = cp.Problem(cp.Minimize(cp.norm1(x)), [A @ x == b])
    prob.solve(**CLARABEL)
    pb = BasisPursuit(A, b)
    for method in ("bregman", "pdcp"):
        r = solvers.minimize(pb, method, tol=1e-11, max_iter=100000)
        assert r.converged, (method, r.message)
        assert pb.residual(r.x) <= 1e-9
        assert r.fun == pytest.approx(prob.value, rel=1e-8)
        np.testing.assert_allclose(r.x, x.value, atol=1e-6)
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(*lasso_data(), L1(0.1)), "bregman")
    assert e.value.field == "problem"
