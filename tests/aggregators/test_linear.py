"""Linear opinion pool (seed 000 Eq. 2.4): EM, Newton, projected BFGS, SLSQP and cvxpy-SCS agree."""

import numpy as np
import pytest

from aggregators.linear import LinearPool, linear_pool
from aggregators.validation import PredictionError
from solvers import SolveResult
from solvers.problems.mixture import MixtureLikelihood
from tests.references import slsqp_simplex


def _agents(seed=0, N=400, A=5, K=4):
    """Agents of different quality around a latent truth, so the optimal weights are interior-ish."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(K), size=N)
    y = np.array([rng.choice(K, p=t) for t in truth])
    P = np.empty((N, A, K))
    for a in range(A):
        noise = rng.dirichlet(np.ones(K), size=N)
        mix = 0.3 + 0.6 * a / max(1, A - 1)
        P[:, a] = mix * truth + (1 - mix) * noise
    return np.log(P), y


def test_linear_pool_function_is_the_weighted_mixture():
    lp, _ = _agents()
    w = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    out = linear_pool(lp, w)
    expect = np.log(np.einsum("nak,a->nk", np.exp(lp), w))
    np.testing.assert_allclose(out, expect, atol=1e-12)
    with pytest.raises(PredictionError, match="sum to one"):
        linear_pool(lp, np.ones(5))
    with pytest.raises(PredictionError, match="one weight per agent"):
        linear_pool(lp, np.ones(3) / 3)
    with pytest.raises(PredictionError, match="non-negative"):
        linear_pool(lp, np.array([1.5, -0.5, 0, 0, 0]))


def test_em_newton_lbfgs_slsqp_and_cvxpy_agree():
    cp = pytest.importorskip("cvxpy")
    lp, y = _agents()
    fits = {s: LinearPool(solver=s, tol=1e-12).fit(lp, y) for s in ("em", "newton", "lbfgs")}
    pb = MixtureLikelihood.from_log_probs(lp, y)
    A = pb.dim
    sl = slsqp_simplex(pb.value_and_grad, A)
    Q = np.exp(lp[np.arange(len(y)), :, y])
    w = cp.Variable(A)
    prob = cp.Problem(cp.Maximize(cp.sum(cp.log(Q @ w)) / len(y)), [w >= 0, cp.sum(w) == 1])
    prob.solve(solver=cp.SCS, eps=1e-9, max_iters=200_000)  # Clarabel fails on this problem (notes)
    for name, pool in fits.items():
        assert isinstance(pool.fit_result_, SolveResult) and pool.fit_result_.method == name
        np.testing.assert_allclose(pool.weights_, fits["em"].weights_, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(pool.weights_, sl.x, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(pool.weights_, w.value, atol=1e-6, err_msg=name)
        assert -pool.fit_result_.fun == pytest.approx(prob.value, abs=1e-8)
        assert pool.n_iter_ == pool.fit_result_.n_iter
    # the pool's score is its mean log-likelihood: minus the fitted objective
    assert fits["em"].score(lp, y) == pytest.approx(-fits["em"].fit_result_.fun, abs=1e-12)


def test_em_is_monotone_and_reaches_a_kkt_point():
    lp, y = _agents(seed=1, A=8)
    pool = LinearPool(solver="em", tol=1e-10, solver_options={"accelerate": False}).fit(lp, y)
    obj = np.array(pool.fit_result_.trace.objective)
    assert np.all(np.diff(obj) <= 1e-13)  # EM never decreases the likelihood
    pb = MixtureLikelihood.from_log_probs(lp, y)
    g = pb.grad(pool.weights_)
    nu = g @ pool.weights_
    assert np.all(g >= nu - 1e-8)  # KKT: no coordinate can improve


def test_zero_probabilities_are_legal_and_impossible_items_are_reported():
    lp, y = _agents(seed=2)
    lp = lp.copy()
    with np.errstate(divide="ignore"):
        lp[0, 1, :] = np.log([0.5, 0.5, 0.0, 0.0]) if y[0] in (0, 1) else np.log([0.0, 0.0, 0.5, 0.5])
    pool = LinearPool().fit(lp, y)
    assert np.isfinite(pool.score(lp, y))
    bad = lp.copy()
    bad[3, :, y[3]] = -np.inf
    bad[3] = np.where(np.isneginf(bad[3]), -np.inf, 0.0)
    with pytest.raises(PredictionError):
        LinearPool().fit(bad, y)


def test_progress_is_reported_and_unknown_solver_is_rejected():
    lp, y = _agents(seed=3)
    seen = []
    LinearPool().fit(lp, y, progress=seen.append)
    assert seen and seen[-1] == 1.0
    with pytest.raises(ValueError, match="unknown solver"):
        LinearPool(solver="nope").fit(lp, y)
    out = LinearPool().fit(lp, y).predict(lp)
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, atol=1e-12)


def test_the_default_is_newton_and_drops_agents_exactly_where_em_creeps():
    """Session 14: ``LinearPool()`` fits by Newton (``solver="auto"``). On many agents, most of them
    dropped at the optimum and some giving probability 0 to labels, it reaches SLSQP's optimum (an
    independent solver) and an objective no higher than EM's, with the dropped agents at exactly 0,
    in a handful of iterations where EM takes hundreds."""
    rng = np.random.default_rng(4)
    N, A, K = 600, 40, 6
    truth = rng.dirichlet(np.ones(K), size=N)
    y = np.array([rng.choice(K, p=t) for t in truth])
    mix = np.where(np.arange(A) < 4, 0.8, 0.05)  # four informative agents, 36 near-noise ones
    P = mix[None, :, None] * truth[:, None, :] + (1 - mix[None, :, None]) * rng.dirichlet(np.ones(K), size=(N, A))
    P[:, 4:8] *= rng.random((N, 4, K)) > 0.2  # zeros: some agents rule some labels out
    P /= P.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore"):
        lp = np.log(P)
    new = LinearPool().fit(lp, y)
    em = LinearPool(solver="em").fit(lp, y)
    pb = MixtureLikelihood.from_log_probs(lp, y)
    r = slsqp_simplex(lambda w: (pb.value(np.clip(w, 0, None)), pb.grad(np.clip(w, 0, None))), A)
    ref = np.clip(r.x, 0, None) / np.clip(r.x, 0, None).sum()
    assert new.fit_result_.method == "newton" and new.fit_result_.converged
    assert pb.value(new.weights_) <= pb.value(em.weights_) + 1e-12
    assert pb.value(new.weights_) <= pb.value(ref) + 1e-10
    np.testing.assert_allclose(new.weights_, ref, atol=1e-6)  # measured 3.7e-8: SLSQP stops at ftol
    dropped = new.weights_ == 0.0
    assert dropped.sum() >= A // 2 and np.all(em.weights_[dropped] < 1e-3)
    assert new.n_iter_ < 30 < em.n_iter_
