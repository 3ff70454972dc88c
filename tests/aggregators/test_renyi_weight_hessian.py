"""The Rényi weight fit's curvature matrix and working-set Newton, against independent references.

References: the Jacobian of the fixed point by central differences (tolerance 1e-13 solves), the log
pool's exact Hessian in the γ → 0 limit, scipy's SLSQP on the same objective, and the full
(all-agent) evaluation for the support-only solve of sparse weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from aggregators.renyi import RenyiPool
from aggregators.renyi_fixed_point import solve_fixed_point
from aggregators.renyi_gradient import RenyiProblem, renyi_loglik_grad
from aggregators.renyi_weight_hessian import RenyiWeightProblem, renyi_weight_curvature
from solvers.registry import minimize
from tests.aggregators.test_renyi_gradient import data
from tests.references import slsqp_simplex


def fd_jacobian(lp, w, gamma, h=1e-6):
    """``J = d log P_agg / dw`` (n, K, A) by central differences."""
    n, A, K = lp.shape
    J = np.zeros((n, K, A))
    for k in range(A):
        e = np.zeros(A)
        e[k] = h
        up = solve_fixed_point(lp, w + e, gamma, tol=1e-14).log_q
        dn = solve_fixed_point(lp, w - e, gamma, tol=1e-14).log_q
        J[:, :, k] = (up - dn) / (2 * h)
    return J


@pytest.mark.parametrize(
    "shape, gamma",
    [((30, 6, 5), 0.3), ((30, 6, 5), "per_agent"), ((30, 3, 9), 0.5), ((30, 3, 9), "per_agent")],
    ids=["dense-shared", "dense-per-agent", "woodbury-shared", "woodbury-per-agent"],
)
def test_curvature_is_the_fisher_and_empirical_fisher_of_the_fixed_point(shape, gamma):
    n, A, K = shape
    lp, y = data(n, A, K, seed=3)
    rng = np.random.default_rng(4)
    g = rng.uniform(0.1, 0.8, A) if gamma == "per_agent" else np.full(A, gamma)
    w = rng.dirichlet(np.ones(A) * 2)
    c = rng.uniform(0.5, 2.0, n)
    c /= c.sum()
    log_q = solve_fixed_point(lp, w, g, tol=1e-14).log_q
    J = fd_jacobian(lp, w, g)
    F = np.einsum("n,nka,nk,nkb->ab", c, J, np.exp(log_q), J)
    Jy = J[np.arange(n), y]
    E = np.einsum("n,na,nb->ab", c, Jy, Jy)
    beta = float(np.dot(w / g / np.sum(w / g), g))
    P = np.eye(A) - 1.0 / A  # compare on the simplex's tangent space (the formula assumes Σ w = 1)
    for blend, ref in ((False, F), (True, (1 - beta) * F + beta * E)):
        G = renyi_weight_curvature(lp, y, w, g, log_q, c, blend=blend, chunk=7)
        np.testing.assert_allclose(P @ G @ P, P @ ref @ P, atol=1e-7 * np.abs(ref).max())
        assert np.linalg.eigvalsh(G).min() > -1e-12


def test_curvature_is_the_exact_hessian_of_the_linear_pool():
    """γ = 1: the pool is linear and the blend (β = 1) its exact Hessian, here against finite
    differences of the exact gradient."""
    lp, y = data(40, 5, 6, seed=10)
    w = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    g = np.ones(5)
    log_q = solve_fixed_point(lp, w, g, tol=1e-14).log_q
    G = renyi_weight_curvature(lp, y, w, g, log_q, np.full(40, 1 / 40))

    def grad(v):
        return renyi_loglik_grad(lp, y, v, g, tol=1e-14)[1]["w"]

    Hfd = np.zeros((5, 5))
    for k in range(5):
        e = np.zeros(5)
        e[k] = 1e-6
        Hfd[:, k] = -(grad(w + e) - grad(w - e)) / 2e-6
    P = np.eye(5) - 0.2
    np.testing.assert_allclose(P @ G @ P, P @ Hfd @ P, atol=1e-6 * np.abs(Hfd).max())


def test_curvature_tends_to_the_log_pool_hessian():
    """γ → 0: the pool is the log pool with weights w and the curvature (β → 0) its exact Hessian
    ``mean_n Cov_{q_n}[log P_n]`` (error O(γ))."""
    lp, y = data(50, 4, 7, seed=5)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    g = np.full(4, 1e-5)
    log_q = solve_fixed_point(lp, w, g, tol=1e-14).log_q
    G = renyi_weight_curvature(lp, y, w, g, log_q, np.full(50, 1 / 50))
    s = np.einsum("nak,a->nk", lp, w)
    q = np.exp(s - logsumexp(s, axis=1, keepdims=True))
    mu = np.einsum("nk,nak->na", q, lp)
    ref = np.einsum("nk,nak,nbk->ab", q, lp, lp) / 50 - np.einsum("na,nb->ab", mu, mu) / 50
    P = np.eye(4) - 0.25  # on the simplex's tangent space (the Rényi weights are renormalised)
    np.testing.assert_allclose(P @ G @ P, P @ ref @ P, atol=1e-4 * np.abs(ref).max())


def test_zero_weights_solve_on_the_support_and_keep_every_gradient():
    """Sparse weights take the support-only solve; aggregate and gradient (zero-weight agents
    included) equal the all-agent evaluation at weights 1e-300 in their place."""
    lp, y = data(60, 7, 9, seed=6)
    w = np.array([0.3, 0.0, 0.25, 0.0, 0.45, 0.0, 0.0])
    tiny = np.where(w > 0, w, 1e-300)
    for gam in (np.full(7, 0.2), np.linspace(0.05, 0.9, 7)):
        ll0, g0, lq0, _ = renyi_loglik_grad(lp, y, w, gam, tol=1e-13)
        ll1, g1, lq1, _ = renyi_loglik_grad(lp, y, tiny, gam, tol=1e-13)
        np.testing.assert_allclose(lq0, lq1, atol=1e-11)
        assert abs(ll0 - ll1) < 1e-11
        np.testing.assert_allclose(g0["w"], g1["w"], atol=1e-9)


def test_restricted_problem_is_the_full_problem_on_its_agents():
    lp, y = data(50, 8, 6, seed=7)
    full = RenyiWeightProblem(lp, y, 0.3, tol=1e-13)
    idx = np.array([1, 4, 5])
    x = np.zeros(8)
    x[idx] = [0.5, 0.2, 0.3]
    f, g = full.value_and_grad(x)
    sub = full.restrict(idx)
    fs, gs = sub.value_and_grad(x[idx])
    assert abs(f - fs) < 1e-12
    np.testing.assert_allclose(gs, g[idx], atol=1e-10)
    np.testing.assert_allclose(sub.hessian(x[idx]), full.hessian(x)[np.ix_(idx, idx)], atol=1e-10)
    assert full.sweeps >= sub.sweeps > 0  # the restricted solves count in the root's sweeps


def many_agents(n=150, A=50, K=6, seed=8):
    """Agents that see the truth at varied sharpness and noise (a sparse optimum: the working set
    has work to do); returns ``(log_probs, labels, rng)``."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n, K)) * 2
    y = np.array([rng.choice(K, p=np.exp(t - logsumexp(t))) for t in truth])
    sharp = rng.uniform(0.2, 2.0, A)
    lp = sharp[None, :, None] * truth[:, None, :] + rng.normal(size=(n, A, K)) * rng.uniform(0.5, 3, A)[None, :, None]
    lp -= logsumexp(lp, axis=2, keepdims=True)
    return lp, y, rng


@pytest.mark.parametrize("gamma", [0.1, 0.6, 1.0, "per_agent"])
def test_newton_reaches_the_scipy_optimum(gamma):
    """Working-set Newton with the blended curvature and SLSQP on the same objective agree."""
    lp, y, rng = many_agents()
    A = lp.shape[1]
    g = rng.uniform(0.1, 0.6, A) if gamma == "per_agent" else gamma
    prob = RenyiWeightProblem(lp, y, g, tol=1e-13)
    res = minimize(prob, "auto", tol=1e-12, max_iter=100)
    assert res.method == "newton" and res.converged
    assert res.extra.get("working_set_sizes")  # dim 50 > 40: the working set ran
    ref_prob = RenyiProblem(lp, y, g, tol=1e-13)
    sp = slsqp_simplex(ref_prob.value_and_grad, A)
    assert res.fun <= sp.fun + 1e-10
    assert abs(res.fun - sp.fun) < 1e-8
    np.testing.assert_allclose(res.x, sp.x, atol=2e-4)
    assert 0 < np.count_nonzero(res.x) < A  # a sparse optimum: the working set had work to do


def test_pool_auto_solver_by_what_is_learnt():
    lp, y = data(60, 6, 5, seed=9)
    pool = RenyiPool(gamma=0.3).fit(lp, y)
    assert pool.fit_result_.method == "newton" and pool.converged_
    spg = RenyiPool(gamma=0.3, solver="projected_gradient", tol=1e-10, max_iter=3000).fit(lp, y)
    assert abs(pool.loglik_ - spg.loglik_) < 1e-8
    sub = RenyiPool(gamma=0.3, tol=1e-10, solver_options={"hessian_sample": 0.5}).fit(lp, y)  # subsampled
    assert sub.converged_ and abs(sub.loglik_ - spg.loglik_) < 1e-8
    joint = RenyiPool(gamma="learn_per_agent", gamma_grid=[0.5, 0.2], max_iter=3)
    with pytest.warns(Warning):  # 3 iterations: unconverged, and says so
        joint.fit(lp, y)
    # weights with γ: projected Newton with the joint Fisher model on the box form (solvers.problems.orthant),
    # L-BFGS-B after it if it stops short of its budget
    assert joint.fit_result_.method in ("box_newton", "box_newton+lbfgsb") and not joint.converged_
    # with λ learnt too there is no curvature model: truncated Newton
    lam = RenyiPool(gamma=0.3, learn_lam=True, max_iter=3)
    with pytest.warns(Warning):
        lam.fit(lp, y)
    assert lam.fit_result_.method in ("tnc", "tnc+lbfgsb") and not lam.converged_


@pytest.mark.parametrize("n", [50, 14_000], ids=["sequential", "parallel"])
def test_support_rows_are_read_in_place_as_their_copy(n):
    """Zero weights at a shape the per-item kernel takes (3 active agents x 100 classes is past the
    block kernel's size): it reads the active agents' rows in place, and must give what solving on a
    copy of them gives; the weights-only adjoint (no γ part) gives the same weight gradient."""
    rng = np.random.default_rng(11)
    lp = rng.normal(size=(n, 7, 100)) * rng.uniform(0.3, 2.0, 7)[None, :, None]
    lp -= logsumexp(lp, axis=2, keepdims=True)
    y = rng.integers(0, 100, n)
    w = np.array([0.0, 0.5, 0.0, 0.2, 0.0, 0.3, 0.0])
    act = np.flatnonzero(w)
    for gam in (np.full(7, 0.4), np.linspace(0.05, 0.9, 7)):
        inplace = solve_fixed_point(lp, w, gam, tol=1e-12)
        copy = solve_fixed_point(np.ascontiguousarray(lp[:, act]), w[act], gam[act], tol=1e-12)
        assert inplace.all_converged
        np.testing.assert_allclose(inplace.log_q, copy.log_q, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(inplace.sweeps, copy.sweeps)
        if n > 1000:
            continue
        _, g_w, _, _ = renyi_loglik_grad(lp, y, w, gam, tol=1e-13, want=("w",))
        _, g_all, _, _ = renyi_loglik_grad(lp, y, w, gam, tol=1e-13, want=("w", "gamma"))
        np.testing.assert_allclose(g_w["w"], g_all["w"], rtol=1e-13, atol=1e-15)


def test_curvature_with_zero_weights_read_at_items_and_agents():
    """A zero weight (an agent outside ``H`` but with its own column of ``M``), read through ``items``
    and ``agents`` of a larger array: against the Fisher blend of the forward-difference Jacobian of
    the copied problem, and float32 products against float64."""
    lp_big, y_big = data(45, 9, 7, seed=12)
    items = np.arange(3, 45, 2)
    agents = np.array([0, 2, 3, 5, 8])
    lp, y = np.ascontiguousarray(lp_big[items][:, agents]), y_big[items]
    n, A, K = lp.shape
    w = np.array([0.3, 0.0, 0.45, 0.25, 0.0])
    g = np.array([0.2, 0.5, 0.35, 0.6, 0.3])
    c = np.full(n, 1.0 / n)
    log_q = solve_fixed_point(lp, w, g, tol=1e-14).log_q
    h = 1e-7
    J = np.zeros((n, K, A))
    for k in range(A):
        e = np.zeros(A)
        e[k] = h
        J[:, :, k] = (solve_fixed_point(lp, w + e, g, tol=1e-14).log_q - log_q) / h
    wp = w / g / np.sum(w / g)
    beta = float(wp @ g)
    F = np.einsum("n,nka,nk,nkb->ab", c, J, np.exp(log_q), J)
    Jy = J[np.arange(n), y]
    ref = (1 - beta) * F + beta * np.einsum("n,na,nb->ab", c, Jy, Jy)
    args = (lp_big, y, w, g, log_q, c)
    G = renyi_weight_curvature(*args, items=items, agents=agents, chunk=4)
    P = np.eye(A) - 1.0 / A
    np.testing.assert_allclose(P @ G @ P, P @ ref @ P, atol=2e-5 * np.abs(ref).max())
    np.testing.assert_allclose(G, renyi_weight_curvature(lp, y, w, g, log_q, c), rtol=1e-12, atol=1e-15)
    G32 = renyi_weight_curvature(*args, items=items, agents=agents, dtype=np.float32)
    np.testing.assert_allclose(G32, G, atol=1e-5 * np.abs(G).max())


def test_curvature_in_threads_is_the_serial_sum():
    """Chunks in 1, 2 or 3 threads (each its own matrix, summed in thread order): the same matrix to
    rounding, and a repeated call gives exactly the same one."""
    lp, y = data(90, 6, 8, seed=13)
    w = np.array([0.2, 0.0, 0.3, 0.1, 0.4, 0.0])
    g = np.full(6, 0.4)
    log_q = solve_fixed_point(lp, w, g, tol=1e-13).log_q
    args = (lp, y, w, g, log_q, np.full(90, 1 / 90))
    serial = renyi_weight_curvature(*args, chunk=8, threads=1)
    for t in (2, 3):
        G = renyi_weight_curvature(*args, chunk=8, threads=t)
        np.testing.assert_allclose(G, serial, rtol=1e-12, atol=1e-15 * np.abs(serial).max())
        np.testing.assert_array_equal(G, renyi_weight_curvature(*args, chunk=8, threads=t))


@pytest.mark.parametrize("shape", [(40, 9, 3), (40, 3, 9)], ids=["K<A", "K>A"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_pool_curvature_is_the_general_one_with_one_column_per_item(shape, dtype):
    """Every active agent at γ = 1 takes the short path (the item's own column only, H̃ diagonal);
    it equals the general K x K path at γ = 1 - 1e-12 (dense and Woodbury), with a zero weight, an
    agent at γ < 1 whose weight is zero, and rows and agents read at ``items``/``agents``."""
    n, A, K = shape
    lp, y = data(n, A, K, seed=12)
    rng = np.random.default_rng(13)
    w = rng.dirichlet(np.ones(A))
    w[1] = 0.0
    w /= w.sum()
    g = np.ones(A)
    g[1] = 0.4  # weight zero: not in the blend's β
    near = g.copy()
    near[near == 1.0] = 1.0 - 1e-12
    c = rng.uniform(0.5, 2.0, n)
    log_q = solve_fixed_point(lp, w, g, tol=1e-14).log_q
    G = renyi_weight_curvature(lp, y, w, g, log_q, c, chunk=7, dtype=dtype)
    R = renyi_weight_curvature(lp, y, w, near, log_q, c, chunk=7, dtype=dtype)
    tol = 1e-9 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(G, R, atol=tol * np.abs(R).max())
    assert np.abs(R).max() > 0
    items = np.array([2, 5, 11, 30, 31, 39])
    agents = np.array([0, 2, A - 1])
    Gi = renyi_weight_curvature(
        lp, y[items], w[agents] / w[agents].sum(), g[agents], log_q[items], c[items], items=items, agents=agents
    )
    Ri = renyi_weight_curvature(
        lp[items][:, agents], y[items], w[agents] / w[agents].sum(), near[agents], log_q[items], c[items]
    )
    np.testing.assert_allclose(Gi, Ri, atol=1e-9 * np.abs(Ri).max())


def test_at_gamma_one_the_warm_started_newton_forms_its_model_on_every_item(monkeypatch):
    """γ = 1 (``hessian_cheap``): after the subsample warm start, every model Hessian of the full
    problem is over every item (at γ = 0.5 over a sample), and the fit reaches SLSQP's optimum."""
    from solvers.methods import newton as nw

    lp, y = data(2400, 45, 4, seed=21)
    assert RenyiWeightProblem(lp, y, 1.0).hessian_cheap and not RenyiWeightProblem(lp, y, 0.5).hessian_cheap
    assert not RenyiWeightProblem(lp, y, np.r_[np.ones(44), 0.5]).hessian_cheap
    seen = []
    real = nw._hessian
    monkeypatch.setattr(
        nw, "_hessian", lambda p, x, items, dtype=None: (seen.append((p.n_terms, items)), real(p, x, items, dtype))[1]
    )
    monkeypatch.setattr(nw, "GROW_HESSIAN_ITEMS", 600)  # 2,400 items: a sample would be drawn
    for gamma, sampled in ((0.5, True), (1.0, False)):
        seen.clear()
        prob = RenyiWeightProblem(lp, y, gamma, tol=1e-13)
        res = minimize(prob, "newton", tol=1e-10, max_iter=100)
        assert res.converged and res.extra.get("warm_start")
        full = [items for n, items in seen if n == 2400]
        assert full and any(items is not None for items in full) == sampled, gamma
        sp = slsqp_simplex(RenyiProblem(lp, y, gamma, tol=1e-13).value_and_grad, 45)
        assert res.fun <= sp.fun + 1e-9 and abs(res.fun - sp.fun) < 1e-8 * max(1.0, abs(sp.fun))


@pytest.mark.parametrize("gamma", [0.1, 0.5, "per_agent"])
def test_plain_newton_skips_the_certifying_hessian_and_reaches_the_scipy_optimum(gamma, monkeypatch):
    """Few agents (plain Newton, every item's curvature): after a full step whose decrease the
    BFGS-corrected model predicted, that model certifies the end point instead of a new curvature
    matrix (``solvers.methods.newton``, validated model). Against SLSQP on the same objective: every
    fit ends within its tolerance of the optimum, and over the tolerances the rule forms fewer
    curvature matrices than with validation off, never more."""
    from solvers.methods import newton as nw

    lp, y = data(120, 8, 12, seed=5)
    rng = np.random.default_rng(6)
    g = rng.uniform(0.1, 0.7, 8) if gamma == "per_agent" else gamma
    sp = slsqp_simplex(RenyiProblem(lp, y, g, tol=1e-13).value_and_grad, 8)
    counts = []
    for ratio in (nw.VALIDATED_RATIO, (np.inf, np.inf)):
        monkeypatch.setattr(nw, "VALIDATED_RATIO", ratio)
        n_h = 0
        for tol in (1e-10, 1e-8, 1e-6):
            prob = RenyiWeightProblem(lp, y, g, tol=1e-13)
            real = prob.hessian

            def counted(x, _real=real, **kw):
                nonlocal n_h
                n_h += 1
                return _real(x, **kw)

            prob.hessian = counted
            res = minimize(prob, "newton", x0=np.full(8, 1 / 8), tol=tol, max_iter=100)
            assert res.converged and res.extra.get("working_set_sizes") is None  # the plain path
            assert res.fun - sp.fun <= tol * max(1.0, abs(sp.fun)) + 1e-12, (tol, res.fun - sp.fun)
        counts.append(n_h)
    assert counts[0] < counts[1], counts
