"""The convex scale-free prior (seed 001 Ch 7): Ω (Prop 7.2), its row prox (Alg 7.2), its prox (Alg 7.1), the ADMM.

Independent references: a stack-based PAVA prox of the sorted-l1 (SLOPE) norm as Bogdan et al. 2015
write it (Alg 4, "FastProxSL1"), scikit-learn's isotonic regression, cvxpy (``sum_largest``), the
Lovász extension computed from the set function over edges, a subgradient solver, and the two prox
solvers (dual decomposition, Fujishige-Wolfe minimum-norm point) against each other.
"""

import itertools

import cvxpy as cp
import numpy as np
import pytest
from sklearn.isotonic import isotonic_regression

from graphical.degree_prior import (
    degree_function,
    lovasz_omega,
    prox_dual_decomposition,
    prox_objective,
    prox_subgradient,
    scale_free_precision,
)
from graphical.glasso import graphical_lasso
from graphical.likelihood import gaussian_nll
from graphical.mnp import prox_min_norm_point
from graphical.owl import owl_prox_rows

CLARABEL = {"solver": cp.CLARABEL, "tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11}


def slope_prox_bogdan(y: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Bogdan et al. (2015) Alg 4: prox of ``sum_k lam_k |y|_(k)`` (lam non-increasing), written apart
    from ``graphical.owl``: blocks as (i, j, s, w) on an explicit list, then un-sort."""
    sign = np.sign(y)
    order = np.argsort(-np.abs(y), kind="stable")
    v = np.abs(y)[order]
    blocks = []
    for k in range(v.size):
        blocks.append([k, k, v[k] - lam[k], max(v[k] - lam[k], 0.0)])
        while len(blocks) > 1 and blocks[-2][3] <= blocks[-1][3]:
            i, _, s1, _ = blocks[-2]
            _, j, s2, _ = blocks[-1]
            s = s1 + s2
            blocks[-2:] = [[i, j, s, max(s / (j - i + 1), 0.0)]]
    x = np.empty_like(v)
    for i, j, _, w in blocks:
        x[i : j + 1] = w
    out = np.empty_like(x)
    out[order] = x
    return sign * out


def row_prox_by_isotonic(y: np.ndarray, lam: np.ndarray) -> np.ndarray:
    order = np.argsort(-np.abs(y))
    u = isotonic_regression(np.abs(y)[order] - lam, increasing=False)
    out = np.empty_like(y)
    out[order] = np.maximum(u, 0.0)
    return np.sign(y) * out


def cvxpy_owl(X, c):
    """``sum_k c_k |x|_(k)`` = ``sum_k (c_k - c_{k+1}) sum_largest(|x|, k + 1)`` (c non-increasing)."""
    w = np.concatenate([c, [0.0]])
    return sum((w[k] - w[k + 1]) * cp.sum_largest(cp.abs(X), k + 1) for k in range(len(c)))


def cvxpy_omega(X, c):
    p = X.shape[0]
    return sum(cvxpy_owl(cp.hstack([X[i, j] for j in range(p) if j != i]), c) for i in range(p))


def sym(rng, p, scale=1.0):
    A = rng.normal(scale=scale, size=(p, p))
    return 0.5 * (A + A.T)


PRIORS = [("sqrt", 1.0, 0.1), ("log", 1.0, 0.0), ("smoothed_log", 0.5, 0.2)]


@pytest.mark.parametrize("kind,eps,beta", PRIORS)
def test_priors_are_tractable_and_start_at_zero(kind, eps, beta):
    h = degree_function(kind, 50, eps=eps, beta=beta)
    assert h[0] == 0.0
    d = np.diff(h)
    assert (d >= 0).all() and (np.diff(d) <= 1e-15).all()


@pytest.mark.parametrize("seed", range(6))
def test_row_prox_equals_slope_prox_references(seed):
    rng = np.random.default_rng(seed)
    p = 12
    W = sym(rng, p)
    W[0, 3] = W[0, 5] = W[3, 0] = W[5, 0] = 0.7  # ties in |w|
    W[1, 2] = -W[1, 4]
    c = np.diff(degree_function("sqrt", p, beta=0.05))
    t = 0.6
    X = owl_prox_rows(W, c, t)
    for i in range(p):
        y = np.delete(W[i], i)
        x = np.delete(X[i], i)
        np.testing.assert_allclose(x, slope_prox_bogdan(y, t * c), atol=1e-12)
        np.testing.assert_allclose(x, row_prox_by_isotonic(y, t * c), atol=1e-12)
        assert X[i, i] == W[i, i]


@pytest.mark.parametrize("seed", range(3))
def test_row_prox_equals_cvxpy(seed):
    rng = np.random.default_rng(10 + seed)
    n = 9
    y = rng.normal(size=n)
    c = np.diff(degree_function("log", n + 1, eps=0.5))
    t = 0.4
    x = cp.Variable(n)
    cp.Problem(cp.Minimize(t * cvxpy_owl(x, c) + 0.5 * cp.sum_squares(x - y))).solve(**CLARABEL)
    W = np.zeros((n + 1, n + 1))
    W[0, 1:] = y
    np.testing.assert_allclose(owl_prox_rows(W, c, t)[0, 1:], x.value, atol=1e-7)


def test_the_printed_rank_test_would_be_wrong():
    """Alg 7.2's printed ``while r > 1`` never pools ranks 0 and 1 (notes pitfall 7): a row whose
    second-largest entry is shrunk less than the largest needs exactly that pool."""
    c = np.array([1.0, 0.0])
    W = np.array([[0.0, 1.0, 0.9], [1.0, 0.0, 0.0], [0.9, 0.0, 0.0]])
    x = owl_prox_rows(W, c, 0.5)[0, 1:]
    # unpooled would give (0.5, 0.9), violating the order; the pooled value is their mean 0.7
    np.testing.assert_allclose(x, [0.7, 0.7])


@pytest.mark.parametrize("seed", range(3))
def test_omega_is_the_lovasz_extension_of_the_degree_function(seed):
    rng = np.random.default_rng(seed)
    p = 6
    X = sym(rng, p)
    X[rng.random((p, p)) < 0.3] = 0.0
    X = np.triu(X, 1) + np.triu(X, 1).T
    h = degree_function("sqrt", p, beta=0.1)
    edges = list(itertools.combinations(range(p), 2))
    order = sorted(edges, key=lambda e: -abs(X[e]))
    deg = np.zeros(p, dtype=int)
    F_prev, total = 0.0, 0.0
    for e in order:  # greedy formula of the Lovász extension on |x| over edges
        deg[list(e)] += 1
        F = float(np.sum(h[deg]))
        total += abs(X[e]) * (F - F_prev)
        F_prev = F
    assert lovasz_omega(X, np.diff(h)) == pytest.approx(total, rel=1e-12)


@pytest.mark.parametrize("kind,eps,beta", PRIORS)
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("solver", ["dual decomposition", "minimum-norm point"])
def test_prox_equals_cvxpy(solver, kind, eps, beta, seed):
    rng = np.random.default_rng(20 + seed)
    p = 6
    Z = sym(rng, p)
    c = np.diff(degree_function(kind, p, eps=eps, beta=beta))
    s = 0.5
    if solver == "dual decomposition":
        X, _, k = prox_dual_decomposition(Z, c, s, tol=1e-10)
    else:
        X, k, gap = prox_min_norm_point(Z, c, s, tol=1e-13)
        assert gap <= 1e-12  # Wolfe's certificate
    assert np.allclose(X, X.T) and k < 10000
    assert np.array_equal(np.diag(X), np.diag(Z))
    Xv = cp.Variable((p, p), symmetric=True)
    cp.Problem(cp.Minimize(s * cvxpy_omega(Xv, c) + 0.5 * cp.sum_squares(Xv - Z))).solve(**CLARABEL)
    np.testing.assert_allclose(X, Xv.value, atol=1e-7)
    assert prox_objective(X, Z, c, s) <= prox_objective(Xv.value, Z, c, s) + 1e-10


def test_subgradient_reaches_the_dual_decomposition_point():
    rng = np.random.default_rng(30)
    p = 10
    Z = sym(rng, p, scale=0.5)
    c = np.diff(degree_function("sqrt", p, beta=0.1))
    s = 0.3
    X, _, _ = prox_dual_decomposition(Z, c, s, tol=1e-10)
    hist: list[float] = []
    Xs = prox_subgradient(Z, c, s, n_iter=5000, history=hist)
    f_star = prox_objective(X, Z, c, s)
    assert np.abs(Xs - X).max() < 1e-3
    assert 0 <= hist[-1] - f_star < 1e-5
    # ... and far more slowly: after 50 steps it is still well off, where DD is exact
    assert hist[49] - f_star > 100 * (hist[-1] - f_star)


def test_linear_h_reduces_the_prior_to_the_graphical_lasso():
    """``h(i) = i`` gives ``c = 1``: Ω is the off-diagonal l1 norm (each edge in two rows), so the
    ADMM with the prior at strength α solves the graphical lasso at λ = α."""
    rng = np.random.default_rng(40)
    p = 12
    A = rng.normal(size=(3 * p, p))
    C = np.corrcoef(A, rowvar=False)
    res = scale_free_precision(C, 0.2, prior=np.arange(p, dtype=float), tol=1e-9)
    ref = graphical_lasso(C, 0.2, tol=1e-12)
    assert res.converged
    assert np.abs(res.x - ref.x).max() < 1e-6


def test_scale_free_admm_equals_cvxpy():
    rng = np.random.default_rng(50)
    p = 6
    A = rng.normal(size=(20, p))
    C = np.corrcoef(A, rowvar=False)
    alpha = 0.15
    h = degree_function("sqrt", p, beta=0.1)
    res = scale_free_precision(C, alpha, prior="sqrt", beta=0.1, tol=1e-9, max_iter=5000)
    assert res.converged
    T = cp.Variable((p, p), symmetric=True)
    obj = cp.trace(C @ T) - cp.log_det(T) + alpha * cvxpy_omega(T, np.diff(h))
    cp.Problem(cp.Minimize(obj)).solve(**CLARABEL)
    f = lambda X: gaussian_nll(C, X) + alpha * lovasz_omega(X, np.diff(h))
    assert f(res.x) <= f(T.value) + 1e-8
    np.testing.assert_allclose(res.x, T.value, atol=1e-5)


@pytest.mark.parametrize("p,s", [(12, 0.3), (20, 0.5), (25, 1.0), (16, 3.0)])
def test_min_norm_point_and_dual_decomposition_agree(p, s):
    """The two prox solvers of Fig 7.3 on weak to strong strengths (at 3.0 nearly every edge is zero)."""
    rng = np.random.default_rng(p)
    Z = sym(rng, p)
    c = np.diff(degree_function("sqrt", p, beta=0.1))
    X_dd, _, _ = prox_dual_decomposition(Z, c, s, tol=1e-12, max_iter=100000)
    hist: list[float] = []
    X_mnp, _, gap = prox_min_norm_point(Z, c, s, tol=1e-13, history=hist)
    f_dd = prox_objective(X_dd, Z, c, s)
    assert abs(prox_objective(X_mnp, Z, c, s) - f_dd) < 1e-9
    np.testing.assert_allclose(X_mnp, X_dd, atol=1e-6)
    off = ~np.eye(p, dtype=bool)
    assert 0 < np.count_nonzero(X_mnp[off] == 0) < off.sum() or s >= 3.0  # thresholding is exercised
    # Wolfe's gap certifies the last iterate; the recorded objectives end at the optimum
    assert gap < 1e-9 and hist[-1] - f_dd < 1e-9
