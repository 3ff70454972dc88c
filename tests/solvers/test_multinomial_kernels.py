"""Compiled multinomial (softmax) logistic kernels (:mod:`solvers.kernels_incremental.multinomial`).

- Each compiled solver reaches the optimum of a small L2 problem (dense and CSR) to 1e-8 relative
  against scikit-learn's multinomial ``newton-cholesky`` at tol 1e-15 (``C = 1/(l2 n)``, no intercept;
  with l2 > 0 the optimum is unique, so sklearn's K-class parametrisation is ours).
- With an l1 term (SAGA, SVRG, S2GD, SGD-free): against scipy L-BFGS-B on the split form
  ``W = U - V, U, V >= 0`` of an objective written out here, and certified by the minimum-norm
  subgradient of that independent objective.
- The compiled path and the generic Python path (the same problem with ``multinomial_terms`` hidden)
  give the same iterates for a few epochs with the same seed; SAGA/SAG with l2 > 0 (explicit-L2 form,
  not the generic path's table of full gradients) against a Python loop written here.
- The just-in-time sparse updates reproduce the dense iterates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from scipy.special import logsumexp

import solvers
from solvers.problems.softmax_regression import MultinomialLogistic

N, D, K = 90, 7, 4


def _data(sparse=False, seed=0, n=N, d=D, k=K):
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n, 3 * d, density=0.3, random_state=seed, format="csr")
        X.data = rng.normal(size=X.nnz)
        Wt = rng.normal(size=(3 * d, k))
    else:
        X = rng.normal(size=(n, d)) / np.sqrt(d) * 2.0
        Wt = rng.normal(size=(d, k))
    y = np.argmax(X @ Wt + 0.7 * rng.gumbel(size=(n, k)), axis=1)
    return X, y


class GenericMultinomial(MultinomialLogistic):
    """The same problem with the compiled path hidden: the drivers fall back to ``term_grad`` in Python."""

    multinomial_terms = None


def _obj(X, y, l2, l1, k):
    """The objective written out independently of solvers/: mean softmax loss + ridge + l1."""
    A = X.toarray() if sp.issparse(X) else np.asarray(X)
    n, d = A.shape
    Y = np.eye(k)[y]

    def f(w):
        W = w.reshape(d, k)
        Z = A @ W
        lse = logsumexp(Z, axis=1)
        P = np.exp(Z - lse[:, None])
        v = np.mean(lse - (Z * Y).sum(1)) + 0.5 * l2 * w @ w + l1 * np.abs(w).sum()
        return v, (A.T @ (P - Y) / n + l2 * W).ravel()

    return f


def ref_sklearn(X, y, l2):
    from sklearn.linear_model import LogisticRegression

    n = X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(
            C=1.0 / (l2 * n), fit_intercept=False, solver="newton-cholesky", tol=1e-15, max_iter=1000
        )
        clf.fit(X.toarray() if sp.issparse(X) else X, y)
    return clf.coef_.T.ravel()  # (d, K) row-major


def ref_l1(X, y, l2, l1, k):
    f = _obj(X, y, l2, 0.0, k)
    dim = X.shape[1] * k

    def split(z):
        u, v = z[:dim], z[dim:]
        val, g = f(u - v)
        return val + l1 * z.sum(), np.concatenate([g + l1, -g + l1])

    r = so.minimize(
        split,
        np.zeros(2 * dim),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None)] * (2 * dim),
        options={"maxiter": 20000, "gtol": 1e-14, "ftol": 0.0, "maxcor": 30},
    )
    return r.x[:dim] - r.x[dim:]


def min_norm_subgrad(X, y, l2, l1, k, w):
    _, g = _obj(X, y, l2, 0.0, k)(w)
    r = np.where(w != 0, g + l1 * np.sign(w), np.sign(g) * np.maximum(np.abs(g) - l1, 0.0))
    return float(np.linalg.norm(r))


COMPILED = [
    ("saga", {"max_iter": 500}),
    ("sag", {"max_iter": 800}),
    ("svrg", {"max_iter": 300}),
    ("s2gd", {"max_iter": 400}),
    ("finito", {"max_iter": 500}),
    ("miso", {"max_iter": 10000, "check_every": 25, "tol": 1e-11}),
]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name,opts", COMPILED, ids=[c[0] for c in COMPILED])
def test_compiled_solvers_reach_sklearn_optimum(name, opts, sparse):
    X, y = _data(sparse)
    l2 = 0.05
    ref = ref_sklearn(X, y, l2)
    p = MultinomialLogistic(X, y, l2=l2)
    r = solvers.minimize(p, name, **{"tol": 1e-12, **opts})
    assert r.extra["compiled"] is True
    assert r.converged, (name, r.message)
    assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) <= 1e-8, name
    fref = _obj(X, y, l2, 0.0, p.K)(ref)[0]
    assert abs(r.fun - fref) / abs(fref) <= 1e-12


def test_sgd_compiled_approaches_optimum():
    X, y = _data()
    l2 = 0.05
    ref = ref_sklearn(X, y, l2)
    p = MultinomialLogistic(X, y, l2=l2)
    fref = p.value(ref)
    gaps = [np.mean([solvers.minimize(p, "sgd", max_iter=e, seed=s).fun - fref for s in range(3)]) for e in (3, 60)]
    assert gaps[1] < gaps[0] / 5 and gaps[1] / fref < 1e-2, gaps


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", ["saga", "svrg", "s2gd"])
def test_l1_prox_methods_against_lbfgsb_split(name, sparse):
    X, y = _data(sparse, seed=1)
    l2, l1 = 0.02, 0.01
    p = MultinomialLogistic(X, y, l2=l2, l1=l1)
    ref = ref_l1(X, y, l2, l1, p.K)
    r = solvers.minimize(p, name, tol=1e-12, max_iter=3000)
    assert r.extra["compiled"] is True
    assert r.converged, r.message
    assert np.sum(r.x == 0) > 0  # the l1 term produces exact zeros
    # certificate on the independent objective: |x - x*| <= |min-norm subgradient| / mu
    assert min_norm_subgrad(X, y, l2, l1, p.K, r.x) / l2 <= 1e-8 * np.linalg.norm(r.x)
    assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) <= 1e-6  # L-BFGS-B's own accuracy
    f = _obj(X, y, l2, l1, p.K)
    assert f(r.x)[0] <= f(ref)[0] + 1e-13


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize(
    "name,l2,l1,opts",
    [
        ("saga", 0.0, 0.0, {}),
        ("saga", 0.0, 0.02, {"order": "permuted"}),
        ("sag", 0.0, 0.0, {}),
        ("svrg", 0.05, 0.02, {}),
        ("svrg", 0.05, 0.0, {"snapshot": "random"}),
        ("s2gd", 0.05, 0.0, {}),
        ("sgd", 0.05, 0.01, {"schedule": "inverse_sqrt"}),
        ("sgd", 0.05, 0.0, {"average": True}),
        ("finito", 0.05, 0.0, {}),
        ("miso", 0.05, 0.0, {}),
    ],
)
def test_compiled_equals_generic_python_path(name, l2, l1, opts, sparse):
    X, y = _data(sparse, seed=2, n=40)
    pc = MultinomialLogistic(X, y, l2=l2, l1=l1)
    pg = GenericMultinomial(X, y, l2=l2, l1=l1)
    kw = {"max_iter": 3, "tol": 0.0, "seed": 11, **opts}
    if name in ("svrg", "s2gd"):
        kw["max_iter"] = 2
    a = solvers.minimize(pc, name, **kw)
    b = solvers.minimize(pg, name, **kw)
    assert a.extra["compiled"] is True and b.extra["compiled"] is False
    assert not np.allclose(a.x, 0)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(a.trace.objective, b.trace.objective, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name,theta_of_n", [("saga", lambda n: 1.0), ("sag", lambda n: 1.0 / n)])
def test_table_methods_with_ridge_against_python_loop(name, theta_of_n, sparse):
    """SAGA/SAG in the explicit-L2 form (seed 001 L1522), written out here with the ridge outside the table."""
    X, y = _data(sparse, seed=3, n=30)
    l2, l1, step, epochs, seed = 0.1, 0.01, 0.2, 3, 4
    p = MultinomialLogistic(X, y, l2=l2, l1=l1)
    r = solvers.minimize(p, name, step=step, max_iter=epochs, tol=0.0, seed=seed)
    A = X.toarray() if sparse else X
    n, d = A.shape
    theta = theta_of_n(n)
    Y = np.eye(p.K)[y]

    def s_of(i, w):
        z = A[i] @ w.reshape(d, p.K)
        e = np.exp(z - z.max())
        return e / e.sum() - Y[i]

    w = np.zeros(d * p.K)
    table = np.array([s_of(i, w) for i in range(n)])
    gbar = (A.T @ table).ravel() / n
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for j in rng.integers(0, n, size=n):
            s = s_of(j, w)
            delta = s - table[j]
            v = (1 - step * l2) * w - step * (theta * np.outer(A[j], delta).ravel() + gbar)
            w = np.sign(v) * np.maximum(np.abs(v) - step * l1, 0.0)
            gbar += np.outer(A[j], delta).ravel() / n
            table[j] = s
    np.testing.assert_allclose(r.x, w, rtol=1e-10, atol=1e-13)


_LAZY = [("saga", {}), ("sag", {}), ("svrg", {}), ("s2gd", {}), ("svrg", {"snapshot": "random"}), ("sgd", {})]


@pytest.mark.parametrize(
    "name,opts,l1", [(n, o, l1) for n, o in _LAZY for l1 in (0.0, 0.02)] + [("finito", {}, 0.0)]
)  # finito has no prox: no l1 case
def test_lazy_sparse_updates_equal_dense(name, opts, l1):
    X, y = _data(True, seed=5, n=60)
    ps = MultinomialLogistic(X, y, l2=0.05, l1=l1)
    pd_ = MultinomialLogistic(X.toarray(), y, l2=0.05, l1=l1)
    a = solvers.minimize(ps, name, max_iter=4, tol=0.0, seed=3, **opts)
    b = solvers.minimize(pd_, name, max_iter=4, tol=0.0, seed=3, **opts)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-12)


def test_dual_and_term_prox_methods_apply_to_ridge_models_only():
    X, y = _data()
    names = solvers.available(MultinomialLogistic(X, y, l2=0.1))
    assert {"saga", "sag", "svrg", "s2gd", "sgd", "finito", "miso", "sdca", "prox_finito"} <= set(names)
    names = solvers.available(MultinomialLogistic(X, y, l2=0.1, l1=0.01))
    assert "sdca" not in names and "prox_finito" not in names


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_auto_rule_for_multinomial(sparse):
    X, y = _data(sparse)
    p = MultinomialLogistic(X, y, l2=0.05)
    assert solvers.choose(p) == "lbfgs"
    ref = ref_sklearn(X, y, 0.05)
    r = solvers.minimize(p, "auto", tol=1e-12)
    assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) <= 1e-8
    q = MultinomialLogistic(X, y, l2=0.02, l1=0.01)
    assert solvers.choose(q) == "saga"  # the prox method: lbfgs would ignore the l1 term
    r = solvers.minimize(q, "auto", tol=1e-12, max_iter=3000)
    assert r.converged and min_norm_subgrad(X, y, 0.02, 0.01, q.K, r.x) / 0.02 <= 1e-8 * np.linalg.norm(r.x)


def test_auto_rule_picks_lbfgs_without_l1_dense_or_sparse():
    rng = np.random.default_rng(0)
    n, d, k = 12000, 5, 3
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n)
    for p in (
        MultinomialLogistic(X, y, l2=1.0 / n),
        MultinomialLogistic(X, y, l2=1e-3 / n),
        MultinomialLogistic(sp.csr_matrix(X), y, l2=1.0 / n),
    ):
        assert solvers.choose(p) == "lbfgs"


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("variant", ["line_search", "constant"])
def test_sdca_multinomial_reaches_sklearn_optimum_with_a_duality_gap_certificate(sparse, variant):
    """SDCA with K-dimensional duals (seed 001 section 2.3.2): the duality gap certifies the answer
    (gap <= 1e-12 implies |W - W*|^2 <= 2 gap / mu), the objective matches scikit-learn's
    newton-cholesky optimum, and the duals are the gradients at the optimum (softmax - one-hot)."""
    X, y = _data(sparse, seed=11)
    l2 = 0.05
    p = MultinomialLogistic(X, y, l2=l2)
    assert "sdca" in solvers.available(p)
    r = solvers.minimize(p, "sdca", variant=variant, tol=1e-12, max_iter=3000, seed=2)
    assert r.converged and r.extra["duality_gap"] <= 1e-12
    ref = ref_sklearn(X, y, l2)
    f_ref = p.value(ref)
    assert abs(r.fun - f_ref) <= 1e-12 * abs(f_ref)
    assert np.linalg.norm(r.x - ref) <= np.sqrt(2e-12 / l2) + 1e-9
    A = X.toarray() if sparse else X
    Z = A @ ref.reshape(-1, p.K)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(y)), y] -= 1.0
    np.testing.assert_allclose(r.extra["dual"], P, atol=1e-4)


def test_sdca_multinomial_refuses_the_exact_step_and_needs_a_ridge():
    X, y = _data(False, seed=12)
    with pytest.raises(ValueError, match="L472"):
        solvers.minimize(MultinomialLogistic(X, y, l2=0.05), "sdca", variant="exact")
    assert "sdca" not in solvers.available(MultinomialLogistic(X, y, l2=0.05, l1=0.01))
    assert "sdca" not in solvers.available(MultinomialLogistic(X, y, l2=0.0))


def test_softmax_loss_prox_against_scipy():
    """The K-dimensional prox of one term, against a direct BFGS solve of its definition."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    from solvers.kernels_incremental.multinomial_sdca import softmax_loss_prox

    rng = np.random.default_rng(3)
    for K, t in ((3, 0.01), (5, 1.0), (7, 40.0), (4, 1e3)):
        v = rng.normal(size=K) * 5
        y = int(rng.integers(K))
        u = np.empty(K)
        softmax_loss_prox(v, t, y, u)

        def f(w):
            return t * (logsumexp(w) - w[y]) + 0.5 * np.sum((w - v) ** 2)

        onehot = np.zeros(K)
        onehot[y] = 1.0

        def g(w):
            return t * (np.exp(w - logsumexp(w)) - onehot) + (w - v)

        def h(w):
            q = np.exp(w - logsumexp(w))
            return t * (np.diag(q) - np.outer(q, q)) + np.eye(K)

        # an exact-Hessian trust-region solve of the definition: BFGS with finite-difference
        # gradients stops at |grad| ~ 1e-5 here ("precision loss") on recent SciPy releases
        ref = minimize(f, v, jac=g, hess=h, method="trust-exact", options={"gtol": 1e-12}).x
        np.testing.assert_allclose(u, ref, atol=1e-6 * max(1.0, np.abs(ref).max()))
        p = np.exp(u - logsumexp(u))
        e = np.zeros(K)
        e[y] = 1.0
        np.testing.assert_allclose(u + t * (p - e), v, atol=1e-12 * (1 + t))  # the optimality condition


@pytest.mark.parametrize("sparse", [False, True])
def test_prox_finito_multinomial_reaches_sklearn_optimum(sparse):
    X, y = _data(sparse, seed=13)
    l2 = 0.05
    p = MultinomialLogistic(X, y, l2=l2)
    r = solvers.minimize(p, "prox_finito", tol=1e-12, max_iter=3000, seed=1)
    ref = ref_sklearn(X, y, l2)
    assert r.converged
    assert np.linalg.norm(r.x - ref) <= 1e-8 * np.linalg.norm(ref)
