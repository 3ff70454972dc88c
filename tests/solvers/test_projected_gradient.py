"""Spectral projected gradient (solvers/methods/projected_gradient.py) against closed forms and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize

import solvers
from solvers.simplex import project_simplex


class SimplexQuadratic:
    """f(x) = ½ (x - c)ᵀ A (x - c) on the simplex (ill-conditioned A)."""

    constraint = "simplex"

    def __init__(self, d=30, seed=0, cond=1e2):
        rng = np.random.default_rng(seed)
        U, _ = np.linalg.qr(rng.normal(size=(d, d)))
        self.A = U @ np.diag(np.logspace(0, np.log10(cond), d)) @ U.T
        self.c = rng.normal(size=d) / np.sqrt(d)
        self.dim, self.n_terms = d, 1
        self.project = project_simplex

    def value(self, x):
        r = x - self.c
        return 0.5 * float(r @ self.A @ r)

    def grad(self, x):
        return self.A @ (x - self.c)

    def value_and_grad(self, x):
        return self.value(x), self.grad(x)

    def x0(self):
        return np.full(self.dim, 1.0 / self.dim)


class Box:
    """Rosenbrock-like smooth problem on a box, with the projection given by clipping."""

    constraint = "box"

    def __init__(self):
        self.dim, self.n_terms = 2, 1

    def value(self, x):
        return float((1 - x[0]) ** 2 + 10 * (x[1] - x[0] ** 2) ** 2)

    def grad(self, x):
        return np.array([-2 * (1 - x[0]) - 40 * x[0] * (x[1] - x[0] ** 2), 20 * (x[1] - x[0] ** 2)])

    def value_and_grad(self, x):
        return self.value(x), self.grad(x)

    def project(self, x):
        return np.clip(x, [-2.0, -2.0], [0.5, 2.0])


def test_simplex_quadratic_matches_slsqp():
    p = SimplexQuadratic()
    res = solvers.minimize(p, "projected_gradient", tol=1e-9, max_iter=5000)
    assert res.converged, res.message
    ref = scipy_minimize(
        p.value,
        p.x0(),
        jac=p.grad,
        method="SLSQP",
        bounds=[(0, 1)] * p.dim,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones(p.dim)}],
        options={"ftol": 1e-16, "maxiter": 1000},
    )
    assert res.fun <= ref.fun + 1e-10
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)
    assert len(res.trace) == res.n_iter + 1 and res.n_passes >= res.n_iter


def test_box_problem_reaches_the_kkt_point():
    res = solvers.minimize(Box(), "projected_gradient", x0=np.array([-1.5, 1.5]), tol=1e-10, max_iter=5000)
    assert res.converged
    # the constrained optimum lies on x0 = 0.5 with x1 = 0.25 (interior in x1)
    np.testing.assert_allclose(res.x, [0.5, 0.25], atol=1e-7)


def test_registered_for_products_and_rejects_bad_options():
    assert "projected_gradient" in solvers.available(SimplexQuadratic())
    with pytest.raises(ValueError):
        solvers.minimize(SimplexQuadratic(), "projected_gradient", tol=-1.0)
