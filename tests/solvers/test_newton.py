"""Newton (seed 003 §6.2): unconstrained and on the simplex, against scipy and cvxpy optima."""

import numpy as np
import pytest

import solvers
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.problems.mixture import MixtureLikelihood
from tests.references import lbfgsb, slsqp_simplex


def _log_pool_problem(seed=0, N=300, A=6, K=5, dtype=np.float64):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(N, K))
    lp = truth[:, None, :] * rng.uniform(0.2, 2.0, size=(1, A, 1)) + rng.normal(scale=1.0, size=(N, A, K))
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    p = np.exp(truth - truth.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(K, p=row) for row in p])
    return ConditionalLogLinear.from_log_probs(lp, y, dtype=dtype), lp, y


def slsqp_on(pb):
    """The SLSQP reference's minimiser and minimum for ``pb`` on the simplex."""
    r = slsqp_simplex(pb.value_and_grad, pb.dim, maxiter=2000)
    return r.x, r.fun


def test_simplex_newton_matches_slsqp_and_cvxpy_on_the_log_pool():
    cp = pytest.importorskip("cvxpy")
    pb, lp, y = _log_pool_problem()
    res = solvers.minimize(pb, "newton", tol=1e-12)
    assert res.converged and res.method == "newton"
    x_s, f_s = slsqp_on(pb)
    assert res.fun <= f_s + 1e-12
    np.testing.assert_allclose(res.x, x_s, atol=1e-6)
    # cvxpy: mean over items of logsumexp(S_n w) - s_n(y_n) w
    N, A, K = lp.shape
    w = cp.Variable(A)
    S = np.ascontiguousarray(lp.transpose(0, 2, 1)).reshape(N * K, A)  # row n*K + k = f_n(k)
    scores = cp.reshape(S @ w, (N, K), order="C")
    expr = cp.sum(cp.log_sum_exp(scores, axis=1)) / N - cp.sum(lp[np.arange(N), :, y] @ w) / N
    prob = cp.Problem(cp.Minimize(expr), [w >= 0, cp.sum(w) == 1])
    prob.solve(solver=cp.CLARABEL)
    assert abs(prob.value - res.fun) < 1e-7
    np.testing.assert_allclose(res.x, np.clip(w.value, 0, None), atol=1e-4)
    assert res.extra["gap"] <= 1e-12 * max(1, abs(res.fun))
    assert np.all(res.x >= 0) and abs(res.x.sum() - 1) < 1e-12


def test_working_set_newton_equals_plain_newton_and_reports_rounds():
    pb, _, _ = _log_pool_problem(seed=1, A=60, N=400)
    plain = solvers.minimize(pb, "newton", working_set=False, tol=1e-12)
    ws = solvers.minimize(pb, "newton", working_set=True, ws_init=5, ws_add=4, tol=1e-12)
    assert ws.extra["rounds"] >= 2  # the working set had to grow
    assert abs(ws.fun - plain.fun) <= 1e-11
    np.testing.assert_allclose(ws.x, plain.x, atol=1e-5)
    assert ws.converged and (ws.x == 0).sum() > 0  # sparse optimum, exact zeros
    # a subsampled Hessian changes the path, not the optimum
    sub = solvers.minimize(pb, "newton", working_set=True, hessian_sample=0.3, tol=1e-12)
    assert abs(sub.fun - plain.fun) <= 1e-11


def test_float32_storage_reaches_the_float64_optimum():
    pb64, lp, y = _log_pool_problem(seed=2, A=50)
    pb32 = ConditionalLogLinear.from_log_probs(lp, y, dtype=np.float32)
    r64 = solvers.minimize(pb64, "newton", tol=1e-11)
    r32 = solvers.minimize(pb32, "newton", tol=1e-11)
    assert pb64.value(r32.x) - r64.fun <= 1e-9 * abs(r64.fun)


def softmax_regression_problem(seed, N, p, K):
    """Multinomial logistic regression as a ConditionalLogLinear: ``f_n(y) = e_y ⊗ x_n``, ridge 1e-2."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, p))
    y = rng.integers(0, K, N)
    feats = np.zeros((N, K, K * p))
    for k in range(K):
        feats[:, k, k * p : (k + 1) * p] = X
    return ConditionalLogLinear(feats, y, l2=1e-2)


def test_unconstrained_newton_converges_quadratically():
    pb = softmax_regression_problem(3, 400, 5, 4)
    res = solvers.minimize(pb, "newton", tol=1e-14)
    ref = lbfgsb(pb.value_and_grad, np.zeros(pb.dim), ftol=1e-15)
    assert res.converged and res.fun <= ref.fun + 1e-12
    gaps = np.array(res.trace.extra["gap"])
    # quadratic phase: once below 1e-2 the estimated gap (λ²/2) at least squares (up to a constant)
    late = gaps[gaps < 1e-2]
    assert len(late) >= 2 and all(b <= 10 * a**2 + 1e-15 for a, b in zip(late[:-1], late[1:]))
    assert res.n_iter <= 12


def test_newton_on_the_mixture_and_progress_reaches_one():
    rng = np.random.default_rng(4)
    Q = rng.dirichlet(np.ones(7) * 0.5, size=500)
    pb = MixtureLikelihood(Q)
    seen = []
    res = solvers.minimize(pb, "newton", tol=1e-12, progress=seen.append)
    x_s, f_s = slsqp_on(pb)
    assert res.fun <= f_s + 1e-12
    np.testing.assert_allclose(res.x, x_s, atol=1e-6)
    assert seen and seen[-1] == 1.0 and all(0 <= s <= 1 for s in seen)
    assert len(res.trace) >= 2 and res.trace.passes[-1] <= res.n_passes


def test_auto_picks_newton_for_pool_problems_and_bad_x0_is_rejected():
    pb, _, _ = _log_pool_problem(seed=5)
    assert solvers.choose(pb) == "newton"
    assert solvers.choose(MixtureLikelihood(np.ones((3, 2)))) == "newton"
    with pytest.raises(ValueError, match="x0"):
        solvers.minimize(pb, "newton", x0=np.ones(3))


class _NanHessian:
    """A problem whose Hessian turns NaN: the solver must fail loudly, never report convergence
    (a NaN model once made the model decrease 0 and the working-set Newton stop "converged" with a
    Frank-Wolfe gap of 0.09)."""

    def __init__(self, inner):
        self._inner = inner
        self.constraint, self.dim, self.n_terms = "simplex", inner.dim, inner.n_terms

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def restrict(self, idx):
        return _NanHessian(self._inner.restrict(idx))

    def hessian(self, x, **kw):
        return self._inner.hessian(x, **kw) * np.nan


def test_a_non_finite_hessian_is_an_error_not_a_convergence():
    pb, _, _ = _log_pool_problem()
    with pytest.raises(FloatingPointError, match="non-finite"):
        solvers.minimize(_NanHessian(pb), "newton", tol=1e-12)
