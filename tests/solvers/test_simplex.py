"""Simplex tools against brute force, cvxpy and finite differences."""

import itertools

import numpy as np
import pytest

from solvers.simplex import fw_gap, mirror_step, project_simplex, softmax, softmax_jacobian_vp, solve_simplex_qp


def brute_force_projection(x):
    """Try every support: z_S = x_S - tau, tau = (sum x_S - 1)/|S|; keep the nearest feasible one."""
    d = x.size
    best, best_dist = None, np.inf
    for r in range(1, d + 1):
        for S in itertools.combinations(range(d), r):
            S = list(S)
            tau = (x[S].sum() - 1.0) / len(S)
            z = np.zeros(d)
            z[S] = x[S] - tau
            if np.all(z >= -1e-15):
                dist = np.linalg.norm(z - x)
                if dist < best_dist:
                    best, best_dist = z, dist
    return best


@pytest.mark.parametrize("seed", range(8))
def test_projection_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=2.0, size=6)
    np.testing.assert_allclose(project_simplex(x), brute_force_projection(x), atol=1e-12)


def test_projection_matches_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 40))
    P = project_simplex(X)  # rows at once
    for x, p in zip(X, P):
        z = cp.Variable(40)
        prob = cp.Problem(cp.Minimize(cp.sum_squares(z - x)), [z >= 0, cp.sum(z) == 1])
        prob.solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(p, z.value, atol=1e-5)  # Clarabel is accurate to about 1e-6 here
        assert np.sum((p - x) ** 2) <= prob.value + 1e-9  # and never better than the exact projection
        assert p.min() >= 0 and abs(p.sum() - 1) < 1e-12


def test_projection_is_idempotent_and_fixes_simplex_points():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(7))
    np.testing.assert_allclose(project_simplex(w), w, atol=1e-14)
    x = rng.normal(size=7)
    p = project_simplex(x)
    np.testing.assert_allclose(project_simplex(p), p, atol=1e-14)
    with pytest.raises(ValueError):
        project_simplex(np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        project_simplex(np.ones((2, 2, 2)))


def test_softmax_chain_rule_matches_finite_differences():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=5)
    a = rng.normal(size=5)
    f = lambda t: float(a @ softmax(t) + 0.5 * softmax(t) @ softmax(t))  # noqa: E731
    w = softmax(theta)
    g_w = a + w
    eps = 1e-6
    fd = np.array([(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps) for e in np.eye(5)])
    np.testing.assert_allclose(softmax_jacobian_vp(w, g_w), fd, atol=1e-8)
    assert abs(softmax(theta).sum() - 1) < 1e-15


def test_mirror_step_is_exponentiated_gradient():
    w = np.array([0.5, 0.3, 0.2, 0.0])
    g = np.array([1.0, -2.0, 0.5, -9.0])
    eta = 0.3
    expect = w * np.exp(-eta * g)
    expect /= expect.sum()
    out = mirror_step(w, g, eta)
    np.testing.assert_allclose(out, expect, rtol=1e-13)
    assert out[3] == 0.0  # a zero weight stays zero


@pytest.mark.parametrize("seed", range(4))
def test_simplex_qp_matches_cvxpy_and_gap_bounds_suboptimality(seed):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(seed)
    d = 12
    B = rng.normal(size=(d, 4 if seed % 2 else d))  # singular H for odd seeds
    H = B @ B.T
    c = rng.normal(size=d)
    z, _ = solve_simplex_qp(H, c)
    v = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(v, cp.psd_wrap(H)) + c @ v), [v >= 0, cp.sum(v) == 1])
    prob.solve(solver=cp.CLARABEL)
    q = lambda u: 0.5 * u @ H @ u + c @ u  # noqa: E731
    assert q(z) <= prob.value + 1e-7
    assert z.min() >= 0 and abs(z.sum() - 1) < 1e-12
    # the Frank-Wolfe gap at any feasible point bounds its suboptimality
    w = rng.dirichlet(np.ones(d))
    assert fw_gap(w, H @ w + c) >= q(w) - q(z) - 1e-12
    assert fw_gap(z, H @ z + c) < 1e-9


def test_compiled_projection_is_the_same_algorithm_bit_for_bit():
    """The numba kernel of the compiled epoch loops and the NumPy projection agree exactly."""
    from solvers.kernels_incremental.loglinear_saga import project_simplex_inplace

    rng = np.random.default_rng(11)
    for d in (1, 2, 5, 40, 300):
        for scale in (1e-3, 1.0, 50.0):
            v = rng.normal(size=d) * scale
            out = v.copy()
            project_simplex_inplace(out, np.empty(d))
            np.testing.assert_array_equal(out, project_simplex(v))
