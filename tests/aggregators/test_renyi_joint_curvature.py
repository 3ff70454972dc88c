"""The joint Fisher model of the Rényi pool in its weights and log γ, and the projected Newton fit it drives.

References: the Jacobian of the fixed point in ``w`` and ``log γ`` by central differences of the
aggregate (1e-14 solves), the Fisher formed from it; the finite-difference Hessian of the objective
at the optimum (the model's quality); SciPy's TNC on the same box form from the same start (the
optimum, no worse)."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import LOG_GAMMA_BOUNDS, RenyiProblem
from aggregators.renyi_joint_curvature import InGamma, joint_fisher
from aggregators.renyi_pool import JOINT_OPTIONS
from benchmarks.logpool_families import make_family
from solvers.errors import InputError
from solvers.problems.orthant import SimplexAsOrthant
from solvers.registry import minimize
from tests.aggregators.test_renyi_weight_hessian import fd_jacobian


def fd_joint_jacobian(lp, w, gamma, h=1e-6):
    """``d log P_agg / d[w, log γ]`` (n, K, 2A) by central differences (``w`` as the formula takes it:
    not renormalised, ``w' = (w/γ)/Σ(w/γ)``)."""
    A = lp.shape[1]

    def at(g):
        return solve_fixed_point(lp, w, g, tol=1e-14).log_q

    steps = np.exp(h * np.eye(A))
    Jt = np.stack([(at(gamma * steps[k]) - at(gamma / steps[k])) / (2 * h) for k in range(A)], axis=2)
    return np.concatenate([fd_jacobian(lp, w, gamma, h), Jt], axis=2)


@pytest.mark.parametrize("method", ["dense", "woodbury"])
@pytest.mark.parametrize("family", ["gaussian-logit", "noise", "competition"])
def test_joint_fisher_is_the_fisher_of_the_finite_difference_jacobian(family, method):
    lp, _ = make_family(family, 6, 4, 5, seed=3)
    A = lp.shape[1]
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(A))
    gamma = np.exp(rng.uniform(np.log(0.02), 0.0, A))
    log_q = solve_fixed_point(lp, w, gamma, tol=1e-14).log_q
    J = fd_joint_jacobian(lp, w, gamma)
    c = rng.uniform(0.5, 2.0, lp.shape[0])  # item weights
    ref = np.einsum("n,nk,nka,nkb->ab", c, np.exp(log_q), J, J) / c.sum()
    F = joint_fisher(lp, log_q, w, gamma, np.arange(A), np.arange(A), c=c, method=method)
    np.testing.assert_allclose(F, ref, rtol=1e-6, atol=1e-8 * np.abs(ref).max())
    # a subset of columns is that block; a shared γ's column is the sum of the agents' columns
    wc, tc = np.array([0, 2]), np.array([1, 3])
    sub = joint_fisher(lp, log_q, w, gamma, wc, tc, c=c, method=method)
    idx = np.r_[wc, A + tc]
    np.testing.assert_allclose(sub, ref[np.ix_(idx, idx)], rtol=1e-6, atol=1e-8 * np.abs(ref).max())
    T = np.zeros((2 * A, A + 1))
    T[np.arange(A), np.arange(A)] = 1.0
    T[A:, A] = 1.0
    shared = joint_fisher(lp, log_q, w, gamma, np.arange(A), np.ones((1, A), dtype=bool), c=c, method=method)
    np.testing.assert_allclose(shared, T.T @ ref @ T, rtol=1e-6, atol=1e-8 * np.abs(ref).max())


@pytest.mark.parametrize(
    ("family", "A", "K"), [("gaussian-logit", 5, 300), ("near-duplicate", 12, 40), ("noise", 30, 16)]
)
def test_joint_fisher_ways_and_chunks_agree(family, A, K, monkeypatch):
    """Woodbury and the dense ``K x K`` solve give one Fisher (1e-10) with agents of weight zero among the
    columns and outside them, at every chunking, including the one-item chunks of a tiny byte budget."""
    import aggregators.renyi_joint_curvature as jc

    lp, _ = make_family(family, 40, A, K, seed=5)
    rng = np.random.default_rng(2)
    w = rng.dirichlet(np.ones(A))
    w[[1, A - 1]] = 0.0  # agent A-1 outside every column
    w /= w.sum()
    gamma = np.exp(rng.uniform(np.log(1e-3), 0.0, A))
    log_q = solve_fixed_point(lp, w, gamma, tol=1e-13).log_q
    wc, tc = np.flatnonzero(w > 0)[:-1], np.flatnonzero(w > 0)[1:]
    wc = np.union1d(wc, [1])  # an entering agent of weight zero
    ref = jc.joint_fisher(lp, log_q, w, gamma, wc, tc, method="dense")
    assert np.abs(ref).max() > 0
    scale = np.abs(ref).max()
    for method in ("woodbury", "auto"):
        for chunk in (1, 7, 64):
            F = jc.joint_fisher(lp, log_q, w, gamma, wc, tc, method=method, chunk=chunk)
            np.testing.assert_allclose(F, ref, rtol=0, atol=1e-10 * scale)
    monkeypatch.setattr(jc, "JOINT_CHUNK_BYTES", 1)
    F = jc.joint_fisher(lp, log_q, w, gamma, wc, tc)
    np.testing.assert_allclose(F, ref, rtol=0, atol=1e-10 * scale)
    with pytest.raises(InputError, match="method"):
        jc.joint_fisher(lp, log_q, w, gamma, wc, tc, method="qr")


def test_model_items_bounds_the_cost_of_the_model():
    """All items up to 2,000 where an item's model is cheap; fewer (never under the minimum) where
    thousands of classes meet hundreds of free columns; the cheaper way is the one counted."""
    from aggregators.renyi_joint_curvature import JOINT_MODEL_MIN_ITEMS, fisher_item_flops, model_items

    assert model_items(500, 64, 269, 100, 200) == 500
    assert model_items(20_000, 64, 269, 100, 200) == 2_000
    assert model_items(20_000, 4096, 1000, 1000, 2000) == JOINT_MODEL_MIN_ITEMS
    assert model_items(10, 4096, 1000, 1000, 2000) == 10
    few = model_items(20_000, 1024, 100, 50, 100)
    assert JOINT_MODEL_MIN_ITEMS < few < 2_000
    dense, wood = fisher_item_flops(4096, 10, 20)
    assert wood < dense / 100  # ten agents at 4,096 classes: Woodbury
    dense, wood = fisher_item_flops(64, 200, 300)
    assert dense < wood  # two hundred agents at 64 classes: dense


def _tangent_basis(A, w_idx, t_idx):
    """An orthonormal basis of the directions that keep Σ w (on ``w_idx``) and move ``t_idx`` freely."""
    ns = w_idx.size
    T = np.zeros((ns + t_idx.size, ns - 1 + t_idx.size))
    T[:ns, : ns - 1] = np.eye(ns)[:, :-1] - np.eye(ns)[:, [-1]]
    T[ns:, ns - 1 :] = np.eye(t_idx.size)
    return np.linalg.qr(T)[0]


def test_joint_fisher_models_the_hessian_at_the_per_agent_optimum():
    """At the optimum of ``learn_per_agent`` (its support, the log γ off their bounds) the Fisher is
    within 10 % of the finite-difference Hessian of the objective (measured 3-4 % on four families at
    400 × 8 × 6) and no eigenvalue of ``F^{-1} H`` leaves [0.2, 5] (measured [0.3, 3.5]) although ``H``'s
    own eigenvalues span five decades."""
    from aggregators import RenyiPool

    lp, y = make_family("noise", 400, 8, 6, seed=1)
    A = lp.shape[1]
    pool = RenyiPool(gamma="learn_per_agent").fit(lp, y)
    assert pool.converged_
    w, g = pool.weights_, np.asarray(pool.gamma_)
    prob = RenyiProblem(lp, y, g, learn_gamma="per_agent", tol=1e-14, adjoint_rtol=1e-14)
    x = np.r_[w, np.log(g)]
    w_idx = np.flatnonzero(w > 1e-12)
    t_idx = np.flatnonzero((w > 1e-12) & (np.log(g) > LOG_GAMMA_BOUNDS[0] + 1e-6) & (g < 1 - 1e-9))
    assert t_idx.size >= 2
    Qb = _tangent_basis(A, w_idx, t_idx)
    idx = np.r_[w_idx, A + t_idx]
    h = 1e-5
    H = np.zeros((Qb.shape[1],) * 2)
    for k in range(Qb.shape[1]):
        e = np.zeros(2 * A)
        e[idx] = h * Qb[:, k]
        H[:, k] = Qb.T @ (prob.grad(x + e) - prob.grad(x - e))[idx] / (2 * h)
    H = 0.5 * (H + H.T)
    B = prob.hessian(x)
    Br = Qb.T @ B[np.ix_(idx, idx)] @ Qb
    assert np.linalg.norm(Br - H) <= 0.1 * np.linalg.norm(H)
    ev = np.linalg.eigvalsh(H)
    assert ev.min() > 0 and ev.max() / ev.min() > 1e4  # badly conditioned: what the model is for
    rel = np.linalg.eigvals(np.linalg.solve(Br, H)).real
    assert 0.2 <= rel.min() and rel.max() <= 5.0


def test_box_form_hessian_is_the_chain_rule_of_the_inner_model():
    """``SimplexAsOrthant.hessian`` against the finite-difference Hessian of the box form of a problem
    whose inner Hessian is exact (a quadratic in ``w`` and ``u``), at a stationary point on the simplex
    (where the dropped second-derivative term of ``w = v/Σv`` vanishes), along directions orthogonal to
    ``v`` (the ray term is the model's own)."""
    rng = np.random.default_rng(4)
    m, k = 5, 3
    C = rng.normal(size=(m + k, m + k))
    C = C @ C.T + np.eye(m + k)
    w_star = rng.dirichlet(np.ones(m))
    x_star = np.r_[w_star, rng.normal(size=k)]

    class Quadratic:
        dim = m + k

        def value_and_grad(self, x):
            d = x - x_star
            return 0.5 * d @ C @ d, C @ d

        def hessian(self, x, *, free=None):
            return C.copy()

    box = SimplexAsOrthant(Quadratic(), m, (np.full(k, -10.0), np.full(k, 10.0)))
    z = box.from_inner(x_star)
    B = box.hessian(z)
    v = z[:m]
    h = 1e-6
    for _ in range(4):
        d = rng.normal(size=m + k)
        d[:m] -= (d[:m] @ v) / (v @ v) * v
        gp = box.inner.value_and_grad(box.to_inner(z + h * d))[1]
        gm = box.inner.value_and_grad(box.to_inner(z - h * d))[1]

        def to_box(g, zz):
            s = zz[:m].sum()
            w = zz[:m] / s
            return np.r_[(g[:m] - w @ g[:m]) / s, g[m:]]

        Hd = (to_box(gp, z + h * d) - to_box(gm, z - h * d)) / (2 * h)
        np.testing.assert_allclose(B @ d, Hd, rtol=1e-6, atol=1e-7 * np.abs(Hd).max())
    assert np.all(np.linalg.eigvalsh(B) > 0)  # the ray term makes the model positive definite


@pytest.mark.parametrize("family", ["gaussian-logit", "noise", "near-duplicate"])
def test_box_newton_reaches_tncs_optimum_on_the_joint_problem(family):
    """From the shared-γ fit's weights and γ, projected Newton with the Fisher model stops at a
    projected gradient below the target, at an objective no worse than TNC's (to 1e-10) on the same
    box form, in fewer evaluations (measured 44-77 against 141-298 at 800 × 12 × 8)."""
    from aggregators import RenyiPool

    lp, y = make_family(family, 800, 12, 8, seed=1)
    A = lp.shape[1]
    shared = RenyiPool(gamma="learn").fit(lp, y)
    x0 = np.r_[shared.weights_, np.full(A, np.log(shared.gamma_))]
    out = {}
    for solver in ("box_newton", "tnc"):
        p = RenyiProblem(lp, y, np.full(A, shared.gamma_), learn_gamma="per_agent", tol=1e-12)
        # Newton in [w, γ] (the pool's form: InGamma), TNC in [w, log γ] (its form before)
        inner = InGamma(p) if solver == "box_newton" else p
        box = SimplexAsOrthant(inner, A, inner.rest_bounds())
        start = inner.from_log(x0) if solver == "box_newton" else x0
        opts = JOINT_OPTIONS if solver == "box_newton" else {}
        r = minimize(box, solver, x0=box.from_inner(start), tol=1e-8, max_iter=5000, **opts)
        assert r.converged
        x = box.to_inner(r.x)
        out[solver] = (p.value(inner.to_log(x) if solver == "box_newton" else x), p.n_evals, r)
    assert out["box_newton"][0] <= out["tnc"][0] + 1e-10
    assert out["box_newton"][1] < out["tnc"][1]


def test_in_gamma_is_the_same_problem_in_gamma():
    """``InGamma``: the value at ``[w, γ]`` is the problem's at ``[w, log γ]``; its gradient matches central
    differences in γ; its model is ``S F S`` with ``S = diag(1, 1/γ)``."""
    lp, y = make_family("noise", 200, 5, 6, seed=5)
    A = lp.shape[1]
    p = RenyiProblem(lp, y, np.full(A, 0.3), learn_gamma="per_agent", tol=1e-14, adjoint_rtol=1e-14)
    q = InGamma(p)
    rng = np.random.default_rng(2)
    x = np.r_[rng.dirichlet(np.ones(A)), rng.uniform(0.05, 0.9, A)]
    f, g = q.value_and_grad(x)
    assert f == p.value(q.to_log(x))
    h = 1e-6
    for k in range(A, 2 * A):
        e = np.zeros(2 * A)
        e[k] = h
        assert abs((q.value(x + e) - q.value(x - e)) / (2 * h) - g[k]) < 1e-7 * max(1.0, abs(g[k]))
    s = np.r_[np.ones(A), 1.0 / x[A:]]
    np.testing.assert_allclose(q.hessian(x), p.hessian(q.to_log(x)) * np.outer(s, s), rtol=1e-12)
    np.testing.assert_allclose(q.to_log(q.from_log(np.r_[x[:A], np.log(x[A:])])), np.r_[x[:A], np.log(x[A:])])
