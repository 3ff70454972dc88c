"""The Rényi aggregate by the Anderson-accelerated fixed point (issue [core-at-scale] §1): the same
answer as the plain iteration of Eq. 2.8 and as Newton, to 1e-10, in fewer passes than the plain
iteration; ``method="auto"`` takes it only where it was measured faster."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators import renyi_anderson as ra
from aggregators import renyi_kernels as rk
from aggregators.renyi import renyi_aggregate
from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.validation import PredictionError


def beliefs(n, a, k, seed, family="gauss"):
    rng = np.random.default_rng(seed)
    if family == "gauss":  # a shared signal through agents of varied sharpness
        sharp = np.exp(rng.uniform(np.log(0.3), np.log(5.0), size=(1, a, 1)))
        lp = sharp * (rng.normal(size=(n, 1, k)) + 0.7 * rng.normal(size=(n, a, k)))
    elif family == "near_dup":  # a few agents copied with tiny perturbations
        base = rng.normal(size=(n, max(1, a // 10), k)) * 2.0
        lp = base[:, rng.integers(0, base.shape[1], a), :] + 0.01 * rng.normal(size=(n, a, k))
    else:  # sharp, nearly one-hot agents
        lp = rng.normal(size=(n, a, k)) * 8.0
    return lp - logsumexp(lp, axis=2, keepdims=True)


CASES = [
    (6, 100, 64, "gauss", "shared"),
    (4, 120, 20, "near_dup", "shared"),
    (3, 150, 33, "sharp", "per_agent"),
    (5, 1000, 16, "gauss", "per_agent"),
]


@pytest.mark.parametrize("n, a, k, family, kind", CASES)
def test_anderson_equals_plain_and_newton_to_1e_10(n, a, k, family, kind):
    rng = np.random.default_rng(a + k)
    w = rng.dirichlet(np.ones(a))
    gam = np.full(a, 0.4) if kind == "shared" else rng.uniform(0.1, 0.9, a)
    lp = beliefs(n, a, k, a, family)
    ref_plain = solve_fixed_point(lp, w, gam, method="plain", tol=1e-14)
    ref_newton = solve_fixed_point(lp, w, gam, method="newton", tol=1e-13)
    out = solve_fixed_point(lp, w, gam, method="anderson", tol=1e-10)
    assert out.method == "anderson" and out.all_converged and ref_plain.all_converged
    assert np.abs(out.log_q - ref_plain.log_q).max() <= 1e-10
    assert np.abs(out.log_q - ref_newton.log_q).max() <= 1e-10
    # the answer is a fixed point of Eq. 2.8: one plain sweep from it moves it by less than the tolerance
    again = solve_fixed_point(lp, w, gam, method="plain", init=out.log_q, max_iter=1, tol=1e-300)
    assert np.abs(again.log_q - out.log_q).max() <= 1e-10
    # the accelerated iteration passes over the data far fewer times than the plain one
    assert out.sweeps.max() * 2 <= ref_plain.sweeps.min()


def test_small_gamma_stops_at_the_answers_error_not_the_residual():
    """At γ = 0.05 the plain step's error is up to 19x its residual: the loop must go on until the
    answer itself is within the tolerance (a stop at residual 1e-10 leaves errors near 1e-9)."""
    a, k = 100, 64
    rng = np.random.default_rng(5)
    w = rng.dirichlet(np.ones(a))
    gam = np.full(a, 0.05)
    lp = beliefs(4, a, k, 5)
    ref = solve_fixed_point(lp, w, gam, method="newton", tol=1e-14).log_q
    out = solve_fixed_point(lp, w, gam, method="anderson", tol=1e-10)
    assert out.all_converged and out.residual.max() <= 1e-10 * 0.05 / 0.95
    assert np.abs(out.log_q - ref).max() <= 1e-10


def test_zero_weights_warm_start_and_the_parallel_driver():
    """Agents of weight zero are skipped in place (their rows are not read), a warm start from the
    answer converges at once, and the threaded driver (from PARALLEL_MIN_WORK numbers) agrees with
    the serial one item by item."""
    a, k = 200, 64
    n = rk.PARALLEL_MIN_WORK // (a * k) + 2
    rng = np.random.default_rng(7)
    w = rng.dirichlet(np.ones(a))
    w[rng.choice(a, 60, replace=False)] = 0.0
    w /= w.sum()
    gam = np.full(a, 0.5)
    lp = beliefs(n, a, k, 7)
    par = solve_fixed_point(lp, w, gam, method="anderson")
    ser = np.vstack([solve_fixed_point(lp[j : j + 1], w, gam, method="anderson").log_q for j in range(0, n, 9)])
    np.testing.assert_allclose(par.log_q[::9], ser, atol=1e-13, rtol=0)
    act = w > 0
    ref = solve_fixed_point(np.ascontiguousarray(lp[:, act]), w[act], gam[act], method="newton", tol=1e-13)
    assert np.abs(par.log_q - ref.log_q).max() <= 1e-10
    warm = solve_fixed_point(lp, w, gam, method="anderson", init=par.log_q)
    assert warm.all_converged and warm.sweeps.max() <= 3


def test_auto_takes_anderson_only_where_it_was_measured_faster():
    rng = np.random.default_rng(3)

    def method(n, a, k, gamma=0.5, **kw):
        lp = beliefs(n, a, k, 3)
        return solve_fixed_point(lp, rng.dirichlet(np.ones(a)), np.full(a, gamma), **kw).method

    assert method(2, 100, 64) == "anderson" and ra.prefer(100, 64)
    assert method(2, 1000, 16) == "anderson" and method(2, 1000, 16, gamma=0.1) == "anderson"
    assert method(2, 100, 64, gamma=0.1) == "newton"  # measured 0.76-1.15x Newton there
    lp = beliefs(2, 1000, 64, 3)
    per_agent = solve_fixed_point(lp, rng.dirichlet(np.ones(1000)), rng.uniform(0.1, 0.5, 1000))
    assert per_agent.method == "newton"  # one γ per agent: K exponentials per γ and evaluation
    assert method(2, 99, 64) == "newton" and method(2, 100, 32) == "newton" and method(2, 30, 1024) == "newton"
    assert method(2, 100, 64, gamma=1e-4) == "newton"  # the γ → 0-stable form is Newton's
    assert method(2, 100, 2) == "newton"  # two classes: the scalar Newton
    assert method(2, 100, 64, hessian="cg") == "newton"  # a Hessian solve named by the caller is Newton's
    with pytest.raises(PredictionError, match="anderson"):
        method(2, 100, 64, gamma=1e-4, method="anderson")
    # the public aggregate goes through "auto" and agrees with Newton
    lp = beliefs(3, 150, 80, 4)
    w = rng.dirichlet(np.ones(150))
    out, info = renyi_aggregate(lp, w, 0.3, return_info=True)
    assert info.method == "anderson"
    np.testing.assert_allclose(out, renyi_aggregate(lp, w, 0.3, method="newton", tol=1e-13), atol=1e-10, rtol=0)
