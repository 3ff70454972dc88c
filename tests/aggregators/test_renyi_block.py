"""Small items solved in blocks vectorised across items (:mod:`aggregators.renyi_block`, seed 000, Eq. 2.8).

The block kernel is checked against the plain fixed-point iteration (1e-10) and the per-item dense
Newton (1e-12), with shared and per-agent γ, cold and warm starts, partial blocks and sharp agents;
its fall-back to the per-item kernel (a full step that does not decrease the residual, a sweep cap)
by forcing and spying on it.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators import renyi_block as rb
from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import renyi_loglik_grad
from tests.aggregators.test_renyi_gradient import fd


def _problem(n, a, k, gkind, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    lp -= logsumexp(lp, axis=2, keepdims=True)
    lp = np.maximum(lp, np.log(1e-9))  # the default floor, as a pool would apply it
    lp -= logsumexp(lp, axis=2, keepdims=True)
    w = rng.dirichlet(np.ones(a))
    gamma = rng.uniform(0.1, 0.9, a) if gkind == "per_agent" else np.full(a, float(gkind))
    return np.ascontiguousarray(lp), w, gamma


@pytest.fixture
def fallbacks(monkeypatch):
    """The item counts the block kernel handed back to the per-item kernel, call by call."""
    seen: list[int] = []
    solve = rb.solve_items

    def spy(*args):
        rest = args[-1]

        def counted(idx, *out):
            seen.append(idx.size)
            return rest(idx, *out)

        return solve(*args[:-1], counted)

    monkeypatch.setattr(rb, "solve_items", spy)
    return seen


@pytest.mark.parametrize(("k", "a"), [(3, 1), (5, 4), (16, 2), (16, 16), (64, 2), (32, 8)])
@pytest.mark.parametrize("gkind", ["0.1", "0.5", "per_agent"])
@pytest.mark.parametrize("n", [1, 37])
def test_block_matches_plain_and_dense_newton(k, a, gkind, n, fallbacks):
    assert rb.fits(a, k)
    lp, w, gamma = _problem(n, a, k, gkind, seed=7 * k + a + n)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    assert plain.all_converged
    dense = solve_fixed_point(lp, w, gamma, tol=1e-12, hessian="dense")  # per item: the block is auto only
    out = solve_fixed_point(lp, w, gamma, tol=1e-12)
    assert fallbacks == []  # ordinary data: every item finished in its block
    assert out.all_converged and out.mode == "fast"
    assert (out.residual <= 1e-12).all()
    np.testing.assert_allclose(out.log_q, plain.log_q, atol=1e-10, rtol=0)
    np.testing.assert_allclose(out.log_q, dense.log_q, atol=1e-12, rtol=0)
    np.testing.assert_allclose(logsumexp(out.log_q, axis=1), 0.0, atol=1e-14)
    # the same Newton iteration as the per-item kernel: the same sweeps, give or take a stop at the margin
    assert abs(out.sweeps.mean() - dense.sweeps.mean()) <= 0.5


@pytest.mark.parametrize("gkind", ["0.5", "per_agent"])
def test_block_warm_start(gkind, fallbacks):
    lp, w, gamma = _problem(21, 3, 12, gkind, seed=3)
    ref = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000).log_q
    rng = np.random.default_rng(4)
    init = ref + 0.05 * rng.normal(size=ref.shape) + 3.0  # near, and not normalised
    out = solve_fixed_point(lp, w, gamma, tol=1e-12, init=init)
    assert out.all_converged and fallbacks == []
    np.testing.assert_allclose(out.log_q, ref, atol=1e-10, rtol=0)
    cold = solve_fixed_point(lp, w, gamma, tol=1e-12)
    assert out.sweeps.mean() < cold.sweeps.mean()  # it did start from init


@pytest.mark.parametrize(
    ("k", "a", "gkind", "seed"), [(5, 4, "0.05", 64), (40, 6, "0.05", 300), (5, 4, "per_agent", 50)]
)
def test_sharp_agents_fall_back_to_the_damped_newton(k, a, gkind, seed, fallbacks):
    """With very sharp, disagreeing agents some full Newton steps do not decrease the residual: those
    items are solved again by the per-item kernel (which damps), and the answers stay exact."""
    lp, w, gamma = _problem(37, a, k, gkind, seed=seed, scale=60.0 if gkind != "per_agent" else 30.0)
    out = solve_fixed_point(lp, w, gamma, tol=1e-12)
    assert sum(fallbacks) >= 1
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=400_000)
    assert plain.all_converged and out.all_converged
    np.testing.assert_allclose(out.log_q, plain.log_q, atol=1e-10, rtol=0)


def test_sweep_cap_hands_items_back(fallbacks):
    """``max_iter`` reached in the block: the per-item kernel finishes with the same cap, same answer."""
    lp, w, gamma = _problem(20, 4, 16, "0.5", seed=11)
    out = solve_fixed_point(lp, w, gamma, max_iter=1)
    assert fallbacks == [20]
    ref = solve_fixed_point(lp, w, gamma, max_iter=1, hessian="woodbury")
    np.testing.assert_array_equal(out.converged, ref.converged)
    np.testing.assert_allclose(out.log_q, ref.log_q, atol=1e-13, rtol=0)
    assert (out.sweeps == ref.sweeps + 2).all()  # both attempts are counted


def test_shapes_outside_the_block_go_per_item():
    assert not rb.fits(17, 8) and not rb.fits(10, 64) and not rb.fits(2, 2) and rb.fits(16, 16)
    lp, w, gamma = _problem(5, 10, 64, "0.5", seed=1)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    np.testing.assert_allclose(solve_fixed_point(lp, w, gamma, tol=1e-12).log_q, plain.log_q, atol=1e-10, rtol=0)


@pytest.mark.parametrize("gkind", ["0.5", "per_agent", "zero_weight"])
def test_block_adjoint_matches_finite_differences_and_the_per_item_adjoint(gkind):
    """The weight and γ gradients of the mean log-likelihood with the adjoint solved in blocks
    (:func:`aggregators.renyi_block.adjoint_items`), against central differences and the per-item adjoint."""
    lp, w, gamma = _problem(37, 5, 6, "0.5" if gkind == "zero_weight" else gkind, seed=5, scale=1.5)
    if gkind == "zero_weight":
        w[2] = 0.0  # an agent outside the Hessian, whose gradient is still wanted
        w /= w.sum()
    y = np.random.default_rng(6).integers(0, 6, 37)
    want = ("w", "gamma")
    _, gr, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=want, tol=1e-13)
    _, per_item, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=want, tol=1e-13, hessian="woodbury")
    for key in want:
        np.testing.assert_allclose(gr[key], per_item[key], atol=1e-12, rtol=0)

    def f(w_=w, g_=gamma):
        return renyi_loglik_grad(lp, y, w_, g_, want=(), tol=1e-13)[0]

    fd_w = fd(lambda v: f(w_=v), w, np.full(5, 1e-6))
    if gkind == "zero_weight":  # the central difference crosses w = 0: one-sided there
        e = np.zeros(5)
        e[2] = 1e-7
        fd_w[2] = (f(w_=w + e) - f()) / 1e-7
        np.testing.assert_allclose(gr["w"][2], fd_w[2], atol=1e-6)
    np.testing.assert_allclose(gr["w"], fd_w, atol=2e-8 if gkind != "zero_weight" else 1e-6)
    fd_g = fd(lambda v: f(g_=v), gamma, 1e-4 * gamma)
    np.testing.assert_allclose(gr["gamma"], fd_g, atol=1e-6 * max(1.0, np.abs(fd_g).max()), rtol=1e-5)


def test_block_adjoint_is_used_and_partial_blocks_are_written(monkeypatch):
    """Every item's row of the adjoint sums is written, also in a last block of fewer than LANES items."""
    calls: list[int] = []
    real = rb.adjoint_items
    monkeypatch.setattr(rb, "adjoint_items", lambda L, *a: (calls.append(L.shape[0]), real(L, *a))[1])
    n = rb.LANES + 3
    lp, w, gamma = _problem(n, 3, 7, "per_agent", seed=8)
    y = np.random.default_rng(9).integers(0, 7, n)
    _, gr, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w", "gamma"), tol=1e-13)
    assert calls == [n]
    for m in (n - 1, 1):  # the same items, in other block layouts: the per-item means agree
        _, part, _, _ = renyi_loglik_grad(lp[:m], y[:m], w, gamma, want=("w",), tol=1e-13)
        _, ref, _, _ = renyi_loglik_grad(lp[:m], y[:m], w, gamma, want=("w",), tol=1e-13, hessian="woodbury")
        np.testing.assert_allclose(part["w"], ref["w"], atol=1e-12, rtol=0)
    assert np.isfinite(gr["w"]).all() and np.isfinite(gr["gamma"]).all()
