"""The shorthand factories of solvers/problems/linear_models.py against independent references.

Least squares (with and without ridge): the optimum against the normal equations solved by
``numpy.linalg.lstsq``; the smoothed hinge SVM: value and gradient against the direct piecewise
formula (``smooth_hinge_objective`` of test_incremental_solvers) and finite differences, and the optimum against scipy's L-BFGS-B on that formula.
"""

import numpy as np
import pytest
import scipy.optimize as so

import solvers
from solvers.problems.linear_models import (
    ElasticNet,
    Lasso,
    LeastSquares,
    LinearModel,
    LogisticRegression,
    Ridge,
    SmoothHingeSVM,
)

from .test_incremental_solvers import smooth_hinge_objective


def _data(seed=0, n=120, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    return X, X @ w + 0.1 * rng.normal(size=n), np.where(X @ w + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)


@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_least_squares_optimum_is_the_normal_equations(l2):
    X, y, _ = _data()
    n, d = X.shape
    pb = LeastSquares(X, y, l2=l2)
    # (1/n) X^T (X w - y) + l2 w = 0  <=>  [X; sqrt(n l2) I] w = [y; 0] in least squares
    M = np.vstack([X, np.sqrt(n * l2) * np.eye(d)])
    w_ref = np.linalg.lstsq(M, np.concatenate([y, np.zeros(d)]), rcond=None)[0]
    r = solvers.minimize(pb, "newton", tol=1e-14)
    np.testing.assert_allclose(r.x, w_ref, rtol=1e-9, atol=1e-11)
    assert pb.value(w_ref) == pytest.approx(0.5 * np.mean((X @ w_ref - y) ** 2) + 0.5 * l2 * w_ref @ w_ref, rel=1e-13)


@pytest.mark.parametrize("smoothing", [0.5, 1.0, 2.0])
def test_smooth_hinge_svm_value_gradient_and_optimum(smoothing):
    X, _, yc = _data(1)
    pb = SmoothHingeSVM(X, yc, l2=0.05, smoothing=smoothing)
    f = smooth_hinge_objective(X, yc, 0.05, smoothing)
    rng = np.random.default_rng(2)
    for _ in range(3):
        w = rng.normal(size=X.shape[1])
        v, g = pb.value_and_grad(w)
        fv, fg = f(w)
        assert v == pytest.approx(fv, rel=1e-12)
        np.testing.assert_allclose(g, fg, rtol=1e-10, atol=1e-13)
        eps = 1e-6
        fd = np.array([(pb.value(w + eps * e) - pb.value(w - eps * e)) / (2 * eps) for e in np.eye(X.shape[1])])
        np.testing.assert_allclose(g, fd, atol=1e-7)
    ref = so.minimize(
        f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0, "maxiter": 10000}
    )
    r = solvers.minimize(pb, "lbfgs", tol=1e-12)
    assert r.fun == pytest.approx(ref.fun, rel=1e-9)
    np.testing.assert_allclose(r.x, ref.x, atol=1e-5)


def test_the_other_shorthands_are_the_linear_model_they_name():
    X, y, yc = _data(3)
    w = np.random.default_rng(4).normal(size=X.shape[1])
    pairs = [
        (LogisticRegression(X, yc, l2=0.1, l1=0.01), LinearModel(X, yc, "logistic", l2=0.1, l1=0.01)),
        (Ridge(X, y, l2=0.2), LinearModel(X, y, "squared", l2=0.2)),
        (Lasso(X, y, l1=0.05), LinearModel(X, y, "squared", l1=0.05)),
        (ElasticNet(X, y, l1=0.05, l2=0.2), LinearModel(X, y, "squared", l1=0.05, l2=0.2)),
    ]
    for a, b in pairs:
        assert (a.loss, a.l1, a.l2) == (b.loss, b.l1, b.l2)
        assert a.value(w) == b.value(w)
