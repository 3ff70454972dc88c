"""The weight posterior of samplers/pool_weights.py (HMC on softmax coordinates with the Jacobian)
against a long NUTS run of an independent library, NumPyro, which parametrises the simplex its own
way (a Dirichlet site and its stick-breaking bijector): four agents, so past the 2-simplex that the
quadrature reference of test_pool_weights.py covers."""

import numpy as np
import pytest

from samplers.diagnostics import mc_errors
from samplers.pool_weights import weight_posterior

from .test_pool_weights import agents

numpyro = pytest.importorskip("numpyro")


def jax_pool_loglik(lp, y, pool):
    """The per-item log-likelihood ``w -> (n,)`` of the log or linear pool, written in JAX."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    lpj, yj = jnp.asarray(lp), jnp.asarray(y)
    ly = lpj[jnp.arange(len(y)), :, yj]
    if pool == "log":
        return lambda w: ly @ w - jax.scipy.special.logsumexp(jnp.einsum("imk,m->ik", lpj, w), axis=1)
    return lambda w: jnp.log(jnp.exp(ly) @ w)


def nuts_weights(loglik, alpha, n_samples=6000, seed=0, warmup=2000):
    """NumPyro NUTS on a Dirichlet(``alpha``) site with the factor ``sum(loglik(w))``."""
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    def model():
        w = numpyro.sample("w", dist.Dirichlet(jnp.asarray(alpha, dtype=float)))
        numpyro.factor("ll", loglik(w).sum())

    mcmc = MCMC(NUTS(model, target_accept_prob=0.9), num_warmup=warmup, num_samples=n_samples, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed))
    return np.asarray(mcmc.get_samples()["w"])


def assert_matches(post, ref, sd_rtol, interval_atol):
    """Means within 4.5 combined MC errors, sds within ``sd_rtol``, 95 % interval ends within
    ``interval_atol`` of the reference draws ``ref``."""
    assert post.result.ok and post.result.accept_rate is not None and 0.6 < post.result.accept_rate < 1.0
    se_ours, _ = mc_errors(post.weights)
    se_ref, _ = mc_errors(ref)
    se = np.sqrt(se_ours**2 + se_ref**2)
    assert np.all(np.abs(post.mean - ref.mean(axis=0)) <= 4.5 * se), (post.mean, ref.mean(axis=0), se)
    np.testing.assert_allclose(post.weights.std(axis=0), ref.std(axis=0), rtol=sd_rtol)
    q = np.quantile(ref, [0.025, 0.975], axis=0).T
    np.testing.assert_allclose(post.intervals, q, atol=interval_atol)


ALPHA = [1.0, 2.0, 0.8, 1.5]


def check_against_nuts(pool, n_samples, sd_rtol, interval_atol):
    lp, y = agents(n=60, M=4, K=3, seed=2)
    ref = nuts_weights(jax_pool_loglik(lp, y, pool), ALPHA, n_samples=n_samples)
    post = weight_posterior(lp, y, pool=pool, alpha=ALPHA, method="hmc", n_samples=n_samples, n_leapfrog=8, seed=1)
    assert_matches(post, ref, sd_rtol, interval_atol)


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["log", "linear"])
def test_weight_posterior_matches_a_long_numpyro_nuts_run(pool):
    check_against_nuts(pool, 6000, sd_rtol=0.08, interval_atol=0.03)


def test_weight_posterior_matches_numpyro_nuts_short():
    """The short version of the normal suite: the log pool, 2,000 draws each."""
    check_against_nuts("log", 2000, sd_rtol=0.15, interval_atol=0.05)
