"""Log opinion pool (seed 000 Eq. 2.5): function, fit against SLSQP and cvxpy, floor, options."""

import numpy as np
import pytest

from aggregators.logpool import LogPool, log_pool
from aggregators.validation import PredictionError
from solvers.problems.loglinear import ConditionalLogLinear
from tests.references import slsqp_simplex


def _agents(seed=0, N=300, A=6, K=5):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(N, K))
    lp = truth[:, None, :] * rng.uniform(0.3, 2.0, size=(1, A, 1)) + rng.normal(size=(N, A, K))
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    p = np.exp(truth - truth.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return lp, np.array([rng.choice(K, p=row) for row in p])


def test_log_pool_function_is_the_normalised_geometric_mean():
    lp, _ = _agents()
    w = np.array([0.5, 0.25, 0.25, 0, 0, 0])
    P = np.exp(lp)
    g = P[:, 0] ** 0.5 * P[:, 1] ** 0.25 * P[:, 2] ** 0.25
    np.testing.assert_allclose(log_pool(lp, w), np.log(g / g.sum(1, keepdims=True)), atol=1e-12)
    one_hot = np.eye(6)[3]
    np.testing.assert_allclose(log_pool(lp, one_hot), lp[:, 3], atol=1e-12)
    zeros = lp.copy()
    zeros[:, 4, :] = -np.inf
    zeros[:, 4, 0] = 0.0
    np.testing.assert_allclose(log_pool(zeros, w), log_pool(lp, w), atol=1e-12)  # zero-weight agent ignored


def test_fit_matches_slsqp_and_cvxpy():
    cp = pytest.importorskip("cvxpy")
    lp, y = _agents()
    pool = LogPool(tol=1e-12).fit(lp, y)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    A = pb.dim
    sl = slsqp_simplex(pb.value_and_grad, A)
    np.testing.assert_allclose(pool.weights_, sl.x, atol=1e-6)
    N, _, K = lp.shape
    w = cp.Variable(A)
    S = np.ascontiguousarray(lp.transpose(0, 2, 1)).reshape(N * K, A)
    nll = (
        cp.sum(cp.log_sum_exp(cp.reshape(S @ w, (N, K), order="C"), axis=1)) / N
        - cp.sum(lp[np.arange(N), :, y] @ w) / N
    )
    prob = cp.Problem(cp.Minimize(nll), [w >= 0, cp.sum(w) == 1])
    prob.solve(solver=cp.CLARABEL)
    assert pool.fit_result_.fun == pytest.approx(prob.value, abs=1e-7)
    assert pool.score(lp, y) == pytest.approx(-pool.fit_result_.fun, abs=1e-12)
    assert pool.n_iter_ == pool.fit_result_.n_iter and pool.fit_result_.method == "newton"
    # another solver through the same registry reaches the same weights
    bfgs = LogPool(solver="lbfgs", tol=1e-9).fit(lp, y)
    np.testing.assert_allclose(bfgs.weights_, pool.weights_, atol=1e-5)


def test_gradient_of_the_fit_objective_matches_finite_differences():
    lp, y = _agents(seed=1, N=80)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    w = np.random.default_rng(0).dirichlet(np.ones(pb.dim))
    eps = 1e-6
    fd = np.array([(pb.value(w + eps * e) - pb.value(w - eps * e)) / (2 * eps) for e in np.eye(pb.dim)])
    np.testing.assert_allclose(pb.grad(w), fd, atol=1e-8)


def test_floor_is_applied_and_counted_and_float32_agrees():
    lp, y = _agents(seed=2)
    z = lp.copy()
    z[:5, 2, :] = np.where(np.arange(5)[None, :] == 0, 0.0, -np.inf)  # agent 2 certain of class 0
    pool = LogPool().fit(z, y)
    assert pool.n_floored_ == 5 * 4
    assert np.all(np.isfinite(pool.predict(z)))
    with pytest.raises(PredictionError, match="flooring is off"):
        LogPool(floor=None).fit(z, y)
    a = LogPool(tol=1e-11).fit(lp, y)
    b = LogPool(tol=1e-11, dtype="float32").fit(lp, y)
    np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-4)
    assert abs(a.fit_result_.fun - b.fit_result_.fun) < 1e-7
    with pytest.raises(ValueError, match="dtype"):
        LogPool(dtype="float16").fit(lp, y)


def test_predict_checks_shapes():
    lp, y = _agents(seed=3)
    pool = LogPool().fit(lp, y)
    with pytest.raises(PredictionError):
        pool.predict(lp[:, :4, :])
    out = pool.predict_proba(lp)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
