"""L-BFGS-B, SLSQP and TNC on a box (``solvers.methods.box_quasi_newton``) against CVXPY's optimum of a
box-constrained quadratic, and their honest flags (unconverged, stopped by the callback, bad bounds)."""

import cvxpy as cp
import numpy as np
import pytest

from solvers.errors import InputError
from solvers.registry import available, minimize


class BoxQuadratic:
    """``½ xᵀHx - bᵀx`` on ``lower <= x <= upper``, badly scaled (eigenvalues 1e-2 to 1e1)."""

    constraint = "box"

    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        self.H = (Q * np.logspace(-2, 1, n)) @ Q.T
        self.b = rng.standard_normal(n) * 3
        self.dim = n
        lo = np.where(rng.random(n) < 0.3, -np.inf, -1.0)
        self.bounds = (lo, np.full(n, 0.5))

    def x0(self):
        return np.zeros(self.dim)

    def value_and_grad(self, x):
        return 0.5 * x @ self.H @ x - self.b @ x, self.H @ x - self.b

    def value(self, x):
        return self.value_and_grad(x)[0]


def reference(p: BoxQuadratic) -> np.ndarray:
    x = cp.Variable(p.dim)
    lo = p.bounds[0]
    fin = np.isfinite(lo)
    cons = [x <= p.bounds[1], x[fin] >= lo[fin]]
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(p.H)) - p.b @ x), cons).solve(solver="CLARABEL")
    return x.value


@pytest.mark.parametrize("method", ["lbfgsb", "slsqp", "tnc"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_box_optimum_is_cvxpys(method, seed):
    p = BoxQuadratic(30, seed)
    assert method in available(p)
    r = minimize(p, method, tol=1e-9)
    ref = reference(p)
    assert r.converged and r.extra["gap"] <= 1e-8 * max(1.0, abs(r.fun))
    assert r.fun <= p.value(ref) + 1e-9
    np.testing.assert_allclose(r.x, ref, atol=2e-5)
    lo, hi = p.bounds
    assert np.all(r.x >= lo) and np.all(r.x <= hi)
    active = np.isclose(ref, hi, atol=1e-9)
    assert active.sum() >= 3 and np.all(np.isclose(r.x[active], hi[active], atol=1e-9))


@pytest.mark.parametrize("method", ["lbfgsb", "slsqp", "tnc"])
def test_stopped_early_says_unconverged(method):
    p = BoxQuadratic(30, 0)
    r = minimize(p, method, tol=1e-12, max_iter=3)
    assert not r.converged and r.extra["gap"] > 1e-12 * max(1.0, abs(r.fun))


@pytest.mark.parametrize("method", ["lbfgsb", "slsqp", "tnc"])
def test_the_callback_stops_the_run(method):
    p = BoxQuadratic(30, 1)
    seen = []
    r = minimize(p, method, tol=1e-12, callback=lambda x: seen.append(x.copy()) or len(seen) >= 4)
    assert len(seen) == 4 and r.message == "stopped by callback" and not r.converged
    np.testing.assert_array_equal(r.x, np.clip(seen[-1], *p.bounds))


def test_inconsistent_bounds_are_refused():
    p = BoxQuadratic(5, 0)
    p.bounds = (np.ones(5), np.zeros(5))
    with pytest.raises(InputError, match="lower <= upper"):
        minimize(p, "lbfgsb")
    p.bounds = (np.zeros(4), np.ones(4))
    with pytest.raises(InputError, match="shape"):
        minimize(p, "slsqp")
