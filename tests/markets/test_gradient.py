"""The wealth gradient of the labels' log-likelihood by one adjoint solve per item (issue
[core-at-scale] section 1): against central finite differences of the equilibrium and against a dense
implicit-function solve, to 1e-8, on small shapes and utility mixes; sample weights; bad input."""

import numpy as np
import pytest

from markets import equilibrium, make_agents, wealth_gradient

from .conftest import random_beliefs

MIXES = {
    "iso2": 2.0,
    "iso10": 10.0,
    "iso_half": 0.5,
    "iso_log": [2.0, "log", 10.0, 30.0, "log"],
    "exp_iso": ["exp", 10.0, 2.0, "exp", "log"],
}


def _loglik(lp, y, utils, w):
    e = equilibrium(lp, utils, w, tol=1e-14, check=False)
    assert e.all_converged
    return e.log_prices[np.arange(len(y)), y].mean()


@pytest.mark.parametrize("mix", list(MIXES))
@pytest.mark.parametrize("K", [2, 6, 70])
def test_gradient_matches_central_finite_differences(mix, K, rng):
    lp = random_beliefs(rng, 4, 5, K)
    y = rng.integers(0, K, 4)
    W = rng.uniform(0.2, 1.0, 5)
    W /= W.sum()
    r = wealth_gradient(lp, y, MIXES[mix], W, tol=1e-14)
    assert r.loglik == pytest.approx(_loglik(lp, y, MIXES[mix], W), abs=1e-12)
    h = 1e-5
    fd = np.array(
        [(_loglik(lp, y, MIXES[mix], W + h * e) - _loglik(lp, y, MIXES[mix], W - h * e)) / (2 * h) for e in np.eye(5)]
    )
    fd -= fd @ W  # the finite differences move sum w off one; project as the gradient does
    np.testing.assert_allclose(r.gradient, fd, atol=1e-8)
    assert abs(r.gradient @ W) < 1e-13


def _dense_gradient(lp, y, utils, W):
    """Implicit-function theorem with the dense Jacobian of the clearing conditions (isoelastic/log
    agents): ``J du = -(Q_i - c) dW_i`` with ``c . du = 0``, solved by least squares per item."""
    agents = make_agents(utils, W, lp.shape[1])
    g_i, W = agents.inv_eta, agents.wealth
    e = equilibrium(lp, agents, tol=1e-14, check=False)
    out = np.zeros((lp.shape[0], len(W)))
    for j in range(lp.shape[0]):
        u = e.log_prices[j]
        c = np.exp(u)
        Q = np.exp(g_i[:, None] * lp[j] + (1 - g_i[:, None]) * u[None, :])
        Q /= Q.sum(axis=1, keepdims=True)
        J = -W.sum() * np.diag(c)
        for i in range(len(W)):
            J += W[i] * (1 - g_i[i]) * (np.diag(Q[i]) - np.outer(Q[i], Q[i]))
        A = np.vstack([J, c])
        for i in range(len(W)):
            du = np.linalg.lstsq(A, np.append(-(Q[i] - c), 0.0), rcond=None)[0]
            out[j, i] = du[y[j]]
    out -= (out @ W)[:, None]
    return out


@pytest.mark.parametrize("mix", ["iso2", "iso10", "iso_half", "iso_log"])
@pytest.mark.parametrize("K", [3, 40])
def test_gradient_matches_the_dense_implicit_function_solve(mix, K, rng):
    lp = random_beliefs(rng, 5, 5, K)
    y = rng.integers(0, K, 5)
    W = rng.uniform(0.2, 1.0, 5)
    r = wealth_gradient(lp, y, MIXES[mix], W, tol=1e-14)
    dense = _dense_gradient(lp, y, MIXES[mix], W)
    np.testing.assert_allclose(r.per_item, dense, atol=1e-8)
    np.testing.assert_allclose(r.gradient, dense.mean(axis=0), atol=1e-8)
    if mix != "iso_log":  # one order: g W I plus rank <= A + 2, so at most A + 3 products (docs/markets.md)
        assert r.n_products.max() <= 5 + 3


def test_gradient_at_many_goods_and_agents_against_finite_differences(rng):
    """K = 2,000 goods, 40 agents: no K x K matrix anywhere; finite differences along one direction."""
    lp = random_beliefs(rng, 2, 40, 2000)
    y = rng.integers(0, 2000, 2)
    W = rng.uniform(0.2, 1.0, 40)
    W /= W.sum()
    r = wealth_gradient(lp, y, 10.0, W, tol=1e-14)
    v = rng.normal(size=40)
    v -= v.mean()
    h = 1e-5
    fd = (_loglik(lp, y, 10.0, W + h * v) - _loglik(lp, y, 10.0, W - h * v)) / (2 * h)
    assert r.gradient @ v == pytest.approx(fd, abs=1e-8)


def test_sample_weight_is_repetition(rng):
    lp = random_beliefs(rng, 6, 4, 5)
    y = rng.integers(0, 5, 6)
    c = np.array([1, 0, 3, 2, 1, 2])
    a = wealth_gradient(lp, y, 3.0, sample_weight=c)
    idx = np.repeat(np.arange(6), c)
    b = wealth_gradient(lp[idx], y[idx], 3.0)
    np.testing.assert_allclose(a.gradient, b.gradient, atol=1e-12)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-12)


def test_bad_input_names_the_argument(rng):
    lp = random_beliefs(rng, 3, 4, 5)
    for kw, field in [
        ({"cg_rtol": 0.0}, "cg_rtol"),
        ({"y": [0, 1, 9]}, "y"),
        ({"sample_weight": [1, -1, 1]}, "sample_weight"),
    ]:
        args = {"y": [0, 1, 2], **kw}
        with pytest.raises(ValueError) as e:
            wealth_gradient(lp, args.pop("y"), 2.0, **args)
        assert e.value.field == field
