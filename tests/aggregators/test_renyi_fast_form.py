"""The fast form's Newton loop (seed 000, Eq. 2.8): unnormalised iterates, line-search trials that
keep no tilted agents (rebuilt on acceptance), the adjoint on the weighted agents only.

Checked against the plain fixed-point iteration (1e-10), the dense Newton (1e-12) and finite
differences, with shared and per-agent γ, for every Hessian solve.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import renyi_loglik_grad

SOLVES = ("dense", "woodbury", "cg")


def _problem(n, a, k, gkind, seed):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * 2.0
    lp -= logsumexp(lp, axis=2, keepdims=True)
    w = rng.dirichlet(np.ones(a))
    gamma = rng.uniform(0.1, 0.9, a) if gkind == "per_agent" else np.full(a, float(gkind))
    return lp, w, gamma, rng


@pytest.mark.parametrize("k,a", [(6, 3), (30, 8), (17, 40)])
@pytest.mark.parametrize("gkind", ["0.2", "0.5", "per_agent"])
def test_far_and_unnormalised_starts_reach_the_plain_fixed_point(k, a, gkind):
    """A start far from the answer makes Newton backtrack (trials without stored Q_i); a start shifted
    by a constant is an unnormalised iterate: every solve still lands on the plain fixed point."""
    lp, w, gamma, rng = _problem(10, a, k, gkind, seed=k + a)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    assert plain.all_converged
    far = rng.normal(size=(10, k)) * 15.0  # peaked on a random class, far from the aggregate
    for h in SOLVES:
        cold = solve_fixed_point(lp, w, gamma, hessian=h, tol=1e-12)
        for init in (far, plain.log_q + 7.0, far - 30.0):
            out = solve_fixed_point(lp, w, gamma, hessian=h, tol=1e-12, init=init, max_iter=200)
            assert out.all_converged
            np.testing.assert_allclose(out.log_q, plain.log_q, atol=1e-10, rtol=0)
            np.testing.assert_allclose(out.log_q, cold.log_q, atol=1e-12, rtol=0)
            np.testing.assert_allclose(logsumexp(out.log_q, axis=1), 0.0, atol=1e-13)
    far_out = solve_fixed_point(lp, w, gamma, tol=1e-12, init=far, max_iter=200)
    assert far_out.max_sweeps > solve_fixed_point(lp, w, gamma, tol=1e-12, init=plain.log_q).max_sweeps


@pytest.mark.parametrize("h", SOLVES)
@pytest.mark.parametrize("gkind", ["0.3", "per_agent"])
def test_gradient_with_zero_weight_agents_matches_finite_differences(h, gkind):
    """The adjoint solves with H of the weighted agents only; the gradient for an agent of weight zero
    (a one-sided derivative) and for the others still matches finite differences."""
    a, k, n = 7, 20, 25
    lp, w, gamma, rng = _problem(n, a, k, gkind, seed=5)
    w[[1, 4]] = 0.0
    w /= w.sum()
    y = rng.integers(0, k, n)
    _, gr, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w", "gamma"), tol=1e-13, hessian=h)
    _, ref, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w", "gamma"), tol=1e-13, hessian="dense")
    np.testing.assert_allclose(gr["w"], ref["w"], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(gr["gamma"], ref["gamma"], rtol=1e-9, atol=1e-11)

    def ll(w_):
        return renyi_loglik_grad(lp, y, w_, gamma, want=(), tol=1e-13)[0]

    f0 = ll(w)
    for j in range(a):
        e = np.zeros(a)
        if w[j] == 0.0:
            e[j] = 1e-7
            fd = (ll(w + e) - f0) / 1e-7
            assert abs(gr["w"][j] - fd) <= 2e-5 * (1 + abs(fd)), (j, gr["w"][j], fd)
        else:
            e[j] = 1e-6
            fd = (ll(w + e) - ll(w - e)) / 2e-6
            assert abs(gr["w"][j] - fd) <= 1e-6 * (1 + abs(fd)), (j, gr["w"][j], fd)
