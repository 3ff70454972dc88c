"""The models' gradients against central finite differences of their log densities, and their
analytic posteriors against the normalised density."""

import numpy as np
import pytest
from scipy import integrate, stats

from samplers.models import Gaussian, LogisticRegression, NormalGamma, minibatch_grad
from solvers.errors import InputError

MODELS = {
    "normal_gamma": (lambda: NormalGamma.generate(50, seed=1), np.array([0.3, 1.7])),
    "gaussian": (lambda: Gaussian.generate(40, 3, seed=2), np.array([0.5, -1.0, 2.0])),
    "logistic": (lambda: LogisticRegression.generate(60, 4, seed=3), np.array([0.2, -0.4, 1.1, 0.0])),
}


def fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for d in range(x.size):
        e = np.zeros_like(x)
        e[d] = eps
        g[d] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("name", list(MODELS))
def test_gradients_match_finite_differences(name):
    make, theta = MODELS[name]
    m = make()
    np.testing.assert_allclose(m.grad_log_post(theta), fd_grad(m.log_post, theta), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(m.grad_log_prior(theta), fd_grad(m.log_prior, theta), rtol=1e-6, atol=1e-7)
    # each per-example row is the gradient of that item's log-likelihood (log_post minus the prior,
    # restricted to one item): check rows against the full likelihood gradient's decomposition
    G = m.loglik_grads(theta, np.arange(m.n_data))
    assert G.shape == (m.n_data, m.dim)
    np.testing.assert_allclose(G.sum(axis=0) + m.grad_log_prior(theta), m.grad_log_post(theta), rtol=1e-10)
    # mini-batch estimate of grad U: with the whole data as the batch it is exactly -grad log_post
    gU, _ = minibatch_grad(m, theta, np.arange(m.n_data))
    np.testing.assert_allclose(gU, -m.grad_log_post(theta), rtol=1e-10, atol=1e-12)


def test_normal_gamma_per_item_gradient_by_finite_differences():
    m = NormalGamma.generate(20, seed=4)
    theta = np.array([-0.2, 0.8])
    one = NormalGamma(m.x[[3, 3]])  # two copies of item 3: log_post - log_prior = 2 log p(x_3 | theta)
    f = lambda t: 0.5 * (one.log_post(t) - one.log_prior(t))
    np.testing.assert_allclose(m.loglik_grads(theta, np.array([3]))[0], fd_grad(f, theta), rtol=1e-6)


def test_normal_gamma_seed_minibatch_gradients():
    """minibatch_grad reproduces the seed's printed mini-batch gradients (l.2262-2266)."""
    m = NormalGamma.generate(100, seed=0)
    idx = np.array([1, 5, 7, 7, 20, 33, 50, 51, 80, 99])
    mu, g = 0.4, 1.3
    N, n, xs = 100, 10, m.x[idx]
    seed_mu = (N + 1) * mu * g - g * N / n * xs.sum()
    seed_g = 1 - (N + 1) / (2 * g) + mu**2 / 2 + N / (2 * n) * ((xs - mu) ** 2).sum()
    np.testing.assert_allclose(minibatch_grad(m, np.array([mu, g]), idx)[0], [seed_mu, seed_g], rtol=1e-12)


def test_normal_gamma_analytic_posterior_is_the_normalised_density():
    m = NormalGamma.generate(30, seed=5)
    mu_d, g_d = m.marginals()
    lo_g, hi_g = g_d.ppf(1e-9), g_d.ppf(1 - 1e-9)
    lo_m, hi_m = mu_d.ppf(1e-9), mu_d.ppf(1 - 1e-9)
    ref = m.log_post(np.array([mu_d.mean(), g_d.mean()]))
    Z = integrate.dblquad(lambda g, mu: np.exp(m.log_post(np.array([mu, g])) - ref), lo_m, hi_m, lo_g, hi_g)[0]
    for mu, g in [(0.1, 0.9), (-0.2, 1.2), (0.3, 1.0)]:
        # joint = p(gamma) p(mu | gamma) with mu | gamma ~ N(mu_N, 1/(kappa_N gamma))
        mN, k, a, b = m.posterior_params()
        joint = g_d.pdf(g) * stats.norm.pdf(mu, mN, 1 / np.sqrt(k * g))
        np.testing.assert_allclose(np.exp(m.log_post(np.array([mu, g])) - ref) / Z, joint, rtol=1e-5)
    # the marginal of mu integrates the joint over gamma: the Student-t with 2 alpha_N dof
    mu0 = 0.15
    marg = integrate.quad(lambda g: np.exp(m.log_post(np.array([mu0, g])) - ref), lo_g, hi_g)[0] / Z
    np.testing.assert_allclose(marg, mu_d.pdf(mu0), rtol=1e-5)
    assert mu_d.kwds["df"] == 2 * m.posterior_params()[2] == m.n_data + 2


def test_gaussian_analytic_posterior():
    m = Gaussian.generate(25, 2, seed=6, s=1.5, tau=3.0)
    mean, var = m.posterior_mean_var()
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((5, 2))
    diffs = [m.log_post(p) - stats.multivariate_normal(mean, np.diag(var)).logpdf(p) for p in pts]
    np.testing.assert_allclose(diffs, diffs[0], rtol=0, atol=1e-9)


def test_gaussian_noise_covariance_matches_minibatch_spread():
    m = Gaussian.generate(50, 2, seed=7)
    rng = np.random.default_rng(1)
    theta = np.array([0.3, 0.1])
    full = -m.grad_log_post(theta)
    draws = np.array([minibatch_grad(m, theta, rng.integers(0, 50, 5))[0] - full for _ in range(20000)])
    np.testing.assert_allclose(np.cov(draws.T), m.gradient_noise_cov(5), rtol=0.05, atol=5.0)


def test_bad_model_input():
    with pytest.raises(InputError) as e:
        NormalGamma(np.array([0.0, np.nan, 1.0]))
    assert e.value.field == "x" and e.value.location == {"index": 1}
    with pytest.raises(InputError, match="y"):
        LogisticRegression(np.ones((3, 2)), np.array([0, 1, 1]))
    with pytest.raises(InputError, match="s"):
        Gaussian(np.ones((3, 2)), s=0.0)
    assert not NormalGamma.generate(5).in_support(np.array([0.0, -0.1]))
    assert NormalGamma.generate(5).log_post(np.array([0.0, -0.1])) == -np.inf
