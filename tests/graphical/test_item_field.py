"""The item field (seed 001 ch. 9): Eq 9.3 and Alg 9.1 against numerical optimisers of the same
objectives, the Bethe ML baseline against Alg 9.1, and the §9.7 prediction rule."""

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import minimize

from graphical import item_field as itf
from graphical.gaussian_bp import Edges
from solvers.errors import InputError


def item_field_covariance(p=14, seed=0, ridge=0.05):
    """A known item field on a loopy BA graph (every node of degree >= 2) plus a small ridge."""
    rng = np.random.default_rng(seed)
    A = nx.to_numpy_array(nx.barabasi_albert_graph(p, 2, seed=seed)) > 0
    W = np.triu(rng.uniform(0.5, 2.0, (p, p)), 1)
    W = A * (W + W.T)
    Theta = np.diag(W.sum(1)) - W + ridge * np.eye(p)
    return np.linalg.inv(Theta), A, W


def H_bethe(cd, ce, E):
    D = cd[E.i] * cd[E.j] - ce**2
    if (D <= 0).any() or (cd <= 0).any():
        return -np.inf
    return np.sum(np.log(D)) + np.sum((1 - E.degree) * np.log(cd))


def test_eq93_is_the_argmin_of_the_bethe_free_energy():
    """With Θ from Eq 9.3, a numerical minimiser of ⟨Θ, C⟩ - H_B(C) over the graph's C returns Σ.

    On a tree (where H_B is the concave log det of the max-entropy completion, so the free energy is
    convex); on a loopy graph Σ is a stationary point: Eq 9.3 is the gradient of H_B there.
    """
    p = 10
    T = nx.to_numpy_array(nx.random_labeled_tree(p, seed=1)) > 0
    Theta0 = nx.laplacian_matrix(nx.from_numpy_array(T.astype(float))).toarray() + 0.3 * np.eye(p)
    S = np.linalg.inv(Theta0)
    td, te, E = itf.pseudo_moment_precision(S, T)
    m = E.i.size

    def f(x):
        cd, ce = x[:p], x[p:]
        h = H_bethe(cd, ce, E)
        return 1e10 if not np.isfinite(h) else td @ cd + 2 * te @ ce - h

    x_true = np.concatenate([np.diag(S), S[E.i, E.j]])
    x0 = x_true * np.random.default_rng(2).uniform(0.98, 1.02, p + m)
    r = minimize(f, x0, method="BFGS", options={"gtol": 1e-11})
    np.testing.assert_allclose(r.x, x_true, rtol=1e-5)
    # on a tree Eq 9.3 is the exact precision
    np.testing.assert_allclose(td, np.diag(Theta0), rtol=1e-10)
    np.testing.assert_allclose(te, Theta0[E.i, E.j], rtol=1e-10)
    # loopy: Eq 9.3 is the gradient of H_B at Σ (pseudo-moment matching), by central differences
    S, A, _ = item_field_covariance(8, 1)
    td, te, E = itf.pseudo_moment_precision(S, A)
    eps = 1e-7
    for e in range(E.i.size):
        dp, dm = S[E.i, E.j].copy(), S[E.i, E.j].copy()
        dp[e] += eps
        dm[e] -= eps
        fd = (H_bethe(np.diag(S), dp, E) - H_bethe(np.diag(S), dm, E)) / (2 * eps)
        assert fd == pytest.approx(2 * te[e], rel=1e-6)
    for i in range(8):
        dp, dm = np.diag(S).copy(), np.diag(S).copy()
        dp[i] += eps
        dm[i] -= eps
        fd = (H_bethe(dp, S[E.i, E.j], E) - H_bethe(dm, S[E.i, E.j], E)) / (2 * eps)
        assert fd == pytest.approx(td[i], rel=1e-6)


def test_alg91_reaches_the_numerical_maximum_of_the_constrained_bethe_entropy():
    S, A, _ = item_field_covariance(12, 3)
    fit = itf.max_entropy_item_field(S, A, max_iter=100000, tol=1e-9)
    assert fit.converged
    E = fit.edges
    sd, ce0 = np.diag(S), S[E.i, E.j]

    def negH(cd):  # the same objective: H_B along the constraint set C_ij = Σ_ij + ½(ΔC_ii + ΔC_jj)
        return -H_bethe(cd, np.maximum(ce0 + 0.5 * ((cd - sd)[E.i] + (cd - sd)[E.j]), 0.0), E)

    r = minimize(
        negH, sd, method="Nelder-Mead", options={"maxiter": 400000, "maxfev": 400000, "xatol": 1e-12, "fatol": 1e-15}
    )
    r = minimize(negH, r.x, method="BFGS", options={"gtol": 1e-11})
    assert -r.fun == pytest.approx(fit.history[-1], abs=1e-7)
    # the Θ at the numerical optimum (Eq 9.3 at its C) equals Alg 9.1's, and is actively dominant
    cd = r.x
    ce = np.maximum(ce0 + 0.5 * ((cd - sd)[E.i] + (cd - sd)[E.j]), 0.0)
    D = cd[E.i] * cd[E.j] - ce**2
    np.testing.assert_allclose(fit.w, ce / D, rtol=1e-4)
    Theta = fit.precision().toarray()
    np.testing.assert_allclose(Theta.sum(1), 0.0, atol=1e-12)
    assert (Theta[~np.eye(12, dtype=bool)] <= 0).all()


def test_alg91_entropy_increases_and_recovers_the_true_field():
    S, A, W = item_field_covariance(40, 5)
    fit = itf.max_entropy_item_field(S, A, max_iter=20000, tol=1e-7)
    assert fit.converged
    assert np.all(np.diff(fit.history) > -1e-9)
    E = fit.edges
    assert np.corrcoef(fit.w, W[E.i, E.j])[0, 1] > 0.85  # the Bethe approximation on a loopy graph


def test_bethe_ml_baseline_agrees_with_max_entropy():
    """Bethe ML (GaBP + L-BFGS-B) and Bethe ME are dual views of the same approximation: as the
    baseline's diagonal slack d_min -> 0 its weights approach Alg 9.1's."""
    S, A, _ = item_field_covariance(30, 6)
    me = itf.max_entropy_item_field(S, A, max_iter=50000, tol=1e-9)
    ml = itf.bethe_ml_item_field(S, A, d_min=1e-6, tol=1e-10, max_iter=2000)
    assert me.converged and ml.converged
    np.testing.assert_allclose(ml.w, me.w, rtol=2e-2, atol=2e-3)
    assert np.all(ml.d <= 1e-3)


def test_bethe_ml_gradient_by_finite_differences():
    S, A, _ = item_field_covariance(10, 7)
    fit = itf.bethe_ml_item_field(S, A, max_iter=3)
    E = fit.edges
    from graphical.gaussian_bp import bethe_log_det, gaussian_bp

    def F(w, d):
        f = type(fit)(E, w, d, 0, True, 0.0)
        J = f.precision()
        ld, bp = bethe_log_det(J, edges=E, bp=gaussian_bp(J, edges=E, tol=1e-14, max_iter=100000))
        sd = np.diag(S)
        return w @ (sd[E.i] + sd[E.j] - 2 * S[E.i, E.j]) + d @ sd - ld, bp

    f0, bp = F(fit.w, fit.d)
    sd = np.diag(S)
    gw = (sd[E.i] + sd[E.j] - 2 * S[E.i, E.j]) - (bp.var[E.i] + bp.var[E.j] - 2 * bp.edge_cov)
    for e in range(0, E.i.size, 2):
        dw = np.zeros_like(fit.w)
        dw[e] = 1e-6
        fd = (F(fit.w + dw, fit.d)[0] - F(fit.w - dw, fit.d)[0]) / 2e-6
        assert fd == pytest.approx(gw[e], rel=1e-4, abs=1e-7)


def test_prediction_rule():
    rng = np.random.default_rng(8)
    p = 9
    A = nx.to_numpy_array(nx.cycle_graph(p)) > 0
    A[0, 4] = A[4, 0] = True
    w = rng.uniform(0.5, 2, p + 1)
    E = Edges.of(A)

    Theta = itf.Fit(E, w, np.zeros(p), 0, True, 0.0).precision()
    mu = rng.uniform(2, 4, p)
    r = np.full((2, p), np.nan)
    r[0, [1, 3, 5, 8]] = [1, 5, 4, 2]
    r[1, [0, 2, 8]] = [5, 3, 1]  # node 1's whole neighbourhood is {0, 2}: the classical weighted average
    P = itf.conditional_mean(Theta, mu, r)
    T = Theta.toarray()
    K, U = [1, 3, 5, 8], [0, 2, 4, 6, 7]
    ref = mu[U] - np.linalg.solve(T[np.ix_(U, U)], T[np.ix_(U, K)] @ (r[0, K] - mu[K]))
    np.testing.assert_allclose(P[0, U], ref, rtol=1e-10)
    np.testing.assert_array_equal(P[0, K], r[0, K])
    w01, w12 = -T[0, 1], -T[1, 2]
    assert P[1, 1] == pytest.approx(mu[1] + (w01 * (5 - mu[0]) + w12 * (3 - mu[2])) / (w01 + w12), rel=1e-10)
    # a user with no rating gets the means
    np.testing.assert_allclose(itf.conditional_mean(Theta, mu, np.full((1, p), np.nan))[0], mu)


def test_item_field_estimator_on_generated_ratings():
    rng = np.random.default_rng(9)
    n_users, n_items = 400, 30
    V = rng.standard_normal((n_items, 3))
    full = np.clip(
        np.round(3 + rng.standard_normal((n_users, 3)) @ V.T * 0.7 + 0.4 * rng.standard_normal((n_users, n_items))),
        1,
        5,
    )
    mask = rng.random(full.shape) < 0.5
    train = np.where(mask, full, np.nan)
    model = itf.ItemField(n_neighbours=5).fit(train)
    P = model.predict(train)
    mae = np.mean(np.abs(P[~mask] - full[~mask]))
    mae_means = np.mean(np.abs(np.clip(np.broadcast_to(model.mu_, full.shape)[~mask], 1, 5) - full[~mask]))
    assert mae < 0.9 * mae_means
    assert ((P >= 1) & (P <= 5)).all()


def test_knn_graph_and_bad_input():
    R = np.corrcoef(np.random.default_rng(0).standard_normal((50, 6)).T)
    G = itf.knn_graph(R, 2)
    assert (G == G.T).all() and not G.diagonal().any() and (G.sum(1) >= 2).all()
    with pytest.raises(InputError) as e:
        itf.knn_graph(R, 6)
    assert e.value.field == "n_neighbours"
    S, A, _ = item_field_covariance(8, 0)
    B = A.copy()
    B[2, 2] = True
    with pytest.raises(InputError) as e:
        itf.max_entropy_item_field(S, B)
    assert e.value.field == "graph" and e.value.code == "self_loop"
    with pytest.raises(InputError) as e:
        itf.max_entropy_item_field(S + np.triu(np.ones((8, 8)), 1), A)
    assert e.value.field == "Sigma" and e.value.code == "not_symmetric"
    with pytest.raises(InputError) as e:
        itf.bethe_ml_item_field(-S, A)
    assert e.value.field == "Sigma" and e.value.code == "not_psd"
    with pytest.raises(InputError) as e:
        itf.exact_ml_item_field(S, A, d_min=0.0)
    assert e.value.field == "d_min"
    with pytest.raises(InputError) as e:
        itf.ItemField().fit(np.array([[1.0, np.inf], [2.0, 3.0]]))
    assert e.value.field == "ratings"
    with pytest.raises(InputError) as e:
        itf.ItemField().fit(np.array([[1.0, np.nan], [2.0, np.nan]]))
    assert e.value.code == "empty"
    with pytest.raises(InputError) as e:
        itf.ItemField(n_neighbours=1, method="exact").fit(np.array([[1.0, 2.0, 3.0], [2.0, 3.0, 1.0]]))
    assert e.value.field == "method"


def exact_objective(fit, S):
    Theta = fit.precision().toarray()
    return float(np.sum(Theta * S) - np.linalg.slogdet(Theta)[1])


def test_exact_ml_equals_cvxpy():
    """Table 9.1's exact maximum likelihood against cvxpy's log_det over the same Θ = L(w) + diag(d)."""
    import cvxpy as cp

    S, A, _ = item_field_covariance(9, 11)
    dmin = 1e-2
    fit = itf.exact_ml_item_field(S, A, d_min=dmin, tol=1e-10, max_iter=5000)
    E = fit.edges
    B = np.zeros((E.i.size, E.p))
    B[np.arange(E.i.size), E.i], B[np.arange(E.i.size), E.j] = 1.0, -1.0
    w, d = cp.Variable(E.i.size), cp.Variable(E.p)
    Theta = B.T @ cp.diag(w) @ B + cp.diag(d)
    prob = cp.Problem(cp.Minimize(cp.trace(Theta @ S) - cp.log_det(Theta)), [w >= 0, d >= dmin])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert fit.converged
    assert exact_objective(fit, S) <= prob.value + 1e-7
    np.testing.assert_allclose(fit.w, w.value, atol=1e-4)
    np.testing.assert_allclose(fit.d, d.value, atol=1e-4)


def test_exact_ml_equals_bethe_ml_on_a_tree_and_beats_it_on_loops():
    rng = np.random.default_rng(12)
    T = nx.to_numpy_array(nx.random_labeled_tree(15, seed=12)) > 0
    W = np.triu(rng.uniform(0.5, 2.0, (15, 15)), 1)
    W = T * (W + W.T)
    S = np.linalg.inv(np.diag(W.sum(1)) - W + 0.1 * np.eye(15))
    ex = itf.exact_ml_item_field(S, T, tol=1e-10, max_iter=3000)
    be = itf.bethe_ml_item_field(S, T, tol=1e-10, max_iter=3000)
    np.testing.assert_allclose(ex.w, be.w, rtol=1e-4, atol=1e-5)  # BP is exact on a tree
    S, A, _ = item_field_covariance(20, 13)
    ex = itf.exact_ml_item_field(S, A, tol=1e-10, max_iter=3000)
    be = itf.bethe_ml_item_field(S, A, tol=1e-10, max_iter=3000)
    assert exact_objective(ex, S) <= exact_objective(be, S) + 1e-9
    assert np.abs(ex.w - be.w).max() > 1e-3  # on loops the approximation moves the weights
