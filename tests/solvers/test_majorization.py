"""Bound majorization solvers ``bm`` and ``sbm`` (solvers/methods/{bound,stochastic_bound}_majorization.py).

Independent references: scipy L-BFGS-B at tight tolerance polished by exact Newton steps on the
problem's own value/gradient/Hessian (no bound code involved), scikit-learn's multinomial
LogisticRegression, cvxpy (exponential cone) for the simplex-constrained log pool, and H2's
Newton solver for the pool problem.
"""

import numpy as np
import pytest
from scipy.optimize import minimize as sp_minimize

from aggregators.logpool import LogPool
from solvers import available, minimize
from solvers.kernels.sherman_morrison import sherman_morrison_direction
from solvers.methods._loglinear_terms import loglinear_terms
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.problems.multinomial_loglinear import DenseLogLinear, MultinomialLogLinear
from solvers.problems.softmax_regression import MultinomialLogistic
from solvers.simplex import simplex_metric_projection


def _softmax_data(rng, n=300, p=4, K=4, scale=1.0):
    X = rng.normal(size=(n, p))
    W = rng.normal(size=(K, p)) * scale
    S = X @ W.T
    P = np.exp(S - S.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = np.array([rng.choice(K, p=pr) for pr in P])
    return X, y


def _reference_optimum(problem):
    """L-BFGS-B at tight tolerance, then exact Newton steps on the problem's own Hessian."""
    r = sp_minimize(
        problem.value_and_grad,
        problem.x0(),
        jac=True,
        method="L-BFGS-B",
        options=dict(ftol=1e-15, gtol=1e-12, maxiter=20000, maxcor=20),
    )
    x = r.x
    for _ in range(4):
        x = x - np.linalg.solve(problem.hessian(x), problem.grad(x))
    return x, problem.value(x)


@pytest.fixture(scope="module")
def multinomial():
    rng = np.random.default_rng(0)
    X, y = _softmax_data(rng)
    pb = MultinomialLogLinear(X, y, 4, lam=1e-2, log_h=np.log([0.4, 0.3, 0.2, 0.1]))
    x_star, f_star = _reference_optimum(pb)
    return pb, x_star, f_star


def test_registered_and_applicable(multinomial):
    pb = multinomial[0]
    names = available(pb)
    assert "bm" in names and "sbm" in names

    class NotLogLinear:
        dim, n_terms = 2, 1

        def value(self, x):
            return float(x @ x)

    assert "bm" not in available(NotLogLinear())


def test_bm_is_monotone_and_reaches_the_optimum(multinomial):
    pb, x_star, f_star = multinomial
    r = minimize(pb, "bm", tol=1e-10)
    assert r.converged and r.method == "bm"
    f = np.array(r.trace.objective)
    assert np.all(np.diff(f) <= 1e-14 * abs(f_star))  # majorization: never goes up
    assert (r.fun - f_star) / abs(f_star) <= 1e-8
    np.testing.assert_allclose(r.x, x_star, atol=1e-7)
    assert r.n_passes == r.n_iter


def test_bm_matches_sklearn_multinomial_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    X, y = _softmax_data(rng, n=400, p=5, K=3)
    lam = 1e-2
    pb = MultinomialLogLinear(X, y, 3, lam=lam)
    r = minimize(pb, "bm", tol=1e-11)
    # sklearn: C * sum_i loss_i + 1/2 ||W||^2  ==  n * C * (mean loss + lam/2 ||W||^2) with C = 1/(n lam)
    sk = LogisticRegression(
        C=1.0 / (len(y) * lam), fit_intercept=False, tol=1e-12, max_iter=10000, solver="newton-cholesky"
    ).fit(X, y)
    f_sk = pb.value(sk.coef_.ravel())
    assert r.fun <= f_sk + 1e-12
    assert (f_sk - r.fun) / abs(r.fun) <= 1e-8
    np.testing.assert_allclose(r.x.reshape(3, 5), sk.coef_, atol=1e-5)


def test_sbm_growing_batch_reaches_the_optimum(multinomial):
    pb, x_star, f_star = multinomial
    r = minimize(pb, "sbm", tol=1e-10, batch_size=20, growth=1.2, seed=3)
    assert r.converged and r.extra["final_batch_size"] == pb.n_terms
    assert (r.fun - f_star) / abs(f_star) <= 1e-8
    np.testing.assert_allclose(r.x, x_star, atol=1e-7)


def test_sbm_sherman_morrison_reaches_the_optimum(multinomial):
    pb, x_star, f_star = multinomial
    r = minimize(pb, "sbm", tol=1e-10, batch_size=20, growth=1.2, seed=3, sherman_morrison=True)
    assert r.converged and (r.fun - f_star) / abs(f_star) <= 1e-8
    np.testing.assert_allclose(r.x, x_star, atol=1e-7)


def test_sbm_full_batch_unit_step_is_bm(multinomial):
    pb = multinomial[0]
    a = minimize(pb, "bm", tol=1e-9)
    b = minimize(pb, "sbm", tol=1e-9, batch_size=pb.n_terms)
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(a.x, b.x, atol=1e-13)


def test_plain_sbm_fixed_batch_gets_close(multinomial):
    """Constant batch, decreasing step (Robbins-Monro): a neighbourhood, not the exact optimum."""
    pb, x_star, f_star = multinomial
    x0 = pb.x0()
    r = minimize(pb, "sbm", batch_size=40, growth=1.0, step=0.5, schedule="inverse", decay=0.2, max_iter=20, seed=1)
    gap0 = pb.value(x0) - f_star
    assert not r.converged and r.n_passes == pytest.approx(20, abs=0.2)
    assert r.fun - f_star <= 1e-2 * gap0


def test_sherman_morrison_invariants(multinomial):
    """phi = M grad with M = (lam I + mean beta l l^T)^{-1}: the dense batch step, O(d^2) per term."""
    pb = multinomial[0]
    rng = np.random.default_rng(2)
    terms = loglinear_terms(pb)
    theta = rng.normal(size=pb.dim) * 0.5
    idx = np.sort(rng.choice(pb.n_terms, 25, replace=False))
    w = rng.uniform(0.5, 2.0, 25)
    Fb, sb = terms.dense_batch(theta, idx)
    phi, grad, M = sherman_morrison_direction(theta, Fb, sb, pb.labels[idx], w, pb.lam, True)
    terms.w = np.ones(pb.n_terms)
    terms.w[idx] = w
    _, g, S = terms.sums(theta, idx)
    H = S + pb.lam * np.eye(pb.dim)
    g = g + pb.lam * theta
    np.testing.assert_allclose(grad, g, atol=1e-13)
    np.testing.assert_allclose(M, np.linalg.inv(H), atol=1e-9)
    np.testing.assert_allclose(phi, np.linalg.solve(H, g), atol=1e-10)


def test_diag_curvature_is_monotone_and_converges():
    rng = np.random.default_rng(4)
    X, y = _softmax_data(rng, n=200, p=3, K=3)
    pb = MultinomialLogLinear(X, y, 3, lam=0.05)
    x_star, f_star = _reference_optimum(pb)
    r = minimize(pb, "bm", curvature="diag", tol=1e-10, max_iter=5000)
    f = np.array(r.trace.objective)
    assert np.all(np.diff(f) <= 1e-14)
    assert r.converged and (r.fun - f_star) / abs(f_star) <= 1e-8


def test_dense_features_equal_structured_features(multinomial):
    pb = multinomial[0]
    F = pb.features.rows(np.arange(pb.n_terms))
    dense = DenseLogLinear(F, pb.labels, lam=pb.lam, log_h=pb.log_h)
    a, b = minimize(pb, "bm", max_iter=5), minimize(dense, "bm", max_iter=5)
    np.testing.assert_allclose(a.x, b.x, atol=1e-12)
    np.testing.assert_allclose(a.trace.objective, b.trace.objective, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# the log pool: log-linear in its weights, on the simplex
# ---------------------------------------------------------------------------------------------


def _pool_data(rng, n=150, A=5, K=4):
    y = rng.integers(0, K, n)
    quality = rng.uniform(0.5, 4.0, A)
    logits = rng.normal(size=(n, A, K))
    logits[np.arange(n), :, y] += quality  # agents of different quality
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return lp, y


def _cvxpy_log_pool(F, y):
    cp = pytest.importorskip("cvxpy")
    n, K, A = F.shape
    w = cp.Variable(A)
    obj = sum(cp.log_sum_exp(F[i] @ w) - F[i, y[i]] @ w for i in range(n)) / n
    prob = cp.Problem(cp.Minimize(obj), [w >= 0, cp.sum(w) == 1])
    prob.solve(solver=cp.CLARABEL)
    return np.asarray(w.value)


def test_simplex_metric_projection_matches_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(5)
    for _ in range(5):
        d = 7
        B = rng.normal(size=(d, d))
        H = B @ B.T + 0.1 * np.eye(d)
        v = rng.normal(size=d)
        x = simplex_metric_projection(H, v)
        z = cp.Variable(d)
        cp.Problem(cp.Minimize(0.5 * cp.quad_form(z - v, H)), [z >= 0, cp.sum(z) == 1]).solve(solver=cp.CLARABEL)
        assert x.min() >= 0 and x.sum() == pytest.approx(1.0, abs=1e-14)
        q = lambda t: 0.5 * (t - v) @ H @ (t - v)  # noqa: E731
        assert q(x) <= q(np.clip(z.value, 0, None) / np.clip(z.value, 0, None).sum()) + 1e-9
        np.testing.assert_allclose(x, z.value, atol=1e-6)


def test_bm_log_pool_on_simplex_matches_cvxpy_and_kkt():
    rng = np.random.default_rng(6)
    lp, y = _pool_data(rng)
    F = np.swapaxes(lp, 1, 2)  # features f_i(y) = (log P_a(y | x_i))_a
    pb = DenseLogLinear(F, y, constraint="simplex")
    r = minimize(pb, "bm", tol=1e-12)
    f = np.array(r.trace.objective)
    assert r.converged and np.all(np.diff(f) <= 1e-14)
    assert r.x.min() >= 0 and r.x.sum() == pytest.approx(1.0, abs=1e-12)
    # KKT on the simplex: g_i >= <g, x> with equality on the support (Frank-Wolfe gap ~ 0)
    g = pb.grad(r.x)
    assert g @ r.x - g.min() <= 1e-10
    w_cvx = _cvxpy_log_pool(F, y)
    assert r.fun <= pb.value(np.clip(w_cvx, 0, None) / np.clip(w_cvx, 0, None).sum()) + 1e-12
    np.testing.assert_allclose(r.x, w_cvx, atol=1e-5)
    s = minimize(pb, "sbm", tol=1e-12, batch_size=15, growth=1.3)
    assert s.converged and (s.fun - r.fun) <= 1e-10 * abs(r.fun)


def test_bm_on_conditional_loglinear_matches_newton():
    rng = np.random.default_rng(7)
    lp, y = _pool_data(rng, n=200, A=6, K=5)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    assert "bm" in available(pb) and "sbm" in available(pb)
    r = minimize(pb, "bm", tol=1e-12)
    nt = minimize(pb, "newton", tol=1e-14)
    assert abs(r.fun - nt.fun) <= 1e-10 * abs(nt.fun)
    np.testing.assert_allclose(r.x, nt.x, atol=1e-6)


def test_logpool_selects_bm_by_name():
    rng = np.random.default_rng(8)
    lp, y = _pool_data(rng, n=200, A=6, K=5)
    a = LogPool(solver="bm").fit(lp, y)
    b = LogPool(solver="newton").fit(lp, y)
    np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-6)
    c = LogPool(solver="sbm").fit(lp, y)
    np.testing.assert_allclose(c.weights_, b.weights_, atol=1e-6)


def test_foreign_problem_with_another_objective_is_refused():
    rng = np.random.default_rng(9)
    lp, y = _pool_data(rng, n=50)
    inner = DenseLogLinear(np.swapaxes(lp, 1, 2), y)

    class Shifted:  # has features/labels, but its objective is not the log-linear NLL
        features, labels, dim, n_terms = inner.features, inner.labels, inner.dim, inner.n_terms

        def value_and_grad(self, x):
            v, g = inner.value_and_grad(x)
            return v + 1.0, g

        def value(self, x):
            return self.value_and_grad(x)[0]

        def grad(self, x):
            return self.value_and_grad(x)[1]

    with pytest.raises(ValueError, match="cannot be majorized"):
        minimize(Shifted(), "bm")


def test_bad_options_raise(multinomial):
    pb = multinomial[0]
    with pytest.raises(ValueError, match="curvature"):
        minimize(pb, "bm", curvature="lowrank")
    with pytest.raises(ValueError, match="tol"):
        minimize(pb, "bm", tol=-1.0)
    with pytest.raises(ValueError, match="step"):
        minimize(pb, "sbm", step=0.0)
    with pytest.raises(ValueError, match="growth"):
        minimize(pb, "sbm", growth=0.5)
    with pytest.raises(ValueError, match="schedule"):
        minimize(pb, "sbm", schedule="cosine")
    zero_lam = MultinomialLogLinear(pb.X, pb.labels, 4, lam=0.0)
    with pytest.raises(ValueError, match="lam > 0"):
        minimize(zero_lam, "sbm", sherman_morrison=True)
    with pytest.raises(ValueError, match="labels"):
        MultinomialLogLinear(pb.X, pb.labels[:-1], 4)


def test_bm_and_sbm_solve_linear_models_multinomial_logistic():
    """H4's MultinomialLogistic (W stored (d, K)) exposes KroneckerFeatures(layout="dk"): same optimum as its Newton."""
    rng = np.random.default_rng(10)
    X, y = _softmax_data(rng, n=250, p=4, K=3)
    pb = MultinomialLogistic(X, y, l2=1e-2)
    assert "bm" in available(pb) and "sbm" in available(pb)
    x_star, f_star = _reference_optimum(pb)
    for name in ("bm", "sbm"):
        r = minimize(pb, name, tol=1e-10)
        assert r.converged and (r.fun - f_star) / abs(f_star) <= 1e-8
        np.testing.assert_allclose(r.x, x_star, atol=1e-7)
    assert "bm" not in available(MultinomialLogistic(X, y, l2=1e-2, l1=1e-3))  # l1: not smooth


def test_visiting_order_and_custom_projection_keep_the_optimum():
    rng = np.random.default_rng(11)
    lp, y = _pool_data(rng, n=120, A=4, K=4)
    pb = DenseLogLinear(np.swapaxes(lp, 1, 2), y, constraint="simplex")
    a = minimize(pb, "bm", tol=1e-12, order="given")
    b = minimize(pb, "bm", tol=1e-12, order="ascending")
    calls = []

    def proj(H, v, x):  # the same QP, passed as a user projection
        calls.append(1)
        return simplex_metric_projection(H, v, x)

    c = minimize(pb, "bm", tol=1e-12, projection=proj)
    assert len(calls) == c.n_iter
    for r in (a, b, c):
        assert r.converged and np.all(np.diff(r.trace.objective) <= 1e-14)
    np.testing.assert_allclose(a.x, b.x, atol=1e-8)
    np.testing.assert_allclose(c.x, b.x, atol=1e-12)
    with pytest.raises(ValueError, match="order"):
        minimize(pb, "bm", order="descending")
