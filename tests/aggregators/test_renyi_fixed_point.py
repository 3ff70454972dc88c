"""The Rényi aggregate (seed 000, Eq. 2.6-2.8, 2.21-2.22): limits, direct convex solve, methods."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize as scipy_minimize
from scipy.special import logsumexp

from aggregators.renyi import renyi_aggregate, renyi_objective
from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.validation import PredictionError


def agents(n=30, a=5, k=6, seed=0, scale=1.5):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    return lp - logsumexp(lp, axis=2, keepdims=True)


def lin_pool(lp, w):
    return np.log(np.einsum("nik,i->nk", np.exp(lp), w))


def log_pool_ref(lp, w):
    z = np.einsum("nik,i->nk", lp, w)
    return z - logsumexp(z, axis=1, keepdims=True)


def test_gamma_one_is_the_linear_pool():
    lp = agents(seed=1)
    w = np.random.default_rng(1).dirichlet(np.ones(5))
    for method in ("newton", "plain"):
        np.testing.assert_allclose(renyi_aggregate(lp, w, 1.0, method=method), lin_pool(lp, w), atol=1e-13)


def test_small_gamma_tends_to_the_log_pool_linearly():
    lp = agents(seed=2)
    w = np.random.default_rng(2).dirichlet(np.ones(5))
    ref = log_pool_ref(lp, w)
    errs = []
    for g in (1e-4, 1e-6, 1e-8, 1e-10):
        errs.append(np.abs(renyi_aggregate(lp, w, g) - ref).max())
    errs = np.array(errs)
    # first order in γ: the error divided by γ is the same constant at every γ (no precision floor)
    ratio = errs / np.array([1e-4, 1e-6, 1e-8, 1e-10])
    assert errs[-1] < 1e-9
    np.testing.assert_allclose(ratio[1:], ratio[1], rtol=1e-3)
    # below the documented limit the log pool is returned exactly
    np.testing.assert_allclose(renyi_aggregate(lp, w, 1e-13), ref, atol=1e-14)


def test_log_pool_limit_matches_the_log_pool_module():
    logpool = pytest.importorskip("aggregators.logpool")
    lp = agents(seed=3)
    w = np.random.default_rng(3).dirichlet(np.ones(5))
    np.testing.assert_allclose(renyi_aggregate(lp, w, 1e-11), logpool.log_pool(lp, w), atol=1e-9)


def test_direct_convex_solve_with_unequal_gammas():
    """Eq. (2.8) with w'_i ∝ w_i/γ_i is the minimiser of Eq. (2.6); the printed w'_i ∝ w_i γ_i is not."""
    lp = agents(n=2, a=5, k=6, seed=4)
    rng = np.random.default_rng(4)
    w = rng.dirichlet(np.ones(5))
    g = np.array([0.05, 0.2, 0.5, 0.9, 0.3])
    ours = renyi_aggregate(lp, w, g)
    for n in range(lp.shape[0]):
        L = lp[n : n + 1]

        def h(z):
            return renyi_objective((z - logsumexp(z))[None], L, w, g)[0]

        best = scipy_minimize(h, np.zeros(6), method="BFGS", options={"gtol": 1e-12}).x
        ref = best - logsumexp(best)
        np.testing.assert_allclose(np.exp(ours[n]), np.exp(ref), atol=1e-6)
        assert h(ours[n]) <= h(ref) + 1e-12
    # the typo of Algorithm 2.1, line 6 (w' ∝ w γ) is the fixed point with weights w γ²
    typo = renyi_aggregate(lp, w * g * g, g)
    assert np.abs(np.exp(typo) - np.exp(ours)).max() > 1e-2


def test_newton_and_plain_agree_and_newton_needs_few_sweeps():
    lp = agents(n=40, seed=5)
    w = np.random.default_rng(5).dirichlet(np.ones(5))
    for g in (0.5, 0.1, 0.02):
        qn, info_n = renyi_aggregate(lp, w, g, return_info=True, tol=1e-12)
        qp, info_p = renyi_aggregate(lp, w, g, method="plain", return_info=True, tol=1e-13)
        assert info_n.all_converged and info_p.all_converged
        assert info_n.max_sweeps <= 10
        # plain's error is about its residual / γ
        np.testing.assert_allclose(qn, qp, atol=1e-13 / g * 10)


def test_fixed_point_minimises_the_objective():
    lp = agents(n=10, seed=6)
    rng = np.random.default_rng(6)
    w = rng.dirichlet(np.ones(5))
    g = rng.uniform(0.05, 1.0, 5)
    q = renyi_aggregate(lp, w, g)
    h0 = renyi_objective(q, lp, w, g)
    for _ in range(20):
        z = q + 1e-3 * rng.normal(size=q.shape)
        z -= logsumexp(z, axis=1, keepdims=True)
        assert np.all(renyi_objective(z, lp, w, g) >= h0 - 1e-13)


def test_fast_and_stable_forms_agree():
    lp = agents(n=20, seed=7)
    w = np.random.default_rng(7).dirichlet(np.ones(5))
    for g in (2e-3, 0.3):
        gam = np.full(5, g)
        a = solve_fixed_point(lp, w, gam, stable=False, tol=1e-13).log_q
        b = solve_fixed_point(lp, w, gam, stable=True, tol=1e-13).log_q
        np.testing.assert_allclose(a, b, atol=1e-11)


def test_annealing_is_the_pool_of_powered_beliefs():
    lp = agents(n=15, seed=8)
    rng = np.random.default_rng(8)
    w = rng.dirichlet(np.ones(5))
    lam = rng.uniform(0.3, 3.0, 5)
    powered = lp * lam[None, :, None]
    ref = renyi_aggregate(powered, w, 0.2)  # unnormalised log-probs are normalised by the validator
    np.testing.assert_allclose(renyi_aggregate(lp, w, 0.2, lam=lam), ref, atol=1e-12)
    np.testing.assert_allclose(renyi_aggregate(lp, w, 0.2, lam=1.0), renyi_aggregate(lp, w, 0.2), atol=0)


def test_shared_gamma_scalar_equals_vector_and_warm_start():
    lp = agents(n=15, seed=9)
    w = np.random.default_rng(9).dirichlet(np.ones(5))
    a = renyi_aggregate(lp, w, 0.07)
    np.testing.assert_allclose(renyi_aggregate(lp, w, np.full(5, 0.07)), a, atol=1e-13)
    b, info = renyi_aggregate(lp, w, 0.07, init=a, return_info=True)
    np.testing.assert_allclose(b, a, atol=1e-13)
    assert info.max_sweeps <= 3


def test_zero_weight_agent_is_ignored():
    lp = agents(n=10, seed=10)
    w = np.array([0.3, 0.0, 0.3, 0.4, 0.0])
    np.testing.assert_allclose(
        renyi_aggregate(lp, w, 0.2), renyi_aggregate(lp[:, [0, 2, 3]], w[[0, 2, 3]], 0.2), atol=1e-12
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": 1.5}, "gamma"),
        ({"gamma": [0.5, 0.5]}, "gamma"),
        ({"gamma": float("nan")}, "gamma"),
        ({"gamma": 0.5, "weights": [1, 1, 1, 1, -1]}, "weights"),
        ({"gamma": 0.5, "weights": [0, 0, 0, 0, 0]}, "weights"),
        ({"gamma": 0.5, "lam": -1.0}, "lam"),
        ({"gamma": 0.5, "method": "magic"}, "method"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, field):
    lp = agents(n=3, seed=11)
    kw = dict(kwargs)
    weights = kw.pop("weights", None)
    with pytest.raises(PredictionError) as exc:
        renyi_aggregate(lp, weights, **kw)
    assert exc.value.field == field


def test_zero_probabilities_are_floored_or_rejected():
    p = np.full((2, 3, 4), 0.25)
    p[0, 1] = [0.5, 0.5, 0.0, 0.0]
    out = renyi_aggregate(p, None, 0.3, kind="probs")
    assert np.isfinite(out).all()
    with pytest.raises(PredictionError):
        renyi_aggregate(p, None, 0.3, kind="probs", floor=None)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    a=st.integers(1, 6),
    k=st.integers(2, 7),
    gamma=st.floats(1e-4, 1.0),
    scale=st.floats(0.1, 4.0),
)
def test_properties_normalised_permutation_invariant(seed, a, k, gamma, scale):
    lp = agents(n=4, a=a, k=k, seed=seed, scale=scale)
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(a))
    g = rng.uniform(gamma, 1.0, a) if a > 1 and seed % 2 else gamma
    q = renyi_aggregate(lp, w, g)
    np.testing.assert_allclose(logsumexp(q, axis=1), 0.0, atol=1e-12)
    perm = rng.permutation(a)
    gp = g[perm] if np.ndim(g) else g
    np.testing.assert_allclose(renyi_aggregate(lp[:, perm], w[perm], gp), q, atol=1e-9)
    np.testing.assert_allclose(renyi_aggregate(lp, w, 1.0), lin_pool(lp, w), atol=1e-12)


def test_progress_reports_chunks_and_can_cancel():
    from solvers.progress import Cancelled

    lp = agents(n=25, seed=12)
    seen = []
    out = renyi_aggregate(lp, None, 0.2, progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen)
    np.testing.assert_allclose(out, renyi_aggregate(lp, None, 0.2), atol=0)
    w = np.full(5, 0.2)
    fr = []
    solve_fixed_point(lp, w, np.full(5, 0.2), progress=fr.append, chunk=10)
    assert fr == [0.4, 0.8, 1.0]

    def stop(f):
        raise Cancelled()

    with pytest.raises(Cancelled):
        solve_fixed_point(lp, w, np.full(5, 0.2), progress=stop, chunk=10)
