"""Gauss-Seidel ADMM against cvxpy (RPCA); stochastic ADMM, online ADMM and FOBOS (seed 002 ch. III) against
cvxpy to the accuracy their rates allow and at the rates of Thms 7-9 (log-log slopes); the primal-dual
solvers' bad input (a coupling with an all-zero row or column, a problem that is not strongly convex,
m above the number of blocks) named by argument."""

import cvxpy as cp
import numpy as np
import pytest

import solvers
from solvers.errors import InputError
from solvers.problems.erm import ERM
from solvers.problems.rpca import RPCA
from solvers.problems.saddle_point import SaddlePoint
from solvers.prox import L1, Equality, SquaredL2

from .test_primal_dual import CLARABEL, cvx_rpca

STOCHASTIC = ("stochastic_admm", "online_admm", "fobos")


@pytest.mark.parametrize("rho", [0.5, 1.0, 3.0])
def test_gauss_seidel_admm_rpca_matches_cvxpy(rho):
    pb = RPCA.generate(8, 10, 2, seed=4)
    f_ref, x_ref = cvx_rpca(pb)
    r = solvers.minimize(pb, "gauss_seidel_admm", rho=rho, tol=1e-11, max_iter=20000)
    assert r.converged, r.message
    assert pb.residual(r.x) < 1e-8
    assert r.fun == pytest.approx(f_ref, rel=1e-8)
    np.testing.assert_allclose(r.x, x_ref, atol=1e-5)
    assert r.trace.extra["residual"][-1] == pytest.approx(pb.residual(r.x))
    assert np.all(np.isfinite(r.trace.extra["dual_residual"]))


def test_gauss_seidel_admm_is_not_the_jacobi_update():
    """After one sweep from zero, block 2 has seen block 1's new value (Gauss-Seidel), block 1 nothing."""
    pb = RPCA.generate(5, 6, 1, seed=1)
    r = solvers.minimize(pb, "gauss_seidel_admm", max_iter=1, rho=1.0)
    X1, X2, _ = pb.parts(r.x)
    B = pb.B
    np.testing.assert_allclose(X1, B / 2.0)  # prox of (1/2)|.|^2 with rho = 1 at B
    g2 = pb.f.parts[1].lam
    np.testing.assert_allclose(X2, np.sign(B - X1) * np.maximum(np.abs(B - X1) - g2, 0.0))


def lasso_problem(N, d, seed=0, lam=0.02):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, d)) / np.sqrt(d)
    b = A @ np.where(rng.random(d) < 0.3, 1.0, 0.0) + 0.5 * rng.normal(size=N)
    x = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(A @ x - b) / N + lam * cp.norm1(x)))
    prob.solve(**CLARABEL)
    return ERM(A, b, L1(lam)), prob.value, x.value


def slope(trace, F, start):
    p = np.asarray(trace.passes)
    sub = np.asarray(trace.objective) - F
    sel = p >= start
    return float(np.polyfit(np.log(p[sel]), np.log(sub[sel]), 1)[0])


@pytest.mark.parametrize("method", STOCHASTIC)
def test_stochastic_ergodic_iterate_approaches_the_cvxpy_optimum(method):
    pb, F, x_ref = lasso_problem(300, 20)
    r = solvers.minimize(pb, method, schedule="convex", max_iter=80, seed=1)
    sub = np.asarray(r.trace.objective) - F
    assert np.all(sub > -1e-12)  # never below the cvxpy optimum
    assert sub[-1] < 1.5e-3  # O(1/sqrt t) from ~2e-2 at pass 1 (eta_k = 1/sqrt k)
    assert sub[-1] < sub[1] / 8
    assert np.linalg.norm(r.x - x_ref) < 0.1 * np.linalg.norm(x_ref)
    if method != "fobos":  # Ouyang's measure: theta(u_bar) and |x_bar - y_bar|, one entry per record
        theta, res = (np.asarray(r.trace.extra[k]) for k in ("theta", "residual"))
        assert len(theta) == len(res) == len(r.trace)
        assert res[0] == 0.0 and res[-1] < 1e-3
        # |r(x_bar) - r(y_bar)| <= gamma |x_bar - y_bar|_1 <= gamma sqrt(d) |x_bar - y_bar|
        gap = np.abs(np.asarray(r.trace.objective) - theta)
        assert np.all(gap <= 0.02 * np.sqrt(20) * res * (1 + 1e-9) + 1e-12)


def test_stochastic_admm_rates_of_thms_7_to_9():
    """Log-log slope of J(x_bar_t) - J* against t (one run each, fixed seed): Thm 7 and Thm 9 bound it by
    O(1/sqrt t), Thm 8 by O(log t / t) (slope 1/log t - 1 ~ -0.9 at these t). The ergodic iterate must
    decay at least that fast; a missing average or a wrong step gives a slope near 0."""
    pb, F, _ = lasso_problem(60, 100, seed=0)  # N < D: theta_1 is not strongly convex, the 1/sqrt t regime
    for sched in ("convex", "smooth"):
        r = solvers.minimize(pb, "stochastic_admm", schedule=sched, max_iter=300, seed=0)
        s = slope(r.trace, F, 10)
        assert -1.0 < s < -0.45, (sched, s)
        assert r.trace.extra["residual"][-1] < 1e-3  # feasibility |x_bar - y_bar| decays too
    pb, F, _ = lasso_problem(300, 20, seed=0)
    r = solvers.minimize(pb, "stochastic_admm", schedule="strong", max_iter=100, seed=0)
    s = slope(r.trace, F, 5)
    assert -1.2 < s < -0.8, s


def test_shifted_and_plain_ergodic_averages():
    """Eq. 75 averages x over x_0..x_{t-1} (Thms 7-8), eq. 93 over x_1..x_t (Thm 9); y over y_1..y_t in both.
    One term: one epoch is one step, from x_0 = 0."""
    pb, _, _ = lasso_problem(1, 5, seed=2)
    shifted = solvers.minimize(pb, "stochastic_admm", schedule="convex", max_iter=1)
    plain = solvers.minimize(pb, "stochastic_admm", schedule="smooth", max_iter=1)
    np.testing.assert_array_equal(shifted.x, np.zeros(5))  # x_bar_1 = x_0
    assert np.linalg.norm(plain.extra["x_last"]) > 0
    np.testing.assert_array_equal(plain.x, plain.extra["x_last"])  # x_bar_1 = x_1
    two = solvers.minimize(pb, "stochastic_admm", schedule="convex", max_iter=2)
    np.testing.assert_allclose(two.x, shifted.extra["x_last"] / 2)  # (x_0 + x_1)/2, the same draws
    last = solvers.minimize(pb, "stochastic_admm", schedule="convex", max_iter=3, average=False)
    np.testing.assert_array_equal(last.x, last.extra["x_last"])


def test_online_admm_x_step_minimises_the_sampled_loss():
    """One online-ADMM step from x_0 = y_0 = 0 solves (c a a^T + (beta + 1/eta) I) x = c b_i a (Sherman-Morrison
    against a dense solve)."""
    pb, _, _ = lasso_problem(1, 6, seed=3)
    a, b = pb.A[0], pb.b[0]
    r = solvers.minimize(pb, "online_admm", max_iter=1, average=False, beta=2.0, eta0=0.5)
    kappa = 2.0 + 1.0 / 0.5
    x = np.linalg.solve(np.outer(a, a) + kappa * np.eye(6), b * a)
    np.testing.assert_allclose(r.extra["x_last"], x, rtol=1e-12)


def test_stochastic_bad_input_names_the_argument():
    pb, _, _ = lasso_problem(10, 30)  # N < D: lambda_min(A^T A) = 0
    with pytest.raises(InputError, match="not strongly convex") as e:
        solvers.minimize(pb, "stochastic_admm", schedule="strong")
    assert e.value.field == "problem"
    A = np.random.default_rng(0).normal(size=(20, 3))
    y = np.sign(A[:, 0])
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, y, L1(0.1), loss="logistic"), "stochastic_admm", schedule="strong")
    assert e.value.field == "mu"
    with pytest.raises(InputError) as e:
        solvers.minimize(ERM(A, y, L1(0.1), loss="logistic"), "online_admm")
    assert e.value.field == "problem"
    for opts, field in (({"schedule": "nope"}, "schedule"), ({"beta": 0.0}, "beta"), ({"eta0": -1.0}, "eta0")):
        with pytest.raises(InputError) as e:
            solvers.minimize(pb, "stochastic_admm", **opts)
        assert e.value.field == field
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, "stochastic_admm", schedule="strong", mu=0.0)
    assert e.value.field == "mu"


def _zero_coupling(kind):
    A = np.random.default_rng(0).normal(size=(12, 5))
    if kind == "row":
        A[4] = 0.0  # a data row nothing couples: R_i = 0, an all-zero column of K
    else:
        A[:, 2] = 0.0  # a feature nothing couples: an all-zero row of K, tau_d = 1/0 in SP-BCD
    return ERM(A, np.ones(12), SquaredL2(0.1))


@pytest.mark.parametrize("kind", ["row", "column"])
@pytest.mark.parametrize("method", ["pdcp", "linearized_admm", "spbcd", "spdc", "adaspdc"])
def test_every_primal_dual_solver_refuses_an_all_zero_coupling_line(method, kind):
    pb = _zero_coupling(kind)
    if kind == "column" and method in ("spdc", "adaspdc"):
        # their steps use the row norms R_i only: an unused feature is harmless (ridge sets it to 0)
        r = solvers.minimize(pb, method, tol=1e-10, max_iter=3000)
        A = pb.A
        x_ref = np.linalg.solve(A.T @ A / 12 + 0.1 * np.eye(5), A.T @ pb.b / 12)
        assert r.converged and r.x[2] == 0.0
        np.testing.assert_allclose(r.x, x_ref, atol=1e-5)
        return
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, method, max_iter=5)
    assert e.value.field in ("A", "K")
    assert "all-zero" in str(e.value)


def test_a_constraint_coupling_with_a_zero_line_is_refused_by_name():
    K = np.eye(4)
    K[1, 1] = 0.0
    with pytest.raises(InputError, match="all-zero row") as e:
        SaddlePoint(K, SquaredL2(1.0), Equality(np.ones(4)))
    assert e.value.field == "K"


@pytest.mark.parametrize("method", ["spdc", "adaspdc"])
def test_strong_convexity_solvers_refuse_the_lasso(method):
    pb, _, _ = lasso_problem(20, 5)
    with pytest.raises(InputError, match="not strongly convex") as e:
        solvers.minimize(pb, method)
    assert e.value.field == "problem"


@pytest.mark.parametrize(("method", "limit"), [("spbcd", 3), ("spdc", 12), ("adaspdc", 12)])
def test_m_above_the_number_of_blocks_is_refused(method, limit):
    pb = RPCA.generate(3, 4, 1) if method == "spbcd" else ERM(np.eye(12, 4) + 0.1, np.ones(12), SquaredL2(0.1))
    with pytest.raises(InputError) as e:
        solvers.minimize(pb, method, m=limit + 1)
    assert e.value.field == "m" and str(limit) in str(e.value)
