"""Projected Newton on a box (``box_newton``) against independent references: SciPy's bounded least
squares (``lsq_linear``, an active-set/trust-region method) for a box-constrained quadratic, and
SciPy's L-BFGS-B run to a tight tolerance for a box-constrained logistic regression."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import lsq_linear
from scipy.optimize import minimize as sp_minimize
from scipy.special import expit

from solvers.errors import InputError
from solvers.registry import available, minimize


class BoxLeastSquares:
    """``½ |A x - b|²`` on ``lo <= x <= hi``; ``model``: ``"exact"`` (AᵀA), ``"diag"`` (its diagonal, a
    poor model the BFGS corrections and refreshes must make up for)."""

    constraint = "box"

    def __init__(self, A, b, lo, hi, model="exact"):
        self.A, self.b = A, b
        self.dim = A.shape[1]
        self.bounds = (lo, hi)
        self.model = model
        self.free_seen: list[np.ndarray] = []

    def value(self, x):
        r = self.A @ x - self.b
        return 0.5 * float(r @ r)

    def value_and_grad(self, x):
        r = self.A @ x - self.b
        return 0.5 * float(r @ r), self.A.T @ r

    def hessian(self, x, *, free=None):
        self.free_seen.append(np.ones(self.dim, dtype=bool) if free is None else free.copy())
        H = self.A.T @ self.A
        return H if self.model == "exact" else np.diag(np.diag(H))


def _problem(seed, model="exact"):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(60, 12)) @ np.diag(np.logspace(0, 2, 12))  # condition number ~1e2-1e4
    b = rng.normal(size=60) * 20
    return BoxLeastSquares(A, b, np.full(12, -0.05), np.full(12, 0.05), model)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_box_newton_solves_bounded_least_squares_as_lsq_linear(seed):
    p = _problem(seed)
    assert "box_newton" in available(p)
    res = minimize(p, "box_newton", tol=1e-12)
    ref = lsq_linear(p.A, p.b, bounds=p.bounds, tol=1e-14, method="bvls")
    assert res.converged
    np.testing.assert_allclose(res.x, ref.x, atol=1e-9)
    at_bound = (np.abs(ref.x - p.bounds[0]) < 1e-12) | (np.abs(ref.x - p.bounds[1]) < 1e-12)
    assert 0 < at_bound.sum() < p.dim  # the box binds somewhere, not everywhere
    # with the exact Hessian the active set is found and the last steps are Newton steps: few iterations
    assert res.n_iter <= 15
    # the model was asked for only on free coordinates, and the bound ones were not free at the end
    assert not np.any(p.free_seen[-1] & at_bound) or len(p.free_seen) == 1


def test_box_newton_with_a_poor_model_still_reaches_the_optimum():
    exact = _problem(3)
    poor = _problem(3, model="diag")
    r_exact = minimize(exact, "box_newton", tol=1e-12)
    # f is ~8e3 with gradient entries up to ~7e3 on the bound coordinates: 1e-9 relative is near the
    # precision limit of its gradient on the free ones (measured 2.3e-6 absolute, target 8e-6)
    r_poor = minimize(poor, "box_newton", tol=1e-9, max_iter=2000)
    assert r_poor.converged
    np.testing.assert_allclose(r_poor.x, r_exact.x, atol=1e-8)
    # asked for more than the precision allows, it stops and says so instead of running out its budget
    r_limit = minimize(_problem(3, model="diag"), "box_newton", tol=1e-13, max_iter=2000)
    assert not r_limit.converged and "precision limit" in r_limit.message and r_limit.n_iter < 100
    assert r_poor.n_iter > r_exact.n_iter  # the diagonal model is corrected step by step, not free


def test_box_newton_on_box_logistic_regression_matches_lbfgsb():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 8))
    y = (X @ rng.normal(size=8) + rng.normal(size=300) > 0).astype(float)
    lo, hi = np.zeros(8), np.full(8, 0.8)

    class Logistic:
        constraint = "box"
        dim = 8
        bounds = (lo, hi)

        def value(self, w):
            z = X @ w
            return float(np.mean(np.logaddexp(0.0, z) - y * z))

        def value_and_grad(self, w):
            z = X @ w
            return self.value(w), X.T @ (expit(z) - y) / len(y)

        def hessian(self, w, *, free=None):
            s = expit(X @ w)
            return (X.T * (s * (1 - s))) @ X / len(y)

    res = minimize(Logistic(), "box_newton", tol=1e-12)
    ref = sp_minimize(
        Logistic().value_and_grad,
        np.full(8, 0.4),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(lo, hi, strict=True)),
        options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 10000},
    )
    assert res.converged
    np.testing.assert_allclose(res.x, ref.x, atol=1e-7)
    assert res.fun <= ref.fun + 1e-14


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_adapted_ridge_lets_the_last_steps_be_newton_steps(seed):
    """A fixed ridge under an exact, badly conditioned model (condition ~1e6) slows the last steps to
    a crawl (measured 64-176 iterations, stopped at the precision limit short of the tolerance); the
    adapted one (divided by ten after full steps the model predicted well) reaches SciPy's optimum in a
    few (measured 6-9)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(60, 12)) @ np.diag(np.logspace(0, 3, 12))
    p = BoxLeastSquares(A, rng.normal(size=60) * 20, np.full(12, -0.05), np.full(12, 0.05))
    ref = lsq_linear(p.A, p.b, bounds=p.bounds, tol=1e-14, method="bvls")
    fixed = minimize(p, "box_newton", tol=1e-10, max_iter=2000, ridge=1e-2)
    adapted = minimize(p, "box_newton", tol=1e-10, max_iter=2000, ridge=1e-2, adapt_ridge=True)
    assert adapted.converged
    assert adapted.n_iter <= 15
    np.testing.assert_allclose(adapted.x, ref.x, atol=1e-9)
    assert fixed.n_iter > 3 * adapted.n_iter


class Padded(BoxLeastSquares):
    """The least squares of :func:`_problem` with ``extra`` coordinates it does not depend on (zero
    gradient, zero rows of the model): the Rényi joint problem's γ of agents of weight zero."""

    def __init__(self, base, extra):
        self.base, self.extra = base, extra
        self.dim = base.dim + extra
        lo, hi = base.bounds
        self.bounds = (np.r_[lo, np.full(extra, -1.0)], np.r_[hi, np.full(extra, 1.0)])

    def value(self, x):
        return self.base.value(x[: self.base.dim])

    def value_and_grad(self, x):
        f, g = self.base.value_and_grad(x[: self.base.dim])
        return f, np.r_[g, np.zeros(self.extra)]

    def hessian(self, x, *, free=None):
        H = np.zeros((self.dim, self.dim))
        H[: self.base.dim, : self.base.dim] = self.base.hessian(x[: self.base.dim])
        return H


def test_coordinates_the_objective_ignores_change_no_step():
    """Free coordinates with a zero gradient and no coupling in the model stay out of the Newton system
    (``_inert``): the padded problem takes the unpadded one's steps, to rounding, and leaves them at rest."""
    from solvers.methods.box_newton import _inert

    B = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(_inert(B, np.array([0.0, 1.0, 0.0]), np.arange(3)), [False, False, True])
    np.testing.assert_array_equal(_inert(B, np.array([0.0, 0.0, 0.0]), np.array([0, 2])), [True, True])
    for seed in range(3):
        base = _problem(seed)
        plain = minimize(base, "box_newton", tol=1e-12)
        x0 = np.r_[np.zeros(base.dim), [0.3, -0.2, 0.0]]
        padded = minimize(Padded(base, 3), "box_newton", x0=x0, tol=1e-12)
        assert padded.converged and plain.converged
        assert padded.n_iter == plain.n_iter
        np.testing.assert_allclose(padded.x[: base.dim], plain.x, atol=1e-12)
        np.testing.assert_array_equal(padded.x[base.dim :], x0[base.dim :])


def test_box_newton_rejects_bad_options():
    p = _problem(0)
    with pytest.raises(InputError):
        minimize(p, "box_newton", sigma=0.7)
    with pytest.raises(InputError):
        minimize(p, "box_newton", refresh_step=0.0)
    with pytest.raises(InputError):
        minimize(p, "box_newton", ridge=-1e-3)
