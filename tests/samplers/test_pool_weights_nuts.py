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


def nuts_weights(lp, y, pool, alpha, n_samples=6000, seed=0):
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    jax.config.update("jax_enable_x64", True)
    lpj, yj = jnp.asarray(lp), jnp.asarray(y)
    ly = lpj[jnp.arange(len(y)), :, yj]

    def model():
        w = numpyro.sample("w", dist.Dirichlet(jnp.asarray(alpha, dtype=float)))
        if pool == "log":
            s = jnp.einsum("imk,m->ik", lpj, w)
            ll = ly @ w - jax.scipy.special.logsumexp(s, axis=1)
        else:
            ll = jnp.log(jnp.exp(ly) @ w)
        numpyro.factor("ll", ll.sum())

    mcmc = MCMC(NUTS(model, target_accept_prob=0.9), num_warmup=2000, num_samples=n_samples, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed))
    return np.asarray(mcmc.get_samples()["w"])


def check_against_nuts(pool, n_samples, sd_rtol, interval_atol):
    lp, y = agents(n=60, M=4, K=3, seed=2)
    alpha = [1.0, 2.0, 0.8, 1.5]
    ref = nuts_weights(lp, y, pool, alpha, n_samples=n_samples)
    post = weight_posterior(lp, y, pool=pool, alpha=alpha, method="hmc", n_samples=n_samples, n_leapfrog=8, seed=1)
    assert post.result.ok and post.result.accept_rate is not None and 0.6 < post.result.accept_rate < 1.0
    se_ours, _ = mc_errors(post.weights)
    se_ref, _ = mc_errors(ref)
    se = np.sqrt(se_ours**2 + se_ref**2)
    assert np.all(np.abs(post.mean - ref.mean(axis=0)) <= 4.5 * se), (post.mean, ref.mean(axis=0), se)
    np.testing.assert_allclose(post.weights.std(axis=0), ref.std(axis=0), rtol=sd_rtol)
    q = np.quantile(ref, [0.025, 0.975], axis=0).T
    np.testing.assert_allclose(post.intervals, q, atol=interval_atol)


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["log", "linear"])
def test_weight_posterior_matches_a_long_numpyro_nuts_run(pool):
    check_against_nuts(pool, 6000, sd_rtol=0.08, interval_atol=0.03)


def test_weight_posterior_matches_numpyro_nuts_short():
    """The short version of the normal suite: the log pool, 2,000 draws each."""
    check_against_nuts("log", 2000, sd_rtol=0.15, interval_atol=0.05)
