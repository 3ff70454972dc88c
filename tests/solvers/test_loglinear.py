"""ConditionalLogLinear: derivatives vs finite differences, storage, restriction, constants, sklearn."""

import numpy as np
import pytest

from solvers.problems.loglinear import ConditionalLogLinear
from solvers.simplex import project_simplex


def _log_probs(rng, N=120, A=7, K=5, scale=2.0):
    lp = rng.normal(scale=scale, size=(N, A, K))
    return lp - np.log(np.exp(lp).sum(axis=2, keepdims=True)), rng.integers(0, K, N)


def _fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_gradient_hessian_hvp_match_finite_differences(l2):
    rng = np.random.default_rng(0)
    lp, y = _log_probs(rng)
    pb = ConditionalLogLinear(np.swapaxes(lp, 1, 2), y, l2=l2)  # documented (n, K, dim) layout
    x = rng.normal(size=pb.dim)
    f, g = pb.value_and_grad(x)
    assert f == pytest.approx(pb.value(x), rel=1e-14)
    np.testing.assert_allclose(g, _fd_grad(pb.value, x), atol=1e-7)
    H = pb.hessian(x)
    np.testing.assert_allclose(
        H, np.array([(pb.grad(x + 1e-6 * e) - pb.grad(x - 1e-6 * e)) / 2e-6 for e in np.eye(pb.dim)]), atol=1e-6
    )
    v = rng.normal(size=pb.dim)
    np.testing.assert_allclose(pb.hvp(x, v), H @ v, atol=1e-12)
    assert np.linalg.eigvalsh(H).min() >= l2 - 1e-12  # convex (+ l2 strongly convex)


def test_value_is_the_negative_log_likelihood_of_the_log_pool():
    rng = np.random.default_rng(1)
    lp, y = _log_probs(rng)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    w = rng.dirichlet(np.ones(pb.dim))
    s = np.einsum("nak,a->nk", lp, w)
    agg = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    assert pb.value(w) == pytest.approx(-agg[np.arange(len(y)), y].mean(), rel=1e-13)
    np.testing.assert_allclose(pb.probs(w), np.exp(agg), atol=1e-14)
    # sparse weights take the sparse score path
    w2 = np.zeros(pb.dim)
    w2[[1, 4]] = [0.25, 0.75]
    s2 = 0.25 * lp[:, 1] + 0.75 * lp[:, 4]
    agg2 = s2 - np.log(np.exp(s2).sum(axis=1, keepdims=True))
    assert pb.value(w2) == pytest.approx(-agg2[np.arange(len(y)), y].mean(), rel=1e-13)


def test_term_gradients_average_to_the_gradient_and_match_fd():
    rng = np.random.default_rng(2)
    lp, y = _log_probs(rng, N=40)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    x = rng.normal(size=pb.dim)
    G = np.array([pb.term_grad(i, x) for i in range(pb.n_terms)])
    np.testing.assert_allclose(G.mean(axis=0), pb.grad(x), atol=1e-13)
    np.testing.assert_allclose(pb.term_grad(7, x), _fd_grad(lambda z: pb.term_value(7, z), x), atol=1e-7)


def test_features_view_labels_and_float32_storage():
    rng = np.random.default_rng(3)
    lp, y = _log_probs(rng)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    assert pb.features.shape == (lp.shape[0], lp.shape[2], lp.shape[1])
    assert np.shares_memory(pb.features, lp)  # the pool's input is used without a copy
    np.testing.assert_array_equal(pb.features[5, 2], lp[5, :, 2])
    np.testing.assert_array_equal(pb.labels, y)
    p32 = ConditionalLogLinear.from_log_probs(lp, y, dtype=np.float32)
    w = rng.dirichlet(np.ones(pb.dim))
    assert p32.value(w) == pytest.approx(pb.value(w), rel=1e-6)
    np.testing.assert_allclose(p32.grad(w), pb.grad(w), atol=1e-5)
    # restricted problems read the exact float64 source
    r32, r64 = p32.restrict([0, 3]), pb.restrict([0, 3])
    assert r32.value(np.array([0.4, 0.6])) == r64.value(np.array([0.4, 0.6]))


def test_restrict_agrees_with_the_full_problem():
    rng = np.random.default_rng(4)
    lp, y = _log_probs(rng)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    S = np.array([1, 2, 5])
    sub = pb.restrict(S)
    ws = rng.dirichlet(np.ones(3))
    w = np.zeros(pb.dim)
    w[S] = ws
    assert sub.value(ws) == pytest.approx(pb.value(w), rel=1e-14)
    np.testing.assert_allclose(sub.grad(ws), pb.grad(w)[S], atol=1e-14)
    np.testing.assert_allclose(sub.hessian(ws), pb.hessian(w)[np.ix_(S, S)], atol=1e-12)
    w2 = np.zeros(pb.dim)
    w2[[5, 1]] = [0.3, 0.7]
    np.testing.assert_allclose(sub.restrict([2, 0]).grad(np.array([0.3, 0.7])), pb.grad(w2)[[5, 1]], atol=1e-14)
    assert sub.features.shape == (lp.shape[0], lp.shape[2], 3)
    with pytest.raises(ValueError):
        pb.restrict([0, 99])


def test_smoothness_constants_bound_the_hessians():
    rng = np.random.default_rng(5)
    lp, y = _log_probs(rng, N=60)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    for _ in range(5):
        x = rng.normal(scale=3, size=pb.dim)
        assert np.linalg.eigvalsh(pb.hessian(x)).max() <= pb.L + 1e-12
        for i in range(0, 60, 7):
            Hi = pb.hessian(x, items=np.array([i]))
            assert np.linalg.eigvalsh(Hi).max() <= pb.L_max + 1e-12
    assert pb.mu is None and ConditionalLogLinear.from_log_probs(lp, y, constraint="none").constraint == "none"


def test_simplex_constraint_offers_projection():
    rng = np.random.default_rng(6)
    lp, y = _log_probs(rng)
    pb = ConditionalLogLinear.from_log_probs(lp, y)
    x = rng.normal(size=pb.dim)
    np.testing.assert_allclose(pb.project(x), project_simplex(x))
    np.testing.assert_allclose(pb.x0(), np.full(pb.dim, 1 / pb.dim))
    assert not hasattr(ConditionalLogLinear(np.swapaxes(lp, 1, 2), y), "project")


def test_unconstrained_multinomial_logistic_regression_matches_sklearn():
    sklearn = pytest.importorskip("sklearn.linear_model")
    import solvers

    rng = np.random.default_rng(7)
    N, p, K = 300, 4, 3
    X = rng.normal(size=(N, p))
    Wtrue = rng.normal(size=(K, p))
    logits = X @ Wtrue.T
    y = np.array([rng.choice(K, p=np.exp(l - l.max()) / np.exp(l - l.max()).sum()) for l in logits])
    C = 0.5
    # f_n(y) = e_y ⊗ x_n ; sklearn minimises C * sum loss + ½||W||², i.e. our mean loss with l2 = 1/(C N)
    feats = np.zeros((N, K, K * p))
    for k in range(K):
        feats[:, k, k * p : (k + 1) * p] = X
    pb = ConditionalLogLinear(feats, y, l2=1.0 / (C * N))
    res = solvers.minimize(pb, "newton", tol=1e-13)
    clf = sklearn.LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(res.x.reshape(K, p), clf.coef_, atol=1e-5)


def test_bad_inputs_raise_value_errors():
    rng = np.random.default_rng(8)
    lp, y = _log_probs(rng, N=10)
    with pytest.raises(ValueError, match="labels"):
        ConditionalLogLinear.from_log_probs(lp, np.full(10, 9))
    with pytest.raises(ValueError, match="labels"):
        ConditionalLogLinear.from_log_probs(lp, y[:5])
    bad = lp.copy()
    bad[0, 0, 0] = -np.inf
    with pytest.raises(ValueError, match="finite"):
        ConditionalLogLinear.from_log_probs(bad, y)
    with pytest.raises(ValueError, match="3-D"):
        ConditionalLogLinear(lp[0], y)
    with pytest.raises(ValueError, match="shape"):
        ConditionalLogLinear.from_log_probs(lp, y).value(np.ones(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_finite_features_rejected_huge_finite_accepted(bad, dtype):
    """The finiteness check reads one sum; a sum that overflows on huge finite entries is settled
    entry by entry (accepted), a NaN or infinity anywhere is rejected as before."""
    rng = np.random.default_rng(9)
    lp, y = _log_probs(rng, N=3000)
    huge = lp.copy()
    huge[::7, :, 0] = np.finfo(dtype).max / 2  # finite, but their sum overflows
    ConditionalLogLinear.from_log_probs(huge, y, dtype=dtype)
    huge[2999, 6, 4] = bad
    with pytest.raises(ValueError, match="finite"):
        ConditionalLogLinear.from_log_probs(huge, y, dtype=dtype)
