"""The structured Hessian solves of the Rényi fixed point (dense, Woodbury, CG; seed 000 Eq. 2.8).

Each solve is checked against the plain fixed-point iteration (an independent route to the same
aggregate), the dense Newton step, a dense NumPy solve of ``H x = b``, and finite differences for
the gradient; with shared and per-agent γ, in the fast and the stable (γ → 0) evaluation.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators.renyi_fixed_point import mixture_weights, solve_fixed_point
from aggregators.renyi_gradient import renyi_loglik_grad
from aggregators.renyi_hessian import CG, DENSE, WOODBURY, choose, hsolve, workspace
from solvers.errors import InputError

SOLVES = ("dense", "woodbury", "cg")


def agents(n, a, k, seed, scale=1.5):
    rng = np.random.default_rng(seed)
    lp = rng.normal(size=(n, a, k)) * scale
    return lp - logsumexp(lp, axis=2, keepdims=True)


SHAPES = [(2, 3), (5, 2), (12, 4), (40, 7), (9, 30)]  # (K, A): K < A and K > A both


@pytest.mark.parametrize("k,a", SHAPES)
@pytest.mark.parametrize("gkind", ["0.1", "0.5", "per_agent"])
def test_every_solve_matches_plain_iteration_and_dense_newton(k, a, gkind):
    seed = 10 * k + a
    lp = agents(12, a, k, seed)
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(a))
    gamma = rng.uniform(0.05, 1.0, a) if gkind == "per_agent" else np.full(a, float(gkind))
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    assert plain.all_converged
    dense = solve_fixed_point(lp, w, gamma, hessian="dense", tol=1e-12)
    for h in SOLVES:
        out = solve_fixed_point(lp, w, gamma, hessian=h, tol=1e-12)
        assert out.all_converged and out.max_sweeps <= 12
        np.testing.assert_allclose(out.log_q, plain.log_q, atol=1e-10, rtol=0)
        np.testing.assert_allclose(out.log_q, dense.log_q, atol=1e-12, rtol=0)


def _hessian_at(lp_item, w, gamma, r):
    """Dense ``H`` of the module docstring from its definition (NumPy), and the tilted agents."""
    wp = mixture_weights(w, gamma)
    Qi = np.exp(gamma[:, None] * lp_item + (1 - gamma[:, None]) * r[None, :])
    Qi /= Qi.sum(axis=1, keepdims=True)
    H = np.diag(np.einsum("i,iy->y", wp * gamma, Qi)) + np.einsum("i,iy,iz->yz", wp * (1 - gamma), Qi, Qi)
    return H, Qi, wp


@pytest.mark.parametrize("k,a", [(3, 5), (30, 4), (64, 64), (200, 3)])
@pytest.mark.parametrize("mode", [DENSE, WOODBURY, CG])
def test_hsolve_against_numpy_solve(k, a, mode):
    rng = np.random.default_rng(k + a + mode)
    lp = agents(1, a, k, k + a)[0]
    gamma = rng.uniform(0.05, 1.0, a)
    gamma[0] = 1.0  # a linear-pool agent has no rank-one term
    w = rng.dirichlet(np.ones(a))
    r = logsumexp(lp, axis=0) - logsumexp(logsumexp(lp, axis=0))
    H, Qi, wp = _hessian_at(lp, w, gamma, r)
    b = rng.normal(size=k)
    x = np.empty(k)
    M, C, V, v = workspace(mode, a, k)
    hsolve(mode, np.ascontiguousarray(Qi), wp, gamma, b, x, 1e-13, M, C, V, v)
    ref = np.linalg.solve(H, b)
    assert np.abs(x - ref).max() <= 1e-9 * np.abs(ref).max()


@pytest.mark.parametrize("h", SOLVES)
@pytest.mark.parametrize("gamma", [np.array([0.05, 0.2, 0.5, 0.9, 0.3, 1.0]), np.full(6, 0.1), np.full(6, 5e-4)])
def test_gradient_of_every_solve_matches_finite_differences(h, gamma):
    k, a = 24, 6
    lp = agents(30, a, k, 3)
    rng = np.random.default_rng(3)
    y = rng.integers(0, k, 30)
    w = rng.dirichlet(np.ones(a) * 3)
    _, gr, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w", "gamma"), tol=1e-13, hessian=h)

    def ll(w_, g_):
        return renyi_loglik_grad(lp, y, w_, g_, want=(), tol=1e-13, hessian="dense")[0]

    for j in range(a):
        e = np.zeros(a)
        e[j] = 1e-6
        fd_w = (ll(w + e, gamma) - ll(w - e, gamma)) / 2e-6
        assert abs(gr["w"][j] - fd_w) <= 1e-6 * (1 + abs(fd_w))
        if gamma[j] < 1.0:
            eg = np.zeros(a)
            eg[j] = 1e-6 * gamma[j]
            fd_g = (ll(w, gamma + eg) - ll(w, gamma - eg)) / (2e-6 * gamma[j])
            assert abs(gr["gamma"][j] - fd_g) <= 1e-5 * (1 + abs(fd_g))


@pytest.mark.parametrize("k,a,n", [(2, 3, 4), (2, 1000, 2), (4096, 3, 2), (3000, 40, 1)])
def test_extreme_shapes_smoke(k, a, n):
    lp = agents(n, a, k, k + a, scale=2.0)
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(a))
    y = rng.integers(0, k, n)
    for gamma in (np.full(a, 0.1), rng.uniform(0.1, 0.6, a)):
        out = solve_fixed_point(lp, w, gamma, tol=1e-10)
        assert out.all_converged and out.max_sweeps <= 12
        np.testing.assert_allclose(logsumexp(out.log_q, axis=1), 0.0, atol=1e-12)
        # the aggregate is a fixed point of Eq. (2.8): one plain sweep leaves it where it is
        one = solve_fixed_point(lp, w, gamma, method="plain", init=out.log_q, max_iter=1, tol=1e-300)
        np.testing.assert_allclose(one.log_q, out.log_q, atol=1e-9, rtol=0)
        _, gr, _, _ = renyi_loglik_grad(lp, y, w, gamma, want=("w",), solved=out.log_q)
        ref = renyi_loglik_grad(lp, y, w, gamma, want=("w",), solved=out.log_q, hessian="dense" if k < 100 else "cg")
        assert np.isfinite(gr["w"]).all()
        np.testing.assert_allclose(gr["w"], ref[1]["w"], rtol=1e-7, atol=1e-9)


def test_choice_by_shape_and_bad_name():
    assert choose(10, 4, 0.1) == DENSE
    assert choose(2, 1024, 0.1) == WOODBURY
    assert choose(1000, 4096, 0.1) == CG
    # CG's product count does not grow below γ = 0.1 (the weight fit's sweep: 156 agents x 64 classes)
    assert choose(156, 64, 0.01) == CG and choose(156, 64, 0.1) == CG and choose(100, 16, 0.01) == DENSE
    # session 56: CG's count is a constant (CG_PRODUCTS against dense, CG_PRODUCTS_WOODBURY against Woodbury),
    # not the spectral bound, so the agents between the grid's 10 and 100 go to CG where it was timed faster
    # (22 agents: 1.1-1.8x; 30-50 agents at γ = 0.01: Woodbury took 1.15-3.2x CG's time), while up to 18 agents
    # at many classes keep Woodbury (timed 1.1-1.27x faster than CG at 16 agents x 1,024-4,096 classes)
    for g in (0.01, 0.1, 0.5):
        assert choose(22, 16, g) == CG and choose(22, 64, g) == CG and choose(50, 256, g) == CG
        assert choose(12, 256, g) == WOODBURY and choose(10, 1024, g) == WOODBURY
        assert choose(16, 1024, g) == WOODBURY and choose(16, 4096, g) == WOODBURY and choose(22, 4096, g) == CG
    assert choose(30, 64, 0.01) == CG  # the bound (35 products at γ = 0.01) kept Woodbury here
    lp = agents(2, 3, 5, 0)
    with pytest.raises(InputError) as e:
        solve_fixed_point(lp, np.ones(3) / 3, np.full(3, 0.5), hessian="qr")
    assert e.value.field == "hessian"


@pytest.mark.parametrize("gamma", [0.003, 0.01, 0.05])
def test_cg_products_at_small_gamma_stay_below_the_count_at_gamma_0_1(gamma):
    """:func:`choose` counts CG's products at γ = 0.1 for every smaller γ: on solved items the count
    (preconditioned CG on ``H x = b``, rtol 1e-3 and 1e-12) at γ < 0.1 does not exceed the one at
    γ = 0.1, and both are far below the ``3 sqrt(1/γ) + 5`` bound."""
    from aggregators.renyi_fixed_point import mixture_weights
    from aggregators.renyi_kernels import _evaluate, _item_workspace, _setup

    rng = np.random.default_rng(5)
    n, a, k = 12, 60, 48
    lp = agents(n, a, k, 11, scale=2.5)
    w = rng.dirichlet(np.ones(a))

    def products(g):
        gam = np.full(a, g)
        wp = mixture_weights(w, gam)
        ugam, gidx = np.unique(gam, return_inverse=True)
        R = solve_fixed_point(lp, w, gam, tol=1e-12).log_q
        E, Qi, Qt, M, C, V, v, vecs, qg, av = _item_workspace(a, k, 1, CG, False)
        out = []
        for i in range(n):
            r = R[i].copy()
            _setup(lp[i], wp, gam, float(wp @ gam), E, r, True, False, vecs[5], av[0])
            _evaluate(
                False, lp[i], E, wp, gam, gidx.astype(np.int64), ugam, r, Qi, vecs[0], vecs[2], qg, vecs[5], av[1], True
            )
            b = rng.normal(size=k) * np.exp(R[i])  # a generic right-hand side in the Newton step's scaling
            out.append([hsolve(CG, Qi, wp, gam, b, np.empty(k), rt, M, C, V, v) for rt in (1e-3, 1e-12)])
        return np.array(out)

    small, ref = products(gamma), products(0.1)
    assert np.all(small.max(axis=0) <= ref.max(axis=0)), (small.max(axis=0), ref.max(axis=0))
    assert small.max() < 3 * np.sqrt(1 / gamma) + 5 and ref.max() <= 3 * np.sqrt(10) + 5


def _numpy_pcg(H, b, pre, rtol):
    """Textbook preconditioned CG in NumPy (``pre(r)`` applies the preconditioner's inverse), from
    ``x = pre(b)``; returns (x, products) counting the first product as :func:`hsolve` does."""
    x = pre(b)
    r = b - H @ x
    z = pre(r)
    p = z.copy()
    rz = r @ z
    k = 1
    while np.linalg.norm(r) > rtol * np.linalg.norm(b) and k < 10 * len(b):
        hp = H @ p
        k += 1
        al = rz / (p @ hp)
        x += al * p
        r -= al * hp
        z = pre(r)
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return x, k


@pytest.mark.parametrize("family", ["independent", "shared_signal", "near_duplicates"])
@pytest.mark.parametrize("gkind", ["0.5", "0.05", "per_agent"])
def test_cg_mean_agent_preconditioner_is_below_h_and_saves_products(family, gkind):
    """CG's preconditioner ``P = D + u uᵀ/α`` (``u = Σ c_i Q_i``, ``c_i = w'_i (1-γ_i)``, ``α = Σ c_i``)
    lies below ``H`` (``P⁻¹H``'s eigenvalues are at least 1, so ``P`` is positive definite), the solve
    agrees with NumPy's, and CG takes no more products with it than with ``D`` alone (a NumPy PCG),
    and at a small γ, where ``D⁻¹H`` has its outlier near ``1/γ`` along the agents' mean, fewer."""
    k, a = 160, 120
    rng = np.random.default_rng(len(family) * 7 + len(gkind))
    if family == "independent":
        lp = np.log(rng.dirichlet(np.ones(k), size=a))
    elif family == "shared_signal":
        sig = rng.normal(size=k)
        lp = np.exp(rng.uniform(np.log(0.3), np.log(5.0), (a, 1))) * (sig + 0.7 * rng.normal(size=(a, k)))
    else:
        base = rng.normal(size=(a // 10, k)) * 2.0
        lp = base[rng.integers(0, a // 10, a)] + 0.01 * rng.normal(size=(a, k))
    lp = lp - logsumexp(lp, axis=1, keepdims=True)
    w = rng.dirichlet(np.ones(a))
    gamma = rng.uniform(0.05, 0.5, a) if gkind == "per_agent" else np.full(a, float(gkind))
    r = solve_fixed_point(lp[None], w, gamma, tol=1e-12).log_q[0]
    H, Qi, wp = _hessian_at(lp, w, gamma, r)
    c = wp * (1 - gamma)
    d = np.einsum("i,iy->y", wp * gamma, Qi)
    u = c @ Qi
    P = np.diag(d) + np.outer(u, u) / c.sum()
    Linv = np.linalg.inv(np.linalg.cholesky(P))
    ev = np.linalg.eigvalsh(Linv @ H @ Linv.T)
    assert ev.min() >= 1 - 1e-10
    b = np.zeros(k)
    b[int(rng.integers(k))] = 1.0  # the adjoint's right-hand side
    x = np.empty(k)
    M, C, V, v = workspace(CG, a, k)
    ours = hsolve(CG, np.ascontiguousarray(Qi), wp, gamma, b, x, 1e-12, M, C, V, v)
    ref = np.linalg.solve(H, b)
    assert np.abs(x - ref).max() <= 1e-10 * np.abs(ref).max()
    _, d_only = _numpy_pcg(H, b, lambda z: z / d, 1e-12)
    _, with_mean = _numpy_pcg(H, b, lambda z: np.linalg.solve(P, z), 1e-12)
    assert ours <= with_mean + 1 and ours <= d_only, (ours, with_mean, d_only)
    if gkind == "0.05":
        assert ours < d_only, (ours, d_only)


def test_cg_known_sums_from_the_exponential_pass_give_the_same_solve():
    """The adjoint forms CG's ``d`` and ``u`` in its exponential pass (agents at zero weight add
    nothing) and calls :func:`cg_known`: the same answer as :func:`hsolve` forming them itself."""
    from aggregators.renyi_hessian import cg_known
    from aggregators.renyi_kernels import _tilted_at

    k, a = 90, 40
    lp = agents(1, a, k, 21)[0]
    rng = np.random.default_rng(21)
    w = rng.dirichlet(np.ones(a))
    w[:5] = 0.0
    w /= w.sum()
    gamma = rng.uniform(0.05, 0.9, a)
    wp = mixture_weights(w, gamma)
    r = solve_fixed_point(lp[None], w, gamma, tol=1e-12).log_q[0]
    Qi, mix, x = np.empty((a, k)), np.empty(k), np.empty(k)
    M, C, V, v = workspace(CG, a, k)
    _tilted_at(lp, wp, gamma, r, Qi, mix, x, V[5], V[1])
    b = rng.normal(size=k)
    known = np.empty(k)
    n1 = cg_known(Qi, wp, gamma, b, known, 1e-12, V, v)
    V2 = workspace(CG, a, k)
    full = np.empty(k)
    n2 = hsolve(CG, Qi, wp, gamma, b, full, 1e-12, *V2)
    assert n1 == n2
    np.testing.assert_allclose(known, full, rtol=1e-13, atol=0)
    np.testing.assert_allclose(mix, wp @ Qi, rtol=1e-13)
    H, _, _ = _hessian_at(lp, w, gamma, r)
    np.testing.assert_allclose(H @ known, b, atol=1e-11 * np.abs(b).max())


@pytest.mark.parametrize("gkind", ["0.1", "0.5", "per_agent"])
@pytest.mark.parametrize("k,a", [(300, 22), (600, 12)])
def test_cg_at_the_default_tol_is_within_a_hundredth_of_it(k, a, gkind):
    """With CG the closing Newton step is skipped when the plain step's error bound
    ``residual (1/γ_min - 1)`` is at most ``tol / 100`` (session 57, :data:`POLISH_CG_FRACTION`): the
    answer must still be that close to the fixed point, solved to 1e-13 by the dense Newton and by
    the plain iteration."""
    from aggregators.renyi_kernels import POLISH_CG_FRACTION

    seed = 7 * k + a
    lp = agents(5, a, k, seed, scale=2.5)
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(a))
    gamma = rng.uniform(0.1, 0.6, a) if gkind == "per_agent" else np.full(a, float(gkind))
    ref = solve_fixed_point(lp, w, gamma, hessian="dense", tol=1e-13)
    plain = solve_fixed_point(lp, w, gamma, method="plain", tol=1e-14, max_iter=200_000)
    assert ref.all_converged and plain.all_converged
    np.testing.assert_allclose(ref.log_q, plain.log_q, atol=1e-12, rtol=0)
    plain_closed = 0
    for tol in (1e-8, 1e-10):
        out = solve_fixed_point(lp, w, gamma, hessian="cg", method="newton", tol=tol)
        assert out.all_converged and np.all(out.residual <= tol)
        err = np.abs(out.log_q - ref.log_q).max()
        assert err <= POLISH_CG_FRACTION * tol + 2e-14, (tol, err)
        plain_closed += int(np.sum(out.residual * (1.0 / gamma.min() - 1.0) <= POLISH_CG_FRACTION * tol))
    assert plain_closed >= 1  # the plain closing step is exercised in every case
