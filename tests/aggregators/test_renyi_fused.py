"""The fixed point and the weights' adjoint in one pass per item (:mod:`aggregators.renyi_fused`)
against the two passes (the fixed point, then :func:`aggregators.renyi_kernels.adjoint_items`), and
against finite differences of the objective."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import RenyiProblem, renyi_loglik_grad


def data(n, a, k, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    lp -= logsumexp(lp, axis=2, keepdims=True)
    return lp, rng.integers(0, k, n)


CASES = [
    # (n, agents, classes, zero weights, gamma): per-item path (A > 16 or A K > 256), serial and parallel
    (40, 30, 12, 0, "shared"),
    (40, 30, 12, 11, "shared"),
    (30, 20, 64, 7, "per_agent"),
    (25, 5, 100, 2, "shared"),
    (700, 120, 64, 50, "shared"),  # n A K > 4e6: the parallel driver
    (60, 40, 3, 10, "per_agent"),
]


@pytest.mark.parametrize("n,a,k,zeros,gk", CASES)
def test_fused_adjoint_equals_the_two_passes(n, a, k, zeros, gk):
    lp, y = data(n, a, k, seed=n + a + k)
    rng = np.random.default_rng(k)
    w = rng.dirichlet(np.ones(a))
    w[rng.choice(a, zeros, replace=False)] = 0.0
    w /= w.sum()
    gamma = np.full(a, 0.4) if gk == "shared" else rng.uniform(0.05, 0.9, a)
    fp = solve_fixed_point(lp, w, gamma, tol=1e-12)
    ll0, g0, lq0, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w",), solved=fp.log_q, tol=1e-12)
    W = np.empty((n, a))
    check = solve_fixed_point(lp, w, gamma, tol=1e-12, adjoint=(y.astype(np.int64), W))
    assert check.adjoint_done  # the fused path ran
    ll1, g1, lq1, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w",), tol=1e-12)
    np.testing.assert_allclose(lq1, lq0, rtol=0, atol=1e-12)
    assert abs(ll1 - ll0) <= 1e-12 * max(1.0, abs(ll0))
    np.testing.assert_allclose(g1["w"], g0["w"], rtol=1e-10, atol=1e-12)


def test_fused_gradient_matches_finite_differences_with_zero_weights_and_sample_weights():
    """The weight fit's objective (mean negative log-likelihood, sample weights, agents at zero) and
    its fused gradient against central differences along the simplex."""
    lp, y = data(60, 24, 16, seed=3)
    rng = np.random.default_rng(3)
    sw = rng.uniform(0.2, 3.0, 60)
    p = RenyiProblem(lp, y, 0.3, tol=1e-13, sample_weight=sw)
    x = rng.dirichlet(np.ones(24))
    x[[2, 9, 15]] = 0.0
    x /= x.sum()
    f, g = p.value_and_grad(x)
    h = 1e-5
    for i, j in [(0, 2), (5, 9), (3, 4), (20, 15)]:  # directions e_i - e_j, into the zero weights too
        d = np.zeros(24)
        d[i], d[j] = -1.0, 1.0  # move weight from i to j (x_i > 0): stays on the simplex for small steps
        assert x[i] > 2 * h
        fd = (-3 * f + 4 * p.value(x + h * d) - p.value(x + 2 * h * d)) / (2 * h)  # second-order one-sided
        assert abs(fd - g @ d) < 1e-6 * max(1.0, abs(g @ d)), (i, j, fd, g @ d)


def test_fused_path_is_not_taken_where_it_does_not_apply():
    """Stable γ, the item block kernel and annealing-free forced solves keep the two passes."""
    lp, y = data(30, 6, 5, seed=1)  # A K = 30: the item block kernel
    w = np.full(6, 1 / 6)
    W = np.empty((30, 6))
    assert not solve_fixed_point(lp, w, np.full(6, 0.4), adjoint=(y.astype(np.int64), W)).adjoint_done
    lp, y = data(30, 30, 12, seed=2)
    W = np.empty((30, 30))
    w = np.full(30, 1 / 30)
    assert not solve_fixed_point(lp, w, np.full(30, 1e-4), adjoint=(y.astype(np.int64), W)).adjoint_done  # stable
    assert not solve_fixed_point(lp, w, np.full(30, 0.4), method="plain", adjoint=(y.astype(np.int64), W)).adjoint_done


@pytest.mark.parametrize("shift", [2500.0, -1500.0, 0.0])
def test_agents_of_weight_zero_far_from_normalised_take_the_shifted_form(shift):
    """An agent of weight zero enters the gradient through its tilted distribution, which does not
    change when its row of log-probabilities is shifted. The fused adjoint reads such rows unshifted
    (``UNSHIFTED_TINY``); rows shifted far up (overflow) or far down (underflow) take the max-shifted
    form, and every row gives the gradient of the normalised row."""
    lp, y = data(50, 30, 20, seed=7)
    rng = np.random.default_rng(7)
    w = rng.dirichlet(np.ones(30))
    zero = [3, 11, 29]
    w[zero] = 0.0
    w /= w.sum()
    gamma = np.full(30, 0.4)
    _, g0, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w",), tol=1e-12)
    moved = lp.copy()
    moved[:, zero[:2]] += shift
    W = np.empty((50, 30))
    assert solve_fixed_point(moved, w, gamma, tol=1e-12, adjoint=(y.astype(np.int64), W)).adjoint_done
    _, g1, _, _ = renyi_loglik_grad(moved, y, w, gamma, want=("w",), tol=1e-12)
    np.testing.assert_allclose(g1["w"], g0["w"], rtol=1e-10, atol=1e-12)
    assert np.all(np.isfinite(g1["w"]))


@pytest.mark.parametrize("shift", [2500.0, -1500.0])
@pytest.mark.parametrize("gk", ["shared", "per_agent"])
def test_the_two_pass_adjoint_with_gamma_gradients_takes_the_shifted_form_where_it_must(shift, gk):
    """The two-pass adjoint (weights and γ), which the fused pass does not replace: rows far above 0 or
    far below give the gradients of the normalised rows."""
    lp, y = data(40, 24, 16, seed=9)
    rng = np.random.default_rng(9)
    w = rng.dirichlet(np.ones(24))
    w[[5, 17]] = 0.0
    w /= w.sum()
    gamma = np.full(24, 0.4) if gk == "shared" else rng.uniform(0.2, 0.8, 24)
    _, g0, lq0, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w", "gamma"), tol=1e-12)
    moved = lp.copy()
    moved[:, [2, 5]] += shift  # one agent of positive weight, one of weight zero
    _, g1, lq1, _ = renyi_loglik_grad(moved, y, w, gamma, want=("w", "gamma"), tol=1e-12)
    np.testing.assert_allclose(lq1, lq0, rtol=0, atol=1e-10)
    for k in ("w", "gamma"):
        assert np.all(np.isfinite(g0[k]))
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("fused", [True, False])
def test_adjoint_rtol_reaches_cg_and_the_fits_looser_one_costs_no_accuracy(fused):
    """``adjoint_rtol`` is CG's residual for the adjoint, in the fused pass (weights alone, no solved
    aggregate) and in the two-pass route (with γ's gradient): a crude 1e-3 moves the gradient by more
    than 1e-10 (so it reaches the kernel), while the weight fits' :data:`FIT_ADJOINT_RTOL` (1e-10)
    keeps it within 1e-8 relative of the 1e-12 default; :class:`RenyiProblem` uses the fits' value."""
    from aggregators.renyi_gradient import FIT_ADJOINT_RTOL
    from aggregators.renyi_hessian import CG, choose

    n, a, k = 30, 150, 64
    assert choose(a, k, 0.5) == CG  # the shape of the competition's fits: CG solves the adjoint
    lp, y = data(n, a, k, seed=4, scale=1.0)
    w = np.random.default_rng(4).dirichlet(np.ones(a))
    gamma = np.full(a, 0.5)
    want = ("w",) if fused else ("w", "gamma")
    solved = None if fused else solve_fixed_point(lp, w, gamma, tol=1e-13).log_q

    def grad(rt):
        g = renyi_loglik_grad(lp, y, w, gamma, want=want, solved=solved, tol=1e-13, adjoint_rtol=rt)[1]
        return np.concatenate([g[key] for key in want])

    ref, fit, crude = grad(1e-12), grad(FIT_ADJOINT_RTOL), grad(1e-3)
    scale = np.abs(ref).max()
    assert np.abs(crude - ref).max() > 1e-10 * scale
    assert np.abs(fit - ref).max() <= 1e-8 * scale
    prob = RenyiProblem(lp, y, gamma=gamma, tol=1e-13)
    assert prob.adjoint_rtol == FIT_ADJOINT_RTOL == 1e-10
    if fused:  # the problem minimises the negative mean log-likelihood
        np.testing.assert_allclose(prob.grad(w), -fit, rtol=1e-9, atol=1e-12 * scale)
