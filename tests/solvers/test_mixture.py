"""MixtureLikelihood: derivatives vs finite differences, reduction to the true-label matrix, errors."""

import numpy as np
import pytest

from solvers.problems.mixture import MixtureLikelihood


def _problem(seed=0, N=200, A=6, K=4):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(K) * 0.7, size=(N, A))
    y = rng.integers(0, K, N)
    return np.log(P), y, rng


def test_value_is_the_linear_pool_nll_and_derivatives_match_fd():
    lp, y, rng = _problem()
    pb = MixtureLikelihood.from_log_probs(lp, y)
    w = rng.dirichlet(np.ones(pb.dim))
    pool = np.einsum("nak,a->nk", np.exp(lp), w)
    assert pb.value(w) == pytest.approx(-np.log(pool[np.arange(len(y)), y]).mean(), rel=1e-13)
    eps = 1e-6
    fd = np.array([(pb.value(w + eps * e) - pb.value(w - eps * e)) / (2 * eps) for e in np.eye(pb.dim)])
    np.testing.assert_allclose(pb.grad(w), fd, atol=1e-7)
    H = pb.hessian(w)
    fdH = np.array([(pb.grad(w + eps * e) - pb.grad(w - eps * e)) / (2 * eps) for e in np.eye(pb.dim)])
    np.testing.assert_allclose(H, fdH, atol=1e-5)
    v = rng.normal(size=pb.dim)
    np.testing.assert_allclose(pb.hvp(w, v), H @ v, atol=1e-12)
    G = np.array([pb.term_grad(i, w) for i in range(pb.n_terms)])
    # term gradients are in the row-scaled units; their mean is the gradient
    np.testing.assert_allclose(G.mean(axis=0), pb.grad(w), atol=1e-12)
    # <grad, w> = -1 on the simplex, so the FW gap is max(-grad) - 1
    assert pb.grad(w) @ w == pytest.approx(-1.0, abs=1e-12)


def test_responsibilities_and_restriction():
    lp, y, rng = _problem(1)
    pb = MixtureLikelihood.from_log_probs(lp, y)
    w = rng.dirichlet(np.ones(pb.dim))
    R = pb.responsibilities(w)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-13)
    S = np.array([0, 2, 3])
    sub = pb.restrict(S)
    ws = rng.dirichlet(np.ones(3))
    full = np.zeros(pb.dim)
    full[S] = ws
    # independent direct formula from the raw probabilities: -mean_n log sum_{i in S} w_i P_i(y_n | n)
    P_true = np.exp(lp[np.arange(len(y)), :, y])  # (n_items, n_agents)
    mix = P_true[:, S] @ ws
    assert sub.value(ws) == pytest.approx(-np.mean(np.log(mix)), rel=1e-13)
    assert sub.value(ws) == pytest.approx(pb.value(full), rel=1e-13)
    # gradient of the restricted problem: -mean_n P_S(y_n|n) / mix_n, and against finite differences
    np.testing.assert_allclose(sub.grad(ws), -(P_true[:, S] / mix[:, None]).mean(axis=0), rtol=1e-12)
    eps = 1e-6
    fd = np.array([(sub.value(ws + eps * e) - sub.value(ws - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(sub.grad(ws), fd, atol=1e-7)
    v, g = sub.value_and_grad(ws)
    assert v == sub.value(ws)
    np.testing.assert_allclose(g, sub.grad(ws), rtol=0, atol=0)


def test_tiny_probabilities_do_not_underflow_and_errors_are_clear():
    Q = np.array([[1e-300, 2e-300], [0.5, 0.1]])
    pb = MixtureLikelihood(Q)
    w = np.array([0.5, 0.5])
    expect = -np.mean(np.log([1.5e-300, 0.3]))
    assert pb.value(w) == pytest.approx(expect, rel=1e-13)
    with pytest.raises(ValueError, match="item 1"):
        MixtureLikelihood(np.array([[0.2, 0.1], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="non-negative"):
        MixtureLikelihood(np.array([[0.2, -0.1]]))
    assert pb.value(np.array([0.0, 0.0])) == np.inf


def test_subsampled_hessian_and_large_working_set_newton():
    import solvers

    rng = np.random.default_rng(5)
    Q = rng.dirichlet(np.ones(50) * 0.3, size=9000)  # > 8,000 items: Newton subsamples the Hessian
    pb = MixtureLikelihood(Q)
    w = rng.dirichlet(np.ones(50))
    items = np.array([3, 10, 500])
    B = pb.Q[items] / (pb.Q[items] @ w)[:, None]
    np.testing.assert_allclose(pb.hessian(w, items=items), B.T @ B / 3, rtol=1e-12)
    a = solvers.minimize(pb, "newton", tol=1e-12)
    b = solvers.minimize(pb, "newton", tol=1e-12, working_set=False)
    assert a.converged and abs(a.fun - b.fun) <= 1e-11
