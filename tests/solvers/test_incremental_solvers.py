"""Every finite-sum solver reaches the optimum of every problem it supports.

References are independent of our code: scikit-learn (LogisticRegression newton-cholesky at
tol 1e-13, ElasticNet/Lasso coordinate descent at tol 1e-15, multinomial lbfgs), the closed form
of ridge, scipy L-BFGS on an objective written out here (smoothed hinge), cvxpy (hinge SVM).
Strongly convex problems: ``|x - x*| / |x*| <= 1e-8``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

import solvers
from solvers.problems.linear_models import LinearModel
from solvers.problems.softmax_regression import MultinomialLogistic

RTOL = 1e-8


def _data(n=120, d=8, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n, 3 * d, density=0.25, random_state=seed, format="csr") * 2.0
        X.data -= 0.5
        w = rng.normal(size=3 * d)
        y_lin = X @ w
    else:
        X = rng.normal(size=(n, d)) / np.sqrt(d) * 1.5
        w = rng.normal(size=d)
        y_lin = X @ w
    y_cls = np.where(y_lin + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    y_reg = y_lin + 0.1 * rng.normal(size=n)
    return X, y_cls, y_reg


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


def ref_logistic(X, y, l2):
    from sklearn.linear_model import LogisticRegression

    n = X.shape[0]
    clf = LogisticRegression(C=1.0 / (l2 * n), fit_intercept=False, solver="newton-cholesky", tol=1e-13, max_iter=500)
    clf.fit(_dense(X), y)
    return clf.coef_.ravel()


def ref_ridge(X, y, l2):
    A = _dense(X)
    n, d = A.shape
    return np.linalg.solve(A.T @ A / n + l2 * np.eye(d), A.T @ y / n)


def ref_enet(X, y, l1, l2):
    from sklearn.linear_model import ElasticNet

    alpha = l1 + l2
    m = ElasticNet(alpha=alpha, l1_ratio=l1 / alpha, fit_intercept=False, tol=1e-15, max_iter=200000)
    m.fit(_dense(X), y)
    return m.coef_


def smooth_hinge_objective(A, y, l2, smoothing):
    """The smoothed-hinge SVM objective and its gradient, written directly from the piecewise formula."""
    n = A.shape[0]

    def f(w):
        z = y * (A @ w)
        v = np.where(z >= 1, 0.0, np.where(z <= 1 - smoothing, 1 - z - smoothing / 2, (1 - z) ** 2 / (2 * smoothing)))
        dv = np.where(z >= 1, 0.0, np.where(z <= 1 - smoothing, -1.0, -(1 - z) / smoothing))
        return v.mean() + 0.5 * l2 * w @ w, A.T @ (dv * y) / n + l2 * w

    return f


def ref_smooth_hinge(X, y, l2, smoothing=1.0):
    A = _dense(X)
    n = A.shape[0]
    f = smooth_hinge_objective(A, y, l2, smoothing)
    r = so.minimize(
        f, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-14, "ftol": 0, "maxiter": 10000}
    )
    # polish with Newton steps on the (piecewise quadratic) objective
    w = r.x
    for _ in range(20):
        z = y * (A @ w)
        h = ((z < 1) & (z > 1 - smoothing)) / smoothing
        H = A.T @ (A * h[:, None]) / n + l2 * np.eye(A.shape[1])
        w = w - np.linalg.solve(H, f(w)[1])
    return w


PROBLEMS = {
    "logistic": lambda sparse: _mk("logistic", sparse, l2=0.05),
    "ridge": lambda sparse: _mk("squared", sparse, l2=0.05),
    "smooth_hinge": lambda sparse: _mk("smooth_hinge", sparse, l2=0.05),
}


def _mk(loss, sparse, l2=0.0, l1=0.0):
    X, yc, yr = _data(sparse=sparse)
    y = yr if loss == "squared" else yc
    p = LinearModel(X, y, loss, l2=l2, l1=l1)
    if loss == "logistic":
        ref = ref_logistic(X, y, l2)
    elif loss == "squared" and l1 == 0:
        ref = ref_ridge(X, y, l2)
    elif loss == "squared":
        ref = ref_enet(X, y, l1, l2)
    else:
        ref = ref_smooth_hinge(X, y, l2)
    return p, ref


SMOOTH_SOLVERS = [
    ("saga", {}),
    ("sag", {}),
    ("svrg", {}),
    ("s2gd", {}),
    ("finito", {}),
    ("miso", {"max_iter": 6000, "check_every": 25}),
    ("prox_finito", {}),
    ("sdca", {"variant": "exact"}),
    ("sdca", {"variant": "line_search"}),
    ("sdca", {"variant": "constant", "max_iter": 3000}),
    ("gd", {}),
    ("proximal_gradient", {}),
    ("heavy_ball", {}),
    ("nesterov", {}),
]


def _solve(p, name, opts):
    o = dict(opts)
    if name == "sdca":
        o.setdefault("max_iter", 400)
        o["tol"] = 0.0  # the duality gap cannot certify 1e-8 on x; run a fixed number of epochs
        if o["variant"] == "constant":
            o["max_iter"] = 3000
    else:
        o.setdefault("max_iter", 20000 if name in ("gd", "proximal_gradient", "heavy_ball", "nesterov") else 3000)
        o["tol"] = 1e-13
    return solvers.minimize(p, name, **o)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("problem", list(PROBLEMS))
@pytest.mark.parametrize("name,opts", SMOOTH_SOLVERS, ids=[f"{n}-{o.get('variant', '')}" for n, o in SMOOTH_SOLVERS])
def test_reaches_reference_optimum(problem, sparse, name, opts):
    p, ref = PROBLEMS[problem](sparse)
    r = _solve(p, name, opts)
    err = np.linalg.norm(r.x - ref) / np.linalg.norm(ref)
    assert err <= RTOL, (name, opts, r.message, err)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", ["saga", "sag", "svrg", "s2gd", "proximal_gradient", "nesterov", "heavy_ball", "sgd"])
def test_elastic_net_and_lasso(name, sparse):
    # elastic net: strongly convex, x to 1e-8; lasso: not strongly convex, objective to 1e-10 relative
    X, _, y = _data(sparse=sparse)
    enet = LinearModel(X, y, "squared", l1=0.02, l2=0.05)
    ref = ref_enet(X, y, 0.02, 0.05)
    lasso = LinearModel(X, y, "squared", l1=0.02)
    ref_l = ref_enet(X, y, 0.02, 1e-300)
    if name == "sgd":
        r = solvers.minimize(enet, "sgd", max_iter=100, seed=1)
        assert (r.fun - enet.value(ref)) / enet.value(ref) < 3e-3
        return
    kw = dict(tol=1e-13, max_iter=20000 if name in ("proximal_gradient", "nesterov", "heavy_ball") else 3000)
    r = solvers.minimize(enet, name, **kw)
    assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) <= RTOL, r.message
    assert np.count_nonzero(r.x) == np.count_nonzero(ref)
    r = solvers.minimize(lasso, name, **kw)
    fstar = lasso.value(ref_l)
    assert (r.fun - fstar) / fstar <= 1e-10, r.message


def test_hinge_svm_sdca_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    X, y, _ = _data(n=80, d=6, seed=3)
    l2 = 0.05
    p = LinearModel(X, y, "hinge", l2=l2)
    w = cp.Variable(X.shape[1])
    obj = cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / X.shape[0] + l2 / 2 * cp.sum_squares(w)
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    ref = w.value
    for variant in ("exact", "line_search"):
        r = solvers.minimize(p, "sdca", variant=variant, tol=1e-12, max_iter=5000)
        assert r.converged, r.message
        # the duality gap certifies |x - x*|^2 <= 2 gap / mu; compare with cvxpy at its accuracy
        assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) < 1e-5
        assert r.fun <= p.value(ref) + 1e-9
    # the smooth-only solvers refuse the hinge
    for name in ("saga", "svrg", "finito", "gd"):
        with pytest.raises(ValueError, match="smooth"):
            solvers.minimize(p, name)
    # SGD (subgradient) runs on the hinge
    r = solvers.minimize(p, "sgd", max_iter=200, average=True, schedule="inverse_sqrt")
    assert (r.fun - p.value(ref)) / p.value(ref) < 1e-2


def test_multinomial_against_sklearn():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(5)
    n, d, K = 60, 4, 3
    X = rng.normal(size=(n, d))
    y = rng.integers(0, K, size=n)
    l2 = 0.1
    clf = LogisticRegression(C=1 / (l2 * n), fit_intercept=False, tol=1e-14, max_iter=10000)
    clf.fit(X, y)
    ref = clf.coef_.T.ravel()  # (d, K) row-major
    p = MultinomialLogistic(X, y, l2=l2)
    for name, kw in [
        ("saga", {"max_iter": 400}),
        ("svrg", {"max_iter": 200}),
        ("finito", {"max_iter": 400}),
        ("nesterov", {"max_iter": 5000}),
        ("gd", {"max_iter": 20000}),
    ]:
        r = solvers.minimize(p, name, tol=1e-11, **kw)
        assert r.converged, (name, r.message)
        # sklearn's own solution is accurate to about 1e-7 at this tolerance
        assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) < 1e-6, name
        # saga/svrg/finito run the compiled multinomial kernels; the full-gradient solvers are NumPy
        assert r.extra.get("compiled", False) == (name in ("saga", "svrg", "finito"))


def test_sgd_decreasing_schedules_converge_sublinearly():
    p, ref = PROBLEMS["logistic"](False)
    fstar = p.value(ref)
    for schedule in ("inverse", "inverse_sqrt"):
        gaps = []
        for epochs in (5, 80):
            subs = [
                solvers.minimize(
                    p, "sgd", max_iter=epochs, seed=s, schedule=schedule, average=schedule == "inverse_sqrt"
                ).fun
                - fstar
                for s in range(4)
            ]
            gaps.append(np.mean(subs))
        assert gaps[1] < gaps[0] / 4, (schedule, gaps)
        assert gaps[1] / fstar < 1e-2, (schedule, gaps)


@pytest.mark.parametrize("name", ["saga", "svrg", "finito", "sdca", "sgd", "sag"])
def test_seeded_runs_are_reproducible(name):
    p, _ = PROBLEMS["logistic"](True)
    a = solvers.minimize(p, name, max_iter=3, tol=0.0, seed=7)
    b = solvers.minimize(p, name, max_iter=3, tol=0.0, seed=7)
    c = solvers.minimize(p, name, max_iter=3, tol=0.0, seed=8)
    assert np.array_equal(a.x, b.x)
    assert a.trace.objective == b.trace.objective
    assert not np.array_equal(a.x, c.x)  # another seed, another access order


@pytest.mark.parametrize("order", ["cyclic", "permuted", "random"])
@pytest.mark.parametrize("name", ["saga", "svrg", "sdca", "miso"])
def test_access_orders(order, name):
    p, ref = PROBLEMS["ridge"](False)
    kw = {"max_iter": 6000 if name == "miso" else 3000, "tol": 1e-11}
    if name == "miso":
        kw["check_every"] = 25
    if name == "sdca":
        kw["tol"] = 1e-14
    r = solvers.minimize(p, name, order=order, **kw)
    assert r.converged, r.message
    assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) < 1e-6


def test_dense_and_sparse_kernels_agree():
    X, y, _ = _data(sparse=True)
    ps = LinearModel(X, y, "logistic", l2=0.05, l1=0.01)
    pd_ = LinearModel(X.toarray(), y, "logistic", l2=0.05, l1=0.01)
    for name in ("saga", "sag", "svrg"):
        a = solvers.minimize(ps, name, max_iter=4, tol=0.0, seed=3)
        b = solvers.minimize(pd_, name, max_iter=4, tol=0.0, seed=3)
        # the just-in-time updates replay exactly the dense iterates (up to rounding)
        np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-12)


def test_trace_and_result_shape():
    p, _ = PROBLEMS["logistic"](False)
    r = solvers.minimize(p, "saga", max_iter=5, tol=0.0)
    assert r.method == "saga" and r.n_iter == 5 and not r.converged
    assert len(r.trace) == 6 and r.trace.passes[-1] == pytest.approx(6.0)
    assert np.all(np.diff(r.trace.seconds) >= 0)
    assert r.fun == pytest.approx(p.value(r.x))


def test_bad_inputs_raise_clear_errors():
    X, y, yr = _data()
    with pytest.raises(ValueError, match="loss"):
        LinearModel(X, y, "poisson")
    with pytest.raises(ValueError, match="y"):
        LinearModel(X, y[:-1])
    with pytest.raises(ValueError, match="l2"):
        LinearModel(X, y, l2=-1)
    with pytest.raises(ValueError, match="X"):
        LinearModel(np.full((3, 2), np.nan), [1, -1, 1])
    with pytest.raises(ValueError, match="two label"):
        LinearModel(X, np.arange(X.shape[0]), "logistic")
    p = LinearModel(X, y, l2=0.1)
    with pytest.raises(ValueError, match="order"):
        solvers.minimize(p, "saga", order="sorted")
    with pytest.raises(ValueError, match="step"):
        solvers.minimize(p, "saga", step=-1.0)
    with pytest.raises(ValueError, match="variant"):
        solvers.minimize(p, "sdca", variant="fast")
    with pytest.raises(ValueError, match="strongly convex"):
        solvers.minimize(LinearModel(X, y), "finito")
    with pytest.raises(ValueError, match="l1"):
        solvers.minimize(LinearModel(X, yr, "squared", l1=0.1, l2=0.1), "finito")


def test_problem_derivatives_match_finite_differences():
    for loss in ("logistic", "squared", "smooth_hinge"):
        for sparse in (False, True):
            X, yc, yr = _data(sparse=sparse, seed=11)
            p = LinearModel(X, yr if loss == "squared" else yc, loss, l2=0.03)
            x = np.random.default_rng(1).normal(size=p.dim) * 0.3
            g = p.grad(x)
            e = 1e-6
            fd = np.array([(p.value(x + e * v) - p.value(x - e * v)) / (2 * e) for v in np.eye(p.dim)])
            np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)
            tg = np.mean([p.term_grad(i, x) for i in range(p.n_terms)], axis=0)
            np.testing.assert_allclose(tg, g, rtol=1e-10, atol=1e-12)
            if loss != "smooth_hinge":
                H = p.hessian(x)
                Hfd = np.array([(p.grad(x + e * v) - p.grad(x - e * v)) / (2 * e) for v in np.eye(p.dim)])
                np.testing.assert_allclose(H, Hfd, rtol=1e-4, atol=1e-6)
            # L bounds the Hessian, L_max the term Hessians, mu the smallest eigenvalue
            if loss != "smooth_hinge":
                ev = np.linalg.eigvalsh(p.hessian(x))
                assert ev[-1] <= p.L * (1 + 1e-9) and ev[0] >= p.mu * (1 - 1e-9)


def test_auto_rule_for_linear_models():
    X, yc, yr = _data()
    Xs, ycs, _ = _data(sparse=True)
    assert solvers.choose(LinearModel(X, yc, "hinge", l2=0.1)) == "sdca"
    assert solvers.choose(LinearModel(X, yr, "squared", l1=0.1)) == "saga"
    assert solvers.choose(LinearModel(X, yc, "logistic", l2=0.1)) == "lbfgs"
    assert solvers.choose(LinearModel(Xs, ycs, "logistic", l2=0.1)) == "lbfgs"
    # and auto reaches the optimum, dense and sparse
    for sparse in (False, True):
        p, ref = PROBLEMS["logistic"](sparse)
        r = solvers.minimize(p, "auto", tol=1e-12)
        assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) <= RTOL
