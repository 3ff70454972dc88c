"""SFW and MSFW on the CVM-form L2-SVM (seed 002 ch. IV): against the dual optimum from cvxpy (Clarabel),
the explicit alpha of the scaled-alpha bookkeeping, the predictions of the exact dual, and bad input."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_classification

import solvers
from solvers.methods.frank_wolfe_svm import FrankWolfeSVC, WorkingSet
from solvers.problems.cvm_svm import CVMDual
from tests.input_errors import assert_names


@pytest.fixture(scope="module")
def small():
    X, y = make_classification(400, 4, n_informative=3, n_redundant=0, random_state=0, flip_y=0.05)
    Xtr, ytr, Xte = X[:300], y[:300], X[300:]
    p = CVMDual(Xtr, ytr, C=1.0, sigma=1.5)
    a = cp.Variable(300)
    pr = cp.Problem(cp.Minimize(cp.quad_form(a, cp.psd_wrap(p.matrix))), [a >= 0, cp.sum(a) == 1])
    pr.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    alpha = np.maximum(a.value, 0)
    alpha /= alpha.sum()
    return p, Xte, float(pr.value), alpha


def test_msfw_reaches_the_dual_optimum(small):
    p, Xte, qstar, astar = small
    r = solvers.minimize(p, "msfw", max_iter=20)
    assert abs(r.fun - qstar) <= 1e-7 * qstar
    assert r.fun == pytest.approx(p.value(r.x), rel=1e-12)  # the incremental q is alpha^T A alpha
    assert np.abs(r.x - astar).sum() < 1e-3
    assert r.extra["away_steps"] > 0
    np.testing.assert_array_equal(np.sign(p.decision_function(r.x, Xte)), np.sign(p.decision_function(astar, Xte)))
    assert r.extra["b"] == pytest.approx(float(p.y @ r.x))


def test_sfw_converges_toward_the_optimum_at_a_sublinear_rate(small):
    p, Xte, qstar, astar = small
    r = solvers.minimize(p, "sfw", max_iter=40)
    gaps = (np.array(r.trace.objective) - qstar) / qstar
    assert np.all(gaps > -1e-9)
    assert np.all(np.diff(gaps) <= 1e-12)  # exact line search: q never increases
    assert gaps[-1] < 0.01
    assert r.extra["away_steps"] == 0
    agree = np.mean(np.sign(p.decision_function(r.x, Xte)) == np.sign(p.decision_function(astar, Xte)))
    assert agree >= 0.97


def test_scaled_alpha_bookkeeping_equals_explicit_alpha_after_many_steps(small):
    p = small[0]
    A = p.matrix
    rng = np.random.default_rng(3)
    for away in (False, True):
        ws = WorkingSet(p, 0, cached=False)
        for _ in range(15):
            for k in rng.permutation(p.n_terms):
                ws.offer(int(k))
                ws.decide_step() if away else ws.toward_step()
        alpha = ws.alpha()
        assert alpha.min() >= 0 and alpha.sum() == pytest.approx(1.0, abs=1e-12)
        assert ws.q == pytest.approx(alpha @ A @ alpha, rel=1e-10)
        S = ws.idx[: ws.m]
        np.testing.assert_allclose(ws.g[: ws.m], -2 * (A @ alpha)[S], rtol=1e-9, atol=1e-12)
        assert np.all(alpha[np.setdiff1d(np.arange(p.n_terms), S)] == 0)


def test_scale_is_folded_back_without_changing_alpha(small, monkeypatch):
    import solvers.methods.frank_wolfe_svm as fw

    p = small[0]
    ref = solvers.minimize(p, "msfw", max_iter=3, seed=5)
    monkeypatch.setattr(fw, "_LO", 0.9)  # fold c back into a after nearly every step
    monkeypatch.setattr(fw, "_HI", 1.1)
    r = solvers.minimize(p, "msfw", max_iter=3, seed=5)
    np.testing.assert_allclose(r.x, ref.x, rtol=1e-9, atol=1e-15)


def test_kernel_column_cache_gives_the_same_iterates_with_fewer_kernel_evaluations(small):
    p = small[0]
    pc = CVMDual(p.X, p.y, C=p.C, sigma=p.sigma, cache_columns=400)
    r = solvers.minimize(p, "msfw", max_iter=5)
    rc = solvers.minimize(pc, "msfw", max_iter=5)
    np.testing.assert_allclose(rc.x, r.x, rtol=1e-10, atol=1e-15)
    assert rc.extra["kernel_evals"] < r.extra["kernel_evals"]


def test_simplex_reference_solver_agrees_on_the_problem(small):
    p, _, qstar, _ = small
    r = solvers.minimize(p, "projected_gradient", max_iter=5000, tol=1e-10)
    assert r.fun == pytest.approx(qstar, rel=1e-6)


def test_estimator_accuracy_matches_the_exact_dual_and_keeps_labels():
    X, y = make_classification(500, 5, random_state=2, flip_y=0.02)
    y = np.where(y == 1, 7, 3)
    clf = FrankWolfeSVC(C=1.0, sigma=2.0, method="msfw", epochs=10).fit(X[:400], y[:400])
    pred = clf.predict(X[400:])
    assert set(np.unique(pred)) <= {3, 7}
    assert np.mean(pred == y[400:]) >= 0.85
    assert clf.b_ == pytest.approx(float(clf.problem_.y @ clf.alpha_))


def test_bad_input(small):
    p = small[0]
    X, y = p.X, p.y
    for kw, field in [({"C": 0.0}, "C"), ({"sigma": -1.0}, "sigma"), ({"cache_columns": -2}, "cache_columns")]:
        assert_names(field, CVMDual, X, y, **kw)
    assert_names("y", CVMDual, X, y[:10])
    assert_names("y", CVMDual, X, np.arange(len(y)) % 3)
    assert_names("max_iter", solvers.minimize, p, "sfw", max_iter=0)
    assert_names("x0", solvers.minimize, p, "msfw", x0=np.ones(300) / 300)
    assert_names("alpha", p.decision_function, np.ones(5), X)
    assert_names("X", p.decision_function, np.ones(300) / 300, X[:, :2])
    assert_names("method", FrankWolfeSVC(method="smo").fit, X, y)
