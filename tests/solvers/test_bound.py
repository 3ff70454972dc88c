"""The quadratic bound on log Z (solvers/bound.py), checked against independent computations.

References: ``scipy.special.logsumexp`` (log Z), closed-form softmax moments (mu and Cov), central
finite differences, the paper's uniform curvature bound, and brute-force random search.
"""

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from solvers.bound import (
    beta,
    bound_sums,
    bound_value,
    class_space_bounds,
    compute_bound,
    compute_bounds,
    log_partition,
    omega,
)


def _random_case(rng, n_max=7, d_max=4, zeros=True):
    n = int(rng.integers(1, n_max + 1))
    d = int(rng.integers(1, d_max + 1))
    F = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0)
    log_h = rng.normal(size=n)
    if zeros and n > 1 and rng.random() < 0.3:
        log_h[rng.integers(0, n)] = -np.inf  # h(y) = 0 somewhere
    theta = rng.normal(size=d) * rng.uniform(0.1, 2.0)
    return F, log_h, theta


def _moments(theta, F, log_h):
    p = softmax(log_h + F @ theta)
    mu = p @ F
    cov = (F * p[:, None]).T @ F - np.outer(mu, mu)
    return mu, cov


def test_beta_limits_and_values():
    x = np.array([0.0, 1e-6, -1e-6, 1.0, -3.0, 50.0, np.inf, -np.inf, np.nan])
    b = beta(x)
    assert b[0] == 0.25 and abs(b[1] - 0.25) < 1e-12 and b[1] == b[2]
    assert abs(b[3] - np.tanh(0.5) / 2.0) < 1e-15
    assert abs(b[4] - np.tanh(-1.5) / -6.0) < 1e-15
    assert b[5] == pytest.approx(1 / 100, rel=1e-12)
    assert np.all(b[6:] == 0.0)
    # 1/4 is the maximum (beta is even and decreasing in |x|)
    xs = np.linspace(-20, 20, 4001)
    assert beta(xs).max() <= 0.25 and np.all(np.diff(beta(xs[xs >= 0])) <= 0)


def test_bound_is_an_upper_bound_tight_with_right_gradient_and_curvature():
    rng = np.random.default_rng(0)
    worst_gap = np.inf
    for _ in range(400):
        F, log_h, theta_t = _random_case(rng)
        b = compute_bound(theta_t, F, log_h)
        # tight at theta~ and z = Z(theta~)
        assert b.log_z == pytest.approx(logsumexp(log_h + F @ theta_t), abs=1e-12, rel=1e-12)
        mu, cov = _moments(theta_t, F, log_h)
        np.testing.assert_allclose(b.mu, mu, atol=1e-10)
        # Sigma >= Cov
        assert np.linalg.eigvalsh(b.sigma - cov).min() >= -1e-10
        # upper bound everywhere
        D = rng.normal(size=(25, len(theta_t))) * rng.uniform(0.01, 5.0, size=(25, 1))
        bound = b.log_z + D @ b.mu + 0.5 * np.einsum("ij,jk,ik->i", D, b.sigma, D)
        exact = logsumexp(log_h[None, :] + (theta_t + D) @ F.T, axis=1)
        worst_gap = min(worst_gap, float(np.min(bound - exact)))
        assert bound_value(b, theta_t + D[0]) == pytest.approx(bound[0], abs=1e-10)
    assert worst_gap >= -1e-9


def test_gradient_of_bound_matches_finite_differences_of_log_z():
    rng = np.random.default_rng(1)
    F, log_h, theta = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    b = compute_bound(theta, F, log_h)
    eps = 1e-6
    fd = np.array(
        [
            (log_partition(theta + eps * e, F, log_h) - log_partition(theta - eps * e, F, log_h)) / (2 * eps)
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(b.mu, fd, atol=1e-8)


def test_order_changes_sigma_only_and_every_order_is_a_bound():
    rng = np.random.default_rng(2)
    F, log_h, theta_t = rng.normal(size=(5, 3)) * 2, rng.normal(size=5), rng.normal(size=3)
    ref = compute_bound(theta_t, F, log_h)
    sigmas = []
    for _ in range(10):
        order = rng.permutation(5)
        b = compute_bound(theta_t, F, log_h, order=order)
        assert b.log_z == pytest.approx(ref.log_z, abs=1e-12)
        np.testing.assert_allclose(b.mu, ref.mu, atol=1e-12)
        sigmas.append(b.sigma)
        for _ in range(200):
            theta = theta_t + rng.normal(size=3) * 3
            assert bound_value(b, theta) >= log_partition(theta, F, log_h) - 1e-9
    assert max(np.abs(s - sigmas[0]).max() for s in sigmas) > 1e-6  # Sigma really depends on the order


def test_slides_update_order_violates_the_bound():
    """Regression: the slides' Algorithm 1 (mu updated before Sigma) is not an upper bound."""
    rng = np.random.default_rng(3)
    violations, worst = 0, 0.0
    for _ in range(300):
        F, log_h, theta_t = _random_case(rng, zeros=False)
        slides = compute_bound(theta_t, F, log_h, slides_order=True)
        paper = compute_bound(theta_t, F, log_h)
        for _ in range(10):
            theta = theta_t + rng.normal(size=theta_t.shape) * 3
            lz = log_partition(theta, F, log_h)
            assert bound_value(paper, theta) >= lz - 1e-9
            gap = bound_value(slides, theta) - lz
            if gap < -1e-6:
                violations += 1
                worst = min(worst, gap)
    assert violations > 50 and worst < -1.0
    # a two-outcome case by hand: f = +-1, equal weights. Paper Sigma = beta(0) * (f2 - f1)^2 = 1;
    # slides' Sigma = beta(0) * (f2 - mu_new)^2 = 1/4 < Cov = 1: not even a local bound.
    F2 = np.array([[1.0], [-1.0]])
    assert compute_bound(np.zeros(1), F2).sigma[0, 0] == pytest.approx(1.0)
    assert compute_bound(np.zeros(1), F2, slides_order=True).sigma[0, 0] == pytest.approx(0.25)


def test_uniform_curvature_bound_omega():
    rng = np.random.default_rng(4)
    # tight case n = 2, f = +-r, equal alpha: lambda_max(Sigma) = r^2 = omega(r, 2)
    r = 1.7
    b = compute_bound(np.zeros(2), np.array([[r, 0.0], [-r, 0.0]]))
    assert np.linalg.eigvalsh(b.sigma).max() == pytest.approx(omega(r, 2), rel=1e-12)
    # the slides' range (i = 2..n) gives 2 r^2 tanh(log(2)/2)/log(2) < r^2 at n = 2: violated
    slides_omega = 2 * r * r * np.tanh(0.5 * np.log(2)) / np.log(2)
    assert slides_omega < np.linalg.eigvalsh(b.sigma).max()
    for _ in range(300):
        n, d = int(rng.integers(2, 9)), int(rng.integers(1, 4))
        F = rng.normal(size=(n, d))
        rr = np.linalg.norm(F, axis=1).max()
        bb = compute_bound(rng.normal(size=d), F, rng.normal(size=n))
        assert np.linalg.eigvalsh(bb.sigma).max() <= omega(rr, n) * (1 + 1e-12)


def test_log_domain_handles_huge_scores():
    F = np.array([[300.0, 0.0], [299.0, 1.0], [-400.0, 2.0]])
    theta = np.array([1.0, 0.5])
    b = compute_bound(theta, F)
    assert np.isfinite(b.log_z) and np.all(np.isfinite(b.sigma))
    assert b.log_z == pytest.approx(logsumexp(F @ theta), rel=1e-14)
    mu, cov = _moments(theta, F, np.zeros(3))
    np.testing.assert_allclose(b.mu, mu, atol=1e-9)


def test_batched_bounds_agree_with_single_item_kernel():
    rng = np.random.default_rng(5)
    N, n, d = 40, 5, 3
    F = rng.normal(size=(N, n, d))
    log_h = rng.normal(size=(N, n))
    log_h[3, 2] = -np.inf
    theta = rng.normal(size=d)
    scores = log_h + F @ theta
    logz, mu, S = compute_bounds(scores, F)
    w = rng.uniform(0.5, 2.0, N)
    lz2, mu2, Ssum = bound_sums(scores, F, w)
    for i in range(N):
        b = compute_bound(theta, F[i], log_h[i])
        assert logz[i] == pytest.approx(b.log_z, abs=1e-12)
        np.testing.assert_allclose(mu[i], b.mu, atol=1e-12)
        np.testing.assert_allclose(S[i], b.sigma, atol=1e-12)
    np.testing.assert_allclose(Ssum, np.einsum("i,ijk->jk", w, S), atol=1e-10)
    np.testing.assert_allclose(lz2, logz) and np.testing.assert_allclose(mu2, mu)


def test_diagonal_majorant_dominates_full_curvature():
    rng = np.random.default_rng(6)
    F = rng.normal(size=(30, 6, 4))
    scores = rng.normal(size=(30, 6))
    _, _, S = bound_sums(scores, F)
    _, _, D = bound_sums(scores, F, curvature="diag")
    assert np.linalg.eigvalsh(np.diag(D) - S).min() >= -1e-10


def test_class_space_bound_gives_kronecker_structure():
    """Multinomial logistic: mu_i = q_i ⊗ x_i and Sigma_i = C_i ⊗ x_i x_i^T (features never built)."""
    rng = np.random.default_rng(7)
    N, K, p = 12, 4, 3
    X = rng.normal(size=(N, p))
    W = rng.normal(size=(K, p))
    scores = X @ W.T
    logz, q, C = class_space_bounds(scores)
    for i in range(N):
        F = np.kron(np.eye(K), X[i])  # rows e_y ⊗ x_i
        b = compute_bound(W.ravel(), F)
        assert logz[i] == pytest.approx(b.log_z, abs=1e-12)
        np.testing.assert_allclose(np.kron(q[i], X[i]), b.mu, atol=1e-12)
        np.testing.assert_allclose(np.kron(C[i], np.outer(X[i], X[i])), b.sigma, atol=1e-12)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="features"):
        compute_bound(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="theta_tilde"):
        compute_bound(np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="log_h"):
        compute_bound(np.zeros(2), np.zeros((4, 2)), log_h=np.zeros(3))
    with pytest.raises(ValueError, match="zero everywhere"):
        compute_bound(np.zeros(2), np.zeros((2, 2)), log_h=np.full(2, -np.inf))
    with pytest.raises(ValueError, match="finite"):
        compute_bound(np.zeros(2), np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="permutation"):
        compute_bound(np.zeros(2), np.zeros((3, 2)), order=[0, 0, 1])
    with pytest.raises(ValueError, match="curvature"):
        bound_sums(np.zeros((2, 3)), np.zeros((2, 3, 2)), curvature="lowrank")


def test_nll_bound_sums_any_layout_and_order():
    """The chunked kernel equals the per-item bounds, in (n, K, d) and swapped (n, d, K) storage, in any order."""
    from solvers.bound import nll_bound_sums

    rng = np.random.default_rng(8)
    n, K, d = 37, 5, 4
    store = rng.normal(size=(n, d, K))  # the log pool's agent-major layout
    F = np.swapaxes(store, 1, 2)  # (n, K, d) view, not contiguous
    labels = rng.integers(0, K, n)
    log_h = rng.normal(size=(n, K))
    w = rng.uniform(0.5, 2, n)
    theta = rng.normal(size=d)
    for order in (None, "ascending"):
        val, g, S = nll_bound_sums(theta, F, labels, log_h, w, curvature="full", order=order, chunk=8)
        _, _, D = nll_bound_sums(theta, F, labels, log_h, w, curvature="diag", order=order, chunk=8)
        s = log_h + np.einsum("nkd,d->nk", F, theta)
        ref_val = np.mean(w * (logsumexp(s, axis=1) - s[np.arange(n), labels]))
        P = softmax(s, axis=1)
        ref_g = np.mean(w[:, None] * (np.einsum("nk,nkd->nd", P, F) - F[np.arange(n), labels]), axis=0)
        assert val == pytest.approx(ref_val, rel=1e-13)
        np.testing.assert_allclose(g, ref_g, atol=1e-13)
        S_ref = np.zeros((d, d))
        for i in range(n):
            o = np.argsort(s[i]) if order == "ascending" else None
            S_ref += w[i] * compute_bound(theta, np.ascontiguousarray(F[i]), log_h[i], order=o).sigma
        np.testing.assert_allclose(S, S_ref / n, atol=1e-12)
        assert np.linalg.eigvalsh(np.diag(D) - S).min() >= -1e-12
    # order="ascending" on the batched class-space path equals per-item permutations
    lz, mu, C = class_space_bounds(s, order="ascending")
    lz2, mu2, C2 = compute_bounds(s, np.eye(K), order=np.argsort(s, axis=1))
    np.testing.assert_allclose(C, C2) and np.testing.assert_allclose(mu, mu2)
