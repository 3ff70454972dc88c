"""The scaled sparse kernels (x = beta w, running-sum lazy steps; seed 001 L1525) against the
closed-form just-in-time kernels and a dense reference epoch: same iterates up to rounding."""

import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from solvers.kernels_incremental.losses import LOGISTIC, SQUARED, all_derivs
from solvers.kernels_incremental.variance_reduced import (
    geometric_tables,
    saga_dense_epoch,
    saga_sparse_epoch,
    saga_sparse_epoch_scaled,
    svrg_sparse_inner,
    svrg_sparse_inner_scaled,
    use_scaled,
)
from solvers.problems.linear_models import LinearModel


def _problem(loss, n=300, d=40, seed=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, random_state=seed, format="csr") * 3.0
    y = np.sign(rng.normal(size=n)) if loss == "logistic" else rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("loss_name,loss", [("logistic", LOGISTIC), ("squared", SQUARED)])
@pytest.mark.parametrize("theta_kind", ["saga", "sag"])
@pytest.mark.parametrize("l2,step_scale", [(0.01, None), (0.5, 0.5)], ids=["no-rescale", "rescales"])
def test_saga_scaled_matches_closed_form_and_dense(loss_name, loss, theta_kind, l2, step_scale):
    X, y = _problem(loss_name)
    p = LinearModel(X, y, loss_name, l2=l2)
    lt = p.linear_terms
    n, d = X.shape
    # default step, or a step with rho = 1 - step l2 = 3/4 (beta rescaled every 72 steps)
    step = 1 / (3 * p.L_max) if step_scale is None else step_scale
    rescales = 3 * n * -np.log(1 - step * l2) / -np.log(1e-9)  # beta = rho^k falls below 1e-9 this often
    assert (rescales >= 5) == (step_scale is not None)
    theta = 1.0 if theta_kind == "saga" else 1.0 / n
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=d) * 0.1
    t0 = np.empty(n)
    all_derivs(lt.loss, *lt.args(), lt.y, x0, lt.smoothing, t0)
    g0 = np.asarray(X.T @ t0) / n
    xa, ta, ga = x0.copy(), t0.copy(), g0.copy()  # scaled
    xb, tb, gb = x0.copy(), t0.copy(), g0.copy()  # closed form
    xc, tc, gc = x0.copy(), t0.copy(), g0.copy()  # dense
    last = np.zeros(d, dtype=np.int64)
    pw, geo = geometric_tables(1 - step * l2, n)
    work = np.empty((d, 3))
    Xd = X.toarray()
    rows = (loss, lt.data, lt.indices, lt.indptr, lt.y, lt.smoothing)  # what both sparse kernels take first
    for _ in range(3):
        idx = rng.integers(0, n, size=n)
        saga_sparse_epoch_scaled(*rows, idx, xa, ta, ga, step, l2, theta, work)
        saga_sparse_epoch(*rows, idx, xb, tb, gb, step, l2, 0.0, theta, last, pw, geo)
        saga_dense_epoch(loss, Xd, lt.y, lt.smoothing, idx, xc, tc, gc, step, l2, 0.0, theta)
    scale = np.abs(xc).max()
    assert np.abs(xa - xb).max() <= 1e-10 * scale
    assert np.abs(xa - xc).max() <= 1e-10 * scale
    assert np.abs(ta - tc).max() <= 1e-10 * max(1.0, np.abs(tc).max())
    assert np.abs(ga - gc).max() <= 1e-10 * max(1e-300, np.abs(gc).max())


@pytest.mark.parametrize("l2,step_scale", [(0.01, None), (0.5, 0.5)], ids=["no-rescale", "rescales"])
def test_svrg_scaled_matches_closed_form(l2, step_scale):
    X, y = _problem("logistic", seed=4)
    p = LinearModel(X, y, "logistic", l2=l2)
    lt = p.linear_terms
    n, d = X.shape
    step = 1 / (3 * p.L_max) if step_scale is None else step_scale
    assert (2 * n * -np.log(1 - step * l2) / -np.log(1e-9) >= 5) == (step_scale is not None)
    rng = np.random.default_rng(1)
    xs = rng.normal(size=d) * 0.1
    s_snap = np.empty(n)
    all_derivs(lt.loss, *lt.args(), lt.y, xs, lt.smoothing, s_snap)
    g = np.asarray(X.T @ s_snap) / n
    xa, xb = xs.copy(), xs.copy()
    last = np.zeros(d, dtype=np.int64)
    pw, geo = geometric_tables(1 - step * l2, 2 * n)
    work = np.empty((d, 2))
    idx = rng.integers(0, n, size=2 * n)
    rows = (LOGISTIC, lt.data, lt.indices, lt.indptr, lt.y, lt.smoothing)
    svrg_sparse_inner_scaled(*rows, idx, xa, s_snap, g, step, l2, work)
    svrg_sparse_inner(*rows, idx, xb, s_snap, g, step, l2, 0.0, last, pw, geo)
    assert np.abs(xa - xb).max() <= 1e-10 * np.abs(xb).max()


def test_use_scaled_rule_and_driver_optimum():
    X, y = _problem("logistic", n=400, d=30)
    p = LinearModel(X, y, "logistic", l2=1e-2)
    lt = p.linear_terms
    assert use_scaled(1 / (3 * p.L_max), p.l2, 0.0, lt.indptr, p.dim)
    assert not use_scaled(1 / (3 * p.L_max), p.l2, 1e-3, lt.indptr, p.dim)  # l1: the prox path
    assert not use_scaled(1.0 / p.l2, p.l2, 0.0, lt.indptr, p.dim)  # rho = 0
    from sklearn.linear_model import LogisticRegression

    ref = (
        LogisticRegression(
            C=1 / (p.l2 * p.n_terms), fit_intercept=False, solver="newton-cholesky", tol=1e-13, max_iter=500
        )
        .fit(X.toarray(), y)
        .coef_.ravel()
    )
    for name in ("saga", "sag", "svrg"):
        r = solvers.minimize(p, name, tol=1e-11, max_iter=2000)
        assert r.converged, (name, r.message)
        assert np.linalg.norm(r.x - ref) / np.linalg.norm(ref) < 1e-8, name


@pytest.mark.parametrize("loss", ["logistic", "squared", "smooth_hinge", "hinge"])
def test_fused_value_and_grad_matches_numpy(loss):
    """The compiled one-pass value_and_grad (CSR and dense rows) against the vectorised NumPy pieces
    (``A @ x``, ``phi``, ``dphi``, ``A.T @ r``) and, for the smooth losses, central differences."""
    X, y = _problem("logistic" if loss != "squared" else "squared", n=200, d=25, seed=7)
    kw = dict(l2=0.03) if loss == "hinge" else dict(l2=0.03, l1=0.01)
    x = np.random.default_rng(2).normal(size=25)
    for A in (X, X.toarray()):
        p = LinearModel(A, y, loss, **kw)
        u = p.A @ x
        f_ref = np.mean(p.phi(u)) + 0.5 * p.l2 * x @ x + p.l1 * np.abs(x).sum()
        g_ref = p.A.T @ p.dphi(u) / p.n_terms + p.l2 * x
        f, g = p.value_and_grad(x)
        assert abs(f - f_ref) <= 1e-13 * abs(f_ref)
        assert np.allclose(g, g_ref, rtol=1e-12, atol=1e-14)
        if loss in ("logistic", "squared"):
            h = 1e-6
            fd = np.array([(p.value(x + h * e) - p.value(x - h * e)) / (2 * h) for e in np.eye(25)])
            fd -= p.l1 * np.sign(x)  # value includes l1 |x|_1; g is the smooth part's gradient
            assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_fused_value_and_grad_propagates_non_finite():
    """A diverged iterate must give a non-finite objective (the drivers stop on it)."""
    X, y = _problem("logistic", n=50, d=10, seed=9)
    for A in (X, X.toarray()):
        p = LinearModel(A, y, "logistic", l2=0.01)
        x = np.ones(10)
        for bad in (np.inf, np.nan):
            x[3] = bad
            with np.errstate(all="ignore"):  # 0 * inf in the (zero) l1 term
                f, _ = p.value_and_grad(x)
            assert not np.isfinite(f)
