"""The Rényi pool's weight posterior at a fixed γ (evaluation/renyi_posterior.py): gradients by finite
differences, the two ends of the family (γ = 1 is the linear pool exactly; small γ approaches the log
pool), and the sampled posterior against a long NUTS run of NumPyro on a likelihood written
independently in JAX (the fixed point of Eq. 2.8 by the plain iteration, unrolled, differentiated by
JAX: no Newton, no implicit differentiation)."""

import numpy as np
import pytest

from aggregators.renyi import RenyiPool, renyi_aggregate
from evaluation.renyi_posterior import RenyiWeightsModel
from evaluation.weight_posterior import fit_posterior, predict_posterior
from samplers.pool_weights import PoolWeightsModel, sample_weight_posterior, to_weights
from solvers.errors import InputError
from tests.samplers.test_pool_weights import agents, fd_grad
from tests.samplers.test_pool_weights_nuts import ALPHA, assert_matches

Z = np.array([0.3, -0.4, 0.2])


@pytest.mark.parametrize("gamma,lam", [(0.3, None), ([0.2, 0.5, 1.0, 0.7], [1.0, 0.8, 1.3, 1.0])])
def test_gradients_and_per_item_rows(gamma, lam):
    lp, y = agents(n=30, M=4, K=3, seed=2)
    m = RenyiWeightsModel(lp, y, gamma=gamma, lam=lam, alpha=ALPHA)
    np.testing.assert_allclose(m.grad_log_post(Z), fd_grad(m.log_post, Z), rtol=1e-6, atol=1e-6)
    rows = m.loglik_grads(Z, np.arange(30))
    np.testing.assert_allclose(rows.sum(axis=0), m.grad_log_post(Z) - m.grad_log_prior(Z), rtol=1e-10, atol=1e-10)
    f = lambda t: float(
        renyi_aggregate(m.log_probs[4:5], to_weights(t), gamma, lam=lam, floor=None, tol=1e-13)[0, y[4]]
    )
    np.testing.assert_allclose(rows[4], fd_grad(f, Z), rtol=1e-5, atol=1e-7)


def test_the_ends_of_the_family():
    lp, y = agents(n=30, M=4, K=3, seed=2)
    lin, log = (PoolWeightsModel(lp, y, pool=p, alpha=ALPHA) for p in ("linear", "log"))
    one, small = (RenyiWeightsModel(lp, y, gamma=g, alpha=ALPHA) for g in (1.0, 1e-4))
    np.testing.assert_allclose(one.log_post(Z), lin.log_post(Z), rtol=1e-10)
    np.testing.assert_allclose(one.grad_log_post(Z), lin.grad_log_post(Z), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(small.log_post(Z), log.log_post(Z), rtol=1e-3)
    np.testing.assert_allclose(small.grad_log_post(Z), log.grad_log_post(Z), rtol=1e-2, atol=1e-3)


def jax_renyi_loglik(lp, y, gamma, sweeps=80):
    """Per-item log-likelihood ``w -> (n,)`` of the Rényi pool at a shared ``gamma``: the plain
    iteration ``r <- log sum_i w'_i softmax(gamma L_i + (1 - gamma) r)`` from the linear pool (it
    contracts at rate 1 - gamma: 80 sweeps at gamma = 0.3 shrink the first error by 4e-13)."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    jax.config.update("jax_enable_x64", True)
    L, yj = jnp.asarray(lp), jnp.asarray(y)

    def loglik(w):
        wp = (w / gamma) / jnp.sum(w / gamma)
        r0 = logsumexp(L + jnp.log(wp)[None, :, None], axis=1)

        def sweep(_, r):
            U = gamma * L + (1 - gamma) * r[:, None, :]
            U = U - logsumexp(U, axis=2, keepdims=True)
            return logsumexp(U + jnp.log(wp)[None, :, None], axis=1)

        r = jax.lax.fori_loop(0, sweeps, sweep, r0)
        return r[jnp.arange(len(y)), yj]

    return loglik


def test_jax_reference_is_the_same_likelihood():
    pytest.importorskip("jax")
    lp, y = agents(n=30, M=4, K=3, seed=2)
    m = RenyiWeightsModel(lp, y, gamma=0.3, alpha=ALPHA)
    w = to_weights(Z)
    ref = float(np.sum(np.asarray(jax_renyi_loglik(m.log_probs, y, 0.3)(w))))
    np.testing.assert_allclose(m.log_post(Z) - m.log_prior(Z), ref, rtol=1e-10)


def check_against_nuts(n_samples, sd_rtol, interval_atol, warmup=2000):
    pytest.importorskip("numpyro")
    from tests.samplers.test_pool_weights_nuts import nuts_weights

    lp, y = agents(n=60, M=4, K=3, seed=2)
    model = RenyiWeightsModel(lp, y, gamma=0.3, alpha=ALPHA)
    ref = nuts_weights(jax_renyi_loglik(model.log_probs, y, 0.3), ALPHA, n_samples=n_samples, warmup=warmup)
    # step 0.25 (not the default 0.5/sqrt(60)): the small weights' softmax coordinates are wide
    post = sample_weight_posterior(model, method="hmc", n_samples=n_samples, n_leapfrog=8, step=0.25, seed=1)
    assert post.pool == "renyi"
    assert_matches(post, ref, sd_rtol, interval_atol)


@pytest.mark.slow
def test_renyi_weight_posterior_matches_a_long_numpyro_nuts_run():
    check_against_nuts(6000, sd_rtol=0.08, interval_atol=0.03)


def test_renyi_weight_posterior_matches_numpyro_nuts_short():
    """The normal suite's version: 1,000 draws each."""
    check_against_nuts(1000, sd_rtol=0.15, interval_atol=0.05, warmup=500)


def test_fitted_renyi_pool_posterior_and_its_predictive():
    lp, y = agents(n=80, M=3, K=3, seed=4)
    pool = RenyiPool(gamma=0.2).fit(lp, y)
    s = fit_posterior(pool, lp, y, samples=300, options={"n_leapfrog": 5})
    assert s["pool"] == "renyi" and len(s["intervals"]) == 3 and pool.posterior_weights_.shape[1] == 3
    lo, hi = np.array(s["intervals"]).T
    assert np.all((lo <= pool.weights_ + 0.05) & (pool.weights_ - 0.05 <= hi))  # the fitted weights inside
    agg, _ = predict_posterior(pool, lp[:10])
    np.testing.assert_allclose(np.exp(agg).sum(axis=1), 1.0, rtol=1e-9)
    # the predictive of one repeated draw is the pool's aggregate at that draw
    pool.posterior_weights_ = np.tile(pool.weights_, (4, 1))
    np.testing.assert_allclose(predict_posterior(pool, lp[:10])[0], pool.predict(lp[:10]), atol=1e-8)


def test_bad_gamma_names_it():
    lp, y = agents(n=10, M=3, K=3)
    with pytest.raises(InputError) as e:
        RenyiWeightsModel(lp, y, gamma=1.5)
    assert e.value.field == "gamma"
