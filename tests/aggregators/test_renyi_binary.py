"""Two classes: the scalar Newton on the log-odds (seed 000, Eq. 2.8), and the general Newton's stop
predicted from its quadratic rate.

Both are checked against the plain fixed-point iteration (1e-10) and the general dense Newton run
directly (1e-12), with shared and per-agent γ, cold and warm starts, extreme log-odds; the predicted
stop also by the residual one plain sweep measures at its answer.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators import renyi_kernels as rk
from aggregators.renyi_fixed_point import mixture_weights, solve_fixed_point
from aggregators.renyi_hessian import MODES


def _problem(n, a, k, gkind, seed, scale=2.0):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    lp -= logsumexp(lp, axis=2, keepdims=True)
    w = rng.dirichlet(np.ones(a))
    gamma = rng.uniform(0.1, 0.9, a) if gkind == "per_agent" else np.full(a, float(gkind))
    return lp, w, gamma


def _general(lp, w, gamma, mode, tol):
    """The general kernels (:func:`renyi_kernels._solve_items_seq`), bypassing the two-class dispatch."""
    n, _, k = lp.shape
    wp = mixture_weights(w, gamma)
    ugam, gidx = np.unique(gamma, return_inverse=True)
    R = np.empty((n, k))
    sweeps, res, conv = np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n, dtype=np.bool_)
    rk._solve_items_seq(
        lp, np.arange(lp.shape[1]), wp, gamma, gidx.astype(np.int64), ugam, float(wp @ gamma), R, False, True,
        MODES[mode], False, tol, 101,
        sweeps, res, conv,
    )  # fmt: skip
    assert conv.all()
    return R


def _residual(lp, w, gamma, log_q):
    """``max |F(r) - r|`` at ``log_q``: one plain sweep of Eq. (2.8)."""
    one = solve_fixed_point(lp, w, gamma, method="plain", init=log_q, max_iter=1, tol=1e-300)
    return np.abs(one.log_q - log_q).max(axis=1)


@pytest.mark.parametrize("a", [1, 2, 7, 300])
@pytest.mark.parametrize("gkind", ["0.1", "0.5", "0.95", "per_agent"])
@pytest.mark.parametrize("scale", [0.3, 2.0, 12.0])
def test_two_classes_match_plain_and_dense_newton(a, gkind, scale):
    lp, w, gamma = _problem(25, a, 2, gkind, seed=a + int(10 * scale), scale=scale)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    assert plain.all_converged
    dense = _general(lp, w, gamma, "dense", 1e-12)
    out = solve_fixed_point(lp, w, gamma, tol=1e-12)
    assert out.all_converged and out.mode == "fast" and out.max_sweeps <= 12
    np.testing.assert_allclose(out.log_q, plain.log_q, atol=1e-10, rtol=0)
    np.testing.assert_allclose(out.log_q, dense, atol=1e-12, rtol=0)
    np.testing.assert_allclose(logsumexp(out.log_q, axis=1), 0.0, atol=1e-14)
    # warm starts: at the answer (one evaluation), and far on the wrong side (the bracket's bisection)
    far = np.log(np.array([[1e-12, 1.0 - 1e-12], [1.0 - 1e-12, 1e-12]]))[np.arange(25) % 2]
    for init in (out.log_q, far):
        warm = solve_fixed_point(lp, w, gamma, tol=1e-12, init=init)
        assert warm.all_converged
        np.testing.assert_allclose(warm.log_q, plain.log_q, atol=1e-10, rtol=0)
    assert solve_fixed_point(lp, w, gamma, tol=1e-12, init=out.log_q).max_sweeps == 2


def test_two_classes_reported_residual_is_measured():
    lp, w, gamma = _problem(40, 5, 2, "per_agent", seed=3)
    for tol in (1e-6, 1e-10):
        out = solve_fixed_point(lp, w, gamma, tol=tol)
        assert out.all_converged and (out.residual <= tol).all()
        # after the free final Newton step the residual is far below the one that stopped the loop
        assert (_residual(lp, w, gamma, out.log_q) <= np.maximum(out.residual, 1e-15)).all()


@pytest.mark.parametrize("mode", ["dense", "woodbury"])
@pytest.mark.parametrize("k,a", [(16, 2), (64, 10), (40, 30), (300, 50)])
@pytest.mark.parametrize("gkind", ["0.1", "0.5", "per_agent"])
def test_predicted_stop_meets_tol(mode, k, a, gkind):
    """The stop predicted from the last full step's quadratic rate (no confirming evaluation) leaves a
    measured residual below tol (by at least 10x on these shapes) and the plain fixed point to 1e-10."""
    lp, w, gamma = _problem(20, a, k, gkind, seed=k * a)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    for tol in (1e-8, 1e-10):
        out = solve_fixed_point(lp, w, gamma, tol=tol, hessian=mode)
        assert out.all_converged
        assert (_residual(lp, w, gamma, out.log_q) <= 0.1 * tol).all()
    np.testing.assert_allclose(out.log_q, plain.log_q, atol=1e-10, rtol=0)


def test_predicted_stop_saves_an_evaluation():
    """On these items the second full Newton step predicts the third: 3 evaluations and the set-up."""
    lp, w, gamma = _problem(20, 10, 64, "0.5", seed=11)
    out = solve_fixed_point(lp, w, gamma, tol=1e-10, hessian="woodbury")
    cg = solve_fixed_point(lp, w, gamma, tol=1e-10, hessian="cg")  # CG keeps the confirming evaluation
    assert out.sweeps.mean() < cg.sweeps.mean()
    np.testing.assert_allclose(out.log_q, cg.log_q, atol=1e-10, rtol=0)


@pytest.mark.parametrize("gkind", ["0.05", "0.5", "per_agent"])
@pytest.mark.parametrize("scale", [1e-6, 1e-3, 0.1, 1.0])
def test_step_bound_holds_after_an_exact_newton_step(gkind, scale):
    """``_step_bound`` against the residual measured after a dense NumPy Newton step, from points at
    several distances from the fixed point (unnormalised too: the bound ignores offsets)."""
    lp, w, gamma = _problem(8, 6, 20, gkind, seed=int(-np.log10(scale)) + 1)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    wp = mixture_weights(w, gamma)
    rng = np.random.default_rng(0)

    def evaluate(L, r):
        t = gamma[:, None] * L + (1 - gamma)[:, None] * r[None]
        Qi = np.exp(t - logsumexp(t, axis=1, keepdims=True))
        Q = wp @ Qi
        return np.log(Q) - r, Qi, Q

    for j in range(8):
        r = plain.log_q[j] + scale * rng.normal(size=20) + 3.0
        G, Qi, Q = evaluate(lp[j], r)
        H = np.diag((wp * gamma) @ Qi) + (Qi.T * (wp * (1 - gamma))) @ Qi
        delta = np.linalg.solve(H, Q * G)
        rn = r + delta - logsumexp(r + delta)
        measured = np.abs(evaluate(lp[j], rn)[0]).max()
        bound = rk._step_bound(delta, 1.0 - gamma.min())
        assert measured <= bound
        if scale == 1e-6:  # near the answer the bound certifies a tight tol
            assert bound < 1e-10
