"""PPCA by EM with missing data (samplers/ppca.py) against the closed form of Tipping & Bishop on
complete data and a direct maximisation of the observed-data likelihood (scipy) with missing entries."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import multivariate_normal

from samplers.ppca import ppca_closed_form, ppca_em, ppca_loglik
from solvers.errors import InputError


def _data(N=300, D=6, q=2, missing=0.0, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((D, q))
    X = rng.standard_normal((N, q)) @ W.T + 0.5 * rng.standard_normal((N, D)) + rng.standard_normal(D)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
        X[np.isnan(X).all(axis=1), 0] = 0.0
    return X


def test_loglik_matches_scipy_density():
    X = _data(N=40, missing=0.3)
    rng = np.random.default_rng(1)
    W, mu, s2 = rng.standard_normal((6, 2)), rng.standard_normal(6), 0.7
    C = W @ W.T + s2 * np.eye(6)
    ref = sum(multivariate_normal(mu[o], C[np.ix_(o, o)]).logpdf(x[o]) for x in X for o in [~np.isnan(x)])
    assert ppca_loglik(X, W, mu, s2) == pytest.approx(ref, rel=1e-12)


def test_em_reaches_closed_form_on_complete_data():
    X = _data()
    cf, em = ppca_closed_form(X, 2), ppca_em(X, 2, tol=1e-12, max_iter=5000)
    assert em.result.converged
    assert em.log_likelihood == pytest.approx(cf.log_likelihood, abs=1e-6)
    np.testing.assert_allclose(em.covariance, cf.covariance, atol=1e-4)
    np.testing.assert_allclose(em.mu, X.mean(axis=0), atol=1e-6)
    assert em.sigma2 == pytest.approx(cf.sigma2, rel=1e-4)
    assert np.diff(em.result.trace.objective).min() > -1e-8  # EM never lowers the likelihood


def test_em_with_missing_data_matches_direct_maximisation():
    X = _data(missing=0.2, seed=3)
    D, q = X.shape[1], 2
    em = ppca_em(X, q, tol=1e-12, max_iter=5000)
    assert em.result.converged
    assert np.diff(em.result.trace.objective).min() > -1e-8

    def nll(p):
        return -ppca_loglik(X, p[: D * q].reshape(D, q), p[D * q : D * q + D], float(np.exp(p[-1])))

    p0 = np.concatenate([np.random.default_rng(5).standard_normal(D * q) * 0.5, np.nanmean(X, 0), [0.0]])
    r = minimize(nll, p0, method="L-BFGS-B", options={"maxiter": 20000, "maxfun": 10**6, "ftol": 1e-15, "gtol": 1e-9})
    W2 = r.x[: D * q].reshape(D, q)
    assert em.log_likelihood >= -r.fun - 1e-6
    assert em.log_likelihood == pytest.approx(-r.fun, abs=1e-5)
    np.testing.assert_allclose(em.covariance, W2 @ W2.T + np.exp(r.x[-1]) * np.eye(D), atol=1e-4)
    np.testing.assert_allclose(em.mu, r.x[D * q : D * q + D], atol=1e-4)
    # ignoring the missingness pattern would be wrong: the complete-case closed form is not the optimum
    cc = ppca_closed_form(X[~np.isnan(X).any(axis=1)], q)
    assert ppca_loglik(X, cc.W, cc.mu, cc.sigma2) < em.log_likelihood - 1.0


def test_impute_is_the_conditional_mean():
    X = _data(N=50, missing=0.3, seed=7)
    em = ppca_em(X, 2, tol=1e-10)
    Xi = em.impute(X)
    obs = ~np.isnan(X)
    np.testing.assert_array_equal(Xi[obs], X[obs])
    C, mu = em.covariance, em.mu
    for x, xi, o in zip(X, Xi, obs, strict=True):
        m = ~o
        if m.any():
            ref = mu[m] + C[np.ix_(m, o)] @ np.linalg.solve(C[np.ix_(o, o)], x[o] - mu[o])
            np.testing.assert_allclose(xi[m], ref, atol=1e-10)


def test_progress_and_callback():
    seen = []
    em = ppca_em(_data(), 2, max_iter=50, tol=0.0, progress=seen.append, callback=lambda x: len(seen) >= 5)
    assert len(seen) == 5 and em.result.n_iter == 5 and not em.result.converged
    assert len(em.result.trace) == 6


@pytest.mark.parametrize(
    ("X", "q", "field", "code"),
    [
        ([[np.nan, np.nan], [1.0, 2.0], [0.0, 1.0]], 1, "X", "all_missing"),
        ([[np.nan, 1.0], [np.nan, 2.0], [np.nan, 1.0]], 1, "X", "all_missing"),
        ([[np.inf, 1.0], [0.0, 2.0]], 1, "X", "inf"),
        ([1.0, 2.0, 3.0], 1, "X", None),
        ([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0]], 2, "q", None),
        ([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0]], 0, "q", None),
        ([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0]], 1.5, "q", None),
    ],
)
def test_bad_input(X, q, field, code):
    with pytest.raises(InputError) as e:
        ppca_em(X, q)
    assert e.value.field == field
    if code:
        assert e.value.code == code


def test_closed_form_rejects_missing_entries():
    with pytest.raises(InputError, match="complete data"):
        ppca_closed_form(_data(N=20, missing=0.1), 2)
