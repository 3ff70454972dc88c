"""Algorithm 2.1 (seed 000) against the gradient fit and the direct solve of Eq. 2.6."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize
from scipy.special import logsumexp

import solvers
from aggregators.renyi import renyi_aggregate, renyi_objective, renyi_variational
from aggregators.renyi_gradient import RenyiProblem


def data(n=200, a=5, k=6, seed=0, scale=1.5):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    lp -= logsumexp(lp, axis=2, keepdims=True)
    return lp, rng.integers(0, k, n)


def grad_fit(lp, y, gamma):
    p = RenyiProblem(lp, y, gamma)
    res = solvers.minimize(p, "projected_gradient", tol=1e-12, max_iter=1000)
    return res.x, -res.fun


def test_gamma_one_algorithm_equals_gradient_fit():
    """At γ = 1, lines 4-5 are EM for the linear pool: same weights as the exact-gradient fit."""
    lp, y = data(seed=1)
    v = renyi_variational(lp, y, 1.0, tol=1e-12, max_iter=20000)
    w, ll = grad_fit(lp, y, 1.0)
    assert v.converged
    np.testing.assert_allclose(v.weights, w, atol=1e-5)
    assert v.loglik[-1] == pytest.approx(ll, abs=1e-9)


def test_final_q_is_the_renyi_aggregate_of_its_weights_unequal_gamma():
    """The corrected loop's Q is the minimiser of Eq. 2.6 for the returned pool weights (direct solve)."""
    lp, y = data(n=60, seed=2)
    g = np.array([0.1, 0.3, 0.6, 1.0, 0.2])
    v = renyi_variational(lp, y, g, tol=1e-12, max_iter=20000)
    assert v.converged
    np.testing.assert_allclose(v.log_q, renyi_aggregate(lp, v.weights, g), atol=1e-8)
    # direct convex solve of Eq. 2.6 on two items
    for n in range(2):
        L = lp[n : n + 1]

        def h(z):
            return renyi_objective((z - logsumexp(z))[None], L, v.weights, g)[0]

        z = scipy_minimize(h, np.zeros(6), method="BFGS", options={"gtol": 1e-12}).x
        np.testing.assert_allclose(np.exp(v.log_q[n]), np.exp(z - logsumexp(z)), atol=1e-6)


def test_printed_line6_is_not_the_minimiser_of_eq_2_6():
    lp, y = data(n=60, seed=3)
    g = np.array([0.1, 0.3, 0.6, 1.0, 0.2])
    v = renyi_variational(lp, y, g, tol=1e-12, max_iter=20000, line6="as_printed")
    # its Q is the fixed point whose mixture weights are w' γ, i.e. pool weights ∝ w' γ²: check that ...
    np.testing.assert_allclose(v.log_q, renyi_aggregate(lp, v.weights, g), atol=1e-7)
    # ... and that reading the loop's w' as pool weights (w ∝ w' γ) gives a different aggregate
    w_read = v.mixture_weights * g / np.sum(v.mixture_weights * g)
    assert np.abs(np.exp(renyi_aggregate(lp, w_read, g)) - np.exp(v.log_q)).max() > 1e-3


@pytest.mark.parametrize("gamma", [0.5, 0.1])
def test_gradient_fit_is_at_least_as_good_and_close(gamma):
    """For γ < 1 Algorithm 2.1 holds the tilted agents fixed in its M-step, so it stops slightly short
    of the maximum-likelihood weights; the exact-gradient fit is never worse."""
    lp, y = data(n=300, a=6, k=8, seed=4)
    v = renyi_variational(lp, y, gamma, tol=1e-11, max_iter=20000)
    w, ll = grad_fit(lp, y, gamma)
    ll_v = float(renyi_aggregate(lp, v.weights, gamma)[np.arange(300), y].mean())
    assert ll >= ll_v - 1e-10
    assert ll - ll_v < 1e-3
    np.testing.assert_allclose(v.weights, w, atol=0.05)
