"""The posterior over pool weights: gradients by finite differences (the Jacobian of the softmax
coordinates included), and the sampled posterior against an independent reference that uses no
sampler at all: quadrature of Dirichlet prior x pool likelihood directly on the simplex."""

import numpy as np
import pytest

from samplers.diagnostics import mc_errors
from samplers.pool_weights import PoolWeightsModel, pooled_log_probs, to_coordinates, to_weights, weight_posterior
from solvers.errors import InputError


def agents(n=40, M=3, K=3, seed=0):
    """Agents of decreasing sharpness around the true label, normalised log-probabilities."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    logits = rng.normal(0, 1, (n, M, K))
    logits[np.arange(n), :, y] += np.linspace(1.5, 0.2, M)
    lp = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    return lp, y


def fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * eps) for e in np.eye(x.size) * eps])


@pytest.mark.parametrize("pool", ["log", "linear"])
def test_gradients_with_the_jacobian(pool):
    lp, y = agents()
    m = PoolWeightsModel(lp, y, pool=pool, alpha=[0.7, 1.5, 2.0])
    z = np.array([0.3, -0.4])
    np.testing.assert_allclose(m.grad_log_post(z), fd_grad(m.log_post, z), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(m.grad_log_prior(z), fd_grad(m.log_prior, z), rtol=1e-6, atol=1e-8)
    one = m.loglik_grads(z, np.array([5]))[0]
    f = lambda t: float(pooled_log_probs(m.log_probs[5:6], to_weights(t), pool)[0, y[5]])
    np.testing.assert_allclose(one, fd_grad(f, z), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(to_weights(to_coordinates(np.array([0.2, 0.3, 0.5]))), [0.2, 0.3, 0.5])


def simplex_reference(lp, y, pool, alpha, level=0.95, grid=400):
    """Posterior mean, sd and equal-tailed intervals of the weights by quadrature over a
    triangular grid of the 2-simplex (midpoint rule on the cells)."""
    t = (np.arange(grid) + 0.5) / grid
    a, b = np.meshgrid(t, t, indexing="ij")
    keep = a + b < 1
    W = np.column_stack([a[keep], b[keep], 1 - a[keep] - b[keep]])
    logpost = (np.asarray(alpha) - 1) @ np.log(W.T)
    ly = lp[np.arange(len(y)), :, y]  # (n, M)
    if pool == "log":
        s = np.einsum("imk,gm->gik", lp, W)
        smax = s.max(axis=2, keepdims=True)
        logpost += (W @ ly.T - (smax[..., 0] + np.log(np.exp(s - smax).sum(axis=2)))).sum(axis=1)
    else:
        logpost += np.log(W @ np.exp(ly).T).sum(axis=1)
    p = np.exp(logpost - logpost.max())
    p /= p.sum()
    mean = p @ W
    sd = np.sqrt(p @ (W - mean) ** 2)
    iv = []
    for d in range(3):
        order = np.argsort(W[:, d])
        c = np.cumsum(p[order])
        iv.append([W[order, d][np.searchsorted(c, (1 - level) / 2)], W[order, d][np.searchsorted(c, (1 + level) / 2)]])
    return mean, sd, np.array(iv)


@pytest.mark.parametrize("pool", ["log", "linear"])
def test_weight_posterior_against_quadrature_on_the_simplex(pool):
    lp, y = agents()
    alpha = [1.0, 2.0, 1.0]
    mean, sd, iv = simplex_reference(lp, y, pool, alpha)
    post = weight_posterior(
        lp, y, pool=pool, alpha=alpha, method="hmc", n_samples=8000, step=0.25, n_leapfrog=8, seed=3
    )
    se_mean, _ = mc_errors(post.weights)
    assert np.all(np.abs(post.mean - mean) <= 4.5 * se_mean + 0.005), (post.mean, mean, se_mean)
    np.testing.assert_allclose(post.weights.std(axis=0), sd, rtol=0.08)
    np.testing.assert_allclose(post.intervals, iv, atol=0.03)
    assert sd.min() > 0.05  # the posterior is wide: the check is about its shape, not a point
    # the aggregate's log loss: an interval that holds the loss at the posterior mean weights
    m = PoolWeightsModel(lp, y, pool=pool, alpha=alpha)
    lo, hi = post.log_loss_interval
    assert lo < m.mean_log_loss(post.mean) < hi
    # the posterior predictive is a normalised distribution per item
    pred = post.predict(lp)
    np.testing.assert_allclose(np.exp(pred).sum(axis=1), 1.0, rtol=1e-12)


def test_stochastic_gradient_weight_posterior_on_many_items():
    """CCAdL on mini-batches (n = 50 of 1000 items) against exact MALA on the full data."""
    lp, y = agents(n=1000, seed=1)
    ref = weight_posterior(lp, y, method="mala", n_samples=4000, step=0.004, seed=1)
    sg = weight_posterior(lp, y, method="ccadl", n_samples=12000, step=0.007, batch=50, friction=1.0, seed=2)
    se_ref, _ = mc_errors(ref.weights)
    se_sg, _ = mc_errors(sg.weights)
    assert np.all(np.abs(sg.mean - ref.mean) <= 4.5 * np.hypot(se_ref, se_sg) + 0.005), (sg.mean, ref.mean)
    np.testing.assert_allclose(sg.weights.std(axis=0), ref.weights.std(axis=0), rtol=0.2)


def test_bad_input():
    lp, y = agents()
    with pytest.raises(InputError) as e:
        PoolWeightsModel(lp, y, pool="renyi")
    assert e.value.field == "pool"
    bad = lp.copy()
    bad[2, 1, 0] = np.nan
    with pytest.raises(InputError) as e:
        PoolWeightsModel(bad, y)
    assert e.value.field == "log_probs" and e.value.location == {"item": 2, "agent": 1}
    with pytest.raises(InputError) as e:
        PoolWeightsModel(lp, y, alpha=[1.0, -1.0, 1.0])
    assert e.value.field == "alpha"
    with pytest.raises(InputError) as e:
        PoolWeightsModel(lp, y[:-1])
    assert e.value.field == "y"
    with pytest.raises(InputError) as e:
        weight_posterior(lp, y, level=1.5)
    assert e.value.field == "level"
